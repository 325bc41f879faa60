"""calls / called_by / impact: traversals of the graph around C++ functions and DispatchStubs.

Down from a function: resolved calls, ops through the dispatcher, DispatchStubs with each
backend's kernel, GPU launches. Up to a function: its callers, and whatever reaches it
through a registration (the op whose kernel it is, the stub it is registered for, the
Python name bound to it). impact walks up level by level across all of these.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace

from ..graph import LevelCap, graph, up
from ..graph.nodes import CPP_KINDS
from ..graph.stubs import registered
from ..model import CppSymbol, Cut, CutKind, Edge, EdgeHow, EdgeKind, Node, NodeKind, PyApiKind, Registration
from ..store.reader import Index
from .args import check_int
from .cuts import named, node_arg, tool_call
from .functions import Target, find_targets
from .results import Ambiguous, NotFound

MAX_LEVEL_NODES = 60
MAX_DEPTH = 5  # impact's largest depth=
# A generated wrapper (RegisterCPU.cpp's wrapper_CPU_cos_out_out, which copies a structured kernel's result with
# copy_) is the kernel the dispatcher runs for its op and key: walked up, it is that op's (WRAPPER), not a dead end
# that takes a place of the level's walk.
IMPACT_KINDS = frozenset({EdgeKind.CALL, EdgeKind.LAUNCH, EdgeKind.KERNEL, EdgeKind.DISPATCH_CALL, EdgeKind.STUB_KERNEL,
                          EdgeKind.STUB_CALL, EdgeKind.BINDING, EdgeKind.ENTRY, EdgeKind.WRAPPER})
REGISTRATION_KINDS = frozenset({EdgeKind.KERNEL, EdgeKind.STUB_KERNEL, EdgeKind.BINDING, EdgeKind.WRAPPER,
                                EdgeKind.ENTRY})


@dataclass
class StubCall:
    """A DispatchStub called (or passed on) here, with the kernel each backend registers for it."""

    call: Edge  # STUB_CALL
    kernels: list[Edge]  # STUB_KERNEL, key = backend


@dataclass
class CallsSection:
    function: Node
    symbol: CppSymbol | None  # None for a DispatchStub
    calls: list[Edge] = field(default_factory=list)  # CALL (several edges at one site: candidates)
    ops: list[Edge] = field(default_factory=list)  # DISPATCH_CALL
    stubs: list[StubCall] = field(default_factory=list)
    launches: list[Edge] = field(default_factory=list)  # LAUNCH
    unresolved: list[Edge] = field(default_factory=list)  # UNRESOLVED (not macros)
    # CALL edges of functions named without a call (Note [References] in extract/cpp_calls.py): after the calls
    references: list[Edge] = field(default_factory=list)
    macros: list[str] = field(default_factory=list)
    kernels: list[Edge] = field(default_factory=list)  # for a stub: STUB_KERNEL per backend


@dataclass
class CallsResult:
    query: str
    sections: list[CallsSection]
    ambiguity: Ambiguous | None


@dataclass
class CalledBySection:
    function: Node
    symbol: CppSymbol | None
    callers: list[Edge]  # CALL into a function, STUB_CALL into a stub
    registrations: list[Edge]  # KERNEL / STUB_KERNEL / BINDING / WRAPPER edges into it (a stub: its kernels)
    total_callers: int
    # CALL edges of the functions that name it without a call (Note [References] in extract/cpp_calls.py)
    references: list[Edge] = field(default_factory=list)
    no_kernel: list[Registration] = field(default_factory=list)  # a stub's REGISTER_NO_<backend>_DISPATCH lines


@dataclass
class CalledByResult:
    query: str
    sections: list[CalledBySection]
    ambiguity: Ambiguous | None


@dataclass
class ImpactLevel:
    depth: int
    callers: list[Edge]  # the edge that reached each caller (its site is the call)
    total: int


@dataclass
class ImpactSection:
    function: Node
    symbol: CppSymbol | None
    levels: list[ImpactLevel]
    ops: list[tuple[Node, Edge, int]]  # (op, the edge that reached it, level)
    python: list[tuple[Node, Edge]]  # (Python name, its binding edge)
    stopped_at: int
    cuts: list[Cut]  # what the walk left out (a level's cap, its depth, ...), with the call that shows it
    # Python name bound by hand-written C++ -> the Python calls of it (torch._C._cuda_synchronize ->
    # torch.cuda.synchronize at torch/cuda/__init__.py:985), every one
    python_callers: dict[str, list[Edge]] = field(default_factory=dict)


@dataclass
class ImpactResult:
    query: str
    depth: int
    sections: list[ImpactSection]
    ambiguity: Ambiguous | None


def _targets(ix: Index, function_name: object) -> tuple[list[Target], Ambiguous | None] | NotFound:
    return find_targets(ix, function_name)


# ------------------------------------------------------------------ calls

def _calls_of(ix: Index, t: Target) -> CallsSection:
    g = graph(ix)
    sec = CallsSection(t.node, t.symbol)
    if t.is_stub:
        sec.kernels = g.out(t.node, [EdgeKind.STUB_KERNEL])
        return sec
    macros: dict[str, None] = {}
    for e in g.out(t.node, [EdgeKind.CALL, EdgeKind.DISPATCH_CALL, EdgeKind.STUB_CALL, EdgeKind.LAUNCH,
                            EdgeKind.UNRESOLVED]):
        if e.kind is EdgeKind.CALL:
            (sec.references if e.how is EdgeHow.REFERENCED else sec.calls).append(e)
        elif e.kind is EdgeKind.DISPATCH_CALL:
            sec.ops.append(e)
        elif e.kind is EdgeKind.STUB_CALL:  # a stub only handed on is called one level deeper (Note [Stub uses])
            if e.how is EdgeHow.DIRECT:
                sec.stubs.append(StubCall(e, g.out(e.dst, [EdgeKind.STUB_KERNEL])))
        elif e.kind is EdgeKind.LAUNCH:
            sec.launches.append(e)
        elif e.how is EdgeHow.MACRO:
            macros.setdefault(e.dst.label.split("::")[-1])
        else:
            sec.unresolved.append(e)
    for edges in (sec.calls, sec.ops, sec.launches, sec.unresolved, sec.references):
        edges.sort(key=_site_order)
    sec.macros = list(macros)
    return sec


def _site_order(e: Edge) -> tuple[int, str]:
    return (e.site.line if e.site else 0, e.dst.label)


def calls(ix: Index, function_name: str) -> CallsResult | NotFound:
    found = _targets(ix, function_name)
    if isinstance(found, NotFound):
        return found
    targets, amb = found
    return CallsResult(str(function_name).strip(), [_calls_of(ix, t) for t in targets], amb)


# ------------------------------------------------------------------ called_by

def _called_by(ix: Index, t: Target) -> CalledBySection:
    g = graph(ix)
    if t.is_stub:
        callers = g.into(t.node, [EdgeKind.STUB_CALL])
        regs = g.out(t.node, [EdgeKind.STUB_KERNEL])
    else:
        callers = g.into(t.node, [EdgeKind.CALL, EdgeKind.LAUNCH])
        regs = g.into(t.node, REGISTRATION_KINDS)
    callers.sort(key=lambda e: (e.site.path, e.site.line) if e.site else ("", 0))
    refs = [e for e in callers if e.how is EdgeHow.REFERENCED]
    callers = [e for e in callers if e.how is not EdgeHow.REFERENCED]
    # a backend registered with no kernel (REGISTER_NO_CPU_DISPATCH): said, not left out as if unregistered
    empty = [r for r in registered(ix, t.node.key) if not r.target_name] if t.is_stub else []
    return CalledBySection(t.node, t.symbol, callers, regs, len(callers), refs, empty)


def called_by(ix: Index, function_name: str) -> CalledByResult | NotFound:
    found = _targets(ix, function_name)
    if isinstance(found, NotFound):
        return found
    targets, amb = found
    return CalledByResult(str(function_name).strip(), [_called_by(ix, t) for t in targets], amb)


# ------------------------------------------------------------------ impact

def kernel_keys(ix: Index, e: Edge) -> str:
    """Every key an op serves with the kernel of a KERNEL edge (a walk crosses one: CPU, CUDA for div_out)."""
    keys = [k.key for k in graph(ix).out(e.src, [EdgeKind.KERNEL]) if k.dst.key == e.dst.key]
    return ", ".join(dict.fromkeys(keys or [e.key]))


def _impact(ix: Index, t: Target, depth: int) -> ImpactSection:
    g = graph(ix)
    # Walk on from at most MAX_LEVEL_NODES functions a level (the rest are counted, not expanded).
    cap = LevelCap(MAX_LEVEL_NODES, CPP_KINDS)
    walk = up([t.node], g.into, IMPACT_KINDS, depth, fan_out=400, max_nodes=3000, follow=cap)
    steps = walk.steps
    levels: dict[int, list[Edge]] = {}
    ops: list[tuple[Node, Edge, int]] = []
    python: dict[str, tuple[Node, Edge]] = {}
    for s in steps:
        node = s.node
        if node.kind in CPP_KINDS and s.edge.kind in (EdgeKind.CALL, EdgeKind.DISPATCH_CALL, EdgeKind.STUB_CALL,
                                                      EdgeKind.LAUNCH):
            levels.setdefault(s.depth, []).append(s.edge)
        elif node.kind is NodeKind.OP:
            ops.append((node, replace(s.edge, key=kernel_keys(ix, s.edge)) if s.edge.kind is EdgeKind.KERNEL
                        else s.edge, s.depth))
        elif node.kind is NodeKind.BINDING:
            python.setdefault(node.key, (node, s.edge))
    out = [ImpactLevel(d, edges[:MAX_LEVEL_NODES], len(edges)) for d, edges in sorted(levels.items())]
    stopped = max(levels) if levels else 0
    me = node_arg(t.node)

    def further(c: Cut) -> str:
        if c.kind is CutKind.DEPTH and depth < MAX_DEPTH:
            return tool_call("impact", me, depth=depth + 1)
        return tool_call("impact", node_arg(c.at), depth=depth) if c.at is not None else ""

    cuts = named(walk.cuts + cap.cuts(), further, down=False)
    # Who calls a hand-written binding from Python (an op's Python names are the op's: trace shows their callers)
    py_callers = {key: sorted(callers, key=_public_first)
                  for key, (node, edge) in python.items() if edge.binding_kind in _HAND_WRITTEN
                  and (callers := g.into(node, [EdgeKind.PY_CALL]))}
    return ImpactSection(t.node, t.symbol, out, ops, list(python.values()), stopped, cuts, py_callers)


_HAND_WRITTEN = (PyApiKind.PYMETHODDEF, PyApiKind.PYBIND)


def _public_first(e: Edge) -> tuple[int, str, int]:
    """Python callers ranked as a user meets them: fewer private parts (torch._dynamo, <locals>) first, then by
    place: torch.autograd.grad_mode.set_grad_enabled.__init__ before torch._dynamo's wrappers."""
    private = sum(p.startswith("_") and not p.startswith("__") or p == "<locals>" for p in e.src.key.split("."))
    return (private, e.site.path if e.site else "", e.site.line if e.site else 0)


def impact(ix: Index, function_name: str, depth: int = 3) -> ImpactResult | NotFound:
    depth = check_int(depth, "depth", 1, MAX_DEPTH)
    found = _targets(ix, function_name)
    if isinstance(found, NotFound):
        return found
    targets, amb = found
    return ImpactResult(str(function_name).strip(), depth, [_impact(ix, t, depth) for t in targets], amb)
