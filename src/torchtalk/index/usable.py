"""Whether a tree's index can be answered from as it is: one judgement for the server's start-up
(build first when not), `torchtalk setup`, `status` and `doctor`."""

from __future__ import annotations

import sqlite3

from ..errors import TorchTalkError
from ..source.tree import SourceTree
from ..store.db import check_file, corrupt_marker, open_readonly, probe, read_meta
from .indexer import INDEXER_VERSION


def index_problem(tree: SourceTree) -> str | None:
    """Why the index cannot be served as it is, or None. Opens it read-only; builds nothing."""
    path = tree.index_path
    problem = check_file(path)
    if problem == "missing":
        return "no index yet"
    if problem:
        return f"the index file is {problem}"
    marker = corrupt_marker(path)
    if marker.exists():
        return f"the index was found corrupt ({marker.read_text(errors='replace').strip()[:200]})"
    try:
        conn = open_readonly(path)
        try:
            probe(conn)
            meta = read_meta(conn)
        finally:
            conn.close()
    except (TorchTalkError, sqlite3.DatabaseError) as exc:
        return f"the index is unreadable ({exc})"
    if meta.get("indexer_version") != INDEXER_VERSION:
        return f"the index was made by indexer {meta.get('indexer_version')}, this TorchTalk needs {INDEXER_VERSION}"
    if meta.get("source_root") != str(tree.root):
        return f"the index belongs to another tree ({meta.get('source_root')})"
    return None
