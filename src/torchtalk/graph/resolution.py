"""What a C++ call site reaches (graph/resolve.py computes it; graph/resolved.py reads it back from the store of
resolved calls)."""

from __future__ import annotations

from dataclasses import dataclass

from ..model import CppSymbol, StrEnum


class TargetKind(StrEnum):
    DEFS = "defs"  # definitions (best first; several when overloads remain: candidates)
    DECLS = "decls"  # only declarations were found
    OP = "op"  # an op, through the dispatcher
    STUB = "stub"  # a DispatchStub
    LOCAL = "local"  # a local variable called (a lambda, a functor): no function of that name
    BUILTIN = "builtin"  # an operator the tree overloads for none of its operands' types: the language's, no call
    UNRESOLVED = "unresolved"


@dataclass(frozen=True)
class Resolution:
    kind: TargetKind
    defs: tuple[CppSymbol, ...] = ()
    ops: tuple[str, ...] = ()  # op full names
    stub: str = ""
    spelling: str = ""  # for OP: how the call names it ("at::_ops::add_Tensor::call", "tensor method")
    candidates: bool = False  # several functions remain: the call's arguments do not say which
    std: bool = False  # UNRESOLVED: the standard library's (not in the tree)


UNRESOLVED = Resolution(TargetKind.UNRESOLVED)
UNRESOLVED_STD = Resolution(TargetKind.UNRESOLVED, std=True)
BUILTIN = Resolution(TargetKind.BUILTIN)
