"""The store of resolved calls: a cache of the graph's C++ call resolution, beside the index.

Note [Resolved calls]
~~~~~~~~~~~~~~~~~~~~~
The index keeps each call site as written (ARCHITECTURE.md, "Facts per file"); the graph resolves a site
when a question needs it (graph/resolve.py), about 0.2 ms a site on the 2.6.0 tree. A first answer that walks
thousands of sites (``cuda_kernels("conv2d")``, ``impact("at::native::add", 3)``) pays for each of them. This
file is where the resolution of every site of one build of the index is kept once it has been computed
(graph/resolved_build.py: ``torchtalk resolve``, ``torchtalk setup``, or a server in the background): one row
per site that resolves to something; a site without a row resolves to nothing.

It is a second SQLite file, ``resolved.db`` beside ``index.db``, bound to the build it was computed from: both
files' meta hold the build's ``build_id`` (store/db.py writes a new one with every build it publishes), and a
reader uses the store only when the ids match and it was written by the code that reads it (the layout of its
rows and a digest of the graph and model packages, which resolve calls: ``version``): a store an older TorchTalk
computed is computed again, never read as this code's resolutions. A refresh publishes a new build, so the store
of the old one is not used (calls are resolved as asked) until it is computed again. The store is written to a
temporary file and renamed into place, so it is whole or absent; deleting it changes no answer, only how long
the first ones take. A read that fails (a damaged file) is never taken for a site without a row: the answer
resolves as asked, and the file is dropped for the next background run to compute again.
"""

from __future__ import annotations

import contextlib
import logging
import os
import pickle
import sqlite3
import threading
import zlib
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

from ..codedigest import code_digest
from ..procs import pid_alive

log = logging.getLogger(__name__)

RESOLVED_NAME = "resolved.db"
RESOLVED_VERSION = "3"  # the layout of the rows below; a store of another layout is not used
# The code that resolves calls: the graph and model packages (graph/resolve.py and what it reads). A store written by
# other code (another TorchTalk, an edited checkout) may hold resolutions this code would not make, so it is not used
# (Note [Resolved calls]); it is computed again.
_RULES_PACKAGES = ("graph", "model")
# site: the cpp_call row id; kind: the resolution's kind (graph/resolve.py TargetKind); defs: symbol ids,
# comma-separated, best first; ops: op full names, comma-separated; flags: FLAG_* bits.
# Note [Stored edges]: ``edge`` holds every edge a site makes (graph/cpp_edges.py call_edges), so that the edges out
# of a function (``calls``, the walks down) are read, not made site by site, and the callers of a function or an op
# are read by what they reach, not found by resolving every site that names it: pos, the edge's place among the
# site's; src, the caller's symbol id; file and line, the site's; kind, how, note, written, the edge's; dkind, dst,
# dlabel, dpath, dline, the node it reaches (a function's by its symbol id alone: dlabel and dpath ""; dline 0: no
# place); flags: EDGE_QUALIFIED when the site is written with a qualifier the reached function's scope allows,
# EDGE_SKIPPED_BY_GPU_WALK when the GPU walk leaves the site unresolved (graph/device_reach.py skips).
#
# Note [Stored GPU walks]: ``gpu_walk`` holds, per op, what graph/gpu.py ``gpu_walk`` finds from it at its default
# depth (what ``cuda_kernels`` of the op lists; kind "op", key its full name; and when that walk found nothing and
# was cut, the look further cuda_kernels takes then: Note [No device work]), and per kernel of an op for a key that
# runs on a GPU, what ``gpu_reach`` finds below it (trace's GPU lines for that kernel; kind and key of its node),
# walked once the edges above are in (the walks read them), pickled and compressed (``pack``). A first
# ``cuda_kernels`` or ``trace`` reads them instead of walking thousands of functions: on 2.6.0
# ``cuda_kernels("scaled_dot_product_attention")`` walked 90 kernels' code, 11,800 steps, in 0.34 s of CPU after the
# warm-up. The objects are those the walk returns, of the classes of the code that wrote them
# (``version`` holds the digest of that code: another TorchTalk's walks are never read), and the file is the user's
# own cache beside the index, written only by this code.
DDL = """
CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE resolved (site INTEGER PRIMARY KEY, kind TEXT NOT NULL, defs TEXT NOT NULL, ops TEXT NOT NULL,
                       stub TEXT NOT NULL, spelling TEXT NOT NULL, flags INTEGER NOT NULL);
CREATE TABLE edge (site INTEGER NOT NULL, pos INTEGER NOT NULL, src INTEGER NOT NULL, file INTEGER NOT NULL,
                   line INTEGER NOT NULL, kind TEXT NOT NULL, how TEXT NOT NULL, note TEXT NOT NULL,
                   written TEXT NOT NULL, flags INTEGER NOT NULL, dkind TEXT NOT NULL, dst TEXT NOT NULL,
                   dlabel TEXT NOT NULL, dpath TEXT NOT NULL, dline INTEGER NOT NULL);
CREATE TABLE gpu_walk (kind TEXT NOT NULL, key TEXT NOT NULL, depth INTEGER NOT NULL, hops INTEGER NOT NULL,
                       data BLOB NOT NULL, PRIMARY KEY (kind, key, depth, hops));
"""
# made once the rows are in (faster than row by row)
INDEX_DDL = ("CREATE INDEX edge_dst ON edge (dst)", "CREATE INDEX edge_src ON edge (src)")
FLAG_CANDIDATES = 1
FLAG_STD = 2
EDGE_QUALIFIED = 1
EDGE_SKIPPED_BY_GPU_WALK = 2
Row = tuple[int, str, str, str, str, str, int]  # (site, kind, defs, ops, stub, spelling, flags)
# (site, pos, src, file, line, kind, how, note, written, flags, dkind, dst, dlabel, dpath, dline)
EdgeRow = tuple[int, int, int, int, int, str, str, str, str, int, str, str, str, str, int]
WalkRow = tuple[str, str, int, int, bytes]  # (kind, key, depth, hops, data)
_BATCH = 900  # ids per IN (...) query (under SQLite's default limit of variables)


def resolved_path(index_path: Path) -> Path:
    return index_path.with_name(RESOLVED_NAME)


def pack(value: object) -> bytes:
    """A walk as the store keeps it (Note [Stored GPU walks])."""
    return zlib.compress(pickle.dumps(value, protocol=pickle.HIGHEST_PROTOCOL), 1)


class ResolvedWriter:
    """A new store for the build ``build_id`` of the index at ``index_path``: rows go to a temporary file that
    ``commit`` renames into place. ``readable`` makes the calls' rows readable there first (the GPU walks read
    them: Note [Stored GPU walks])."""

    def __init__(self, index_path: Path, build_id: str) -> None:
        self.path = resolved_path(index_path)
        self.tmp = self.path.with_name(f".{RESOLVED_NAME}.tmp-{os.getpid()}")
        self.build_id = build_id
        self.made_readable = False
        for old in self.path.parent.glob(f".{RESOLVED_NAME}.tmp-*"):  # left by a run that was killed
            pid = old.name.rsplit("-", 1)[-1]
            if old == self.tmp or not pid.isdigit() or not pid_alive(int(pid)):
                with contextlib.suppress(OSError):
                    old.unlink()
        try:
            self.conn = sqlite3.connect(self.tmp, isolation_level=None)
            self.conn.execute("PRAGMA journal_mode = OFF")
            self.conn.execute("PRAGMA synchronous = OFF")
            self.conn.execute("BEGIN")
            for stmt in DDL.split(";"):
                if stmt.strip():
                    self.conn.execute(stmt)
        except BaseException:
            self.abort()
            raise

    def add(self, rows: Iterable[Row], edges: Iterable[EdgeRow] = ()) -> None:
        self.conn.executemany("INSERT INTO resolved VALUES (?, ?, ?, ?, ?, ?, ?)", rows)
        self.conn.executemany(f"INSERT INTO edge VALUES ({', '.join('?' * 15)})", edges)

    def readable(self, **meta: str) -> Path:
        """Commit the rows so far, with their indexes and ``meta``, to the temporary file (still not in place);
        its path, for ``open_resolved``."""
        for stmt in INDEX_DDL:
            self.conn.execute(stmt)
        self.conn.executemany("INSERT INTO meta VALUES (?, ?)",
                              [("build_id", self.build_id), ("version", version()), *meta.items()])
        self.conn.execute("COMMIT")
        self.conn.execute("BEGIN")
        self.made_readable = True
        return self.tmp

    def add_walks(self, walks: Iterable[WalkRow]) -> None:
        """(the start's node kind and key, depth, hops, ``pack``ed walk) rows (Note [Stored GPU walks])."""
        self.conn.executemany("INSERT INTO gpu_walk VALUES (?, ?, ?, ?, ?)", walks)

    def commit(self, **meta: str) -> None:
        """Commit, with ``meta`` (after ``readable``'s), and rename into place."""
        if not self.made_readable:
            self.readable()
        self.conn.executemany("INSERT OR REPLACE INTO meta VALUES (?, ?)", meta.items())
        self.conn.execute("COMMIT")
        self.conn.close()
        with open(self.tmp, "rb+") as f:
            os.fsync(f.fileno())
        os.replace(self.tmp, self.path)

    def abort(self) -> None:
        conn = getattr(self, "conn", None)
        if conn is not None:
            with contextlib.suppress(Exception):
                conn.close()
        with contextlib.suppress(OSError):
            self.tmp.unlink()


class DamagedStore(Exception):
    """A read of the store failed (a damaged page): the graph resolves as asked instead and drops the file."""


class ResolvedStore:
    """The rows of a store, read-only; thread-safe (one connection, a lock around each statement). A read that
    fails raises DamagedStore, never a partial answer: a site without its row would read as resolving to
    nothing."""

    def __init__(self, conn: sqlite3.Connection, meta: dict[str, str], path: Path) -> None:
        self._conn = conn
        self.meta = meta
        self.path = path
        self._lock = threading.Lock()

    def _all(self, sql: str, params: Sequence[object]) -> list[Any]:
        try:
            with self._lock:
                found: list[Any] = self._conn.execute(sql, params).fetchall()
        except sqlite3.DatabaseError as exc:
            raise DamagedStore(f"{self.path}: {exc}") from None
        return found

    def rows(self, sites: Iterable[int]) -> list[Row]:
        """The rows of these sites (those that have one), in no particular order."""
        ids = list(sites)
        out: list[Row] = []
        for i in range(0, len(ids), _BATCH):
            part = ids[i:i + _BATCH]
            out += self._all(f"SELECT * FROM resolved WHERE site IN ({','.join('?' * len(part))})", part)
        return out

    def between(self, lo: int, hi: int) -> list[Row]:
        """The rows of the sites lo..hi (a function's sites are numbered in a row: one query for all of them)."""
        return self._all("SELECT * FROM resolved WHERE site BETWEEN ? AND ?", (lo, hi))

    def edges_into(self, keys: Sequence[str], kinds: Sequence[str]) -> list[EdgeRow]:
        """The edges of these kinds into the nodes of these keys (symbol ids, op full names), by site and place."""
        marks, kmarks = ",".join("?" * len(keys)), ",".join("?" * len(kinds))
        return self._all(f"SELECT * FROM edge WHERE dst IN ({marks}) AND kind IN ({kmarks}) ORDER BY site, pos",
                         [*keys, *kinds])

    def edges_from(self, src: int) -> list[EdgeRow]:
        """The edges out of the function of this symbol id, in source order (by line, site and place)."""
        return self._all("SELECT * FROM edge WHERE src = ? ORDER BY line, site, pos", (src,))

    def row(self, site: int) -> Row | None:
        found = self._all("SELECT * FROM resolved WHERE site = ?", (site,))
        return found[0] if found else None

    def walk(self, kind: str, key: str, depth: int, hops: int) -> object | None:
        """The stored GPU walk from a node (its kind and key) to this depth and hops (Note [Stored GPU walks]), or
        None (none stored)."""
        found = self._all("SELECT data FROM gpu_walk WHERE kind = ? AND key = ? AND depth = ? AND hops = ?",
                          (kind, key, depth, hops))
        if not found:
            return None
        try:
            walk: object = pickle.loads(zlib.decompress(found[0][0]))
        except Exception as exc:  # a damaged blob: zlib.error, pickle's UnpicklingError, EOFError, ...
            raise DamagedStore(f"{self.path}: the GPU walk of {kind} {key}: {exc}") from None
        return walk


def discard(store: ResolvedStore, why: str) -> None:
    """Drop a store a read found damaged (once: the first reader to find it), so that the next background run
    computes it again; a reader holding it goes on without it."""
    log.warning("the store of resolved calls is damaged (%s); resolving calls as asked, and dropping it", why)
    with contextlib.suppress(OSError):
        store.path.unlink()


def open_resolved(index_path: Path, build_id: str | None, path: Path | None = None) -> ResolvedStore | None:
    """The store computed for build ``build_id`` of this index, or None: none there, another build's, written by
    other code (``version``), or unreadable (the graph then resolves calls as asked; a damaged file is logged,
    never used). ``path``: a store being built (``ResolvedWriter.readable``), instead of the one in place."""
    path = path or resolved_path(index_path)
    if not build_id or not path.is_file():
        return None
    try:
        conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True, check_same_thread=False)
        meta = dict(conn.execute("SELECT key, value FROM meta"))
        if not _serves(meta, build_id):
            conn.close()
            return None
        conn.execute("PRAGMA query_only = 1")
    except sqlite3.DatabaseError as exc:
        log.warning("the store of resolved calls %s is unreadable (%s); resolving calls as asked, and dropping it",
                    path, exc)
        with contextlib.suppress(OSError):
            path.unlink()  # the next background run computes it again
        return None
    return ResolvedStore(conn, meta, path)


def serving(index_path: Path, build_id: str | None) -> dict[str, str] | None:
    """The meta of the store on disk (its ``sites``) when it serves build ``build_id`` (computed for it, by this
    code: ``version``); None when it does not, or there is none or it is unreadable: whether a store must be
    computed, and what status and doctor say."""
    path = resolved_path(index_path)
    if not build_id or not path.is_file():
        return None
    try:
        conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
        try:
            meta = dict(conn.execute("SELECT key, value FROM meta"))
        finally:
            conn.close()
    except sqlite3.DatabaseError:
        return None
    return meta if _serves(meta, build_id) else None


def _serves(meta: dict[str, str], build_id: str) -> bool:
    return meta.get("build_id") == build_id and meta.get("version") == version()


def version() -> str:
    """The layout of the rows and a digest of the code that resolves calls: what a store must have been written by
    to be used (Note [Written by this code] in codedigest.py)."""
    return f"{RESOLVED_VERSION}-{code_digest(*_RULES_PACKAGES)}"
