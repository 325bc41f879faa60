"""C++ types named from a scope at query time: names looked up as C++ does, classes with their bases
and members.

The extractor records types as each file writes them (Note [Type expressions] in
model/cpp.py); here a written type is resolved from the scope that wrote it: the
enclosing classes and namespaces, their ``using`` declarations and directives (those of
headers apply everywhere, those of a .cpp file only there), type aliases, and class
template parameters bound to the arguments a type was written with
(``c10::ArrayRef<int64_t>::operator[]`` returns ``int64_t``). The standard library is
not in the tree; the few of its templates that decide element and pointee types are
described in ``_STD`` (its members never resolve to the tree). Looking up a name and
walking a class's bases call each other (a member type is found through the bases, a
base is a name looked up), so both live here; the type vocabulary and the index readers
are in cpp_types.py.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import replace

from ..model import CppClass, CppSymbol, UsingKind
from ..model.cpp import BUILTINS, is_builtin_name
from ..store.reader import Index
from .cpp_types import (
    Scope,
    Ty,
    alias_params,
    applies,
    classes,
    declared_in,
    fields_of,
    is_class,
    named_usings,
    nominated,
    occupied,
    parse_type,
    scope_chain,
    split_last,
    split_qualified,
    structured_base,
    symbols_named,
)
from .signatures import signature

_MAX_DEPTH = 8

# What the standard library's templates say about their arguments: element (subscript, iteration,
# front/back/value), pointee (-> and *), tuple elements; and the return types of members that keep a chain
# going. "0" is the first template argument, "0*" a pointer to it, "=" the type itself, "size_t" a builtin.
_CONTAINER = {"size": "size_t", "length": "size_t", "empty": "bool", "front": "0", "back": "0", "at": "0",
              "operator[]": "0", "data": "0*", "begin": "0*", "end": "0*", "rbegin": "0*", "rend": "0*",
              "cbegin": "0*", "cend": "0*", "capacity": "size_t"}
_SMART = {"get": "0*", "operator->": "0*", "operator*": "0", "release": "0*", "lock": "="}
_STD: dict[str, dict[str, str]] = {
    **{f"std::{c}": _CONTAINER for c in ("vector", "array", "deque", "list", "initializer_list", "span",
                                         "valarray", "set", "unordered_set", "multiset", "forward_list")},
    "std::optional": {"value": "0", "operator*": "0", "operator->": "0*", "value_or": "0", "has_value": "bool"},
    "std::unique_ptr": _SMART, "std::shared_ptr": _SMART, "std::weak_ptr": {"lock": "std::shared_ptr"},
    "std::reference_wrapper": {"get": "0"},
    "std::basic_string": {"size": "size_t", "length": "size_t", "empty": "bool", "c_str": "char*"},
}
_ELEMENT = {"[]": "operator[]", "*": "operator*"}


# ------------------------------------------------------------------ types

def resolve_type(ix: Index, text: str, scope: Scope, depth: int = 0) -> Ty | None:
    """The type ``text`` names when written in ``scope`` (None: unknown, a template parameter, or damaged)."""
    if not text or depth > _MAX_DEPTH:
        return None
    # cycles (using A = B; using B = A;) end as unknown
    return ix.memo("resolved_types", (text, scope), lambda: _resolve_type(ix, text, scope, depth), None)


def _resolve_type(ix: Index, text: str, scope: Scope, depth: int) -> Ty | None:
    head, args, ptrs = parse_type(text)
    if not head or head in ("auto", "decltype"):
        return None
    if is_builtin_name(head):
        return Ty(head.replace("std::", "") if head.startswith("std::") and head[5:] in BUILTINS else head,
                  (), ptrs)
    known, bound = scope.bound(head)
    if known:
        return replace(bound, ptr=bound.ptr + ptrs) if bound is not None else None
    targs = tuple(resolve_type(ix, a, scope, depth + 1) for a in args)
    if head.startswith("std::"):
        name = head if head != "std::string" else "std::basic_string"
        return Ty(name, targs, ptrs)
    found = lookup_type(ix, head, scope, depth, targs)
    if found is None:
        return None
    if isinstance(found, Ty):  # an alias: its arguments come with it (an alias template's are bound to ``targs``)
        return replace(found, ptr=found.ptr + ptrs)
    return Ty(found, targs, ptrs)


def lookup_type(ix: Index, head: str, scope: Scope, depth: int = 0, targs: tuple[Ty | None, ...] = ()
                ) -> str | Ty | None:
    """A class qualname, or the type an alias stands for, that ``head`` names from ``scope`` (with ``targs``, the
    arguments written after it, bound to an alias template's parameters)."""
    parts = split_qualified(head)
    first, rest = parts[0], parts[1:]
    nonempty = occupied(ix)
    for s in scope.chain:
        if s and s not in nonempty:
            continue  # no class, alias or using in it or inside it (a function's own scope): nothing to find
        for base in _scopes_named(ix, s, first, scope.path, depth):
            target = "::".join([base, *rest]) if rest else base
            hit = _type_at(ix, target, scope.path, depth, targs)
            if hit is not None:
                return hit
        if is_class(ix, s) and not rest:
            inherited = _member_type(ix, Ty(s), first, depth)
            if inherited is not None:
                return inherited
    return None


def _scopes_named(ix: Index, scope: str, first: str, path: str, depth: int) -> list[str]:
    """Qualified names ``first`` may stand for inside ``scope``: scope::first, and through namespace aliases and
    using-directives of that scope."""
    direct = f"{scope}::{first}" if scope else first
    out = [direct]
    for target in declared_in(ix, scope, first, path, (UsingKind.NAMESPACE_ALIAS, UsingKind.DECLARATION)):
        out.append(target.lstrip(":"))
    for ns in nominated(ix, scope, path):
        out.append(f"{ns}::{first}")
    # a class of an anonymous namespace in ``scope`` is a member of it, in its own file only
    anon = f"{scope}::(anonymous)::{first}" if scope else f"(anonymous)::{first}"
    if any(c.path == path for c in classes(ix, anon)):
        out.append(anon)
    return out


def _type_at(ix: Index, qualname: str, path: str, depth: int, targs: tuple[Ty | None, ...] = ()
             ) -> str | Ty | None:
    """``qualname`` as a class, or as an alias declared in its scope (an alias template's parameters bound to
    ``targs``: ``NodePtr<Store>`` is ``std::shared_ptr<Store>``)."""
    if is_class(ix, qualname):
        return qualname
    parts = split_qualified(qualname)
    scope, name = "::".join(parts[:-1]), parts[-1]
    for kind, target, s, p in named_usings(ix, name):
        if s != scope or not applies(p, path):
            continue
        if kind is UsingKind.ALIAS:
            params = alias_params(ix).get((name, s, p), ())
            return resolve_type(ix, target, Scope(scope_chain(f"{scope}::{name}" if scope else name), p,
                                                  tuple(zip(params, targs, strict=False))), depth + 1)
        if kind is UsingKind.DECLARATION:
            hit = _type_at(ix, target.lstrip(":"), path, depth + 1, targs) if depth < _MAX_DEPTH else None
            if hit is not None:
                return hit
    if scope and depth < _MAX_DEPTH:  # not declared in its namespace: those its using-directives nominate
        for ns in nominated(ix, scope, path):  # (at::ScalarType is c10::ScalarType)
            hit = _type_at(ix, f"{ns}::{name}", path, depth + 1, targs)
            if hit is not None:
                return hit
    return None


# ------------------------------------------------------------------ classes and members

def class_fact(ix: Index, qualname: str) -> CppClass | None:
    """The primary definition of a class (not a specialization), else any."""
    found = classes(ix, qualname)
    return next((c for c in found if not c.spec), found[0] if found else None)


def class_scope(ix: Index, ty: Ty) -> Scope:
    """Scope of a class's members, its template parameters bound to ``ty``'s arguments."""
    fact = class_fact(ix, ty.name)
    params = fact.tparams.split(",") if fact and fact.tparams else []
    subst = tuple((p, ty.arg(i)) for i, p in enumerate(params))
    return Scope(scope_chain(ty.name, include_self=True), fact.path if fact else "", subst)


def bases(ix: Index, ty: Ty, depth: int = 0) -> list[Ty]:
    """Direct base classes of ``ty``, their template arguments substituted."""
    if ty.is_std or ty.is_builtin:
        return []
    memo: dict[tuple[Ty, int], list[Ty]] = ix.cached("class_bases", dict)
    key = (ty, 0)
    if key in memo:
        return memo[key]
    memo[key] = []
    out: list[Ty] = []
    fact = class_fact(ix, ty.name)
    if fact is not None:
        scope = class_scope(ix, ty)
        # a base is looked up from the class's enclosing scope, not from inside the class
        outer = Scope(scope.chain[1:], scope.path, scope.subst)
        for b in fact.bases.split(";") if fact.bases else []:
            bt = resolve_type(ix, b, outer, depth + 1)
            if bt is not None and bt.name != ty.name:
                out.append(bt)
    else:
        base = structured_base(ix, ty.name)
        if base:
            bt = resolve_type(ix, base, Scope(("at", ""), ""), depth + 1)
            if bt is not None:
                out.append(bt)
    memo[key] = out
    return out


def ancestry(ix: Index, ty: Ty) -> list[Ty]:
    """``ty`` and its bases, nearest first (breadth first, each class once)."""
    out: list[Ty] = []
    seen: set[str] = set()
    todo = [ty]
    while todo and len(out) < 32:
        t = todo.pop(0)
        if t.name in seen:
            continue
        seen.add(t.name)
        out.append(t)
        todo += bases(ix, t)
    return out


def methods(ix: Index, ty: Ty, name: str) -> tuple[Ty | None, list[CppSymbol]]:
    """Member functions ``name`` of ``ty`` as C++ finds them: in the nearest class of its ancestry that declares
    the name (a derived class's ``name`` hides the base's), with those a ``using Base::name;`` in it brings in
    (all but the ones its own of the same parameters hide). (owner, symbols); (None, []) if none."""
    for t in ancestry(ix, ty):
        found = [s for s in symbols_named(ix, f"{t.name}::{name}") if not s.kind.is_gpu_kernel]
        brought = using_base(ix, t, name)
        owner, syms = methods(ix, brought, name) if brought is not None else (None, [])
        if found:
            own = {signature(s.params).key for s in found}
            return t, found + [s for s in syms if signature(s.params).key not in own]
        if syms:
            return owner, syms
    return None, []


def _owner_classes(ix: Index, sym: CppSymbol) -> tuple[list[CppClass], list[CppClass]]:
    """The class facts of ``sym``'s owner, and those of them whose body holds ``sym`` (defined in the class)."""
    found = classes(ix, split_last(sym.qualname)[1])
    return found, [c for c in found if c.path == sym.path and c.line <= sym.line <= c.end_line]


def in_specialization(ix: Index, sym: CppSymbol) -> bool:
    """Whether ``sym`` is defined in the body of a class template's explicit specialization (``template <> class
    Vectorized<double>``, compiled only for its CPU capability), not in the primary template's."""
    return any(c.spec for c in _owner_classes(ix, sym)[1])


def own_template(ix: Index, sym: CppSymbol) -> bool:
    """Whether ``sym`` is a function template of its own (``template <typename T> TensorOptions& dtype()``), not a
    member of a class template defined out of its class under the class's ``template <class T>`` (``List<T>::size``
    in List_inl.h, which is the one function its class declares)."""
    if not sym.is_template:
        return False
    found, holding = _owner_classes(ix, sym)
    return not any(c.tparams for c in found) or bool(holding)


def using_base(ix: Index, cls: Ty, name: str) -> Ty | None:
    """The base whose ``name`` a ``using Base::name;`` inside ``cls`` brings in, or None."""
    for kind, target, s, _p in named_usings(ix, name):
        if s == cls.name and kind is UsingKind.DECLARATION:
            _, via = split_last(target)
            bt = resolve_type(ix, via, class_scope(ix, cls))
            if bt is not None and bt.name != cls.name:
                return bt
    return None


def field_type(ix: Index, ty: Ty, name: str) -> Ty | None:
    """The declared type of data member ``name`` of ``ty`` (or of a base)."""
    if ty.is_std:
        if ty.name == "std::pair" and name in ("first", "second"):
            return ty.arg(0 if name == "first" else 1)
        return None
    for t in ancestry(ix, ty):
        found = fields_of(ix, t.name).get(name)
        if found:
            return resolve_type(ix, found[0].type, class_scope(ix, t))
    return None


def namespace_variable(ix: Index, scopes: Iterable[str], name: str, path: str) -> Ty | None:
    """The type of the variable ``name`` of the first of ``scopes`` (namespaces, innermost first) that declares one
    visible from ``path``: in the namespace itself, its anonymous namespace, the namespaces its using-directives
    nominate, or brought in by a using-declaration (``constexpr ScalarType kLong`` of ``c10`` is ``at::kLong``,
    since namespace at { using namespace c10; })."""
    for s in scopes:
        homes = [s, f"{s}::(anonymous)" if s else "(anonymous)", *nominated(ix, s, path)]
        homes += [t.rsplit("::", 1)[0] for t in declared_in(ix, s, name, path, (UsingKind.DECLARATION,)) if "::" in t]
        for home in homes:
            for f in fields_of(ix, home).get(name, ()):
                if applies(f.path, path):
                    return resolve_type(ix, f.type, Scope(scope_chain(f"{home}::{name}" if home else name), f.path))
    return None


def _member_type(ix: Index, ty: Ty, name: str, depth: int) -> Ty | None:
    """A member type (``reference``, ``iterator``) of ``ty`` or its bases, resolved with its arguments bound."""
    for t in ancestry(ix, ty):
        qual = f"{t.name}::{name}"
        if is_class(ix, qual):
            return Ty(qual)
        scope = class_scope(ix, t)
        for kind, target, s, _p in named_usings(ix, name):
            if s == t.name and kind is UsingKind.ALIAS:
                return resolve_type(ix, target, scope, depth + 1)
    return None


def std_member(ty: Ty, name: str) -> Ty | None | bool:
    """Return type of a standard template's member (False: not described, so unknown)."""
    table = _STD.get(ty.name)
    if table is None or name not in table:
        return False
    how = table[name]
    if how == "=":
        return ty
    if how[0].isdigit():
        a = ty.arg(int(how[0]))
        return replace(a, ptr=a.ptr + how.count("*")) if a is not None else None
    return Ty(how.rstrip("*"), (), how.count("*")) if how in BUILTINS or how.rstrip("*") in BUILTINS else \
        Ty(how, ty.args)


def element(ix: Index, ty: Ty | None, how: str) -> Ty | None:
    """``x[i]`` / ``*x`` / ``x->`` of a value of type ``ty``: pointers, standard templates, ``operator[]`` /
    ``operator*`` / ``operator->`` of a class."""
    if ty is None:
        return None
    if ty.ptr:
        return replace(ty, ptr=ty.ptr - 1)
    if ty.is_std:
        name = _ELEMENT[how]
        got = std_member(ty, name)
        if got is False and how == "*":
            got = std_member(ty, "operator->")
            got = replace(got, ptr=got.ptr - 1) if isinstance(got, Ty) and got.ptr else None
        return got if isinstance(got, Ty) else None
    for op in ((_ELEMENT[how],) if how == "[]" else ("operator->", "operator*")):
        owner, syms = methods(ix, ty, op)
        if syms:
            rt = return_type(ix, syms[0], owner or ty)
            if rt is not None and op == "operator->":
                return replace(rt, ptr=rt.ptr - 1) if rt.ptr else rt
            return rt
    return None


def return_type(ix: Index, sym: CppSymbol, owner: Ty | None) -> Ty | None:
    """What calling ``sym`` gives, its class's template parameters bound to ``owner``'s arguments."""
    if not sym.ret or sym.ret in ("auto", "decltype(auto)"):
        return None
    if owner is not None:
        scope = class_scope(ix, owner)
    else:
        scope = Scope(scope_chain(sym.qualname), sym.path)
    ty = resolve_type(ix, sym.ret, scope)
    if ty is not None and owner is not None and ty.name == owner.name and not ty.args:
        ty = replace(owner, ptr=ty.ptr)  # the injected class name: MaybeOwned inside MaybeOwned<T> is MaybeOwned<T>
    return ty
