"""A trace's kernels, most common first (Note [Key order] in model/dispatch.py), and what a cut keeps of them.

Before: a structured_delegate op's dense CPU/CUDA row came after its own sparse and nested rows, and the overload's
line cap cut the deepest lines first: the kernels registered to the dense kernel's DispatchStub went while the
sparse and nested rows kept their CUDA lines (trace mul.Tensor on 2.6.0 lost mul_stub's CPU and CUDA kernels). A
cut could leave "calls ops (1; each runs its own kernels):" with no op under it, and a Vulkan kernel named like
the composite one (expand) listed the CUDA kernels of the ops it calls, which never run for a Vulkan tensor."""

from __future__ import annotations

from contextlib import closing

import pytest

from torchtalk.model import KeyTier, key_tier
from torchtalk.render import budget
from torchtalk.tools import get_tool, run

from ..conftest import index_with

YAML = """
- func: scale.out(Tensor self, *, Tensor(a!) out) -> Tensor(a!)
  structured: True
  dispatch:
    CPU, CUDA: scale_out

- func: scale(Tensor self) -> Tensor
  structured_delegate: scale.out
  dispatch:
    SparseCPU, SparseCUDA: scale_sparse
    NestedTensorCPU, NestedTensorCUDA: scale_nested

- func: grow(Tensor self) -> Tensor
  dispatch:
    CompositeExplicitAutograd: grow
"""


def _launcher(fn: str, kernels: list[str]) -> str:
    body = "".join(f"__global__ void {k}(float* out) {{}}\n" for k in kernels)
    calls = "".join(f"  {k}<<<1, 1>>>(nullptr);\n" for k in kernels)
    return f"namespace at::native {{\n{body}Tensor {fn}(const Tensor& self) {{\n{calls}  return self;\n}}\n}}\n"


FILES = {
    "aten/src/ATen/native/Scale.h": (
        "#pragma once\nnamespace at::native {\nusing scale_fn = void (*)(TensorIteratorBase&);\n"
        "DECLARE_DISPATCH(scale_fn, scale_stub);\n}  // namespace at::native\n"),
    "aten/src/ATen/native/Scale.cpp": (
        '#include <ATen/native/Scale.h>\nnamespace at::native {\nDEFINE_DISPATCH(scale_stub);\n'
        "TORCH_IMPL_FUNC(scale_out) (const Tensor& self, const Tensor& out) {\n  scale_stub(device_type(), *this);\n"
        "}\nTensor grow(const Tensor& self) {\n  return at::scale(self);\n}\n}  // namespace at::native\n"),
    "aten/src/ATen/native/cpu/ScaleKernel.cpp": (
        '#include <ATen/native/Scale.h>\nnamespace at::native {\nnamespace {\n'
        "void scale_kernel(TensorIteratorBase& iter) {}\n}  // namespace\n"
        "REGISTER_DISPATCH(scale_stub, &scale_kernel);\n}  // namespace at::native\n"),
    "aten/src/ATen/native/cuda/ScaleKernel.cu": (
        '#include <ATen/native/Scale.h>\nnamespace at::native {\n__global__ void scale_dense_impl(float* out) {}\n'
        "void scale_kernel_cuda(TensorIteratorBase& iter) {\n  scale_dense_impl<<<1, 1>>>(nullptr);\n}\n"
        "REGISTER_DISPATCH(scale_stub, &scale_kernel_cuda);\n}  // namespace at::native\n"),
    "aten/src/ATen/native/sparse/cuda/ScaleSparse.cu": _launcher(
        "scale_sparse", [f"scale_sparse_step{i}_with_a_long_descriptive_name" for i in range(6)]),
    "aten/src/ATen/native/nested/cuda/ScaleNested.cu": _launcher(
        "scale_nested", [f"scale_nested_step{i}_with_a_long_descriptive_name" for i in range(6)]),
    "aten/src/ATen/native/vulkan/ops/Grow.cpp": (
        "namespace at::native::vulkan::ops {\nTensor grow(const Tensor& self) {\n  return at::scale(self);\n}\n"
        'TORCH_LIBRARY_IMPL(aten, Vulkan, m) {\n  m.impl("grow", TORCH_FN(grow));\n}\n'
        "}  // namespace at::native::vulkan::ops\n"),
}


@pytest.fixture
def scaled(tree):
    yaml = tree / "aten/src/ATen/native/native_functions.yaml"
    yaml.write_text(yaml.read_text() + YAML)
    with closing(index_with(tree, FILES)) as ix:
        yield ix


def _trace(ix, name: str) -> str:
    return run(get_tool("trace"), ix, function_name=name)[1]


def test_keys_rank_dense_then_composite_then_other_devices_layouts_quantized_and_the_rest():
    assert [key_tier(k) for k in ("CPU", "CUDA", "CompositeExplicitAutograd", "MPS", "SparseCUDA",
                                  "NestedTensorCPU", "CompositeImplicitAutogradNestedTensor", "QuantizedCPU",
                                  "MkldnnCPU", "ZeroTensor", "Vulkan", "AutogradCUDA")] == \
        [KeyTier.DENSE, KeyTier.DENSE, KeyTier.COMPOSITE, KeyTier.DEVICE, KeyTier.LAYOUT, KeyTier.LAYOUT,
         KeyTier.LAYOUT, KeyTier.QUANTIZED, KeyTier.OTHER, KeyTier.OTHER, KeyTier.OTHER, KeyTier.OTHER]


def test_the_dense_row_comes_first_and_a_cut_takes_the_other_rows_gpu_lines_before_its_stub_kernels(scaled,
                                                                                                    monkeypatch):
    whole = _trace(scaled, "scale.default")
    rows = [ln.split(":")[0] for ln in whole.splitlines() if ln.startswith("- ")]
    assert rows[:3] == ["- CPU, CUDA", "- SparseCPU, SparseCUDA", "- NestedTensorCPU, NestedTensorCUDA"], whole
    dense = ["      CPU: scale_kernel  (defined aten/src/ATen/native/cpu/ScaleKernel.cpp:",
             "      CUDA: scale_kernel_cuda  (defined aten/src/ATen/native/cuda/ScaleKernel.cu:",
             "CUDA kernel scale_dense_impl: __global__"]
    assert all(d in whole for d in dense), whole
    # a budget that cuts a few lines: the nested rows' last GPU lines go, the dense row's detail stays whole
    monkeypatch.setattr(budget, "BUDGET", len(whole) - 200)
    text = _trace(scaled, "scale.default")
    assert "Cut: overload scale: showing" in text, text
    assert all(d in text for d in dense), text
    assert "scale_nested_step5" not in text and "scale_sparse_step0" in text
    assert "- NestedTensorCPU, NestedTensorCUDA: scale_nested" in text  # every row's key line stays


def test_a_cut_never_leaves_the_calls_ops_heading_without_an_op(scaled, monkeypatch):
    whole = _trace(scaled, "grow")
    assert "    calls ops (1; each runs its own kernels):\n      scale  (called at" in whole, whole
    for cut in range(20, 400, 20):
        monkeypatch.setattr(budget, "BUDGET", len(whole) - cut)
        lines = _trace(scaled, "grow").splitlines()
        for i, ln in enumerate(lines):
            if ln.startswith("    calls ops ("):
                assert lines[i + 1].startswith("      scale  (called at"), "\n".join(lines)


def test_a_vulkan_kernel_lists_no_cuda_lines_of_the_ops_it_calls(scaled):
    """The Vulkan grow calls at::scale on a Vulkan tensor: scale's CUDA kernels are not what it runs. The composite
    grow (every backend, CUDA included) lists them."""
    text = _trace(scaled, "grow")
    rows = text.split("\n- ")
    (composite,) = [r for r in rows if r.startswith("CompositeExplicitAutograd: grow")]
    (vulkan,) = [r for r in rows if r.startswith("Vulkan: grow")]
    assert "scale_dense_impl" in composite, text
    assert "CUDA" not in vulkan.split("\nGenerated code")[0], text
