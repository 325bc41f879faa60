"""How things of the index become graph nodes, and back."""

from __future__ import annotations

from ..model import GENERATED_PREFIX, CppSymbol, Loc, Node, NodeKind, Op

CPP_KINDS = frozenset({NodeKind.CPP_FUNCTION, NodeKind.GPU_KERNEL, NodeKind.WRAPPER})


def op_node(op: Op) -> Node:
    return Node(NodeKind.OP, op.full_name, op.full_name, op.loc)


def cpp_node(sym: CppSymbol) -> Node:
    """A C++ symbol's node: a GPU kernel, a generated Register<Key>.cpp wrapper, or a function."""
    if sym.kind.is_gpu_kernel:
        kind = NodeKind.GPU_KERNEL
    elif sym.path.startswith(GENERATED_PREFIX) and sym.name.startswith("wrapper_"):
        kind = NodeKind.WRAPPER
    else:
        kind = NodeKind.CPP_FUNCTION
    return Node(kind, str(sym.id), sym.display, sym.loc)


def stub_node(name: str, declared: Loc | None = None) -> Node:
    return Node(NodeKind.STUB, name, name, declared)


def unresolved_node(written: str) -> Node:
    return Node(NodeKind.UNRESOLVED, written or "?", written or "?")


def binding_node(python_name: str, loc: Loc | None = None) -> Node:
    return Node(NodeKind.BINDING, python_name, python_name, loc)


def autograd_node(name: str, loc: Loc | None = None) -> Node:
    return Node(NodeKind.AUTOGRAD_NODE, name, name, loc)


def py_node(kind: NodeKind, fq: str, loc: Loc | None) -> Node:
    return Node(kind, fq, fq, loc)


def symbol_id(node: Node) -> int | None:
    return int(node.key) if node.kind in CPP_KINDS and node.key.isdigit() else None
