"""Which hand-written files of a tree differ from a given version of its index, in microseconds.

Note [Freshness]
~~~~~~~~~~~~~~~~
The tree is watched (``source/watch.py``, inotify): each event names a path, kept as a *candidate* until its
stamp (size, mtime, ctime, inode: Note [File stamps] in ``source/files.py``) matches what the index holds for it
(``source.files.entry_at`` against the files table). So ``changed(ix)`` is exact for the index version asked
about, and costs one non-blocking read when nothing happened (the 2.6.0 tree: ~15 us; a walk of it costs
0.2-0.7 s). A full comparison (a walk) is made once at start, and again only when the kernel lost events (its
queue overflowed, a directory moved). The generators' inputs (torchgen, templates, the YAMLs) are watched too: a
change there leaves the generated layer stale until a refresh re-runs them. Without inotify (not Linux, out of
watches) every check walks.

The server (``server/freshness.py``, ``server/backend.py``) asks before each answer and refreshes first;
``query/status.py`` asks for ``get_status``.
"""

from __future__ import annotations

import logging
import select
import threading
import time
from pathlib import Path

from ..source.codegen.inputs import INPUT_DIRS, INPUT_FILES, codegen_inputs_hash
from ..source.files import entry_at, layer_of, list_files
from ..source.watch import TreeWatch
from ..store.reader import Index
from ..store.schema import STAMP_COLUMNS

log = logging.getLogger("torchtalk")


def walk_changes(ix: Index, root: Path) -> list[str]:
    """Hand-written files whose stamp differs from the index (Note [File stamps]; plus new and deleted ones): a
    walk of the tree, 0.2-0.7 s on 2.6.0. Exact at the moment it runs; never cached (an answer "fresh" must be
    true)."""
    indexed = {r[0]: r[1:] for r in ix.q(f"SELECT path, {STAMP_COLUMNS} FROM files WHERE generated = 0")}
    entries = list_files(root)
    current = {e.relpath for e in entries}
    changed = [e.relpath for e in entries if indexed.get(e.relpath) != e.stamp]
    changed += [p for p in indexed if p not in current]
    return sorted(changed)


def _codegen_input(rel: str) -> bool:
    return rel in INPUT_FILES or any(rel.startswith(d + "/") and (s is None or rel.endswith(s))
                                     for d, s in INPUT_DIRS)


class Freshness:
    """Which hand-written files of one tree differ from a given version of its index. Thread-safe."""

    def __init__(self, root: Path, codegen: bool = True):
        self.root = Path(root)
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
            self._watch = TreeWatch.open(self.root)
        if self._watch is None:
            log.info("no inotify for %s: each freshness check walks the tree", self.root)

    @property
    def watching(self) -> bool:
        return self._watch is not None

    def changed(self, ix: Index) -> list[str]:
        """The files that differ between the tree and ``ix`` now, sorted (generators' inputs included, while the
        generated layer is older than them). Exact, and microseconds when nothing happened."""
        self.start()
        with self._lock:
            if self._watch is None:
                return walk_changes(ix, self.root)
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
                self._candidates |= set(walk_changes(ix, self.root))
            self._candidates = self._verified(ix)
            if self._inputs and ix.meta.get("codegen_hash") == _inputs_hash(self.root):
                self._inputs.clear()  # the generated layer was made from these inputs
            return sorted(self._candidates | self._inputs)

    def _verified(self, ix: Index) -> set[str]:
        """The candidates that differ from what ``ix`` holds for them."""
        if not self._candidates:
            return set()
        marks = ",".join("?" * len(self._candidates))
        indexed = {r[0]: r[1:] for r in ix.q(f"SELECT path, {STAMP_COLUMNS} FROM files WHERE path IN ({marks})",
                                             sorted(self._candidates))}
        out = set()
        for rel in self._candidates:
            entry = entry_at(self.root, rel)
            now = entry.stamp if entry is not None else None
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
