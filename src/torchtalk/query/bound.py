"""Python names bound to C++ that is not an op (``torch.set_num_threads``: a PyMethodDef entry; a pybind11 .def):
where each is bound, what its function calls, and the nearest ops it reaches through the dispatcher. trace answers
with these when a name is no op (query/trace.py)."""

from __future__ import annotations

from dataclasses import dataclass, field

from ..graph import down, graph
from ..graph.nodes import binding_node, symbol_id
from ..graph.py_calls import torch_c_spelling
from ..graph.registry import py_spellings
from ..graph.symbols import call_count, symbol
from ..model import CppSymbol, Cut, CutKind, Edge, EdgeKind, Node, PyApiKind
from ..store.reader import Index
from .cuts import calls_cuts

__all__ = ["BindingTrace", "bindings_named", "unknown_module_bindings"]


@dataclass
class BindingTrace:
    """A Python name bound to C++ that is not an op: where it is bound and what it runs."""

    python_name: str
    edge: Edge  # BINDING: site = the PyMethodDef / .def line
    function: CppSymbol | None
    calls: list[Edge]  # what the bound function calls (first level)
    reaches: list[Edge] = field(default_factory=list)  # DISPATCH_CALL edges: the nearest ops it dispatches to
    cuts: list[Cut] = field(default_factory=list)
    # A pybind11 binding whose module its code does not say (Note [Bindings of no known module]): it is the
    # binding of the asked name's last components, not of the asked name itself.
    module_unknown: bool = False
    # callee name -> call sites of the whole index that name it: a rare callee (PythonEngine::execute, 28) says more
    # about what the function does than a common one (c10::irange, 4,175); the text shows the rarest first
    callee_sites: dict[str, int] = field(default_factory=dict)


BINDING_REACH = 3  # calls below a bound C++ function searched for the ops it dispatches to


def bindings_named(ix: Index, name: str) -> list[BindingTrace]:
    """A Python name bound to a C++ function by a PyMethodDef table or pybind11 (torch.set_num_threads), with
    the ops the function reaches through the dispatcher (Tensor.__invert__ -> dispatch_invert -> bitwise_not)."""
    g = graph(ix)
    spellings = py_spellings(name)
    spellings += [c for s in spellings if (c := torch_c_spelling(s)) != s]
    out = []
    for spelling in spellings:
        out = [_binding(ix, spelling, e) for e in g.out(binding_node(spelling), [EdgeKind.BINDING])
               if e.binding_kind is not PyApiKind.PYBIND or spelling.startswith("torch.")]
        if out:
            break
    return out


# Note [Bindings of no known module]
# A pybind11 .def whose module the code does not say (a chain a macro writes, a class given its module as a
# parameter: README, "The Python layer") keeps its bare name in py_api: `InstructionStats.duration_ns`. Asked for
# by its Python name (torch._C.X) or its bare one, when it is no op, no binding and no Python function, trace
# answers with the binding of the longest trailing part of the name that has one, marked as such, instead of
# "no op of that name". A part that is a special method alone (`__init__`) is no such name: every class has one;
# nor is a bare method name under a qualifier of its own (`nn.Conv2d.forward`, `zzz.forward`): the `.def` of
# `forward` whose class the code does not say (torch/python.h's ModuleType::forward) is not that class's method.
# A bare name matches alone, or as torch._C's (`torch._C.X`, `_C.X`).


def unknown_module_bindings(ix: Index, name: str) -> list[BindingTrace]:
    """The pybind11 bindings of no known module a name may mean (Note [Bindings of no known module])."""
    g = graph(ix)
    out: list[BindingTrace] = []
    parts = name.split(".")
    for i in range(len(parts)):
        tail = ".".join(parts[i:])
        if not all(parts[i:]) or tail.startswith(("torch.", "Tensor.", "__")):
            continue
        if i == len(parts) - 1 and i and ".".join(parts[:i]) not in ("torch._C", "_C"):
            break  # a bare method name under a qualifier of its own
        out = [_binding(ix, tail, e, module_unknown=True) for e in g.out(binding_node(tail), [EdgeKind.BINDING])
               if e.binding_kind is PyApiKind.PYBIND]
        if out:
            break
    return out


def _binding(ix: Index, spelling: str, e: Edge, module_unknown: bool = False) -> BindingTrace:
    g = graph(ix)
    sid = symbol_id(e.dst)
    fn = symbol(ix, sid) if sid is not None else None
    calls = g.out(e.dst, [EdgeKind.CALL, EdgeKind.DISPATCH_CALL]) if fn else []
    reaches, cuts = _ops_below(ix, e.dst) if fn else ([], [])
    return BindingTrace(spelling, e, fn, calls, reaches, cuts, module_unknown, _callee_sites(ix, calls))


def _callee_sites(ix: Index, calls: list[Edge]) -> dict[str, int]:
    return {n: call_count(ix, n) for n in sorted({callee_name(e) for e in calls if e.kind is EdgeKind.CALL})}


def callee_name(e: Edge) -> str:
    """The name a call site's row keeps for its callee (the last part of the definition's qualified name)."""
    return e.dst.label.rsplit("::", 1)[-1].split("<", 1)[0]


def _ops_below(ix: Index, node: Node) -> tuple[list[Edge], list[Cut]]:
    """The first ops a C++ function reaches through the dispatcher (the nearest level that has any), and what the
    search left out that could hide a nearer one (its depth only matters when it found none)."""
    g = graph(ix)
    walk = down([node], g.out, [EdgeKind.CALL, EdgeKind.DISPATCH_CALL], BINDING_REACH, fan_out=30, max_nodes=200,
                follow=lambda s: s.edge.kind is EdgeKind.CALL, rank=_ops_first)
    found = [s for s in walk.steps if s.edge.kind is EdgeKind.DISPATCH_CALL]
    nearest = min((s.depth for s in found), default=0)
    cuts = [c for c in walk.cuts if not found or c.kind is not CutKind.DEPTH]
    return [s.edge for s in found if s.depth == nearest], calls_cuts(cuts)


def _ops_first(e: Edge) -> int:
    return 0 if e.kind is EdgeKind.DISPATCH_CALL else 2 if e.how.is_candidate or e.how.is_declaration else 1
