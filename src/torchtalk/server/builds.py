"""Background index builds: ``torchtalk index`` in a child process, at most one at a time.

A run starts at once when one is asked for and none is running: the first build of a tree, a rebuild of
a corrupt index, a refresh after files changed (Note [Freshness] in freshness.py); a run that failed is
tried again after FAILED_RETRY_S. The state of the runs (is one running,
since when, how did the last one end) lives in a ``BuildState``: in shared memory when the HTTP
server runs several worker processes, so they start one build between them, not one each.
"""

from __future__ import annotations

import collections
import contextlib
import logging
import math
import multiprocessing
import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from typing import NamedTuple

from ..procs import pid_alive
from ..source.tree import SourceTree

log = logging.getLogger("torchtalk")

FAILED_RETRY_S = 30.0  # a run that failed is tried again after this long (or when a call asks after it)
NICE = 10  # builds yield the CPU to the answers
STOP_GRACE_S = 1.2  # a run told to stop (SIGTERM) gets this long to clean up before SIGKILL
_STARTED, _PID, _EXIT, _ENDED = range(4)
_ERROR_BYTES = 400


class BuildStatus(NamedTuple):
    running: bool
    started: float  # time.monotonic() of the last start (system-wide on Linux), 0 if never
    exit_code: int | None  # of the last finished run, None if none finished
    error: str  # its last line of output when it failed


class BuildState:
    """Runs of ``torchtalk index`` as every server process sees them. ``shared=True`` puts them in shared
    memory, to be created before the worker processes fork."""

    def __init__(self, shared: bool = False):
        init = [0.0, 0.0, math.nan, 0.0]
        if shared:
            ctx = multiprocessing.get_context("fork")
            self._nums = ctx.Array("d", init, lock=False)
            self._error = ctx.Array("c", _ERROR_BYTES, lock=False)
            self.lock = ctx.Lock()
        else:
            self._nums = init
            self._error = bytearray(_ERROR_BYTES)
            self.lock = threading.Lock()

    # Callers hold self.lock around these.
    def status(self) -> BuildStatus:
        pid = int(self._nums[_PID])
        running = pid > 0 and pid_alive(pid)
        code = self._nums[_EXIT]
        error = bytes(self._error).split(b"\0", 1)[0].decode("utf-8", "replace")
        return BuildStatus(running, self._nums[_STARTED], None if math.isnan(code) else int(code), error)

    def started(self, pid: int) -> None:
        self._nums[_STARTED], self._nums[_PID] = time.monotonic(), float(pid)

    def ended(self, code: int, error: str) -> None:
        self._nums[_PID], self._nums[_EXIT], self._nums[_ENDED] = 0.0, float(code), time.monotonic()
        data = error.encode("utf-8", "replace")[: _ERROR_BYTES - 1]
        self._error[:] = data + b"\0" * (_ERROR_BYTES - len(data))

    def ended_at(self) -> float:
        return self._nums[_ENDED]


class Refresher:
    """Keeps one tree's index built and fresh. ``stop()`` ends a run this process started and reaps it."""

    def __init__(self, tree: SourceTree, codegen: bool, state: BuildState | None = None,
                 landed: Callable[[], None] | None = None):
        self.tree = tree
        self.codegen = codegen
        self.state = state or BuildState()
        self.landed = landed  # called after each run that succeeded (a new build may have landed)
        self._proc: subprocess.Popen | None = None
        self._watcher: threading.Thread | None = None
        self._stop_lock = threading.Lock()

    def status(self) -> BuildStatus:
        with self.state.lock:
            return self.state.status()

    def maybe_start(self) -> None:
        """Start a run unless one is running (in any process sharing the state). A run that failed is retried
        after FAILED_RETRY_S, not at once: it would fail again now (a full disk)."""
        with self.state.lock:
            st = self.state.status()
            now = time.monotonic()
            failed_recently = st.exit_code not in (None, 0) and now - self.state.ended_at() < FAILED_RETRY_S
            if st.running or failed_recently:
                return
            cmd = [sys.executable, "-m", "torchtalk", "index", "--source", str(self.tree.root), "--progress", "never"]
            if not self.codegen:
                cmd.append("--no-codegen")
            try:
                # Its own session: a Ctrl-C meant for the server does not kill a build half-way, and stop()
                # can end the build's whole process group (its worker processes too).
                proc = subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                                        stderr=subprocess.PIPE, start_new_session=True)
            except OSError as exc:
                self.state.started(0)
                self.state.ended(-1, f"could not start `torchtalk index`: {exc}")
                log.warning("could not start a background index run: %s", exc)
                return
            self.state.started(proc.pid)
        with contextlib.suppress(OSError):
            os.setpriority(os.PRIO_PROCESS, proc.pid, NICE)
        self._proc = proc
        self._watcher = threading.Thread(target=self._watch, args=(proc,), name="torchtalk-index-run", daemon=True)
        self._watcher.start()

    def _watch(self, proc: subprocess.Popen) -> None:
        """Pass the run's messages on to the server's log, reap it as soon as it ends, record how."""
        code, tail = _relay(proc)
        error = ""
        if code != 0:
            error = next((t for t in reversed(tail) if t.startswith("error")), tail[-1] if tail else
                         f"exit status {code}")
        with self.state.lock:
            self.state.ended(code, error)
        if code == 0 and self.landed is not None:
            self.landed()

    def stop(self) -> None:
        """End a run this process started, and reap it: SIGTERM to the run alone (it removes its temp file and
        stops its pool and generators itself: Note [A stop signal and the pool's threads]), SIGKILL to its whole
        process group after STOP_GRACE_S. Safe to call from several threads."""
        with self._stop_lock:
            proc = self._proc
            if proc is None:
                return
            _end(proc)
            if self._watcher is not None:
                self._watcher.join(timeout=2)


class Resolving:
    """``torchtalk resolve`` in a child process: the store of resolved calls of the index's current build
    (Note [Resolved calls] in store/resolved.py), computed in the background after the server starts and after
    each refresh lands, when the build has none. Its file lock keeps it to one run per index whatever number of
    servers ask. ``stop()`` ends a run this process started."""

    def __init__(self, tree: SourceTree, needed: Callable[[], bool]):
        self.tree = tree
        self.needed = needed
        self._proc: subprocess.Popen | None = None
        self._failed_at = -math.inf
        self._lock = threading.Lock()

    def maybe_start(self) -> None:
        with self._lock:
            proc = self._proc
            if proc is not None and proc.poll() is None:
                return
            if proc is not None and proc.returncode != 0:
                self._failed_at, self._proc = time.monotonic(), None
            if time.monotonic() - self._failed_at < FAILED_RETRY_S or not self.needed():
                return
            cmd = [sys.executable, "-m", "torchtalk", "resolve", "--source", str(self.tree.root), "--progress",
                   "never"]
            try:
                proc = self._proc = subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                                                     stderr=subprocess.PIPE, start_new_session=True)
            except OSError as exc:
                self._failed_at = time.monotonic()
                log.warning("could not start `torchtalk resolve` in the background: %s", exc)
                return
        with contextlib.suppress(OSError):
            os.setpriority(os.PRIO_PROCESS, proc.pid, NICE)
        threading.Thread(target=_relay, args=(proc,), name="torchtalk-resolve-run", daemon=True).start()

    def stop(self) -> None:
        """End a run this process started, and reap it (as Refresher.stop)."""
        with self._lock:
            proc = self._proc
        if proc is not None:
            _end(proc)


def _relay(proc: subprocess.Popen) -> tuple[int, collections.deque[str]]:
    """Pass a run's messages (its stderr) on to the server's log until it ends, and reap it: (its exit code, its
    last lines)."""
    tail: collections.deque[str] = collections.deque(maxlen=8)
    assert proc.stderr is not None
    for raw in proc.stderr:
        line = raw.decode("utf-8", "replace").rstrip()
        if line:
            tail.append(line)
            print(line, file=sys.stderr, flush=True)
    return proc.wait(), tail


def _end(proc: subprocess.Popen) -> None:
    """SIGTERM to a run alone (it cleans up after itself), SIGKILL to its whole process group (its pool's workers
    too) after STOP_GRACE_S; reaped either way. Nothing when it has ended."""
    if proc.poll() is not None:
        return
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.kill(proc.pid, signal.SIGTERM)
    try:
        proc.wait(timeout=STOP_GRACE_S)
    except subprocess.TimeoutExpired:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()
