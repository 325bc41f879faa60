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
A method call has its receiver for ``self``. A literal argument rules out a parameter that cannot take it
(``PyCall.literals``): an int is no ``Dimname`` (``x.transpose(0, 1)`` is ``transpose.int``, ``torch.cat(xs, 1)``
is not ``cat.names``), a string no number or Tensor, a float no int, None only an optional parameter. An argument
that is no literal (``d + n``, a name) is a Dimname only where the code says so, which it never does to us: where
another overload takes the call, one that needs a Dimname for it is not reached (``input.size(d + n)``,
``torch.cat(xs, dim)``); a string literal is the one spelling of a Dimname. A call with ``*args`` or ``**kwargs``
keeps every overload, and so does a call no overload takes (a signature of tools/autograd/deprecated.yaml): never
fewer than one, unless the caller has somewhere else to go (``keep_all=False``: a hand-written binding whose parser
takes signatures the YAML does not show, graph/py_calls.py's Tensor methods).
"""

from __future__ import annotations

from collections.abc import Sequence

from ..model import Op
from ..model.schema import Argument

_INT_LISTS = ("int[", "SymInt[")
STAR = "**"  # extract/pyast.call_shape's name of a **mapping
_NOT_NAMES = frozenset({"ScalarType", "Layout", "MemoryFormat"})  # taken as torch.float32, torch.strided, ...
# What each literal kind (model.python.LITERAL_KINDS) can never be passed as, by the parameter's base type.
_REFUSED = {
    "i": frozenset({"Dimname", "str"}) | _NOT_NAMES,
    "b": frozenset({"Dimname", "str"}) | _NOT_NAMES,
    "f": frozenset({"Dimname", "str", "int", "SymInt", "bool"}) | _NOT_NAMES,
    "s": frozenset({"int", "SymInt", "float", "Scalar", "Tensor", "bool", "Generator"}) | _NOT_NAMES,
}


def overloads_for(ops: Sequence[Op], nargs: int, keywords: tuple[str, ...], method: bool,
                  literals: str = "", keep_all: bool = True) -> list[Op]:
    """The ``ops`` (overloads of one Python name) a call with ``nargs`` positional arguments and ``keywords`` can
    reach; ``method``: called on a receiver, which is ``self``; ``literals``: what literal each argument is. None
    when the overloads that take that many arguments all refuse a literal (``x.size(0)``: size.Dimname's Dimname
    takes no int; Tensor.size(int) is hand-written and reaches no op); all of them when the count rules every one
    out (the call is read wrong, not the overloads), or none when not ``keep_all``."""
    if nargs < 0:
        return list(ops)
    if len(ops) < 2 and not literals.strip(".") and keep_all:
        return list(ops)
    sigs = []  # each overload's parameters (the receiver's taken out) and the names they answer to
    for op in ops:
        params = _params(op, method)
        sigs.append((op, params, _names(params)))
    named = set().union(*(names for _op, _p, names in sigs))
    takes = [(op, params) for op, params, names in sigs if _takes(params, names, nargs, keywords, named)]
    kept = [(op, params) for op, params in takes if _literals_fit(params, nargs, keywords, literals)]
    if len(kept) > 1:  # an expression is no Dimname where another overload takes it
        kept = [(op, p) for op, p in kept if not _dimname_for_expression(p, nargs, keywords, literals)] or kept
    return [op for op, _p in kept] if kept or takes or not keep_all else list(ops)


def _base(type_: str) -> str:
    """``Dimname[1]?`` -> ``Dimname``; ``Tensor(a!)`` -> ``Tensor``."""
    return type_.split("[", 1)[0].split("(", 1)[0].rstrip("?")


def _fits(kind: str, a: Argument) -> bool:
    if kind == "n":
        return a.type.endswith("?")
    return _base(a.type) not in _REFUSED.get(kind, ())


def _literals_fit(params: list[Argument], nargs: int, keywords: tuple[str, ...], literals: str) -> bool:
    if not literals:
        return True
    positional = [a for a in params if not a.kwarg_only]
    by_name = {a.name: a for a in params}
    if "self" in by_name:
        by_name.setdefault("input", by_name["self"])
    for i, kind in enumerate(literals[:nargs]):
        if kind != "." and i < len(positional) and not _fits(kind, positional[i]):
            return False
    for k, kind in zip(keywords, literals[nargs:], strict=False):
        a = by_name.get(k)
        if kind != "." and a is not None and not _fits(kind, a):
            return False
    return True


def _dimname_for_expression(params: list[Argument], nargs: int, keywords: tuple[str, ...], literals: str) -> bool:
    """Whether an argument the call writes as no literal ("." in ``literals``; all of them when ``literals`` is
    "", extract/pyargs.call_shape's "none is a literal") goes to a Dimname parameter."""
    literals = literals or "." * (max(nargs, 0) + len(keywords))
    positional = [a for a in params if not a.kwarg_only]
    by_name = {a.name: a for a in params}
    for i, kind in enumerate(literals[:nargs]):
        if kind == "." and i < len(positional) and _base(positional[i].type) == "Dimname":
            return True
    for k, kind in zip(keywords, literals[nargs:], strict=False):
        a = by_name.get(k)
        if kind == "." and a is not None and _base(a.type) == "Dimname":
            return True
    return False


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


def _takes(params: list[Argument], names: set[str], nargs: int, keywords: tuple[str, ...], named: set[str]) -> bool:
    """Whether an overload of these ``params`` (that answer to ``names``) takes the call's shape; ``named``: the
    names of every overload of the call's name."""
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
