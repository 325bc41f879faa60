"""trace_module and list_modules: nn modules and optimizers, down to the native ops they call.

A module is "an nn.Module" when its resolved bases reach torch.nn.Module
(transitively, see link/pyclasses.py); an optimizer when they reach
torch.optim.Optimizer. trace_module follows what forward() (or step()) calls
through self-methods, module functions and the Python names of ops until it
reaches the ops (Note [Walk to the ops] in query/pywalk.py), grouped by the
paths the code chooses between, and ends at the op registry with file:line.
"""

from __future__ import annotations

import json
from collections import OrderedDict
from dataclasses import dataclass, field

from ..graph import Step, graph
from ..graph.py_attrs import function_node, method_of
from ..graph.py_calls import PyContext
from ..graph.pynames import PyDef, pynames
from ..graph.registry import OpRegistry, registry
from ..link.pyclasses import ROOTS
from ..model import Cut, Edge, EdgeHow, EdgeKind, Loc, Node, NodeKind, Op
from ..store.reader import Index, like_literal
from .args import clean_text
from .cuts import explore, named
from .pywalk import Choice, PyWalk, walk_to_ops
from .results import NotFound

# Followed into their bodies: the module families a trace is about. Other callees are shown, not expanded.
EXPANDED_PREFIXES = ("torch.nn.", "torch.optim.", "torch._refs.", "torch.functional.")
KINDS = ("module", "optimizer", "lr_scheduler")


@dataclass
class ClassInfo:
    id: int
    fq: str
    name: str
    module: str
    loc: Loc
    bases: list[str]
    roots: list[str]
    doc: str = ""


@dataclass
class CallNode:
    written: str  # as in the source: "F.linear", "self._conv_forward"
    site: Loc
    target: str  # what it resolved to: "torch.nn.functional.linear", "op linear", "" (unresolved)
    target_loc: Loc | None
    ops: list[Op] = field(default_factory=list)
    children: list[CallNode] = field(default_factory=list)
    note: str = ""
    shown_above: bool = False  # a call of a function the tree expands at another call (Note [Calls shown once])


@dataclass
class MethodInfo:
    name: str
    signature: str
    loc: Loc
    owner: str  # the class that defines it (may be a base)
    calls: list[CallNode] = field(default_factory=list)


@dataclass
class TraceModuleResult:
    query: str
    cls: ClassInfo
    base_chain: list[tuple[str, Loc | None]]
    init: MethodInfo | None
    entry: MethodInfo | None  # forward or step
    ops: OrderedDict[str, tuple[Op, list[str]]]  # op full name -> (op, how reached)
    others: list[tuple[str, Loc]]
    op_kernels: dict[str, str] = field(default_factory=dict)  # op full name -> "CPU: k; CUDA: k2"
    cuts: list[Cut] = field(default_factory=list)  # what the walk from the entry method left out
    choices: list[Choice] = field(default_factory=list)  # the paths its code chooses between, with their ops
    common: list[str] = field(default_factory=list)  # op full names reached on every path
    # TORCH_LIBRARY ops reached (Note [Library ops]): ns::op -> (where its first m.impl is, how reached)
    library_ops: OrderedDict[str, tuple[Loc | None, list[str]]] = field(default_factory=OrderedDict)


def _class_rows(ix: Index, where: str, params: tuple[str, ...]) -> list[ClassInfo]:
    out = []
    for cid, fq, name, module, file_id, line, bases, roots in ix.q(
            f"SELECT id, fq, name, module, file_id, line, bases, roots FROM py_class_fq WHERE {where}", params):
        out.append(ClassInfo(cid, fq, name, module, Loc(ix.path_of(file_id), line), json.loads(bases),
                             roots.split()))
    return out


def _rank(c: ClassInfo) -> tuple[bool, bool, bool, bool, int]:
    """Library classes users build with first; a test file's own classes last; private ones after public."""
    private = any(p.startswith("_") for p in c.fq.split(".")[1:])
    special = any(p in ("ao", "quantized", "qat", "intrinsic", "testing", "distributed", "fx") for p in c.fq.split("."))
    return (not any(k in c.roots for k in KINDS), c.fq.startswith("test."), special, private, len(c.fq))


def find_class(ix: Index, text: str) -> tuple[ClassInfo, list[ClassInfo]] | NotFound:
    names = pynames(ix)
    t = text.removeprefix("torch.") if text.startswith("torch.torch.") else text
    spellings = [t]
    if t.startswith(("nn.", "optim.")):
        spellings.insert(0, "torch." + t)
    if "." not in t:
        spellings += [f"torch.nn.{t}", f"torch.optim.{t}", f"torch.optim.lr_scheduler.{t}"]
    for s in spellings:
        fq = names.canonical(s)
        if fq:
            found = _class_rows(ix, "fq = ?", (fq,))
            if found:
                others = [c for c in _class_rows(ix, "name = ? AND fq NOT LIKE 'test.%'", (found[0].name,))
                          if c.fq != found[0].fq]
                return found[0], sorted(others, key=_rank) if "." not in t else []
    short = t.rsplit(".", 1)[-1]
    named = sorted(_class_rows(ix, "name = ?", (short,)), key=_rank)
    cands = [c for c in named if c.fq.endswith("." + t)] if "." in t else named
    if not cands:  # the classes of that name under another path first ('nn.LazyModuleMixin': it is not in torch.nn)
        close = list(dict.fromkeys([c.fq for c in named] + _suggest(ix, short)))
        return NotFound("module or optimizer", text, close[:8],
                        "Give a class such as 'Linear', 'nn.Conv2d', 'torch.optim.Adam' or "
                        "'torch.nn.modules.linear.Linear'.")
    return cands[0], cands[1:]  # best first: taken in order from the ranked classes of the name


def _suggest(ix: Index, name: str) -> list[str]:
    import difflib
    pool = ix.cached("module_class_names", lambda: sorted({r[0] for r in ix.q(
        "SELECT name FROM py_class_fq WHERE roots != ''")}))
    return difflib.get_close_matches(name, pool, n=8, cutoff=0.6)


def _mro(ix: Index, cls: ClassInfo) -> list[ClassInfo]:
    """The class and its bases, nearest first (graph/pynames.py's order), as rows."""
    return [cls] + [r for fq in pynames(ix).mro(cls.fq)[1:] for r in _class_rows(ix, "fq = ?", (fq,))[:1]]


def _tree(ix: Index, walk: PyWalk, start: Node, reg: OpRegistry, result: TraceModuleResult) -> tuple[
        list[CallNode], OrderedDict[str, tuple[Op, list[str]]]]:
    """The walk's PY_CALL steps as a call tree, with each function's other calls of what the tree expands
    elsewhere (Note [Calls shown once]), and the ops reached with the paths that reach them (the TORCH_LIBRARY ops
    in ``result.library_ops``)."""
    ops: OrderedDict[str, tuple[Op, list[str]]] = OrderedDict()
    made: dict[int, CallNode] = {}  # id(step) -> its node
    roots: list[CallNode] = []
    below: dict[tuple[NodeKind, str], list[CallNode]] = {(start.kind, start.key): roots}  # a function's calls
    for s in walk.steps:
        e = s.edge
        parent = made.get(id(s.parent)) if s.parent is not None else None
        if e.kind is EdgeKind.BINDING:  # name = _add_docstr(torch._C._nn.linear): the op it is bound to
            if parent is not None and e.dst.kind is NodeKind.OP:
                _note_op(reg, ops, parent, e.dst.key, s)
            elif parent is not None and e.dst.loc is not None:  # hand-written C++ (torch._C._cuda_synchronize)
                parent.children.append(CallNode(e.src.key, e.site or Loc("?", 0), f"C++ {e.dst.label}", e.dst.loc))
            continue
        untyped = e.how is EdgeHow.UNTYPED_RECEIVER
        target = ("?" if untyped else e.dst.key) if e.dst.kind is NodeKind.OP else e.dst.label
        # the assumption, the assignment that made the callee, or what the local holding it is
        shown = untyped or e.how in (EdgeHow.ATTRIBUTE, EdgeHow.LOCAL, EdgeHow.FUNCTION_APPLY)
        node = CallNode(e.written, e.site or Loc("?", 0), target, e.dst.loc, note=e.note if shown else "")
        if e.how is EdgeHow.BOUND_NAME and (bound := pynames(ix).definition(e.note)) is not None:
            # F.gelu -> torch.nn.functional.gelu = torch._C._nn.gelu  torch/nn/functional.py:1987 -> op gelu
            node.target, node.target_loc = f"{bound.fq} = {bound.value}", bound.loc
        made[id(s)] = node
        below.setdefault((e.dst.kind, e.dst.key), node.children)
        if e.dst.kind is NodeKind.OP:
            _note_op(reg, ops, node, e.dst.key, s)
        elif e.dst.kind is NodeKind.BINDING and e.dst.key in walk.library:  # torch.ops.quantized.x: ns::op
            via = result.library_ops.setdefault(walk.library[e.dst.key], (e.dst.loc, []))[1]
            if len(via) < 3:
                via.append(" -> ".join(c.written for c in s.chain() if c.kind is EdgeKind.PY_CALL))
        (parent.children if parent is not None else roots).append(node)
    for key, edges in walk.again.items():
        if key in below:
            listed = {(n.written, n.site) for n in below[key]}  # a call of several overloads: one line
            for e in sorted(edges, key=lambda e: e.site.line if e.site else 0):
                site = e.site or Loc("?", 0)
                if (e.written, site) not in listed:
                    listed.add((e.written, site))
                    below[key].append(CallNode(e.written, site, e.dst.label, e.dst.loc, shown_above=True))
    return _merge_ops(roots), ops


def _note_op(reg: OpRegistry, ops: OrderedDict[str, tuple[Op, list[str]]], node: CallNode, full: str,
             s: Step) -> None:
    op = reg.by_full.get(full)
    if op is None:
        return
    node.ops.append(op)
    entry = ops.setdefault(full, (op, []))
    if len(entry[1]) < 3:
        entry[1].append(" -> ".join(e.written for e in s.chain() if e.kind is EdgeKind.PY_CALL))


def _merge_ops(nodes: list[CallNode]) -> list[CallNode]:
    """One node per call site: a call that reaches several overloads lists them together."""
    out: list[CallNode] = []
    by_site: dict[tuple[str, int, str], CallNode] = {}
    for n in nodes:
        key = (n.site.path, n.site.line, n.written)
        if key in by_site and n.ops:
            by_site[key].ops += [o for o in n.ops if o not in by_site[key].ops]
            continue
        by_site[key] = n
        n.children = _merge_ops(n.children)
        out.append(n)
    return out


def _ops_first(e: Edge) -> int:
    """trace_module's ranking when a function makes more calls than it follows: ops, then the module families
    it expands (self., torch.nn, torch.optim, ...), then the rest."""
    if e.dst.kind is NodeKind.OP:
        return 0
    return 1 if e.written.startswith(("self.", "super().")) or e.dst.key.startswith(EXPANDED_PREFIXES) else 2


def _walk(ix: Index, entry: PyDef, mro: list[ClassInfo], result: TraceModuleResult) -> None:
    """PY_CALL edges down from ``entry`` (forward or step) to the ops, ``self`` being an instance of mro[0]."""
    # Every Python function of torch (as trace walks them) and of the class's own package is walked into: a helper
    # of an ao module (torch.ao...._quantize_and_dequantize_weight) is part of what its forward runs. Any other is
    # kept as reached and named as a cut (Note [Walk to the ops]).
    expanded = ("torch.", mro[0].module.split(".")[0] + ".")

    def follow(s: Step) -> bool:
        e = s.edge
        if e.dst.kind is NodeKind.BINDING:
            return e.kind is EdgeKind.PY_CALL
        if e.dst.kind is not NodeKind.PY_FUNCTION:
            return False
        return e.written.startswith(("self.", "super().")) or e.dst.key.startswith(expanded)

    g = graph(ix).within(PyContext([c.fq for c in mro]))  # self is an instance of mro[0]
    start = function_node(entry)
    walk = walk_to_ops(g, start, follow, _ops_first)
    assert result.entry is not None
    result.entry.calls, result.ops = _tree(ix, walk, start, registry(ix), result)
    result.cuts = named(walk.cuts, lambda c: explore(c.at) if c.at is not None else "")
    result.choices, result.common = walk.choices, walk.common


def trace_module(ix: Index, module_name: str) -> TraceModuleResult | NotFound:
    text = clean_text(module_name, "module_name", "Linear")
    found = find_class(ix, text)
    if isinstance(found, NotFound):
        return found
    cls, others = found
    mro = _mro(ix, cls)
    chain: list[tuple[str, Loc | None]] = [(c.fq, c.loc) for c in mro[1:]]
    init_def = method_of(ix, [c.fq for c in mro], "__init__")
    init = MethodInfo("__init__", init_def.signature, init_def.loc, init_def.fq.rsplit(".", 1)[0]) if init_def else None
    entry_name = "step" if ("optimizer" in cls.roots or "lr_scheduler" in cls.roots) else "forward"
    entry_def = method_of(ix, [c.fq for c in mro], entry_name)
    entry = None
    if entry_def is not None:
        entry = MethodInfo(entry_name, entry_def.signature, entry_def.loc, entry_def.fq.rsplit(".", 1)[0])
    result = TraceModuleResult(text, cls, chain, init, entry, OrderedDict(), [(o.fq, o.loc) for o in others])
    if entry_def is not None:
        _walk(ix, entry_def, mro, result)
    doc = ix.one("SELECT doc FROM py_class WHERE id = (SELECT ref FROM py_class_fq WHERE id = ? AND source = 'py')",
                 (cls.id,))
    cls.doc = doc[0] if doc else ""
    reg = registry(ix)
    for full, (op, _paths) in result.ops.items():
        entries = reg.dispatch(op)
        result.op_kernels[full] = "; ".join(f"{e.key}: {e.kernel}" for e in entries[:6]) + (
            f"; ... {len(entries) - 6} more" if len(entries) > 6 else "")
    return result


# ------------------------------------------------------------------ list_modules

@dataclass
class ListModulesResult:
    category: str
    groups: OrderedDict[str, list[ClassInfo]]
    total: int
    notes: list[str] = field(default_factory=list)


# The categories as their packages are spelled (list_modules("torch.optim") is the category optim)
_CATEGORY_PACKAGES = {"torch.nn": "nn", "torch.nn.modules": "nn", "nn.modules": "nn", "torch.optim": "optim"}


def _package(cat: str) -> str:
    """A dotted name as a module path of the tree (nn.modules.loss: torch.nn.modules.loss); "" for a bare word."""
    if "." not in cat.strip("."):
        return ""
    return cat if cat.startswith("torch.") else f"torch.{cat}"


def list_modules(ix: Index, category: str = "nn") -> ListModulesResult:
    cat = clean_text(category, "category", "nn", max_len=200)
    key = _CATEGORY_PACKAGES.get(cat.lower(), cat.lower())
    groups: OrderedDict[str, list[ClassInfo]] = OrderedDict()

    roots = {name for names in ROOTS.values() for name in names}

    names = pynames(ix)

    def public(c: ClassInfo) -> bool:
        # Public subclasses only: the roots themselves (Module, Optimizer, LRScheduler) are not listed; one defined in
        # a private module counts when its package exports it (torch.optim.Adafactor from torch/optim/_adafactor.py).
        if c.fq in roots or c.name.startswith("_"):
            return False
        return not any(p.startswith("_") for p in c.module.split(".")[1:]) or any(
            names.canonical(f"{pkg}.{c.name}") == c.fq for pkg in ("torch.nn", "torch.optim"))

    if key in ("nn", "all"):
        mods = [c for c in _class_rows(ix, "roots LIKE '%module%' AND fq LIKE 'torch.nn.%'", ()) if public(c)
                and not c.module.startswith(("torch.nn.quantized", "torch.nn.qat", "torch.nn.intrinsic"))]
        # grouped by the file that defines them, as the file says (MultiheadAttention is in activation.py): a word for
        # a family of files would file it under activations, or need a list of names
        for c in sorted(mods, key=lambda c: (c.loc.path, c.loc.line)):
            groups.setdefault(c.loc.path, []).append(c)
    if key in ("optim", "all"):
        opts = [c for c in _class_rows(ix, "roots LIKE '%optimizer%' AND fq LIKE 'torch.optim.%'", ()) if public(c)]
        groups["optimizers"] = sorted(opts, key=lambda c: c.name)
        scheds = [c for c in _class_rows(ix, "roots LIKE '%lr_scheduler%' AND fq LIKE 'torch.optim.%'", ())
                  if public(c)]
        groups["learning-rate schedulers"] = sorted(scheds, key=lambda c: c.name)
    if key not in ("nn", "optim", "all"):
        like = "%" + like_literal(cat) + "%"
        package = _package(cat)
        if package:  # a module path (torch.nn.modules.loss, torch.optim.lr_scheduler): the classes defined under it
            rows = _class_rows(ix, "(module = ? OR module LIKE ? ESCAPE '\\') AND roots != ''",
                               (package, like_literal(package) + ".%"))
        if not package or not rows:
            rows = _class_rows(ix, "name LIKE ? ESCAPE '\\' AND roots != ''", (like,))
        rows = list({(c.fq, str(c.loc)): c for c in rows}.values())  # a class the index holds twice, once
        for c in sorted(rows, key=lambda c: (_rank(c), c.name)):
            label = {"module": "nn modules", "optimizer": "optimizers", "lr_scheduler": "learning-rate schedulers",
                     "testcase": "test cases"}.get(c.roots[0], "classes")
            groups.setdefault(label, []).append(c)
        res = ListModulesResult(cat, groups, sum(len(v) for v in groups.values()))
        res.notes.append(f"'{cat}' is not a category (nn, optim, all), so the classes defined in module {package} "
                         "and its submodules are listed." if package and rows else
                         f"'{cat}' is not a category (nn, optim, all), so it was searched in class names.")
        return res
    return ListModulesResult(key, groups, sum(len(v) for v in groups.values()))
