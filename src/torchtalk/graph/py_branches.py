"""The arms of a Python function's choices as its PY_CALL edges carry them (Note [Branch arms] in model/python.py):
which arms are paths, and which choices are on every path through the function."""

from __future__ import annotations

from typing import Any

from .pynames import PyDef, PyNames

# Note [Hand-overs are no path]
# ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
# ``if has_torch_function_variadic(input, weight): return handle_torch_function(...)`` opens nearly every function of
# torch.nn.functional: a Tensor subclass's ``__torch_function__`` takes the call, outside what the function runs. An
# arm whose every call is such plumbing (graph/py_calls.py's ``HIDDEN_PREFIXES``, never a step towards the op) is no
# path of the choice: the arms of a choice are those that are not (Note [Branch arms] in model/python.py counts them
# all), and where only one is left, its calls are made on every path (the rest of batch_norm past that return), so
# their edges carry no branch. An arm with no call at all (``if not self.training: return input``) stays a path.

def choice_paths(names: PyNames, fn: PyDef, rows: list[tuple[Any, ...]], hidden: tuple[str, ...]) -> tuple[
        dict[int, int], set[int]]:
    """The arms of each choice of ``fn`` (by its head line) that are paths (Note [Hand-overs are no path]), and the
    choices on every path through ``fn``: at its own level, or in the one path of such a choice (Note [Ops on every
    path] in query/pywalk.py). ``rows``: fn's py_call rows as py_call_edges reads them; ``hidden``: the plumbing."""
    plumbing: dict[tuple[int, str], bool] = {}
    paths: dict[int, int] = {}
    outer: dict[int, int] = {}
    for callee, _line, _fid, arm, head, *_rest, branch_arms, _past, around in rows:
        if arm:
            paths[head], outer[head] = branch_arms, around
            handed = names.resolve_in(fn.module, callee).startswith(hidden)
            plumbing[head, arm] = plumbing.get((head, arm), True) and handed
    for (head, _arm), only in plumbing.items():
        paths[head] -= only
    top: set[int] = set()
    for head in sorted(outer):  # a choice's head comes before those nested in its arms
        up = outer[head]
        if up == 0 or up in top and paths.get(up) == 1:
            top.add(head)
    return paths, top
