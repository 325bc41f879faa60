"""Read access to a finished index, reopened transparently when a new build lands.

The indexer publishes a new index by renaming a file over the old one; a
reader holding the old file keeps a consistent (old) view, and the next query
sees the new inode and reopens. So a server never answers from half an index.
"""

from __future__ import annotations

import contextlib
import json
import os
import sqlite3
import threading
import time
from collections import OrderedDict
from collections.abc import Callable, Hashable, Iterator
from pathlib import Path
from typing import Any, TypeVar

from ..errors import IndexUnavailable
from .db import mark_corrupt, open_readonly

# How often a reader looks whether a new index file has been published.
RECHECK_S = 0.5
# Idle connections kept for reuse. Each connection maps the file and has its own page cache, so a
# small pool, not one connection per thread (a server runs tools on dozens of threads), bounds memory.
POOL_IDLE = 4

Version = tuple[int, int] | None  # (inode, mtime) of the file a connection reads
T = TypeVar("T")
_MISSING: Any = object()  # a memo's absent key (None is a value)


def like_literal(text: str) -> str:
    """``text`` for a LIKE pattern with ESCAPE '\\': its wildcards and the escape itself taken literally."""
    return text.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")


class _Conn:
    __slots__ = ("cache", "db", "version")

    def __init__(self, db: sqlite3.Connection, version: Version):
        self.db = db
        self.version = version
        self.cache: dict[str, Any] | None = None  # its version's cached lookups, once asked (Index.cached)


class Index:
    """Thread-safe. Connections come from a pool: ``using()`` holds one for a whole answer, so however
    many statements it runs they read one version of the index; ``q`` outside it borrows one per
    statement."""

    def __init__(self, path: Path, source_root: Path | None = None):
        self.path = Path(path)
        self.source_root = source_root
        self._lock = threading.Lock()
        self._idle: list[_Conn] = []
        # What this thread holds: the connection, and how deep in using() (None: bound by `conn`).
        self._local = threading.local()
        self._version: Version = None
        self._checked = -RECHECK_S
        # Cached lookups per index version (file identity): a thread still reading the previous
        # version must never fill the cache of the new one, nor read from it.
        self._caches: OrderedDict[Version, dict[str, Any]] = OrderedDict()
        # Set by a server that watches the tree: the files that differ from this index now (query/status.py
        # asks it instead of walking the tree).
        self.changes: Callable[[], list[str]] | None = None

    # ------------------------------------------------------------ connections

    def _current_version(self) -> Version:
        """The published file's identity, looked up at most every RECHECK_S (an answer makes hundreds of
        lookups); None while the file is briefly gone (a rename in progress)."""
        now = time.monotonic()
        with self._lock:
            if now - self._checked < RECHECK_S:
                return self._version
            self._checked = now
        try:
            st = os.stat(self.path)
        except FileNotFoundError:
            return None
        version = (st.st_ino, st.st_mtime_ns)
        with self._lock:
            self._version = version
        return version

    def recheck(self) -> None:
        """Look for a newly published file at the next query (a build just ended), not up to RECHECK_S later."""
        with self._lock:
            self._checked = -RECHECK_S

    def _borrow(self) -> _Conn:
        version = self._current_version()
        found = None
        stale = []
        with self._lock:
            while self._idle and found is None:
                c = self._idle.pop()
                if version is None or c.version == version:
                    found = c  # the current file, or (while it is briefly gone) the old view
                else:
                    stale.append(c)
        for c in stale:  # a new index landed: connections to the old file are done
            c.db.close()
        return found if found is not None else _Conn(open_readonly(self.path), version)

    def _give_back(self, c: _Conn) -> None:
        with self._lock:
            if len(self._idle) < POOL_IDLE and c.version == self._version:
                self._idle.append(c)
                return
        c.db.close()

    @contextlib.contextmanager
    def using(self) -> Iterator[sqlite3.Connection]:
        """Hold one connection in this thread for the block (nested blocks share it)."""
        local = self._local
        held = getattr(local, "held", None)
        if held is not None:
            yield held.db if local.depth is not None else self.conn
            return
        c = self._borrow()
        local.held, local.depth = c, 1
        try:
            yield c.db
        finally:
            local.held = None
            self._give_back(c)

    @property
    def conn(self) -> sqlite3.Connection:
        """The connection this thread holds in ``using()``; outside it, one bound to this thread until
        ``close()`` (reopened when a new index lands). Prefer ``q``/``one``/``using``."""
        local = self._local
        held = getattr(local, "held", None)
        if held is not None and getattr(local, "depth", None) is not None:
            db: sqlite3.Connection = held.db
            return db
        version = self._current_version()
        if held is None or (version is not None and held.version != version):
            new = self._borrow()
            if held is not None:
                held.db.close()
            local.held, local.depth = new, None
        fresh: sqlite3.Connection = local.held.db
        return fresh

    def close(self) -> None:
        """Close the idle connections and the one bound to this thread by ``conn`` (others close when
        they come back). The index stays usable: the next query opens a new connection."""
        local = self._local
        held = getattr(local, "held", None)
        if held is not None and getattr(local, "depth", None) is None:
            local.held = None
            held.db.close()
        with self._lock:
            idle, self._idle = self._idle, []
        for c in idle:
            c.db.close()

    def q(self, sql: str, params: tuple[Any, ...] | list[Any] = ()) -> list[tuple[Any, ...]]:
        try:
            with self.using() as db:
                return db.execute(sql, params).fetchall()
        except sqlite3.OperationalError as exc:
            if "no such table" in str(exc) or "no such column" in str(exc):
                raise IndexUnavailable(f"index {self.path} lacks a table this TorchTalk needs ({exc}); "
                                       "run `torchtalk index --force`") from None
            raise
        except sqlite3.DatabaseError as exc:
            mark_corrupt(self.path, str(exc))
            raise IndexUnavailable(f"index {self.path} is corrupt ({exc}); run `torchtalk index --force` to "
                                   "rebuild it now (a running server starts that by itself)") from None

    def one(self, sql: str, params: tuple[Any, ...] | list[Any] = ()) -> Any:  # the first row, or None
        rows = self.q(sql, params)
        return rows[0] if rows else None

    # ------------------------------------------------------------ cached lookups (per index version)

    def cached(self, key: str, build: Callable[[], T]) -> T:
        held = getattr(self._local, "held", None)
        if held is None:
            with self.using():
                return self.cached(key, build)
        # Inside using(): the version is the held connection's, and so is the cache (Note [Cached lookups]).
        cache = held.cache
        if cache is None:
            cache = held.cache = self._version_cache(held.version)
        try:
            value: T = cache[key]
            return value
        except KeyError:
            pass
        local = self._local
        depth = getattr(local, "building", 0)
        local.building, started = depth + 1, time.thread_time()
        try:
            cache[key] = build()  # outside the handler: build()'s own errors are not chained to a KeyError
        finally:
            local.building = depth
            if not depth:  # a build inside a build is counted once
                local.built_s = getattr(local, "built_s", 0.0) + time.thread_time() - started
        value = cache[key]
        return value

    def work_clock(self) -> float:
        """CPU seconds of this thread less those it spent building cached lookups (the tables every answer reads,
        built once per index version): the clock answers budget their walks on, so an answer walks as far in a
        fresh process (the CLI) as in a warmed-up server, and as far on a busy machine as on an idle one."""
        return time.thread_time() - getattr(self._local, "built_s", 0.0)

    # Note [Cached lookups]
    # An answer makes ~130k cached lookups (every memo table of name lookup, call resolution and the walks), so
    # the hit path is one thread-local read and one dict read: no lock (a dict read is atomic), and the version's
    # dict is kept on the connection that reads that version (a connection's version never changes), not looked
    # up by version on every call. The lock only guards creating a version's dict.
    #
    # Note [A batch holds its connection]
    # Outside ``using()`` each cached lookup borrows a connection and gives it back (the version check, the pool's
    # lock, a context manager): ~5 us, which is nothing for one answer's 130k lookups inside ``using()`` but was half
    # the CPU of resolving every call of the tree (graph/resolved_build.py: 1.75M lookups for 51k sites, 0.29 ms a
    # site, 0.14 within ``using()``). Work that makes many lookups, an answer or a batch (a build's task, the
    # server's warm-up), runs inside ``using()``: one version of the index for the whole of it, and the fast path.

    def drop_cached(self, keys: tuple[str, ...]) -> None:
        """Forget these cached lookups in every version (a long batch job that fills them as it goes)."""
        with self._lock:
            for cache in self._caches.values():
                for key in keys:
                    cache.pop(key, None)

    def _version_cache(self, version: Version) -> dict[str, Any]:
        """The cached lookups of one index version (created on first use; the last two versions kept)."""
        with self._lock:
            cache = self._caches.get(version)
            if cache is None:
                cache = self._caches[version] = {}
                while len(self._caches) > 2:  # the current version, and one a slow reader may still use
                    self._caches.popitem(last=False)
            return cache

    def memo(self, table: str, key: Hashable, compute: Callable[[], T], pending: T) -> T:
        """``compute()`` once per key and index version, kept in the cached dict ``table``. A request for
        the same key while it is being computed (the computation needs itself: a type alias cycle, a
        method dispatching to itself) gets ``pending`` instead of recursing."""
        memo: dict[Hashable, T] = self.cached(table, dict)
        found: T = memo.get(key, _MISSING)
        if found is not _MISSING:
            return found
        memo[key] = pending
        try:
            value = memo[key] = compute()
        except BaseException:
            memo.pop(key, None)
            raise
        return value

    @property
    def meta(self) -> dict[str, str]:
        return self.cached("meta", lambda: dict(self.q("SELECT key, value FROM meta")))

    @property
    def has_fts(self) -> bool:
        return self.cached("has_fts", lambda: bool(self.one("SELECT 1 FROM sqlite_master WHERE name = 'names_fts'")))

    def meta_json(self, key: str, default: Any) -> Any:
        try:
            return json.loads(self.meta.get(key, ""))
        except ValueError:
            return default

    def paths(self) -> dict[int, str]:
        return self.cached("paths", lambda: dict(self.q("SELECT id, path FROM files")))

    def file_ids(self) -> dict[str, int]:
        """Path -> file id (``paths`` the other way)."""
        return self.cached("file_ids", lambda: {p: i for i, p in self.paths().items()})

    def path_of(self, file_id: int) -> str:
        return self.paths().get(file_id, "?")

    def loc(self, file_id: int, line: int) -> str:
        return f"{self.path_of(file_id)}:{line}"
