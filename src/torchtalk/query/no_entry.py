"""What autograd does with an op that has no derivatives.yaml entry, own or given (Note [The entry an op uses]).

Only a CompositeImplicitAutograd kernel is differentiated through the ops it calls. For every other op torchgen's
gen_variable_type registers an Autograd kernel (Note [Registering AutogradNotImplemented boxed kernel] there):
``autogradNotImplementedFallback`` when some output is differentiable (the forward runs, a backward through it
raises that its derivative is not implemented), a kernel that records no node when none is (``argmax``), one that
records a ``NotImplemented`` node for a few (``set_``); and torch/csrc/autograd/VariableTypeManual.cpp registers
its own for ``copy_``, ``detach``, ``resize_`` and kin. The op's Autograd registration, generated or hand-written,
tells which.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..graph import graph
from ..graph.nodes import op_node
from ..graph.registry import registry
from ..model import DispatchKey, EdgeKind, Loc, NoEntry, Op, RegistrationKind
from ..store.reader import Index
from . import generated as gen_q

_FALLBACK = "autogradNotImplementedFallback"
_NOT_IMPLEMENTED_NODE = "NotImplemented"


@dataclass(frozen=True)
class AutogradWithoutEntry:
    kind: NoEntry
    kernel: str = ""  # the Autograd kernel as registered ("VariableType::copy_", "torch::autograd::autogradNot...")
    at: Loc | None = None  # where it is registered (m.impl)


def no_entry(ix: Index, op: Op) -> AutogradWithoutEntry:
    """How autograd meets ``op``, which has no derivatives.yaml entry. An Autograd registration decides before a
    CompositeImplicitAutograd kernel does: silu_backward has one (math_silu_backward) and a structured_delegate
    whose CPU and CUDA kernels take precedence over it, and gen_variable_type registers autogradNotImplementedFallback
    for its Autograd key."""
    rows = ix.q("SELECT r.target, r.file_id, r.line, f.generated FROM cpp_registration r JOIN files f ON "
                "f.id = r.file_id WHERE r.kind = ? AND r.name = ? AND r.key LIKE 'Autograd%' ORDER BY f.generated, "
                "r.file_id, r.line", (RegistrationKind.LIBRARY_IMPL.value, op.full_name))
    for target, file_id, line, generated in rows:
        at = Loc(ix.path_of(file_id), line)
        if _FALLBACK in target:
            return AutogradWithoutEntry(NoEntry.NOT_IMPLEMENTED, target, at)
        if not generated:
            return AutogradWithoutEntry(NoEntry.MANUAL, target, at)
    if rows:
        target, file_id, line, _generated = rows[0]
        nodes = graph(ix).out(op_node(op), [EdgeKind.AUTOGRAD])
        kind = (NoEntry.NOT_IMPLEMENTED if any(e.dst.key == _NOT_IMPLEMENTED_NODE for e in nodes)
                else NoEntry.NOT_DIFFERENTIABLE)
        return AutogradWithoutEntry(kind, target, Loc(ix.path_of(file_id), line))
    if any(e.key is DispatchKey.CompositeImplicitAutograd for e in registry(ix).dispatch(op)):
        return AutogradWithoutEntry(NoEntry.COMPOSITE)
    return AutogradWithoutEntry(NoEntry.UNREGISTERED if gen_q.available(ix) else NoEntry.UNKNOWN)
