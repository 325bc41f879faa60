"""What a Python call passes, as written: its shape, which picks the op overloads it can reach (Note [Overloads by
arguments] in graph/py_args.py)."""

from __future__ import annotations

import ast
from ast import Call, Constant
from typing import Any


def call_shape(n: Call) -> dict[str, Any]:
    """A call's shape (Note [Overloads by arguments]) as PyCall's keyword arguments: positional arguments
    written (-1 if one is starred), the keyword names ("**" for a ``**mapping``), and what literal each
    argument is (model.python.LITERAL_KINDS; "" when none is)."""
    args, kws = n.args, n.keywords
    if not args and not kws:
        return _NO_ARGS
    nargs, literal = len(args), False
    for a in args:
        c = a.__class__
        if c is ast.Starred:
            nargs = -1
        elif c in _LITERAL_NODES:
            literal = True
    if not kws:
        return {"nargs": nargs, "literals": "".join(map(_literal, args)) if literal else ""}
    if not literal:
        literal = any(k.value.__class__ in _LITERAL_NODES for k in kws)
    return {"nargs": nargs, "keywords": ",".join(k.arg or "**" for k in kws),
            "literals": "".join(map(_literal, [*args, *(k.value for k in kws)])) if literal else ""}


_NO_ARGS: dict[str, Any] = {"nargs": 0}
_LITERAL_NODES = frozenset({Constant, ast.UnaryOp, ast.JoinedStr})


def _literal(a: ast.expr) -> str:
    """The LITERAL_KINDS letter of an argument: ``1``, ``-1`` "i"; ``0.5`` "f"; ``"N"``, f"..." "s"; ``True`` "b";
    ``None`` "n"; anything else "."."""
    if a.__class__ is ast.UnaryOp and a.op.__class__ in (ast.USub, ast.UAdd):
        a = a.operand
        if a.__class__ is not Constant or a.value.__class__ not in (int, float):
            return "."
    if a.__class__ is ast.JoinedStr:
        return "s"
    if a.__class__ is not Constant:
        return "."
    return _CONSTANT_KINDS.get(a.value.__class__, "n" if a.value is None else ".")


_CONSTANT_KINDS = {int: "i", float: "f", str: "s", bool: "b"}
