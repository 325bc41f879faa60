"""What leads to a raise site: the ops, Python APIs and tests upward of the function that raises.

For C++ the walk is the graph's ``up`` (graph/walk.py) from the enclosing function, across
callers, kernel registrations, DispatchStubs, generated wrappers, composite ops and
Python bindings, closest first, each op with the chain that reaches it. Two things the
graph does not say are added here, each saying how it was found: a ``TORCH_META_FUNC``
runs for the structured op it belongs to (the generated wrappers call it as
``op.meta(...)``), and a function called from more sites than a walk can resolve in time
(``check_and_update_common_device``, called by every generated wrapper) is summarised
from its call sites instead of walked through: how many, from which files, and which ops
the generated wrappers among them serve. With the store of resolved calls those are its
callers; without it, the sites of its name (a method's name is often other classes' too).
For Python the enclosing function is the API; an op it is registered for (a meta kernel,
decomposition or ref) reaches it.
"""

from __future__ import annotations

from collections.abc import Collection
from dataclasses import dataclass, field

from ..graph import FREE, LevelCap, graph, up
from ..graph.cpp_callers import callers
from ..graph.nodes import CPP_KINDS, cpp_node, op_node, py_node, symbol_id
from ..graph.op_edges import kernel_of
from ..graph.op_spellings import op_spellings
from ..graph.registry import registered_ops, registry
from ..graph.resolution import TargetKind
from ..graph.resolve import resolve as resolve_call
from ..graph.resolved import stored
from ..graph.symbols import CALL_COLS, call_count, symbol
from ..model import CallSite, CppSymbol, Cut, Edge, EdgeKind, Node, NodeKind, is_composite
from ..model.dispatch import Device
from ..model.paths import device_of_path
from ..store.codec import rows_facts
from ..store.reader import Index
from .change.tests import base_name
from .cuts import named, node_arg, tool_call
from .error_fan_in import FanIn, by_name, summary
from .error_test_names import public_api, tests_for, tests_of_its_package
from .tests import FoundTest

DEPTH = 3  # calls walked up from the raising function (registrations cost none)
PER_LEVEL = 8  # C++ functions walked on from per level (the rest are reached, not walked from)
MAX_NODES = 400
FAN_IN = 25  # call sites of one name above which its callers are summarised, not resolved
MAX_BY_NAME = 300  # call sites read when finding them by name
MAX_OPS = 12
MAX_TESTS = 5
REACH_KINDS = frozenset({EdgeKind.CALL, EdgeKind.KERNEL, EdgeKind.STUB_KERNEL, EdgeKind.STUB_CALL, EdgeKind.BINDING,
                         EdgeKind.WRAPPER, EdgeKind.OP_CALL})
BY_NAME = "found by name: {}"  # the note of an OP_CALL edge found from the call's spelling, not resolved


@dataclass
class OpReach:
    op: Node
    depth: int  # calls from the raising function (registrations cost none)
    chain: list[Edge]  # from the raising function up to the op, each edge as the graph has it
    python: list[str]  # the op's Python names


@dataclass
class Reach:
    ops: list[OpReach] = field(default_factory=list)
    ops_total: int = 0
    python: list[str] = field(default_factory=list)  # Python names reached (bindings, the ops' names)
    callers: list[Edge] = field(default_factory=list)  # the raising function's direct callers
    fan_in: list[FanIn] = field(default_factory=list)
    registered: list[str] = field(default_factory=list)  # Python: ops this function is registered for
    nested_in: str = ""  # Python: the def a nested def is defined in (Note [Nested defs]), "" when not nested
    decorators: list[str] = field(default_factory=list)  # a nested def's decorators (what registers it)
    tests_for: str = ""  # the name tests are for ("" when not asked for)
    tests_looked_up: bool = False  # False: not within the answer's budget (a cut names the call that lists them)
    tests_cpu: float = 0.0  # the work clock the test lookup took (not the walks' to spend)
    ops_partial: bool = False  # the walk up was cut (a budget, a cap, a much-called function summarised): more ops
    #                            than ops_total may reach it
    opinfos: list[str] = field(default_factory=list)  # its OpInfo entries, each with the command running it
    tests: list[FoundTest] = field(default_factory=list)
    cuts: list[str] = field(default_factory=list)  # the answer's own budgets
    walk_cuts: list[Cut] = field(default_factory=list)  # what the walk up's limits left out


class _Into:
    """The walk's edge source: the graph's edges into a node, plus the two links described above."""

    def __init__(self, ix: Index, deadline: float, prefer: str) -> None:
        self.ix = ix
        self.prefer = prefer  # the message: callers it names are the samples of a summary
        self.g = graph(ix)
        self.deadline = deadline
        self.fan_in: list[FanIn] = []
        self.timed_out = False
        self.calls = 0  # the raising function's own edges are always read
        self.keys: dict[str, set[str]] = {}  # op -> the dispatch keys of its kernels the walk came up through
        self.named: set[str] = set()  # functions (qualified) summarised by name (Note [Callers by name])

    def __call__(self, node: Node, kinds: Collection[EdgeKind]) -> list[Edge]:
        late = self.calls and self.ix.work_clock() > self.deadline
        self.calls += 1
        if late:
            # Past the budget only a much-called function is still summarised (a few queries, no resolution).
            self.timed_out = True
            if len(self.fan_in) < 2:
                self._fan_in(node)
            return []
        kinds = set(kinds)
        out: list[Edge] = []
        if node.kind is NodeKind.OP and EdgeKind.OP_CALL in kinds:
            kinds.discard(EdgeKind.OP_CALL)
            out += _op_callers_by_name(self.ix, node, self.keys.get(node.key, set()))
        sym = self._fan_in(node) if EdgeKind.CALL in kinds else None
        if sym is not None:
            kinds.discard(EdgeKind.CALL)
        out += self.g.into(node, kinds)  # a stub's uses, a meta function's op (Note [Meta functions]): the graph's
        for e in out:
            if e.kind is EdgeKind.KERNEL and e.src.kind is NodeKind.OP and e.key:
                self.keys.setdefault(e.src.key, set()).add(e.key)
        return out


    def _fan_in(self, node: Node) -> CppSymbol | None:
        """Summarise the callers of a much-called C++ function (and return it), or None."""
        sid = symbol_id(node)
        sym = symbol(self.ix, sid) if sid is not None else None
        if sym is None or sym.kind.is_structured:  # the generated wrappers call those as op.meta / op.impl
            return None
        n = call_count(self.ix, sym.name)
        if n <= FAN_IN:
            return None
        if stored(self.ix) is not None:
            # With the calls resolved and stored, its callers are cheap to read: only as many of those as a walk
            # cannot take are summarised, never the sites of every function of its name (`stop`, `query`, `take`).
            real = callers(self.ix, node)
            if len(real) <= FAN_IN:
                return None
            ids = self.ix.file_ids()
            rows = [(int(key), ids.get(e.site.path, -1), e.site.line, e.src.label.rsplit("::", 1)[-1])
                    for e in real if (key := symbol_id(e.src)) is not None and e.site is not None]
            self.fan_in.append(summary(self.ix, node, rows, len(real), self.prefer))
            return sym
        # another overload of the function: the same sites, summarised once (by its qualified name: by_name keeps
        # the sites of its own class, so A::run's summary is not B::run's)
        if sym.qualname in self.named:
            return sym
        self.named.add(sym.qualname)
        rows, others = by_name(self.ix, sym)  # Note [Callers by name]
        self.fan_in.append(summary(self.ix, node, rows, len(rows), self.prefer, True, others))
        return sym


def _op_callers_by_name(ix: Index, node: Node, keys: set[str]) -> list[Edge]:
    """OP_CALL edges into an op from the calls spelled ``at::op(...)`` / ``at::_ops::op::call`` in composite
    kernels, and in the kernels for a dispatch key the walk came up through (``keys``: add.Tensor's SparseCPU
    kernel calling ``at::add_out`` reaches add.out's SparseCPU kernel, and only that one). Each edge says it was
    found by name: the graph's own rule (op_edges.op_called_by) resolves every call site of the op and follows
    file-local helpers, which costs seconds for a much-called op. Only the names that can spell this overload
    are read (``at::add`` is never add.out, which C++ spells ``at::add_out``), and each site is kept only when
    its arguments bind this overload (``resolve``: from the store of resolved calls when there is one)."""
    op = registry(ix).by_full.get(node.key)
    if op is None:
        return []
    names = op_spellings(op)
    marks = ",".join("?" * len(names))
    rows = ix.q(f"SELECT {CALL_COLS} FROM cpp_call WHERE (callee IN ({marks}) AND qualifier IN ('at', '::at')) "
                f"OR (callee = 'call' AND qualifier = ?) LIMIT {MAX_BY_NAME}", (*names, f"at::_ops::{op.struct_name}"))
    out: dict[str, Edge] = {}
    for call in rows_facts(CallSite, rows, ix.paths()):
        sym = symbol(ix, call.caller) if call.has_caller else None
        if sym is None:
            continue
        res = resolve_call(ix, call, sym)
        if res.kind is not TargetKind.OP or node.key not in res.ops:
            continue
        for k in kernel_of(ix, cpp_node(sym)):
            if (is_composite(k.key) or k.key in keys) and k.src.key != node.key and k.src.key not in out:
                out[k.src.key] = Edge(k.src, node, EdgeKind.OP_CALL, call.loc, k.key,
                                      BY_NAME.format(f"{sym.display} calls {call.qualifier}::{call.callee}"))
    return list(out.values())


def cpp_reach(ix: Index, func: Node, budget: float, tests_until: float, message: str = "") -> Reach:
    """What reaches ``func``: its walk up stops expanding after ``budget`` seconds of this thread's CPU, less what it
    spends building shared tables (``Index.work_clock``: the answer depends neither on how busy the machine is nor on
    what was loaded before); tests are looked up when that clock is still before ``tests_until``."""
    into = _Into(ix, ix.work_clock() + budget, message)
    walk = up([func], into, REACH_KINDS, DEPTH, fan_out=60, max_nodes=MAX_NODES,
              follow=LevelCap(PER_LEVEL, CPP_KINDS))
    steps = walk.steps
    reach = Reach(fan_in=into.fan_in)
    reg = registry(ix)
    python: dict[str, None] = {}
    ops: list[OpReach] = []
    for s in steps:
        node = s.node
        if node.kind is NodeKind.OP:
            op = reg.by_full.get(node.key)
            names = reg.names_shown(op)
            ops.append(OpReach(node, s.depth, s.chain(), names))
        elif node.kind is NodeKind.BINDING:
            python.setdefault(node.key)
        if s.parent is None and s.edge.kind in (EdgeKind.CALL, EdgeKind.LAUNCH) and node.kind in CPP_KINDS:
            reach.callers.append(s.edge)
    # Ops whose generated wrappers are among a much-called function's sampled callers reach the site too.
    chains = {(st.node.kind, st.node.key): st.chain() for st in steps}
    for fan in into.fan_in:
        base = chains.get((fan.callee.kind, fan.callee.key), [])
        for w in fan.entries:
            op = reg.by_full.get(w.src.key)
            sample = next((e for e in fan.samples if e.src.key == w.dst.key), None)
            if op is not None and sample is not None and all(o.op.key != op.full_name for o in ops):
                names = reg.names_shown(op)
                ops.append(OpReach(w.src, sum(e.kind not in FREE for e in base) + 1, [*base, sample, w], names))
    # Closest first; public ops (a Python name without a leading underscore) before internal ones.
    ops.sort(key=lambda o: (o.depth, not any(not n.split(".")[-1].startswith("_") for n in o.python),
                            o.op.key.startswith("_"), "out" in o.op.key.partition(".")[2], o.op.key))
    reach.ops_total = len(ops)
    reach.ops = ops[:MAX_OPS]
    reach.ops_partial = bool(into.fan_in or into.timed_out or walk.cuts)
    for o in reach.ops:
        python.update(dict.fromkeys(n for n in o.python if not n.startswith("torch._C._")))
    reach.python = list(python)[:12]
    if into.timed_out:
        reach.cuts.append(f"the walk up stopped at its budget ({budget * 1000:.0f} ms of CPU); impact() on the "
                          "function walks further")
    reach.walk_cuts = named(walk.cuts, lambda c: tool_call("impact", node_arg(c.at), depth=DEPTH + 1)
                            if c.at is not None else "", down=False)
    if len(ops) > MAX_OPS:
        reach.cuts.append(f"ops: showing the {MAX_OPS} closest of {len(ops)}")
    device = device_of_path(func.loc.path) if func.loc is not None else None
    api = public_api(reach.ops[0].python, reach.python) if reach.ops else ""
    _tests(ix, reach, [o.op.key for o in reach.ops], tests_until, device, api)
    return reach


PY_DEPTH = 3  # levels of Python callers walked up from a Python raise site
PY_CALLERS_S = 0.05  # CPU (work clock) the walk up may take


def _py_callers(ix: Index, func: Node, reach: Reach) -> None:
    """The Python functions that call the raising one, up to PY_DEPTH levels within PY_CALLERS_S (the answer's own
    budget, named when it stops the walk): the direct callers, and the public ones among them all (an nn module's
    forward, a scheduler's get_lr), which are what a user calls."""
    g = graph(ix)
    until = ix.work_clock() + PY_CALLERS_S

    def into(node: Node, kinds: Collection[EdgeKind]) -> list[Edge]:
        if ix.work_clock() <= until:
            return g.into(node, kinds)
        cut = f"the walk up through Python callers stopped at its budget ({PY_CALLERS_S * 1000:.0f} ms of CPU)"
        if cut not in reach.cuts:
            reach.cuts.append(cut)
        return []
    walk = up([func], into, [EdgeKind.PY_CALL], PY_DEPTH, fan_out=20, max_nodes=40)
    reach.callers = [s.edge for s in walk.steps if s.parent is None]
    public = [s.node.key for s in walk.steps if s.node.kind is NodeKind.PY_FUNCTION
              and not any(p.startswith("_") and not p.startswith("__") for p in s.node.key.split("."))]
    reach.python = list(dict.fromkeys([*reach.python, *public]))[:12]


# Note [Nested defs]
# ~~~~~~~~~~~~~~~~~~
# A raise in a def nested in another (``impl_hpu`` in register_run_and_save_rng_state_op, ``new_old_event_comparator``
# in BasicEvaluation.compute_queue_depth) is in the innermost def, named as Python's __qualname__ names it
# (``outer.<locals>.inner``). Nothing outside calls it by name: it runs where the outer def's body uses it (calls it,
# passes it on: ``sort(key=inner)``), or, when a decorator registers it (``@hop.py_impl(DispatchKey.HPU)``,
# ``@register_lowering(...)``), where that registration dispatches, which calling the outer def never does. So the
# answer names the outer def and the decorators; the walk up through Python callers starts at the outer def only for
# an undecorated def (its callers may reach the raise), and for a decorated one not at all.
def py_reach(ix: Index, func_id: int, fq: str, cls: str, name: str, tests_until: float,
             func: Node | None = None, decorators: list[str] | None = None) -> Reach:
    reach = Reach()
    reg = registry(ix)
    rows = ix.q("SELECT op, kind FROM py_op_ref WHERE func = ?", (func_id,))
    for op_name, kind in rows:
        reach.registered.append(f"{op_name} ({kind})")
        for op in sorted(registered_ops(reg, op_name), key=lambda o: ("." in o.full_name, o.full_name))[:2]:
            names = reg.names_shown(op)
            reach.ops.append(OpReach(op_node(op), 0, [], names))
    reach.ops_total = len(reach.ops)
    outer, nested, _inner = fq.rpartition(".<locals>.")
    if nested:
        reach.nested_in, reach.decorators = outer, list(decorators or [])
        if func is not None and not reach.decorators:
            outer_node = py_node(NodeKind.PY_FUNCTION, outer, None)
            reach.python = [outer]
            _py_callers(ix, outer_node, reach)
    else:
        reach.python = [fq]
        if func is not None:
            _py_callers(ix, func, reach)
    subject = cls.split(".")[-1] if cls and name in ("__init__", "__call__", "forward", "step") else name
    if subject.startswith("_") and len(reach.python) > 1:  # a private helper: tests name what calls it (StepLR)
        parts = reach.python[1].split(".")
        subject = parts[-2] if len(parts) > 1 and parts[-2][:1].isupper() else parts[-1]
    _tests(ix, reach, [o.op.key for o in reach.ops] or [subject], tests_until)
    if not reach.ops and (reach.tests or reach.opinfos):  # Note [Tests of a Python function's package]
        reach.tests, cut = tests_of_its_package(ix, reach.tests, len(reach.opinfos), func_id, subject)
        reach.cuts, reach.opinfos = (reach.cuts + [cut], []) if cut else (reach.cuts, reach.opinfos)
    return reach


def _tests(ix: Index, reach: Reach, names: list[str], until: float, device: Device | None = None,
           api: str = "") -> None:
    """Tests for the first name, and past an internal op for the first public one (error_test_names.tests_for: the
    OpInfo entries first) when there is time left before ``until`` (0: not asked for); the name is kept so the answer
    can name the call either way. A site in code of one ``device`` (aten/src/ATen/native/cuda/) leaves out the
    tests written for another device (TestMPS)."""
    if not names or not until:
        return
    base = base_name(names[0])
    reach.tests_for = base
    if ix.work_clock() > until:
        reach.cuts.append(f"tests were not looked up within the answer's time budget: "
                          f"find_similar_tests(\"{base}\") lists them")
        return
    began = ix.work_clock()
    reach.tests_for, opinfos, reach.tests, cut = tests_for(ix, names, MAX_TESTS, device, api)
    reach.cuts += [cut] if cut else []
    reach.tests_cpu = ix.work_clock() - began
    reach.tests_looked_up = True
    reach.opinfos = [f"OpInfo('{n}')" + (f" variant {v!r}" if v else "") + f": {c}" for n, v, c in opinfos[:2]]
