"""Row ids that sort like what they identify, so a refresh lists rows exactly as a full build does.

Note [Canonical ids]
~~~~~~~~~~~~~~~~~~~~
Queries break ties by id (``ORDER BY file_id, line``, an index scan in rowid order, ``LIMIT`` over an FTS
match), so the order of ids is part of every answer. Ids handed out in the order rows were written made that
order a matter of history: a refreshed file's rows went to the end of their tables, a full build numbered
files in the order its workers finished, and an ``impact`` answer cut at 60 of 112 callers listed a
different 60 after a refresh than after a full build. So ids follow an order defined by content alone:

- files: hand-written files by path, then generated ones by path. A full build spreads their ids over
  ``(0, FILE_ID_LIMIT)``; a refresh keeps the id of a file it re-reads and gives a new one an id between
  its neighbours'.
- facts: in each table, a file's rows take consecutive ids in the order they were extracted, after the rows
  of the files before it and before those after it. A full build (which writes files in that order) leaves
  room behind each file's rows (``slack``); a refresh puts a file's new rows in the room between its
  neighbours', and when a file outgrows it, renumbers that table (``FactIds.respace``).
- searchable names: by name, spread over ``(0, NAME_ID_LIMIT)``.

The values differ between a refresh and a full build; their order never does. They stay small (a few
bytes each in every row and index entry): the index is no bigger than with ids in order of writing.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterable

FILE_ID_LIMIT = 1 << 22
NAME_ID_LIMIT = 1 << 27

FileKey = tuple[bool, str]  # (generated, path): the order of files


class IdsExhausted(Exception):
    """No id is left between two neighbours."""


def slack(rows: int) -> int:
    """Room a full build leaves behind a file's rows in a table, for the rows a refresh may add."""
    return rows // 4 + 2


def spread(lo: int, hi: int, n: int) -> list[int]:
    """``n`` increasing ids strictly between ``lo`` and ``hi``, evenly spaced."""
    if hi - lo <= n:
        raise IdsExhausted(f"no room for {n} ids between {lo} and {hi}")
    return [lo + (hi - lo) * (k + 1) // (n + 1) for k in range(n)]


def allocate(existing: list[tuple[FileKey, int]], new: Iterable[FileKey], limit: int) -> dict[FileKey, int]:
    """Ids for ``new`` keys, each between the ids of its neighbours among ``existing`` ((key, id) sorted by
    key, whose ids increase with it); a key already there keeps its id."""
    out: dict[FileKey, int] = {}
    i, lo = 0, 0
    run: list[FileKey] = []
    for key in sorted(set(new)):
        while i < len(existing) and existing[i][0] < key:
            if run:
                out.update(zip(run, spread(lo, existing[i][1], len(run)), strict=True))
                run = []
            lo = existing[i][1]
            i += 1
        if i < len(existing) and existing[i][0] == key:
            out[key] = existing[i][1]
            continue
        run.append(key)
    if run:
        out.update(zip(run, spread(lo, existing[i][1] if i < len(existing) else limit, len(run)), strict=True))
    return out


def file_ids(conn: sqlite3.Connection, new: Iterable[FileKey]) -> dict[str, int]:
    """path -> id for the files ``new`` names, in file order among those the files table holds."""
    existing = [((bool(g), p), i) for p, i, g in conn.execute("SELECT path, id, generated FROM files "
                                                               "ORDER BY generated, path")]
    return {path: i for (_g, path), i in allocate(existing, new, FILE_ID_LIMIT).items()}


class FactIds:
    """Where each file's rows go in each fact table (Note [Canonical ids])."""

    def __init__(self, conn: sqlite3.Connection, tables: Iterable[str], refs: dict[str, list[tuple[str, str]]],
                 incremental: bool):
        self.conn = conn
        self.incremental = incremental
        self.refs = refs  # table -> [(referring table, column)]
        self._next = {t: 1 for t in tables}  # a full build's next free id per table
        self._last: FileKey | None = None

    def block(self, table: str, file_id: int, key: FileKey, n: int) -> int:
        """The first of ``n`` consecutive ids for the rows of the file ``file_id`` (``key``) in ``table``."""
        if not self.incremental:
            start = self._next[table]
            self._next[table] = start + n + slack(n)
            return start
        lo, hi = self._room(table, file_id)
        if hi - lo - 1 < n:
            self.respace(table, file_id, n)
            lo, hi = self._room(table, file_id)
        return lo + 1

    def written(self, key: FileKey) -> None:
        """A full build writes files in their order: say so for each (a wrong order is a bug, caught here)."""
        if not self.incremental:
            if self._last is not None and key <= self._last:
                raise AssertionError(f"files written out of order: {key} after {self._last}")
            self._last = key

    def _room(self, table: str, file_id: int) -> tuple[int, int]:
        """(last id of the files before, first id of the files after) in ``table`` (file ids sort like files)."""
        lo = self.conn.execute(f"SELECT id FROM {table} WHERE file_id < ? ORDER BY file_id DESC, id DESC LIMIT 1",
                               (file_id,)).fetchone()
        hi = self.conn.execute(f"SELECT id FROM {table} WHERE file_id > ? ORDER BY file_id, id LIMIT 1",
                               (file_id,)).fetchone()
        return (lo[0] if lo else 0), (hi[0] if hi else (1 << 62))

    def respace(self, table: str, file_id: int, n: int) -> None:
        """Renumber ``table`` as a full build would, with room for ``n`` rows of ``file_id``, and the columns
        that refer to it. Seconds on the largest table: only when a file outgrew the room behind it."""
        rows = self.conn.execute(f"SELECT id, file_id FROM {table} ORDER BY file_id, id").fetchall()
        remap: list[tuple[int, int]] = []
        nxt, i = 1, 0
        placed = False
        while i < len(rows) or not placed:
            fid = rows[i][1] if i < len(rows) else None
            if not placed and (fid is None or fid > file_id):
                nxt += n + slack(n)  # the room of the file about to be written
                placed = True
                continue
            j = i
            while j < len(rows) and rows[j][1] == fid:
                j += 1
            remap += [(rows[k][0], nxt + k - i) for k in range(i, j)]
            nxt += (j - i) + slack(j - i)
            i = j
        self.conn.execute("DROP TABLE IF EXISTS temp.tt_remap")
        self.conn.execute("CREATE TEMP TABLE tt_remap (old INTEGER PRIMARY KEY, new INTEGER NOT NULL)")
        self.conn.executemany("INSERT INTO temp.tt_remap (old, new) VALUES (?, ?)", remap)
        # Through negative ids: no new id collides with an old one on the way.
        self.conn.execute(f"UPDATE {table} SET id = -(SELECT new FROM temp.tt_remap WHERE old = {table}.id)")
        self.conn.execute(f"UPDATE {table} SET id = -id")
        for other, col in self.refs.get(table, []):
            self.conn.execute(f"UPDATE {other} SET {col} = (SELECT new FROM temp.tt_remap WHERE old = {other}.{col}) "
                              f"WHERE {col} IS NOT NULL")
        self.conn.execute("DROP TABLE temp.tt_remap")


def name_ids(conn: sqlite3.Connection, new: list[str]) -> list[tuple[int, str]]:
    """(id, name) for names not in ``conn``'s names table yet, in name order among those that are; each
    new name's neighbours are looked up in the name index (a refresh adds a few among ~80,000)."""
    groups: dict[tuple[int, int], list[str]] = {}
    for name in sorted(new):
        lo = conn.execute("SELECT id FROM names WHERE name < ? ORDER BY name DESC LIMIT 1", (name,)).fetchone()
        hi = conn.execute("SELECT id FROM names WHERE name > ? ORDER BY name LIMIT 1", (name,)).fetchone()
        groups.setdefault((lo[0] if lo else 0, hi[0] if hi else NAME_ID_LIMIT), []).append(name)
    return [(i, n) for (lo, hi), names in groups.items() for i, n in zip(spread(lo, hi, len(names)), names,
                                                                              strict=True)]
