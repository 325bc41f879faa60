"""Calls of a parameter that holds a function: the functions the callers pass in its place.

Note [Calls of a function parameter]: ``split_batch_dim_to_32bit_out(output, ..., func_t func_32bit)`` (cudnn/
Conv_v7.cpp) calls ``func_32bit(output, input, ...)``: a parameter, so no function of that name is called, and
resolution says the name is a local one (``TargetKind.LOCAL``, like a lambda the body defines). What it calls is
what each caller passes there: ``raw_cudnn_convolution_backward_input_out_32bit`` from the backward-input kernel.
When the parameter's type can hold a function (a ``std::function``, a ``function_ref``, a function pointer, or a
template parameter of the function, which the index knows as no type), the call is resolved one level up: the
argument each call of the enclosing function writes in the parameter's position, a name (or its address) looked
up from that caller as a reference is (Note [References] in extract/cpp_calls.py). Each function found is a CALL
edge at the parameter's call (``EdgeHow.PARAMETER``), the caller that passes it in the edge's note. A call no
caller's argument resolves (a lambda passed, a function of many callers: more sites than ``CALLER_SITES``, whose
arguments are not read) is an UNRESOLVED edge ``func_32bit (function parameter)``, never dropped. The function
that passes a name also references it (a REF site, ``EdgeHow.REFERENCED``), so a walk down from that caller
reaches it without going through the parameter.
"""

from __future__ import annotations

import re

from ..model import CallKind, CallSite, CppSymbol, Edge, EdgeHow, EdgeKind, Node
from ..model.cpp import TypeBase, TypeExpr, TypeStepKind
from ..store.reader import Index
from .cpp_lookup import resolve_type
from .cpp_text import split_args
from .cpp_types import caller_scope
from .nodes import symbol_node, unresolved_node
from .resolution import TargetKind
from .resolve import resolve
from .symbols import calls_named, symbol

CALLER_SITES = 200  # call sites of the enclosing function's name read at most for the arguments passed
PARAMETER = "(function parameter)"
_PARAM = re.compile(r"^(?P<type>.*?)\b(?P<name>[A-Za-z_]\w*)\s*(?:=.*)?$", re.S)
_FUNCTION_TYPES = re.compile(r"\bstd::function\b|\bfunction_ref\b|\(\s*\*")


def function_param(ix: Index, sym: CppSymbol, name: str) -> int | None:
    """The position of ``sym``'s parameter ``name`` when its type can hold a function, else None."""
    for i, p in enumerate(split_args(sym.params.strip()[1:-1])):
        m = _PARAM.match(p.strip())
        if m is None or m.group("name") != name:
            continue
        written = re.sub(r"\b(const|typename)\b|[&\s]", "", m.group("type"))
        if _FUNCTION_TYPES.search(m.group("type")):
            return i
        if sym.is_template and written.isidentifier() and resolve_type(ix, written, caller_scope(sym)) is None:
            return i
        return None
    return None


def param_call_edges(ix: Index, sym: CppSymbol, call: CallSite, src: Node) -> list[Edge] | None:
    """The edges of a call of ``sym``'s function parameter (Note [Calls of a function parameter]); None when the
    name called is no such parameter."""
    pos = function_param(ix, sym, call.callee)
    if pos is None:
        return None
    memo: dict[tuple[int, int], list[tuple[CppSymbol, CallSite, CppSymbol]]] = ix.cached("param_passed", dict)
    key = (sym.id, pos)
    if key not in memo:
        memo[key] = []  # a recursive asking finds none
        memo[key] = _passed(ix, sym, pos)
    out = [Edge(src, symbol_node(ix, f), EdgeKind.CALL, call.loc, how=EdgeHow.PARAMETER, written=call.callee,
                note=f"passed by {by.qualname} at {site.loc}") for f, site, by in memo[key]]
    return out or [Edge(src, unresolved_node(f"{call.callee} {PARAMETER}"), EdgeKind.UNRESOLVED, call.loc,
                        how=EdgeHow.PARAMETER, written=call.callee)]


def _passed(ix: Index, sym: CppSymbol, pos: int) -> list[tuple[CppSymbol, CallSite, CppSymbol]]:
    """(function passed, the call of ``sym`` passing it, its caller) for each function a call of ``sym`` passes in
    position ``pos``: the sites naming it that resolve to it, as its callers are found (graph/cpp_callers.py)."""
    sites = calls_named(ix, sym.name, limit=CALLER_SITES + 1)
    if len(sites) > CALLER_SITES:
        return []
    out: list[tuple[CppSymbol, CallSite, CppSymbol]] = []
    seen: set[int] = set()
    for site in sites:
        if site.kind is not CallKind.CALL or not site.has_caller or not site.args:
            continue
        caller = symbol(ix, site.caller)
        args = site.args.split(";")
        name = _named(args[pos]) if pos < len(args) else None
        if caller is None or name is None:
            continue
        res = resolve(ix, site, caller)
        if not any(d.id == sym.id or d.qualname == sym.qualname for d in res.defs):
            continue
        qual, _, fname = name.rpartition("::")
        res = resolve(ix, CallSite(caller.id, fname, qual, site.line, CallKind.REF, "", path=site.path), caller)
        if res.kind is TargetKind.DEFS or res.kind is TargetKind.DECLS:
            for d in res.defs:
                if d.id not in seen:
                    seen.add(d.id)
                    out.append((d, site, caller))
    return out


def _named(te: str) -> str | None:
    """The name an argument's type expression says it is (``v:f``, ``v:ns::f|&``), else None."""
    try:
        parsed = TypeExpr.parse(te)
    except ValueError:
        return None
    if parsed.base is not TypeBase.VARIABLE or any(s.kind is not TypeStepKind.ADDRESS for s in parsed.steps):
        return None
    return parsed.text or None
