"""The store of resolved calls (Note [Resolved calls] in store/resolved.py): every call site of a build resolved
once and read back. It changes no resolution and no answer; it is used only for the build it was computed for;
a damaged one is never used; `torchtalk resolve` and a server build it."""

from __future__ import annotations

import sqlite3
import time

import pytest

from torchtalk.cli import EXIT_ERROR, EXIT_OK, main
from torchtalk.graph.cpp_callers import callers, op_callers, warm_op_callers
from torchtalk.graph.cpp_edges import out_edges
from torchtalk.graph.device_reach import device_out_edges
from torchtalk.graph.nodes import cpp_node
from torchtalk.graph.registry import registry
from torchtalk.graph.resolve import resolve
from torchtalk.graph.resolved import stored, without_store
from torchtalk.graph.resolved_build import build
from torchtalk.graph.symbols import CALL_COLS, SYMBOL_COLS, symbol
from torchtalk.model import CallSite, CppSymbol, EdgeHow, EdgeKind, Node, NodeKind
from torchtalk.query.status import status
from torchtalk.render.basic import render_status
from torchtalk.source.tree import find_source
from torchtalk.store.codec import rows_facts
from torchtalk.store.reader import Index
from torchtalk.store.resolved import RESOLVED_VERSION, open_resolved, resolved_path, serving, version
from torchtalk.tools import get_tool, run

from ..conftest import _reindexed
from .test_gpu_families import gpu  # noqa: F401  (the fixture: a tree of launch families, GPU libraries, a formula)
from .test_gpu_launch_sites import reach  # noqa: F401  (the fixture: a tree of launch sites, handed objects)


def _sites(ix: Index) -> list[CallSite]:
    return rows_facts(CallSite, ix.q(f"SELECT {CALL_COLS} FROM cpp_call ORDER BY id"), ix.paths())


def _resolutions(ix: Index) -> dict[int, object]:
    out = {}
    with ix.using():
        for call in _sites(ix):
            caller = symbol(ix, call.caller) if call.has_caller else None
            if caller is not None:
                out[call.id] = resolve(ix, call, caller)
    return out


def _questions(ix: Index) -> list[tuple[str, dict]]:
    with ix.using():
        ops = sorted({op.name for op in registry(ix).by_full.values()})
        fns = [q for (q,) in ix.q("SELECT DISTINCT qualname FROM cpp_symbol WHERE is_definition = 1 AND kind IN "
                                  "('function', 'method', 'global_kernel') ORDER BY qualname")]
    return ([(t, {"function_name": n}) for n in ops for t in ("trace", "cuda_kernels")]
            + [(t, {"function_name": f}) for f in fns for t in ("calls", "called_by")]
            + [("impact", {"function_name": f, "depth": 3}) for f in fns])


def _answers(ix: Index, questions: list[tuple[str, dict]]) -> dict[str, str]:
    out = {}
    for tool, kw in questions:
        with ix.using():
            out[f"{tool} {kw}"] = run(get_tool(tool), ix, **kw)
    return out


def test_every_site_reads_back_the_resolution_it_would_get_and_every_answer_is_the_same(gpu):  # noqa: F811
    tree, ix = gpu
    st = find_source(tree)
    questions = _questions(ix)
    assert len(questions) > 100
    without_store(ix)
    lazy, lazy_answers = _resolutions(ix), _answers(ix, questions)
    result = build(st.index_path, st.root, workers=1)
    assert result is not None
    build_id, sites, rows = result
    assert build_id == ix.meta["build_id"] and sites == len(_sites(ix))
    assert 0 < rows < sites, "sites that resolve to nothing have no row"
    fresh = Index(st.index_path, st.root)
    with fresh.using():
        assert stored(fresh) is not None, "the store of this build is used"
    assert _resolutions(fresh) == lazy
    assert sum(r.kind.value != "unresolved" for r in lazy.values()) > 50  # type: ignore[attr-defined]
    assert _answers(fresh, questions) == lazy_answers
    fresh.close()


def _sites_resolved(ix: Index) -> int:
    """Call sites the callers' shared lists of names have resolved so far (graph/cpp_callers.py ``_Named``)."""
    return sum(sum(named.done) for named in ix.cached("cpp_sites_named", dict).values())


def _op_callers_and_sites_resolved(ix: Index) -> tuple[dict[str, list], int]:
    with ix.using():
        reg = registry(ix)
        callers = {full: op_callers(ix, Node(NodeKind.OP, full, full, op.loc)) for full, op in reg.by_full.items()}
        return callers, _sites_resolved(ix)


def test_an_ops_callers_resolve_only_the_sites_the_store_says_may_call_it(gpu):  # noqa: F811
    tree, ix = gpu
    st = find_source(tree)
    without_store(ix)
    lazy, resolved_lazily = _op_callers_and_sites_resolved(ix)
    assert build(st.index_path, st.root, workers=1) is not None
    fresh = Index(st.index_path, st.root)
    warm_op_callers(fresh)  # the server's warm-up: the sites of at::_ops::S::call and ::redispatch, read and grouped
    assert {"call", "redispatch"} <= set(fresh.cached("cpp_sites_named", dict))
    callers, resolved = _op_callers_and_sites_resolved(fresh)
    assert callers == lazy
    assert sum(map(len, lazy.values())) >= 3
    assert resolved < resolved_lazily, "a site the store says calls no op is not resolved for an op's callers"
    fresh.close()


def _function_callers_and_sites_resolved(ix: Index) -> tuple[dict[str, list], int]:
    with ix.using():
        fns = [cpp_node(f) for f in rows_facts(CppSymbol, ix.q(f"SELECT {SYMBOL_COLS} FROM cpp_symbol WHERE "
                                                                "is_definition = 1 ORDER BY id"), ix.paths())]
        kinds = (EdgeKind.CALL, EdgeKind.LAUNCH)
        found = {f"{n.key} {kind.value}": callers(ix, n, kind) for n in fns for kind in kinds}
        return found, _sites_resolved(ix)


@pytest.mark.parametrize("fixture", ["gpu", "reach"])
def test_a_functions_callers_resolve_only_the_sites_the_store_says_may_reach_it(fixture, request):
    # Note [Sites the store rules out]: the same callers, from fewer sites resolved; the tree of launch sites
    # (reach) has objects handed to templates (Note [Handed objects]), whose methods' callers come from the store too
    tree, ix = request.getfixturevalue(fixture)
    st = find_source(tree)
    without_store(ix)
    lazy, resolved_lazily = _function_callers_and_sites_resolved(ix)
    assert build(st.index_path, st.root, workers=1) is not None
    fresh = Index(st.index_path, st.root)
    found, resolved = _function_callers_and_sites_resolved(fresh)
    assert found == lazy
    assert sum(map(len, lazy.values())) >= 10
    assert fixture != "reach" or any(e.how is EdgeHow.HANDED for edges in lazy.values() for e in edges)
    assert resolved < resolved_lazily, "a site the store says reaches no such function is not resolved for it"
    fresh.close()


def _out_edges(ix: Index) -> dict[str, list]:
    with ix.using():
        fns = [cpp_node(f) for f in rows_facts(CppSymbol, ix.q(f"SELECT {SYMBOL_COLS} FROM cpp_symbol WHERE "
                                                                "is_definition = 1 ORDER BY id"), ix.paths())]
        return {n.key: (out_edges(ix, n), device_out_edges(ix, n)) for n in fns}


@pytest.mark.parametrize("fixture", ["gpu", "reach"])
def test_the_edges_out_of_a_function_read_from_the_store_are_those_its_sites_make(fixture, request):
    # Note [Stored edges]: every site's edges, in source order; the GPU walk's without the sites it skips
    tree, ix = request.getfixturevalue(fixture)
    st = find_source(tree)
    without_store(ix)
    lazy = _out_edges(ix)
    assert build(st.index_path, st.root, workers=1) is not None
    fresh = Index(st.index_path, st.root)
    assert stored(fresh) is not None
    found = _out_edges(fresh)
    assert found == lazy
    assert sum(len(a) for a, _b in lazy.values()) >= 20
    assert any(len(a) > len(b) for a, b in lazy.values()), "the fixture has a site the GPU walk skips"
    fresh.close()


def test_two_workers_store_the_same_rows_as_one(indexed, monkeypatch):
    tree, ix = indexed
    path = find_source(tree).index_path
    monkeypatch.setattr("torchtalk.graph.resolved_build.TASK_SITES", 50)  # several tasks on the small tree
    build(path, tree, workers=1)
    one = sorted(open_resolved(path, ix.meta["build_id"]).rows(range(100000)))
    edges_one = _edge_rows(path)
    build(path, tree, workers=2)
    two = sorted(open_resolved(path, ix.meta["build_id"]).rows(range(100000)))
    assert one and one == two
    assert edges_one and edges_one == _edge_rows(path)


def _edge_rows(index_path):
    conn = sqlite3.connect(resolved_path(index_path))
    try:
        return sorted(conn.execute("SELECT * FROM edge"))
    finally:
        conn.close()


def test_a_store_of_another_build_is_not_used_and_a_refresh_publishes_a_new_build(indexed):
    tree, ix = indexed
    path = find_source(tree).index_path
    build(path, tree, workers=1)
    old = ix.meta["build_id"]
    assert open_resolved(path, old) is not None
    f = tree / "aten/src/ATen/native/SoftMax.cpp"
    f.write_text(f.read_text() + "\nvoid added_by_test() { at::softmax(x, 0); }\n")
    ix2 = _reindexed(tree)
    new = ix2.meta["build_id"]
    assert new and new != old
    assert open_resolved(path, new) is None, "the old build's store is not this build's"
    with ix2.using():
        assert stored(ix2) is None
    assert "not stored for this build" in render_status(status(ix2))
    ix2.close()


def test_a_damaged_store_is_never_used_and_is_dropped(indexed):
    tree, ix = indexed
    path = find_source(tree).index_path
    build(path, tree, workers=1)
    resolved_path(path).write_bytes(b"not a database" * 100)
    assert serving(path, ix.meta["build_id"]) is None
    assert open_resolved(path, ix.meta["build_id"]) is None
    assert not resolved_path(path).exists(), "dropped: the next background run computes it again"


def test_a_store_found_damaged_while_answering_is_dropped_and_every_answer_resolves_as_asked(gpu):  # noqa: F811
    tree, ix = gpu
    path = find_source(tree).index_path
    questions = _questions(ix)
    without_store(ix)
    lazy = _answers(ix, questions)
    build(path, tree, workers=1)
    conn = sqlite3.connect(resolved_path(path))
    (root,), (page,) = (conn.execute(q).fetchone() for q in (
        "SELECT rootpage FROM sqlite_master WHERE name = 'resolved'", "PRAGMA page_size"))
    conn.close()
    data = bytearray(resolved_path(path).read_bytes())
    data[(root - 1) * page:root * page] = b"\xff" * page  # the rows' table (pages are numbered from 1); meta reads
    resolved_path(path).write_bytes(bytes(data))
    fresh = Index(path, tree)
    with fresh.using():
        assert stored(fresh) is not None, "its meta reads: the damage is found by an answer"
    assert _answers(fresh, questions) == lazy
    assert not resolved_path(path).exists()
    with fresh.using():
        assert stored(fresh) is None
    fresh.close()


def test_a_build_that_sees_the_index_change_stores_nothing(indexed, monkeypatch):
    tree, ix = indexed
    path = find_source(tree).index_path
    import torchtalk.graph.resolved_build as rb
    real_run = rb._run

    def run_then_refresh(files):
        out = real_run(files)
        f = tree / "aten/src/ATen/native/SoftMax.cpp"
        f.write_text(f.read_text() + f"\n// edited {time.time()}\n")
        _reindexed(tree).close()
        return out

    monkeypatch.setattr(rb, "_run", run_then_refresh)
    assert build(path, tree, workers=1) is None
    assert not resolved_path(path).exists()
    assert not list(path.parent.glob(".resolved.db.tmp-*")), "no temporary file is left"


def test_cli_resolve_stores_once_per_build_and_says_what_is_wrong(indexed, capsys):
    tree, ix = indexed
    assert main(["resolve", "--source", str(tree), "--progress", "never"]) == EXIT_OK
    out = capsys.readouterr().out
    assert out.startswith("resolved ") and "call sites" in out
    assert "stored for this build" in render_status(status(ix))
    assert main(["resolve", "--source", str(tree), "--progress", "never"]) == EXIT_OK
    assert "are stored for its current build" in capsys.readouterr().out
    assert main(["resolve", "--source", str(tree), "--workers", "0"]) == EXIT_ERROR
    assert "--workers must be 1..64, not 0" in capsys.readouterr().err
    assert main(["resolve", "--source", str(tree), "--force", "--progress", "always", "--workers", "1"]) == EXIT_OK
    shown = capsys.readouterr()
    assert "resolving calls" in shown.err and "walking each op's GPU code" in shown.err, "progress on stderr"
    assert "walked each op's GPU code" in shown.out and "resolving" not in shown.out
    assert main(["resolve", "--source", str(tree), "--force", "--workers", "1"]) == EXIT_OK  # stderr no terminal
    lines = capsys.readouterr().err.splitlines()
    ops = len(registry(ix).by_full)
    assert any(line.startswith("torchtalk: resolving calls ") and " files in " in line for line in lines)
    assert f"torchtalk: walking each op's GPU code {ops}/{ops} ops in" in "\n".join(lines), lines


def test_cli_resolve_without_an_index_names_the_command_that_builds_one(tree, capsys):
    assert main(["resolve", "--source", str(tree)]) == EXIT_ERROR
    err = capsys.readouterr().err
    assert "no index yet" in err and "torchtalk index --source" in err


def test_a_server_stores_the_resolved_calls_of_its_build_in_the_background(indexed, monkeypatch):
    from torchtalk.server import backend as server_backend
    from torchtalk.server.backend import Backend
    monkeypatch.setattr(server_backend, "RESOLVE_DELAY_S", 0.1)
    tree, ix = indexed
    path = find_source(tree).index_path
    backend = Backend(str(tree), codegen=False)
    try:
        assert isinstance(backend.ready(), Index)
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline and serving(path, ix.meta["build_id"]) is None:
            time.sleep(0.2)
        assert serving(path, ix.meta["build_id"]) is not None
    finally:
        backend.stop()


def test_a_place_that_cannot_be_written_is_an_error_naming_it_and_the_index_still_answers(indexed, capsys):
    tree, ix = indexed
    path = find_source(tree).index_path
    resolved_path(path).mkdir()  # the store's name taken by a directory: it cannot be written there
    assert main(["resolve", "--source", str(tree), "--progress", "never"]) == EXIT_ERROR
    err = capsys.readouterr().err
    assert "cannot write the store of resolved calls" in err and str(resolved_path(path)) in err
    assert not list(path.parent.glob(".resolved.db.tmp-*"))
    with ix.using():
        assert stored(ix) is None
    assert "softmax" in run(get_tool("trace"), ix, function_name="softmax")[-1]


def test_a_server_that_stops_within_the_delay_starts_no_resolve(indexed):
    from torchtalk.server import backend as server_backend
    from torchtalk.server.backend import Backend
    tree, ix = indexed
    backend = Backend(str(tree), codegen=False)
    try:
        assert isinstance(backend.ready(), Index)
        time.sleep(server_backend.WARM_UP_DELAY_S + 1.0)  # the warm-up is over; the store is not begun
    finally:
        backend.stop()
    assert backend._resolving is not None and backend._resolving._proc is None
    assert serving(find_source(tree).index_path, ix.meta["build_id"]) is None


def test_a_store_of_another_layout_or_other_code_is_computed_again(indexed, capsys):
    tree, ix = indexed
    path = find_source(tree).index_path
    build(path, tree, workers=1)
    conn = sqlite3.connect(resolved_path(path))
    conn.execute("UPDATE meta SET value = '0' WHERE key = 'version'")  # as a store an older TorchTalk wrote
    conn.commit()
    conn.close()
    assert serving(path, ix.meta["build_id"]) is None and open_resolved(path, ix.meta["build_id"]) is None
    assert main(["resolve", "--source", str(tree), "--progress", "never"]) == EXIT_OK
    assert capsys.readouterr().out.startswith("resolved "), "not taken for this build's store"
    assert serving(path, ix.meta["build_id"]) is not None
    conn = sqlite3.connect(resolved_path(path))  # as a store written by code that resolves calls otherwise
    conn.execute("UPDATE meta SET value = ? WHERE key = 'version'", (f"{RESOLVED_VERSION}-0000000000000000",))
    conn.commit()
    conn.close()
    assert serving(path, ix.meta["build_id"]) is None and open_resolved(path, ix.meta["build_id"]) is None
    assert version().startswith(f"{RESOLVED_VERSION}-") and version() != f"{RESOLVED_VERSION}-0000000000000000"


def _counting_borrows(monkeypatch) -> list[int]:
    """Count the connections an Index borrows from its pool (one per ``using()`` block, one per lookup outside)."""
    count = [0]
    real = Index._borrow

    def borrow(self):
        count[0] += 1
        return real(self)

    monkeypatch.setattr(Index, "_borrow", borrow)
    return count


def _counting_lookups(monkeypatch) -> list[int]:
    count = [0]
    real = Index.cached

    def cached(self, key, make):
        count[0] += 1
        return real(self, key, make)

    monkeypatch.setattr(Index, "cached", cached)
    return count


def test_a_builds_tasks_each_hold_one_connection_not_one_per_lookup(gpu, monkeypatch):  # noqa: F811
    # Note [A batch holds its connection]: outside using() every cached lookup borrows a connection, which was
    # half the CPU of resolving the calls of a real tree.
    tree, ix = gpu
    path = find_source(tree).index_path
    monkeypatch.setattr("torchtalk.graph.resolved_build.TASK_SITES", 20)  # several tasks on the small tree
    monkeypatch.setattr("torchtalk.graph.resolved_build.TASK_OPS", 3)
    lookups = _counting_lookups(monkeypatch)
    borrows = _counting_borrows(monkeypatch)
    import torchtalk.graph.resolved_build as rb
    tasks = len(rb._tasks(ix))
    op_tasks = -(-len(registry(ix).by_full) // 3)
    assert tasks >= 3 and op_tasks >= 3
    before = borrows[0]
    assert build(path, tree, workers=1) is not None
    made = borrows[0] - before
    assert lookups[0] > 20 * (tasks + op_tasks), "the build makes many lookups"
    # one per task of each phase, and a few for each phase's set-up (its worker's index and warm-up, the store)
    assert made <= tasks + op_tasks + 40, f"{made} connections borrowed for {tasks} + {op_tasks} tasks"


def test_the_servers_warm_up_holds_one_connection(gpu, monkeypatch):  # noqa: F811
    from torchtalk.server.backend import _warm_up
    _tree, ix = gpu
    borrows = _counting_borrows(monkeypatch)
    lookups = _counting_lookups(monkeypatch)
    _warm_up(ix)
    assert lookups[0] > 100, "the warm-up makes many lookups"
    assert borrows[0] == 1


def test_a_worker_that_cannot_open_the_index_fails_its_tasks_not_the_pool(tmp_path):
    # a pool replaces a worker whose initializer raises with another, forever: a store built while the index was
    # replaced by one of another schema kept two processes respawning; the error is the tasks' now
    import pytest as _pytest

    from torchtalk.errors import IndexUnavailable
    from torchtalk.graph import resolved_build as rb
    bad = tmp_path / "index.db"
    bad.write_bytes(b"not a database")
    rb._init(bad, tmp_path, (tmp_path / "resolved.db", "build"))
    with _pytest.raises(IndexUnavailable):
        rb._run([1])
    with _pytest.raises(IndexUnavailable):
        rb._walk_ops(["add.Tensor"])
    rb._worker_error = None
    rb._worker_ix = None
