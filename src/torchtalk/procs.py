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

# Note [A stop signal and the pool's threads]
# A SIGTERM to the indexer's whole process group (GNU timeout(1) sends one, as do `kill -- -PGID` and
# supervisors) reached the pool workers and the forkserver at the moment the indexer got it. They died of it;
# multiprocessing's worker-handler thread, seeing its workers gone, started new ones through the dead
# forkserver, failed (ConnectionRefusedError, a traceback) and never sent the task thread its sentinel: the
# indexer's pool.terminate() then waited for that thread forever (measured: 1 build in 6 never ended). A
# worker that merely outlived the signal (a Python-level handler) was no better: a signal landing just before
# the worker blocks on the task queue's lock is handled only after that lock is taken, which is never.
# So the forkserver leads a process group of its own (forkserver_guard), and the workers it forks are in it:
# a signal to the indexer's group reaches the indexer alone, which stops its pool itself, as for a Ctrl-C.
# They still die with the indexer (parent-death signals), and a server ending its background build signals
# the build's leader alone first (server/builds.py).


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
    worker releases once it is up, which the indexer waits for before it lets a stop in).

    Ignores SIGINT (the indexer handles Ctrl-C and terminates the pool), dies with its parent (the
    forkserver, which dies with the indexer), and exits at once if the indexer is already gone.
    """
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    if hasattr(signal, "pthread_sigmask"):
        # Held back by stops_blocked() in the indexer: a SIGINT sent meanwhile is now ignored, a SIGTERM (the
        # indexer's pool.terminate()) ends the worker.
        signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGINT, signal.SIGTERM})
    die_with_parent()
    if not pid_alive(owner):
        os._exit(1)  # the indexer died before the death signal was armed
    if ready is not None:
        ready.release()


@contextlib.contextmanager
def stops_blocked() -> Iterator[None]:
    """Hold back SIGINT and SIGTERM while helper processes are started: they inherit the blocked signals, so a
    stop at that moment cannot reach them before they are set up to leave it to this process, which gets it
    when the block ends."""
    if not hasattr(signal, "pthread_sigmask"):
        yield
        return
    old = signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT, signal.SIGTERM})
    try:
        yield
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, old)
