"""trace: one op from Python through the registry and dispatch to C++/CUDA and autograd."""

from __future__ import annotations

from dataclasses import dataclass, field

from .args import check_choice, clean_text
from .cppdefs import CppDef, has_cpp, kernel_definitions
from .index import Index
from .model import Loc, NotFound
from .ops import COMPOSITE_KEYS, DispatchEntry, OpRecord, registry
from . import generated as gen_q
from . import reach

FOCUS = ("yaml", "dispatch", "full")


@dataclass
class KernelInfo:
    entry: DispatchEntry
    defs: list[CppDef] = field(default_factory=list)
    stubs: list[reach.StubUse] = field(default_factory=list)
    gpu: list[reach.Launch] = field(default_factory=list)
    op_calls: list[str] = field(default_factory=list)  # ops a composite kernel calls (where to trace next)


@dataclass
class DerivInfo:
    schema: str
    loc: Loc
    formulas: list[tuple[str, str, Loc, str]]  # (variables, formula, loc, kind)
    output_differentiability: str


@dataclass
class OpTrace:
    op: OpRecord
    kernels: list[KernelInfo]
    python: list[tuple[str, str, Loc]]
    derivatives: list[DerivInfo]
    py_refs: list[tuple[str, str, Loc]] = field(default_factory=list)  # (kind, function, loc)
    generated: gen_q.GeneratedInfo | None = None


@dataclass
class TraceResult:
    query: str
    focus: str
    ops: list[OpTrace]
    related: list[str]
    composite_notes: dict[str, str]
    cpp_indexed: bool
    notes: list[str] = field(default_factory=list)


def trace(ix: Index, function_name: str, focus: str = "full") -> TraceResult | NotFound:
    name = clean_text(function_name, "function_name", "softmax")
    focus = check_choice(focus, "focus", FOCUS)
    reg = registry(ix)
    ops = reg.lookup(name)
    if not ops:
        return reg.not_found(name)
    cpp = has_cpp(ix) and focus != "yaml"
    traces = []
    cache: dict[tuple[str, bool], KernelInfo] = {}
    for op in ops:
        kernels = []
        entries = op.own_dispatch if focus == "yaml" else reg.dispatch(op)
        for entry in entries:
            structured = reg.structured_entry(op, entry)
            key = (entry.kernel, structured)
            if cpp and key not in cache:
                info = KernelInfo(entry, kernel_definitions(ix, entry.kernel, structured))
                if focus == "full":
                    info.stubs = reach.stubs_called(ix, [d.id for d in info.defs])
                    info.gpu = reach.gpu_launches(ix, [d.id for d in info.defs], info.stubs)
                if entry.key.startswith("Composite"):
                    info.op_calls = reach.ops_called(ix, [d.id for d in info.defs])
                cache[key] = info
            base = cache.get(key)
            kernels.append(KernelInfo(entry, base.defs, base.stubs, base.gpu, base.op_calls) if base
                           else KernelInfo(entry))
        python = [p for p in reg.python_names(op) if p[1] != "generated binding"]
        derivs = _derivatives(ix, op) if focus == "full" else []
        refs = reach.python_op_refs(ix, op) if focus == "full" else []
        generated = gen_q.for_op(ix, op) if focus != "yaml" else None
        traces.append(OpTrace(op, kernels, python, derivs, refs, generated))
    related = _related(reg, name, ops)
    keys = {k.entry.key for t in traces for k in t.kernels}
    notes = {k: v for k, v in COMPOSITE_KEYS.items() if k in keys}
    result = TraceResult(name, focus, traces, related, notes, has_cpp(ix))
    if focus != "yaml" and not has_cpp(ix):
        result.notes.append("The C++ layer is not indexed yet, so kernels are shown by name only.")
    return result


def _derivatives(ix: Index, op: OpRecord) -> list[DerivInfo]:
    out = []
    for did, schema, file_id, line, od in ix.q(
            "SELECT id, schema, file_id, line, output_differentiability FROM derivative WHERE op_full_name = ?",
            (op.full_name,)):
        formulas = [(v, f, Loc(ix.path_of(fid), ln), k) for v, f, fid, ln, k in ix.q(
            "SELECT variables, formula, file_id, line, kind FROM derivative_formula WHERE derivative = ? ORDER BY id",
            (did,))]
        out.append(DerivInfo(schema, Loc(ix.path_of(file_id), line), formulas, od))
    return out


def _related(reg, name: str, ops: list[OpRecord]) -> list[str]:
    base = ops[0].name.rstrip("_")
    shown = {o.name for o in ops}
    cands = [base, base + "_", "_" + base, base + "_backward", "_" + base + "_backward"]
    return [c for c in cands if c in reg.by_name and c not in shown]
