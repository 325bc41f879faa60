"""The lines of a tree's file, for the edges found in the source text (op_refs.py, stub_uses.py).

Note [Source lines]: the edges the index does not record (an op's function or a stub handed on) are found
by reading the defining file's text at query time. A GPU walk passes hundreds of files and a server runs for
days, so the lines are held in one cache per index version, bounded to ``MAX_FILES`` files (least recently
used out first), and shared by every reader; the HTTP front-end answers on several threads, so the cache
takes a lock. A file that cannot be read gives no lines (no edge is found in it), as before.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from pathlib import Path

from ..store.reader import Index

MAX_FILES = 256


class LineCache:
    """The ``MAX_FILES`` files read last, as lists of lines; thread-safe."""

    def __init__(self, root: Path, size: int = MAX_FILES) -> None:
        self.root, self.size = root, size
        self._files: OrderedDict[str, list[str]] = OrderedDict()
        self._lock = threading.Lock()

    def lines(self, path: str) -> list[str]:
        with self._lock:
            held = self._files.get(path)
            if held is not None:
                self._files.move_to_end(path)
                return held
        try:
            read = (self.root / path).read_text(encoding="utf-8", errors="replace").split("\n")
        except OSError:
            read = []
        with self._lock:
            self._files[path] = read
            self._files.move_to_end(path)
            while len(self._files) > self.size:
                self._files.popitem(last=False)
        return read

    def __len__(self) -> int:
        return len(self._files)


def file_lines(ix: Index, path: str) -> list[str]:
    """The lines of the tree's ``path`` (``[]`` without a tree or when it cannot be read)."""
    root = ix.source_root
    if root is None:
        return []
    return ix.cached("source_lines", lambda: LineCache(root)).lines(path)
