"""Who is building an index, and how its last builds ended.

- ``writer_lock``: one build of an index at a time. The holder writes its pid and start time into the lock
  file, so a build that has to wait says for whom and for how long, instead of hanging without a word.
- ``write_failure``: whether an error means the place could not be written (a full disk, a quota, a
  file-size limit, an I/O error, a read-only place) rather than damaged data: such a build fails with the
  path and leaves the previous index as it was; it is never mistaken for a damaged index.
- The failure record (``index.db.failed``): builds that keep failing, since when and why, for
  ``get_status``, ``status`` and ``doctor``; removed by the next build that succeeds.
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import json
import os
import sqlite3
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from ..errors import no_space
from ..procs import pid_alive

READ_ONLY_ERRNOS = frozenset({errno.EACCES, errno.EPERM, errno.EROFS})
_SQLITE_FULL, _SQLITE_IOERR, _SQLITE_READONLY = 13, 10, 8
WAIT_POLL_S = 0.1
SAY_EVERY_S = 10.0


# ------------------------------------------------------------------ the writer lock


def lock_path(index_path: Path) -> Path:
    return index_path.with_name(index_path.name + ".lock")


def holder(index_path: Path) -> str:
    """Who holds the lock, as a phrase: "pid 1234, running for 12 s" (or "another process")."""
    try:
        pid_text, started = lock_path(index_path).read_text(encoding="utf-8").split()[:2]
        pid, since = int(pid_text), float(started)
    except (OSError, ValueError):
        return "another process"
    if not pid_alive(pid):
        return "another process"
    return f"pid {pid}, running for {max(0, time.time() - since):.0f} s"


def _try(fd: int) -> bool:
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        return True
    except BlockingIOError:
        return False


@contextlib.contextmanager
def writer_lock(index_path: Path, wait: bool = True, timeout: float | None = None,
                on_wait: Callable[[str], None] | None = None) -> Iterator[bool]:
    """One indexer per index at a time; yields False if it is taken and ``wait`` is off or ``timeout`` (s)
    passed. While it waits, ``on_wait`` gets a line saying for whom, at once and every SAY_EVERY_S.

    In a read-only cache the lock file is opened read-only (flock needs no write access), or, when it
    does not exist and cannot be created, not at all: nobody can write there, and a refresh that finds
    nothing to do must still answer (it writes nothing); one that must write fails when it tries.
    """
    with contextlib.suppress(OSError):
        index_path.parent.mkdir(parents=True, exist_ok=True)
    path = lock_path(index_path)
    writable = True
    try:
        fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
    except OSError as exc:
        if exc.errno not in READ_ONLY_ERRNOS:
            raise
        try:
            fd = os.open(path, os.O_RDONLY)
            writable = False
        except OSError:
            yield True
            return
    try:
        if not _try(fd):
            if not wait:
                yield False
                return
            t0 = time.monotonic()
            said = -SAY_EVERY_S
            while not _try(fd):
                waited = time.monotonic() - t0
                if timeout is not None and waited >= timeout:
                    yield False
                    return
                if on_wait is not None and waited - said >= SAY_EVERY_S:
                    said = waited
                    on_wait(f"waiting for another build of {index_path} ({holder(index_path)}); waited "
                            f"{waited:.0f} s so far")
                time.sleep(WAIT_POLL_S)
            if on_wait is not None:
                on_wait(f"the other build ended; waited {time.monotonic() - t0:.1f} s")
        if writable:
            with contextlib.suppress(OSError):
                os.ftruncate(fd, 0)
                os.pwrite(fd, f"{os.getpid()} {time.time():.3f}\n".encode(), 0)
        try:
            yield True
        finally:
            if writable:
                with contextlib.suppress(OSError):
                    os.ftruncate(fd, 0)
            fcntl.flock(fd, fcntl.LOCK_UN)
    finally:
        os.close(fd)


def building(index_path: Path) -> str | None:
    """Who is building this index right now ("pid 1234, running for 12 s"), or None when nobody is."""
    try:
        fd = os.open(lock_path(index_path), os.O_RDONLY)
    except OSError:
        return None
    try:
        if _try(fd):
            fcntl.flock(fd, fcntl.LOCK_UN)
            return None
        return holder(index_path)
    finally:
        os.close(fd)


# ------------------------------------------------------------------ failures to write


def write_failure(exc: BaseException) -> str | None:
    """What made a write fail when the place, not the data, is at fault; None for any other error."""
    if isinstance(exc, OSError):
        if no_space(exc.errno):
            return no_space(exc.errno)
        if exc.errno in READ_ONLY_ERRNOS:
            return exc.strerror or "not writable"
        return None
    if isinstance(exc, sqlite3.Error):
        code = getattr(exc, "sqlite_errorcode", None)  # Python 3.11+
        primary = code & 0xFF if isinstance(code, int) else None
        text = str(exc)
        if primary == _SQLITE_FULL or "database or disk is full" in text:
            return "no space left on the device (SQLite: database or disk is full)"
        if primary == _SQLITE_IOERR or "disk I/O error" in text:
            return "a write failed (SQLite: disk I/O error: a full disk, a file-size limit or a failing disk)"
        if primary == _SQLITE_READONLY or "readonly database" in text:
            return "not writable (SQLite: attempt to write a readonly database)"
    return None


# ------------------------------------------------------------------ builds that keep failing


def failure_path(index_path: Path) -> Path:
    return index_path.with_name(index_path.name + ".failed")


def record_failure(index_path: Path, error: str) -> None:
    """Count one more failed build (best effort: the record is small, and written after the failed build's
    temp files are gone)."""
    now = time.time()
    old = reported_failure(index_path) or {}
    record = {"since": old.get("since", now), "last": now, "count": int(old.get("count", 0)) + 1,
              "error": error[:600]}
    tmp = failure_path(index_path).with_name(f".{failure_path(index_path).name}.{os.getpid()}")
    try:
        tmp.write_text(json.dumps(record), encoding="utf-8")
        os.replace(tmp, failure_path(index_path))
    except OSError:
        with contextlib.suppress(OSError):
            tmp.unlink()


def clear_failure(index_path: Path) -> None:
    with contextlib.suppress(OSError):
        failure_path(index_path).unlink()


def reported_failure(index_path: Path) -> dict[str, Any] | None:
    """{"since", "last" (epoch seconds), "count", "error"} of the builds failing since the last success."""
    try:
        record = json.loads(failure_path(index_path).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return record if isinstance(record, dict) and record.get("count") else None


def failure_summary(record: dict[str, Any]) -> str:
    """One sentence: "the last 3 builds failed (since 12:01:07, the last at 12:02:40): <error>"."""
    n = int(record.get("count", 1))
    since = time.strftime("%H:%M:%S", time.localtime(float(record.get("since", 0))))
    last = time.strftime("%H:%M:%S", time.localtime(float(record.get("last", 0))))
    what = "the last build failed" if n == 1 else f"the last {n} builds failed (since {since})"
    return f"{what} at {last}: {str(record.get('error', '')).removeprefix('error: ')}"
