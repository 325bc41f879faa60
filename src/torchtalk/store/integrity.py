"""Damage in an index that no query has touched yet: SQLite's own ``PRAGMA quick_check``, within a time budget.

A query that reads a damaged page fails and marks the index corrupt (``db.mark_corrupt``); pages that
queries rarely read (an index of the call graph, a table's middle) would stay damaged unnoticed. So a
build checks its new file before publishing it, a server checks its index in the background after it
starts, and ``doctor`` checks on request. Damage found here is marked the same way, so the next refresh
rebuilds instead of copying the damaged file, and ``get_status`` and ``doctor`` report it.
"""

from __future__ import annotations

import contextlib
import os
import sqlite3
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from .db import corrupt_marker, mark_corrupt

BUDGET_S = 30.0  # a real index (140 MB) takes 0.4-2 s; the budget bounds a slow disk or a huge index
WATCH_DELAY_S = 3.0  # after a server starts: not while it answers `initialize` and the first calls
MAX_ERRORS = 10


@dataclass(frozen=True)
class Integrity:
    ok: bool | None  # True: whole; False: damaged; None: not finished within the budget, or not readable
    detail: str  # the first problems SQLite found, or why the check did not finish
    seconds: float


def check(path: Path | None, budget_s: float = BUDGET_S, conn: sqlite3.Connection | None = None) -> Integrity:
    """Run ``PRAGMA quick_check`` on the index at ``path`` (or on ``conn``, a build's open connection),
    stopping after ``budget_s`` seconds. Reads only."""
    t0 = time.monotonic()
    own = conn is None
    try:
        if conn is None:
            conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True, check_same_thread=False)
    except sqlite3.Error as exc:
        return Integrity(None, f"cannot open {path} ({exc})", time.monotonic() - t0)
    # quick_check is one long step for SQLite: only an interrupt from another thread stops it in time.
    timer = threading.Timer(budget_s, conn.interrupt)
    timer.daemon = True
    timer.start()
    try:
        rows = [r[0] for r in conn.execute(f"PRAGMA quick_check({MAX_ERRORS})")]
    except sqlite3.OperationalError as exc:
        if "interrupt" in str(exc):
            return Integrity(None, f"the check did not finish within {budget_s:g} s", time.monotonic() - t0)
        return Integrity(False, str(exc), time.monotonic() - t0)
    except sqlite3.DatabaseError as exc:  # "database disk image is malformed" and friends
        return Integrity(False, str(exc), time.monotonic() - t0)
    finally:
        timer.cancel()
        if own:
            conn.close()
    if rows == ["ok"]:
        return Integrity(True, "", time.monotonic() - t0)
    return Integrity(False, "; ".join(rows[:3]) + (f" (and {len(rows) - 3} more)" if len(rows) > 3 else ""),
                     time.monotonic() - t0)


def _identity(path: Path) -> tuple[int, int] | None:
    try:
        st = os.stat(path)
    except OSError:
        return None
    return st.st_ino, st.st_mtime_ns


def check_and_mark(path: Path, budget_s: float = BUDGET_S) -> Integrity:
    """``check``; damage is marked (``mark_corrupt``) unless a new version of the index landed meanwhile."""
    before = _identity(path)
    result = check(path, budget_s)
    if result.ok is False and before is not None and _identity(path) == before:
        mark_corrupt(path, f"integrity check failed: {result.detail}")
    return result


def reported_damage(path: Path) -> str | None:
    """Why the index was found damaged (by a query or a check), or None."""
    try:
        text = corrupt_marker(path).read_text(encoding="utf-8", errors="replace").strip()
    except OSError:
        return None
    return text[:300] or "damaged"


def watch(path: Path, on_damage: Callable[[], None], delay_s: float = WATCH_DELAY_S,
          budget_s: float = BUDGET_S, log: Callable[[str], None] | None = None) -> threading.Thread:
    """Check a served index once, in a background thread, ``delay_s`` after start; call ``on_damage``
    (the server: rebuild now) when it is damaged."""

    def run() -> None:
        time.sleep(delay_s)
        with contextlib.suppress(Exception):  # a check must never take the server down
            result = check_and_mark(path, budget_s)
            if result.ok is False:
                if log:
                    log(f"index {path} is damaged ({result.detail}); rebuilding it")
                on_damage()
            elif result.ok is None and log:
                log(f"integrity check of {path} not done: {result.detail}")

    t = threading.Thread(target=run, name="torchtalk-integrity", daemon=True)
    t.start()
    return t
