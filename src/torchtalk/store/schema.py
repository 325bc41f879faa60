"""SQL schema of the index: one table per fact type (from the row codec), plus the link tables.

Each fact table has an integer ``id`` and the ``file_id`` it came from, so a changed
file is replaced by deleting its rows and inserting new ones. Tables built by the
link stage (over all files) are declared here too; they are recomputed on every refresh.
"""

from __future__ import annotations

import re
import sqlite3

from ..model import FACT_TABLES, CallKind
from .codec import codec_for_table

SCHEMA_VERSION = 30  # 30: py_class_fq.exported; 29: files.ctime_ns and files.ino (Note [File stamps]); 28:
#                      op_info_entry.aten_backward_name

# The columns of files that hold a file's stamp, in the order of source.files.Stamp.
STAMP_COLUMNS = "size, mtime_ns, ctime_ns, ino"

# Extra indexes per table, beyond file_id (every table) and the primary key.
INDEXES: dict[str, list[str]] = {
    "op": ["name", "full_name"],
    "op_dispatch": ["op", "kernel"],
    "derivative": ["op_full_name"],
    "derivative_formula": ["derivative"],
    "cpp_symbol": ["name", "qualname"],
    "cpp_call": ["caller", "callee"],
    "cpp_registration": ["name", "target"],
    "cpp_using": ["alias"],
    "cpp_class": ["qualname", "name"],
    "cpp_field": ["cls"],
    "generated_fact": ["scope", "value"],
    "py_class": ["name", "module"],
    "py_function": ["name", "module"],
    "py_call": ["func"],
    "py_assign": ["name"],
    "py_attr": ["attr"],
    "py_op_ref": ["op"],
    "test_class": ["name"],
    "test_method": ["cls", "name"],
    "op_info_entry": ["name"],
    "op_info_list": ["name"],
    "op_test_mark": ["op"],
    "test_util": ["name"],
}

BASE_DDL = """
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS files (
    id INTEGER PRIMARY KEY,
    path TEXT NOT NULL UNIQUE,      -- relative to the source root; "<generated>/..." for generated code
    layer TEXT NOT NULL,            -- model.Layer
    size INTEGER NOT NULL,          -- size .. ino: the stamp it was read at (Note [File stamps] in source/files.py)
    mtime_ns INTEGER NOT NULL,
    ctime_ns INTEGER NOT NULL,
    ino INTEGER NOT NULL,
    hash TEXT NOT NULL,
    status TEXT NOT NULL,           -- model.FileStatus
    reason TEXT NOT NULL DEFAULT '', -- why a file was skipped or what failed in it
    generated INTEGER NOT NULL DEFAULT 0
);
-- Every distinct name worth searching, and a trigram index over them for substring search.
CREATE TABLE IF NOT EXISTS names (id INTEGER PRIMARY KEY, name TEXT NOT NULL UNIQUE);
CREATE VIRTUAL TABLE IF NOT EXISTS names_fts USING fts5(name, content='names', content_rowid='id', tokenize='trigram');
"""

# The tables the link stage (link/build.py) computes from the per-file facts, each rebuilt whole when it must be:
# py_api on every build, py_class_fq when the facts it is computed from changed (link/pyclasses.py INPUT_TABLES).
LINK_DDL: dict[str, str] = {"py_api": """
DROP TABLE IF EXISTS py_api;
CREATE TABLE py_api (
    name TEXT NOT NULL,        -- "torch.add", "Tensor.add", "torch.nn.functional.relu", "torch._C.set_num_threads"
    kind TEXT NOT NULL,        -- model.PyApiKind
    op TEXT NOT NULL,          -- op full_name it reaches ("" for hand-written bindings)
    target TEXT NOT NULL,      -- C++ function for bindings; the Python name an alias is bound to
    file_id INTEGER NOT NULL,
    line INTEGER NOT NULL
);
CREATE INDEX py_api_name ON py_api(name);
CREATE INDEX py_api_op ON py_api(op);
""", "py_class_fq": """
DROP TABLE IF EXISTS py_class_fq;
CREATE TABLE py_class_fq (
    id INTEGER PRIMARY KEY,
    source TEXT NOT NULL,      -- py (torch/**) | test (test/**)
    ref INTEGER NOT NULL,      -- py_class.id or test_class.id
    fq TEXT NOT NULL,          -- "torch.nn.modules.linear.Linear", "test.test_nn.TestNN"
    module TEXT NOT NULL,
    name TEXT NOT NULL,
    file_id INTEGER NOT NULL,
    line INTEGER NOT NULL,
    bases TEXT NOT NULL,       -- JSON list of resolved base names (as written when unresolvable)
    roots TEXT NOT NULL,       -- space-separated: module optimizer lr_scheduler testcase
    exported TEXT NOT NULL     -- space-separated, shortest first: the names the packages above its module export it
                               -- under ("torch.nn.Linear torch.nn.modules.Linear"), "" for none (link/pyclasses.py)
);
CREATE INDEX py_class_fq_fq ON py_class_fq(fq);
CREATE INDEX py_class_fq_name ON py_class_fq(name);
"""}


# Partial indexes: (name, column, the rows it holds). The <<<>>> launch sites, a few hundred of 650k call sites: the
# launch names no kernel has (graph/symbols.py) are read from them in milliseconds, not by a scan of every site;
# likewise the function templates that take functions as template arguments (graph/handed.py).
PARTIAL_INDEXES: dict[str, list[tuple[str, str, str]]] = {
    "cpp_call": [("launch", "callee", f"kind = '{CallKind.LAUNCH.value}'")],
    "cpp_symbol": [("fparams", "fparams", "fparams != ''")],
}


def index_ddl(table: str) -> list[str]:
    out = [f"CREATE INDEX IF NOT EXISTS {table}_file ON {table}(file_id)"]
    out += [f"CREATE INDEX IF NOT EXISTS {table}_{c} ON {table}({c})" for c in INDEXES.get(table, [])]
    out += [f"CREATE INDEX IF NOT EXISTS {table}_{name} ON {table}({c}) WHERE {where}"
            for name, c, where in PARTIAL_INDEXES.get(table, [])]
    return out


def all_tables_ddl() -> str:
    return BASE_DDL + "\n".join(codec_for_table(t).ddl() for t in FACT_TABLES)


def required_tables() -> set[str]:
    """Every table a finished index has, of the facts and their names (a dropped one makes every answer fail: it is
    a damaged index); the link stage's own tables (LINK_DDL) are the indexer's."""
    return set(re.findall(r"CREATE (?:VIRTUAL )?TABLE (?:IF NOT EXISTS )?(\w+)", all_tables_ddl()))


def missing_tables(conn: sqlite3.Connection) -> str:
    """The tables of ``required_tables`` a finished index lacks, as an answer names them ("" when none)."""
    missing = sorted(required_tables() - {r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE "
                                                                      "type = 'table'")})
    return f"the table{'s' * (len(missing) > 1)} {', '.join(missing)}" if missing else ""


def all_indexes_ddl() -> list[str]:
    return [stmt for t in FACT_TABLES for stmt in index_ddl(t)]


__all__ = ["SCHEMA_VERSION", "STAMP_COLUMNS", "INDEXES", "all_tables_ddl", "all_indexes_ddl", "index_ddl", "LINK_DDL",
           "missing_tables", "required_tables"]
