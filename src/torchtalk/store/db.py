"""One SQLite file per source tree: open it safely, or build a new version atomically.

Readers open the file read-only. The indexer never writes the live file: it
copies it (or starts empty), applies changes to the copy and renames the copy
into place, so a reader always sees a whole index and a killed build leaves the
previous one in use. Journaling is off on the copy because a crash discards it.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import sqlite3
import time
from collections.abc import Callable, Iterable
from pathlib import Path

from ..errors import IndexUnavailable
from ..model import FACT_TABLES, FileStatus, Layer, RegistrationKind
from ..procs import pid_alive
from . import keys
from .builds import READ_ONLY_ERRNOS
from .codec import Row, codec_for_table
from .schema import LINK_DDL, SCHEMA_VERSION, all_indexes_ddl, all_tables_ddl, missing_tables

_MAGIC = b"SQLite format 3\x00"

# Rows referenced by others go first so their ids exist when the referrers are mapped.
INSERT_ORDER = sorted(FACT_TABLES, key=lambda t: 1 if codec_for_table(t).refs else 0)
# Columns whose values are names worth searching (the names table and its trigram index).
_NAME_COLUMNS: dict[str, tuple[str, ...]] = {
    "op": ("name", "full_name"), "op_dispatch": ("kernel",), "cpp_symbol": ("name",), "py_class": ("name",),
    "py_function": ("name",),
}
# Every source of names: those columns, and the Python names registrations of _PY_REG_KINDS give (py_api adds its own)
_NAME_SOURCES: dict[str, tuple[str, ...]] = {**_NAME_COLUMNS, "cpp_registration": ("name",)}
_MAX_NAME = 300
_PY_REG_KINDS = tuple(k.value for k in RegistrationKind if k.is_python)  # registrations that name a Python name


def _searchable(name: str) -> bool:
    return bool(name) and len(name) <= _MAX_NAME


# table -> [(table, column)] of the columns that hold its ids (a renumbering updates them too).
_REFS_INTO: dict[str, list[tuple[str, str]]] = {}
for _t in FACT_TABLES:
    for _pos, _target in codec_for_table(_t).refs:
        _REFS_INTO.setdefault(_target, []).append((_t, codec_for_table(_t).columns[_pos]))


def check_file(path: Path) -> str | None:
    """Why ``path`` is not a whole SQLite file, or None. Cheap: reads the 100-byte header."""
    try:
        size = path.stat().st_size
        with open(path, "rb") as f:
            header = f.read(100)
    except FileNotFoundError:
        return "missing"
    except OSError as exc:
        return f"unreadable ({exc.strerror})"
    if len(header) < 100 or not header.startswith(_MAGIC):
        return "not an SQLite database (bad header)"
    page_size = int.from_bytes(header[16:18], "big")
    page_size = 65536 if page_size == 1 else page_size
    pages = int.from_bytes(header[28:32], "big")
    valid_for = int.from_bytes(header[92:96], "big")
    change_counter = int.from_bytes(header[24:28], "big")
    if pages and valid_for == change_counter and size < pages * page_size:
        return f"truncated ({size} of {pages * page_size} bytes)"
    if size % max(page_size, 1):
        return "truncated (size is not a whole number of pages)"
    return None


def run_script(conn: sqlite3.Connection, sql: str) -> None:
    """Run ``;``-separated statements inside the current transaction (executescript would commit it)."""
    stmt = ""
    for line in sql.splitlines(keepends=True):
        stmt += line
        if sqlite3.complete_statement(stmt):
            conn.execute(stmt)
            stmt = ""
    if stmt.strip():
        conn.execute(stmt)


def corrupt_marker(index_path: Path) -> Path:
    return index_path.with_name(index_path.name + ".corrupt")


def mark_corrupt(index_path: Path, reason: str) -> None:
    """Remember that reads failed, so the next refresh rebuilds instead of trusting the file."""
    with contextlib.suppress(OSError):
        corrupt_marker(index_path).write_text(reason + "\n", encoding="utf-8")


def probe(conn: sqlite3.Connection) -> None:
    """Touch the first and last page of every table's own b-tree (NOT INDEXED: not whichever covering index the
    planner rates cheapest): cheap (ms), catches damaged roots; a full check costs seconds on a real index."""
    tables = [r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table' "
                                         "AND sql NOT LIKE 'CREATE VIRTUAL%' AND name NOT LIKE 'names_fts_%'")]
    for t in tables:
        conn.execute(f"SELECT * FROM \"{t}\" NOT INDEXED LIMIT 1").fetchall()
        conn.execute(f"SELECT max(rowid) FROM \"{t}\" NOT INDEXED").fetchall()


def read_meta(conn: sqlite3.Connection) -> dict[str, str]:
    return dict(conn.execute("SELECT key, value FROM meta"))


def open_readonly(path: Path) -> sqlite3.Connection:
    """Open a finished index for queries; IndexUnavailable says what is wrong with it."""
    problem = check_file(path)
    if problem:
        raise IndexUnavailable(f"index {path} is {problem}")
    try:
        conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True, check_same_thread=False)
        meta = read_meta(conn)
    except sqlite3.DatabaseError as exc:
        raise IndexUnavailable(f"index {path} is corrupt ({exc})") from None
    version = meta.get("schema_version")
    problem = (f"has schema version {version}, this TorchTalk needs {SCHEMA_VERSION}" if version != str(SCHEMA_VERSION)
               else "is incomplete" if meta.get("complete") != "1"  # a table missing: every answer would fail
               else f"is corrupt (it lacks {missing})" if (missing := missing_tables(conn)) else "")
    if problem:
        conn.close()
        raise IndexUnavailable(f"index {path} {problem}")
    conn.execute("PRAGMA query_only = 1")
    conn.execute("PRAGMA cache_size = -65536")  # 64 MiB: hot tables stay in memory
    conn.execute("PRAGMA mmap_size = 1073741824")
    return conn


def is_read_only_error(exc: OSError) -> bool:
    """Whether ``exc`` means the place cannot be written (permissions, an immutable file, a read-only mount)."""
    return exc.errno in READ_ONLY_ERRNOS


class BuildRejected(IndexUnavailable):
    """A finished build failed its check; it was discarded."""


class ReadOnlyCache(IndexUnavailable):
    """The index must be rebuilt or refreshed, but its directory cannot be written."""


class WriteFailed(IndexUnavailable):
    """A build could not write (a full disk, a quota, a file-size limit, an I/O error); nothing was published."""


class BuildBusy(IndexUnavailable):
    """Another build of this index held the lock for longer than the caller would wait."""


def probe_writable(index_path: Path) -> None:
    """OSError when a new version of the index could not be written beside it (checked before any work,
    so a read-only cache fails at once, with its reason, instead of after the parse)."""
    path = index_path.with_name(f".{index_path.name}.tmp-{os.getpid()}")
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
    os.close(fd)
    os.unlink(path)


def remove_temps(index_path: Path) -> None:
    """Remove the temp files of builds of this index that did not finish (killed, or the machine went down).
    Call under ``writer_lock``: then no other build of this index runs, so every one of them is stale."""
    with contextlib.suppress(OSError):
        for p in index_path.parent.glob(f".{index_path.name}.tmp-*"):
            with contextlib.suppress(OSError):
                p.unlink()


def _remove_stale_temps(index_path: Path) -> None:
    for p in index_path.parent.glob(f".{index_path.name}.tmp-*"):
        pid = p.name.rsplit("-", 1)[-1]
        if pid.isdigit() and not pid_alive(int(pid)):
            with contextlib.suppress(OSError):
                p.unlink()


class IndexWriter:
    """A new version of the index, built in a temporary file and published by ``commit``.

    ``base`` is the current index to start from (incremental) or None (full build).
    Call under ``writer_lock``.
    """

    def __init__(self, index_path: Path, base_ok: bool):
        self.index_path = index_path
        _remove_stale_temps(index_path)
        self.tmp_path = index_path.with_name(f".{index_path.name}.tmp-{os.getpid()}")
        with contextlib.suppress(FileNotFoundError):
            self.tmp_path.unlink()
        self.incremental = base_ok
        self.changed: set[str] = set()  # fact tables this build added rows to or removed rows from
        try:
            if base_ok:
                shutil.copyfile(index_path, self.tmp_path)
            self.conn = sqlite3.connect(self.tmp_path, isolation_level=None)
            self.conn.execute("PRAGMA journal_mode = OFF")
            self.conn.execute("PRAGMA synchronous = OFF")
            self.conn.execute("PRAGMA cache_size = -262144")
            self.conn.execute("PRAGMA temp_store = MEMORY")
            self.conn.execute("BEGIN")
            if not base_ok:
                run_script(self.conn, all_tables_ddl())
                self.set_meta(schema_version=str(SCHEMA_VERSION), complete="0")
            self.ids = keys.FactIds(self.conn, FACT_TABLES, _REFS_INTO, incremental=base_ok)
        except BaseException:
            self.abort()  # a full disk fails the copy or the first pages: never leave the temp file behind
            raise
        self._sql = {}
        for t in FACT_TABLES:
            cols = codec_for_table(t).columns
            marks = ", ".join("?" * (len(cols) + 2))
            self._sql[t] = f"INSERT INTO {t} (id, file_id, {', '.join(cols)}) VALUES ({marks})"
        self._new_names: set[str] = set()
        self._gone_names: set[str] = set()  # names of rows a refresh deleted: kept only if still named

    # ------------------------------------------------------------ files and facts

    def files(self) -> dict[str, int]:  # path -> id of what the index holds now
        return {r[0]: r[1] for r in self.conn.execute("SELECT path, id FROM files")}

    def file_ids(self, files: Iterable[tuple[str, bool]]) -> dict[str, int]:
        """path -> id for files to add, given as (path, generated) (Note [Canonical ids]): a path the index
        holds keeps its id."""
        return keys.file_ids(self.conn, ((generated, path) for path, generated in files))

    def remove_file(self, file_id: int) -> None:
        if self.incremental:
            for t, cols in _NAME_SOURCES.items():
                where = f" AND kind IN {_PY_REG_KINDS}" if t == "cpp_registration" else ""
                for c in cols:
                    self._gone_names.update(r[0] for r in self.conn.execute(
                        f"SELECT DISTINCT {c} FROM {t} WHERE file_id = ?{where}", (file_id,)))
        for t in FACT_TABLES:
            if self.conn.execute(f"DELETE FROM {t} WHERE file_id = ?", (file_id,)).rowcount:
                self.changed.add(t)
        self.conn.execute("DELETE FROM files WHERE id = ?", (file_id,))

    def touch_file(self, file_id: int, stamp: tuple[int, int, int, int]) -> None:
        """Same content, new stamp: remember it so the next refresh skips the hash (Note [File stamps])."""
        self.conn.execute("UPDATE files SET (size, mtime_ns, ctime_ns, ino) = (?, ?, ?, ?) WHERE id = ?",
                          (*stamp, file_id))

    def add_file(self, path: str, layer: Layer, stamp: tuple[int, int, int, int], digest: str, status: FileStatus,
                 reason: str, facts: dict[str, list[Row]] | None, generated: bool = False,
                 file_id: int | None = None) -> int:
        """Record one file and its facts (rows per table, as ``store.codec.encode_facts`` makes them), under
        ``file_id`` (from ``file_ids``; by default one is allocated for this path alone)."""
        if file_id is None:
            file_id = self.file_ids([(path, generated)])[path]
        if facts:
            self.ids.written((generated, path))
        self.conn.execute(
            "INSERT INTO files (id, path, layer, size, mtime_ns, ctime_ns, ino, hash, status, reason, generated) "
            "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            (file_id, path, str(layer), *stamp, digest, str(status), reason, int(generated)),
        )
        if facts:
            self._insert_facts(file_id, (generated, path), facts)
            self.changed.update(t for t, rows in facts.items() if rows)
        return file_id

    def _insert_facts(self, file_id: int, key: keys.FileKey, facts: dict[str, list[Row]]) -> None:
        base: dict[str, int] = {}
        for t in INSERT_ORDER:
            rows = facts.get(t)
            if not rows:
                continue
            start = base[t] = self.ids.block(t, file_id, key, len(rows))  # Note [Canonical ids]
            refs = codec_for_table(t).refs
            if not refs:
                self.conn.executemany(self._sql[t], [(start + i, file_id, *row) for i, row in enumerate(rows)])
                continue
            # Local positions become ids of this file's rows: -1 (or a table the file has no rows of) is NULL.
            fixes = [(pos, base.get(target)) for pos, target in refs]
            out = []
            for i, row in enumerate(rows):
                values = list(row)
                for pos, offset in fixes:
                    local = values[pos]
                    values[pos] = offset + local if offset is not None and local is not None and local >= 0 else None
                out.append((start + i, file_id, *values))
            self.conn.executemany(self._sql[t], out)
        self._collect_names(facts)

    def _collect_names(self, facts: dict[str, list[Row]]) -> None:
        add = self._new_names.update
        for t, cols in _NAME_COLUMNS.items():
            rows = facts.get(t)
            if rows:
                names = codec_for_table(t).columns
                for c in cols:
                    i = names.index(c)
                    add(r[i] for r in rows)
        regs = facts.get("cpp_registration")
        if regs:
            names = codec_for_table("cpp_registration").columns
            kind, name = names.index("kind"), names.index("name")
            add(r[name] for r in regs if r[kind] in _PY_REG_KINDS)

    def add_names(self, names: Iterable[str]) -> None:
        self._new_names.update(names)

    # ------------------------------------------------------------ meta and publishing

    def set_meta(self, **values: str) -> None:
        self.conn.executemany("INSERT OR REPLACE INTO meta (key, value) VALUES (?, ?)",
                              [(k, str(v)) for k, v in values.items()])

    def flush_names(self) -> None:
        """Bring the search tables to the names the index holds now: those seen since the last flush are
        added, and (in a refresh) those of deleted rows that nothing names any more are removed, so a refresh
        leaves the same names as a full build, with ids in the same order (Note [Canonical ids])."""
        names = sorted(n for n in self._new_names if _searchable(n))
        if not self.incremental:
            ids = keys.spread(0, keys.NAME_ID_LIMIT, len(names)) if names else []
            self.conn.executemany("INSERT INTO names (id, name) VALUES (?, ?)", zip(ids, names, strict=True))
            self.conn.execute("INSERT INTO names_fts(names_fts) VALUES ('rebuild')")
            self._new_names.clear()
            return
        known = {n for (n,) in self.conn.execute("SELECT name FROM names WHERE name IN (SELECT value FROM "
                                                 "json_each(?))", (json.dumps(names),))}
        gone = [n for n in self._gone_names - self._new_names if _searchable(n) and not self._still_named(n)]
        rows = [(i, n) for n in gone for (i,) in self.conn.execute("SELECT id FROM names WHERE name = ?", (n,))]
        self.conn.executemany("INSERT INTO names_fts (names_fts, rowid, name) VALUES ('delete', ?, ?)", rows)
        self.conn.executemany("DELETE FROM names WHERE id = ?", ((i,) for i, _n in rows))
        new = [n for n in names if n not in known]
        try:
            added = keys.name_ids(self.conn, new)
        except keys.IdsExhausted:  # too many new names in one place: number them all again (a second or two)
            everything = sorted({n for (n,) in self.conn.execute("SELECT name FROM names")} | set(new))
            self.conn.execute("DELETE FROM names")
            self.conn.executemany("INSERT INTO names (id, name) VALUES (?, ?)",
                                  zip(keys.spread(0, keys.NAME_ID_LIMIT, len(everything)), everything, strict=True))
            self.conn.execute("INSERT INTO names_fts(names_fts) VALUES ('rebuild')")
            added = []
        self.conn.executemany("INSERT INTO names (id, name) VALUES (?, ?)", added)
        self.conn.executemany("INSERT INTO names_fts (rowid, name) VALUES (?, ?)", added)
        self._new_names.clear()
        self._gone_names.clear()

    def _still_named(self, name: str) -> bool:
        """Whether any row the search tables are made of names ``name``."""
        for t, cols in _NAME_SOURCES.items():
            where = f" AND kind IN {_PY_REG_KINDS}" if t == "cpp_registration" else ""
            for c in cols:
                if self.conn.execute(f"SELECT 1 FROM {t} WHERE {c} = ?{where} LIMIT 1", (name,)).fetchone():
                    return True
        return self.conn.execute("SELECT 1 FROM py_api WHERE name = ? LIMIT 1", (name,)).fetchone() is not None

    def finish_facts(self) -> None:
        """After all files: indexes (built once, after bulk inserts, which is faster)."""
        if not self.incremental:
            for stmt in all_indexes_ddl():
                self.conn.execute(stmt)

    def rebuild_link_table(self, table: str) -> None:
        """Empty one of the link stage's tables (store/schema.py LINK_DDL), for the link stage to fill again."""
        if self.incremental and table == "py_api":  # its names go with it unless the new rows name them again
            self._gone_names.update(n for (n,) in self.conn.execute("SELECT DISTINCT name FROM py_api"))
        run_script(self.conn, LINK_DDL[table])

    def commit(self, verify: Callable[[sqlite3.Connection], str | None] | None = None) -> None:
        """Publish the new version. ``verify(conn)`` says what is wrong with the finished file, or None; a
        version it rejects is discarded (BuildRejected) and the published index stays as it was."""
        self.set_meta(complete="1", built_at=str(time.time()), build_id=os.urandom(16).hex())  # store/resolved.py
        self.conn.execute("COMMIT")
        if not self.incremental:
            self.conn.execute("ANALYZE")
        problem = verify(self.conn) if verify is not None else None
        self.conn.close()
        if problem:
            with contextlib.suppress(OSError):
                self.tmp_path.unlink()
            raise BuildRejected(f"the new version of {self.index_path} failed SQLite's integrity check "
                                f"({problem}); it was discarded and the previous index left in place")
        with contextlib.suppress(FileNotFoundError):
            corrupt_marker(self.index_path).unlink()
        with open(self.tmp_path, "rb+") as f:
            os.fsync(f.fileno())
        os.replace(self.tmp_path, self.index_path)
        dir_fd = os.open(self.index_path.parent, os.O_RDONLY)
        try:
            os.fsync(dir_fd)
        finally:
            os.close(dir_fd)

    def abort(self) -> None:
        conn = getattr(self, "conn", None)  # None when the constructor failed before connecting
        if conn is not None:
            with contextlib.suppress(Exception):
                conn.close()
        with contextlib.suppress(OSError):
            self.tmp_path.unlink()
