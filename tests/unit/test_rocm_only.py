"""Note [ROCm-only code] (graph/pp_branches.py): what only a ROCm build compiles, read from the preprocessor
branches around a line, as PyTorch writes them (Indexing.cu's ``#ifdef USE_ROCM``, CUDAFunctions.h's ``#if
defined(TORCH_HIP_VERSION) && ...``); its launches are no CUDA work."""

from __future__ import annotations

import pytest

from torchtalk.graph.pp_branches import rocm_only
from torchtalk.tools import get_tool, run

from ..conftest import index_with, line_of

PATH = "aten/src/ATen/native/cuda/RocmOnly.cu"
SOURCE = """\
namespace at { namespace native {
#ifdef USE_ROCM
__global__ void scatter_kernel_rocm(float* out) {}
#endif
__global__ void scatter_kernel(float* out) {}
void copy_bytes(void* dst, const void* src) {
#if defined(TORCH_HIP_VERSION) && (TORCH_HIP_VERSION >= 301)
  hipMemcpyWithStream(dst, src);  // rocm one
#else
  cudaMemcpyAsync(dst, src);  // cuda one
#endif
#if !defined(USE_ROCM)
  cudaMemcpyAsync(dst, src);  // cuda two
#else
  hipMemcpyAsync(dst, src);  // rocm two
#endif
#if defined(USE_ROCM) || CUDA_VERSION >= 12000
  cudaMemcpyAsync(dst, src);  // either
#endif
}
void scatter_cuda(float* out) {
#ifdef USE_ROCM
  scatter_kernel_rocm<<<1, 1>>>(out);
#else
  scatter_kernel<<<1, 1>>>(out);
#endif
}
}}
"""


@pytest.fixture
def rocm(tree):
    ix = index_with(tree, {PATH: SOURCE})
    try:
        yield tree, ix
    finally:
        ix.close()


def test_rocm_branches(rocm):
    tree, ix = rocm
    for marker, expected in (("// rocm one", True), ("// cuda one", False), ("// cuda two", False),
                             ("// rocm two", True), ("// either", False), ("scatter_kernel_rocm<<<", True),
                             ("  scatter_kernel<<<", False), ("__global__ void scatter_kernel_rocm", True)):
        assert rocm_only(ix, PATH, line_of(tree, PATH, marker)) is expected, marker


def test_a_rocm_only_launch_is_no_cuda_work(rocm):
    _tree, ix = rocm
    _res, text = run(get_tool("calls"), ix, function_name="at::native::scatter_cuda")
    assert "scatter_kernel_rocm" in text  # the call graph keeps every call as written
    res, text = run(get_tool("cuda_kernels"), ix, function_name="at::native::scatter_cuda")
    assert "scatter_kernel " in text or "scatter_kernel\n" in text or "__global__ scatter_kernel" in text, text
    assert "scatter_kernel_rocm" not in text, text
