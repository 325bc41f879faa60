"""The arms of a Python function's choices as its PY_CALL edges carry them (Note [Branch arms] in model/python.py):
which arms are paths, which choices are on every path through the function, and the arm each call is on."""

from __future__ import annotations

import json
from typing import Any

from ..model import Branch, Loc
from .pynames import PyDef, PyNames

# Note [Hand-overs are no path]
# ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
# ``if has_torch_function_variadic(input, weight): return handle_torch_function(...)`` opens nearly every function of
# torch.nn.functional: a Tensor subclass's ``__torch_function__`` takes the call, outside what the function runs. An
# arm whose every call is such plumbing (graph/py_calls.py's ``HIDDEN_PREFIXES``, never a step towards the op) is no
# path of the choice: the arms of a choice are those that are not (Note [Branch arms] in model/python.py counts them
# all), and where only one is left, its calls are made on every path (the rest of batch_norm past that return), so
# their edges carry no branch (or the arm around that choice, when it is nested in one). An arm with no call at all
# (``if not self.training: return input``) stays a path; so does one whose calls are in choices nested in it.

# Note [Arms hold their nested choices]
# ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
# A call in a choice nested in an arm is a call of that arm too (``Branch.within``): GRUCell's ``else: hx =
# hx.unsqueeze(0) if not is_batched else hx`` reaches unsqueeze where ``if hx is None`` reaches zeros, and an arm whose
# own calls are plumbing but whose nested choice calls an op is a path. The rest of a block past a return (a ``past``
# arm) holds the code's next choices rather than nested alternatives: interpolate's twenty ``if ...: return ...`` in a
# row are each a choice of their own, not each one the arm of the one before, so a past arm's calls are its own.

ArmRow = tuple[int, str, int, bool]  # (head line, arm as written, arms of its choice, past): PyCall's branch fields


def arms_around(row: tuple[Any, ...]) -> list[ArmRow]:
    """The arms a call is made in, outermost first (its own last; none outside any arm), from its py_call row as
    py_call_edges reads it (``..., branch, branch_line, ..., branch_arms, branch_past, branch_within``)."""
    arm, head, arms, past, within = row[3], row[4], row[-3], row[-2], row[-1]
    if not arm:
        return []
    return [(h, a, n, bool(p)) for h, a, n, p in (json.loads(within) if within != "[]" else ())] + [
        (head, arm, arms, bool(past))]


def choice_paths(names: PyNames, fn: PyDef, rows: list[tuple[Any, ...]], hidden: tuple[str, ...]) -> tuple[
        dict[int, int], set[int]]:
    """The arms of each choice of ``fn`` (by its head line) that are paths (Note [Hand-overs are no path]), and the
    choices on every path through ``fn``: at its own level, or in the one path of such a choice (Note [Ops on every
    path] in query/pywalk.py). ``rows``: fn's py_call rows as py_call_edges reads them; ``hidden``: the plumbing."""
    plumbing: dict[tuple[int, str], bool] = {}
    paths: dict[int, int] = {}
    outer: dict[int, int] = {}
    for row in rows:
        chain = arms_around(row)
        handed = bool(chain) and names.resolve_in(fn.module, row[0]).startswith(hidden)
        around = 0
        for head, arm, arms, _past in chain:  # a call in a nested choice is a call of each arm around it too
            paths[head], outer[head] = arms, around
            plumbing[head, arm] = plumbing.get((head, arm), True) and handed
            around = head
    for (head, _arm), only in plumbing.items():
        paths[head] -= only
    top: set[int] = set()
    for head in sorted(outer):  # a choice's head comes before those nested in its arms
        up = outer[head]
        if up == 0 or up in top and paths.get(up) == 1:
            top.add(head)
    return paths, top


def branch_of(chain: list[ArmRow], path: str, chosen: int, paths: dict[int, int], top: set[int]) -> Branch | None:
    """A call's arm as its edges carry it: the innermost of the arms around it that is a path of its choice (Note
    [Hand-overs are no path]), with those around it that are and that hold its calls (Note [Arms hold their nested
    choices]); None when no arm around it is a path."""
    live = [a for a in chain if paths.get(a[0], 2) > 1]
    if not live:
        return None
    head, arm, _arms, past = live[-1]
    return Branch(arm, Loc(path, head), Loc(path, chosen) if chosen else None, arms=paths[head], past=past,
                  top=head in top, within=tuple((Loc(path, h), a) for h, a, _n, p in live[:-1] if not p))
