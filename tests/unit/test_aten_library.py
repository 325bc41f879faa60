"""Kernels of aten ops registered by hand (m.impl in TORCH_LIBRARY_IMPL(aten, Key, m)) and aten ops defined by m.def
outside native_functions.yaml (Note [Hand-registered aten kernels] in graph/aten_library.py), on the fixture tree.

Before: the vulkan add_tensor had no caller and no registration, add.Tensor no Vulkan row, max.dim's CUDA m.impl
kernel no launch under cuda_kernels, quantized_lstm.input was "No op named"; a stub's REGISTER_NO_CPU_DISPATCH was
left out of called_by."""

from __future__ import annotations

from contextlib import closing

import pytest

from torchtalk.graph.registry import registry
from torchtalk.model import EntryOrigin
from torchtalk.query.results import NotFound
from torchtalk.tools import get_tool, run

from ..conftest import index_with, line_of

VULKAN = "aten/src/ATen/native/vulkan/ops/BinaryOp.cpp"
QRNN = "aten/src/ATen/native/QRNN.cpp"
HAND_CUDA = "aten/src/ATen/native/cuda/MaxHand.cu"

FILES = {
    VULKAN: """\
#include <ATen/ATen.h>
namespace at {
namespace native {
namespace vulkan {
namespace ops {
namespace {

Tensor add_tensor(const Tensor& self, const Tensor& other, const Scalar& alpha) {
  return self;
}

Tensor relu(const Tensor& self) {
  return self;
}

Tensor softmax(const at::Tensor& input, const int64_t dim, const bool half_to_float) {
  return input;
}

Tensor relu_dup(const Tensor& self) {
  return self;
}

TORCH_LIBRARY_IMPL(aten, Vulkan, m) {
  m.impl(TORCH_SELECTIVE_NAME("aten::add.Tensor"), TORCH_FN(add_tensor));
  m.impl("relu", relu);
  m.impl("_softmax", &softmax);
  m.impl("relu_", [](Tensor& self) -> Tensor& { return self; });
}

TORCH_LIBRARY_IMPL(aten, CPU, m) {
  m.impl("relu", TORCH_FN(relu_dup));
}

TORCH_LIBRARY_IMPL(aten, Named, m) {
  m.impl("relu", CppFunction::makeFallthrough());
}

TORCH_LIBRARY_IMPL(aten, CatchAll, m) {
  m.impl("bitwise_not", relu_dup);
}

} // namespace
} // namespace ops
} // namespace vulkan
} // namespace native
} // namespace at
""",
    QRNN: """\
#include <ATen/ATen.h>
namespace at {
namespace native {

std::tuple<Tensor, Tensor> quantized_lstm_input(const Tensor& input, bool batch_first) {
  return {input, input};
}

TORCH_LIBRARY_FRAGMENT(aten, m) {
  m.def(TORCH_SELECTIVE_SCHEMA("aten::quantized_lstm.input(Tensor input, bool batch_first) -> (Tensor, Tensor)"));
}

TORCH_LIBRARY_IMPL(aten, CPU, m) {
  m.impl(TORCH_SELECTIVE_NAME("aten::quantized_lstm.input"), TORCH_FN(quantized_lstm_input));
}

REGISTER_NO_CPU_DISPATCH(atan2_stub)

} // namespace native
} // namespace at
""",
    HAND_CUDA: """\
#include <ATen/ATen.h>
namespace at {
namespace native {

__global__ void max_dim_hand_kernel(float* out) {
}

std::tuple<Tensor, Tensor> max_dim_cuda_hand(const Tensor& self, int64_t dim, bool keepdim) {
  max_dim_hand_kernel<<<1, 1>>>(nullptr);
  return {self, self};
}

TORCH_LIBRARY_IMPL(aten, CUDA, m) {
  m.impl("max.dim", TORCH_FN(max_dim_cuda_hand));
}

} // namespace native
} // namespace at
""",
}


@pytest.fixture
def hand(tree):
    with closing(index_with(tree, FILES)) as ix:
        yield tree, ix


def _at(tree, rel, text):
    return f"{rel}:{line_of(tree, rel, text)}"


def test_an_m_impl_is_a_dispatch_row_of_its_op(hand):
    tree, ix = hand
    _res, text = run(get_tool("trace"), ix, function_name="add.Tensor", focus="dispatch")
    assert (f"- Vulkan: add_tensor  [hand-registered: m.impl in TORCH_LIBRARY_IMPL(aten, Vulkan)]  "
            f"(m.impl {_at(tree, VULKAN, 'aten::add.Tensor')})") in text, text
    assert "C++: at::native::vulkan::ops::(anonymous)::add_tensor(" in text
    # an op named without aten:: and its overload (the default one), the function as &f
    _res, text = run(get_tool("trace"), ix, function_name="_softmax", focus="dispatch")
    assert "- Vulkan: softmax  [hand-registered" in text and _at(tree, VULKAN, '"_softmax"') in text, text


def test_the_kernel_is_looked_up_from_the_m_impl_namespaces(hand):
    """m.impl("relu", relu) inside at::native::vulkan::ops names that namespace's relu, not at::native::relu (the
    yaml's CPU kernel): called_by of each lists its own registration only."""
    tree, ix = hand
    res, text = run(get_tool("called_by"), ix, function_name="at::native::vulkan::ops::relu")
    (sec,) = res.sections
    assert [(e.src.key, e.key) for e in sec.registrations] == [("relu", "Vulkan")], text
    assert str(sec.registrations[0].site) == _at(tree, VULKAN, 'm.impl("relu", relu)')
    res, _text = run(get_tool("called_by"), ix, function_name="at::native::relu")
    assert all(e.key != "Vulkan" for s in res.sections for e in s.registrations)


def test_the_yaml_keeps_its_key_and_a_fallthrough_is_no_kernel(hand):
    _tree, ix = hand
    reg = registry(ix)
    rows = {(str(e.key), e.kernel, e.origin) for e in reg.dispatch(reg.by_full["relu"])}
    assert ("CPU", "relu", EntryOrigin.TABLE) in rows and all(k != "Named" for k, _, _ in rows)
    assert ("Vulkan", "relu", EntryOrigin.LIBRARY) in rows and not any(k == "relu_dup" for _, k, _ in rows)
    assert [c.split("  ")[0] for c in reg.library.conflicts] == ["relu [CPU]: relu_dup"]
    assert reg.library.fallthrough == 1
    # a lambda is a row with no definition to go to
    (lam,) = [e for e in reg.dispatch(reg.by_full["relu_"]) if e.origin is EntryOrigin.LIBRARY]
    assert lam.kernel.startswith("lambda@")
    # CatchAll is a Library of no key: the dispatcher files its kernels under CompositeImplicitAutograd
    assert [(str(e.key), e.kernel) for e in reg.dispatch(reg.by_full["bitwise_not"])
            if e.origin is EntryOrigin.LIBRARY] == [("CompositeImplicitAutograd", "relu_dup")]


def test_impact_of_a_hand_registered_kernel_goes_through_its_op(hand):
    _tree, ix = hand
    _res, text = run(get_tool("impact"), ix, function_name="at::native::vulkan::ops::add_tensor")
    assert ("- add.Tensor  aten/src/ATen/native/native_functions.yaml:3  "
            "(at::native::vulkan::ops::(anonymous)::add_tensor is its Vulkan kernel; level 0)") in text, text
    assert "- torch.add  (via add.Tensor" in text
    res, _ = run(get_tool("called_by"), ix, function_name="at::native::vulkan::ops::add_tensor")
    assert [(e.src.key, e.key) for e in res.sections[0].registrations] == [("add.Tensor", "Vulkan")]


def test_cuda_kernels_walks_a_hand_registered_cuda_kernel(hand):
    _tree, ix = hand
    _res, text = run(get_tool("cuda_kernels"), ix, function_name="max.dim")
    assert "max_dim_hand_kernel" in text, text


def test_an_aten_m_def_outside_the_yaml_is_an_op(hand):
    tree, ix = hand
    res, text = run(get_tool("trace"), ix, function_name="quantized_lstm.input")
    assert not isinstance(res, NotFound), text
    assert f"## quantized_lstm.input  {_at(tree, QRNN, 'aten::quantized_lstm.input(')}" in text
    assert "defined by m.def in a TORCH_LIBRARY(aten) block, not in native_functions.yaml" in text
    assert "- CPU: quantized_lstm_input  [hand-registered" in text and "- CompositeImplicitAutograd:" not in text
    res, _ = run(get_tool("called_by"), ix, function_name="quantized_lstm_input")
    assert [(e.src.key, e.key) for e in res.sections[0].registrations] == [("quantized_lstm.input", "CPU")]
    _res, text = run(get_tool("search"), ix, query="quantized_lstm")
    assert "op quantized_lstm.input" in text, text


def test_a_stub_registered_with_no_cpu_kernel_says_so(hand):
    tree, ix = hand
    _res, text = run(get_tool("called_by"), ix, function_name="atan2_stub")
    assert f"- CPU: none (REGISTER_NO_CPU_DISPATCH)  [registered {_at(tree, QRNN, 'REGISTER_NO_CPU')}]" in text, text
