"""The link stage: tables computed over all files after extraction.

Per-file facts stay as extracted (so a refresh replaces one file's rows); what
needs every file at once is rebuilt here, on each refresh that changed its inputs.
It must stay cheap: it runs even when only one file changed.
"""

from __future__ import annotations

from ..store.db import IndexWriter
from .pyapi import python_api_rows
from .pyclasses import INPUT_TABLES, class_rows


def build_links(writer: IndexWriter) -> None:
    """Rebuild the link tables: py_api always (it joins ops, bindings and Python files), py_class_fq when a build
    changed the facts it is computed from (a refresh after a YAML or C++ edit keeps it: ~0.2 s)."""
    conn = writer.conn
    writer.rebuild_link_table("py_api")
    rows = python_api_rows(conn)
    conn.executemany("INSERT INTO py_api (name, kind, op, target, file_id, line) VALUES (?, ?, ?, ?, ?, ?)", rows)
    writer.add_names(r[0] for r in rows)
    if writer.incremental and not writer.changed & INPUT_TABLES:
        return
    writer.rebuild_link_table("py_class_fq")
    conn.executemany("INSERT INTO py_class_fq (source, ref, fq, module, name, file_id, line, bases, roots, exported) "
                     "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)", class_rows(conn))
