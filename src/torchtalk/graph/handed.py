"""Objects handed to a template that calls their methods: the call that hands one reaches those methods.

Note [Handed objects]: PyTorch picks an algorithm by passing an object of a chosen class to a template that
calls a method on it (Sort.cu: ``sortCommon(SmallBitonicSort{}, key, ...)`` whose body calls ``sorter.template
sort<A>(...)``; SortingCommon.cuh's ``run_launcher(..., KthValueLauncher(k))`` calls ``l.template launch<...>
(...)``). Inside the template the receiver's type is a template parameter, so ``sorter.sort`` names no class;
at the call that hands the object, the argument's type does. So such a call also reaches the methods the
template calls on that parameter, of the class the argument has (a CALL edge, ``EdgeHow.HANDED``, at the call's
line): kthvalue's code reaches KthValueLauncher::launch and not MedianLauncher::launch, which median's code
hands the same template.
"""

from __future__ import annotations

import re

from ..model import CallKind, CallSite, CppSymbol
from ..store.reader import Index
from .cpp_lookup import resolve_type
from .cpp_types import caller_scope, split_args
from .symbols import calls_from

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
