"""Objects handed to a template that calls their methods: the call that hands one reaches those methods.

Note [Handed objects]: PyTorch picks an algorithm by passing an object of a chosen class to a template that
calls a method on it (Sort.cu: ``sortCommon(SmallBitonicSort{}, key, ...)`` whose body calls ``sorter.template
sort<A>(...)``; SortingCommon.cuh's ``run_launcher(..., KthValueLauncher(k))`` calls ``l.template launch<...>
(...)``). Inside the template the receiver's type is a template parameter, so ``sorter.sort`` names no class;
at the call that hands the object, the argument's type does. So such a call also reaches the methods the
template calls on that parameter, of the class the argument has (a CALL edge, ``EdgeHow.HANDED``, at the call's
line): kthvalue's code reaches KthValueLauncher::launch and not MedianLauncher::launch, which median's code
hands the same template.

Note [Functions as template arguments]: a function template may take a function as a template argument and call
it. Repeat.h's ``template <typename index_t, void compute(const index_t*, ...)> repeat_interleave_common(...)``
calls ``compute(...)``, and each backend instantiates it with its own: ``repeat_interleave_common<index_t,
compute_cuda<index_t>>(repeat, output_size)`` in cuda/Repeat.cu, whose ``compute_cuda`` launches
``compute_cuda_kernel``. Inside the template ``compute`` names no function; at the call, the template argument in
its position does. So such a call also reaches that function (a CALL edge, ``EdgeHow.HANDED``, at the call's line,
written as the argument is), found by name lookup from the calling function as a call of it would be. The
template's function parameters are facts of its definition (``CppSymbol.fparams``); the arguments written at the
call are read from its text (Note [Source lines]), only for calls of such templates.
"""

from __future__ import annotations

import re

from ..model import CallKind, CallSite, CppSymbol
from ..model.cpp import split_template_args
from ..store.codec import rows_facts
from ..store.reader import Index
from .cpp_lookup import resolve_type
from .cpp_text import close_bracket, split_args
from .cpp_types import caller_scope
from .resolution import TargetKind
from .resolve import resolve
from .source_lines import file_lines
from .symbols import SYMBOL_COLS, calls_from

_PARAM = re.compile(r"^(?P<type>.*?)\b(?P<name>[A-Za-z_]\w*)\s*(?:=.*)?$", re.S)


def handed_methods(ix: Index, callee: CppSymbol) -> dict[int, tuple[str, ...]]:
    """Parameter position -> the methods the template ``callee`` calls on that parameter, where the parameter's
    type is one the index does not know as a type (a template parameter: ``Sorter sorter``). Memoised."""
    memo: dict[int, dict[int, tuple[str, ...]]] = ix.cached("handed_methods", dict)
    if callee.id not in memo:
        memo[callee.id] = _handed(ix, callee) if callee.is_template and callee.is_definition else {}
    return memo[callee.id]


def _handed(ix: Index, callee: CppSymbol) -> dict[int, tuple[str, ...]]:
    params: dict[str, tuple[int, str]] = {}  # name -> (position, type as written)
    for i, p in enumerate(split_args(callee.params.strip()[1:-1])):
        m = _PARAM.match(p.strip())
        if m:
            params[m.group("name")] = (i, re.sub(r"\b(const|typename)\b|[&\s]", "", m.group("type")))
    out: dict[int, list[str]] = {}
    scope = caller_scope(callee)
    for call in calls_from(ix, callee.id):
        if call.kind is not CallKind.METHOD or call.qualifier not in params:
            continue
        pos, written = params[call.qualifier]
        if call.recv != f"t:{written}" or not written.isidentifier() or resolve_type(ix, written, scope):
            continue
        names = out.setdefault(pos, [])
        if call.callee not in names:
            names.append(call.callee)
    return {pos: tuple(names) for pos, names in out.items()}


def handed_args(call: CallSite, handed: dict[int, tuple[str, ...]]) -> list[tuple[str, str]]:
    """(argument's type expression, method name) for each method a call hands an object to."""
    if not handed or not call.args:
        return []
    args = call.args.split(";")
    return [(args[pos], name) for pos, names in handed.items() if pos < len(args) and args[pos]
            for name in names]


_TEXT_LINES = 6  # lines of a call's text read for the template arguments it writes


def handed_functions(ix: Index, caller: CppSymbol, call: CallSite, template: CppSymbol) -> list[tuple[str, CppSymbol]]:
    """(the argument as written, a function it names) for each function the call hands ``template`` as a template
    argument in the place of a parameter the template calls (Note [Functions as template arguments])."""
    if not template.fparams or not call.explicit:
        return []
    called = _called_params(ix, template)
    if not called:
        return []
    written = _template_args(ix, call)
    out: list[tuple[str, CppSymbol]] = []
    for pos, _param in called:
        if pos >= len(written):
            continue
        arg = written[pos].lstrip("&").strip()
        base, _targs = split_template_args(arg)
        if not re.fullmatch(r"(?:[A-Za-z_]\w*::)*[A-Za-z_]\w*", base):
            continue
        qual, _, fname = base.rpartition("::")
        res = resolve(ix, CallSite(caller.id, fname, qual, call.line, CallKind.CALL, "", path=call.path), caller)
        if res.kind is TargetKind.DEFS or res.kind is TargetKind.DECLS:
            out += [(base, d) for d in res.defs]
    return out


def _called_params(ix: Index, template: CppSymbol) -> list[tuple[int, str]]:
    """(position, name) of the template's function parameters its body calls (memoised)."""
    memo: dict[int, list[tuple[int, str]]] = ix.cached("called_function_params", dict)
    if template.id not in memo:
        params = [(int(pos), name) for pos, _, name in (p.partition(":") for p in template.fparams.split(","))]
        calls = {c.callee for c in calls_from(ix, template.id) if c.kind is CallKind.CALL and not c.qualifier}
        memo[template.id] = [(pos, name) for pos, name in params if name in calls]
    return memo[template.id]


def _template_args(ix: Index, call: CallSite) -> list[str]:
    """The template arguments written on the call's callee (``<index_t, compute_cuda<index_t>>``), from its text."""
    lines = file_lines(ix, call.path)
    text = "\n".join(lines[call.line - 1:call.line - 1 + _TEXT_LINES])
    m = re.search(r"\b" + re.escape(call.callee) + r"\s*<", text)
    if m is None:
        return []
    close = close_bracket(text, m.end() - 1, ("<([", ">)]"))
    return split_args(text[m.end():close]) if close >= 0 else []


def function_templates(ix: Index) -> list[CppSymbol]:
    """The function templates with parameters that are functions (a partial index holds them: store/schema.py
    PARTIAL_INDEXES), once per index version."""
    return ix.cached("function_templates", lambda: rows_facts(
        CppSymbol, ix.q(f"SELECT {SYMBOL_COLS} FROM cpp_symbol WHERE fparams != '' ORDER BY id"), ix.paths()))
