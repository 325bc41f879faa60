"""Errors a user can act on. Their message is shown as-is, never a traceback."""


class TorchTalkError(Exception):
    """Base: the message names what was wrong and what to do."""


class SourceError(TorchTalkError):
    """No usable PyTorch source tree."""


class IndexUnavailable(TorchTalkError):
    """The index is missing, corrupt, outdated or being built."""


class BadArgument(TorchTalkError):
    """A tool argument outside its valid values."""


def shown(value: object, limit: int = 60) -> str:
    """An argument as an error message may quote it: repr'd and cut short."""
    text = repr(value)
    return text if len(text) <= limit else text[: limit - 4] + "...'"
