"""What a first answer costs: each mechanism that keeps per-query work proportional to the answer gives the same
answer as the plain way, and does less (counted through a hook, never timed)."""

from collections import Counter

import pytest

from torchtalk.graph import cpp_callers, cpp_edges, stubs
from torchtalk.graph.cpp_types import all_classes, all_usings, classes, named_usings, split_qualified
from torchtalk.graph.nodes import cpp_node
from torchtalk.graph.qualifiers import qualifiers
from torchtalk.graph.signatures import signature
from torchtalk.graph.symbols import defs_by_name, prefetch_symbols, symbol
from torchtalk.model import EdgeKind, RegistrationKind, SymbolKind, UsingKind
from torchtalk.model.cuda import library_of


def _count_resolutions(monkeypatch) -> Counter:
    """Call sites call_edges resolves, by id."""
    seen: Counter = Counter()
    plain = cpp_edges.call_edges

    def counted(ix, sym, call, src=None):
        seen[call.id] += 1
        return plain(ix, sym, call, src)

    monkeypatch.setattr(cpp_edges, "call_edges", counted)
    monkeypatch.setattr(cpp_callers, "call_edges", counted)  # the callers' module calls it by its own name
    return seen


def _shared_names(ix) -> list[str]:
    """Names of several C++ functions that have call sites (a method name every class of a family defines)."""
    return [n for (n,) in ix.q(
        "SELECT s.name FROM cpp_symbol s WHERE EXISTS (SELECT 1 FROM cpp_call c WHERE c.callee = s.name) "
        "GROUP BY s.name HAVING COUNT(DISTINCT s.id) > 1 ORDER BY s.name")]


def test_callers_of_every_function_of_a_name_resolve_each_site_once_and_agree_with_one_by_one(indexed, monkeypatch):
    _, ix = indexed
    names = _shared_names(ix)
    assert names, "the fixture tree has names several functions share"
    with ix.using():
        targets = [s for n in names for s in defs_by_name(ix, n, definitions_only=False)]
        # the plain way first (before any memo): each function's sites resolved one by one
        plain = {(t.id, k): cpp_callers._callers_of_sites(ix, t, k, qualifiers(ix, t))
                 for t in targets for k in (EdgeKind.CALL, EdgeKind.LAUNCH)}
    seen = _count_resolutions(monkeypatch)
    with ix.using():
        shared = {(t.id, k): cpp_callers.callers(ix, cpp_node(t), k) for t in targets
                  for k in (EdgeKind.CALL, EdgeKind.LAUNCH)}
    assert shared == plain
    assert any(shared.values()), "some function of a shared name has callers"
    assert seen and max(seen.values()) == 1, "a call site is resolved once, whichever function of its name asks"


def test_callers_of_a_function_resolve_no_site_whose_qualifier_cannot_name_it(indexed, monkeypatch):
    _, ix = indexed
    seen = _count_resolutions(monkeypatch)
    with ix.using():
        free = [s for (n,) in ix.q("SELECT DISTINCT callee FROM cpp_call WHERE qualifier != ''")
                for s in defs_by_name(ix, n) if s.kind is SymbolKind.FUNCTION]
        assert free
        for t in free:
            cpp_callers.callers(ix, cpp_node(t), EdgeKind.CALL)
        allowed = {t.name: set(qualifiers(ix, t)) for t in free}
        resolved = [ix.q("SELECT callee, qualifier, kind FROM cpp_call WHERE id = ?", (i,))[0] for i in seen]
    assert resolved
    for callee, qualifier, kind in resolved:
        assert kind == "method" or qualifier in allowed.get(callee, set()) or any(
            s.kind in (SymbolKind.METHOD, SymbolKind.CONSTRUCTOR) for s in defs_by_name(ix, callee, False)), (
            callee, qualifier)


def test_tables_read_whole_equal_the_per_name_queries(indexed):
    _, ix = indexed
    with ix.using():
        by_name = all_classes(ix)
        assert by_name
        for (q,) in ix.q("SELECT DISTINCT qualname FROM cpp_class"):
            one = ix.q("SELECT id FROM cpp_class WHERE qualname = ? ORDER BY file_id, line", (q,))
            assert [c.id for c in classes(ix, q)] == [i for (i,) in one]
        assert classes(ix, "no::such::Class") == []
        usings = all_usings(ix)
        assert usings
        for (alias,) in ix.q("SELECT DISTINCT alias FROM cpp_using"):
            rows = ix.q("SELECT kind, name, scope, file_id FROM cpp_using WHERE alias = ? AND kind != ?",
                        (alias, UsingKind.NAMESPACE.value))
            assert named_usings(ix, alias) == [(UsingKind(k), n, s, ix.path_of(f)) for k, n, s, f in rows]
        regs = ix.q("SELECT DISTINCT name FROM cpp_registration WHERE kind IN (?, ?)",
                    (RegistrationKind.DECLARE_DISPATCH.value, RegistrationKind.REGISTER_DISPATCH.value))
        assert regs
        for (stub,) in regs:
            rows = ix.q("SELECT id FROM cpp_registration WHERE name = ? AND kind IN (?, ?) ORDER BY file_id, line",
                        (stub, RegistrationKind.DECLARE_DISPATCH.value, RegistrationKind.REGISTER_DISPATCH.value))
            assert [r.id for r in stubs._registrations(ix, stub)] == [i for (i,) in rows]


def test_prefetched_symbols_are_the_ones_read_by_id(indexed):
    _, ix = indexed
    with ix.using():
        ids = [i for (i,) in ix.q("SELECT id FROM cpp_symbol ORDER BY id")]
        missing = max(ids) + 1000
        prefetch_symbols(ix, [*ids, missing])
        got = {i: symbol(ix, i) for i in ids}
    for i, sym in got.items():
        row = ix.q("SELECT qualname, line FROM cpp_symbol WHERE id = ?", (i,))[0]
        assert sym is not None and (sym.qualname, sym.line) == row
    with ix.using():
        assert symbol(ix, missing) is None


@pytest.mark.parametrize("name, parts", [
    ("at::native::(anonymous)::f", ("at", "native", "(anonymous)", "f")),
    ("c10::SmallVector<at::Tensor, 4>::push_back", ("c10", "SmallVector<at::Tensor, 4>", "push_back")),
    ("std::function<void(at::Tensor::*)(int)>::operator()", ("std", "function<void(at::Tensor::*)(int)>",
                                                            "operator()")),
    ("a::operator<<", ("a", "operator<<")),
    ("x:::y", ("x", ":y")),
    ("plain", ("plain",)),
])
def test_split_qualified_keeps_template_arguments_and_parentheses_whole(name, parts):
    assert split_qualified(name) == parts


def test_memoised_pure_helpers_answer_as_before():
    assert signature("(const Tensor& self, int64_t dim = 0, ...)") == signature(
        "(const Tensor& self, int64_t dim = 0, ...)")
    sig = signature("(const Tensor& self, int64_t dim = 0, ...)")
    assert sig.types == ("const Tensor&", "int64_t") and sig.required == 1 and sig.variadic
    # a declaration naming at::Tensor and its definition naming Tensor are one function; const keeps overloads apart
    assert signature("(const at::Tensor& a, c10::optional<at::Tensor> b)").key == \
        signature("(const Tensor& a, optional<Tensor> b)").key == ("const Tensor&", "optional<Tensor>")
    assert signature("(at::Tensor& a)").key != signature("(const at::Tensor& a)").key
    assert [library_of(n) for n in ("at::cuda::blas::gemm", "cublasLtMatmul", "at::native::add", "cudnn_is_acceptable",
                                    "at::native::cudnn_frontend::run")] == ["cuBLAS", "cuBLASLt", None, None, "cuDNN"]


def _op_callers_one_by_one(ix, op):
    """The plain way: every spelling's sites read by query and resolved one by one (Note [Every caller of an op])."""
    from torchtalk.graph.op_spellings import DISPATCH_HELPER_PREFIX, op_spellings
    from torchtalk.graph.symbols import calls_named
    names = dict.fromkeys([op.name, f"{op.name}_symint", *op_spellings(op), f"{DISPATCH_HELPER_PREFIX}{op.name}"]
                          + ([f"{op.name}_outf_symint", f"{op.name}_out_symint"] if op.is_out else []))
    structs = tuple(f"{p}_ops::{op.struct_name}" for p in ("at::", "", "::at::"))
    sites = [c for n in names for c in calls_named(ix, n, limit=-1)]
    sites += calls_named(ix, "call", structs, limit=-1) + calls_named(ix, "redispatch", structs, limit=-1)
    out = []
    for call in sites:
        caller = symbol(ix, call.caller) if call.has_caller else None
        hit = next((e for e in cpp_edges.call_edges(ix, caller, call) if e.kind is EdgeKind.DISPATCH_CALL
                    and e.dst.key == op.full_name), None) if caller is not None else None
        if hit is not None:
            out.append(hit)
    return sorted(out, key=lambda e: ((str(e.site.path), e.site.line) if e.site else ("", 0), e.src.key, e.written,
                                      e.how.value))


def test_op_callers_share_the_sites_of_a_name_and_agree_with_one_by_one(indexed, monkeypatch):
    from torchtalk.graph.registry import registry
    from torchtalk.model import Node, NodeKind
    _, ix = indexed
    with ix.using():
        ops = list(registry(ix).by_full.values())
        plain = {op.full_name: _op_callers_one_by_one(ix, op) for op in ops}
    assert any(plain.values()), "the fixture tree calls some op through the dispatcher"
    seen = _count_resolutions(monkeypatch)
    with ix.using():
        shared = {op.full_name: cpp_callers.op_callers(ix, Node(NodeKind.OP, op.full_name, op.full_name, op.loc))
                  for op in ops}
    assert shared == plain
    assert max(seen.values()) == 1, "a site is resolved once, whichever op (overload) asks"


def test_the_launch_names_no_kernel_has_are_read_through_the_launch_sites_index(indexed, monkeypatch):
    """``launched_names_of_no_kernel`` (the first called_by of any function asks it) reads the few hundred ``<<<>>>``
    sites through their partial index and looks each name up by name: no table is scanned (2.6.0: 0.4 s -> 4 ms;
    counted in the query's plan, never timed)."""
    from torchtalk.graph import symbols
    _, ix = indexed
    plans: list[str] = []
    plain = ix.q

    def explained(sql, params=()):
        if "FROM cpp_call c WHERE kind" in sql:
            plans.extend(str(r) for r in plain("EXPLAIN QUERY PLAN " + sql, params))
        return plain(sql, params)

    monkeypatch.setattr(ix, "q", explained)
    names = symbols.launched_names_of_no_kernel(ix)
    assert names == sorted({c for (c,) in plain("SELECT callee FROM cpp_call WHERE kind = 'launch'")} -
                           {n for (n,) in plain("SELECT name FROM cpp_symbol WHERE kind IN "
                                                "('global_kernel', 'metal_kernel')")})
    assert any("cpp_call_launch" in p for p in plans), plans
    assert not [p for p in plans if "SCAN" in p and "USING" not in p], plans  # no table read whole


def test_the_server_warm_up_runs_every_step(indexed, monkeypatch):
    """The warm-up swallows a failure (it is an optimisation): one raising step skipped the rest, and every first
    answer then paid for what they load (first-answer p50 41 -> 284 ms, when warm_passing built an empty-keyed Node).
    Each step must run."""
    from torchtalk.server import backend

    failures = []
    monkeypatch.setattr(backend.log, "debug", lambda msg, *a, **k: failures.append(msg))
    _, ix = indexed
    backend._warm_up(ix)
    assert failures == []
