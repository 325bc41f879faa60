"""Never stale without a word: before each answer the server knows which files differ from its index.

Note [Freshness]
~~~~~~~~~~~~~~~~
The tree is watched (``source/watch.py``, inotify): each event names a path, kept as a *candidate* until a
stat of it matches what the index holds for it (``source.files.entry_at`` against the files table). So
``changed(ix)`` is exact for the index version asked about, and costs one non-blocking read when nothing
happened (the 2.6.0 tree: ~15 µs; a walk of it costs 0.2-0.7 s). A full comparison (a walk) is made once at
start, and again only when the kernel lost events (its queue overflowed, a directory moved).

Before an answer, ``Backend`` asks; with changes, it starts a refresh (a child ``torchtalk index``, at once:
no fixed throttle) and waits up to FRESH_WAIT_S for it to land; if it does not, the answer's first line says
it is from before N changed files, names them, and says a refresh is running (or that refreshing fails,
and why). A thread also watches in the background, so an edit is usually indexed before the next call
comes. The generators' inputs (torchgen, templates, the YAMLs) are watched too: a change there leaves the
generated layer stale until the refresh re-runs them.

Without inotify (not Linux, out of watches) every check walks the tree: exact, slower (0.2-0.7 s).
"""

from __future__ import annotations

import contextlib
import logging
import select
import threading
import time
from collections.abc import Callable
from pathlib import Path

from ..query.status import walk_changes
from ..source.codegen.inputs import INPUT_DIRS, INPUT_FILES, codegen_inputs_hash
from ..source.files import entry_at, layer_of
from ..source.tree import SourceTree
from ..source.watch import TreeWatch
from ..store.reader import Index

log = logging.getLogger("torchtalk")

FRESH_WAIT_S = 2.0  # an answer waits this long for a refresh to land before it answers from the old index
SETTLE_S = 0.3  # the background watcher lets a burst of writes (a checkout) settle before it refreshes
SHOWN = 5  # changed files named in an answer's first line


def _codegen_input(rel: str) -> bool:
    return rel in INPUT_FILES or any(rel.startswith(d + "/") and (s is None or rel.endswith(s))
                                     for d, s in INPUT_DIRS)


class Freshness:
    """Which hand-written files of one tree differ from a given version of its index. Thread-safe."""

    def __init__(self, tree: SourceTree, codegen: bool = True):
        self.tree = tree
        self.codegen = codegen
        self._lock = threading.Lock()
        self._watch: TreeWatch | None = None
        self._candidates: set[str] = set()
        self._inputs: set[str] = set()  # changed inputs of the generators
        self._rescan = True  # compare the whole tree at the next check (the first one, or lost events)
        self._started = False

    def start(self) -> None:
        """Start watching (a fraction of a second: one inotify watch per directory the index reads)."""
        with self._lock:
            if self._started:
                return
            self._started = True
            self._watch = TreeWatch.open(self.tree.root)
        if self._watch is None:
            log.info("no inotify for %s: each freshness check walks the tree", self.tree.root)

    @property
    def watching(self) -> bool:
        return self._watch is not None

    def changed(self, ix: Index) -> list[str]:
        """The files that differ between the tree and ``ix`` now, sorted (generators' inputs included, while the
        generated layer is older than them). Exact, and microseconds when nothing happened."""
        self.start()
        with self._lock:
            if self._watch is None:
                return walk_changes(ix, self.tree.root)
            drained = self._watch.drain()
            for rel in drained.paths:
                if layer_of(rel) is not None:
                    self._candidates.add(rel)
                if self.codegen and _codegen_input(rel):
                    self._inputs.add(rel)
            for d in drained.gone_dirs:
                self._candidates.update(p for (p,) in ix.q("SELECT path FROM files WHERE generated = 0 AND path > ? "
                                                             "AND path < ?", (d + "/", d + "0")))
            if drained.rescan or self._rescan:
                self._rescan = False
                self._candidates |= set(walk_changes(ix, self.tree.root))
            self._candidates = self._verified(ix)
            if self._inputs and ix.meta.get("codegen_hash") == _inputs_hash(self.tree.root):
                self._inputs.clear()  # the generated layer was made from these inputs
            return sorted(self._candidates | self._inputs)

    def _verified(self, ix: Index) -> set[str]:
        """The candidates that differ from what ``ix`` holds for them."""
        if not self._candidates:
            return set()
        marks = ",".join("?" * len(self._candidates))
        indexed = {p: (s, m) for p, s, m in ix.q(f"SELECT path, size, mtime_ns FROM files WHERE path IN ({marks})",
                                                 sorted(self._candidates))}
        out = set()
        for rel in self._candidates:
            entry = entry_at(self.tree.root, rel)
            now = (entry.size, entry.mtime_ns) if entry is not None else None
            if now != indexed.get(rel):
                out.add(rel)
        return out

    def wait_for_change(self, timeout: float) -> bool:
        """Block until the tree may have changed (an event is queued) or ``timeout`` passes."""
        watch = self._watch
        if watch is None:
            time.sleep(timeout)
            return False
        try:
            ready, _w, _x = select.select([watch.fd], [], [], timeout)
        except (OSError, ValueError):  # closed meanwhile
            return False
        return bool(ready)

    def close(self) -> None:
        with self._lock:
            if self._watch is not None:
                self._watch.close()
                self._watch = None


def _inputs_hash(root: Path) -> str:
    try:
        return codegen_inputs_hash(root)
    except OSError:
        return ""


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
