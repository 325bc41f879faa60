"""Edges of ops to what their derivatives.yaml formulas call: BACKWARD from the backward formulas, FORWARD_AD from
the forward-mode (JVP) ones (Note [Formula modes] in model/kinds.py; a formula's calls: Note [Formula calls]).

Note [Formulas torchgen writes]
~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
``auto_element_wise`` and ``auto_linear`` are no formulas: torchgen's ``load_derivatives.py``
(``postprocess_forward_derivatives``) writes one in their place, and its calls are the JVP's. For
``auto_element_wise`` (one differentiable input ``x``) it is the entry's backward formula with ``grad`` replaced by
``x_t.conj()`` and ``x`` by ``x_p``, conjugated: sigmoid's ``sigmoid_backward(grad, result)`` becomes
``(sigmoid_backward(self_t.conj(), result)).conj()`` in VariableType. For ``auto_linear`` it is the op called again
on its inputs' tangents, ``at::name(self_t, dim, dtype)`` (``x_t.name(...)`` for a method-only op): the op calls
itself. ``generated_formula`` writes the same text, and the calls are read from it as from any formula.

A formula calling the op of its own entry (``mul``'s ``other_t * self_p + ...``, an ``auto_linear``) is no edge (an
op is no caller of itself in a walk); ``calls_itself`` says so for the answers that list a formula's calls.
"""

from __future__ import annotations

import re

from ..model import DerivativeFormula, Edge, EdgeKind, FormulaMode, Node, NodeKind, Op, Variant
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
AUTO_ELEMENT_WISE, AUTO_LINEAR = "auto_element_wise", "auto_linear"  # Note [Formulas torchgen writes]


def _ident(name: str) -> re.Pattern[str]:
    return re.compile(rf"(^|\W){re.escape(name)}($|\W)")  # torchgen's IDENT_REGEX


def generated_formula(f: DerivativeFormula, formulas: list[DerivativeFormula], entry: Op | None) -> str:
    """The formula torchgen writes for an ``auto_element_wise`` / ``auto_linear`` marker, else ``f``'s own text
    (Note [Formulas torchgen writes]); a marker torchgen would refuse (two differentiable inputs) stays as written."""
    text = f.formula.strip()
    if f.mode is not FormulaMode.FORWARD or text not in (AUTO_ELEMENT_WISE, AUTO_LINEAR):
        return f.formula
    backward = [b for b in formulas if b.mode is FormulaMode.BACKWARD and b.key == f.key]
    inputs = [v.strip() for b in backward for v in b.variables.split(",")]
    if text == AUTO_ELEMENT_WISE:
        if len(backward) != 1 or len(inputs) != 1:
            return f.formula
        (x,) = inputs
        fw = _ident("grad").sub(lambda m: f"{m.group(1)}{x}_t.conj(){m.group(2)}", backward[0].formula)
        return f"({_ident(x).sub(lambda m: f'{m.group(1)}{x}_p{m.group(2)}', fw)}).conj()"
    if entry is None:
        return f.formula
    args = [f"{a.name}_t" if a.name in inputs else a.name for a in entry.schema.arguments]
    if Variant.FUNCTION in entry.variants or not args:
        return f"at::{entry.name}({', '.join(args)})"
    return f"{args[0]}.{entry.name}({', '.join(args[1:])})"


def _formula_edges(ix: Index, node: Node, kind: EdgeKind) -> list[Edge]:
    """op -> the ops (and FunctionsManual helpers) its derivatives.yaml formulas of ``kind``'s mode call: its
    backward formulas for BACKWARD, its forward-mode (JVP) ones for FORWARD_AD (Note [Formula modes])."""
    reg = registry(ix)
    op = _op(reg, node)
    if op is None:
        return []
    out: dict[tuple[str, str], Edge] = {}
    for f, dst in _targets(ix, reg, op, _MODE_OF[kind]):
        if dst.key != node.key:
            out.setdefault((dst.kind, dst.key),
                           Edge(node, dst, kind, f.loc, f.key, f"{f.mode} formula of {f.variables}"))
    return list(out.values())


def _targets(ix: Index, reg: OpRegistry, op: Op, mode: FormulaMode) -> list[tuple[DerivativeFormula, Node]]:
    """What each formula of ``mode`` of the entry ``op`` uses calls, in order."""
    # An in-place op uses its functional op's formulas (Note [The entry an op uses]): read each formula once.
    targets: dict[int, list[Node]] = ix.cached("formula_targets", dict)
    out: list[tuple[DerivativeFormula, Node]] = []
    for d, formulas in derivatives_of(ix, op):
        entry = reg.by_full.get(d.op_full_name)
        for f in formulas:
            if f.mode is mode:
                if f.id not in targets:
                    targets[f.id] = _formula_targets(ix, reg, generated_formula(f, formulas, entry), entry)
                out += [(f, dst) for dst in targets[f.id]]
    return out


def calls_itself(ix: Index, node: Node, kind: EdgeKind) -> bool:
    """Whether ``node``'s formulas of ``kind``'s mode call the op itself (no edge: Note [Formulas torchgen
    writes])."""
    reg = registry(ix)
    op = _op(reg, node)
    return op is not None and any(dst.key == node.key for _f, dst in _targets(ix, reg, op, _MODE_OF[kind]))


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
