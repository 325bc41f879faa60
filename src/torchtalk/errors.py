"""Errors a user can act on. Their message is shown as-is, never a traceback."""


class TorchTalkError(Exception):
    """Base: the message names what was wrong and what to do."""


class SourceError(TorchTalkError):
    """No usable PyTorch source tree."""


class IndexUnavailable(TorchTalkError):
    """The index is missing, corrupt, outdated or being built."""


class BadArgument(TorchTalkError):
    """A tool argument outside its valid values."""


# Errors that mean a place could not be written, not that the data is bad: the build that meets one fails
# with the path and keeps what it had (store/builds.py, source/codegen/job.py).
NO_SPACE_ERRNOS = {28: "no space left on the device", 122: "the disk quota is exceeded",
                   27: "a file grew beyond the file-size limit", 5: "an I/O error"}  # ENOSPC EDQUOT EFBIG EIO


def no_space(errno_value: int | None) -> str | None:
    """Why writing failed, for an errno that says the place (not the data) is at fault; None otherwise."""
    return NO_SPACE_ERRNOS.get(errno_value or 0)


def shown(value: object, limit: int = 60) -> str:
    """An argument as an error message may quote it: repr'd and cut short."""
    text = repr(value)
    return text if len(text) <= limit else text[: limit - 4] + "...'"
