"""How `serve` and `view` end on SIGTERM and SIGINT: cleanly, at any moment, with 143 or 130.

Inside an event loop the transport takes the signals (stdio: ``stdio.py``; HTTP and the view: uvicorn,
``http_guard.StoppingServer``); outside it (start-up, the first index build of ``view``, shutdown) and when
uvicorn hands a caught signal back after its shutdown, ``Stopped`` unwinds through the clean-up (a
background build is ended, temp files removed) and the process exits 128 + the signal's number.
"""

from __future__ import annotations

import contextlib
import os
import signal
import sys


class Stopped(BaseException):
    """A SIGTERM or SIGINT to stop on; ``code`` is 128 + its number."""

    def __init__(self, code: int):
        super().__init__(code)
        self.code = code


def _raise_stopped(signum, frame) -> None:
    signal.signal(signal.SIGTERM, signal.SIG_IGN)  # one clean-up, not one per signal
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    raise Stopped(128 + signum)


def stop_on_signals() -> None:
    """SIGTERM and SIGINT raise ``Stopped`` (until an event loop takes them over)."""
    signal.signal(signal.SIGTERM, _raise_stopped)
    signal.signal(signal.SIGINT, _raise_stopped)


def said(code: int) -> int:
    """For a signal's exit code: one line on stderr (never a traceback), then the process ends at once.

    By then everything is cleaned up (the background build ended, the wire handed back), and what is left is
    the interpreter's own finalization: freeing the heap of a server that answered queries takes seconds on a
    busy machine (measured: 3-4 s with a load average of 13 on 2 cores), for nothing. Other codes return."""
    if code in (128 + signal.SIGTERM, 128 + signal.SIGINT):
        print(f"torchtalk: {'terminated' if code == 128 + signal.SIGTERM else 'interrupted'}", file=sys.stderr,
              flush=True)
        with contextlib.suppress(Exception):
            sys.stdout.flush()
        os._exit(code)
    return code
