"""A C++ parameter list's shape, read from its text: the parameters' types, how many a call must pass, whether
it takes more (Note [Argument counts])."""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass
from functools import lru_cache

from .cpp_text import split_args

# Note [Argument counts]
# A function is a candidate for a call only if its parameter list can take the call's argument count, as C++'s
# overload resolution keeps only viable functions: at least its parameters without a default (a declaration's
# defaults count for its definition, which repeats none), at most all of them, or any number past them for a
# C varargs ``...`` or a parameter pack (``Args&&... args``, which may also be empty). Two counts are not known
# from the text, and then no count rules the function out: a parameter list a macro writes
# (``gemm(CUDABLAS_GEMM_ARGTYPES(float))``, ``(TORCH_DSA_KERNEL_ARGS)``) or ``#ifdef`` branches divide, and a call
# whose arguments a pack expansion (``f(std::forward<Args>(args)...)``) or a macro
# (``gemm<float>(CUDABLAS_GEMM_ARGS(float))``) writes, or that the parser could not read (a lambda's init-capture,
# ``#ifdef`` lines among the arguments). extract/cpp_types.py records an unknown count for those; the resolver
# reads a macro's call from the arguments' type expressions. Where no candidate takes the count, the call reaches
# none of them (graph/resolve.py ``choose``): the function it calls is one lookup did not find (a base's
# overload, one a macro writes, the standard library's). Where no candidate takes it as written, one may take
# fewer arguments than its definition's parameters when its defaults are not in the index: an op's kernel in
# at::native (Note [Lookup that finds no viable function] in graph/resolve.py), and a function of a source file
# called from another with no declaration indexed (its header not in the tree). A construction counts its arguments
# as a call does: ``new T(args)``, ``new T`` and ``new T[n]`` (none: the default constructor), ``T x(args);`` (Note
# [Constructions written as declarations]), ``std::make_unique<T>(args)`` (Note [Factories construct]).

# a parameter written as a macro: an upper-case name with an underscore, or one called (no declarator follows)
_MACRO_PARAM = re.compile(r"^[A-Z][A-Z0-9]*_[A-Z0-9_]*$|^[A-Z][A-Z0-9_]*\s*\(.*\)$", re.S)


@dataclass(frozen=True, slots=True)
class Signature:
    types: tuple[str, ...]  # parameter types as written (a pack's and ``...`` left out)
    required: int  # parameters without a default
    variadic: bool  # C varargs or a parameter pack: any number of arguments past ``types``
    unknown: bool = False  # a macro writes (part of) the list: the count it takes is not known

    def takes(self, nargs: int) -> bool:
        """Whether a call of ``nargs`` arguments (negative: not known) can call it (Note [Argument counts])."""
        return nargs < 0 or self.unknown or self.required <= nargs and (self.variadic or nargs <= len(self.types))

    @property
    def key(self) -> tuple[str, ...]:
        """What tells two declarations of one function from two overloads: the types' last components."""
        return _overload_key(self.types)


_QUALIFIERS = re.compile(r"\w+::|\s+")
_NAMESPACES = re.compile(r"(?:\b\w+)?::")


@lru_cache(maxsize=1 << 16)
def _overload_key(types: tuple[str, ...]) -> tuple[str, ...]:
    """``Signature.key``, memoised: choosing among overloads asks it of every candidate of every call site. A
    type's qualifiers (const) and template arguments count, their namespaces do not (``optional<at::Tensor>``
    is ``optional<Tensor>``, another type than ``optional<TensorBase>``; ``const at::Tensor&`` is ``const
    Tensor&``, never ``Tensor&``)."""
    out = []
    for t in types:
        head, _, targs = t.replace("*", "").partition("<")
        key = _NAMESPACES.sub("", head)  # const at::Tensor& is const Tensor& (its const kept)
        if targs:
            key += "<" + _QUALIFIERS.sub("", targs)
        out.append(key + "*" * t.count("*"))
    return tuple(out)


@lru_cache(maxsize=1 << 16)
def signature(params: str) -> Signature:
    """``(const Tensor& self, int64_t dim = 0, ...)`` -> types, required count, variadic. Memoised: choosing
    among overloads reads the same few thousand parameter lists for every call site of a name."""
    body = params.strip()
    if body.startswith("(") and body.endswith(")"):
        body = body[1:-1]
    body = body.strip()
    if not body or body == "void":
        return Signature((), 0, False)
    if "#" in body:  # parameters in #ifdef branches: how many a build has is not known
        return Signature(tuple(_param_type(p) for p in split_args(body)), 0, True, True)
    types: list[str] = []
    required = 0
    variadic = unknown = False
    for p in split_args(body):
        default = _top_eq(p)
        decl = p[:default].strip() if default >= 0 else p
        if _pack(decl):  # ``...``, ``Args...``, ``Args&&... args``: any number, none needed
            variadic = True
            continue
        unknown = unknown or bool(_MACRO_PARAM.match(decl.strip()))
        types.append(_param_type(decl))
        if default < 0 and len(types) == required + 1:
            required += 1
    return Signature(tuple(types), required, variadic, unknown)


def _top(text: str) -> Iterator[int]:
    """The positions of ``text`` outside any bracket (brackets themselves left out)."""
    depth = 0
    for i, ch in enumerate(text):
        if ch in "<([{":
            depth += 1
        elif ch in ">)]}":
            depth -= 1
        elif depth == 0:
            yield i


def _pack(decl: str) -> bool:
    """Whether a parameter is C varargs or a parameter pack: ``...`` outside brackets (``std::tuple<Args...> t``
    and ``R (C::*)(Args...)`` are one parameter each)."""
    return any(decl.startswith("...", i) for i in _top(decl))


def _top_eq(p: str) -> int:
    return next((i for i in _top(p) if p[i] == "=" and p[i - 1:i] not in ("=", "!", "<", ">") and
                 p[i + 1:i + 2] != "="), -1)


def _param_type(decl: str) -> str:
    """``const Tensor& self`` -> ``const Tensor&``; ``int64_t`` -> ``int64_t``; ``T (&arr)[N]`` kept as is."""
    d = decl.strip()
    if d.endswith("]"):
        d = d[: d.rfind("[")].strip() + "*"
    i = len(d)
    while i > 0 and (d[i - 1].isalnum() or d[i - 1] == "_"):
        i -= 1
    name, head = d[i:], d[:i].rstrip()
    if name and head and not head.endswith(("::", "<", ",")) and name not in ("int", "long", "short", "char",
                                                                          "double", "float", "bool", "unsigned",
                                                                          "signed", "const", "volatile"):
        return head
    return d
