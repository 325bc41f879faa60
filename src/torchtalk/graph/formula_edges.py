"""Edges of ops to what their derivatives.yaml formulas call: BACKWARD from the backward formulas, FORWARD_AD from
the forward-mode (JVP) ones (Note [Formula modes] in model/kinds.py; a formula's calls: Note [Formula calls])."""

from __future__ import annotations

from ..model import Edge, EdgeKind, FormulaMode, Node, NodeKind, Op
from ..store.reader import Index
from .formulas import formula_calls
from .nodes import cpp_node, op_node
from .op_derivatives import derivative_entry, derivatives_of
from .registry import OpRegistry, registry
from .symbols import SYMBOL_COLS, to_symbol

_NOT_CALLS = frozenset({"if", "for", "while", "return", "sizeof", "static_cast", "std", "c10", "Tensor",
                        "TensorList", "at", "grad", "result", "self", "other"})
_FORMULA_NS = "torch::autograd::generated::details::"  # tools/autograd/templates/FunctionsManual: helpers
_FORMULA_SCOPES = (_FORMULA_NS, "at::")


def _op(reg: OpRegistry, node: Node) -> Op | None:
    return reg.by_full.get(node.key) if node.kind is NodeKind.OP else None


def _formula_targets(ix: Index, reg: OpRegistry, text: str, entry: Op | None) -> list[Node]:
    """What a derivative formula of ``entry``'s derivatives.yaml entry calls: the op overloads its calls can mean
    (Note [Formula calls] in graph/formulas.py) and the C++ helpers of FunctionsManual.cpp."""
    out: dict[tuple[str, str], Node] = {}
    for c in formula_calls(ix, reg, text, entry):
        for full in c.ops:
            out.setdefault((NodeKind.OP, full), op_node(reg.by_full[full]))
        if c.op_name or c.name in _NOT_CALLS:
            continue
        # Functions.cpp (where the formulas are compiled) uses FunctionsManual's namespace; a formula's ATen helper is
        # written at::name (expand: at::sum_to, ExpandUtils.h)
        rows = next((r for ns in _FORMULA_SCOPES if (r := ix.q(
            f"SELECT {SYMBOL_COLS} FROM cpp_symbol WHERE qualname = ? AND is_definition", (ns + c.name,)))), [])
        for row in rows[:1]:
            n = cpp_node(to_symbol(ix, row))
            out.setdefault((n.kind, n.key), n)
    return list(out.values())


_MODE_OF = {EdgeKind.BACKWARD: FormulaMode.BACKWARD, EdgeKind.FORWARD_AD: FormulaMode.FORWARD}


def _formula_edges(ix: Index, node: Node, kind: EdgeKind) -> list[Edge]:
    """op -> the ops (and FunctionsManual helpers) its derivatives.yaml formulas of ``kind``'s mode call: its
    backward formulas for BACKWARD, its forward-mode (JVP) ones for FORWARD_AD (Note [Formula modes])."""
    reg = registry(ix)
    op = _op(reg, node)
    if op is None:
        return []
    mode = _MODE_OF[kind]
    out: dict[tuple[str, str], Edge] = {}
    # An in-place op uses its functional op's formulas (Note [The entry an op uses]): read each formula once.
    targets: dict[int, list[Node]] = ix.cached("formula_targets", dict)
    for d, formulas in derivatives_of(ix, op):
        for f in formulas:
            if f.mode is not mode:
                continue
            if f.id not in targets:
                targets[f.id] = _formula_targets(ix, reg, f.formula, reg.by_full.get(d.op_full_name))
            for dst in targets[f.id]:
                if dst.key != node.key:
                    out.setdefault((dst.kind, dst.key), Edge(node, dst, kind, f.loc, f.key,
                                                             f"{f.mode} formula of {f.variables}"))
    return list(out.values())


def _formula_edges_into(ix: Index, node: Node, kind: EdgeKind) -> list[Edge]:
    """``kind`` edges into a node: the ops whose formulas of that mode call it."""
    def build() -> dict[str, list[str]]:
        reg = registry(ix)
        rev: dict[str, list[str]] = {}
        for op in reg.by_full.values():  # every op with formulas: its own entry's, or the one torchgen gives it
            if derivative_entry(ix, op) is not None:
                for e in _formula_edges(ix, op_node(op), kind):
                    rev.setdefault(e.dst.key, []).append(op.full_name)
        return rev
    reverse: dict[str, list[str]] = ix.cached(f"formula_reverse_{kind}", build)
    reg = registry(ix)
    return [e for full in reverse.get(node.key, []) for e in _formula_edges(ix, op_node(reg.by_full[full]), kind)
            if e.dst.key == node.key]


def backward_edges(ix: Index, node: Node) -> list[Edge]:
    """op -> the ops (and FunctionsManual helpers) its derivatives.yaml backward formulas call."""
    return _formula_edges(ix, node, EdgeKind.BACKWARD)


def backward_of(ix: Index, node: Node) -> list[Edge]:
    """BACKWARD edges into a node: the ops whose backward formulas call it."""
    return _formula_edges_into(ix, node, EdgeKind.BACKWARD)


def forward_ad_edges(ix: Index, node: Node) -> list[Edge]:
    """op -> the ops (and FunctionsManual helpers) its derivatives.yaml forward-mode (JVP) formulas call."""
    return _formula_edges(ix, node, EdgeKind.FORWARD_AD)


def forward_ad_of(ix: Index, node: Node) -> list[Edge]:
    """FORWARD_AD edges into a node: the ops whose forward-mode formulas call it."""
    return _formula_edges_into(ix, node, EdgeKind.FORWARD_AD)
