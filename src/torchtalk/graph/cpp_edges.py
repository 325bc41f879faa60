"""Edges out of C++ functions: calls, dispatcher calls, stub calls, GPU launches.

Out of a function, every call site is resolved (graph/resolve.py) and becomes one
edge: CALL to a definition, DISPATCH_CALL to an op, STUB_CALL to a DispatchStub,
LAUNCH to a GPU kernel (``<<<>>>``, or the functor a launch helper runs), or
UNRESOLVED by name. Into a node (graph/cpp_callers.py), the call sites that name it
are resolved the same way, so both directions agree by construction.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace

from ..model import TEMPLATE_ARGUMENT, CallKind, CallSite, CppSymbol, Edge, EdgeHow, EdgeKind, Node, NodeKind
from ..model.paths import rocm_only_path
from ..store.reader import Index
from .cpp_lookup import methods
from .handed import handed_args, handed_functions, handed_methods
from .handed_kernels import handed_kernels
from .nodes import stub_node, symbol_id, symbol_node, unresolved_node
from .overrides import dispatches, overrides, this_class
from .param_calls import param_call_edges
from .registry import registry
from .resolve import TargetKind, resolve, resolver
from .resolved import prefetch_resolutions
from .stored_edges import stored_out_edges
from .stubs import stub_declared
from .symbols import calls_from, symbol

OUT_KINDS = frozenset({EdgeKind.CALL, EdgeKind.DISPATCH_CALL, EdgeKind.STUB_CALL, EdgeKind.LAUNCH,
                       EdgeKind.UNRESOLVED})
MAX_DEFS = 50  # candidates kept for one call when overloads remain (all of them, short of pathological sets)


def is_macro(name: str) -> bool:
    return name.isupper() or name.startswith(("AT_", "C10_", "TORCH_"))


def call_edges(ix: Index, sym: CppSymbol, call: CallSite, src: Node | None = None) -> list[Edge]:
    """The edges one call site of ``sym`` makes; each keeps the call as written (``Edge.written``), which
    tells two calls on one line apart."""
    src = src or symbol_node(ix, sym)
    res = resolve(ix, call, sym)
    written = call.written
    if call.kind is CallKind.GPU_LAUNCH:
        functor = call.detail or "lambda"
        dst = Node(NodeKind.GPU_KERNEL, f"{call.path}:{call.line}:{functor}", f"{call.callee}({functor})", call.loc)
        return [Edge(src, dst, EdgeKind.LAUNCH, call.loc, written=written)]
    if res.kind is TargetKind.DEFS or res.kind is TargetKind.DECLS:
        if call.kind is CallKind.REF:  # a function named without a call (Note [References])
            handed = _handed_on_line(ix, sym, call.line) if call.detail == TEMPLATE_ARGUMENT else set()
            return [Edge(src, symbol_node(ix, d), EdgeKind.CALL, call.loc, how=EdgeHow.REFERENCED, written=written)
                    for d in res.defs[:MAX_DEFS] if d.id not in handed]
        if call.kind is CallKind.LAUNCH:  # a launch keeps its configuration (grid, block, smem, stream) to show
            return [Edge(src, symbol_node(ix, d), EdgeKind.LAUNCH, call.loc, note=call.detail, written=written)
                    for d in res.defs[:MAX_DEFS]]
        # A call says if it reached a declaration only, and if overloads remain that its arguments do not
        # decide (each is a candidate).
        # A call of a virtual method (or of one its class only declares) on an object or on this may run an
        # override in a derived class (Note [Virtual calls]), every one the class hierarchy has (no cap: calls
        # counts them).
        return [Edge(src, symbol_node(ix, d), EdgeKind.CALL, call.loc, how=_how(d, res.candidates), written=written)
                for d in res.defs[:MAX_DEFS]] + [
            Edge(src, symbol_node(ix, o), EdgeKind.CALL, call.loc, written=written,
                 how=EdgeHow.OVERRIDE_OF_BODY if d.is_definition else EdgeHow.OVERRIDE)
            for d in res.defs[:MAX_DEFS] if dispatches(call)
            # a ROCm build's own class (a hip/ directory's HIPAllocatorMasqueradingAsCUDA) overrides nothing for CUDA
            # or CPU code (Note [Host code calls no device code] in graph/resolve.py)
            for o in overrides(ix, d, this_class(sym, call))
            if not rocm_only_path(o.path) or rocm_only_path(sym.path)] + _handed_edges(ix, sym, call, src,
                                                                                      res.defs[:MAX_DEFS])
    if call.kind is CallKind.LAUNCH:  # Note [Kernels handed to a launching lambda]: every kernel, no cap
        kernels = handed_kernels(ix, sym, call)
        if kernels:
            return [Edge(src, symbol_node(ix, k), EdgeKind.LAUNCH, call.loc, how=EdgeHow.HANDED, note=call.detail,
                         written=written) for k in kernels]
    if res.kind is TargetKind.LOCAL and call.kind is CallKind.CALL and call.recv:
        # a parameter holding a function: what the callers pass (Note [Calls of a function parameter])
        passed = param_call_edges(ix, sym, call, src)
        if passed is not None:
            return passed
    if res.kind is TargetKind.LOCAL or res.kind is TargetKind.BUILTIN:
        return []  # a local lambda or functor called (its body is the caller's own code), or a builtin operator
    if res.kind is TargetKind.OP:
        reg = registry(ix)
        return [Edge(src, Node(NodeKind.OP, n, n, reg.by_full[n].loc), EdgeKind.DISPATCH_CALL, call.loc,
                     note=res.spelling, written=written) for n in res.ops if n in reg.by_full]
    if res.kind is TargetKind.STUB:
        how = EdgeHow.PASSED_ON if call.kind is CallKind.REF else EdgeHow.DIRECT
        return [Edge(src, stub_node(res.stub, stub_declared(ix, res.stub)), EdgeKind.STUB_CALL, call.loc, how=how,
                     written=written)]
    if call.kind is CallKind.REF:
        return []  # a name passed on that is neither a stub nor known: not a call
    how = EdgeHow.MACRO if is_macro(call.callee) else EdgeHow.STD if res.std else EdgeHow.DIRECT
    return [Edge(src, unresolved_node(written), EdgeKind.UNRESOLVED, call.loc, how=how, written=written)]


def _handed_edges(ix: Index, sym: CppSymbol, call: CallSite, src: Node, defs: tuple[CppSymbol, ...]) -> list[Edge]:
    """The methods of the objects a call hands to a template that calls them (Note [Handed objects]), and the
    functions it hands as template arguments (Note [Functions as template arguments])."""
    out: list[Edge] = []
    for d in defs:
        out += [Edge(src, symbol_node(ix, f), EdgeKind.CALL, call.loc, how=EdgeHow.HANDED, written=arg)
                for arg, f in handed_functions(ix, sym, call, d)]
        for te, name in handed_args(call, handed_methods(ix, d)):
            ty = resolver(ix, sym).type_of(te)
            if ty is None or ty.ptr or ty.is_std or ty.is_builtin:
                continue
            out += [Edge(src, symbol_node(ix, m), EdgeKind.CALL, call.loc, how=EdgeHow.HANDED, written=call.written)
                    for m in methods(ix, ty, name)[1] if m.is_definition]
    return out


def _handed_on_line(ix: Index, sym: CppSymbol, line: int) -> set[int]:
    """The functions a call of ``sym`` on ``line`` hands a template that calls them (a HANDED edge, Note [Functions as
    template arguments]): a template argument naming one of those is that call's, not a reference besides."""
    out: set[int] = set()
    for c in calls_from(ix, sym.id):
        if c.line == line and c.explicit and c.kind is CallKind.CALL:
            res = resolve(ix, c, sym)
            if res.kind is TargetKind.DEFS or res.kind is TargetKind.DECLS:
                out |= {f.id for d in res.defs[:MAX_DEFS] for _arg, f in handed_functions(ix, sym, c, d)}
    return out


def _how(d: CppSymbol, candidate: bool) -> EdgeHow:
    if candidate:
        return EdgeHow.CANDIDATE if d.is_definition else EdgeHow.CANDIDATE_DECLARATION
    return EdgeHow.DIRECT if d.is_definition else EdgeHow.DECLARATION


def out_edges(ix: Index, node: Node) -> list[Edge]:
    """Every edge out of a C++ function, in source order (memoised per index version)."""
    return sites_edges(ix, node, "cpp_out_edges")


def sites_edges(ix: Index, node: Node, memo_key: str, keep: Callable[[CallSite], bool] | None = None,
                gpu_walk: bool = False) -> list[Edge]:
    """The edges out of a C++ function from the call sites ``keep`` keeps (every site when None), in source order;
    memoised per index version under ``memo_key`` (one per ``keep``). ``gpu_walk``: ``keep`` keeps the sites the GPU
    walk does not skip (read from the store as such: Note [Stored edges] in store/resolved.py)."""
    sid = symbol_id(node)
    if sid is None:
        return []
    memo: dict[int, list[Edge]] = ix.cached(memo_key, dict)
    if sid not in memo:
        sym = symbol(ix, sid)
        if sym is None:
            memo[sid] = []
            return memo[sid]
        read = stored_out_edges(ix, sym, gpu_walk) if keep is None or gpu_walk else None
        if read is not None:
            memo[sid] = read if node == symbol_node(ix, sym) else [replace(e, src=node) for e in read]
            return memo[sid]
        calls = [c for c in calls_from(ix, sid) if keep is None or keep(c)]
        # a site's edges are made once, whichever list of the function's edges asks first (out_edges, the GPU
        # walk's device_out_edges)
        by_site: dict[tuple[Node, int], list[Edge]] = ix.cached("site_edges", dict)
        prefetch_resolutions(ix, [c.id for c in calls if (node, c.id) not in by_site])
        out: list[Edge] = []
        for call in calls:
            found = by_site.get((node, call.id))
            if found is None:
                found = by_site[(node, call.id)] = call_edges(ix, sym, call, node)
            out += found
        memo[sid] = out
    return memo[sid]
