"""cuda_kernels: the GPU kernels an op or function reaches, where they are defined and launched.

The GPU walk of graph/gpu.py from each op the name means (trace's GPU lines read the same
walk): its kernels for keys that run on CUDA, its composite calls and backward, C++ calls and
CUDA stub registrations down to ``<<<>>>`` launches and launch helpers (gpu_kernel & kin).
Each kernel keeps the chain from the op, and whether it was reached through the backward;
what the walk's limits left out is named with the call that shows it.

Note [No device work]: an op whose complete walk (no cut, every kernel for CUDA resolved) reaches no
``<<<>>>`` launch, launch family, GPU library or CUDA runtime call (a view, metadata or host-side op:
``alias``, ``sparse_dim``, ``q_scale``) is answered by saying so, with what the walk covered (its
kernels for CUDA, the functions walked, the calls it could not resolve). Where the walk was cut, or a
kernel's definition is not indexed, or a call it could not resolve names a function of its caller's own
file (``KronImpl(self, other).kron()``), the answer says that nothing was found and why it is not complete.
When nothing is found within MAX_DEPTH and HOPS calls through the dispatcher and only those limits cut
the walk, it looks again NOTHING_DEPTH deep through NOTHING_HOPS such calls (what it finds there is the
answer; if it finds nothing and is not cut, the walk is complete).
"""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass, field, replace

from ..graph import graph
from ..graph.gpu import (
    GPU_BACKENDS,
    HOPS,
    MAX_DEPTH,
    NOTHING_DEPTH,
    NOTHING_HOPS,
    GpuReach,
    gpu_walk,
    in_cuda_source,
    runs_for_cuda,
)
from ..graph.gpu import KernelLaunch as KernelLaunch  # re-exported: render reads the results
from ..graph.gpu import LibraryCall as LibraryCall
from ..graph.gpu_rank import Nearness as Nearness  # re-exported: render ranks its sections by it
from ..graph.gpu_rank import housekeeping, nearness, whose
from ..graph.nodes import cpp_node, op_node, symbol_id
from ..graph.registry import registry
from ..graph.symbols import SYMBOL_COLS, gpu_kernels_named, has_cpp, symbol, to_symbol
from ..model import CppSymbol, Cut, CutKind, EdgeKind, Node, NodeKind, SymbolKind, is_composite
from ..store.reader import Index
from .args import clean_text
from .cuts import gpu_cuts, tool_call
from .functions import find_targets
from .results import NotFound
from .trace import ops_named


@dataclass
class GpuKernel:
    name: str
    node: Node
    definitions: list[CppSymbol]
    launches: list[KernelLaunch] = field(default_factory=list)

    @property
    def backward(self) -> bool:
        return bool(self.launches) and all(launch.backward for launch in self.launches)

    @property
    def layout(self) -> bool:
        """Launched only on a layout-specific path (a SparseCUDA, NestedTensorCUDA, ... kernel of the op)."""
        return bool(self.launches) and all(near(launch).layout for launch in self.launches)


@dataclass
class CudaKernelsResult:
    query: str | None
    matched: str
    kernels: list[GpuKernel]
    helpers: list[KernelLaunch]  # gpu_kernel(iter, functor) and kin: the functor is the device code
    libraries: list[LibraryCall] = field(default_factory=list)  # cuBLAS, cuDNN, CUB, ... calls, with their site
    summary: dict[str, object] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)
    cuts: list[Cut] = field(default_factory=list)  # what the walk left out, with the call that shows it
    no_device_work: str = ""  # a complete walk found no device work: what it covered (Note [No device work])
    matched_kind: NodeKind | None = None  # what the name matched: an op, a C++ function, a stub, a kernel


def near(x: KernelLaunch | LibraryCall) -> Nearness:
    """Where a launch or library call ranks in the answer (Note [Nearest first] in graph/gpu_rank.py): the dense
    path, then the forward before the backward, fewer op boundaries crossed, the op's own code before another's,
    device work before housekeeping (the caching allocator; the CUDA runtime's copies and waits in another op's
    code), fewer calls; among equals, walk order (the overloads as asked)."""
    return nearness(x.chain, x.hops, x.backward, other=bool(x.via), site=x.site,
                    housekeeping=isinstance(x, LibraryCall) and housekeeping(x.library, x.via, x.site.written))


@dataclass
class _Merged:
    kernels: dict[str, GpuKernel] = field(default_factory=dict)
    helpers: list[KernelLaunch] = field(default_factory=list)
    libraries: list[LibraryCall] = field(default_factory=list)
    cuts: list[Cut] = field(default_factory=list)
    reaches: list[GpuReach] = field(default_factory=list)

    @property
    def empty(self) -> bool:
        """Nothing found: no kernel, launch family or library call."""
        return not self.kernels and not self.helpers and not self.libraries


def _merged(ix: Index, starts: list[Node], depth: int = MAX_DEPTH, hops: int = HOPS) -> _Merged:
    """The GPU walk of each start (graph/gpu.py, the one trace reads too), merged: a launch site reached from
    several starts is listed once, with its nearest chain (``near``), in the order of nearness."""
    out = _Merged()
    kernels, helpers = out.kernels, out.helpers
    seen: set[tuple[str, str, int]] = set()
    cuts: list[Cut] = []
    reaches = out.reaches = [gpu_walk(ix, start, depth, hops) for start in starts]
    for reach in reaches:
        cuts += reach.cuts
    found = [x for r in reaches for x in r.launches]
    calls = [x for r in reaches for x in r.libraries]
    if any(start.kind is not NodeKind.OP for start in starts):  # a function's walk: count the ops it crosses too
        found = [replace(x, hops=whose(ix, "", x.chain)[1]) for x in found]
        calls = [replace(x, hops=whose(ix, "", x.chain)[1]) for x in calls]
    libs: dict[tuple[str, str], LibraryCall] = {}
    for lib in sorted(calls, key=near):
        libs.setdefault((str(lib.site.site), lib.site.written or lib.site.dst.key), lib)  # with its nearest chain
    out.libraries = list(libs.values())
    # a site reached several ways (an op call and a call through the dispatcher) is listed with its nearest chain
    for launch in sorted(found, key=near):
        e = launch.site
        where = (e.src.key, e.dst.key, e.site.line if e.site else 0)
        if where in seen:
            continue
        seen.add(where)
        sid = symbol_id(e.dst)
        if sid is None:  # a launch helper's functor or lambda
            helpers.append(launch)
            continue
        sym = symbol(ix, sid)
        name = sym.name if sym else e.dst.label
        # by qualified name: one name in two namespaces is two kernels (sbtopk::gatherTopK, mbtopk::gatherTopK);
        # a template and its explicit specializations are one kernel with each definition, and the launch that
        # may run either is one launch (coalesceValuesKernel<scalar_t, ...> and its bool specialization)
        k = kernels.setdefault(sym.qualname if sym else e.dst.label, GpuKernel(name, e.dst, []))
        if sym and all(d.id != sym.id for d in k.definitions):
            k.definitions.append(sym)
        if all((x.site.src.key, x.site.site) != (e.src.key, e.site) for x in k.launches):
            k.launches.append(launch)
    out.cuts = gpu_cuts(cuts)
    return out


def _summary(ix: Index) -> CudaKernelsResult:
    rows = [to_symbol(ix, r)
            for r in ix.q(f"SELECT {SYMBOL_COLS} FROM cpp_symbol WHERE kind = ? ORDER BY file_id, line",
                          (SymbolKind.GLOBAL_KERNEL.value,))]
    by_file = Counter(d.path for d in rows)
    launches = ix.one("SELECT count(*) FROM cpp_call WHERE kind = 'launch'")[0]
    helpers = ix.one("SELECT count(*) FROM cpp_call WHERE kind = 'gpu_launch'")[0]
    sample = rows[:: max(1, len(rows) // 40)][:40]
    return CudaKernelsResult(None, "all", [GpuKernel(d.name, cpp_node(d), [d]) for d in sample], [], summary={
        "global_kernels": len(rows), "files": len(by_file), "launch_sites": launches,
        "helper_launch_sites": helpers, "top_files": by_file.most_common(15)})


def cuda_kernels(ix: Index, function_name: str | None = None) -> CudaKernelsResult | NotFound:
    if not has_cpp(ix):
        return NotFound("GPU kernel", function_name or "", [], "The C++ layer is not indexed (see get_status).")
    if function_name is None or (isinstance(function_name, str) and not function_name.strip()):
        summary: CudaKernelsResult = ix.cached("cuda_summary", lambda: _summary(ix))
        return summary
    name = clean_text(function_name, "function_name", "index_select")
    reg = registry(ix)
    ops = reg.lookup(name)
    direct = [] if ops else gpu_kernels_named(ix, name.split("::")[-1])
    # a kernel declared in a header (cutlassB.h's 209 fmha_ declarations) is the one defined: one kernel, not two
    defined = {d.qualname for d in direct if d.is_definition}
    direct = [d for d in direct if d.is_definition or d.qualname not in defined]
    if direct:
        return _kernel_by_name(ix, name, direct)
    entry = None
    notes: list[str] = []  # what the name meant, when it means several functions
    if not ops and "::" not in name:
        ops, entry, _via = ops_named(ix, name)  # F.cross_entropy -> cross_entropy_loss, a grad_fn -> its op
    if ops:
        starts = [op_node(op) for op in ops]
        names = list(dict.fromkeys(op.name for op in ops))
        matched = f"op {', '.join(names[:4])}" + (f" ({len(ops)} overloads)" if len(ops) > 1 else "")
        if entry is not None:
            matched += f", reached from Python {entry.kind.noun} {entry.name} ({entry.loc})"
    else:
        found = find_targets(ix, name)
        if isinstance(found, NotFound):
            found.what = "op, function or GPU kernel"
            return found
        targets, amb = found
        # Note [A name of CPU and CUDA code]: GroupNormKernelImpl is defined in cpu/group_norm_kernel.cpp and
        # cuda/group_norm_kernel.cu; asked which CUDA kernels run, the name means its CUDA definitions (it answered
        # from the CPU one, which launches nothing, and never said the name had another)
        chosen = [t for t in targets if in_cuda_source(t.node)] or targets[:1]
        starts = [t.node for t in chosen]
        matched = f"{'DispatchStub' if chosen[0].is_stub else 'function'} {chosen[0].node}"
        if amb is not None:
            left = [c for c in amb.candidates if all(c.loc != t.node.loc for t in chosen)]
            shown = ", ".join(str(c.loc) for c in left[:3]) + (" ..." if len(left) > 3 else "")
            which = "its CUDA definitions" if in_cuda_source(chosen[0].node) else "the first"
            ask = f": {tool_call('cuda_kernels', str(left[0].loc))} asks about another" if left else ""
            notes.append(f"'{name}' names {len(amb.candidates)} functions; this answer walks {which} "
                         f"({', '.join(str(t.node.loc) for t in chosen)}), not {shown}{ask}")
    m = _merged(ix, starts)
    if m.empty and m.cuts and all(c.kind in (CutKind.DEPTH, CutKind.HOPS) for c in m.cuts):  # look further once
        m = _merged(ix, starts, NOTHING_DEPTH, NOTHING_HOPS)
    ordered = sorted(m.kernels.values(), key=lambda k: (near(k.launches[0]), k.name))  # each has a launch
    result = CudaKernelsResult(name, matched, ordered, m.helpers, m.libraries, cuts=m.cuts, notes=notes,
                               matched_kind=starts[0].kind)
    if m.empty:
        result.no_device_work = _no_device_work(ix, starts, m)
    if m.empty and not result.no_device_work:  # nothing found, and the walk cannot say there is nothing
        result.notes.append(f"No <<<>>> launch, launch family or GPU library call was found within {MAX_DEPTH} "
                            "levels of its CUDA kernels, composite calls and backward (or the op has no CUDA "
                            "kernel).")
    return result


def _no_device_work(ix: Index, starts: list[Node], m: _Merged) -> str:
    """What a complete walk that found nothing covered (Note [No device work]), or "" when the walk is not
    complete: a cut, an op kernel for CUDA whose definition is not indexed, or no kernel for CUDA at all."""
    if m.cuts or any(s.kind is not NodeKind.OP for s in starts):
        return ""
    g = graph(ix)
    for op in starts:
        edges = runs_for_cuda(g.out(op, [EdgeKind.KERNEL]), True)
        if any(e.dst.kind is NodeKind.UNRESOLVED and (e.key in GPU_BACKENDS or is_composite(e.key))
               for e in edges):
            return ""
    entries = list(dict.fromkeys(f"{e.dst.label} [{e.key}]" for r in m.reaches for e in r.entries))
    if not entries:
        return ""
    walked = sum(r.walked for r in m.reaches)
    calls = list(dict.fromkeys(u for r in m.reaches for u in r.unresolved))
    if any(_defined_in(ix, name, path) for name, path in calls):
        return ""  # a call the index could not resolve into code of the same file (KronImpl(a, b).kron()): not complete
    unresolved = list(dict.fromkeys(name for name, _path in calls))
    text = (f"the complete walk (no cut) from its kernels for CUDA ({', '.join(entries[:4])}"
            f"{f' +{len(entries) - 4}' if len(entries) > 4 else ''}) through {walked} functions, its composite "
            "calls, the ops they call through the dispatcher and its backward reaches no <<<>>> launch, launch "
            "family, GPU library or CUDA runtime call: a view, metadata or host-side op (past "
            f"{MAX_DEPTH} calls, functions it only names are not followed)")
    if unresolved:
        text += (f"; {len(unresolved)} {'call was' if len(unresolved) == 1 else 'calls were'} not resolved to a "
                 "definition and not walked "
                 f"({', '.join(unresolved[:5])}{', ...' if len(unresolved) > 5 else ''})")
    return text


def _defined_in(ix: Index, written: str, path: str) -> bool:
    """Whether a call the walk could not resolve is a method of a class of its caller's own file, on an object of
    that class (``KronImpl(self, other).kron``; not ``NullType::singleton`` on a template parameter)."""
    name = written.replace("->", ".").replace("::", ".").split(".")[-1].split("<")[0].strip("() ")
    head = re.match(r"[A-Za-z_]\w*", written)
    if not name.isidentifier() or not path or head is None or head.group() == name:
        return False
    fid = ix.one("SELECT id FROM files WHERE path = ?", (path,))
    if fid is None or not ix.one("SELECT count(*) FROM cpp_class WHERE name = ? AND file_id = ?",
                                 (head.group(), fid[0]))[0]:
        return False
    return bool(ix.one("SELECT count(*) FROM cpp_symbol s JOIN files f ON f.id = s.file_id WHERE s.name = ? AND "
                  "f.path = ? AND s.is_definition", (name, path))[0] > 0)


def _kernel_by_name(ix: Index, name: str, defs: list[CppSymbol]) -> CudaKernelsResult:
    """A __global__ kernel asked for by name: its definitions and every launch site."""
    g = graph(ix)
    kernels = []
    for d in defs:
        node = cpp_node(d)
        k = GpuKernel(d.name, node, [d])
        k.launches = [KernelLaunch(e, [], False) for e in g.into(node, [EdgeKind.LAUNCH])]
        kernels.append(k)
    return CudaKernelsResult(name, "kernel name", kernels, [], matched_kind=NodeKind.GPU_KERNEL)
