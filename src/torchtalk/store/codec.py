"""One generic mapping between the model's fact dataclasses and SQLite rows.

Columns are the dataclass's fields, in order, minus the ones the store fills when
reading (``stored_id`` / ``stored_path``). Scalars are stored as they are, enums as
their value, a ``FunctionSchema`` as its text (it round-trips), other containers as
JSON. Pure: no database handle, so workers can encode the facts they extract and
send plain tuples to the writer (cheaper to pickle than objects).
"""

from __future__ import annotations

import dataclasses
import enum
import functools
import json
import typing
from collections.abc import Callable
from operator import attrgetter
from typing import Any

from ..model import FACT_TABLES, TABLE_OF, FileProblems, FunctionSchema
from ..model.facts import ref_fields, stored_fields

Row = tuple[Any, ...]
_Conv = Callable[[Any], Any]


def _json_encode(value: Any) -> str:
    # A set is written sorted: its iteration order changes with the process (string hashing), and the same
    # facts must give the same rows in every build.
    if isinstance(value, (frozenset, set)):
        return json.dumps(sorted(value, key=str), sort_keys=True)
    return json.dumps(list(value) if isinstance(value, tuple) else value, sort_keys=True)


def _tuples(value: Any) -> Any:
    return tuple(_tuples(v) for v in value) if isinstance(value, list) else value


class _Members(dict[Any, Any]):
    """An enum's members by value: decoding a row's kind is a dict lookup, not a call of the enum (a Python
    function: tens of thousands of rows an answer). A value it lacks goes to the enum, which raises as before."""

    def __init__(self, cls: type[enum.Enum]) -> None:
        super().__init__((m.value, m) for m in cls.__members__.values())
        self.cls = cls

    def __missing__(self, value: Any) -> Any:
        return self.cls(value)


def _codecs(hint: Any) -> tuple[str, _Conv | None, _Conv | None]:
    """(SQL type, encoder or None for as-is, decoder or None for as-is) for one field's type."""
    if hint is bool:
        return "INTEGER", int, bool
    if hint is int:
        return "INTEGER", None, None
    if hint is str:
        return "TEXT", None, None
    if isinstance(hint, type) and issubclass(hint, enum.Enum):
        return "TEXT", attrgetter("_value_"), _Members(hint).__getitem__
    if hint is FunctionSchema:
        return "TEXT", str, FunctionSchema.parse
    origin = typing.get_origin(hint)
    if origin is frozenset:
        (item,) = typing.get_args(hint)
        inner = item if isinstance(item, type) and issubclass(item, enum.Enum) else None
        return "TEXT", _json_encode, (lambda text: frozenset(inner(v) if inner else v for v in json.loads(text)))
    if origin is tuple:
        return "TEXT", _json_encode, (lambda text: _tuples(json.loads(text)))
    raise TypeError(f"no column type for {hint!r}")


class RowCodec:
    """Encodes one fact type to rows and decodes rows back to facts."""

    def __init__(self, cls: type) -> None:
        self.cls = cls
        self.table = TABLE_OF[cls]
        hints = typing.get_type_hints(cls)
        stored = stored_fields(cls)
        fields = [f for f in dataclasses.fields(cls) if f.name not in stored]
        self.columns = [f.name for f in fields]
        codecs = [_codecs(hints[f.name]) for f in fields]
        self.sql_types = [c[0] for c in codecs]
        self._getter = attrgetter(*self.columns)
        self._enc = [(i, c[1]) for i, c in enumerate(codecs) if c[1] is not None]
        self._dec = [(i, c[2]) for i, c in enumerate(codecs) if c[2] is not None]
        # (column position, table of the fact it points at) for ref fields
        refs = ref_fields(cls)
        self.refs = [(i, FACT_TABLES_BY_CLASS_NAME[refs[f.name]]) for i, f in enumerate(fields) if f.name in refs]

    def encode(self, fact: Any) -> Row:
        if type(fact) is not self.cls:
            raise TypeError(f"{self.table}: expected {self.cls.__name__}, got {type(fact).__name__}")
        values = self._getter(fact)
        if not isinstance(values, tuple):
            values = (values,)
        if not self._enc:
            return values
        out = list(values)
        for i, conv in self._enc:
            out[i] = conv(out[i])
        return tuple(out)

    def decode(self, row: Row, id: int = 0, path: str = "") -> Any:
        """A fact from its column values (in ``columns`` order), with the store-filled fields."""
        values = list(row)
        for i, conv in self._dec:
            if values[i] is not None:
                values[i] = conv(values[i])
        for i, _target in self.refs:
            if values[i] is None:
                values[i] = -1
        return self.cls(*values, id=id, path=path)

    def ddl(self) -> str:
        cols = ",\n    ".join(f"{c} {t}" for c, t in zip(self.columns, self.sql_types, strict=True))
        return (f"CREATE TABLE IF NOT EXISTS {self.table} (\n    id INTEGER PRIMARY KEY,\n"
                f"    file_id INTEGER NOT NULL,\n    {cols}\n);")

    def select(self, alias: str = "") -> str:
        """``id, file_id, <columns>`` for a SELECT (``row_fact`` reads rows in this shape)."""
        p = f"{alias}." if alias else ""
        return ", ".join(f"{p}{c}" for c in ("id", "file_id", *self.columns))


FACT_TABLES_BY_CLASS_NAME: dict[str, str] = {cls.__name__: table for table, cls in FACT_TABLES.items()}


@functools.cache
def codec(cls: type) -> RowCodec:
    return RowCodec(cls)


def codec_for_table(table: str) -> RowCodec:
    return codec(FACT_TABLES[table])


def encode_facts(facts: dict[type, list[Any]]) -> dict[str, list[Row]]:
    """An extractor's facts as rows per table (what a worker sends to the writer)."""
    return {TABLE_OF[cls]: [codec(cls).encode(f) for f in rows] for cls, rows in facts.items()
            if rows and cls is not FileProblems}


def row_fact(cls: type, row: Row, path_of: Callable[[int], str]) -> Any:
    """A fact from a row selected with ``codec(cls).select()``: (id, file_id, *columns)."""
    return codec(cls).decode(row[2:], id=row[0], path=path_of(row[1]))


def rows_facts(cls: type, rows: list[Row], paths: dict[int, str]) -> list[Any]:
    """Facts from many rows selected with ``codec(cls).select()``, file paths from ``paths``."""
    decode = codec(cls).decode
    return [decode(r[2:], id=r[0], path=paths.get(r[1], "?")) for r in rows]
