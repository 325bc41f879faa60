"""C++ types at query time: the vocabulary (``Ty``, ``Scope``), type text taken apart, and what the index holds
about classes, fields, usings and functions by qualified name. Resolving a written type from its scope, and classes
with their bases and members, are in cpp_lookup.py.

torchgen's structured kernel classes are not in the tree: their bases follow torchgen's rule (``structured_<kernel>``
derives from the meta class ``at::meta::structured_<functional op>``, which derives from the op's
``structured_inherits:`` or ``at::impl::MetaBase``).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from functools import lru_cache

from ..model import ClassKind, CppClass, CppField, CppSymbol, UsingKind
from ..model.cpp import is_builtin_name, split_template_args
from ..store.codec import codec, rows_facts
from ..store.reader import Index
from .cpp_text import split_args
from .registry import registry
from .symbols import SYMBOL_COLS, pasted_match, pasted_symbols

_HEADER_EXT = (".h", ".hpp", ".cuh", ".hh", ".inl")


@dataclass(frozen=True, slots=True)
class Ty:
    """A resolved type: a class of the tree by qualified name, a standard template ("std::vector"), or a builtin;
    with its template arguments (None where unknown or not a type) and pointer depth."""

    name: str
    args: tuple[Ty | None, ...] = ()
    ptr: int = 0

    @property
    def is_builtin(self) -> bool:
        return is_builtin_name(self.name)

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


_BRACKETS = re.compile(r"::|[<>()]")


@lru_cache(maxsize=1 << 16)
def split_qualified(name: str) -> tuple[str, ...]:
    """``at::native::(anonymous)::f`` -> parts, ``::`` inside template arguments or parentheses kept.
    Resolving one answer's calls splits the same few thousand names tens of thousands of times: memoised, and
    the scan visits only the separators and brackets (most names are new to an answer: every ``(anonymous)``
    caller's qualified name)."""
    if "<" not in name and ">" not in name:
        plain = name.replace("(anonymous)", "") if "(" in name else name
        if "(" not in plain and ")" not in plain:
            return tuple(name.split("::"))  # no brackets but "(anonymous)"s (no "::" inside them)
    parts, depth, start = [], 0, 0
    for m in _BRACKETS.finditer(name):
        tok = m.group()
        if tok == "::":
            if depth == 0:
                parts.append(name[start:m.start()])
                start = m.end()
        elif tok in "<(":
            depth += 1
        else:
            depth -= 1
    parts.append(name[start:])
    return tuple(parts)


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
    t, inner = split_template_args(t)
    args = split_args(inner)
    if "<" in t:  # Outer<T>::Inner: outer arguments dropped
        t = "::".join(p.split("<")[0] for p in split_qualified(t))
    return t.strip(), args, ptrs


# ------------------------------------------------------------------ index readers (memoised per index version)

_CLASS_COLS = codec(CppClass).select()
_FIELD_COLS = codec(CppField).select()


def classes(ix: Index, qualname: str) -> list[CppClass]:
    """The classes of this qualified name (their declarations and definitions, in file order)."""
    return all_classes(ix).get(qualname, [])


def all_classes(ix: Index) -> dict[str, list[CppClass]]:
    """qualified name -> classes, read in one query per index version (~9k in PyTorch 2.6.0, ~50 ms; the server
    loads it in its warm-up): name lookup asks for thousands of scopes an answer, nearly all of them no class."""
    def load() -> dict[str, list[CppClass]]:
        out: dict[str, list[CppClass]] = {}
        for c in rows_facts(CppClass, ix.q(f"SELECT {_CLASS_COLS} FROM cpp_class ORDER BY file_id, line"),
                            ix.paths()):
            out.setdefault(c.qualname, []).append(c)
        return out
    table: dict[str, list[CppClass]] = ix.cached("cpp_classes", load)
    return table


def is_class(ix: Index, qualname: str) -> bool:
    return bool(classes(ix, qualname)) or structured_base(ix, qualname) is not None


def is_enum(ix: Index, qualname: str) -> bool:
    found = classes(ix, qualname)
    return bool(found) and all(c.kind is ClassKind.ENUM for c in found)


def symbols_named(ix: Index, qualname: str) -> list[CppSymbol]:
    """Functions of this qualified name; failing that, those a name-pasting macro made in its scope
    (``c10::Scalar::toDouble`` is ``c10::Scalar::to##name##``)."""
    memo: dict[str, list[CppSymbol]] = ix.cached("symbols_by_qualname", dict)
    found = memo.get(qualname)
    if found is None:
        # Most names a lookup tries (each enclosing scope, each nominated namespace) name nothing: no query.
        found = rows_facts(CppSymbol, ix.q(f"SELECT {SYMBOL_COLS} FROM cpp_symbol WHERE qualname = ? "
                                           "ORDER BY file_id, line", (qualname,)), ix.paths()
                           ) if qualname in symbol_qualnames(ix) else []
        pasted = pasted_symbols(ix)
        # a scope is a prefix of the name up to a "::": only then can a pasting macro of that scope make it
        if not found and any(not scope or qualname.startswith(f"{scope}::") for scope in pasted):
            name, scope = split_last(qualname)
            found = [s for pattern, s in pasted.get(scope, ()) if pasted_match(pattern, name)]
        memo[qualname] = found
    return found


def symbol_qualnames(ix: Index) -> frozenset[str]:
    """Every qualified name of a C++ function in the index (~84k in PyTorch 2.6.0, ~0.2 s to load; the
    server loads it in its warm-up, and with it the scopes those names are in: ``symbol_scopes``)."""
    def load() -> frozenset[str]:
        names = frozenset(r[0] for r in ix.q("SELECT DISTINCT qualname FROM cpp_symbol"))
        ix.cached("symbol_scopes", lambda: _prefixes(names))
        return names
    names: frozenset[str] = ix.cached("symbol_qualnames", load)
    return names


def _prefixes(names: frozenset[str]) -> frozenset[str]:
    """Every text before a ``::`` of every name (a superset of the scopes, ``::`` in template arguments too)."""
    out: set[str] = set()
    for n in names:
        i = n.find("::")
        while i >= 0:
            out.add(n[:i])
            i = n.find("::", i + 2)
    return frozenset(out)


def occupied(ix: Index) -> frozenset[str]:
    """Scopes (namespaces, classes, functions) where something can be found by name: those of the functions,
    using-declarations, aliases and using-directives, the classes, the structured kernel classes, the pasted
    functions, and every scope enclosing one of those. Name lookup tries every enclosing scope of a caller
    with every qualifier the call writes (``at::native::f::at``, ``at::native::at``): a scope not among these
    holds nothing, nor does any scope inside it."""
    def load() -> frozenset[str]:
        symbol_qualnames(ix)
        scopes: set[str] = set(ix.cached("symbol_scopes", lambda: _prefixes(symbol_qualnames(ix))))
        scopes.update(s for entries in all_usings(ix).values() for _k, _t, s, _p in entries)
        scopes.update(directives(ix))
        scopes.update(all_classes(ix))
        scopes.update(ix.cached("structured_classes", lambda: _structured_table(ix)))
        scopes.update(pasted_symbols(ix))
        return frozenset(scopes | _prefixes(frozenset(scopes)))  # closed: a scope holding nothing has no inner one
    table: frozenset[str] = ix.cached("occupied_scopes", load)
    return table


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
    return all_usings(ix).get(alias, [])


def all_usings(ix: Index) -> dict[str, list[tuple[UsingKind, str, str, str]]]:
    """alias -> (kind, target, scope, path) of every alias, using-declaration and namespace alias, read in one
    query per index version (~7k in PyTorch 2.6.0; loaded in the server's warm-up)."""
    def load() -> dict[str, list[tuple[UsingKind, str, str, str]]]:
        out: dict[str, list[tuple[UsingKind, str, str, str]]] = {}
        for k, n, s, f, alias in ix.q("SELECT kind, name, scope, file_id, alias FROM cpp_using WHERE kind != ? "
                                      "ORDER BY id", (UsingKind.NAMESPACE.value,)):
            out.setdefault(alias, []).append((UsingKind(k), n, s, ix.path_of(f)))
        return out
    table: dict[str, list[tuple[UsingKind, str, str, str]]] = ix.cached("named_usings", load)
    return table


def alias_params(ix: Index) -> dict[tuple[str, str, str], tuple[str, ...]]:
    """(alias, scope, path) -> the parameters of every alias template (``template <typename Node> using NodePtr =
    std::shared_ptr<Node>;``: ("Node",)), read in one query per index version (~130 in PyTorch 2.6.0)."""
    def load() -> dict[tuple[str, str, str], tuple[str, ...]]:
        return {(alias, scope, ix.path_of(f)): tuple(tp.split(",")) for alias, scope, f, tp in ix.q(
            "SELECT alias, scope, file_id, tparams FROM cpp_using WHERE kind = ? AND tparams != ''",
            (UsingKind.ALIAS.value,))}
    table: dict[tuple[str, str, str], tuple[str, ...]] = ix.cached("alias_params", load)
    return table


def directives(ix: Index) -> dict[str, list[tuple[str, str]]]:
    """scope -> [(namespace as written, path)] of every ``using namespace``."""
    def load() -> dict[str, list[tuple[str, str]]]:
        out: dict[str, list[tuple[str, str]]] = {}
        for name, scope, f in ix.q("SELECT name, scope, file_id FROM cpp_using WHERE kind = ?",
                                   (UsingKind.NAMESPACE.value,)):
            out.setdefault(scope, []).append((name, ix.path_of(f)))
        return out
    table: dict[str, list[tuple[str, str]]] = ix.cached("using_directives", load)
    return table


# Note [Using-directive targets]
# A using-directive's namespace name is looked up like any name, from the directive's scope outward:
# SobolEngineOps.cpp's `namespace at::native { using namespace sobol_utils; }` nominates at::native::sobol_utils
# (SobolEngineOpsUtils.h), and the MPS files' `using namespace mps;` in at::native nominates at::native::mps, not
# a ::mps that does not exist. The first enclosing scope s (the directive's own first) where s::name is a scope
# the index holds something in (``occupied``) is the namespace; a name written with a leading :: (kept so at
# extraction) is absolute, and so is one found nowhere (std, a library outside the tree).

def directive_targets(ix: Index) -> dict[str, list[tuple[str, str]]]:
    """scope -> [(nominated namespace, path)] of every ``using namespace``, each namespace found from its scope
    (Note [Using-directive targets])."""
    def target(held: frozenset[str], scope: str, written: str) -> str:
        return written[2:] if written.startswith("::") else next(
            (ns for s in scope_chain(scope, include_self=True) if (ns := f"{s}::{written}" if s else written) in held),
            written)
    table: dict[str, list[tuple[str, str]]] = ix.cached("directive_targets", lambda: {
        scope: [(target(occupied(ix), scope, name), p) for name, p in entries]
        for scope, entries in directives(ix).items()})
    return table


def nominated(ix: Index, scope: str, path: str) -> tuple[str, ...]:
    """Namespaces a using-directive in ``scope`` makes visible there, for code in ``path``, and those their own
    using-directives nominate, as C++ makes them transitive (``namespace torch { using namespace at; }`` and
    ``namespace at { using namespace c10; }``: ``ScalarType`` written in ``torch::autograd`` is
    ``c10::ScalarType``). Memoised: every lookup of every call asks it for each enclosing scope."""
    memo: dict[tuple[str, str], tuple[str, ...]] = ix.cached("nominated", dict)
    key = (scope, path)
    found = memo.get(key)
    if found is None:
        table = directive_targets(ix)
        seen: dict[str, None] = {}
        todo = [scope]
        while todo and len(seen) < 32:
            for ns, p in table.get(todo.pop(0), ()):
                if ns != scope and ns not in seen and applies(p, path):
                    seen[ns] = None
                    todo.append(ns)
        found = memo[key] = tuple(seen)
    return found


def declared_in(ix: Index, scope: str, name: str, path: str, kinds: tuple[UsingKind, ...]) -> list[str]:
    """Targets of using-declarations / aliases named ``name`` in ``scope`` that reach ``path``."""
    return [t for k, t, s, p in named_usings(ix, name) if s == scope and k in kinds and applies(p, path)]


def split_last(qualname: str) -> tuple[str, str]:
    parts = split_qualified(qualname)
    return parts[-1], "::".join(parts[:-1])


# ------------------------------------------------------------------ torchgen's structured classes

def structured_base(ix: Index, qualname: str) -> str | None:
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
