"""Process helpers shared by the store, the indexer's worker pool and the codegen runner.

The indexer's helpers (the forkserver, its pool workers, the codegen driver) must never outlive it,
and a Ctrl-C must reach only the indexer, which then stops them: workers that also received the
SIGINT would each print a KeyboardInterrupt traceback.
"""

from __future__ import annotations

import contextlib
import ctypes
import ctypes.util
import os
import signal
import sys
from collections.abc import Iterator
from multiprocessing.synchronize import Semaphore

_PR_SET_PDEATHSIG = 1  # <linux/prctl.h>


def pid_alive(pid: int) -> bool:
    """Whether a process with this pid exists (a temp file's owner may have been killed)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True  # it exists, owned by someone else
    return True


def die_with_parent(sig: int = signal.SIGKILL) -> bool:
    """Ask the kernel to send ``sig`` to this process when its parent exits (Linux); False elsewhere."""
    if not sys.platform.startswith("linux"):
        return False
    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6", use_errno=True)
        return bool(libc.prctl(_PR_SET_PDEATHSIG, int(sig), 0, 0, 0) == 0)
    except (OSError, AttributeError):
        return False


def pool_worker_init(owner: int, ready: Semaphore | None = None) -> None:
    """Initializer of the indexer's pool workers (``owner``: the indexer's pid; ``ready``: a semaphore the
    worker releases once it is up, which the indexer waits for before it lets a Ctrl-C in).

    Ignores SIGINT (the indexer handles Ctrl-C and terminates the pool), dies with its parent (the
    forkserver, which dies with the indexer), and exits at once if the indexer is already gone.
    """
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    if hasattr(signal, "pthread_sigmask"):
        signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGINT})  # held back by sigint_blocked() in the indexer
    die_with_parent()
    if not pid_alive(owner):
        os._exit(1)  # the indexer died before the death signal was armed
    if ready is not None:
        ready.release()


@contextlib.contextmanager
def sigint_blocked() -> Iterator[None]:
    """Hold back SIGINT while helper processes are started: they inherit the blocked signal, so a Ctrl-C
    at that moment cannot interrupt them before they ignore it; this process gets it when the block ends."""
    if not hasattr(signal, "pthread_sigmask"):
        yield
        return
    old = signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT})
    try:
        yield
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, old)
