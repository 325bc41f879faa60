"""The graph over one index: typed nodes, and for every edge kind the rule that produces it, once.

``out(node, kinds)`` gives the edges leaving a node, ``into(node, kinds)`` those
arriving; walk.py's ``down`` / ``up`` traverse them. Each rule lives in the module
of its family (cpp_edges, cpp_callers, op_edges, formula_edges, stubs, stub_uses, py_edges, py_calls); this table is
the only place that says which rule answers which kind, so every query crosses a link
the same way. Every kind has a rule in both directions (tests/unit/test_architecture.py);
asking for a kind without one raises ``NoRule``.
"""

from __future__ import annotations

from collections.abc import Callable, Collection
from dataclasses import dataclass

from ..model import Edge, EdgeKind, Node
from ..store.reader import Index
from . import (
    bound_lambdas,
    cpp_callers,
    cpp_edges,
    formula_edges,
    op_edges,
    op_refs,
    py_calls,
    py_edges,
    stub_uses,
    stubs,
)
from .op_refs import dispatch_calls
from .py_calls import PyContext

Rule = Callable[[Index, Node], list[Edge]]


@dataclass(frozen=True)
class InContext:
    """A rule whose edges depend on the walk's context: PY_CALL's ``self.f()`` is looked up in the class
    ``self`` is an instance of (``Graph.within``; None: a method's own class)."""

    rule: Callable[[Index, Node, PyContext | None], list[Edge]]


class NoRule(LookupError):
    """A walk or query asked for edges of a kind the graph table has no rule for (a bug, never an answer)."""


def _cpp_out(kind: EdgeKind) -> Rule:
    def rule(ix: Index, node: Node) -> list[Edge]:
        return [e for e in cpp_edges.out_edges(ix, node) if e.kind is kind]
    return rule


def _launch_into(ix: Index, node: Node) -> list[Edge]:
    return cpp_callers.callers(ix, node, EdgeKind.LAUNCH)


def _stub_callers(ix: Index, node: Node) -> list[Edge]:
    """The recorded calls of a stub; for a stub that no recorded call reaches, its uses in the source text of
    the file that defines it (Note [Stub uses])."""
    return cpp_callers.stub_callers(ix, node) or stub_uses.stub_uses(ix, node)


def _stub_calls(ix: Index, node: Node) -> list[Edge]:
    return stub_calls(ix, node, cpp_edges.out_edges(ix, node))


def stub_calls(ix: Index, node: Node, out: list[Edge]) -> list[Edge]:
    """The recorded calls of stubs of a C++ function among its edges ``out``, and the stubs its body hands on to a
    helper that calls them, found in the text of the file that defines them (Note [Stub uses])."""
    recorded = [e for e in out if e.kind is EdgeKind.STUB_CALL]
    have = {e.dst.key for e in recorded}
    return recorded + [e for e in stub_uses.stub_uses_from(ix, node) if e.dst.key not in have]


def _dispatch_calls(ix: Index, node: Node) -> list[Edge]:
    """The recorded calls of ops of a C++ function, and the op functions it hands on (Note [Op references])."""
    return dispatch_calls(ix, node, cpp_edges.out_edges(ix, node))


OUT: dict[EdgeKind, Rule | InContext] = {
    EdgeKind.CALL: _cpp_out(EdgeKind.CALL),
    EdgeKind.DISPATCH_CALL: _dispatch_calls,
    EdgeKind.STUB_CALL: _stub_calls,
    EdgeKind.LAUNCH: _cpp_out(EdgeKind.LAUNCH),
    EdgeKind.UNRESOLVED: _cpp_out(EdgeKind.UNRESOLVED),
    EdgeKind.KERNEL: op_edges.kernel_edges,
    EdgeKind.OP_CALL: op_edges.op_call_edges,
    EdgeKind.BACKWARD: formula_edges.backward_edges,
    EdgeKind.FORWARD_AD: formula_edges.forward_ad_edges,
    EdgeKind.WRAPPER: op_edges.wrapper_edges,
    EdgeKind.ENTRY: op_edges.entry_edges,
    EdgeKind.AUTOGRAD: op_edges.autograd_edges,
    EdgeKind.STUB_KERNEL: stubs.kernel_edges,
    EdgeKind.BINDING: py_edges.bindings_out,
    EdgeKind.PY_CALL: InContext(py_calls.py_call_edges),
}

INTO: dict[EdgeKind, Rule | InContext] = {
    # a call in a pybind11-bound lambda is the Python name's (Note [Calls in a bound lambda]): a BINDING edge
    EdgeKind.CALL: bound_lambdas.callers_outside,
    EdgeKind.LAUNCH: _launch_into,
    EdgeKind.DISPATCH_CALL: op_refs.op_calls_into,  # and the calls passing its function on (Note [Op references])
    EdgeKind.STUB_CALL: _stub_callers,
    EdgeKind.UNRESOLVED: cpp_callers.unresolved_callers,
    EdgeKind.KERNEL: op_edges.kernel_of,
    EdgeKind.OP_CALL: op_edges.op_called_by,
    EdgeKind.BACKWARD: formula_edges.backward_of,
    EdgeKind.FORWARD_AD: formula_edges.forward_ad_of,
    EdgeKind.WRAPPER: op_edges.wrapper_of,
    EdgeKind.ENTRY: op_edges.entry_of,
    EdgeKind.STUB_KERNEL: stubs.registering,
    EdgeKind.BINDING: py_edges.bindings_into,
    EdgeKind.AUTOGRAD: op_edges.autograd_of,
    EdgeKind.PY_CALL: py_calls.py_callers,
}


class Graph:
    """Read-only view of one index as typed nodes and edges (answers are computed on demand).

    ``ctx`` is the context of the rules that need one (``InContext``): ``graph(ix).within(PyContext(mro))``
    walks methods as those of an instance of ``mro[0]``."""

    def __init__(self, ix: Index, ctx: PyContext | None = None) -> None:
        self.ix = ix
        self.ctx = ctx

    def within(self, ctx: PyContext) -> Graph:
        return Graph(self.ix, ctx)

    def out(self, node: Node, kinds: Collection[EdgeKind]) -> list[Edge]:
        return self._edges(OUT, "out", node, kinds)

    def into(self, node: Node, kinds: Collection[EdgeKind]) -> list[Edge]:
        return self._edges(INTO, "into", node, kinds)

    def _edges(self, table: dict[EdgeKind, Rule | InContext], direction: str, node: Node,
               kinds: Collection[EdgeKind]) -> list[Edge]:
        out: list[Edge] = []
        for k in ordered(kinds):
            rule = table.get(k)
            if rule is None:
                raise NoRule(f"Graph.{direction}: no rule gives {k.value} edges {direction} of a node; kinds with "
                             f"one: {', '.join(sorted(table))} (add it to graph/graph.py's "
                             f"{'OUT' if table is OUT else 'INTO'}, see ARCHITECTURE.md 'Adding an edge kind')")
            out += rule.rule(self.ix, node, self.ctx) if isinstance(rule, InContext) else rule(self.ix, node)
        return out


def ordered(kinds: Collection[EdgeKind]) -> list[EdgeKind]:
    """Kinds in their declaration order, so a walk's result does not depend on set iteration order (a walk asks
    tens of thousands of times for a few sets of kinds: each set's order is computed once)."""
    key = frozenset(kinds)
    order = _ORDERS.get(key)
    if order is None:
        order = _ORDERS[key] = [k for k in EdgeKind if k in key]
    return order


_ORDERS: dict[frozenset[EdgeKind], list[EdgeKind]] = {}


def graph(ix: Index) -> Graph:
    g: Graph = ix.cached("graph", lambda: Graph(ix))
    return g
