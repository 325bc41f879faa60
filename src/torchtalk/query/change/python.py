"""The Python side of a change: nn modules, optimizers and Python functions it reaches.

A changed Python function is walked up the calls that name it (the graph's PY_CALL edges: Rprop.step calls
rprop, which calls ``func`` bound to _single_tensor_rprop), so the optimizer, module or public function above a
private helper gets its tests. A module's methods that call ``F.softmax`` also reach whatever
``torch.nn.functional.softmax`` reaches; only torch/nn/modules is searched for such callers by name (what users
build models from); the answer says so.
"""

from __future__ import annotations

from dataclasses import dataclass

from ...graph import graph, up
from ...graph.nodes import op_node
from ...graph.pynames import pynames
from ...graph.registry import registered_ops, registry
from ...model import Cut, EdgeKind, Loc, Node, NodeKind, PyDefKind, PyOpRefKind
from ...model.change import Aspect, ModuleKind
from ...store.reader import Index
from . import tests as at
from .definitions import ChangedNode, library_op_node

MODULE_DIRS = ("torch/nn/modules/",)
MAX_SUBCLASSES = 8
MAX_PY_CALLERS = 40  # Python callers followed per function (the walk's fan-out)
MAX_PY_REACHED = 300
_PUBLIC = ("torch.nn.", "torch.optim.", "torch.optim.lr_scheduler.", "torch.nn.functional.", "torch.")


@dataclass
class AffectedModule:
    name: str  # as users write it: "torch.nn.Linear"
    fq: str  # where it is defined: "torch.nn.modules.linear.Linear"
    kind: ModuleKind
    loc: Loc
    why: str


@dataclass(frozen=True)
class ClassRow:
    fq: str
    name: str
    loc: Loc
    kinds: tuple[ModuleKind, ...]  # the roots it descends from that users build with (none: other code)


def _class(ix: Index, fq: str) -> ClassRow | None:
    row = ix.one("SELECT fq, name, file_id, line, roots FROM py_class_fq WHERE fq = ? AND source = 'py'", (fq,))
    if row is None:
        return None
    return ClassRow(row[0], row[1], Loc(ix.path_of(row[2]), row[3]), _kinds(row[4]))


def _kinds(roots: str) -> tuple[ModuleKind, ...]:
    """The class roots (link/pyclasses.py, space-separated) that users build with, in ModuleKind's order."""
    names = roots.split()
    return tuple(k for k in ModuleKind if k.value in names)


def public_name(ix: Index, fq: str) -> str:
    """How users spell a class or function: torch.nn.Linear for torch.nn.modules.linear.Linear."""
    short = fq.rsplit(".", 1)[-1]
    names = pynames(ix)
    for prefix in _PUBLIC:
        if names.canonical(prefix + short) == fq:
            return prefix + short
    return fq


def owner_class(ix: Index, node: Node) -> ClassRow | None:
    """The module / optimizer class a changed method or class belongs to (None for other code)."""
    if node.kind is NodeKind.PY_CLASS:
        fq = node.key
    else:
        fn = pynames(ix).definition(node.key)
        if fn is None or not fn.cls:
            return None
        fq = f"{fn.module}.{fn.cls.split('.<locals>')[0]}"
    row = _class(ix, fq)
    return row if row is not None and row.kinds else None


def as_module(ix: Index, row: ClassRow, why: str) -> AffectedModule:
    return AffectedModule(public_name(ix, row.fq), row.fq, row.kinds[0], row.loc, why)


def subclasses(ix: Index, fq: str) -> list[ClassRow]:
    """Classes of torch/ that name ``fq`` as a base (they inherit what changed unless they override it)."""
    return [ClassRow(d.fq, d.name, Loc(ix.path_of(d.file_id), d.line), _kinds(d.roots))
            for d in pynames(ix).derived(fq) if d.source == "py"][:MAX_SUBCLASSES]


def spellings(fq: str) -> list[str]:
    """How module code writes a call to a Python function: F.softmax, torch.nn.functional.softmax, torch.X."""
    out = [fq]
    if fq.startswith("torch.nn.functional."):
        short = fq[len("torch.nn.functional."):]
        out += [f"F.{short}", f"nn.functional.{short}"]
    return out


def _module_calls(ix: Index) -> dict[str, list[tuple[str, int, int]]]:
    """callee as written -> [(class fq, line, file id)] for the methods of classes under MODULE_DIRS."""
    def build() -> dict[str, list[tuple[str, int, int]]]:
        out: dict[str, list[tuple[str, int, int]]] = {}
        dirs = " OR ".join("path LIKE ?" for _ in MODULE_DIRS)
        for callee, line, fid, module, cls in ix.q(
                "SELECT c.callee, c.line, c.file_id, f.module, f.cls FROM py_call c "
                "JOIN py_function f ON f.id = c.func "
                f"WHERE c.file_id IN (SELECT id FROM files WHERE {dirs}) AND f.cls != ''",
                [d + "%" for d in MODULE_DIRS]):
            out.setdefault(callee, []).append((f"{module}.{cls.split('.')[0]}", line, fid))
        return out
    table: dict[str, list[tuple[str, int, int]]] = ix.cached("affected_module_calls", build)
    return table


def modules_calling(ix: Index, names: list[str], via: str) -> list[AffectedModule]:
    """nn modules whose methods call one of ``names`` (as written in their source)."""
    calls = _module_calls(ix)
    out: dict[str, AffectedModule] = {}
    for name in names:
        for cls_fq, line, fid in calls.get(name, []):
            if cls_fq in out:
                continue
            row = _class(ix, cls_fq)
            if row is not None and row.kinds:
                out[cls_fq] = as_module(ix, row, f"{name}(...) at {ix.path_of(fid)}:{line}{via}")
    return list(out.values())


def _private(ix: Index, fq: str) -> bool:
    """A name users do not call: no public spelling, and a part of it starts with an underscore."""
    public = public_name(ix, fq)
    return public == fq and any(p.startswith("_") for p in public.split("."))


def python_functions(ix: Index, changed: list[ChangedNode], most: int) -> list[at.OpForTests]:
    """Changed Python functions users call by name (torch.nn.functional.X, torch.X defined in Python):
    their tests are looked up like an op's."""
    out: list[at.OpForTests] = []
    for c in changed:
        if c.node.kind is not NodeKind.PY_FUNCTION or owner_class(ix, c.node) is not None:
            continue
        if _private(ix, c.node.key):
            continue  # a private helper: what reaches it is not known by name (python_callers walks up from it)
        public = public_name(ix, c.node.key)
        if len(out) < most:
            out.append(at.OpForTests(public, public, set(), f"Python {public}: {c.why}"))
    return out


def reached_functions(ix: Index, reached: list[tuple[str, str]], skip: set[str],
                      most: int) -> list[at.OpForTests]:
    """The public Python functions the walk reached (``reached``: (fq, how), closest first; torch.nn.functional.
    embedding for a change to embedding_renorm_'s CUDA kernel), beyond ``skip`` (an op's own names): their tests
    (OpInfo('nn.functional.embedding'), tests calling them) are looked up like an op's."""
    out: list[at.OpForTests] = []
    names = pynames(ix)
    for fq, how in reached:
        d = names.definition(fq)
        if d is None or d.cls or len(out) >= most:
            continue
        public = public_name(ix, fq)
        if public in skip or any(p.startswith("_") for p in public.split(".")):
            continue
        out.append(at.OpForTests(public, public, set(), f"{public} {how}"))
        skip.add(public)
    return out


def python_callers(ix: Index, changed: list[ChangedNode], depth: int) -> tuple[list[tuple[str, str]], list[Cut]]:
    """The Python functions above the changed ones, closest first, each with how it reaches the change
    (``rprop calls torch.optim.rprop._single_tensor_rprop (changed) at torch/optim/rprop.py:450``); and the cuts of
    the walk."""
    # Only what its name does not find: a private helper of no module or optimizer class (a public function's tests
    # are looked up by its name, a method's through its class) that only eager code runs (a decomposition is
    # registered, never called). Each function walked from costs a scan of the calls that name it.
    starts = [c.node for c in changed if c.node.kind is NodeKind.PY_FUNCTION and c.aspect is None
              and owner_class(ix, c.node) is None and _private(ix, c.node.key)]
    if not starts:
        return [], []
    walk = up(starts, graph(ix).into, (EdgeKind.PY_CALL,), depth, fan_out=MAX_PY_CALLERS,
              max_nodes=MAX_PY_REACHED)
    out: dict[str, str] = {}
    for s in walk.steps:
        if s.node.kind is NodeKind.PY_FUNCTION and s.node.key not in out:
            chain = s.chain()
            first = chain[0]
            via = " <- ".join(e.dst.label.rsplit(".", 1)[-1] for e in chain[1:])
            out[s.node.key] = (f"calls {first.dst.key} (changed) at {first.site}" if len(chain) == 1 else
                               f"reaches {first.dst.key} (changed) through {via}")
    return list(out.items()), walk.cuts


def registered_above(ix: Index, callers: list[tuple[str, str]]) -> list[ChangedNode]:
    """Note [Registered above the change]: a helper of a lowering (ConvolutionUnary.create, called by the function
    ``@register_lowering(torch.ops.mkldnn._convolution_pointwise)`` registers, a def nested in
    register_onednn_fusion_ops) changes what that lowering does, so its op is reached as the lowering's op would be
    (the lowering's aspect, compiled only: Note [Compiled only] in reach.py). ``callers``: the Python callers walked up
    from the change, (fq, how), closest first."""
    reg = registry(ix)
    names = pynames(ix)
    out: dict[str, ChangedNode] = {}
    for fq, how in callers:
        d = names.definition(fq)
        if d is None or d.kind is not PyDefKind.FUNCTION:
            continue
        for kind, op_text, line in ix.q("SELECT kind, op, line FROM py_op_ref WHERE func = ? ORDER BY line",
                                        (d.row_id,)):
            loc = Loc(d.loc.path, line)
            why = f"its {kind} ({op_text}, line {line}): {fq.rsplit('.', 1)[-1]} {how}"
            nodes = [op_node(op) for op in registered_ops(reg, op_text)]
            lib = library_op_node(op_text, loc)
            for node in nodes + ([lib] if lib is not None else []):
                out.setdefault(node.key, ChangedNode(node, why, d.loc.path, line, aspect=Aspect(PyOpRefKind(kind)),
                                                     compiled=True))
    return list(out.values())


def modules_reached(ix: Index, reached: list[tuple[str, str]]) -> list[AffectedModule]:
    """The nn modules and optimizers whose methods the walk reached (Embedding.forward calls
    torch.nn.functional.embedding, which reaches the change)."""
    out: dict[str, AffectedModule] = {}
    for fq, how in reached:
        row = owner_class(ix, Node(NodeKind.PY_FUNCTION, fq, fq, None))
        if row is not None and row.fq not in out:
            out[row.fq] = as_module(ix, row, f"{fq.rsplit('.', 2)[-2]}.{fq.rsplit('.', 1)[-1]} {how}")
    return list(out.values())


def affected_modules(ix: Index, changed: list[ChangedNode], ops: list[tuple[str, list[str]]],
                     reached: list[tuple[str, str]]) -> tuple[list[AffectedModule], list[AffectedModule]]:
    """(modules and optimizers whose own code changed, with their subclasses; nn modules whose methods the walk
    reached (``reached``: Python functions, closest first) or that call a changed Python function or the Python
    name of an op reached (``ops``: (op, its Python names), closest first))."""
    own: dict[str, AffectedModule] = {}
    inherited: dict[str, AffectedModule] = {}
    calling: dict[str, AffectedModule] = {m.fq: m for m in modules_reached(ix, reached)}
    for c in changed:
        if c.node.kind not in (NodeKind.PY_FUNCTION, NodeKind.PY_CLASS):
            continue
        row = owner_class(ix, c.node)
        if row is not None:
            own.setdefault(row.fq, as_module(ix, row, f"{c.node.label}: {c.why}"))
            for sub in subclasses(ix, row.fq):
                if sub.kinds:
                    inherited.setdefault(sub.fq, as_module(ix, sub, f"subclass of {row.name}"))
        elif c.node.kind is NodeKind.PY_FUNCTION:
            for m in modules_calling(ix, spellings(c.node.key), f" (calls changed {c.node.key})"):
                calling.setdefault(m.fq, m)
    for op, python in ops:
        names = [s for n in python if n.startswith("torch.") for s in spellings(n)]
        for m in modules_calling(ix, names, f" (reaches op {op})"):
            calling.setdefault(m.fq, m)
    others = {**inherited, **calling}
    return list(own.values()), [m for fq, m in others.items() if fq not in own]
