"""How near device work is to the op asked: the one order cuda_kernels and trace's GPU lines list it in.

Note [Nearest first]
~~~~~~~~~~~~~~~~~~~~
The GPU walk (graph/gpu.py) reaches an op's own launches and, through its composite calls, its
backward and calls through the dispatcher, other ops' code: ``embedding`` reaches index_select's
kernels (its composite kernel calls ``index_select``), its backward's (``embedding_backward`` ->
``embedding_dense_backward``), cat's (its NestedTensorCUDA kernel calls ``at::cat``) and, farther,
copy_'s and fill_'s. What an answer lists first is what is nearest, on one scale for
kernels, launch families and library calls alike (``Nearness``):

1. the dense path before the layout-specific kernels of the op asked (its NestedTensorCUDA,
   SparseCUDA, QuantizedCUDA kernels run only for tensors of that layout), and before the copy an
   autogen'd variant makes of its result (``EdgeHow.AUTOGEN_COPY``: torchgen writes ``bernoulli.Tensor_out``
   to run ``bernoulli.Tensor``, then ``copy_arg(out, tmp_output)``: copy_'s code, which runs only when out=
   is passed, and is bookkeeping where it does);
2. the forward before the backward: what a call of the op runs before what autograd runs for it;
3. device work before housekeeping: the caching allocator (every op that allocates reaches
   ``CUDACachingAllocator::get`` in few calls, and an allocation is never what an op is for: rand_like lists
   uniform_'s distribution kernel before empty_like's allocator), and the CUDA runtime's copies and waits in
   another op's code (matrix_power's ``.copy_()`` for n == 0 reaches copy_'s ``cudaMemcpyAsync`` in fewer calls
   than mm's cuBLAS call; quantize_per_tensor's ``.item()`` a device-to-host copy; in the op's own code they stay
   work: for copy_ and _local_scalar_dense the copy is what the op does), and a library's handle and descriptor
   management (``model.cuda.is_setup``: cublasSetStream, cudnnSetFilterNdDescriptor, before the library's work in
   the same function);
4. fewer op boundaries crossed (``whose``): a backend kernel's call through the dispatcher or a
   direct call into another op's kernel crosses one; a variant of the op it is in (angle ->
   angle.out) does not, nor does a call in a composite kernel's code (the kernel and the helpers it calls
   directly, ``composite_calls``: a composite kernel has no device code of its own, the op runs for CUDA tensors
   as the ops it calls; embedding as index_select, conv2d as convolution -> _convolution -> ..., matrix_power as
   linalg_matrix_power, whose helper calls matmul, whose helper calls mm), nor the op's own derivative formula
   (its backward), while another op's formula (_softmax's, reached from softmax's CompositeImplicitAutograd
   kernel; Note [Backward of called ops] in gpu.py says which run) does. An autogen'd variant's copy is the
   exception: it is copy_'s code, one op away;
5. the op's own code before another op's (reached through a composite call, so no farther by 4): bernoulli's
   own kernels (its ``bernoulli_`` variant's) before what its functional composite kernel's other calls reach;
6. fewer calls from the op.

Whose code a launch is, as an answer names it: the last op on its chain, the one whose kernel (or whose
kernel's stubs) makes it (mm's cuBLAS call in matrix_power's answer is "mm's code", not linalg_matrix_power's,
the composite the chain first enters).

So mm's cuBLAS call in its own kernel (3 calls) leads TunableOp's ``flush_icache_kernel`` (8 calls);
embedding lists index_select's kernels (its forward), then the ops index_select calls through the
dispatcher, then its own backward kernels (embedding_backward -> embedding_dense_backward's), and cat's
kernels (its NestedTensorCUDA kernel's) last. Measured over the CUDA census's 1,273 ops of 2.6.0 (s42), what each
answer leads with: at the session's start 163 led with copy_'s ``cudaMemcpyAsync`` (an autogen'd variant's copy,
fewer calls away than anything: bernoulli, bucketize, norm), 93 with the caching allocator and 52 with a backward;
then 73, 32 and 42 (51 of the 73 labelled an autogen'd variant's copy: ops with no CUDA code of their own,
mkldnn_*, miopen_*); relu leads with clamp_min's kernel (it led with threshold_backward's once the copy no longer
did); answers led by the op's own code: 701 -> 712. s43 (composite code with its helpers, housekeeping before
distance, a library's set-up as housekeeping, virtual calls: Note [Virtual calls]): answers led by a CUDA runtime
call 222 -> 25, by a library's set-up call 51 -> 2, by the allocator 32 -> 21 (an allocation reached through a
virtual call of ``c10::Allocator::allocate``), by a kernel or launch family 997 -> 1,224; matrix_power leads with
dot's and mm's cuBLAS calls (it led with a memcpy and listed no cuBLAS call: mm was a second crossing).
trace lists a kernel's GPU lines in this order too (hops and calls; the layout and direction are
its entry's), so the two tools agree.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import NamedTuple, Protocol, TypeVar

from ..model import Branch, Edge, EdgeHow, EdgeKind, Node, NodeKind, is_composite, variant_base
from ..model.cuda import ALLOCATOR, RUNTIME, is_setup
from ..store.reader import Index
from .op_edges import kernel_of

GPU_KEYS = ("CUDA", "HIP")


class Nearness(NamedTuple):
    """A launch's or library call's place in an answer: smaller is nearer (Note [Nearest first])."""

    layout: bool  # reached through a layout-specific kernel (NestedTensorCUDA, SparseCUDA, ...) of the op asked
    copy: bool  # reached through the copy an autogen'd variant makes of its result (copy_ into out=)
    backward: bool
    housekeeping: bool  # an allocation, a library's set-up, the CUDA runtime in another op's code (``housekeeping``)
    hops: int  # op boundaries crossed
    other: bool  # another op's code (reached through a composite call at the same crossings), not the op's own
    calls: int  # edges from the op (or function) the walk started at

    def describe(self, via: str = "") -> str:
        """Whose code and how near, for an answer: 'its own code', "index_select's code, 1 op away, backward",
        "cat's code, 1 op away, sparse/nested/quantized path" (``via``: the other op whose code it is)."""
        parts = [f"{via}'s code" if via else "its own code"]
        parts += [f"{self.hops} op{'s' if self.hops != 1 else ''} away"] if self.hops else []
        parts += ["backward"] if self.backward else []
        parts += ["sparse/nested/quantized path"] if self.layout else []
        parts += ["an autogen'd variant's copy"] if self.copy else []
        return ", ".join(parts)


def _owners(ix: Index, node: Node) -> tuple[str, ...]:
    """The names (overload dropped) of the ops whose kernel a C++ function is (memoised per index version)."""
    memo: dict[str, tuple[str, ...]] = ix.cached("gpu_rank_owners", dict)
    if node.key not in memo:
        memo[node.key] = tuple(dict.fromkeys(k.src.key.split(".", 1)[0] for k in kernel_of(ix, node)))
    return memo[node.key]


def whose(ix: Index, base: str, chain: Sequence[Edge]) -> tuple[str, int]:
    """Whose code a launch reached along ``chain`` from op ``base`` is, and how many op boundaries the chain
    crosses (Note [Nearest first]). Whose: "" for the op's own code (its kernels, its variants', what they call),
    else the last other op on the way, the one whose kernel makes it (one its composite kernel or formula calls, one
    called through the dispatcher, or one whose kernel a C++ function calls directly: at::native::copy_ from addmm's
    code is copy_'s; mm's cuBLAS call, reached from matrix_power through linalg_matrix_power and matmul, is mm's).
    Crossings: a backend kernel's call through the dispatcher (at::empty in index_select_cuda), a
    direct call into another op's kernel, another op's formula, a formula's formula. Not crossings: a variant
    (angle -> angle.out), a call in a composite kernel's code (``composite_calls``: a composite kernel has no device
    code of its own, the op runs for CUDA tensors as the ops it calls: embedding as index_select), and the op's own
    formula (its backward). ``base`` "" (a walk from a C++ function) counts the first op reached as a crossing."""
    asked = here = variant_base(base)
    via, hops, formulas = "", 0, 0
    own = composite_calls(chain)
    for i, e in enumerate(chain):
        if e.kind is EdgeKind.BACKWARD:
            hops += bool(hops or formulas)
            formulas += 1
            name = e.dst.key.split(".", 1)[0] if e.dst.kind is NodeKind.OP else ""  # else a formula's helper
        elif e.kind in (EdgeKind.OP_CALL, EdgeKind.DISPATCH_CALL) and e.dst.kind is NodeKind.OP:
            name = e.dst.key.split(".", 1)[0]
            hops += variant_base(name) != here and (e.kind is EdgeKind.DISPATCH_CALL and i not in own
                                                 or e.how is EdgeHow.AUTOGEN_COPY)
        elif e.kind is EdgeKind.CALL:
            owners = _owners(ix, e.dst)
            if not owners or here in map(variant_base, owners):
                continue
            name = owners[0]
            hops += i not in own
        else:
            continue
        if name:
            here = variant_base(name)
            via = name if here != asked else ""
    return via, hops


def composite_calls(chain: Sequence[Edge]) -> set[int]:
    """Positions in ``chain`` of the calls a composite kernel's code makes: through the dispatcher, or directly
    into another op's kernel. No op boundary (the op runs as the ops its composite kernel calls), for ``whose`` and
    for the walk's limit of crossings (gpu.py ``crossings``) alike. A composite kernel's code is the kernel and
    what it calls directly: matrix_power's kernel calls ``at::native::linalg_matrix_power``, whose helper
    ``linalg_matrix_power_impl`` calls ``at::matmul``, whose kernel's helper ``_matmul_impl`` calls ``at::mm``:
    mm's cuBLAS call is matrix_power's work, no op away (Note [Nearest first])."""
    out: set[int] = set()
    inside = False  # the chain is in a composite kernel's code
    kernel: Node | None = None  # an autogen'd variant's kernel (torchgen's): its own calls only
    for i, e in enumerate(chain):
        if e.kind in (EdgeKind.OP_CALL, EdgeKind.DISPATCH_CALL) and e.dst.kind is NodeKind.OP:
            if e.kind is EdgeKind.DISPATCH_CALL and (inside or e.src == kernel):
                out.add(i)
            inside, kernel = False, None  # until the KERNEL edge that picks the op's kernel
        elif e.kind is EdgeKind.CALL:
            if inside:
                out.add(i)
        else:  # a KERNEL edge decides; a formula (BACKWARD), a stub and its kernels are no composite's code
            composite = e.kind is EdgeKind.KERNEL and is_composite(e.key)
            # torchgen's kernel for an autogen: line runs the op, then copies into out= through a helper: that
            # copy is copy_'s code, one op away (EdgeHow.AUTOGEN_COPY)
            inside = composite and e.how is not EdgeHow.AUTOGEN
            kernel = e.dst if composite and not inside else None
    return out


def layout_specific(chain: Sequence[Edge], key: str = "") -> bool:
    """Whether a chain starts in a layout-specific kernel of its op (NestedTensorCUDA, SparseCUDA,
    QuantizedCUDA, ...): the first dispatch key on it, or ``key`` (the kernel's own, for a chain that starts
    below it)."""
    for e in chain:
        if e.kind in (EdgeKind.KERNEL, EdgeKind.OP_CALL) and e.key:
            key = e.key
            break
        if e.kind is EdgeKind.BACKWARD:
            break
    return bool(key) and not (key in GPU_KEYS or is_composite(key))


class _Reached(Protocol):
    chain: list[Edge]
    site: Edge


R = TypeVar("R", bound=_Reached)


def nearest_first(ix: Index, op: str, key: str, reached: Sequence[R],
                  library: Callable[[R], str]) -> list[tuple[R, str]]:
    """Launches and library calls (``library``: the library of one, "" for a launch) a walk from op ``op``'s kernel
    for ``key`` reached (chains starting below the kernel), nearest first, each with whose code it is (``whose``):
    trace's GPU lines, in the order cuda_kernels lists them."""
    def rank(x: R) -> tuple[Nearness, str]:
        via, hops = whose(ix, op, x.chain)
        chore = housekeeping(library(x), via, x.site.written)
        return nearness(x.chain, hops, False, key, other=bool(via), housekeeping=chore, site=x.site), via

    ranked = [(rank(x), x) for x in reached]
    ranked.sort(key=lambda t: t[0][0])
    return [(x, via) for (_near, via), x in ranked]


def housekeeping(library: str, via: str, written: str) -> bool:
    """Whether a library call is an op's housekeeping, not its work (Note [Nearest first], rule 3): the caching
    allocator's, a C API's handle and descriptor management (``is_setup``: cublasSetStream), or the CUDA runtime's
    in another op's code (``via``). ``library`` "" for a launch."""
    return bool(library) and (library == ALLOCATOR or is_setup(written) or library == RUNTIME and bool(via))


def nearness(chain: Sequence[Edge], hops: int, backward: bool, key: str = "", other: bool = False,
             housekeeping: bool = False, site: Edge | None = None) -> Nearness:
    # the copy an autogen'd variant makes: its composite call of another op, or, walking its kernel's C++ (torchgen's
    # copy_arg), another op's code reached from it
    copy = any(e.how is EdgeHow.AUTOGEN_COPY for e in chain) or (
        other and bool(chain) and chain[0].kind is EdgeKind.KERNEL and chain[0].how is EdgeHow.AUTOGEN)
    # a call made in an arm only a sparse, nested, quantized tensor takes (Note [Layout arms] in layout_arms.py)
    layout = layout_specific(chain, key) or layout_arm(chain, site) is not None
    return Nearness(layout, copy, backward, housekeeping, hops, other, len(chain))


def layout_arm(chain: Sequence[Edge], site: Edge | None = None) -> Branch | None:
    """The first arm taken only for a sparse, nested, quantized or MKLDNN tensor that a chain (and the launch or
    library call ``site`` it ends in) passes (Note [Layout arms] in layout_arms.py), or None."""
    return next((e.branch for e in (*chain, *([site] if site else [])) if e.branch is not None and e.branch.layout),
                None)
