"""Markdown for the autograd part of an op's trace: the derivatives.yaml entry it uses (its own, or the one torchgen
gives it: Note [The entry an op uses]), or what autograd does with an op that has none (query/no_entry.py)."""

from __future__ import annotations

from ..model import DerivativeMatch, DispatchKey, Edge, FormulaMode, NodeKind, NoEntry
from ..model.dispatch import backend_of
from ..query.trace_results import OpTrace
from .budget import STRUCTURED

FORMULA_SHOWN = 300  # characters of a derivatives.yaml formula a trace shows

# How an op without an entry of its own comes by one (Note [The entry an op uses] in graph/op_derivatives.py).
_GIVEN = {
    DerivativeMatch.VIEW_COPY: "the entry of its view op {entry}: torchgen gives a view_copy op its view's derivative",
    DerivativeMatch.FUNCTIONAL: "the entry of {entry}: torchgen gives {op} the formulas of the functional op of "
                                "its signature",
    DerivativeMatch.MUTABLE: "the entry of {entry}: torchgen gives a generated functional variant the formulas of "
                             "its mutable op",
    DerivativeMatch.FOREACH: "the entry of {entry}: torchgen makes a foreach op's formulas from those of the op it "
                             "applies to each tensor",
}


# What autograd does with an op without an entry (query/no_entry.py); the first is the composite ops' line as before.
_NO_ENTRY = {
    NoEntry.COMPOSITE: " (composite ops differentiate through the ops they call)",
    NoEntry.NOT_IMPLEMENTED: "; its Autograd kernel is {kernel}{at}: the forward runs, a backward through it raises "
                             "that its derivative is not implemented",
    NoEntry.MANUAL: "; its Autograd kernel is written by hand: {kernel}{at}",
    NoEntry.NOT_DIFFERENTIABLE: "; its Autograd kernel {kernel}{at} records no autograd node: its outputs do not "
                                "require grad (torchgen: no differentiable output, or an op that needs no derivative)",
    NoEntry.UNREGISTERED: ", and no Autograd kernel is registered for it: the dispatcher's Autograd fallback runs",
    NoEntry.UNKNOWN: ", and no CompositeImplicitAutograd kernel: its Autograd kernel is in the generated layer, "
                     "which is not indexed",
}


def _served(t: OpTrace) -> list[str]:
    """Note [An entry beside a CompositeImplicitAutograd kernel]: for a backend without a kernel of its own, the
    dispatcher fills its autograd key with the CompositeImplicitAutograd kernel before the Autograd one
    (OperatorEntry.cpp's computeDispatchTableEntry: 2.3 before 2.4), so the op's entry and its node serve only the
    backends that have a kernel (chunk's not_implemented("chunk") is never what CPU or CUDA tensors meet: chunk runs
    as split_with_sizes there)."""
    keys = [k.entry.key for k in t.kernels]
    if DispatchKey.CompositeImplicitAutograd not in keys:
        return []
    # backends (a functorch transform's key, Batched, is none: it has no autograd key of its own)
    own = list(dict.fromkeys(str(k) for k in keys if backend_of(str(k)) or k == DispatchKey.Meta))
    if not own:
        return []
    return [f"- serves only the backends with a kernel of their own ({', '.join(own[:6])}"
            f"{', ...' if len(own) > 6 else ''}): for the others (CPU, CUDA, ... without one) the "
            "CompositeImplicitAutograd kernel runs, differentiated through the ops it calls (the dispatcher takes it "
            "before the Autograd kernel)"]


def autograd_lines(t: OpTrace, out: list[str]) -> None:
    """The Autograd lines of an op's trace: the derivatives.yaml entry it uses, its formulas and what they call, or
    what autograd does with it when it has none."""
    for d in t.derivatives:
        via = f" ({_GIVEN[d.match].format(entry=d.entry_of, op=t.op.full_name)})" if d.match in _GIVEN else ""
        out.append(f"Autograd: {d.derivative.loc}  {d.derivative.schema}{via}")
        out += _served(t)
        if d.derivative.output_differentiability:
            out.append(f"- output_differentiability: {d.derivative.output_differentiability}")
        for f in d.formulas:
            tags = [t for t in (f.mode.value if f.mode is FormulaMode.FORWARD else "", f.key) if t]
            tag = f" [{', '.join(tags)}]" if tags else ""
            # a long formula is cut, and says so: its line in derivatives.yaml and the structured answer hold it
            text = f.formula if len(f.formula) <= FORMULA_SHOWN else (
                f"{f.formula[:FORMULA_SHOWN]} ... (+{len(f.formula) - FORMULA_SHOWN} characters: the structured "
                "answer and the line hold it)")
            out.append(f"- {f.variables}{tag}: {text}  ({f.loc})")
        # Only the backward formulas are the backward's calls; the forward-mode ones run for dual tensors only
        # (Note [Formula modes]).
        _calls("backward calls", d.backward, out, t.op.full_name if d.backward_itself else "")
        _calls("forward-mode AD (jvp) calls", d.forward_ad, out, t.op.full_name if d.forward_ad_itself else "")
    if t.no_entry is not None:
        w = t.no_entry
        at = f" ({w.at})" if w.at else ""
        out.append("Autograd: no derivatives.yaml entry" + _NO_ENTRY[w.kind].format(kernel=w.kernel, at=at))


def _calls(what: str, edges: list[Edge], out: list[str], itself: str = "") -> None:
    """A formula's calls in a line; ``itself``, the op when they call it (no edge: Note [Formulas torchgen writes])."""
    if edges or itself:
        names = ", ".join([f"{itself} (itself)"] * bool(itself) +
                          [e.dst.key if e.dst.kind is NodeKind.OP else e.dst.label for e in edges[:12]])
        more = f" (+{len(edges) - 12} more in {STRUCTURED})" if len(edges) > 12 else ""
        out.append(f"  {what}: {names}{more}")
