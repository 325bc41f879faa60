import sqlite3

import pytest

from torchtalk.errors import IndexUnavailable
from torchtalk.model import (
    CallKind,
    CallSite,
    CppSymbol,
    DispatchKey,
    FileStatus,
    FunctionSchema,
    Layer,
    Op,
    OpDispatch,
    SymbolKind,
    Variant,
)
from torchtalk.store.builds import writer_lock
from torchtalk.store.codec import encode_facts
from torchtalk.store.db import IndexWriter, check_file, open_readonly


def _op(name, line):
    return Op(name, "", name, FunctionSchema.parse(f"{name}(Tensor self) -> Tensor"), line, line + 1,
              frozenset({Variant.FUNCTION}), "", False, "", "", "", (), (), (), "", "", False, "", (), "")


def _add(w, path, facts):
    w.add_file(path, Layer.OPS, (1, 1, 1, 1), "h", FileStatus.OK, "", encode_facts(facts))


def _build(path, facts, base_ok=False):
    with writer_lock(path):
        w = IndexWriter(path, base_ok=base_ok)
        _add(w, "a.yaml", facts)
        w.finish_facts()
        w.flush_names()
        w.commit()


def test_local_refs_become_ids_of_the_same_files_rows(tmp_path):
    path = tmp_path / "index.db"
    facts = {Op: [_op("relu", 3), _op("tanh", 9)], OpDispatch: [OpDispatch(1, DispatchKey.CPU, "tanh_out", 10)],
             CppSymbol: [CppSymbol("f", "at::f", "()", SymbolKind.FUNCTION, 1, 2, True, "")],
             CallSite: [CallSite(0, "g", "", 2, CallKind.CALL, ""), CallSite(-1, "h", "", 5, CallKind.CALL, "")]}
    _build(path, facts)
    conn = open_readonly(path)
    op_id, = conn.execute("SELECT op FROM op_dispatch").fetchone()
    assert conn.execute("SELECT name FROM op WHERE id = ?", (op_id,)).fetchone() == ("tanh",)
    callers = [r[0] for r in conn.execute("SELECT caller FROM cpp_call ORDER BY line")]
    sym_id, = conn.execute("SELECT id FROM cpp_symbol").fetchone()
    assert callers == [sym_id, None]
    found = conn.execute("SELECT name FROM names WHERE id IN "
                         "(SELECT rowid FROM names_fts WHERE names_fts MATCH '\"anh\"')").fetchall()
    assert sorted(r[0] for r in found) == ["tanh", "tanh_out"]


def test_reader_never_sees_an_unpublished_build(tmp_path):
    path = tmp_path / "index.db"
    _build(path, {Op: [_op("relu", 3)]})
    with writer_lock(path):
        w = IndexWriter(path, base_ok=True)
        _add(w, "b.yaml", {Op: [_op("tanh", 1)]})
        # Not committed: the published index still has only relu.
        conn = open_readonly(path)
        assert [r[0] for r in conn.execute("SELECT name FROM op")] == ["relu"]
        w.abort()
    assert not list(tmp_path.glob(".index.db.tmp-*"))


def test_truncated_and_garbage_files_are_detected(tmp_path):
    path = tmp_path / "index.db"
    _build(path, {Op: [_op("relu", 3)]})
    data = path.read_bytes()
    assert check_file(path) is None
    path.write_bytes(data[: len(data) // 2])
    assert "truncated" in check_file(path)
    with pytest.raises(IndexUnavailable, match="truncated"):
        open_readonly(path)
    path.write_bytes(b"garbage" * 100)
    assert "bad header" in check_file(path)
    assert check_file(tmp_path / "nope.db") == "missing"


def test_schema_version_mismatch_is_reported(tmp_path):
    path = tmp_path / "index.db"
    _build(path, {Op: [_op("relu", 3)]})
    conn = sqlite3.connect(path)
    conn.execute("UPDATE meta SET value = '0' WHERE key = 'schema_version'")
    conn.commit()
    conn.close()
    with pytest.raises(IndexUnavailable, match="schema version 0"):
        open_readonly(path)


def test_stale_temp_files_of_dead_builds_are_removed(tmp_path):
    path = tmp_path / "index.db"
    stale = tmp_path / ".index.db.tmp-999999999"
    stale.write_bytes(b"half")
    _build(path, {Op: [_op("relu", 3)]})
    assert not stale.exists()
