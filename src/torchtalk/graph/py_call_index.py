"""The Python calls that name a function, by the last component of their callee: read once per index version
(the server's warm-up), so that the Python callers of a name (impact, called_by, a test's reach) read only theirs."""

from __future__ import annotations

from typing import Any

from ..store.reader import Index

_CALL_COLS = ("f.module, f.qualname, c.callee, c.file_id, c.line, c.nargs, c.keywords, c.literals, c.recv_call "
              "FROM py_call c JOIN py_function f ON f.id = c.func")
_BATCH = 900  # ids per IN (...) (under SQLite's default limit of variables)


def calls_naming(ix: Index, last: str) -> list[tuple[Any, ...]]:
    """The calls without a receiver, in a function, whose callee is ``last`` or ends with ``.last`` (``LIKE``:
    ASCII case aside), in file and line order. Read by id from ``calls_by_last`` (a LIKE '%.x' reads all
    200k calls of 2.6.0: ~30 ms a name, several names for a first impact answer). Such a callee's last component
    is ``last``'s (a dotted ``last`` too)."""
    low = _ascii_lower(last)
    ids = [i for i, callee in calls_by_last(ix).get(low.rsplit(".", 1)[-1], ())
           if callee == last or _ascii_lower(callee).endswith("." + low)]
    rows: list[tuple[Any, ...]] = []
    for i in range(0, len(ids), _BATCH):
        part = ids[i:i + _BATCH]
        rows += ix.q(f"SELECT c.id, {_CALL_COLS} WHERE c.id IN ({','.join('?' * len(part))})", part)
    rows.sort(key=lambda r: (r[4], r[5], r[0]))  # file, line, id
    return [r[1:] for r in rows]


def calls_by_last(ix: Index) -> dict[str, list[tuple[int, str]]]:
    """The calls without a receiver by the last component of their callee, ASCII lower-cased: (id, callee); once
    per index version (the server's warm-up)."""
    def build() -> dict[str, list[tuple[int, str]]]:
        out: dict[str, list[tuple[int, str]]] = {}
        for i, callee in ix.q("SELECT id, callee FROM py_call WHERE recv = '' AND callee IS NOT NULL"):
            out.setdefault(_ascii_lower(callee.rsplit(".", 1)[-1]), []).append((i, callee))
        return out
    table: dict[str, list[tuple[int, str]]] = ix.cached("py_calls_by_last", build)
    return table


_LOWER = str.maketrans("ABCDEFGHIJKLMNOPQRSTUVWXYZ", "abcdefghijklmnopqrstuvwxyz")


def _ascii_lower(text: str) -> str:
    """``text`` with ASCII letters lower-cased, as SQLite's LIKE compares them."""
    return text.translate(_LOWER)
