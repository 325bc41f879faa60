"""The call sites the GPU walk resolves: every site, except those whose resolution cannot give it an edge.

Note [Sites the GPU walk skips]: below a kernel the GPU walk (gpu.py ``_reach``) resolves every call site
of every function it passes (conv2d: ~12,600 sites), and one in ten is a macro the index has no definition
of (``TORCH_CHECK``, ``TORCH_INTERNAL_ASSERT``, ``C10_UNLIKELY``: ~1,300 of conv2d's, ~0.5 s of name lookup,
argument-dependent lookup and construction attempts). Such a site resolves to nothing, so the walk has no use
for it: its UNRESOLVED edge (how MACRO) is not walked (``gpu_edge``), is no library call (a site the GPU
library table names is kept) and is not one of the direct calls an answer that finds nothing names. A site is
skipped only when nothing of the index could make it resolve elsewhere (resolve.py's rules, in order): it is a
plain call or a method call (a launch, a name passed on and a called local are kept), written like a macro
(cpp_edges.is_macro), and its name is no function, class, alias or using-declaration of the index, no
DispatchStub, means no op (X, X_out, __dispatch_X; ``at::_ops::S::...`` and per-key namespaces are kept by
qualifier), and is not a GPU library's. So the walk's edges, its cuts (which count edges the walk could take)
and its answers are the same with and without the skip (tests/unit/test_device_reach.py; the census and first
questions compared byte for byte).

A name-level "may reach device work" fixed point (a site kept only if some function of its callee's name may
reach a launch) was measured first and keeps 92% of PyTorch 2.6.0's call sites: ``size``, ``dim``, ``get``,
``ptr``, ``options`` each name some function that reaches the allocator, a stream or an op's kernel, and a name
does not say which class a method call's receiver is (the resolver does).
"""

from __future__ import annotations

from collections.abc import Collection
from dataclasses import dataclass

from ..model import CallKind, CallSite, Edge, EdgeKind, Node
from ..model.cuda import library_of
from ..store.reader import Index
from .cpp_edges import is_macro, sites_edges
from .cpp_types import all_classes, all_usings, split_last
from .graph import graph, ordered, stub_calls
from .op_refs import dispatch_calls
from .op_spellings import KEY_NAMESPACES, STRUCT_QUALIFIERS, dispatch_helper_ops, op_named
from .registry import registry
from .resolve import stub_names

_SITE_KINDS = frozenset({CallKind.CALL, CallKind.METHOD})  # launches, names passed on, constructions: kept
_FROM_SITES = frozenset({EdgeKind.CALL, EdgeKind.DISPATCH_CALL, EdgeKind.STUB_CALL, EdgeKind.LAUNCH,
                         EdgeKind.UNRESOLVED})


@dataclass(frozen=True)
class Defined:
    """The names a call could resolve to something by: functions, classes, aliases and using-declarations."""

    names: frozenset[str]


def defined(ix: Index) -> Defined:
    """``Defined`` of the index, once per index version (~0.2 s; the server's warm-up loads it)."""
    names: Defined = ix.cached("defined_names", lambda: _defined(ix))
    return names


def _defined(ix: Index) -> Defined:
    names = {r[0] for r in ix.q("SELECT DISTINCT name FROM cpp_symbol")}
    names |= {split_last(q)[0] for q in all_classes(ix)}
    names |= set(all_usings(ix))
    return Defined(frozenset(names))


def skips(ix: Index, call: CallSite) -> bool:
    """Whether the GPU walk leaves this site unresolved (Note [Sites the GPU walk skips])."""
    name = call.callee
    if call.kind not in _SITE_KINDS or not is_macro(name) or (call.kind is CallKind.CALL and call.recv):
        return False
    qual = call.qualifier.strip(":")
    if qual.startswith(STRUCT_QUALIFIERS) or qual in KEY_NAMESPACES:
        return False
    reg = registry(ix)
    return (name not in defined(ix).names and name not in stub_names(ix) and not op_named(reg, name)
            and not dispatch_helper_ops(reg, name) and library_of(call.written) is None)


def device_out_edges(ix: Index, node: Node) -> list[Edge]:
    """cpp_edges.out_edges without the sites ``skips`` skips, in source order (memoised per index version)."""
    return sites_edges(ix, node, "cpp_device_out_edges", lambda call: not skips(ix, call), gpu_walk=True)


def device_out(ix: Index, node: Node, kinds: Collection[EdgeKind]) -> list[Edge]:
    """``graph(ix).out(node, kinds)`` with the edges out of call sites (CALL, DISPATCH_CALL, STUB_CALL, LAUNCH,
    UNRESOLVED) from the sites the GPU walk resolves; in the graph table's order of kinds."""
    out = device_out_edges(ix, node) if any(k in _FROM_SITES for k in kinds) else []
    edges: list[Edge] = []
    for k in ordered(kinds):
        if k is EdgeKind.DISPATCH_CALL:
            edges += dispatch_calls(ix, node, out)
        elif k is EdgeKind.STUB_CALL:
            edges += stub_calls(ix, node, out)
        elif k in _FROM_SITES:
            edges += [e for e in out if e.kind is k]
        else:  # not from call sites (a stub's registrations): as the graph table gives them
            edges += graph(ix).out(node, [k])
    return edges
