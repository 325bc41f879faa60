"""Calls of what a local name holds (Note [Loop callables] in extract/pyrecv.py).

A bare name that no module-level definition or import binds is the caller's own: a function nested in it (or in a
function around it) is that function; a loop variable over a container (``for mod in self.layers: mod(x)``), a
parameter (``fn(param)`` in Module._apply) or another local is named with what the code shows of it, as not followed,
never dropped. The extractor says which names the function binds (``PyCall.local``): a builtin (``len``) or a name of
the module is none of these.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from ..model import Edge, EdgeHow, EdgeKind, Loc, Node, PyDefKind
from ..store.reader import Index
from .nodes import held_node
from .py_attrs import attribute_makers, function_node, method_of
from .pynames import PyDef, pynames, signature_params

_SELF_ATTR = re.compile(r"self\.(\w+)(?:\.\w+\(\))?")  # self.layers, self.blocks.values()


def local_calls(ix: Index, src: Node, fn: PyDef, written: str, site: Loc, mro: Sequence[str],
                over: str) -> list[Edge]:
    """The edge of a call ``written(...)`` of a name ``fn`` (or a function around it) binds: a function nested in it,
    or a node named with what the code shows of what the name holds; ``over``: the iterable the name takes the items
    of, when only loops bind it."""
    nested = nested_call(ix, src, fn, written, site) if not over else []
    if nested:
        return nested
    owner = None if over else _parameter_of(ix, fn, written)
    if over:
        what = _items(ix, mro, over)
    elif owner is not None:
        what = f"parameter {written} of {owner.qualname.rsplit('.', 1)[-1]}: whatever the caller passes"
    else:
        what = f"a local of {fn.qualname.rsplit('.', 1)[-1]}, bound when it runs"
    return [Edge(src, held_node(written, site), EdgeKind.PY_CALL, site, how=EdgeHow.LOCAL, written=written,
                 note=f"{what}; not followed")]


def nested_call(ix: Index, src: Node, fn: PyDef, written: str, site: Loc) -> list[Edge]:
    """The edge of a call of a function defined in ``fn``'s body or in that of a function around it; none else."""
    nested = _nested(ix, fn, written)
    return [Edge(src, function_node(nested), EdgeKind.PY_CALL, site, written=written)] if nested is not None else []


def _nested(ix: Index, fn: PyDef, name: str) -> PyDef | None:
    """The function ``name`` defined in ``fn``'s body, or in that of a function around it (nearest first)."""
    names = pynames(ix)
    qual = fn.qualname
    while True:
        d = names.definition(f"{fn.module}.{qual}.<locals>.{name}")
        if d is not None and d.kind is PyDefKind.FUNCTION:
            return d
        if ".<locals>." not in qual:
            return None
        qual = qual.rsplit(".<locals>.", 1)[0]


def _parameter_of(ix: Index, fn: PyDef, name: str) -> PyDef | None:
    """``fn``, or the function around it (nearest first), that has a parameter ``name``."""
    names = pynames(ix)
    d: PyDef | None = fn
    while d is not None:
        if name in signature_params(d.signature):
            return d
        if ".<locals>." not in d.qualname:
            return None
        d = names.definition(f"{d.module}.{d.qualname.rsplit('.<locals>.', 1)[0]}")
    return None


_TENSOR = re.compile(r"(?:Optional\[)?['\"]?(?:torch\.)?Tensor['\"]?\]?(?:\s*\|\s*None)?")  # Tensor, Optional[Tensor]


def tensor_parameter(fn: PyDef, name: str) -> str:
    """"parameter x: Tensor" when ``name`` is a parameter of ``fn`` annotated a Tensor (``Optional[Tensor]`` too): what
    shows a receiver is one, said instead of "not typed"; "" else."""
    annotation = signature_params(fn.signature).get(name, "")
    return f"parameter {name}: {annotation}" if annotation and _TENSOR.fullmatch(annotation) else ""


def item_calls(ix: Index, src: Node, written: str, site: Loc, mro: Sequence[str]) -> list[Edge]:
    """``self.layers[i](x)`` (``written`` "self.layers[]"): an item of what the name holds, named with what the code
    shows of it (the attribute's maker and line, the class's ``__getitem__``), as not followed."""
    what = _items(ix, mro, written[:-2], "an item", "__getitem__")
    return [Edge(src, held_node(written, site), EdgeKind.PY_CALL, site, how=EdgeHow.LOCAL, written=written,
                 note=f"{what}; not followed")]


def _items(ix: Index, mro: Sequence[str], over: str, each: str = "each item", method: str = "__iter__") -> str:
    """What an item of ``over`` is, as the code shows it: for ``self``, what its class's ``method`` gives (a loop's
    ``__iter__``, an index's ``__getitem__``); for an attribute, the line that sets it."""
    if over == "self":
        it = method_of(ix, mro, method)
        return f"{each} self's {method} gives ({it.loc})" if it is not None else f"{each} of self"
    m = _SELF_ATTR.fullmatch(over)
    attr = m.group(1) if m else ""
    found = attribute_makers(ix, mro, attr) if attr else None
    if found is None:
        return f"{each} of {over}"
    _module, rows, params = found
    if rows:
        value, file_id, line = rows[0]
        return f"{each} of {over} (self.{attr} = {value}(...) at {ix.path_of(file_id)}:{line})"
    _default, file_id, line, param = params[0]
    return f"{each} of {over} (self.{attr} holds parameter {param}, set at {ix.path_of(file_id)}:{line})"
