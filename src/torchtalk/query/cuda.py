"""cuda_kernels: the GPU kernels an op or function reaches, where they are defined and launched.

A walk down the graph from the op: its kernels for keys that run on CUDA (composite keys
included), the ops its composite kernels call, the ops its derivative formulas call (its
backward), then C++ calls and the CUDA registrations of DispatchStubs down to ``<<<>>>``
launches and launch helpers (gpu_kernel & kin). Each kernel keeps the chain from the op,
and whether it was reached through the backward.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field

from ..graph import Step, down, graph
from ..graph.nodes import CPP_KINDS, cpp_node, symbol_id
from ..graph.registry import registry
from ..graph.symbols import SYMBOL_COLS, gpu_kernels_named, has_cpp, symbol, to_symbol
from ..model import CppSymbol, Edge, EdgeKind, Node, NodeKind, SymbolKind, is_composite, runs_on
from ..store.reader import Index
from .args import clean_text
from .functions import find_targets
from .results import NotFound
from .trace import ops_named

MAX_DEPTH = 6
WALK_KINDS = frozenset({EdgeKind.KERNEL, EdgeKind.OP_CALL, EdgeKind.BACKWARD, EdgeKind.CALL, EdgeKind.STUB_CALL,
                        EdgeKind.STUB_KERNEL})
_GPU_BACKENDS = ("CUDA", "HIP")


@dataclass
class KernelLaunch:
    site: Edge  # the LAUNCH edge: src is the launching function, site the launch
    chain: list[Edge]  # from the op (or function) asked about to the launcher
    backward: bool  # reached through a derivative formula


@dataclass
class GpuKernel:
    name: str
    node: Node
    definitions: list[CppSymbol]
    launches: list[KernelLaunch] = field(default_factory=list)

    @property
    def backward(self) -> bool:
        return bool(self.launches) and all(launch.backward for launch in self.launches)


@dataclass
class CudaKernelsResult:
    query: str | None
    matched: str
    kernels: list[GpuKernel]
    helpers: list[KernelLaunch]  # gpu_kernel(iter, functor) and kin: the functor is the device code
    summary: dict[str, object] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)


def _gpu_edge(e: Edge) -> bool:
    """Edges that can lead to what runs on a GPU."""
    if e.kind is EdgeKind.KERNEL:
        return any(runs_on(e.key, b) for b in _GPU_BACKENDS)
    if e.kind is EdgeKind.STUB_KERNEL:
        return e.key in _GPU_BACKENDS
    return e.dst.kind is not NodeKind.UNRESOLVED


def _runs_for_cuda(edges: list[Edge], start: bool) -> list[Edge]:
    """An op's edges that run for CUDA tensors: a CUDA kernel of its own wins over its composite kernel (which,
    and whose op calls, then serve the other backends only); an op reached from dense code runs its dense CUDA
    kernel, not its NestedTensorCUDA / SparseCUDA ones."""
    own = any(e.kind is EdgeKind.KERNEL and e.key in _GPU_BACKENDS for e in edges)
    out = []
    for e in edges:
        if e.kind is EdgeKind.KERNEL and (own and is_composite(e.key) or
                                          not start and not (e.key in _GPU_BACKENDS or is_composite(e.key))):
            continue
        if e.kind is EdgeKind.OP_CALL and own:
            continue
        out.append(e)
    return out


def _walk(ix: Index, starts: list[Node]) -> tuple[dict[str, GpuKernel], list[KernelLaunch]]:
    g = graph(ix)
    first = {(n.kind, n.key) for n in starts}

    def edges(node: Node, kinds: object) -> list[Edge]:
        out = [e for e in g.out(node, WALK_KINDS) if _gpu_edge(e)]
        return _runs_for_cuda(out, (node.kind, node.key) in first) if node.kind is NodeKind.OP else out

    def follow(s: Step) -> bool:
        # The backward of a backward (second-order gradients) is not what runs for the op; in the backward, the
        # formula's own ops run, and the ops those call through the dispatcher are other ops with kernels of their
        # own (index_select_backward's index_add_: index_add's kernels).
        if s.edge.kind in (EdgeKind.BACKWARD, EdgeKind.OP_CALL) and s.parent is not None and \
                any(e.kind is EdgeKind.BACKWARD for e in s.parent.chain()):
            return False
        return s.node.kind is not NodeKind.GPU_KERNEL

    steps = down(starts, edges, WALK_KINDS, MAX_DEPTH, fan_out=40, max_nodes=1500, follow=follow)
    launchers: list[tuple[Node, list[Edge]]] = [(n, []) for n in starts if n.kind in CPP_KINDS]
    launchers += [(s.node, s.chain()) for s in steps if s.node.kind in CPP_KINDS]
    kernels: dict[str, GpuKernel] = {}  # by qualified name: one name in two namespaces is two kernels
    helpers: list[KernelLaunch] = []
    for node, chain in launchers:
        backward = any(e.kind is EdgeKind.BACKWARD for e in chain)
        for e in g.out(node, [EdgeKind.LAUNCH]):
            launch = KernelLaunch(e, chain, backward)
            sid = symbol_id(e.dst)
            if sid is None:  # a launch helper's functor or lambda
                helpers.append(launch)
                continue
            sym = symbol(ix, sid)
            name = sym.name if sym else e.dst.label
            k = kernels.setdefault(sym.qualname if sym else e.dst.label, GpuKernel(name, e.dst, [sym] if sym else []))
            k.launches.append(launch)
    return kernels, helpers


def _summary(ix: Index) -> CudaKernelsResult:
    rows = [to_symbol(ix, r)
            for r in ix.q(f"SELECT {SYMBOL_COLS} FROM cpp_symbol WHERE kind = ? ORDER BY file_id, line",
                          (SymbolKind.GLOBAL_KERNEL.value,))]
    by_file = Counter(d.path for d in rows)
    launches = ix.one("SELECT count(*) FROM cpp_call WHERE kind = 'launch'")[0]
    helpers = ix.one("SELECT count(*) FROM cpp_call WHERE kind = 'gpu_launch'")[0]
    sample = rows[:: max(1, len(rows) // 40)][:40]
    return CudaKernelsResult(None, "all", [GpuKernel(d.name, cpp_node(d), [d]) for d in sample], [], {
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
    if direct:
        return _kernel_by_name(ix, name, direct)
    entry = None
    if not ops and "::" not in name:
        ops, entry, _via = ops_named(ix, name)  # F.cross_entropy -> cross_entropy_loss, a grad_fn -> its op
    if ops:
        starts = [Node(NodeKind.OP, op.full_name, op.full_name, op.loc) for op in ops]
        names = list(dict.fromkeys(op.name for op in ops))
        matched = f"op {', '.join(names[:4])}" + (f" ({len(ops)} overloads)" if len(ops) > 1 else "")
        if entry is not None:
            matched += f", reached from Python {entry.kind} {entry.name} ({entry.loc})"
    else:
        found = find_targets(ix, name)
        if isinstance(found, NotFound):
            found.what = "op, function or GPU kernel"
            return found
        targets, _amb = found
        starts = [targets[0].node]
        matched = f"{'DispatchStub' if targets[0].is_stub else 'function'} {targets[0].node}"
    kernels, helpers = _walk(ix, starts)
    ordered = sorted(kernels.values(), key=lambda k: (k.backward, len(k.launches[0].chain) if k.launches else 0,
                                                      k.name))
    result = CudaKernelsResult(name, matched, ordered, helpers)
    if not kernels and not helpers:
        result.notes.append(f"No <<<>>> launch or launch helper was found within {MAX_DEPTH} levels of its CUDA "
                            "kernels, composite calls and backward (they may use cuBLAS/cuDNN or other libraries, "
                            "or the op has no CUDA kernel).")
    return result


def _kernel_by_name(ix: Index, name: str, defs: list[CppSymbol]) -> CudaKernelsResult:
    """A __global__ kernel asked for by name: its definitions and every launch site."""
    g = graph(ix)
    kernels = []
    for d in defs:
        node = cpp_node(d)
        k = GpuKernel(d.name, node, [d])
        k.launches = [KernelLaunch(e, [], False) for e in g.into(node, [EdgeKind.LAUNCH])]
        kernels.append(k)
    return CudaKernelsResult(name, "kernel name", kernels, [])
