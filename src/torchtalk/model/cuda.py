"""The GPU vocabulary as data: launch families and the libraries ATen calls into.

Note [Launch families]
A launch family is a host template that takes the device code as a callable (a lambda or a
functor object) and launches a ``__global__`` template of its own that runs it: ``gpu_kernel``
(Loops.cuh -> CUDALoops.cuh's ``vectorized_elementwise_kernel`` / ``unrolled_elementwise_kernel``
/ ``elementwise_kernel``), ``gpu_reduce_kernel`` (Reduce.cuh -> ``reduce_kernel``), jiterator
(``jitted_gpu_kernel``), ``multi_tensor_apply`` (MultiTensorApply.cuh ->
``multi_tensor_apply_kernel`` running e.g. ``FusedAdamMathFunctor``). The names below only say
which calls pass device code (the extractor records the callable passed at the call site); the
kernel template each family launches is never listed: graph/gpu.py derives it from the
family's own body (its ``<<<>>>`` launches, through the families it calls in turn).

Note [Libraries]
A call into a GPU library is recognised by its namespace or its C API prefix, as written at the
call site or as the callee's qualified name: ``at::cuda::blas::gemm`` (cuBLAS), ``cublasLt...``,
``cusolverDn...`` / ``magma_...``, ``cufftExec...``, ``cudnn...``, ``cusparse...``, ``cub::`` /
``at::cuda::cub::`` / ``thrust::``, and the flash / memory-efficient attention entry points. The CUDA
runtime (``cudaMemcpyAsync``, ``cudaMemsetAsync``, ``cudaStreamSynchronize``: the C API's ``cuda``
prefix) and the caching allocator (``c10::cuda::CUDACachingAllocator::``) are libraries too: an op
whose only GPU work is a copy, a fill of memory or a synchronisation (``_local_scalar_dense``,
``record_stream``) is answered by that call with its site.
"""

from __future__ import annotations

import re
from functools import lru_cache

# Calls whose callable argument is the device code (Note [Launch families]).
LAUNCH_FAMILIES = frozenset({
    # elementwise (TensorIterator): Loops.cuh, CUDALoops.cuh
    "gpu_kernel", "gpu_kernel_with_scalars", "gpu_kernel_nocast", "gpu_kernel_multiple_outputs",
    "gpu_kernel_with_index", "opmath_gpu_kernel_with_scalars", "opmath_symmetric_gpu_kernel_with_scalars",
    "launch_kernel", "launch_vectorized_kernel", "launch_legacy_kernel", "launch_unrolled_kernel",
    "gpu_index_kernel",
    # jiterator: JitLoops.cuh
    "jitted_gpu_kernel", "opmath_jitted_gpu_kernel_with_scalars", "launch_jitted_unrolled_kernel",
    "launch_jitted_vectorized_kernel",
    # reductions: Reduce.cuh
    "gpu_reduce_kernel", "jitted_gpu_reduce_kernel",
    # foreach / fused optimizers: MultiTensorApply.cuh
    "multi_tensor_apply", "multi_tensor_apply_for_fused_optimizer",
})

RUNTIME, ALLOCATOR = "CUDA runtime", "CUDA caching allocator"
# Libraries whose calls are a launch family's housekeeping (a memset of its staging buffer, the allocator), not
# what it launches: a family's templates name them only when its body reaches nothing else.
HOUSEKEEPING: frozenset[str] = frozenset({RUNTIME, ALLOCATOR})

# (library, how the call is spelled): a namespace prefix ends in "::", a C API prefix does not.
# Longer prefixes are tried first, so cublasLt wins over cublas.
LIBRARIES: tuple[tuple[str, str], ...] = (
    ("cuBLAS", "at::cuda::blas::"), ("cuBLAS", "cuda::blas::"), ("cuBLAS", "blas::"),
    ("cuBLASLt", "cublasLt"), ("cuBLAS", "cublas"), ("cuBLAS", "hipblas"),
    ("cuSOLVER", "at::cuda::solver::"), ("cuSOLVER", "cuda::solver::"), ("cuSOLVER", "cusolver"),
    ("MAGMA", "magma"), ("MAGMA", "magma_"), ("MAGMA", "magmablas_"),  # magmablas_dtrsm_batched
    ("cuFFT", "cufft"), ("cuFFT", "hipfft"),
    ("cuDNN", "cudnn"), ("cuDNN", "at::native::cudnn_frontend::"), ("cuDNN", "cudnn_frontend::"),
    ("cuSPARSE", "at::cuda::sparse::"), ("cuSPARSE", "cuda::sparse::"), ("cuSPARSE", "cusparse"),
    ("cuSPARSELt", "cusparseLt"),
    ("CUB", "at::cuda::cub::"), ("CUB", "cuda::cub::"), ("CUB", "cub::"),
    ("Thrust", "thrust::"),
    ("cuRAND", "curand"),
    # the CUDA runtime's calls that do device work (copies, fills, allocation, synchronisation), not its queries
    *((RUNTIME, f"{rt}{call}") for rt in ("cuda", "hip")
      for call in ("Memcpy", "Memset", "Malloc", "Free", "StreamSynchronize", "DeviceSynchronize",
                   "EventSynchronize", "StreamWaitEvent")),
    (ALLOCATOR, "c10::cuda::CUDACachingAllocator::"), (ALLOCATOR, "cuda::CUDACachingAllocator::"),
    (ALLOCATOR, "CUDACachingAllocator::"),
    ("jiterator (NVRTC)", "at::cuda::jit::"), ("jiterator (NVRTC)", "cuda::jit::"), ("NVRTC", "nvrtc"),
    ("CUTLASS", "cutlass::"),
    ("FlashAttention", "pytorch_flash::"), ("FlashAttention", "flash::"),
    ("mem-efficient attention", "PyTorchMemEffAttention::"),
)
_BY_LENGTH = sorted(LIBRARIES, key=lambda lp: -len(lp[1]))
# per prefix, longest first: (library, prefix, a scope (ends with ::), the scope as a nested one (::a::b:: for a
# prefix of two components or more: at::cuda::blas:: is also c10::at::cuda::blas::), or "")
_PREFIXES = [(lib, prefix, prefix.endswith("::"), f"::{prefix}" if prefix.endswith("::") and prefix.count("::") > 1
              else "") for lib, prefix in _BY_LENGTH]


# A C API's handle and descriptor management (cublasSetStream, cudnnSetFilterNdDescriptor, cufftSetStream,
# cusparseCreateCsr, cudnnDestroyTensorDescriptor): set-up around a library's work, not its work, which an answer
# lists after the work (Note [Nearest first] in graph/gpu_rank.py).
SETUP_VERBS = ("Set", "Get", "Create", "Destroy")


def is_setup(written: str) -> bool:
    """Whether a library call as written is handle or descriptor management of a C API (SETUP_VERBS after its
    prefix).

    >>> is_setup("cublasSetStream"), is_setup("cudnnSetFilterNdDescriptor"), is_setup("cudnnConvolutionForward")
    (True, True, False)
    """
    text = written.lstrip(":")
    for _lib, prefix, scope, _nested in _PREFIXES:
        if not scope and text.startswith(prefix):
            return text[len(prefix):].startswith(SETUP_VERBS)
    return False


@lru_cache(maxsize=1 << 16)
def library_of(name: str) -> str | None:
    """The library a qualified name or a call as written belongs to (Note [Libraries]), or None. Memoised: the
    GPU walk asks it of every call of every function it passes (tens of thousands an answer, few distinct).

    >>> library_of("at::cuda::blas::gemm"), library_of("cublasLtMatmul"), library_of("at::native::add")
    ('cuBLAS', 'cuBLASLt', None)
    """
    found = library_match(name)
    return found[0] if found else None


# Thrust's iterators, pointers, execution policies and tuples: what an algorithm is given, not device work.
_THRUST_HELPERS = re.compile(r"iterator|device_ptr|pointer|::par\b|::device\b|::host\b|tuple|::make_|::get\b|"
                             r"placeholders|::pair\b|::identity\b|::plus\b|::less\b|::greater\b|::equal_to\b")


@lru_cache(maxsize=1 << 16)
def library_match(name: str) -> tuple[str, bool] | None:
    """(library, whether a C API prefix matched rather than a namespace) for a name or a call as written: a C API
    match of a function the tree defines is the tree's own helper (magma_int_cast), not the library's
    (gpu_families.library_edges)."""
    text = name.lstrip(":")
    rooted = f"::{text}"
    for lib, prefix, scope, nested in _PREFIXES:
        if scope:
            if text.startswith(prefix) or (nested and nested in rooted):
                return None if lib == "Thrust" and _THRUST_HELPERS.search(rooted) else (lib, False)
        # a C API: cudnnConvolutionForward, magma_dgesv; not cudnn_is_acceptable (ATen's own)
        # (or the whole name, or a digit next: cudaMemcpy, cudaMemcpy2DAsync)
        elif text.startswith(prefix) and (prefix.endswith("_") or not text[len(prefix):].rstrip("(") or
                                          text[len(prefix):][:1].isupper() or text[len(prefix):][:1].isdigit()):
            return lib, True
    return None
