"""Which overloads of an op a Python call can reach, by the shape of its arguments.

Note [Overloads by arguments]
~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
A Python name reaches every overload it is bound to (``torch.cat`` -> ``cat``, ``cat.out``, ``cat.names``), but
PyTorch's argument parser dispatches one call to an overload whose signature takes what the call passes. The call's
shape as written (``PyCall.nargs``, ``PyCall.keywords``) already rules some out, with no type known: an overload
needs each of its arguments that has no default (``out=`` ones, ``cat.names``'s ``dim`` of type Dimname is no
help, but ``zeros.names``'s keyword-only ``names`` is), takes no more positional arguments than it has (unless it
has an int list, which the parser also takes as varargs: ``x.view(2, 3)``), and takes each keyword a sibling
overload names (``dim=``, ``out=``; a keyword no overload names is the parser's own, such as ``requires_grad``).
The parser calls ``self`` ``input`` in a function, and an out= overload's outputs ``out`` (a tuple when several).
A method call has its receiver for ``self``. A call with ``*args`` or ``**kwargs`` keeps every overload, and so
does a call no overload takes (a signature of tools/autograd/deprecated.yaml): never fewer than one.
"""

from __future__ import annotations

from collections.abc import Sequence

from ..model import Op
from ..model.schema import Argument

_INT_LISTS = ("int[", "SymInt[")
STAR = "**"  # extract/pyast.call_shape's name of a **mapping


def overloads_for(ops: Sequence[Op], nargs: int, keywords: tuple[str, ...], method: bool) -> list[Op]:
    """The ``ops`` (overloads of one Python name) a call with ``nargs`` positional arguments and ``keywords`` can
    reach; ``method``: called on a receiver, which is ``self``. All of them when the shape rules every one out."""
    if len(ops) < 2 or nargs < 0:
        return list(ops)
    named = {n for op in ops for n in _names(_params(op, method))}
    kept = [op for op in ops if _takes(_params(op, method), nargs, keywords, named)]
    return kept or list(ops)


def _params(op: Op, method: bool) -> list[Argument]:
    args = list(op.schema.arguments)
    if method:
        return [a for a in args if a.name != "self"]
    return args


def _names(params: list[Argument]) -> set[str]:
    out = {a.name for a in params}
    if "self" in out:
        out.add("input")
    if any(a.out for a in params):
        out.add("out")
    return out


def _takes(params: list[Argument], nargs: int, keywords: tuple[str, ...], named: set[str]) -> bool:
    names = _names(params)
    if any(k in named and k not in names for k in keywords):
        return False
    positional = [a for a in params if not a.kwarg_only]
    varargs = any(a.type.startswith(_INT_LISTS) for a in positional)
    if nargs > len(positional) and not varargs:
        return False
    if STAR in keywords:
        return True
    given = {a.name for a in positional[:nargs]} | set(keywords)
    if "input" in given:
        given.add("self")
    for a in params:
        if a.default is None and a.name not in given and not (a.out and "out" in given):
            return False
    return True
