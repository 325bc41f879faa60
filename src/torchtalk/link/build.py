"""The link stage: tables computed over all files after extraction.

Per-file facts stay as extracted (so a refresh replaces one file's rows); what
needs every file at once is rebuilt here on each refresh. It must stay cheap:
it runs even when only one file changed.
"""

from __future__ import annotations

from ..store.db import IndexWriter
from .pyapi import python_api_rows
from .pyclasses import class_rows


def build_links(writer: IndexWriter) -> None:
    writer.rebuild_link_tables()
    conn = writer.conn
    rows = python_api_rows(conn)
    conn.executemany("INSERT INTO py_api (name, kind, op, target, file_id, line) VALUES (?, ?, ?, ?, ?, ?)", rows)
    writer.add_names(r[0] for r in rows)
    conn.executemany("INSERT INTO py_class_fq (source, ref, fq, module, name, file_id, line, bases, roots) "
                     "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)", class_rows(conn))
