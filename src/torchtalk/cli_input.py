"""What the CLI reads from files and stdin for a tool (the diff of ``affected``, an ``error_origin`` message given
as '-'), bounded in size and wait."""

from __future__ import annotations

import os
import select
import stat
import sys

from .errors import BadArgument
from .query.change.diff import MAX_DIFF_CHARS, SPLIT_HINT
from .query.error_text import MAX_INPUT

# Tool parameters whose text the CLI reads from a file ('-': stdin) rather than from the command line.
FILE_PARAMS = {("affected", "diff"): "read the unified diff from FILE ('-' for stdin); with no names, --rev or "
                                     "--diff, a diff piped to stdin is read (`git diff | torchtalk affected`)"}
STDIN_WAIT_S = 10
# An error_origin message from stdin is read whole up to this (the query keeps a long traceback's end, and says so).
MAX_MESSAGE_CHARS = 50 * MAX_INPUT
DIFF_HINT = f"the limit is {MAX_DIFF_CHARS:,}. {SPLIT_HINT}"
MESSAGE_HINT = "give the traceback's last lines (the error is at its end)"


def _size(f) -> int | None:
    """The size in bytes of a regular file's open handle (None: a pipe, a device, a terminal)."""
    try:
        st = os.fstat(f.fileno())
    except (OSError, ValueError, AttributeError):
        return None
    return st.st_size if stat.S_ISREG(st.st_mode) else None


def _read_text(path: str, what: str, limit: int = MAX_DIFF_CHARS, hint: str = DIFF_HINT) -> str:
    """The text of ``path`` ('-': stdin). Reading stops past ``limit`` characters, so a longer text is refused
    here, as "more than" the limit (and the file's size when it has one): its length was never counted."""
    try:
        if path == "-":
            text, size, shown = sys.stdin.read(limit + 1), _size(sys.stdin), "stdin"
        else:
            with open(path, encoding="utf-8", errors="replace") as f:
                text, size, shown = f.read(limit + 1), _size(f), f"{what} {path}"
    except OSError as exc:
        raise BadArgument(f"{what} {path}: cannot read it ({exc.strerror or exc})") from None
    if len(text) > limit:
        of_size = f" (it is {size:,} bytes)" if size is not None else ""
        raise BadArgument(f"{shown} holds more than {limit:,} characters{of_size}; {hint}")
    return text


def _piped_stdin() -> str | None:
    """A diff piped in (`git diff | torchtalk affected`), or None when stdin is a terminal or nothing.
    A pipe that stays silent is not waited on for ever."""
    try:
        fd = sys.stdin.fileno()
        mode = os.fstat(fd).st_mode
    except (OSError, ValueError, AttributeError):
        return None  # no real stdin (an embedding program, a test harness)
    if stat.S_ISREG(mode):
        return _read_text("-", "stdin")
    if not stat.S_ISFIFO(mode):
        return None
    ready, _w, _x = select.select([fd], [], [], STDIN_WAIT_S)
    if not ready:
        raise BadArgument(f"stdin is a pipe but nothing came through it in {STDIN_WAIT_S}s; give the change with "
                          "--diff FILE, --rev REV or names")
    text = _read_text("-", "stdin")
    return text if text.strip() else None


def file_args(tool, kwargs: dict) -> None:
    """Read the parameters the CLI takes as files; for affected with nothing given, a diff piped to stdin."""
    for prm in tool.params:
        if (tool.name, prm.name) in FILE_PARAMS and kwargs.get(prm.name) is not None:
            kwargs[prm.name] = _read_text(kwargs[prm.name], f"--{prm.name.replace('_', '-')}")
    if tool.name == "affected" and all(kwargs.get(k) is None for k in ("names", "diff", "rev")):
        kwargs["diff"] = _piped_stdin()
    if tool.name == "error_origin" and kwargs.get("message") == "-":  # a traceback piped in: `... | error-origin -`
        kwargs["message"] = _read_text("-", "stdin", MAX_MESSAGE_CHARS, MESSAGE_HINT)
