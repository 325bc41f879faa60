"""The lambdas a pybind11 ``.def`` binds a Python name to, and the calls made in them.

Note [Calls in a bound lambda]: torch/csrc binds ~1,300 Python names to lambdas written in the call that binds them
(``m.def("_jit_set_fusion_strategy", [](const std::vector<...>& strategy) { ... setFusionStrategy(vec); })``). The
calls in such a lambda sit, for the index, in the function that makes the binding (``initJITBindings``), which runs
them never: Python does, when it calls the name. So, walked up, such a call is the Python name's: a BINDING edge from
the name into the function called (``EdgeHow.BOUND_LAMBDA``, its site the call), not a CALL edge from the function
making the binding; impact of ``setFusionStrategy`` names ``torch._C._jit_set_fusion_strategy``, not ``initModule``.
A lambda's lines are read from the file's text: from the ``[`` that opens it (on the binding's line or a few after) to
the brace closing its body.
"""

from __future__ import annotations

from typing import NamedTuple

from ..model import Edge, EdgeHow, EdgeKind, Loc, Node, PyApiKind
from ..store.reader import Index
from .cpp_callers import callers
from .cpp_text import blank_code, close_bracket
from .nodes import binding_node
from .source_lines import file_lines

LAMBDA_PREFIX = "lambda@"  # a binding's target that is a lambda written at that line (extract/cpp_bindings.py)


class BoundLambda(NamedTuple):
    """A lambda a Python name is bound to: its first and last line, the name, and where it is bound."""

    first: int
    last: int
    name: str
    at: Loc


def callers_outside(ix: Index, node: Node) -> list[Edge]:
    """CALL edges into a C++ function, but those made in a bound lambda (the Python name's: ``lambda_bindings``)."""
    return [e for e in callers(ix, node) if not _in_lambda(ix, e)]


def lambda_bindings(ix: Index, node: Node) -> list[Edge]:
    """BINDING edges into a C++ function from the Python names whose bound lambda calls it, at the call."""
    out = []
    for e in callers(ix, node):
        b = _in_lambda(ix, e)
        if b is not None and e.site is not None:
            out.append(Edge(binding_node(b.name, b.at), node, EdgeKind.BINDING, e.site, PyApiKind.PYBIND.value,
                            f"called in the lambda bound at {b.at}", EdgeHow.BOUND_LAMBDA, e.written))
    return out


def _in_lambda(ix: Index, e: Edge) -> BoundLambda | None:
    return bound_lambda_at(ix, e.site.path, e.site.line) if e.site is not None and e.site.path else None


def bound_lambda_at(ix: Index, path: str, line: int) -> BoundLambda | None:
    """The innermost bound lambda holding ``line`` of ``path`` (Note [Calls in a bound lambda]), or None."""
    found = [b for b in _lambdas(ix, path) if b.first <= line <= b.last]
    return min(found, key=lambda b: b.last - b.first, default=None)


def _lambdas(ix: Index, path: str) -> list[BoundLambda]:
    """A file's bound lambdas with their lines (the file read when first asked, once per index version)."""
    def rows() -> dict[str, list[tuple[str, int]]]:
        out: dict[str, list[tuple[str, int]]] = {}
        for name, target, file_id in ix.q("SELECT name, target, file_id FROM py_api WHERE kind = ? AND target LIKE ?",
                                          (PyApiKind.PYBIND.value, LAMBDA_PREFIX + "%")):
            line = target[len(LAMBDA_PREFIX):]
            if line.isdigit():
                out.setdefault(ix.path_of(file_id), []).append((name, int(line)))
        return out
    bound: dict[str, list[tuple[str, int]]] = ix.cached("bound_lambda_rows", rows)
    if path not in bound:
        return []
    memo: dict[str, list[BoundLambda]] = ix.cached("bound_lambdas", dict)
    if path not in memo:
        memo[path] = _spans(ix, path, bound[path])
    return memo[path]


def _spans(ix: Index, path: str, named: list[tuple[str, int]]) -> list[BoundLambda]:
    lines = file_lines(ix, path)
    text = blank_code("\n".join(lines))
    starts = [0]
    for ln in lines:
        starts.append(starts[-1] + len(ln) + 1)
    out = []
    for name, line in named:
        if not 1 <= line <= len(lines):
            continue
        # the lambda's [ on the binding's line or the few after it (.def( / "name", / [](...) {)
        opener = text.find("[", starts[line - 1], starts[min(line + 4, len(lines))])
        close = close_bracket(text, opener, ("[", "]")) if opener >= 0 else -1
        body = text.find("{", close) if close >= 0 else -1
        if body < 0 or text[close + 1:body].count(";"):
            continue
        end = close_bracket(text, body, ("{", "}"), limit=200_000)
        if end >= 0:
            out.append(BoundLambda(line, text.count("\n", 0, end) + 1, name, Loc(path, line)))
    return out
