"""How things of the index become graph nodes, and back."""

from __future__ import annotations

from ..model import CppSymbol, Loc, Node, NodeKind
from ..model.graph import cpp_node as cpp_node  # re-exported: the graph's constructors
from ..model.graph import op_node as op_node
from ..store.reader import Index

CPP_KINDS = frozenset({NodeKind.CPP_FUNCTION, NodeKind.GPU_KERNEL, NodeKind.WRAPPER})


def symbol_node(ix: Index, sym: CppSymbol) -> Node:
    """``cpp_node(sym)``, memoised per symbol and index version (nodes are immutable, a symbol's fields are its
    id's): resolving a name's call sites makes the node of each caller and of each function reached, thousands
    of times an answer for a few hundred functions."""
    memo: dict[int, Node] = ix.cached("cpp_nodes", dict)
    node = memo.get(sym.id)
    if node is None:
        node = memo[sym.id] = cpp_node(sym)
    return node


def stub_node(name: str, declared: Loc | None = None) -> Node:
    return Node(NodeKind.STUB, name, name, declared)


def unresolved_node(written: str) -> Node:
    return Node(NodeKind.UNRESOLVED, written or "?", written or "?")


def held_node(written: str, site: Loc) -> Node:
    """A call of what an attribute or a local holds (``self.norm(x)``, ``mod(x)``), not followed: a node of its own
    site, labelled as written. Two such calls of one spelling hold different things (TransformerEncoder's and
    TransformerDecoder's ``self.norm``), so a walk that met one must not take the other for it."""
    return Node(NodeKind.UNRESOLVED, f"{written} at {site}", written or "?")


def binding_node(python_name: str, loc: Loc | None = None) -> Node:
    return Node(NodeKind.BINDING, python_name, python_name, loc)


def autograd_node(name: str, loc: Loc | None = None) -> Node:
    return Node(NodeKind.AUTOGRAD_NODE, name, name, loc)


def py_node(kind: NodeKind, fq: str, loc: Loc | None) -> Node:
    return Node(kind, fq, fq, loc)


def symbol_id(node: Node) -> int | None:
    return int(node.key) if node.kind in CPP_KINDS and node.key.isdigit() else None
