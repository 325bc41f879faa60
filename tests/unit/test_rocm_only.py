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


HIP_FILES = {
    # transformers/hip/aotriton_adapter.h's at::native::ceil_div, at::ceil_div of ATen/ceil_div.h
    "aten/src/ATen/native/transformers/hip/adapter.h":
        "namespace at::native {\ninline int64_t ceil_div(int64_t n, int64_t d) { return (n + d - 1) / d; }\n}\n",
    "aten/src/ATen/ceil_div.h":
        "namespace at {\ntemplate <typename T>\nT ceil_div(T a, T b) { return (a + b - 1) / b; }\n}\n",
    "aten/src/ATen/native/cuda/Chunks.cu": "namespace at { namespace native {\n"
        "int64_t chunks(int64_t n, int64_t w) {\n  return ceil_div(n, w);\n}\n"
        "void* take(Allocator* a) {\n  return a->allocate(4);\n}\n}}\n",
    # a ROCm build's allocator (aten/src/ATen/hip/impl/HIPAllocatorMasqueradingAsCUDA.h) overrides nothing for CUDA
    "c10/core/Allocator.h": "namespace c10 {\nstruct Allocator {\n  virtual void* allocate(int64_t n) = 0;\n};\n}\n"
        "namespace at { using c10::Allocator; }\n",
    "aten/src/ATen/hip/impl/HIPAllocatorMasqueradingAsCUDA.h": "namespace c10 { namespace hip {\n"
        "struct HIPAllocatorMasqueradingAsCUDA final : public c10::Allocator {\n"
        "  void* allocate(int64_t n) override { return nullptr; }\n};\n}}\n",
    "c10/cuda/CUDACachingAllocator.h": "namespace c10 { namespace cuda {\n"
        "struct CUDAAllocator : public c10::Allocator {\n  void* allocate(int64_t n) override { return nullptr; }\n"
        "};\n}}\n",
}


@pytest.fixture
def rocm(tree):
    ix = index_with(tree, {PATH: SOURCE, **HIP_FILES})
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
    assert [k.name.split("::")[-1] for k in res.kernels] == ["scatter_kernel"], text


def test_cuda_code_calls_no_rocm_builds_function_nor_its_override(rocm):
    _tree, ix = rocm
    res, text = run(get_tool("calls"), ix, function_name="at::native::chunks")
    assert [e.dst.label for e in res.sections[0].calls] == ["at::ceil_div"], text
    res, text = run(get_tool("calls"), ix, function_name="at::native::take")
    labels = {e.dst.label for e in res.sections[0].calls}
    assert "c10::cuda::CUDAAllocator::allocate" in labels and not any("HIP" in x for x in labels), text


@pytest.mark.parametrize("lines, marker, expected", [
    (["#if TORCH_HIP_VERSION < 305", "  a();  // here", "#endif"], "// here", False),  # 0 < 305 in a CUDA build
    (["#if TORCH_HIP_VERSION < 305", "#else", "  a();  // here", "#endif"], "// here", False),
    (["#if defined(USE_ROCM) \\", "    || defined(FOO)", "  a();  // here", "#endif"], "// here", False),
    (["#if defined(USE_ROCM)||defined(FOO)", "  a();  // here", "#endif"], "// here", False),
    (["#if defined(USE_ROCM) && !defined(FOO)", "  a();  // here", "#endif"], "// here", True),
    (["#ifndef USE_ROCM", "#elif defined(FOO)", "  a();  // here", "#endif"], "// here", True),
    (["#if !defined(USE_ROCM)", "#else", "  a();  // here", "#endif"], "// here", True),
    (["#if !defined(USE_ROCM) && CUDA_VERSION >= 11000", "#else", "  a();  // here", "#endif"], "// here", False),
])
def test_what_only_rocm_compiles(tree, lines, marker, expected):
    path = "aten/src/ATen/native/cuda/Cond.cu"
    ix = index_with(tree, {path: "void f() {\n" + "\n".join(lines) + "\n}\n"})
    try:
        assert rocm_only(ix, path, line_of(tree, path, marker)) is expected, lines
    finally:
        ix.close()
