"""Every table of an index, as content: for comparing a refreshed index with one built from scratch.

Ids are replaced by what they stand for (a file's path; a fact's file and position in it; a name), and rows
are listed in id order, so two dumps are equal when the tables hold the same rows *and* list them in the same
order (Note [Canonical ids] in store/keys.py: queries break ties by id; hand-written files come first, then
generated ones). A table this module does not know fails the dump: a new table must say how it is compared.
"""

from __future__ import annotations

import sqlite3
from collections import defaultdict
from pathlib import Path
from typing import Any

from torchtalk.model import FACT_TABLES
from torchtalk.store.codec import codec_for_table

# Meta values that say when and how fast a build ran, not what it holds (and which build it was: build_id).
VOLATILE_META = frozenset({"built_at", "build_id", "last_mode", "last_seconds", "layer_seconds", "stage_cpu_seconds",
                           "codegen_cpu_seconds",
                           "listed_at"})
# SQLite's planner statistics (ANALYZE after a full build; a refresh keeps the copy's) and the FTS index's
# internal pages (their layout depends on the order of writes; `integrity-check` and the MATCH results below
# compare what they index).
NOT_COMPARED = frozenset({"sqlite_stat1", "sqlite_stat4", "names_fts_data", "names_fts_idx", "names_fts_docsize",
                          "names_fts_config", "names_fts_content"})
FTS_PROBES = ("rel", "index", "kernel", "add", "soft", "Tensor", "_out", "cuda", "test", "nn.")


def dump(path: Path) -> dict[str, Any]:
    conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    try:
        return _dump(conn)
    finally:
        conn.close()


def _sorted_like(keys: list[Any], what: str) -> None:
    assert keys == sorted(keys), f"{what}: ids do not sort like their content"


def _dump(conn: sqlite3.Connection) -> dict[str, Any]:
    tables = {r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
    out: dict[str, Any] = {}
    files = conn.execute("SELECT id, path, layer, size, mtime_ns, hash, status, reason, generated FROM files "
                         "ORDER BY id").fetchall()
    path_of = {r[0]: r[1] for r in files}
    order_of = {r[0]: (r[8], r[1]) for r in files}  # hand-written files first, then generated ones; by path
    _sorted_like([order_of[r[0]] for r in files], "files")
    # A generated file's mtime is when the generators wrote it into that cache (each build has its own copy).
    out["files"] = [(*r[1:4], None if r[8] else r[4], *r[5:]) for r in files]
    # A fact's id stands for (its file, its position among that file's rows of the table).
    local: dict[str, dict[int, tuple[str, int]]] = {}
    rows_of: dict[str, list[tuple]] = {}
    for t in FACT_TABLES:
        rows = conn.execute(f"SELECT * FROM {t} ORDER BY id").fetchall()
        counter: dict[int, int] = defaultdict(int)
        ids: dict[int, tuple[str, int]] = {}
        for r in rows:
            ids[r[0]] = (path_of[r[1]], counter[r[1]])
            counter[r[1]] += 1
        _sorted_like([(order_of[r[1]], ids[r[0]][1]) for r in rows], t)
        local[t], rows_of[t] = ids, rows
    for t in FACT_TABLES:
        refs = [(pos + 2, target) for pos, target in codec_for_table(t).refs]  # after id, file_id
        norm = []
        for r in rows_of[t]:
            values = list(r)
            for pos, target in refs:
                if values[pos] is not None:
                    values[pos] = local[target].get(values[pos], ("dangling", values[pos]))
            norm.append((local[t][r[0]], *values[2:]))
        out[t] = norm
    names = conn.execute("SELECT id, name FROM names ORDER BY id").fetchall()
    _sorted_like([n for _i, n in names], "names")
    out["names"] = [n for _i, n in names]
    name_of = dict(names)
    out["names_fts"] = {p: [name_of.get(i, ("missing", i)) for (i,) in conn.execute(
        "SELECT rowid FROM names_fts WHERE names_fts MATCH ? ORDER BY rowid", (f'"{p}"',))] for p in FTS_PROBES}
    out["py_api"] = [(*r[:4], path_of[r[4]], r[5]) for r in conn.execute(
        "SELECT name, kind, op, target, file_id, line FROM py_api ORDER BY rowid")]
    fq = []
    for r in conn.execute("SELECT source, ref, fq, module, name, file_id, line, bases, roots, exported "
                          "FROM py_class_fq ORDER BY id"):
        table = "py_class" if r[0] == "py" else "test_class"
        fq.append((r[0], local[table].get(r[1], ("dangling", r[1])), *r[2:5], path_of[r[5]], *r[6:]))
    out["py_class_fq"] = fq
    out["meta"] = {k: v for k, v in conn.execute("SELECT key, value FROM meta") if k not in VOLATILE_META}
    unknown = tables - set(out) - NOT_COMPARED
    assert not unknown, f"tables the comparison does not cover: {sorted(unknown)}"
    return out


def fts_whole(path: Path) -> bool:
    """SQLite's own check that the trigram index matches the names table."""
    conn = sqlite3.connect(path)
    try:
        conn.execute("INSERT INTO names_fts(names_fts) VALUES ('integrity-check')")
        return True
    except sqlite3.DatabaseError:
        return False
    finally:
        conn.close()


def differences(a: dict[str, Any], b: dict[str, Any], limit: int = 5) -> list[str]:
    """What differs between two dumps, a few lines per table."""
    out = []
    for t in sorted(set(a) | set(b)):
        x, y = a.get(t), b.get(t)
        if x == y:
            continue
        if isinstance(x, list) and isinstance(y, list):
            only_x = [r for r in x if r not in y][:limit]
            only_y = [r for r in y if r not in x][:limit]
            order = "" if only_x or only_y else " (same rows, another order)"
            out.append(f"{t}: {len(x)} vs {len(y)} rows{order}; only in the first: {only_x}; only in the second: "
                       f"{only_y}")
        elif isinstance(x, dict) and isinstance(y, dict):
            out.append(f"{t}: " + "; ".join(f"{k}: {x.get(k)!r} vs {y.get(k)!r}" for k in sorted(set(x) | set(y))
                                            if x.get(k) != y.get(k))[:2000])
        else:
            out.append(f"{t}: {x!r:.300} vs {y!r:.300}")
    return out
