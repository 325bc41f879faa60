"""Row ids that sort like what they identify, so a refresh lists rows exactly as a full build does.

Note [Canonical ids]
~~~~~~~~~~~~~~~~~~~~
Queries break ties by id (``ORDER BY file_id, line``, an index scan in rowid order, ``LIMIT`` over an FTS
match), so the order of ids is part of every answer. Ids handed out in the order rows were written made that
order a matter of history: a refreshed file's rows went to the end, a full build numbered files in the order
its workers finished, and an ``impact`` answer cut at 60 of 112 callers listed a different 60 after a
refresh than after a full build. So ids are keys of an order defined by content alone:

- a file's id sorts like its path. A full build spreads the ids evenly over ``(0, FILE_ID_LIMIT)``; a
  refresh keeps the id of every file it re-reads and gives a new path an id between its neighbours';
- a fact's id is ``file_id << FACT_SHIFT | position in the file``: facts sort by file, then as extracted;
- a searchable name's id sorts like the name (``names``, and the rowids of its trigram index).

The values differ between a refresh and a full build (midpoints against even spacing); their order never
does. When a gap between two neighbours is used up, ``IdsExhausted`` asks for a full build.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterable

FILE_ID_LIMIT = 1 << 38  # file ids are in (0, FILE_ID_LIMIT)
FACT_SHIFT = 24  # facts of one file and table: at most 2**24 (a file is at most 8 MB)
NAME_ID_LIMIT = 1 << 62


class IdsExhausted(Exception):
    """No id is left between two neighbours: the index must be built from scratch (which spaces them again)."""


def spread(lo: int, hi: int, n: int) -> list[int]:
    """``n`` increasing ids strictly between ``lo`` and ``hi``, evenly spaced."""
    if hi - lo <= n:
        raise IdsExhausted(f"no room for {n} ids between {lo} and {hi}")
    return [lo + (hi - lo) * (k + 1) // (n + 1) for k in range(n)]


def allocate(existing: list[tuple[str, int]], new: Iterable[str], limit: int) -> dict[str, int]:
    """Ids for ``new`` keys, each between the ids of its neighbours among ``existing`` ((key, id) sorted by
    key, whose ids increase with it)."""
    fresh = sorted(set(new))
    out: dict[str, int] = {}
    i = 0
    run: list[str] = []
    lo = 0
    for key in fresh:
        while i < len(existing) and existing[i][0] < key:
            if run:
                out.update(zip(run, spread(lo, existing[i][1], len(run)), strict=True))
                run = []
            lo = existing[i][1]
            i += 1
        if i < len(existing) and existing[i][0] == key:
            out[key] = existing[i][1]  # not new after all
            continue
        run.append(key)
    if run:
        hi = existing[i][1] if i < len(existing) else limit
        out.update(zip(run, spread(lo, hi, len(run)), strict=True))
    return out


def file_ids(conn: sqlite3.Connection, new: Iterable[str]) -> dict[str, int]:
    """Ids for files not in ``conn``'s files table yet, in path order among those that are."""
    existing = [(p, i) for p, i in conn.execute("SELECT path, id FROM files ORDER BY path")]
    return allocate(existing, new, FILE_ID_LIMIT)


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
