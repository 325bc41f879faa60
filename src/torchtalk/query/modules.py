"""trace_module and list_modules: nn modules and optimizers, down to the native ops they call.

A module is "an nn.Module" when its resolved bases reach torch.nn.Module
(transitively, see link/pyclasses.py); an optimizer when they reach
torch.optim.Optimizer. trace_module follows what forward() (or step()) calls
through self-methods, module functions and the Python names of ops, a few
levels deep, and ends at the op registry with file:line.
"""

from __future__ import annotations

import json
from collections import OrderedDict
from dataclasses import dataclass, field

from ..link.pyclasses import ROOTS
from .args import clean_text
from .index import Index
from .model import Loc, NotFound
from .ops import OpRecord, registry
from .pynames import PyDef, pynames

MAX_DEPTH = 3
MAX_CALLS_PER_FUNCTION = 30
# Plumbing every nn function goes through (__torch_function__ overrides, scripting checks):
# shown nowhere, it would bury the path to the op.
HIDDEN_PREFIXES = ("torch.overrides.", "torch._jit_internal.", "torch.jit.", "torch.compiler.", "torch._C._log_api",
                   "torch._dynamo.", "warnings.", "typing.")
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
    ops: list[OpRecord] = field(default_factory=list)
    children: list["CallNode"] = field(default_factory=list)
    note: str = ""


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
    ops: "OrderedDict[str, tuple[OpRecord, list[str]]]"  # op full name -> (op, how reached)
    others: list[tuple[str, Loc]]
    op_kernels: dict[str, str] = field(default_factory=dict)  # op full name -> "CPU: k; CUDA: k2"


def _class_rows(ix: Index, where: str, params: tuple) -> list[ClassInfo]:
    out = []
    for cid, fq, name, module, file_id, line, bases, roots in ix.q(
            f"SELECT id, fq, name, module, file_id, line, bases, roots FROM py_class_fq WHERE {where}", params):
        out.append(ClassInfo(cid, fq, name, module, Loc(ix.path_of(file_id), line), json.loads(bases),
                             roots.split()))
    return out


def _rank(c: ClassInfo) -> tuple:
    private = any(p.startswith("_") for p in c.fq.split(".")[1:-1])
    special = any(p in ("ao", "quantized", "qat", "intrinsic", "testing", "distributed", "fx") for p in c.fq.split("."))
    return (not any(k in c.roots for k in KINDS), special, private, len(c.fq))


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
    cands = _class_rows(ix, "name = ?", (short,))
    if "." in t:
        cands = [c for c in cands if c.fq.endswith("." + t)]
    if not cands:
        return NotFound("module or optimizer", text, _suggest(ix, short),
                        "Give a class such as 'Linear', 'nn.Conv2d', 'torch.optim.Adam' or "
                        "'torch.nn.modules.linear.Linear'.")
    cands.sort(key=_rank)
    return cands[0], cands[1:]


def _suggest(ix: Index, name: str) -> list[str]:
    import difflib
    pool = ix.cached("module_class_names", lambda: sorted({r[0] for r in ix.q(
        "SELECT name FROM py_class_fq WHERE roots != ''")}))
    return difflib.get_close_matches(name, pool, n=8, cutoff=0.6)


def _mro(ix: Index, cls: ClassInfo, limit: int = 12) -> list[ClassInfo]:
    out, todo, seen = [cls], list(cls.bases), {cls.fq}
    while todo and len(out) < limit:
        fq = todo.pop(0)
        if fq in seen:
            continue
        seen.add(fq)
        rows = _class_rows(ix, "fq = ?", (fq,))
        if rows:
            out.append(rows[0])
            todo.extend(rows[0].bases)
    return out


def _method(ix: Index, mro: list[ClassInfo], name: str) -> PyDef | None:
    names = pynames(ix)
    for c in mro:
        d = names.definition(f"{c.fq}.{name}")
        if d is not None and d.kind == "function":
            return d
    return None


_OP_PREFIXES = ("torch._C._VariableFunctions.", "torch._VF.", "torch._C._nn.", "torch._C._linalg.",
                "torch._C._fft.", "torch._C._special.", "torch._C._nested.", "torch._C._sparse.")


def _ops_of(ix: Index, dotted: str) -> list[OpRecord]:
    reg = registry(ix)
    candidates = [dotted]
    for p in ("torch._C._VariableFunctions.", "torch._VF.", "_VF."):
        if dotted.startswith(p):
            candidates.append("torch." + dotted[len(p):])
    if dotted.startswith("torch.ops.aten."):
        return reg.lookup(dotted)
    for c in candidates:
        if c in reg.py_by_name:
            return [reg.by_full[f] for f in dict.fromkeys(reg.py_by_name[c]) if f in reg.by_full]
    return []


class _Tracer:
    def __init__(self, ix: Index, mro: list[ClassInfo]):
        self.ix = ix
        self.names = pynames(ix)
        self.mro = mro
        self.ops: OrderedDict[str, tuple[OpRecord, list[str]]] = OrderedDict()
        self.seen: set[int] = set()

    def expand(self, fn: PyDef, depth: int, path: str) -> list[CallNode]:
        if fn.row_id in self.seen or depth > MAX_DEPTH:
            return []
        self.seen.add(fn.row_id)
        nodes = []
        rows = self.ix.q("SELECT callee, line, file_id FROM py_call WHERE func = ? ORDER BY line, id", (fn.row_id,))
        shown: set[str] = set()
        for callee, line, file_id in rows[: MAX_CALLS_PER_FUNCTION * 3]:
            if callee in shown:
                continue  # the same callee again (a guard repeated in branches): once is enough
            shown.add(callee)
            node = self._resolve(fn, callee, Loc(self.ix.path_of(file_id), line), depth, path)
            if node is not None:
                nodes.append(node)
            if len(nodes) >= MAX_CALLS_PER_FUNCTION:
                break
        return nodes

    def _note_ops(self, node: CallNode, ops: list[OpRecord], path: str) -> None:
        node.ops = ops
        for op in ops:
            entry = self.ops.setdefault(op.full_name, (op, []))
            if len(entry[1]) < 3:
                entry[1].append(f"{path} -> {node.written}")

    def _resolve(self, fn: PyDef, written: str, site: Loc, depth: int, path: str) -> CallNode | None:
        head = written.split(".")[0]
        if written.startswith(("self.", "super().")) and written.count(".") == 1:
            mro = self.mro[1:] if written.startswith("super()") else self.mro
            target = _method(self.ix, mro, written.split(".")[1])
            if target is None:
                return None  # a submodule call (self.linear(x)) or attribute: not a method here
            node = CallNode(written, site, target.fq, target.loc)
            node.children = self.expand(target, depth + 1, f"{path} -> {written}")
            return node
        if head in ("self", "super()"):
            return None
        full = self.names.resolve_in(fn.module, written)
        if full.startswith(HIDDEN_PREFIXES):
            return None
        d = self.names.definition(full)
        if d is not None and d.kind == "assign":
            ops = _ops_of(self.ix, d.value) or _ops_of(self.ix, self.names.resolve_in(d.module, d.value))
            node = CallNode(written, site, f"{d.fq} = {d.value}", d.loc)
            self._note_ops(node, ops, path)
            return node
        if d is not None and d.kind == "function":
            node = CallNode(written, site, d.fq, d.loc)
            if d.fq.startswith(EXPANDED_PREFIXES):
                node.children = self.expand(d, depth + 1, f"{path} -> {written}")
            return node
        ops = _ops_of(self.ix, full)
        if ops:
            node = CallNode(written, site, full, None)
            self._note_ops(node, ops, path)
            return node
        if "." not in written:
            return None  # a local or builtin callable
        if written.count(".") == 1 and head not in self.names.imports(fn.module)[0]:
            # local.method(): untyped receiver; a Tensor method op is the likely target.
            ops = _ops_of(self.ix, f"Tensor.{written.split('.')[1]}")
            if ops:
                node = CallNode(written, site, f"Tensor.{written.split('.')[1]}?", None,
                                note="receiver not typed; assumed a Tensor")
                self._note_ops(node, ops, path)
                return node
            return None
        return CallNode(written, site, full if full != written else "", None) if full.startswith("torch.") else None


def trace_module(ix: Index, module_name: str) -> TraceModuleResult | NotFound:
    text = clean_text(module_name, "module_name", "Linear")
    found = find_class(ix, text)
    if isinstance(found, NotFound):
        return found
    cls, others = found
    mro = _mro(ix, cls)
    chain = [(c.fq, c.loc) for c in mro[1:]]
    tracer = _Tracer(ix, mro)
    init_def = _method(ix, mro, "__init__")
    init = MethodInfo("__init__", init_def.signature, init_def.loc, init_def.fq.rsplit(".", 1)[0]) if init_def else None
    entry_name = "step" if ("optimizer" in cls.roots or "lr_scheduler" in cls.roots) else "forward"
    entry_def = _method(ix, mro, entry_name)
    entry = None
    if entry_def is not None:
        entry = MethodInfo(entry_name, entry_def.signature, entry_def.loc, entry_def.fq.rsplit(".", 1)[0])
        entry.calls = tracer.expand(entry_def, 1, f"{cls.name}.{entry_name}")
    doc = ix.one("SELECT doc FROM py_class WHERE id = (SELECT ref FROM py_class_fq WHERE id = ? AND source = 'py')",
                 (cls.id,))
    cls.doc = doc[0] if doc else ""
    reg = registry(ix)
    kernels = {}
    for full, (op, _paths) in tracer.ops.items():
        entries = reg.dispatch(op)
        kernels[full] = "; ".join(f"{e.key}: {e.kernel}" for e in entries[:6]) + (
            f"; ... {len(entries) - 6} more" if len(entries) > 6 else "")
    return TraceModuleResult(text, cls, chain, init, entry, tracer.ops, [(o.fq, o.loc) for o in others[:12]],
                             kernels)


# ------------------------------------------------------------------ list_modules

GROUPS = OrderedDict([
    ("activations", ("activation",)),
    ("losses", ("loss",)),
    ("normalization", ("batchnorm", "instancenorm", "normalization")),
    ("containers", ("container",)),
    ("convolution", ("conv",)),
    ("pooling", ("pooling",)),
    ("recurrent", ("rnn",)),
    ("transformer and attention", ("transformer", "activation.MultiheadAttention")),
    ("linear and embedding", ("linear", "sparse", "bilinear")),
    ("dropout", ("dropout",)),
    ("padding", ("padding",)),
    ("shape and sampling", ("flatten", "fold", "pixelshuffle", "upsampling", "channelshuffle")),
    ("distance", ("distance",)),
])


def _group_of(c: ClassInfo) -> str:
    stem = c.module.rsplit(".", 1)[1] if c.module.startswith("torch.nn.modules.") else ""
    for group, stems in GROUPS.items():
        if stem in stems:
            return group
    return "other"


@dataclass
class ListModulesResult:
    category: str
    groups: "OrderedDict[str, list[ClassInfo]]"
    total: int
    notes: list[str] = field(default_factory=list)


def list_modules(ix: Index, category: str = "nn") -> ListModulesResult:
    cat = clean_text(category, "category", "nn", max_len=200)
    key = cat.lower()
    groups: OrderedDict[str, list[ClassInfo]] = OrderedDict()

    roots = {name for names in ROOTS.values() for name in names}

    def public(c: ClassInfo) -> bool:
        # Public subclasses only: the roots themselves (Module, Optimizer, LRScheduler) are not listed.
        return (c.fq not in roots and not c.name.startswith("_")
                and not any(p.startswith("_") for p in c.module.split(".")[1:]))

    if key in ("nn", "all"):
        mods = [c for c in _class_rows(ix, "roots LIKE '%module%' AND fq LIKE 'torch.nn.%'", ()) if public(c)
                and not c.module.startswith(("torch.nn.quantized", "torch.nn.qat", "torch.nn.intrinsic"))]
        for group in [*GROUPS, "other"]:
            groups[group] = []
        for c in sorted(mods, key=lambda c: (c.loc.path, c.loc.line)):
            groups[_group_of(c)].append(c)
        for group in [g for g, v in groups.items() if not v]:
            del groups[group]
    if key in ("optim", "all"):
        opts = [c for c in _class_rows(ix, "roots LIKE '%optimizer%' AND fq LIKE 'torch.optim.%'", ()) if public(c)]
        groups["optimizers"] = sorted(opts, key=lambda c: c.name)
        scheds = [c for c in _class_rows(ix, "roots LIKE '%lr_scheduler%' AND fq LIKE 'torch.optim.%'", ())
                  if public(c)]
        groups["learning-rate schedulers"] = sorted(scheds, key=lambda c: c.name)
    if key not in ("nn", "optim", "all"):
        like = "%" + cat.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_") + "%"
        rows = _class_rows(ix, "name LIKE ? ESCAPE '\\' AND roots != ''", (like,))
        for c in sorted(rows, key=lambda c: (_rank(c), c.name)):
            label = {"module": "nn modules", "optimizer": "optimizers", "lr_scheduler": "learning-rate schedulers",
                     "testcase": "test cases"}.get(c.roots[0], "classes")
            groups.setdefault(label, []).append(c)
        res = ListModulesResult(cat, groups, sum(len(v) for v in groups.values()))
        res.notes.append(f"'{cat}' is not a category (nn, optim, all), so it was searched in class names.")
        return res
    return ListModulesResult(key, groups, sum(len(v) for v in groups.values()))
