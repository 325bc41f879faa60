"""Damage that queries do not touch is found without waiting for a query: SQLite's quick_check after each
build (before publishing), on request (`doctor`), and in the background in a running server, which then
rebuilds. The damage is real: pages of an index b-tree of the call graph overwritten with random bytes."""

from __future__ import annotations

import asyncio
import os
import random
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest
from mcp import Client, StdioServerParameters

from torchtalk.errors import IndexUnavailable
from torchtalk.source.tree import find_source
from torchtalk.store import integrity
from torchtalk.store.builds import writer_lock
from torchtalk.store.db import IndexWriter, corrupt_marker, read_meta

SEED = int(os.environ.get("TT_FAULTS_SEED", "20240611"))


def tt(*args, timeout=300):
    return subprocess.run([sys.executable, "-m", "torchtalk", *args], capture_output=True, text=True,
                          env=dict(os.environ), timeout=timeout)


def pages_of(path: Path, names: tuple[str, ...]) -> list[int]:
    """Page numbers of these tables and indexes (SQLite's dbstat), in file order."""
    conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    try:
        marks = ",".join("?" * len(names))
        return sorted(r[0] for r in conn.execute(f"SELECT pageno FROM dbstat WHERE name IN ({marks})", names))
    finally:
        conn.close()


def damage(path: Path, pages: list[int], rng: random.Random) -> None:
    """Overwrite whole pages with random bytes, in place (same size, same header: only quick_check sees it)."""
    size = int.from_bytes(path.read_bytes()[16:18], "big")
    with open(path, "r+b") as f:
        for page in pages:
            f.seek((page - 1) * size)
            f.write(bytes(rng.randrange(256) for _ in range(size)))


def built_at(path: Path) -> str:
    conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    try:
        return read_meta(conn).get("built_at", "")
    finally:
        conn.close()


@pytest.fixture
def damaged(tree):
    """(tree, SourceTree): the fixture tree indexed (codegen on, as tool commands run it; here the generators
    fail quickly), then the pages of two indexes of the call graph damaged."""
    r = tt("index", "--source", str(tree))
    assert r.returncode == 0, r.stderr
    st = find_source(tree)
    assert integrity.check(st.index_path).ok is True
    damage(st.index_path, pages_of(st.index_path, ("cpp_call_file", "cpp_symbol_file")), random.Random(SEED))
    return tree, st


def test_quick_check_finds_damage_that_queries_do_not_touch(damaged):
    tree, st = damaged
    # Queries answer: the damaged pages are not on their way.
    r = tt("get-status", "--source", str(tree))
    assert r.returncode == 0 and "damaged" not in r.stdout, r.stdout + r.stderr
    result = integrity.check(st.index_path)
    assert result.ok is False and result.detail, result
    assert not corrupt_marker(st.index_path).exists()  # check() only looks
    assert integrity.check_and_mark(st.index_path).ok is False
    assert "integrity check failed" in integrity.reported_damage(st.index_path)

    # get_status and doctor report it, with the fix; the next index run rebuilds from scratch.
    r = tt("status", "--source", str(tree))
    assert r.returncode == 0 and "Note: The index is damaged (integrity check failed:" in r.stdout, r.stdout
    assert "`torchtalk index --force`" in r.stdout
    r = tt("doctor", "--source", str(tree))
    assert r.returncode == 1 and ": the index was found corrupt (integrity check failed: " in r.stdout, r.stdout
    assert "-> fix: `torchtalk setup` (or `torchtalk index`)" in r.stdout
    r = tt("index", "--source", str(tree))
    assert r.returncode == 0 and r.stdout.startswith("full index") and "found corrupt" in r.stdout, r.stdout
    assert integrity.check(st.index_path).ok is True and integrity.reported_damage(st.index_path) is None
    r = tt("doctor", "--source", str(tree))
    assert "ok: SQLite's integrity check passed" in r.stdout


def test_doctor_finds_the_damage_itself(damaged):
    tree, st = damaged
    r = tt("doctor", "--source", str(tree))
    assert r.returncode == 1 and "problem: the index is damaged" in r.stdout, r.stdout
    assert integrity.reported_damage(st.index_path)  # and remembers it for the next refresh and get_status


def test_a_refresh_of_a_damaged_index_rebuilds_it_instead_of_publishing_the_damage(damaged):
    """An incremental build copies the published file: latent damage would come along. The build reads a
    damaged page, or its result fails the check before publishing; either way the run rebuilds from scratch."""
    tree, st = damaged
    f = tree / "aten/src/ATen/native/native_functions.yaml"
    f.write_text(f.read_text() + "\n- func: tt_integrity_op(Tensor self) -> Tensor\n")
    r = tt("index", "--source", str(tree))
    assert r.returncode == 0, r.stdout + r.stderr
    assert "torchtalk: the index is damaged (" in r.stderr and "rebuilding it from scratch" in r.stderr, r.stderr
    assert r.stdout.startswith("full index") and "(the index was damaged)" in r.stdout, r.stdout
    assert integrity.check(st.index_path).ok is True and integrity.reported_damage(st.index_path) is None
    assert not list(st.index_path.parent.glob(".index.db.tmp-*"))
    r = tt("search", "tt_integrity_op", "--source", str(tree))
    assert "op tt_integrity_op" in r.stdout


def test_commit_discards_a_version_that_fails_its_check(tmp_path):
    path = tmp_path / "index.db"
    with writer_lock(path):
        w = IndexWriter(path, base_ok=False)
        w.finish_facts()
        w.flush_names()
        with pytest.raises(IndexUnavailable, match="failed SQLite's integrity check"):
            w.commit(verify=lambda conn: "row 3 missing from index x")
    assert not path.exists() and not list(tmp_path.glob(".index.db.tmp-*"))


def test_the_check_stops_at_its_budget(tmp_path):
    path = tmp_path / "big.db"
    conn = sqlite3.connect(path)
    conn.execute("CREATE TABLE t (a TEXT, b TEXT)")
    conn.execute("CREATE INDEX t_a ON t (a)")
    conn.execute("CREATE INDEX t_b ON t (b)")
    conn.executemany("INSERT INTO t VALUES (?, ?)", ((f"{i:09d}" * 8, f"{i * 7:09d}" * 8) for i in range(300_000)))
    conn.commit()
    conn.close()
    whole = integrity.check(path)
    assert whole.ok is True
    cut = integrity.check(path, budget_s=whole.seconds / 20)
    assert cut.ok is None and "did not finish within" in cut.detail
    assert cut.seconds < whole.seconds / 2


@pytest.mark.timeout(300)
def test_a_server_checks_its_index_in_the_background_and_rebuilds(damaged):
    tree, st = damaged
    before = built_at(st.index_path)
    params = StdioServerParameters(command=sys.executable, env=dict(os.environ),
                                   args=["-m", "torchtalk", "serve", "--source", str(tree)])

    async def go():
        async with Client(params, read_timeout_seconds=120) as c:
            # No query reads the damaged pages (a query that did would mark the index itself).
            r = await c.call_tool("get_status", {})
            assert not r.is_error, r.content
            deadline = time.monotonic() + 120
            while time.monotonic() < deadline:  # no query touches the damage: the background check finds it
                if built_at(st.index_path) != before and integrity.reported_damage(st.index_path) is None:
                    break
                await asyncio.sleep(0.5)
            assert built_at(st.index_path) != before, "the server did not rebuild the damaged index"
            assert integrity.check(st.index_path).ok is True
            r = await c.call_tool("get_status", {})
            text = "\n".join(getattr(b, "text", "") for b in r.content)
            assert not r.is_error and "full build" in text and "damaged" not in text, text

    asyncio.run(asyncio.wait_for(go(), 240))


def test_an_index_missing_a_table_is_corrupt_and_rebuilt(tree):
    """A finished index whose table was dropped failed every answer ("lacks a table this TorchTalk needs") while
    doctor and status said it was fine and `index` said it was up to date: it is a damaged index, rebuilt."""
    r = tt("index", "--source", str(tree))
    assert r.returncode == 0, r.stderr
    st = find_source(tree)
    conn = sqlite3.connect(st.index_path)
    conn.execute("DROP TABLE op_dispatch")
    conn.commit()
    conn.close()
    r = tt("doctor", "--source", str(tree))
    assert r.returncode == 1 and "lacks the table op_dispatch" in r.stdout, r.stdout
    r = tt("index", "--source", str(tree))
    assert r.returncode == 0 and r.stdout.startswith("full index"), r.stdout + r.stderr
    r = tt("trace", "softmax", "--source", str(tree))
    assert r.returncode == 0 and "# trace softmax" in r.stdout, r.stdout + r.stderr
