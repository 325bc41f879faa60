"""Virtual calls: the overrides a call of a method its class only declares may run.

Note [Virtual calls]
~~~~~~~~~~~~~~~~~~~~
``at::native::quantize_per_tensor`` is ``quantizer->quantize(self)``: ``at::Quantizer::quantize`` is pure virtual
(``virtual Tensor quantize(const Tensor& t) = 0;``), and what runs is the override of the object's class, chosen at
run time: ``PerTensorAffineQuantizer::quantize``, ``PerChannelAffineQuantizer::quantize``, ... The call resolves to
the declaration (no body: the walks stopped there, and ``cuda_kernels`` never reached the quantization kernels);
``call_edges`` adds a CALL edge to each definition of the method in a class derived from the declaring one, directly
or not, with the same number of parameters (``EdgeHow.OVERRIDE``: one of several callees, as a candidate is), and
``called_by`` of an override lists the call (``overridden``: the call sites that resolve to a method it overrides
may reach it; graph/cpp_callers.py).

Only a method the tree declares and never defines leads to its overrides. A method with a body may be virtual or
not, and the index does not record the ``virtual`` keyword: ``Tensor::contiguous`` hides ``TensorBase::contiguous``
without overriding it, and an edge from every ``TensorBase::contiguous`` call to it would be wrong.

A base is named as written (``AffineQuantizer``, ``c10::intrusive_ptr_target``, ``SmallVectorImpl<T>``) and found
as C++ looks it up from the derived class: in the class's enclosing scopes, innermost first, then at global scope
(``PackedLinearWeight``'s ``LinearPackedParamsBase`` is ``ao::sparse::``'s in that namespace, the global one in
fbgemm_utils.h).
"""

from __future__ import annotations

from collections import defaultdict

from ..model import CppSymbol, SymbolKind
from ..store.reader import Index
from .cpp_types import split_args
from .symbols import defs_by_name


class _Hierarchy:
    """The classes of the index, by qualname: their bases and the classes derived from them (directly)."""

    def __init__(self, rows: list[tuple[str, str]]):
        self.bases: dict[str, set[str]] = defaultdict(set)
        self.derived: dict[str, set[str]] = defaultdict(set)
        known = {q for q, _b in rows}
        for qualname, written in rows:
            for base in filter(None, (b.strip() for b in (written or "").split(";"))):
                found = _looked_up(_bare(base), qualname, known)
                if found and found != qualname:
                    self.bases[qualname].add(found)
                    self.derived[found].add(qualname)

    def below(self, cls: str) -> set[str]:
        """The classes derived from ``cls``, directly or not."""
        return _closure(cls, self.derived)

    def above(self, cls: str) -> set[str]:
        """The classes ``cls`` derives from, directly or not."""
        return _closure(cls, self.bases)


def _closure(start: str, step: dict[str, set[str]]) -> set[str]:
    out: set[str] = set()
    todo = [start]
    while todo:
        for nxt in step.get(todo.pop(), ()):
            if nxt not in out:
                out.add(nxt)
                todo.append(nxt)
    return out


def _bare(base: str) -> str:
    """A base as written, without template arguments or a leading ``::`` (``SmallVectorImpl<T>``: SmallVectorImpl)."""
    cut = base.find("<")
    return (base[:cut] if cut >= 0 else base).strip().removeprefix("::")


def _looked_up(name: str, derived: str, known: set[str]) -> str:
    """The class a base name written in class ``derived`` is: looked up in its enclosing scopes, innermost first."""
    scopes = derived.split("::")[:-1]
    for n in range(len(scopes), -1, -1):
        candidate = "::".join([*scopes[:n], name])
        if candidate in known:
            return candidate
    return ""


def _hierarchy(ix: Index) -> _Hierarchy:
    def build() -> _Hierarchy:
        return _Hierarchy(ix.q("SELECT qualname, bases FROM cpp_class WHERE qualname != ''"))
    return ix.cached("class_hierarchy", build)


def overrides(ix: Index, decl: CppSymbol) -> list[CppSymbol]:
    """The definitions a call of method declaration ``decl`` may run (Note [Virtual calls]): the methods of its name
    and arity defined in classes derived from its class. None for a definition or a function that is no method."""
    if decl.is_definition or decl.kind is not SymbolKind.METHOD or "::" not in decl.qualname:
        return []
    memo: dict[int, list[CppSymbol]] = ix.cached("overrides", dict)
    if decl.id not in memo:
        cls = decl.qualname.rsplit("::", 1)[0]
        below = _hierarchy(ix).below(cls)
        arity = _arity(decl.params)
        memo[decl.id] = [d for d in defs_by_name(ix, decl.name) if d.kind is SymbolKind.METHOD
                         and d.qualname.rsplit("::", 1)[0] in below and _arity(d.params) == arity] if below else []
    return memo[decl.id]


def overridden(ix: Index, method: CppSymbol) -> set[str]:
    """The qualnames of the methods ``method`` may override: its name in the classes its class derives from."""
    if method.kind is not SymbolKind.METHOD or "::" not in method.qualname:
        return set()
    cls = method.qualname.rsplit("::", 1)[0]
    return {f"{base}::{method.name}" for base in _hierarchy(ix).above(cls)}


def _arity(params: str) -> int:
    """Parameters of a normalised parameter list: ``(const Tensor& t, int64_t n)`` -> 2, ``()`` -> 0."""
    inner = params.strip()[1:-1].strip()
    return 0 if inner == "void" else len(split_args(inner))
