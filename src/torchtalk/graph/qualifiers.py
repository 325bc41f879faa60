"""How a call can qualify the name of the function it calls: what the callers of a function read (cpp_callers.callers).

A call site names a function bare, by any tail of its scope (native::f, at::native::f), or through a namespace that
imports it (Note [Qualified through another namespace]). The callers of a function are looked for among the sites
written with one of these qualifiers; each must still resolve to it.
"""

from __future__ import annotations

from collections import defaultdict

from ..model import CppSymbol, UsingKind
from ..store.reader import Index
from .cpp_types import all_usings, directive_targets


def qualifiers(ix: Index, target: CppSymbol) -> frozenset[str]:
    """Every qualifier a call naming ``target`` may write: its own scope's tails, and its importers' (Note
    [Qualified through another namespace])."""
    return frozenset(_qualifiers(target)) | _imported_qualifiers(ix, target) | _declared_here(ix, target)


def _qualifiers(target: CppSymbol) -> tuple[str, ...]:
    """How a call can qualify ``target``'s name: not at all, or by any tail of its scope (native::f, at::native::f)."""
    return ("", *_tails(_scope(target)), "::")


def _scope(target: CppSymbol) -> list[str]:
    """The names of ``target``'s scope, outermost first (an anonymous namespace is no name a call writes)."""
    return [p for p in target.qualname.split("::")[:-1] if p != "(anonymous)"]


def _tails(scope: list[str]) -> list[str]:
    tails = ["::".join(scope[i:]) for i in range(len(scope))]
    return [*tails, *(f"::{t}" for t in tails)]


# Note [Qualified through another namespace]
# A call may name a function through a namespace that imports it: at::cuda::getCurrentCUDAStream is
# c10::cuda::getCurrentCUDAStream (at::cuda says `using c10::cuda::getCurrentCUDAStream;`), at::isIntegralType is
# c10's (`namespace at { using namespace c10; }`). Resolution follows these; the callers of a function must look
# at such sites too, or called_by and impact miss what calls lists. The importers of each namespace prefix of the
# target's scope (by using-directive) and of each of its names (by using-declaration) qualify it as well, with the
# rest of the scope after them (at::Scalar::f for c10::Scalar::f). A wider set only costs resolving more sites:
# each must still resolve to the target.

def _imported_qualifiers(ix: Index, target: CppSymbol) -> frozenset[str]:
    memo: dict[str, frozenset[str]] = ix.cached("imported_qualifiers", dict)
    scope = _scope(target)
    key = "::".join(scope)
    if key in memo:
        return memo[key]
    nominated: defaultdict[str, set[str]] = ix.cached("directive_importers", lambda: _directive_importers(ix))
    out: set[str] = set()

    def through(importers: set[str], rest: list[str]) -> None:
        for imp in importers:
            out.update("::".join((t, *rest)) for t in _tails([p for p in imp.split("::") if p]) if t)

    for k in range(1, len(scope) + 1):
        prefix = "::".join(scope[:k])
        through(set(nominated.get(prefix, ())), scope[k:])  # using namespace c10; -> at::Scalar::f
        through(_declarers(ix, prefix, scope[k - 1]), scope[k - 1:])  # using c10::Scalar; -> at::Scalar::f
    memo[key] = frozenset(out)
    return memo[key]


def _declared_here(ix: Index, target: CppSymbol) -> frozenset[str]:
    """The scopes whose using-declaration imports the function itself (``namespace at { using c10::f; }``)."""
    scopes = _declarers(ix, target.qualname.replace("(anonymous)::", ""), target.name)
    return frozenset(t for s in scopes if s for t in _tails([p for p in s.split("::") if p]))


def _declarers(ix: Index, qualname: str, name: str) -> set[str]:
    """The scopes whose using-declaration names ``qualname`` (whose last name is ``name``)."""
    return {s for kind, n, s, _p in all_usings(ix).get(name, ()) if kind is UsingKind.DECLARATION and
            n.lstrip(":") == qualname}


def _directive_importers(ix: Index) -> defaultdict[str, set[str]]:
    """Namespace -> the scopes whose ``using namespace`` nominates it (Note [Using-directive targets])."""
    out: defaultdict[str, set[str]] = defaultdict(set)
    for scope, nominated in directive_targets(ix).items():
        for name, _path in nominated:
            if scope:
                out[name].add(scope)
    return out
