"""Virtual calls: the overrides a call of a method its class only declares may run.

Note [Virtual calls]
~~~~~~~~~~~~~~~~~~~~
``at::native::quantize_per_tensor`` is ``quantizer->quantize(self)``: ``at::Quantizer::quantize`` is pure virtual
(``virtual Tensor quantize(const Tensor& t) = 0;``), and what runs is the override of the object's class, chosen at
run time: ``PerTensorAffineQuantizer::quantize``, ``PerChannelAffineQuantizer::quantize``, ... The call resolves to
the declaration (no body: the walks stopped there, and ``cuda_kernels`` never reached the quantization kernels);
``call_edges`` adds a CALL edge to each definition of the method in a class derived from the declaring one, directly
or not, taking its parameters (``EdgeHow.OVERRIDE``: one of several callees, as a candidate is), and
``called_by`` of an override lists the call (``overridden``: the call sites that resolve to a method it overrides
may reach it; graph/cpp_callers.py).

A method with a body leads to its overrides too when it is virtual: written ``virtual``, ``override`` or ``final``
in its class (``CppSymbol.is_virtual``; an out-of-line definition is virtual when its class's declaration of it is),
or overriding a virtual method of a base. ``ProcessGroup::allreduce`` calls ``backend->allreduce(...)``, whose
``c10d::Backend::allreduce`` is ``virtual`` and only throws "does not support allreduce": what runs is
``ProcessGroupNCCL::allreduce``, ``ProcessGroupGloo::allreduce``, ... The call keeps its edge to the base's body (it
runs for an object of a class that overrides nothing) and gains one per override (``EdgeHow.OVERRIDE_OF_BODY``: the
GPU walk keeps to the body, since beside one the overrides are other classes' code, such as ``CUDAHooks``' for
``CUDAHooksInterface``'s methods, and no op's device work). A method that is not virtual
leads to none: ``Tensor::contiguous`` hides ``TensorBase::contiguous`` without overriding it, and an edge from every
``TensorBase::contiguous`` call to it would be wrong.

A base is named as written (``AffineQuantizer``, ``c10::intrusive_ptr_target``, ``SmallVectorImpl<T>``) and found
as C++ looks it up from the derived class: in the class's enclosing scopes, innermost first, then at global scope
(``PackedLinearWeight``'s ``LinearPackedParamsBase`` is ``ao::sparse::``'s in that namespace, the global one in
fbgemm_utils.h).

Only a call that dispatches leads to overrides (``dispatches``): one on an object or on ``this``; ``Base::f()``
names the function it runs. A call on ``this`` in a member function of class C runs the override of C or of a class
derived from it (``this_class``): ``set_output_raw_strided(...)`` in ``TensorIteratorBase::build`` is not every
generated structured class's.
"""

from __future__ import annotations

import re
from collections import defaultdict

from ..model import CallKind, CallSite, CppSymbol, SymbolKind
from ..store.reader import Index
from .overloads import param_types
from .signatures import signature
from .symbols import defs_by_name


class _Hierarchy:
    """The classes of the index, by qualname: their bases and the classes derived from them (directly)."""

    def __init__(self, rows: list[tuple[str, str]]):
        self.bases: dict[str, set[str]] = defaultdict(set)
        self.derived: dict[str, set[str]] = defaultdict(set)
        self.known = known = {q for q, _b in rows}
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


def _virtuals(ix: Index) -> tuple[set[tuple[str, int]], set[str]]:
    """(qualname, arity) of every method written ``virtual``, ``override`` or ``final`` in its class, and their
    names (a method of no such name is not virtual: the common case, decided without its parameters)."""
    def build() -> tuple[set[tuple[str, int]], set[str]]:
        rows = ix.q("SELECT qualname, params, name FROM cpp_symbol WHERE is_virtual")
        return {(q, _arity(p)) for q, p, _n in rows}, {n for _q, _p, n in rows}
    return ix.cached("virtual_methods", build)


def is_virtual(ix: Index, method: CppSymbol) -> bool:
    """Whether ``method`` is virtual: said so in its class (for an out-of-line definition, by its declaration there),
    or a method of a base it overrides is."""
    if method.is_virtual:
        return True
    virtuals, names = _virtuals(ix)
    if method.name not in names:
        return False
    arity = _arity(method.params)
    return any((q, arity) in virtuals for q in (method.qualname, *overridden(ix, method)))


def overrides(ix: Index, decl: CppSymbol, within: str = "") -> list[CppSymbol]:
    """The definitions a call of method ``decl`` may run besides itself (Note [Virtual calls]): the methods of its
    name and parameters defined in classes derived from its class, when ``decl`` is a declaration the tree never defines
    or a virtual method; with ``within`` (the class of a call on ``this``), those of that class and the classes
    derived from it. None for a method that is not virtual or a function that is no method."""
    if decl.kind is not SymbolKind.METHOD or "::" not in decl.qualname:
        return []
    hierarchy = _hierarchy(ix)
    if within not in hierarchy.known:  # a class the index does not hold (at::meta::structured_gather, declared in
        within = ""  # generated headers it does not read) restricts nothing
    memo: dict[tuple[int, str], list[CppSymbol]] = ix.cached("overrides", dict)
    key = (decl.id, within)
    if key not in memo:
        every = memo.get((decl.id, ""))
        if every is None:  # every override below the declaring class, read (and virtual decided) once per method
            below = hierarchy.below(decl.qualname.rsplit("::", 1)[0]) if not decl.is_definition or is_virtual(
                ix, decl) else set()
            every = memo[(decl.id, "")] = [d for d in defs_by_name(ix, decl.name) if d.kind is SymbolKind.METHOD and
                                           d.qualname.rsplit("::", 1)[0] in below and _same_params(ix, decl, d)
                                           ] if below else []
        if within:
            allowed = hierarchy.below(within) | {within}
            memo[key] = [d for d in every if d.qualname.rsplit("::", 1)[0] in allowed]
    return memo[key]


def _same_params(ix: Index, base: CppSymbol, method: CppSymbol) -> bool:
    """Whether ``method`` takes the parameters of ``base``, as an override must: as many, each of the same type,
    resolved in each one's scope or, where either does not resolve, as written without namespaces (IRVisitor
    declares ``visit`` for each node type: ``visit(const AddPtr& v)`` is overridden by ``visit(const AddPtr& v)``,
    never by ``visit(const SubPtr& v)``)."""
    written, other = signature(base.params).types, signature(method.params).types
    if len(written) != len(other):
        return False
    return all(a == b and a is not None or _bare_type(x) == _bare_type(y) for x, y, a, b in zip(
        written, other, param_types(ix, base, None), param_types(ix, method, None), strict=True))


_QUALIFIER = re.compile(r"\b\w+\s*::\s*")


def _bare_type(written: str) -> str:
    return _QUALIFIER.sub("", written).replace(" ", "")


def dispatches(call: CallSite) -> bool:
    """Whether a call of a virtual method runs the override of the object's class: a call on an object
    (``x.f()``, ``p->f()``) or on ``this`` (``f()``); a call qualified by a class (``Base::f()``, which torchgen's
    structured wrappers make of ``set_output_raw_strided``) runs that class's own."""
    return call.kind is CallKind.METHOD or call.kind is CallKind.CALL and not call.qualifier


def this_class(caller: CppSymbol, call: CallSite) -> str:
    """The class of the object a call runs a method of, when the call is on ``this`` (``set_output_raw_strided(...)``
    or ``this->f()`` in a member function): the caller's class, or a class derived from it."""
    on_this = call.kind is CallKind.CALL and not call.qualifier or call.kind is CallKind.METHOD and call.qualifier in (
        "this", "(*this)")
    member = caller.kind is SymbolKind.METHOD or caller.kind is SymbolKind.CONSTRUCTOR or caller.kind.is_structured
    return caller.qualname.rsplit("::", 1)[0] if on_this and member and "::" in caller.qualname else ""


def overridden(ix: Index, method: CppSymbol) -> set[str]:
    """The qualnames of the methods ``method`` may override: its name in the classes its class derives from."""
    if method.kind is not SymbolKind.METHOD or "::" not in method.qualname:
        return set()
    cls = method.qualname.rsplit("::", 1)[0]
    return {f"{base}::{method.name}" for base in _hierarchy(ix).above(cls)}


def _arity(params: str) -> int:
    """Parameters of a normalised parameter list: ``(const Tensor& t, int64_t n)`` -> 2, ``()`` -> 0, ``...`` counts."""
    sig = signature(params)
    return len(sig.types) + sig.variadic
