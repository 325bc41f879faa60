"""Never stale without a word: before each answer the server knows whether its index misses changes.

Before an answer, ``Backend`` asks ``index/freshness.py`` which files differ from its index (Note
[Freshness]: inotify, microseconds); with changes, it starts a refresh (a child ``torchtalk index``, at once:
no fixed throttle) and waits up to FRESH_WAIT_S for it to land; if it does not, the answer's first line
says it is from before N changed files, names them, and says a refresh is running (or that refreshing
fails, and why). A thread also watches in the background, so an edit is usually indexed before the next
call comes.
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Callable

from ..index.freshness import Freshness
from ..store.reader import Index

FRESH_WAIT_S = 2.0  # an answer waits this long for a refresh to land before it answers from the old index
SETTLE_S = 0.3  # the background watcher lets a burst of writes (a checkout) settle before it refreshes
WATCH_DELAY_S = 1.0  # as the warm-up: on two cores, setting up the watch would compete with `initialize`
SHOWN = 5  # changed files named in an answer's first line


def stale_note(changed: list[str], built_at: str, refreshing: str) -> str:
    """The first line of an answer from an index that misses changes."""
    names = ", ".join(changed[:SHOWN]) + (f" and {len(changed) - SHOWN} more" if len(changed) > SHOWN else "")
    n = len(changed)
    return (f"Note: this answer is from the index built at {built_at}, before changes to {n} file{'s' * (n != 1)} "
            f"({names}); {refreshing}. `get_status` shows what changed.")


def watch_in_background(fresh: Freshness, index: Callable[[], Index | None], refresh: Callable[[], None],
                        stop: threading.Event) -> threading.Thread:
    """A daemon thread that starts a refresh soon after files change, before any call asks, and again after a
    refresh that ended with changes still left (made while it ran)."""

    def run() -> None:
        if stop.wait(WATCH_DELAY_S):
            return
        fresh.start()
        pending = False
        while not stop.is_set():
            event = fresh.wait_for_change(1.0)
            if event and stop.wait(SETTLE_S):
                return
            if not (event or pending):
                continue
            ix = index()
            if ix is None:
                continue
            with contextlib.suppress(Exception):  # a check must never take the server down
                ix.recheck()
                pending = bool(fresh.changed(ix))
                if pending:
                    refresh()

    t = threading.Thread(target=run, name="torchtalk-freshness", daemon=True)
    t.start()
    return t
