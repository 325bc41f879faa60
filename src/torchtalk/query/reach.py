"""What a kernel reaches below it: DispatchStubs with each backend's kernel, and GPU launches.

Walks resolved calls downwards a few levels (kernels delegate to helpers
before they call a stub or launch), never through the dispatcher: an op call
inside a kernel is a different op's story.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from .cppdefs import SYMBOL_COLS, CppDef, defs_by_name, symbol, to_def
from .index import Index
from .model import Loc
from .resolve import Call, calls_from, resolve, stub_names


@dataclass
class StubRegistration:
    key: str  # CPU | CUDA | MPS | ...
    kernel: str  # as registered
    loc: Loc  # the REGISTER_DISPATCH line
    macro: str
    defs: list[CppDef] = field(default_factory=list)


@dataclass
class StubUse:
    stub: str
    site: Loc  # where the kernel (or its helper) calls or passes the stub
    via: str  # the function that calls it
    declared: Loc | None
    registrations: list[StubRegistration]


@dataclass
class Launch:
    kernel: str  # the __global__ kernel or the functor/lambda handed to a launch helper
    kind: str  # launch (<<<>>>) | gpu_launch (gpu_kernel & kin)
    site: Loc
    launcher: str  # display name of the launching function
    helper: str  # gpu_kernel, ... ("" for <<<>>>)
    defs: list[CppDef] = field(default_factory=list)


def stub_registrations(ix: Index, stub: str) -> tuple[Loc | None, list[StubRegistration]]:
    declared = None
    regs = []
    for kind, target, key, file_id, line, detail in ix.q(
            "SELECT kind, target, key, file_id, line, detail FROM cpp_registration WHERE name = ? "
            "AND kind IN ('declare_dispatch', 'register_dispatch') ORDER BY file_id, line", (stub,)):
        if kind == "declare_dispatch":
            declared = declared or Loc(ix.path_of(file_id), line)
            continue
        short = target.split("::")[-1]
        defs = [d for d in defs_by_name(ix, short) if d.loc.path == ix.path_of(file_id)] if short else []
        if short and not defs:
            defs = [d for d in defs_by_name(ix, short) if d.qualname.startswith("at::native")][:3]
        regs.append(StubRegistration(key or "?", target or "(none)", Loc(ix.path_of(file_id), line), detail, defs))
    return declared, regs


def _walk(ix: Index, roots: list[int], depth: int):
    """Yield (caller CppDef, Call) for calls made by ``roots`` and their callees, ``depth`` levels down."""
    seen = set(roots)
    level = list(roots)
    for _ in range(depth):
        nxt = []
        for sid in level:
            caller = symbol(ix, sid)
            if caller is None:
                continue
            for call in calls_from(ix, sid):
                yield caller, call
                if call.kind in ("launch", "gpu_launch"):
                    continue  # the launch is the answer; the helper's insides are not this kernel's
                res = resolve(ix, call, caller)
                if res.kind == "defs":
                    for d in res.defs[:2]:
                        if d.id not in seen and d.kind not in ("global_kernel",):
                            seen.add(d.id)
                            nxt.append(d.id)
        level = nxt


def stubs_called(ix: Index, roots: list[int], depth: int = 3) -> list[StubUse]:
    stubs = stub_names(ix)
    out: dict[str, StubUse] = {}
    for caller, call in _walk(ix, roots, depth):
        name = call.callee
        if name in stubs and name not in out and (call.kind in ("call", "stub_ref") and not call.qualifier):
            declared, regs = stub_registrations(ix, name)
            out[name] = StubUse(name, call.loc, _display(caller), declared, regs)
    return list(out.values())


def gpu_launches(ix: Index, roots: list[int], stubs: list[StubUse], depth: int = 3) -> list[Launch]:
    cuda_roots = list(roots)
    for s in stubs:
        for r in s.registrations:
            if r.key in ("CUDA", "HIP"):
                cuda_roots += [d.id for d in r.defs]
    out: list[Launch] = []
    seen = set()
    for caller, call in _walk(ix, cuda_roots, depth):
        if call.kind not in ("launch", "gpu_launch"):
            continue
        key = (call.callee, call.loc.path, call.loc.line)
        if key in seen:
            continue
        seen.add(key)
        if call.kind == "launch":
            res = resolve(ix, call, caller)
            out.append(Launch(call.callee, "launch", call.loc, _display(caller), "", res.defs if res.kind == "defs" else []))
        else:
            out.append(Launch(call.detail or "lambda", "gpu_launch", call.loc, _display(caller), call.callee))
    return out


def _display(d: CppDef) -> str:
    return d.display


def ops_called(ix: Index, roots: list[int]) -> list[str]:
    """Ops the given functions call through the dispatcher, in call order (composite kernels' next hop)."""
    out: dict[str, None] = {}
    for sid in roots:
        caller = symbol(ix, sid)
        if caller is None:
            continue
        for call in calls_from(ix, sid):
            res = resolve(ix, call, caller)
            if res.kind == "op":
                for name in res.ops:
                    out.setdefault(name)
    return list(out)


def python_op_refs(ix: Index, op) -> list[tuple[str, str, Loc]]:
    """Decompositions, refs, meta functions and Inductor lowerings registered for the op in Python."""
    names = {f"aten.{op.name}", f"aten.{op.full_name}"}
    marks = ",".join("?" * len(names))
    try:
        rows = ix.q(
            f"SELECT r.kind, coalesce(f.qualname, ''), coalesce(f.module, ''), r.file_id, r.line FROM py_op_ref r "
            f"LEFT JOIN py_function f ON f.id = r.func WHERE r.op IN ({marks}) ORDER BY r.kind, r.file_id, r.line",
            list(names))
    except Exception:
        return []
    return [(kind, f"{mod}.{qn}" if qn else "", Loc(ix.path_of(fid), line)) for kind, qn, mod, fid, line in rows]


__all__ = ["Call", "Launch", "StubUse", "StubRegistration", "stubs_called", "gpu_launches", "python_op_refs",
           "stub_registrations", "SYMBOL_COLS", "to_def"]
