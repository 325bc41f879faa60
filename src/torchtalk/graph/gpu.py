"""The GPU walk: from an op or a C++ function down to what runs on a GPU, once for every tool.

Two levels, each one walk (graph/walk.py). Below a C++ function (``gpu_reach``): its calls and
the CUDA registrations of the DispatchStubs it calls, MAX_DEPTH calls deep, down to ``<<<>>>``
launches and launch helpers (gpu_kernel & kin). Above, from an op (``gpu_walk``): its kernels for
keys that run on CUDA (composite keys included), the ops its composite kernels call and the ops
its derivative formulas call (its backward), and for every kernel reached its ``gpu_reach``.
``cuda_kernels`` reads ``gpu_walk``, ``trace``'s GPU lines for a kernel read that kernel's
``gpu_reach``: the same walk, memoised per node, so the two tools cannot disagree about an op.

Note [Calls through the dispatcher]: a kernel's call of another op through the dispatcher
(``at::angle_out(result, self)`` in angle's CUDA kernel, ``at::arange_out`` in a sparse kernel) is a
DISPATCH_CALL edge to that op; below a kernel the walk takes it, then the op's kernel for CUDA
(``runs_for_cuda``: its dense CUDA kernel, else its composite one), as the dispatcher would. What is
reached that way is the other op's code (``via``) unless the op is a variant of the one asked
(angle -> angle.out). One such call per chain is followed (HOPS): the ops that op calls in turn are
kept as reached and named as a cut (CutKind.HOPS, at the op whose calls were not followed), so the
walk stays within its usual size (at::empty ->
empty_cuda -> ... is not walked for every op that allocates). A composite kernel's own calls through the
dispatcher do not count (``crossings``): the op runs as the ops it calls, so trace's ``.sum()`` reaches
sum.dim_IntList's reduction through sum's composite kernel (before s42 it was a cut, and trace's answer led with
its backward).

Fan-out ranks before it cuts (Note [No silent cut]): registrations and stub calls first, then
calls into CUDA sources (.cu, .cuh, cuda/ directories), then other calls, then candidates and
declarations (which have no body to walk), so a launch behind the 47th call of a host function
is reached as surely as one behind the first.
"""

from __future__ import annotations

from collections.abc import Collection
from dataclasses import dataclass, field, replace
from typing import TypeVar

from ..model import Cut, CutKind, Edge, EdgeHow, EdgeKind, Loc, Node, NodeKind, is_composite, runs_on
from ..model.dispatch import traced_by_autograd
from ..model.paths import rocm_only_path
from ..store.reader import Index
from .device_reach import device_out
from .gpu_families import Template, functor_loc, is_library, library_edges, templates
from .gpu_rank import composite_calls, whose
from .graph import graph
from .layout_arms import layout_branch
from .nodes import CPP_KINDS, symbol_id
from .pp_branches import rocm_only
from .stored_edges import read_stored
from .walk import Step, down

MAX_DEPTH = 6
FAN_OUT = 40
MAX_NODES = 1500
HOPS = 1  # calls through the dispatcher followed per chain below a kernel (Note [Calls through the dispatcher])
# How far cuda_kernels looks again when nothing was found within MAX_DEPTH and HOPS (Note [No device work]).
NOTHING_DEPTH, NOTHING_HOPS = 20, 3
OP_KINDS = frozenset({EdgeKind.KERNEL, EdgeKind.OP_CALL, EdgeKind.BACKWARD})  # between ops, and op -> kernel
CPP_WALK_KINDS = frozenset({EdgeKind.CALL, EdgeKind.STUB_CALL, EdgeKind.STUB_KERNEL})  # below a kernel
# Below a kernel, a call through the dispatcher (at::angle_out in angle's CUDA kernel) runs the called op's kernel
# for CUDA (Note [Calls through the dispatcher]).
REACH_KINDS = CPP_WALK_KINDS | {EdgeKind.DISPATCH_CALL, EdgeKind.KERNEL}
GPU_BACKENDS = ("CUDA", "HIP")
_CUDA_SOURCES = (".cu", ".cuh")


@dataclass
class KernelLaunch:
    site: Edge  # the LAUNCH edge: src is the launching function, site the launch
    chain: list[Edge]  # from the op (or function) the walk started at to the launcher
    backward: bool  # reached through a derivative formula
    # A launch family's call (gpu_kernel(lambda@24)): where its device code is, and the __global__ templates
    # the family's own body launches (Note [Launch families] in model/cuda.py). Empty for a <<<>>> launch.
    functor: Loc | None = None
    templates: list[Template] = field(default_factory=list)
    via: str = ""  # the other op whose code this is (reached by a composite call or a direct C++ call), or ""
    hops: int = 0  # op boundaries the chain crosses (Note [Nearest first] in graph/gpu_rank.py)


@dataclass
class LibraryCall:
    """A call into a GPU library (cuBLAS, cuDNN, CUB, ...; Note [Libraries] in model/cuda.py)."""

    library: str
    site: Edge  # the CALL (or UNRESOLVED) edge: src is the calling function, site the call
    chain: list[Edge]
    backward: bool
    via: str = ""
    hops: int = 0


@dataclass
class GpuReach:
    """Every launch and library call a walk from one node reaches (walk order), and what its limits left out."""

    start: Node
    launches: list[KernelLaunch] = field(default_factory=list)
    cuts: list[Cut] = field(default_factory=list)
    libraries: list[LibraryCall] = field(default_factory=list)
    # What the walk covered, for an answer that finds nothing (Note [No device work] in query/cuda.py): the
    # functions walked, the kernels for CUDA it started from (op walks) and the calls it could not resolve.
    walked: int = 0
    entries: list[Edge] = field(default_factory=list)
    unresolved: list[tuple[str, str]] = field(default_factory=list)  # (call as written, the caller's file)


def gpu_edge(e: Edge) -> bool:
    """Edges that can lead to what runs on a GPU."""
    if e.kind is EdgeKind.KERNEL:
        return any(runs_on(e.key, b) for b in GPU_BACKENDS)
    if e.kind is EdgeKind.STUB_KERNEL:
        return e.key in GPU_BACKENDS
    # A virtual method's overrides are followed where it has no body (Note [Virtual calls]); beside a body they are
    # the other classes' (CUDAHooks::hasCUDA for CUDAHooksInterface's), which runs no op's device work.
    # A call of a function parameter reaches what every caller passes (Note [Calls of a function parameter]); the
    # walk reaches the one its own caller passes through that caller's reference to it (Note [References]).
    return e.dst.kind is not NodeKind.UNRESOLVED and e.how is not EdgeHow.OVERRIDE_OF_BODY \
        and e.how is not EdgeHow.PARAMETER


def runs_for_cuda(edges: list[Edge], start: bool) -> list[Edge]:
    """An op's edges that run for CUDA tensors: a CUDA kernel of its own wins over its composite kernel (which,
    and whose op calls, then serve the other backends only); an op reached from dense code runs its dense CUDA
    kernel, not its NestedTensorCUDA / SparseCUDA ones (unless it has no dense kernel at all)."""
    own = any(e.kind is EdgeKind.KERNEL and e.key in GPU_BACKENDS for e in edges)
    # an op with only sparse / nested CUDA kernels (_coalesce: SparseCUDA) is reached only by code holding such
    # tensors (coalesce -> at::_coalesce): those kernels are what runs
    dense = any(e.kind is EdgeKind.KERNEL and (e.key in GPU_BACKENDS or is_composite(e.key)) for e in edges)
    out = []
    for e in edges:
        if e.kind is EdgeKind.KERNEL and (own and is_composite(e.key) or not start and dense and
                                          not (e.key in GPU_BACKENDS or is_composite(e.key))):
            continue
        if e.kind is EdgeKind.OP_CALL and own:
            continue
        out.append(e)
    return out


def in_cuda_source(node: Node) -> bool:
    return is_cuda_path(node.loc.path if node.loc is not None else "")


def is_cuda_path(path: str) -> bool:
    """A CUDA (or HIP) source: .cu, .cuh, or a file under a cuda/ or hip/ directory."""
    return path.endswith(_CUDA_SOURCES) or "/cuda/" in path or rocm_only_path(path)


def gpu_rank(e: Edge) -> int:
    """Which edges of a node the GPU walk keeps first when it has more than FAN_OUT."""
    if e.kind is EdgeKind.DISPATCH_CALL:
        return 2  # another op, through the dispatcher: after the calls into CUDA sources
    if e.kind is not EdgeKind.CALL:
        return 0  # registrations, stub calls, op calls, backward: the structure of the op
    if e.how.is_candidate or e.how.is_declaration or e.how is EdgeHow.REFERENCED:
        return 3  # one of several overloads, a body the index does not have, a function only named
    return 1 if in_cuda_source(e.dst) else 2


def gpu_reach(ix: Index, node: Node, depth: int = MAX_DEPTH, hops: int = HOPS) -> GpuReach:
    """The launches a C++ function (or a DispatchStub) reaches within ``depth`` calls: its calls and the CUDA
    registrations of the stubs it calls. Memoised per node, depth and index version: every op whose kernel it is
    shares it, and trace's GPU lines for a kernel are this walk."""
    memo: dict[tuple[NodeKind, str, int, int], GpuReach] = ix.cached("gpu_reach", dict)
    key = (node.kind, node.key, depth, hops)
    if key not in memo:
        # the store keeps the walks below the kernels of ops at the default depth (Note [Stored GPU walks])
        found = _stored(ix, node, depth, hops) if (depth, hops) == (MAX_DEPTH, HOPS) else None
        memo[key] = found or _reach(ix, node, depth, hops)
    return memo[key]


def _stored(ix: Index, node: Node, depth: int, hops: int) -> GpuReach | None:
    """The walk from ``node`` the store of resolved calls keeps (Note [Stored GPU walks] in store/resolved.py)."""
    found = read_stored(ix, lambda store: store.walk(node.kind.value, node.key, depth, hops))
    return found if isinstance(found, GpuReach) else None


def _edges(ix: Index, node: Node, kinds: Collection[EdgeKind]) -> list[Edge]:
    """The edges the GPU walk takes out of a node, for the kinds the walk asks (at its last level, the free ones:
    walk.py never computes the others). Memoised per node and kinds and index version: the walks from every
    kernel of an op (and of the ops it reaches) pass the same functions again; callers never change the list."""
    memo: dict[tuple[NodeKind, str, frozenset[EdgeKind]], list[Edge]] = ix.cached("gpu_edges", dict)
    key = (node.kind, node.key, frozenset(kinds))
    if key not in memo:
        memo[key] = _new_edges(ix, node, kinds)
    return memo[key]


def _new_edges(ix: Index, node: Node, kinds: Collection[EdgeKind]) -> list[Edge]:
    g = graph(ix)
    if node.kind is NodeKind.OP:  # reached through the dispatcher: its kernel for CUDA
        return runs_for_cuda([e for e in g.out(node, [EdgeKind.KERNEL]) if gpu_edge(e)], False)
    out = [_in_arm(ix, e) for e in device_out(ix, node, [k for k in kinds if k in REACH_KINDS
                                                        and k is not EdgeKind.KERNEL]) if gpu_edge(e)]
    # a callee called in a layout's arm and outside it (index_select_out_cuda's quantized arm and its else) is
    # reached by the dense call first: the walk keeps the first edge to a node
    return sorted(out, key=lambda e: e.branch is not None and e.branch.layout)


def _in_arm(ix: Index, e: Edge) -> Edge:
    """The edge, with its layout arm when its call is made in one (Note [Layout arms] in graph/layout_arms.py)."""
    branch = layout_branch(ix, e.site)
    return e if branch is None else replace(e, branch=branch)


@dataclass(frozen=True)
class _Found:
    """What one function itself holds for the GPU walk: its LAUNCH edges, its library calls, its direct calls
    that resolve to nothing (as written, with the function's file)."""

    launches: list[Edge]
    libraries: list[tuple[str, Edge]]
    unresolved: list[tuple[str, str]]


def _found(ix: Index, node: Node) -> _Found:
    """``_Found`` of a C++ function, memoised per node and index version (every walk passing it reads it)."""
    memo: dict[tuple[NodeKind, str], _Found] = ix.cached("gpu_found", dict)
    key = (node.kind, node.key)
    if key not in memo:
        calls = device_out(ix, node, [EdgeKind.CALL, EdgeKind.UNRESOLVED])
        # what only a ROCm build compiles is no CUDA work (Note [ROCm-only code] in graph/pp_branches.py)
        cuda = [_in_arm(ix, e) for e in device_out(ix, node, [EdgeKind.LAUNCH]) if not _rocm(ix, e)]
        libraries = library_edges(calls, lambda n: _works(ix, n))
        memo[key] = _Found(cuda, [(lib, _in_arm(ix, e)) for lib, e in libraries if not _rocm(ix, e)],
                           [(e.written or e.dst.label, node.loc.path if node.loc else "") for e in calls
                            if e.kind is EdgeKind.UNRESOLVED and e.how is EdgeHow.DIRECT])
    return memo[key]


def _works(ix: Index, node: Node) -> bool:
    """Whether a function's own code launches or calls a GPU library (Note [Wrapper accessors] in gpu_families.py);
    memoised per node and index version, a cycle of methods answering no."""
    memo: dict[tuple[NodeKind, str], bool] = ix.cached("gpu_works", dict)
    key = (node.kind, node.key)
    if key not in memo:
        memo[key] = False
        found = _found(ix, node)
        memo[key] = bool(found.launches or found.libraries)
    return memo[key]


def _rocm(ix: Index, e: Edge) -> bool:
    return e.site is not None and rocm_only(ix, e.site.path, e.site.line)


def _reach(ix: Index, start: Node, depth: int, hops: int) -> GpuReach:
    def edges(node: Node, kinds: Collection[EdgeKind]) -> list[Edge]:
        out = _edges(ix, node, kinds)
        # Note [Looking further without references]: past MAX_DEPTH (the look further of Note [No device work]) a
        # function only named is not followed: references join most of the tree's helpers to one another, and a
        # walk twenty calls deep through them ends in c10's string utilities, never in device work.
        return out if depth <= MAX_DEPTH else [e for e in out if e.how is not EdgeHow.REFERENCED]

    left: list[Node] = []

    def follow(s: Step) -> bool:
        # The call into a library function is the answer (Note [Libraries]); the walk goes on into the library's
        # code in the tree only for the kernels it launches there (flash attention's run_flash_fwd: kernel<<<>>>),
        # never for the library calls inside it (at::cuda::blas::gemm's cublasSgemm). One call through the
        # dispatcher per chain (Note [Calls through the dispatcher]): the ops that op calls in turn are kept as
        # reached, not walked from, and named as a cut (cuda_kernels of that op goes on).
        if s.node.kind is NodeKind.GPU_KERNEL:
            return False
        if s.node.kind is NodeKind.OP:
            through = crossings(s.chain())
            if len(through) > hops:  # named by the op whose code makes the call (HOPS >= 1: cuda_kernels of it goes on)
                left.append(through[-2].dst if len(through) > 1 else s.node)
                return False
        return True

    walk = down([start], edges, REACH_KINDS, depth, fan_out=FAN_OUT, max_nodes=MAX_NODES, follow=follow,
                rank=gpu_rank)
    launchers: list[tuple[Node, Step | None, bool]] = [(start, None, is_library(start))] \
        if start.kind in CPP_KINDS else []
    launchers += [(s.node, s, inside) for s, inside in _in_library(walk.steps) if s.node.kind in CPP_KINDS]
    cuts = walk.cuts + ([Cut(CutKind.HOPS, left[0], len(left), hops)] if left else [])
    reach = GpuReach(start, cuts=cuts, walked=sum(not is_library(n) for n, _, _ in launchers))
    for node, step, inside in launchers:
        found = _found(ix, node)
        # the chain only for what is listed (most functions a walk passes launch nothing)
        chain = step.chain() if step is not None and (found.launches or found.libraries and not inside) else []
        for e in found.launches:
            if symbol_id(e.dst) is None:  # a launch family's call: its device code and its kernel templates
                made = templates(ix, e, lambda n: _launches(ix, n))
                reach.launches.append(KernelLaunch(e, chain, False, functor_loc(ix, e), made))
            else:
                reach.launches.append(KernelLaunch(e, chain, False))
        if not inside:
            reach.libraries += [LibraryCall(lib, e, chain, False) for lib, e in found.libraries]
            reach.unresolved += found.unresolved
    return reach


def crossings(chain: list[Edge]) -> list[Edge]:
    """The calls through the dispatcher a chain makes that count against HOPS: all but a composite kernel's own
    (``composite_calls``: ``x.sum()`` in trace's CUDA kernel reaches sum's composite kernel, whose ``at::sum(self,
    {}, ...)`` is sum.dim_IntList's reduction, not another op's code)."""
    own = composite_calls(chain)
    return [e for i, e in enumerate(chain) if e.kind is EdgeKind.DISPATCH_CALL and i not in own]


def _in_library(steps: list[Step]) -> list[tuple[Step, bool]]:
    """Each step of a down walk, and whether its chain passes a library function (a library's own code: the
    step's node or any node before it is one). One pass, parents first (a walk lists a step after its parent),
    instead of each step's chain read anew."""
    inside: dict[int, bool] = {}
    out = []
    for s in steps:
        here = is_library(s.node) or (s.parent is not None and inside[id(s.parent)])
        inside[id(s)] = here
        out.append((s, here))
    return out


def _launches(ix: Index, node: Node) -> tuple[list[Edge], list[tuple[str, Edge]]]:
    """The LAUNCH edges and library calls a launch family's body reaches (for gpu_families.templates)."""
    reach = gpu_reach(ix, node)
    return [launch.site for launch in reach.launches], [(lib.library, lib.site) for lib in reach.libraries]


def gpu_walk(ix: Index, start: Node, depth: int = MAX_DEPTH, hops: int = HOPS) -> GpuReach:
    """The launches reached from ``start``: from an op, through its kernels for keys that run on CUDA, the ops its
    composite kernels call and its backward, each kernel's ``gpu_reach`` (with the levels left: depth counts every
    call from the op, composite calls and backward included); from a C++ function or a stub, its own
    ``gpu_reach``. Memoised per start and index version."""
    if start.kind is not NodeKind.OP:
        return gpu_reach(ix, start, depth, hops)
    memo: dict[tuple[str, int, int], GpuReach] = ix.cached("gpu_walks", dict)
    key = (start.key, depth, hops)
    if key not in memo:
        memo[key] = _stored(ix, start, depth, hops) or _op_walk(ix, start, depth, hops)
    return memo[key]


def _op_walk(ix: Index, start: Node, depth: int, hops: int) -> GpuReach:
    g = graph(ix)

    def edges(node: Node, kinds: Collection[EdgeKind]) -> list[Edge]:
        if node.kind is not NodeKind.OP:
            return []
        out = [e for e in g.out(node, [k for k in kinds if k in OP_KINDS]) if gpu_edge(e)]
        return runs_for_cuda(out, node.key == start.key)

    def follow(s: Step) -> bool:
        # Note [Backward of called ops]: a derivative formula runs for an op autograd records. The ops a formula
        # calls are followed through composite kernels and the dispatcher exactly as the forward's are (embedding's
        # backward: embedding_backward_symint -> embedding_dense_backward -> its CUDA kernel), but the backward of
        # a backward (second-order gradients) is not what runs for the op, and the formula of an op called by a
        # kernel other than a CompositeImplicitAutograd one never runs: that kernel runs below its own op's
        # autograd (embedding's CompositeExplicitAutograd kernel calls index_select; embedding's formula runs,
        # index_select's does not).
        if s.edge.kind is not EdgeKind.BACKWARD or s.parent is None:
            return True
        return not any(e.kind is EdgeKind.BACKWARD or e.kind is EdgeKind.OP_CALL and not traced_by_autograd(e.key)
                       for e in s.parent.chain())

    walk = down([start], edges, OP_KINDS, depth, fan_out=FAN_OUT, max_nodes=MAX_NODES, follow=follow,
                rank=gpu_rank)
    out = GpuReach(start, cuts=list(walk.cuts))
    for s in walk.steps:
        if s.node.kind not in CPP_KINDS or not follow(s):  # a formula that does not run: nothing of it is listed
            continue
        chain = s.chain()
        backward = any(e.kind is EdgeKind.BACKWARD for e in chain)
        reach = gpu_reach(ix, s.node, depth - s.depth, hops)  # depth counts every call from the op
        out.cuts += reach.cuts
        out.walked += reach.walked
        out.unresolved += reach.unresolved
        if s.edge.kind is EdgeKind.KERNEL:
            out.entries.append(s.edge)
        out.launches += [_from_op(ix, start, chain, backward, launch) for launch in reach.launches]
        out.libraries += [_from_op(ix, start, chain, backward, lib) for lib in reach.libraries]
    return out


_Reached = TypeVar("_Reached", KernelLaunch, LibraryCall)


def _from_op(ix: Index, op: Node, chain: list[Edge], backward: bool, x: _Reached) -> _Reached:
    """A launch or library call a kernel's walk reached, as reached from ``op`` along ``chain``: whose code it is
    and how near (Note [Nearest first])."""
    via, hops = whose(ix, op.key, chain + x.chain)
    return replace(x, chain=chain + x.chain, backward=backward, via=via, hops=hops)
