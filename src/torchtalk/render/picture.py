"""Any graph-shaped answer as a picture: typed nodes and labelled edges, ready for Mermaid or the web view.

The converter knows no tool. It walks a result's dataclasses and collects every
``Edge`` (and the ``Node`` values a section is about); a few result parts say
edges by their structure rather than as ``Edge`` values (an op's kernel per
dispatch key, a module's call tree), and each of those has one adapter here,
chosen by the part's type. A new query whose result holds ``Edge`` values gets
its picture with no code here.

Node ids are ``kind:key`` with the keys of graph/nodes.py, so pictures of two
answers (the web view's expansions) merge on the same nodes.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator
from dataclasses import dataclass, field

from ..model import Edge, EdgeHow, EdgeKind, Loc, Node, NodeKind
from ..model.graph import cpp_node, op_node
from ..query.bound import BindingTrace
from ..query.change.result import AffectedResult
from ..query.modules import CallNode, TraceModuleResult
from ..query.trace_results import KernelInfo, OpTrace, PythonEntry

# Layers, in the order execution crosses them (the web view's legend and colours follow this order).
LAYERS = ("python", "op", "cpp", "generated", "stub", "gpu", "autograd", "test", "unresolved")
LAYER_NAMES = {"python": "Python", "op": "op (native_functions.yaml)", "cpp": "C++ function or kernel",
               "generated": "generated wrapper", "stub": "DispatchStub", "gpu": "GPU kernel",
               "autograd": "autograd node", "test": "test", "unresolved": "unresolved call"}
LAYER_OF = {NodeKind.PY_FUNCTION: "python", NodeKind.PY_CLASS: "python", NodeKind.BINDING: "python",
            NodeKind.OP: "op", NodeKind.CPP_FUNCTION: "cpp", NodeKind.WRAPPER: "generated", NodeKind.STUB: "stub",
            NodeKind.GPU_KERNEL: "gpu", NodeKind.AUTOGRAD_NODE: "autograd", NodeKind.TEST: "test",
            NodeKind.UNRESOLVED: "unresolved"}
# Picture-only edge kinds, for links a result states without an Edge value.
REACHES = "reaches"  # a kernel reaches a stub call or a launch within a few calls (the path is not in the answer)
DEFINES = "defines"  # a class -> its forward / step
TESTED_BY = "tested_by"  # an op (or changed Python name) -> a test that affected ranks for it


@dataclass
class PNode:
    id: str
    kind: str  # a NodeKind value
    layer: str
    label: str
    loc: str  # "path:line", "" when unknown
    root: bool = False  # what the answer is about
    group: str = ""  # the collapsed group holding it ("" when shown)


@dataclass
class PEdge:
    id: str
    source: str
    target: str
    kind: str  # an EdgeKind value, REACHES or DEFINES
    key: str = ""  # dispatch key or backend
    note: str = ""
    site: str = ""  # "path:line" of the call, registration or YAML line


@dataclass
class PGroup:
    """Nodes not shown, counted on one node next to the shown node they hang from ("+37 callers")."""

    id: str
    anchor: str  # the shown node ("" for nodes reached from nothing shown)
    direction: str  # "in": they lead to the anchor (callers); "out": the anchor leads to them
    label: str
    count: int


@dataclass
class Picture:
    title: str
    nodes: dict[str, PNode] = field(default_factory=dict)
    edges: dict[str, PEdge] = field(default_factory=dict)
    groups: dict[str, PGroup] = field(default_factory=dict)

    def to_json(self) -> dict[str, object]:
        return {"title": self.title, "layers": [{"id": k, "name": LAYER_NAMES[k]} for k in LAYERS],
                "nodes": [dataclasses.asdict(n) for n in self.nodes.values()],
                "edges": [dataclasses.asdict(e) for e in self.edges.values()],
                "groups": [dataclasses.asdict(g) for g in self.groups.values()]}


def node_id(node: Node) -> str:
    return f"{node.kind.value}:{node.key}"


def _loc(loc: Loc | None) -> str:
    return str(loc) if loc else ""


def _edge_note(e: Edge) -> str:
    """An edge's display line: a Python call as written, the edge's note, how it was made when not plain."""
    parts = [e.written] if e.kind is EdgeKind.PY_CALL and e.written else [e.key] if e.binding_kind else []
    parts += [e.note] if e.note else [e.how.value.replace("_", " ")] if e.how is not EdgeHow.DIRECT else []
    return "; ".join(parts)


class _Builder:
    def __init__(self, title: str) -> None:
        self.pic = Picture(title)
        self.bridges: list[tuple[Node, Node, str]] = []  # (from, to, note): added only where nothing else leads

    def node(self, n: Node, root: bool = False) -> str:
        nid = node_id(n)
        have = self.pic.nodes.get(nid)
        if have is None:
            self.pic.nodes[nid] = PNode(nid, n.kind.value, LAYER_OF[n.kind], n.label, _loc(n.loc), root)
        else:
            have.root = have.root or root
            have.loc = have.loc or _loc(n.loc)
        return nid

    def edge(self, src: Node, dst: Node, kind: str, key: str = "", note: str = "", site: Loc | None = None) -> None:
        s, d = self.node(src), self.node(dst)
        eid = f"{s}>{d}|{kind}|{key}|{_loc(site)}"
        if eid not in self.pic.edges:
            self.pic.edges[eid] = PEdge(eid, s, d, kind, key, note, _loc(site))

    def typed(self, e: Edge) -> None:
        # Dispatch keys and backends label an edge; a binding's kind is its note, like the call as written.
        binding = e.kind is EdgeKind.BINDING
        self.edge(e.src, e.dst, e.kind.value, "" if binding else e.key, _edge_note(e), e.site)

    def finish(self) -> Picture:
        led_to = {e.target for e in self.pic.edges.values()}
        for src, dst, note in self.bridges:
            if node_id(dst) not in led_to:
                self.edge(src, dst, REACHES, note=note)
        return self.pic


# ------------------------------------------------------------------ adapters: edges a result states by its shape

def _op_trace(b: _Builder, t: OpTrace) -> None:
    op = op_node(t.op)
    b.node(op, root=True)
    for p in t.python:  # torch.softmax, Tensor.softmax -> the op
        b.edge(Node(NodeKind.BINDING, p.name, p.name, p.loc), op, "binding", note=str(p.kind))
    for k in t.kernels:
        _kernel(b, op, k)


def _kernel(b: _Builder, op: Node, k: KernelInfo) -> None:
    defs = [cpp_node(d) for d in k.definitions]
    if not defs:  # named in the YAML, no definition indexed: keep the name
        defs = [Node(NodeKind.UNRESOLVED, k.entry.kernel, k.entry.kernel)]
    for d in defs:
        b.edge(op, d, "kernel", str(k.entry.key), k.entry.via, k.entry.loc)
    # Stub calls and launches are found within a few calls of the kernel: say so where the path is not shown.
    starts = [s.call.src for s in k.stubs] + [e.src for e in k.launches]
    for n in starts:
        if all(node_id(n) != node_id(d) for d in defs):
            b.bridges.append((defs[0], n, "within a few calls"))


def _python_entry(b: _Builder, e: PythonEntry) -> None:
    if e.calls:
        b.node(e.calls[0].src, root=True)
    else:
        b.node(Node(NodeKind.PY_FUNCTION, e.name, e.name, e.loc), root=True)


def _binding_trace(b: _Builder, t: BindingTrace) -> None:
    b.node(t.edge.src, root=True)


def _trace_module(b: _Builder, r: TraceModuleResult) -> None:
    cls = Node(NodeKind.PY_CLASS, r.cls.fq, r.cls.fq, r.cls.loc)
    b.node(cls, root=True)
    if r.entry is None:
        return
    method = f"{r.entry.owner}.{r.entry.name}"
    entry = Node(NodeKind.PY_FUNCTION, method, method, r.entry.loc)
    b.edge(cls, entry, DEFINES, note=r.entry.name)
    for c in r.entry.calls:
        _call_node(b, entry, c)


def _call_node(b: _Builder, parent: Node, c: CallNode) -> None:
    if c.ops:
        targets = [op_node(op) for op in c.ops]
    elif c.target and c.target != "?":
        targets = [Node(NodeKind.PY_FUNCTION, c.target, c.target, c.target_loc)]
    else:
        targets = [Node(NodeKind.UNRESOLVED, c.written, c.written)]
    for t in targets:
        b.edge(parent, t, "py_call", note=c.written, site=c.site)
    for child in c.children:
        _call_node(b, targets[0], child)


def _affected(b: _Builder, r: AffectedResult) -> None:
    """The changed nodes are what the answer is about; each ranked test hangs from the op (or the changed
    node) it was chosen for, so the picture goes from the change to the tests to run."""
    for c in r.changed:
        b.node(c.node, root=True)
    targets: dict[str, Node] = {}
    for c in r.changed:
        targets.setdefault(c.node.key, c.node)
    for o in r.ops:
        targets.setdefault(o.op.key, o.op)
        targets.setdefault(o.op.key.split(".")[0], o.op)
    for t in r.tests:
        src = targets.get(t.target)
        if src is not None:
            b.edge(src, Node(NodeKind.TEST, t.name, t.name, t.loc), TESTED_BY, note=t.kind)


_ADAPTERS = {OpTrace: _op_trace, PythonEntry: _python_entry, BindingTrace: _binding_trace,
             TraceModuleResult: _trace_module, AffectedResult: _affected}


# ------------------------------------------------------------------ the generic walk

def _parts(x: object) -> Iterator[tuple[str, object]]:
    if dataclasses.is_dataclass(x) and not isinstance(x, type):
        for f in dataclasses.fields(x):
            yield f.name, getattr(x, f.name)
    elif isinstance(x, dict):
        yield from (("", v) for v in x.values())
    elif isinstance(x, (list, tuple)):
        yield from (("", v) for v in x)


def _walk(b: _Builder, x: object, seen: set[int]) -> None:
    if isinstance(x, Edge):
        b.typed(x)
        return
    if id(x) in seen or isinstance(x, (str, int, float, bool, Node)) or x is None:
        return
    seen.add(id(x))
    if type(x).__module__.startswith("torchtalk.model"):
        return  # facts (Op, CppSymbol, ...) hold no edges
    adapter = _ADAPTERS.get(type(x))
    if adapter is not None:
        adapter(b, x)  # type: ignore[operator]
    for name, value in _parts(x):
        # A section's subject: the function a calls / called_by / impact section (or the like) is about.
        if isinstance(value, Node) and name == "function":
            b.node(value, root=True)
        elif isinstance(value, Node):
            b.node(value)
        else:
            _walk(b, value, seen)


def picture(result: object, title: str) -> Picture:
    """The nodes and edges of ``result``, uncollapsed (see collapse.py)."""
    b = _Builder(title)
    _walk(b, result, set())
    return b.finish()
