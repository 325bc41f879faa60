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


# Note [A lost Stopped]: Python drops an exception raised where it cannot propagate, in a weakref callback or a
# __del__ that the collector runs ("Exception ignored in ..." on stderr), and a signal's handler runs wherever the
# main thread is. A Stopped lost that way left the process running with the signals ignored: an HTTP worker that
# was still starting (building the output schemas with pydantic, under load) went on into uvicorn and served, and
# its parent waited for it for ever. So the handler records its signal, and where the signals are handed over a
# recorded one stops the process again: ``stop_on_signals`` (before an event loop, after one) raises it, and
# uvicorn's server (http_guard.StoppingServer), once its own handlers are in, shuts down for it.
_received: list[int] = []


def _raise_stopped(signum, frame) -> None:
    signal.signal(signal.SIGTERM, signal.SIG_IGN)  # one clean-up, not one per signal
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    _received.append(signum)
    raise Stopped(128 + signum)


def lost_signal() -> int:
    """A signal received before whose ``Stopped`` may have been lost (Note [A lost Stopped]), taken; 0 if none."""
    return _received.pop() if _received else 0


class _QuietLostStop:
    """``sys.unraisablehook``: a ``Stopped`` Python dropped is handled where the signals are handed over (Note [A
    lost Stopped]), so it is not printed as an error with a traceback; anything else goes to the hook before."""

    def __init__(self, before) -> None:
        self.before = before

    def __call__(self, unraisable) -> None:
        if not isinstance(unraisable.exc_value, Stopped):
            self.before(unraisable)


def stop_on_signals() -> None:
    """SIGTERM and SIGINT raise ``Stopped`` (until an event loop takes them over); one received before whose
    ``Stopped`` was lost (Note [A lost Stopped]) is raised now."""
    if signum := lost_signal():
        raise Stopped(128 + signum)
    if not isinstance(sys.unraisablehook, _QuietLostStop):
        sys.unraisablehook = _QuietLostStop(sys.unraisablehook)
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
