"""find_similar_tests as the tool answers it: past what a query finds as asked, the tests of the op whose backward
calls a backward op or of the public Python function that calls the op, and "not found" with close names for a
query no test, entry or name answers."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import replace
from itertools import islice

from ..graph import graph
from ..graph.nodes import op_node
from ..graph.py_calls import ops_of_python
from ..graph.pynames import pynames
from ..graph.registry import registry
from ..model import EdgeHow, EdgeKind
from ..store.reader import Index, like_literal
from .functions import suggest
from .results import NotFound
from .tests import SimilarTestsResult, find_similar_tests

CALLERS_TRIED = 3  # Python callers of an op no test names whose tests are looked for, in the graph's order


def similar_tests(ix: Index, query: str, limit: int = 20) -> SimilarTestsResult | NotFound:
    """find_similar_tests as the tool answers it: a query that no test, OpInfo entry or generic suite answers, and that
    names nothing the index knows, is not found, with the names close to its words (a misspelt op: grid_sampel ->
    grid_sample); a name it knows that no test mentions is that answer (no tests), not a typo."""
    found = find_similar_tests(ix, query, limit)
    if found.total or found.opinfos or found.generic is not None:
        return found
    forward = _backward_of(ix, found.query)
    if forward is not None:  # conv_tbc_backward: conv_tbc's gradchecks run it
        other = find_similar_tests(ix, forward, limit)
        if other.total or other.opinfos:
            return replace(other, query=found.query, note=(
                f"No test names {found.query!r}: these are the tests of {forward!r}, whose derivatives.yaml formula "
                "calls it (its gradient checks run it)"))
    # _upsample_bicubic2d_aa: F.interpolate(mode="bicubic", antialias=True) calls it, and its tests run it
    for op in (found.query, *([forward] if forward else [])):
        for caller in islice(_python_callers(ix, op), CALLERS_TRIED):  # each is a whole search of the tests
            other = find_similar_tests(ix, caller, limit)
            if other.total or other.opinfos:
                calls = "it" if op == found.query else f"{op!r}, whose derivatives.yaml formula calls it"
                return replace(other, query=found.query, note=(
                    f"No test names {found.query!r}: these are the tests of {caller}, which calls {calls}"))
    words = sorted(set(found.query.split()), key=len, reverse=True)
    close = [s for w in words for s in suggest(ix, w)]
    if registry(ix).lookup(found.query) or any(w.lower() in {c.lower() for c in close} for w in words):
        return found  # an op (quantized_batch_norm) or a name the tree has, that no test mentions: no tests
    return NotFound("test or OpInfo entry", found.query, list(dict.fromkeys(close))[:8],
                    "No test name, test body or OpInfo entry mentions it. Give an op, function or concept as tests "
                    "name it ('softmax', 'torch.cumsum', 'nn.Linear', 'gradient clipping'); search() finds the exact "
                    "name of an op or kernel.")


def _python_callers(ix: Index, name: str) -> Iterator[str]:
    """The public Python functions that call op ``name`` (any overload), each once: those of the Python API modules
    the graph links (torch.nn, torch.functional, torch._tensor), then those of any public module of torch/
    (torch.autograd.forward_ad.unpack_dual calls torch._VF._unpack_dual), by the call as written and resolved; the
    calls of the whole tree are read only when the first are not enough."""
    reg = registry(ix)
    ops = reg.lookup(name)
    seen: set[str] = set()
    for e in (e for op in ops for e in graph(ix).into(op_node(op), [EdgeKind.BINDING])):
        if e.how is EdgeHow.PY_CALLER and e.src.key not in seen:
            seen.add(e.src.key)
            yield e.src.key
    lasts = {p.name.rsplit(".", 1)[-1] for op in ops for p in reg.python_names(op)}
    names = pynames(ix)
    for last in sorted(lasts):
        for module, qualname, callee in ix.q(
                "SELECT f.module, f.qualname, c.callee FROM py_call c JOIN py_function f ON f.id = c.func "
                "WHERE c.recv = '' AND (c.callee = ? OR c.callee LIKE ? ESCAPE '\\') ORDER BY c.id",
                (last, "%." + like_literal(last))):
            fq = f"{module}.{qualname}"
            if fq in seen or "<locals>" in qualname or any(p.startswith("_") for p in fq.split(".")):
                continue
            if any(op in ops_of_python(ix, names.resolve_in(module, callee)) for op in ops):
                seen.add(fq)
                yield fq


def _backward_of(ix: Index, name: str) -> str | None:
    """The op whose backward formula calls op ``name`` (conv_tbc for conv_tbc_backward), or None."""
    ops = registry(ix).lookup(name)
    forward = [e.src.key.split(".")[0] for op in ops for e in graph(ix).into(op_node(op), [EdgeKind.BACKWARD])]
    return next((f for f in forward if f != name.split(".")[0]), None)


