"""cuda_kernels: the GPU kernels an op or function reaches, where they are defined and launched.

For an op, the walk starts at its CUDA kernels (and those of its backward op,
which users mean by "the kernels of avg_pool2d") and follows resolved calls
and the CUDA registrations of DispatchStubs down to ``<<<>>>`` launches and
launch helpers (gpu_kernel & kin). The path that reaches each kernel is kept.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field

from .args import clean_text
from .cppdefs import SYMBOL_COLS, CppDef, has_cpp, kernel_definitions, symbol, to_def
from .functions import find_function
from .index import Index
from .model import Loc, NotFound
from .ops import registry
from .reach import stub_registrations
from .resolve import CALL_COLS, calls_from, resolve, stub_names, to_call

MAX_DEPTH = 4


@dataclass
class KernelLaunch:
    site: Loc
    launcher: str
    chain: str  # how the walk got to the launcher: "avg_pool2d.out [CUDA] -> TORCH_IMPL_FUNC(...)"


@dataclass
class GpuKernel:
    name: str
    defs: list[CppDef]
    launches: list[KernelLaunch] = field(default_factory=list)


@dataclass
class HelperLaunch:
    helper: str  # gpu_kernel, ...
    functor: str
    site: Loc
    launcher: str
    chain: str


@dataclass
class CudaKernelsResult:
    query: str | None
    matched: str
    kernels: list[GpuKernel]
    helpers: list[HelperLaunch]
    summary: dict = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)


def _walk_launches(ix: Index, roots: list[tuple[CppDef, str]]) -> tuple[dict[str, GpuKernel], list[HelperLaunch]]:
    kernels: dict[str, GpuKernel] = {}
    helpers: list[HelperLaunch] = []
    stubs = stub_names(ix)
    seen = {d.id for d, _ in roots}
    level = list(roots)
    for _ in range(MAX_DEPTH):
        nxt: list[tuple[CppDef, str]] = []
        for fn, chain in level:
            for call in calls_from(ix, fn.id):
                if call.kind == "launch":
                    res = resolve(ix, call, fn)
                    k = kernels.setdefault(call.callee, GpuKernel(call.callee, res.defs if res.kind == "defs" else []))
                    k.launches.append(KernelLaunch(call.loc, fn.display, chain))
                    continue
                if call.kind == "gpu_launch":
                    helpers.append(HelperLaunch(call.callee, call.detail or "lambda", call.loc, fn.display, chain))
                    continue
                if call.callee in stubs and not call.qualifier and call.kind in ("call", "stub_ref"):
                    for r in stub_registrations(ix, call.callee)[1]:
                        if r.key in ("CUDA", "HIP"):
                            for d in r.defs[:1]:
                                if d.id not in seen:
                                    seen.add(d.id)
                                    nxt.append((d, f"{chain} -> {call.callee} [CUDA]"))
                    continue
                res = resolve(ix, call, fn)
                if res.kind == "defs":
                    for d in res.defs[:1]:
                        if d.id not in seen and d.kind != "global_kernel":
                            seen.add(d.id)
                            nxt.append((d, f"{chain} -> {d.display}"))
        level = nxt
    return kernels, helpers


def _summary(ix: Index) -> CudaKernelsResult:
    rows = [to_def(ix, r) for r in ix.q(f"SELECT {SYMBOL_COLS} FROM cpp_symbol WHERE kind = 'global_kernel' "
                                        "ORDER BY file_id, line")]
    by_file = Counter(d.loc.path for d in rows)
    launches = ix.one("SELECT count(*) FROM cpp_call WHERE kind = 'launch'")[0]
    helpers = ix.one("SELECT count(*) FROM cpp_call WHERE kind = 'gpu_launch'")[0]
    sample = rows[:: max(1, len(rows) // 40)][:40]
    return CudaKernelsResult(None, "all", [GpuKernel(d.name, [d]) for d in sample], [], {
        "global_kernels": len(rows), "files": len(by_file), "launch_sites": launches,
        "helper_launch_sites": helpers, "top_files": by_file.most_common(15)})


def cuda_kernels(ix: Index, function_name: str | None = None) -> CudaKernelsResult | NotFound:
    if not has_cpp(ix):
        return NotFound("GPU kernel", function_name or "", [], "The C++ layer is not indexed (see get_status).")
    if function_name is None or (isinstance(function_name, str) and not function_name.strip()):
        return ix.cached("cuda_summary", lambda: _summary(ix))
    name = clean_text(function_name, "function_name", "index_select")
    reg = registry(ix)
    roots: list[tuple[CppDef, str]] = []
    ops = reg.lookup(name)
    matched = ""
    if ops:
        base = ops[0].name
        related = [o for n in (f"{base}_backward", f"_{base}_backward") for o in reg.by_name.get(n, [])]
        for op in ops + related:
            for entry in reg.dispatch(op):
                if "CUDA" not in entry.key:
                    continue
                for d in kernel_definitions(ix, entry.kernel, reg.structured_entry(op, entry))[:2]:
                    roots.append((d, f"{op.full_name} [{entry.key}] -> {d.display}"))
        matched = f"op {base}" + (f" and {', '.join(sorted({o.name for o in related}))}" if related else "")
    if not roots:
        direct = [to_def(ix, r) for r in ix.q(f"SELECT {SYMBOL_COLS} FROM cpp_symbol WHERE name = ? "
                                              "AND kind = 'global_kernel'", (name.split("::")[-1],))]
        if direct:
            kernels = []
            for d in direct:
                k = GpuKernel(d.name, [d])
                for row in ix.q(f"SELECT {CALL_COLS} FROM cpp_call WHERE callee = ? AND kind = 'launch'", (d.name,)):
                    call = to_call(ix, row)
                    launcher = symbol(ix, call.caller_id)
                    k.launches.append(KernelLaunch(call.loc, launcher.display if launcher else "?", ""))
                kernels.append(k)
            return CudaKernelsResult(name, "kernel name", kernels, [])
        found = find_function(ix, name)
        if isinstance(found, NotFound):
            if ops:
                return CudaKernelsResult(name, matched, [], [], notes=[f"{matched} has no CUDA kernel in the dispatch "
                                                                      "table (composite or CPU-only)."])
            found.what = "op, function or GPU kernel"
            return found
        fn, _others = found
        roots = [(fn, fn.display)]
        matched = f"function {fn.display} ({fn.loc})"
    kernels, helpers = _walk_launches(ix, roots)
    result = CudaKernelsResult(name, matched, sorted(kernels.values(), key=lambda k: k.name), helpers)
    if not kernels and not helpers:
        result.notes.append("No <<<>>> launch or launch helper was found within "
                            f"{MAX_DEPTH} calls of its CUDA kernels (they may use cuBLAS/cuDNN or other libraries).")
    return result
