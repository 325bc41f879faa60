"""The graph over one index: typed nodes, and for every edge kind the rule that produces it, once.

``out(node, kinds)`` gives the edges leaving a node, ``into(node, kinds)`` those
arriving; walk.py's ``down`` / ``up`` traverse them. Each rule lives in the module
of its family (cpp_edges, op_edges, stubs, py_edges); this table is the only place
that says which rule answers which kind, so every query crosses a link the same way.
"""

from __future__ import annotations

from collections.abc import Callable, Collection

from ..model import Edge, EdgeKind, Node
from ..store.reader import Index
from . import cpp_edges, op_edges, py_edges, stubs

Rule = Callable[[Index, Node], list[Edge]]


def _cpp_out(kind: EdgeKind) -> Rule:
    def rule(ix: Index, node: Node) -> list[Edge]:
        return [e for e in cpp_edges.out_edges(ix, node) if e.kind is kind]
    return rule


def _launch_into(ix: Index, node: Node) -> list[Edge]:
    return cpp_edges.callers(ix, node, EdgeKind.LAUNCH)


OUT: dict[EdgeKind, Rule] = {
    EdgeKind.CALL: _cpp_out(EdgeKind.CALL),
    EdgeKind.DISPATCH_CALL: _cpp_out(EdgeKind.DISPATCH_CALL),
    EdgeKind.STUB_CALL: _cpp_out(EdgeKind.STUB_CALL),
    EdgeKind.LAUNCH: _cpp_out(EdgeKind.LAUNCH),
    EdgeKind.UNRESOLVED: _cpp_out(EdgeKind.UNRESOLVED),
    EdgeKind.KERNEL: op_edges.kernel_edges,
    EdgeKind.OP_CALL: op_edges.op_call_edges,
    EdgeKind.BACKWARD: op_edges.backward_edges,
    EdgeKind.WRAPPER: op_edges.wrapper_edges,
    EdgeKind.AUTOGRAD: op_edges.autograd_edges,
    EdgeKind.STUB_KERNEL: stubs.kernel_edges,
    EdgeKind.BINDING: py_edges.bindings_out,
}

INTO: dict[EdgeKind, Rule] = {
    EdgeKind.CALL: cpp_edges.callers,
    EdgeKind.LAUNCH: _launch_into,
    EdgeKind.DISPATCH_CALL: cpp_edges.op_callers,
    EdgeKind.STUB_CALL: cpp_edges.stub_callers,
    EdgeKind.KERNEL: op_edges.kernel_of,
    EdgeKind.OP_CALL: op_edges.op_called_by,
    EdgeKind.BACKWARD: op_edges.backward_of,
    EdgeKind.WRAPPER: op_edges.wrapper_of,
    EdgeKind.STUB_KERNEL: stubs.registering,
    EdgeKind.BINDING: py_edges.bindings_into,
    EdgeKind.AUTOGRAD: op_edges.autograd_of,
}


class Graph:
    """Read-only view of one index as typed nodes and edges (answers are computed on demand)."""

    def __init__(self, ix: Index) -> None:
        self.ix = ix

    def out(self, node: Node, kinds: Collection[EdgeKind]) -> list[Edge]:
        return [e for k in _ordered(kinds) if k in OUT for e in OUT[k](self.ix, node)]

    def into(self, node: Node, kinds: Collection[EdgeKind]) -> list[Edge]:
        return [e for k in _ordered(kinds) if k in INTO for e in INTO[k](self.ix, node)]


def _ordered(kinds: Collection[EdgeKind]) -> list[EdgeKind]:
    """Kinds in their declaration order, so a walk's result does not depend on set iteration order."""
    return [k for k in EdgeKind if k in kinds]


def graph(ix: Index) -> Graph:
    g: Graph = ix.cached("graph", lambda: Graph(ix))
    return g
