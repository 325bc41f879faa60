"""C++ types at query time: names looked up as C++ does, classes with their bases and members.

The extractor records types as each file writes them (Note [Type expressions] in
model/cpp.py); here a written type is resolved from the scope that wrote it: the
enclosing classes and namespaces, their ``using`` declarations and directives (those of
headers apply everywhere, those of a .cpp file only there), type aliases, and class
template parameters bound to the arguments a type was written with
(``c10::ArrayRef<int64_t>::operator[]`` returns ``int64_t``). The standard library is
not in the tree; the few of its templates that decide element and pointee types are
described in ``_STD`` (its members never resolve to the tree).

torchgen's structured kernel classes are not in the tree either: their bases follow
torchgen's rule (``structured_<kernel>`` derives from the meta class
``at::meta::structured_<functional op>``, which derives from the op's
``structured_inherits:`` or ``at::impl::MetaBase``).
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace

from ..model import CppClass, CppField, CppSymbol, UsingKind
from ..store.codec import codec, rows_facts
from ..store.reader import Index
from .registry import registry
from .symbols import SYMBOL_COLS, pasted_match, pasted_symbols

_BUILTINS = frozenset((
    "void bool char wchar_t char16_t char32_t short int long float double unsigned signed "
    "int8_t int16_t int32_t int64_t uint8_t uint16_t uint32_t uint64_t size_t ssize_t ptrdiff_t intptr_t "
    "uintptr_t std::size_t std::int64_t std::int32_t std::uint8_t std::nullptr_t nullptr_t").split())
_HEADER_EXT = (".h", ".hpp", ".cuh", ".hh", ".inl")
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


@dataclass(frozen=True, slots=True)
class Ty:
    """A resolved type: a class of the tree by qualified name, a standard template ("std::vector"), or a builtin;
    with its template arguments (None where unknown or not a type) and pointer depth."""

    name: str
    args: tuple[Ty | None, ...] = ()
    ptr: int = 0

    @property
    def is_builtin(self) -> bool:
        return self.name in _BUILTINS

    @property
    def is_std(self) -> bool:
        return self.name.startswith("std::")

    @property
    def is_tensor(self) -> bool:
        return self.ptr == 0 and self.name in ("at::Tensor", "at::TensorBase")

    def arg(self, i: int) -> Ty | None:
        return self.args[i] if i < len(self.args) else None

    def __str__(self) -> str:
        inner = f"<{', '.join(str(a) if a else '?' for a in self.args)}>" if self.args else ""
        return f"{self.name}{inner}{'*' * self.ptr}"


@dataclass(frozen=True)
class Scope:
    """Where a name is looked up: enclosing scopes innermost first (ending with the global ""), the file (its
    own using-directives and aliases), and template parameters bound to types."""

    chain: tuple[str, ...]
    path: str
    subst: tuple[tuple[str, Ty | None], ...] = field(default=())

    def bound(self, name: str) -> tuple[bool, Ty | None]:
        for k, v in self.subst:
            if k == name:
                return True, v
        return False, None


def split_qualified(name: str) -> list[str]:
    """``at::native::(anonymous)::f`` -> parts, ``::`` inside template arguments or parentheses kept."""
    parts, depth, start = [], 0, 0
    i = 0
    while i < len(name):
        ch = name[i]
        if ch in "<(":
            depth += 1
        elif ch in ">)":
            depth -= 1
        elif ch == ":" and depth == 0 and name.startswith("::", i):
            parts.append(name[start:i])
            i += 2
            start = i
            continue
        i += 1
    parts.append(name[start:])
    return parts


def scope_chain(qualname: str, include_self: bool = False) -> tuple[str, ...]:
    """'at::native::(anonymous)::f' -> ('at::native::(anonymous)', 'at::native', 'at', '')."""
    parts = split_qualified(qualname)
    if not include_self:
        parts = parts[:-1]
    return tuple("::".join(parts[:i]) for i in range(len(parts), -1, -1))


def caller_scope(caller: CppSymbol) -> Scope:
    """Names in a function's body are looked up in the function itself (its local aliases), then outward."""
    return Scope(scope_chain(caller.qualname, include_self=True), caller.path)


def is_header(path: str) -> bool:
    return path.endswith(_HEADER_EXT)


def applies(fact_path: str, caller_path: str) -> bool:
    """A using or alias of a header reaches every file that may include it; one of a .cpp file only that file."""
    return fact_path == caller_path or is_header(fact_path)


def parse_type(text: str) -> tuple[str, list[str], int]:
    """``const c10::ArrayRef<int64_t>*&`` -> ("c10::ArrayRef", ["int64_t"], 1); template arguments of the last
    component only (those of outer components are dropped)."""
    t = text.strip()
    ptrs = 0
    while True:  # "const T* const&": a reference binds as the object; pointers counted; top-level const dropped
        if t.endswith("&"):
            t = t.rstrip("&").rstrip()
        elif t.endswith("*"):
            ptrs += 1
            t = t[:-1].rstrip()
        elif t.endswith(" const") or t.endswith("*const"):
            t = t[:-5].rstrip()
        else:
            break
    t = t.replace("const ", "").replace("typename ", "").strip().lstrip(":")
    args: list[str] = []
    if t.endswith(">"):
        depth = 0
        for i in range(len(t) - 1, -1, -1):
            ch = t[i]
            if ch == ">":
                depth += 1
            elif ch == "<":
                depth -= 1
                if depth == 0:
                    args = split_args(t[i + 1:-1])
                    t = t[:i]
                    break
    if "<" in t:  # Outer<T>::Inner: outer arguments dropped
        t = "::".join(p.split("<")[0] for p in split_qualified(t))
    return t.strip(), args, ptrs


def split_args(text: str) -> list[str]:
    """Top-level comma split (brackets and template arguments kept together)."""
    out, depth, start = [], 0, 0
    for i, ch in enumerate(text):
        if ch in "<([":
            depth += 1
        elif ch in ">)]":
            depth -= 1
        elif ch == "," and depth == 0:
            out.append(text[start:i].strip())
            start = i + 1
    out.append(text[start:].strip())
    return [a for a in out if a]


# ------------------------------------------------------------------ index readers (memoised per index version)

_CLASS_COLS = codec(CppClass).select()
_FIELD_COLS = codec(CppField).select()


def classes(ix: Index, qualname: str) -> list[CppClass]:
    memo: dict[str, list[CppClass]] = ix.cached("cpp_classes", dict)
    if qualname not in memo:
        memo[qualname] = rows_facts(CppClass, ix.q(f"SELECT {_CLASS_COLS} FROM cpp_class WHERE qualname = ? "
                                                   "ORDER BY file_id, line", (qualname,)), ix.paths())
    return memo[qualname]


def is_class(ix: Index, qualname: str) -> bool:
    return bool(classes(ix, qualname)) or _structured_base(ix, qualname) is not None


def symbols_named(ix: Index, qualname: str) -> list[CppSymbol]:
    """Functions of this qualified name; failing that, those a name-pasting macro made in its scope
    (``c10::Scalar::toDouble`` is ``c10::Scalar::to##name##``)."""
    memo: dict[str, list[CppSymbol]] = ix.cached("symbols_by_qualname", dict)
    if qualname not in memo:
        found = rows_facts(CppSymbol, ix.q(f"SELECT {SYMBOL_COLS} FROM cpp_symbol WHERE qualname = ? "
                                           "ORDER BY file_id, line", (qualname,)), ix.paths())
        if not found:
            name, scope = split_last(qualname)
            found = [s for pattern, s in pasted_symbols(ix).get(scope, ()) if pasted_match(pattern, name)]
        memo[qualname] = found
    return memo[qualname]


def fields_of(ix: Index, cls: str) -> dict[str, list[CppField]]:
    memo: dict[str, dict[str, list[CppField]]] = ix.cached("cpp_fields", dict)
    if cls not in memo:
        out: dict[str, list[CppField]] = {}
        for f in rows_facts(CppField, ix.q(f"SELECT {_FIELD_COLS} FROM cpp_field WHERE cls = ?", (cls,)), ix.paths()):
            out.setdefault(f.name, []).append(f)
        memo[cls] = out
    return memo[cls]


def named_usings(ix: Index, alias: str) -> list[tuple[UsingKind, str, str, str]]:
    """(kind, target, scope, path) of the aliases, using-declarations and namespace aliases named ``alias``."""
    memo: dict[str, list[tuple[UsingKind, str, str, str]]] = ix.cached("named_usings", dict)
    if alias not in memo:
        memo[alias] = [(UsingKind(k), n, s, ix.path_of(f)) for k, n, s, f in ix.q(
            "SELECT kind, name, scope, file_id FROM cpp_using WHERE alias = ? AND kind != ?",
            (alias, UsingKind.NAMESPACE.value))]
    return memo[alias]


def directives(ix: Index) -> dict[str, list[tuple[str, str]]]:
    """scope -> [(nominated namespace, path)] of every ``using namespace``."""
    def load() -> dict[str, list[tuple[str, str]]]:
        out: dict[str, list[tuple[str, str]]] = {}
        for name, scope, f in ix.q("SELECT name, scope, file_id FROM cpp_using WHERE kind = ?",
                                   (UsingKind.NAMESPACE.value,)):
            out.setdefault(scope, []).append((name, ix.path_of(f)))
        return out
    table: dict[str, list[tuple[str, str]]] = ix.cached("using_directives", load)
    return table


def nominated(ix: Index, scope: str, path: str) -> list[str]:
    """Namespaces a using-directive in ``scope`` makes visible there, for code in ``path``."""
    out = []
    for name, p in directives(ix).get(scope, ()):
        if applies(p, path):
            target = name if name.startswith("::") or not scope else name
            out.append(target.lstrip(":"))
    return out


def declared_in(ix: Index, scope: str, name: str, path: str, kinds: tuple[UsingKind, ...]) -> list[str]:
    """Targets of using-declarations / aliases named ``name`` in ``scope`` that reach ``path``."""
    return [t for k, t, s, p in named_usings(ix, name) if s == scope and k in kinds and applies(p, path)]


# ------------------------------------------------------------------ types

def resolve_type(ix: Index, text: str, scope: Scope, depth: int = 0) -> Ty | None:
    """The type ``text`` names when written in ``scope`` (None: unknown, a template parameter, or damaged)."""
    if not text or depth > _MAX_DEPTH:
        return None
    key = (text, scope)
    memo: dict[tuple[str, Scope], Ty | None] = ix.cached("resolved_types", dict)
    if key in memo:
        return memo[key]
    memo[key] = None  # cycles (using A = B; using B = A;) end as unknown
    memo[key] = ty = _resolve_type(ix, text, scope, depth)
    return ty


def _resolve_type(ix: Index, text: str, scope: Scope, depth: int) -> Ty | None:
    head, args, ptrs = parse_type(text)
    if not head or head in ("auto", "decltype"):
        return None
    if head in _BUILTINS or " " in head and all(p in _BUILTINS for p in head.split()):
        return Ty(head.replace("std::", "") if head.startswith("std::") and head[5:] in _BUILTINS else head,
                  (), ptrs)
    known, bound = scope.bound(head)
    if known:
        return replace(bound, ptr=bound.ptr + ptrs) if bound is not None else None
    targs = tuple(resolve_type(ix, a, scope, depth + 1) for a in args)
    if head.startswith("std::"):
        name = head if head != "std::string" else "std::basic_string"
        return Ty(name, targs, ptrs)
    found = lookup_type(ix, head, scope, depth)
    if found is None:
        return None
    if isinstance(found, Ty):  # an alias: its arguments, if any, come with it
        return replace(found, ptr=found.ptr + ptrs)
    return Ty(found, targs, ptrs)


def lookup_type(ix: Index, head: str, scope: Scope, depth: int = 0) -> str | Ty | None:
    """A class qualname, or the type an alias stands for, that ``head`` names from ``scope``."""
    parts = split_qualified(head)
    first, rest = parts[0], parts[1:]
    for s in scope.chain:
        for base in _scopes_named(ix, s, first, scope.path, depth):
            target = "::".join([base, *rest]) if rest else base
            hit = _type_at(ix, target, scope.path, depth)
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
    return out


def _type_at(ix: Index, qualname: str, path: str, depth: int) -> str | Ty | None:
    """``qualname`` as a class, or as an alias declared in its scope."""
    if is_class(ix, qualname):
        return qualname
    parts = split_qualified(qualname)
    scope, name = "::".join(parts[:-1]), parts[-1]
    for kind, target, s, p in named_usings(ix, name):
        if s != scope or not applies(p, path):
            continue
        if kind is UsingKind.ALIAS:
            return resolve_type(ix, target, Scope(scope_chain(f"{scope}::{name}" if scope else name), p),
                                depth + 1)
        if kind is UsingKind.DECLARATION:
            hit = _type_at(ix, target.lstrip(":"), path, depth + 1) if depth < _MAX_DEPTH else None
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
        base = _structured_base(ix, ty.name)
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
    the name (a derived class's ``name`` hides the base's). (owner, symbols); (None, []) if none."""
    for t in ancestry(ix, ty):
        found = [s for s in symbols_named(ix, f"{t.name}::{name}") if not s.kind.is_gpu_kernel]
        if found:
            return t, found
        brought = using_base(ix, t, name)
        if brought is not None:
            owner, syms = methods(ix, brought, name)
            if syms:
                return owner, syms
    return None, []


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


def split_last(qualname: str) -> tuple[str, str]:
    parts = split_qualified(qualname)
    return parts[-1], "::".join(parts[:-1])


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
    return Ty(how.rstrip("*"), (), how.count("*")) if how in _BUILTINS or how.rstrip("*") in _BUILTINS else \
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


# ------------------------------------------------------------------ torchgen's structured classes

def _structured_base(ix: Index, qualname: str) -> str | None:
    """The base torchgen gives a structured kernel class (not in the tree): see the module docstring."""
    if "::structured_" not in qualname:
        return None
    table = ix.cached("structured_classes", lambda: _structured_table(ix))
    return table.get(qualname)


def _structured_table(ix: Index) -> dict[str, str]:
    reg = registry(ix)
    out: dict[str, str] = {}
    for op in reg.by_id.values():
        if not op.structured:
            continue
        functional = next((o for o in reg.delegating.get(op.full_name, []) if o.schema.is_functional), None)
        meta = (functional.full_name if functional else op.full_name.removesuffix(".out")).replace(".", "_")
        parent = op.structured_inherits or "at::impl::MetaBase"
        out[f"at::meta::structured_{meta}"] = parent if "::" in parent else f"at::{parent}"
        for entry in reg.dispatch(op):
            if entry.structured:
                out[f"at::native::structured_{entry.kernel.split('::')[-1]}"] = f"at::meta::structured_{meta}"
    return out
