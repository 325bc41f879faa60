"""SQL schema of the index, derived from the fact row types.

Each row type in ``extract.facts`` is one table (snake_case name) with an
integer ``id`` and the ``file_id`` it came from, so a changed file is replaced
by deleting its rows and inserting new ones. Tables built by the link stage
(over all files) are declared here too; they are recomputed on every refresh.
"""

from __future__ import annotations

import re
import typing

from ..extract.facts import REFS, ROW_TYPES

SCHEMA_VERSION = 4


def table_name(row_type: str) -> str:
    return re.sub(r"(?<!^)(?=[A-Z])", "_", row_type).lower()


def _sql_type(annotation: object) -> str:
    return {"str": "TEXT", "int": "INTEGER", "bool": "INTEGER"}.get(str(annotation), "TEXT")


def columns(row_type: str) -> list[str]:
    return list(ROW_TYPES[row_type]._fields)


# Extra indexes per table, beyond file_id (every table) and the primary key.
INDEXES: dict[str, list[str]] = {
    "Op": ["name", "full_name"],
    "OpDispatch": ["op", "kernel"],
    "Derivative": ["op_full_name"],
    "DerivativeFormula": ["derivative"],
    "CppSymbol": ["name", "qualname"],
    "CppCall": ["caller", "callee"],
    "CppRegistration": ["name", "target"],
    "GeneratedFact": ["scope", "value"],
    "PyClass": ["name", "module"],
    "PyFunction": ["name", "module"],
    "PyCall": ["func"],
    "PyImport": [],
    "PyAssign": ["name"],
    "PyOpRef": ["op"],
    "TestClass": ["name"],
    "TestMethod": ["cls", "name"],
    "OpInfoEntry": ["name"],
    "TestUtil": ["name"],
}

BASE_DDL = """
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS files (
    id INTEGER PRIMARY KEY,
    path TEXT NOT NULL UNIQUE,      -- relative to the source root; "<generated>/..." for generated code
    layer TEXT NOT NULL,            -- ops | cpp | python | tests | generated
    size INTEGER NOT NULL,
    mtime_ns INTEGER NOT NULL,
    hash TEXT NOT NULL,
    status TEXT NOT NULL,           -- "ok", or why the file was skipped
    generated INTEGER NOT NULL DEFAULT 0
);
-- Every distinct name worth searching, and a trigram index over them for substring search.
CREATE TABLE IF NOT EXISTS names (id INTEGER PRIMARY KEY, name TEXT NOT NULL UNIQUE);
CREATE VIRTUAL TABLE IF NOT EXISTS names_fts USING fts5(name, content='names', content_rowid='id', tokenize='trigram');
"""

# Tables rebuilt by the link stage from the per-file facts.
LINK_DDL = """
DROP TABLE IF EXISTS py_api;
CREATE TABLE py_api (
    name TEXT NOT NULL,        -- "torch.add", "Tensor.add", "torch.nn.functional.relu", "torch._C.set_num_threads"
    kind TEXT NOT NULL,        -- function | method | nn | linalg | fft | special | sparse | nested | pymethoddef | pybind
    op TEXT NOT NULL,          -- op full_name it reaches ("" for hand-written bindings)
    target TEXT NOT NULL,      -- C++ function for hand-written bindings
    file_id INTEGER NOT NULL,
    line INTEGER NOT NULL
);
CREATE INDEX py_api_name ON py_api(name);
CREATE INDEX py_api_op ON py_api(op);

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
    roots TEXT NOT NULL        -- space-separated: module optimizer lr_scheduler testcase
);
CREATE INDEX py_class_fq_fq ON py_class_fq(fq);
CREATE INDEX py_class_fq_name ON py_class_fq(name);
"""


def table_ddl(row_type: str) -> str:
    cls = ROW_TYPES[row_type]
    hints = typing.get_type_hints(cls)
    cols = ",\n    ".join(f"{f} {_sql_type(hints[f].__name__ if hasattr(hints[f], '__name__') else hints[f])}"
                          for f in cls._fields)
    return f"CREATE TABLE IF NOT EXISTS {table_name(row_type)} (\n    id INTEGER PRIMARY KEY,\n    file_id INTEGER NOT NULL,\n    {cols}\n);"


def index_ddl(row_type: str) -> list[str]:
    t = table_name(row_type)
    out = [f"CREATE INDEX IF NOT EXISTS {t}_file ON {t}(file_id)"]
    out += [f"CREATE INDEX IF NOT EXISTS {t}_{c} ON {t}({c})" for c in INDEXES.get(row_type, [])]
    return out


def all_tables_ddl() -> str:
    return BASE_DDL + "\n".join(table_ddl(rt) for rt in ROW_TYPES)


def all_indexes_ddl() -> list[str]:
    return [stmt for rt in ROW_TYPES for stmt in index_ddl(rt)]


__all__ = ["SCHEMA_VERSION", "REFS", "ROW_TYPES", "table_name", "columns", "all_tables_ddl", "all_indexes_ddl", "LINK_DDL"]
