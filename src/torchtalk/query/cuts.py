"""The call that shows what a walk left out (Note [No silent cut] in graph/walk.py).

A walk records its cuts with where they happened; only the query knows its tools, so it
names, for each cut, the exact call that shows the rest: the edges of a node whose fan-out
was cut (``calls`` / ``called_by`` of that function, ``trace`` of an op or Python name), and
for a depth, level or node budget whatever the query's own tool takes to go on from there.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import replace

from ..graph.nodes import symbol_id
from ..model import Cut, CutKind, Node, NodeKind


def tool_call(tool: str, *args: object, **kwargs: object) -> str:
    """``calls("at::native::f")``, ``impact("f", depth=4)``: a tool call as an answer names it."""
    parts = [json.dumps(a) for a in args] + [f"{k}={json.dumps(v)}" for k, v in kwargs.items()]
    return f"{tool}({', '.join(parts)})"


def node_arg(node: Node) -> str:
    """How a tool's name argument gives a node exactly: a C++ function by its definition's path:line, a
    DispatchStub, op or Python name by itself."""
    if symbol_id(node) is not None and node.loc is not None:
        return f"{node.loc.path}:{node.loc.line}"
    return node.key


def explore(node: Node, down: bool = True) -> str:
    """The call that lists every edge of ``node`` (out of it when ``down``, into it otherwise)."""
    if node.kind in (NodeKind.OP, NodeKind.PY_FUNCTION, NodeKind.PY_CLASS, NodeKind.BINDING):
        return tool_call("trace", node.key)
    return tool_call("calls" if down else "called_by", node_arg(node))


def named(cuts: list[Cut], further: Callable[[Cut], str], down: bool = True) -> list[Cut]:
    """``cuts`` with the call that shows each: the node's own edges for a fan-out cut, ``further(cut)`` for a
    depth, level or node-budget cut. One record per (kind, place): walks merged from several starts cut the
    same node once, and their depth or budget cuts are one line (counting the largest)."""
    out: dict[tuple[CutKind, str], Cut] = {}
    for c in cuts:
        key = (c.kind, f"{c.at.kind}:{c.at.key}" if c.kind is CutKind.FAN_OUT and c.at is not None else "")
        if key in out:
            if c.kind is not CutKind.FAN_OUT:
                have = out[key]
                out[key] = replace(have, left=max(have.left, c.left))
            continue
        shows = explore(c.at, down) if c.kind is CutKind.FAN_OUT and c.at is not None else further(c)
        out[key] = replace(c, shows=shows)
    return list(out.values())


def gpu_cuts(cuts: list[Cut]) -> list[Cut]:
    """The GPU walk's cuts (graph/gpu.py), each with the call that shows what it left out: the edges of the
    node whose fan-out was cut, or cuda_kernels from where the depth or node budget stopped the walk."""
    return named(cuts, lambda c: tool_call("cuda_kernels", node_arg(c.at)) if c.at is not None else "")


def calls_cuts(cuts: list[Cut]) -> list[Cut]:
    """Cuts of a walk down C++ calls, each with the ``calls`` that goes on from where it stopped."""
    return named(cuts, lambda c: explore(c.at) if c.at is not None else "")


def describe(c: Cut) -> str:
    """What a cut left out, in one line ending with the call that shows it."""
    where = c.at.label if c.at is not None else "?"
    nodes = f"{c.left} node{'s' if c.left != 1 else ''}"
    if c.kind is CutKind.FAN_OUT:
        return f"{where}: {c.left} more edge{'s' if c.left != 1 else ''} not followed (the {c.limit} ranked first " \
               "were)" + (f"; {c.shows} lists them all" if c.shows else "")
    if c.kind is CutKind.DEPTH:
        what = f"{nodes} at depth {c.limit} not walked further (e.g. {where})"
    elif c.kind is CutKind.HOPS:
        calls = f"{c.limit} call{'s' if c.limit != 1 else ''}"
        what = (f"{c.left} op{'s' if c.left != 1 else ''} called through the dispatcher by ops themselves reached "
                f"through the dispatcher {'were' if c.left != 1 else 'was'} not walked (e.g. the ones {where}'s code "
                f"calls; the walk follows {calls} through the dispatcher a chain)")
    elif c.kind is CutKind.SCOPE:
        what = (f"{c.left} Python function{'s' if c.left != 1 else ''} reached but not walked into (outside the "
                f"modules this answer expands; e.g. {where})")
    elif c.kind is CutKind.LEVEL:
        what = f"{nodes} reached but not walked from (at most {c.limit} a level; e.g. {where})"
    else:
        what = f"stopped at its budget of {c.limit} nodes, {nodes} not walked from (e.g. {where})"
    return what + (f"; {c.shows} goes further" if c.shows else "")
