"""Read access to a finished index, reopened transparently when a new build lands.

The indexer publishes a new index by renaming a file over the old one; a
reader holding the old file keeps a consistent (old) view, and the next query
sees the new inode and reopens. So a server never answers from half an index.
"""

from __future__ import annotations

import json
import os
import sqlite3
import threading
import time
from collections import OrderedDict
from pathlib import Path

from ..errors import IndexUnavailable
from .db import mark_corrupt, open_readonly


# How often a reader looks whether a new index file has been published.
RECHECK_S = 0.5


class Index:
    """Thread-safe: each thread gets its own read-only connection (MCP runs tools in threads)."""

    def __init__(self, path: Path, source_root: Path | None = None):
        self.path = Path(path)
        self.source_root = source_root
        self._lock = threading.Lock()
        self._local = threading.local()
        # Cached lookups per index version (file identity): a thread still reading the previous
        # version must never fill the cache of the new one, nor read from it.
        self._caches: OrderedDict[tuple[int, int] | None, dict] = OrderedDict()

    # ------------------------------------------------------------ connection

    def _stat_key(self) -> tuple[int, int] | None:
        try:
            st = os.stat(self.path)
        except FileNotFoundError:
            return None
        return (st.st_ino, st.st_mtime_ns)

    @property
    def conn(self) -> sqlite3.Connection:
        local = self._local
        conn = getattr(local, "conn", None)
        now = time.monotonic()
        if conn is not None and now - local.checked < RECHECK_S:
            return conn  # a query makes hundreds of lookups: stat the file once in a while, not each time
        local.checked = now
        key = self._stat_key()
        if conn is None or key != local.key:
            if key is None and conn is not None:
                return conn  # file briefly gone (rename in progress): keep the old view
            new = open_readonly(self.path)
            if conn is not None:
                conn.close()
            local.conn, local.key = new, key
        return local.conn

    def close(self) -> None:
        conn = getattr(self._local, "conn", None)
        if conn is not None:
            conn.close()
            self._local.conn = None

    def q(self, sql: str, params: tuple | list = ()) -> list[tuple]:
        try:
            return self.conn.execute(sql, params).fetchall()
        except sqlite3.OperationalError as exc:
            if "no such table" in str(exc) or "no such column" in str(exc):
                raise IndexUnavailable(f"index {self.path} lacks a table this TorchTalk needs ({exc}); "
                                       "run `torchtalk index --force`") from None
            raise
        except sqlite3.DatabaseError as exc:
            mark_corrupt(self.path, str(exc))
            raise IndexUnavailable(f"index {self.path} is corrupt ({exc}); run `torchtalk index --force` to "
                                   "rebuild it now (a running server starts that by itself)") from None

    def one(self, sql: str, params: tuple | list = ()):
        rows = self.q(sql, params)
        return rows[0] if rows else None

    # ------------------------------------------------------------ cached lookups (per index version)

    def cached(self, key: str, build):
        self.conn  # noqa: B018 - reopen first if a new index landed
        version = self._local.key
        with self._lock:
            cache = self._caches.get(version)
            if cache is None:
                cache = self._caches[version] = {}
                while len(self._caches) > 2:  # the current version, and one a slow reader may still use
                    self._caches.popitem(last=False)
        if key not in cache:
            cache[key] = build()
        return cache[key]

    @property
    def meta(self) -> dict[str, str]:
        return self.cached("meta", lambda: dict(self.q("SELECT key, value FROM meta")))

    @property
    def has_fts(self) -> bool:
        return self.cached("has_fts", lambda: bool(self.one("SELECT 1 FROM sqlite_master WHERE name = 'names_fts'")))

    def meta_json(self, key: str, default):
        try:
            return json.loads(self.meta.get(key, ""))
        except ValueError:
            return default

    def paths(self) -> dict[int, str]:
        return self.cached("paths", lambda: dict(self.q("SELECT id, path FROM files")))

    def path_of(self, file_id: int) -> str:
        return self.paths().get(file_id, "?")

    def loc(self, file_id: int, line: int) -> str:
        return f"{self.path_of(file_id)}:{line}"
