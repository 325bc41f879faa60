"""The index's connections: a small pool shared by threads, one version of the index per answer."""

from __future__ import annotations

import os
import shutil
import sqlite3
import threading
from pathlib import Path

from torchtalk.store import reader as index_mod


def _maps_of(path: Path) -> int:
    """How many times this process has the file memory-mapped (SQLite maps it per connection)."""
    real = os.path.realpath(path)
    return sum(1 for line in Path("/proc/self/maps").read_text().splitlines() if line.endswith(real))


def test_many_threads_share_a_few_connections(indexed):
    _, ix = indexed
    ix.close()
    n = 32
    inside = threading.Barrier(n)
    done = threading.Barrier(n + 1)
    release = threading.Event()
    seen: list[int] = []

    def work() -> None:
        with ix.using():
            assert ix.one("SELECT count(*) FROM op")[0] > 10
            inside.wait(30)  # all 32 hold a connection at once: the busiest a server gets
            seen.append(_maps_of(ix.path))
        for _ in range(20):  # then many short statements, as the queries make
            ix.q("SELECT name FROM op LIMIT 3")
        done.wait(30)
        release.wait(30)  # the threads live on, as a server's worker threads do

    threads = [threading.Thread(target=work) for _ in range(n)]
    for t in threads:
        t.start()
    done.wait(60)
    try:
        assert max(seen) == n  # one connection per concurrent holder ...
        assert _maps_of(ix.path) <= index_mod.POOL_IDLE  # ... then only the pool's, not one per thread
    finally:
        release.set()
        for t in threads:
            t.join(60)
    ix.close()
    assert _maps_of(ix.path) == 0


def test_one_answer_reads_one_version_even_when_a_new_index_lands(indexed, tmp_path, monkeypatch):
    """using() keeps its connection for the whole block, so an answer never mixes two versions."""
    _, ix = indexed
    monkeypatch.setattr(index_mod, "RECHECK_S", 0.0)
    before = ix.one("SELECT count(*) FROM op")[0]
    copy = tmp_path / "copy.db"
    with ix.using():
        n1 = ix.one("SELECT count(*) FROM op")[0]
        # Publish a different index the way the indexer does: a whole new file renamed over the old one.
        shutil.copy(ix.path, copy)
        conn = sqlite3.connect(copy)
        conn.execute("DELETE FROM op WHERE rowid IN (SELECT rowid FROM op LIMIT 5)")
        conn.commit()
        conn.close()
        os.replace(copy, ix.path)
        n2 = ix.one("SELECT count(*) FROM op")[0]
    assert n1 == n2 == before
    assert ix.one("SELECT count(*) FROM op")[0] == before - 5  # the next answer sees the new file


def test_conn_outside_using_is_bound_to_the_thread(indexed):
    _, ix = indexed
    c1 = ix.conn
    assert ix.conn is c1
    with ix.using() as db:
        assert db is c1
    other: list = []
    t = threading.Thread(target=lambda: other.append(ix.conn))
    t.start()
    t.join()
    assert other[0] is not c1
    ix.close()
    assert ix.one("SELECT count(*) FROM op")[0] > 10  # usable after close
