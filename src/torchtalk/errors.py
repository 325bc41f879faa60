"""Errors a user can act on. Their message is shown as-is, never a traceback."""


class TorchTalkError(Exception):
    """Base: the message names what was wrong and what to do."""


class SourceError(TorchTalkError):
    """No usable PyTorch source tree."""


class IndexUnavailable(TorchTalkError):
    """The index is missing, corrupt, outdated or being built."""


class BadArgument(TorchTalkError):
    """A tool argument outside its valid values."""
