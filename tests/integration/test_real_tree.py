"""Real answers on the real PyTorch 2.6.0 tree (set TORCHTALK_TEST_SOURCE; .ci/run does)."""

import re

import pytest

from torchtalk.tools import get_tool, run

pytestmark = pytest.mark.integration


def text_of(ix, tool, **kw) -> str:
    return run(get_tool(tool), ix, **kw)[1]


def test_status_counts_every_layer(real_index):
    res, text = run(get_tool("get_status"), real_index)
    assert res.pytorch_version.startswith("2.6.0")
    comps = res.components
    assert comps["op registry"]["ops (overloads)"] == 2633
    assert comps["C++ call graph"]["structured kernels (TORCH_IMPL_FUNC)"] >= 500
    assert comps["C++ call graph"]["GPU kernels (__global__)"] >= 700
    assert comps["tests"]["OpInfo entries"] >= 900
    assert all(v == "ready" or v.startswith("ready") for v in res.readiness.values()), res.readiness


def test_trace_relu_kernels_per_backend(real_index):
    text = text_of(real_index, "trace", function_name="relu")
    assert "## relu  aten/src/ATen/native/native_functions.yaml:5028" in text
    assert re.search(r"^- CPU, CUDA: relu .*\n    C\+\+: at::native::relu\(.*aten/src/ATen/native/Activation.cpp:511$",
                     text, re.M)
    assert "aten/src/ATen/native/mps/operations/Activation.mm:48" in text
    assert re.search(r"QuantizedCPU: relu_quantized_cpu", text)


def test_trace_tanh_stub_and_macro_built_kernel(real_index):
    text = text_of(real_index, "trace", function_name="tanh")
    assert "TORCH_IMPL_FUNC(tanh_out)  aten/src/ATen/native/UnaryOps.cpp:361 via CREATE_UNARY_TORCH_IMPL_FUNC" in text
    assert re.search(r"CUDA: tanh_kernel_cuda .*registered aten/src/ATen/native/cuda/UnaryGeometricTanhKernel.cu:56", text)


def test_atan2_stub_registrations(real_index):
    text = text_of(real_index, "calls", function_name="TORCH_IMPL_FUNC(atan2_out)")
    assert "atan2_stub -> " in text
    assert "CPU: CPU_CAPABILITY::atan2_kernel aten/src/ATen/native/cpu/BinaryOpsKernel.cpp:1427" in text or \
        "CPU: atan2_kernel aten/src/ATen/native/cpu/BinaryOpsKernel.cpp:1427" in text
    assert "CUDA: atan2_kernel_cuda aten/src/ATen/native/cuda/BinaryGeometricKernels.cu:36" in text


def test_generated_layer_for_atan2(real_index):
    text = text_of(real_index, "trace", function_name="atan2", focus="dispatch")
    assert re.search(r"Python torch\.atan2: THPVariable_atan2  <generated>/torch/csrc/autograd/generated/"
                     r"python_torch_functions_\d\.cpp:\d+", text)
    assert "parser: atan2(Tensor input, Tensor other, *, Tensor out=None)" in text
    assert re.search(r"- CPU: wrapper_CPU_atan2  <generated>/aten/src/ATen/RegisterCPU\.cpp:\d+", text)
    assert re.search(r"- CUDA: wrapper_CUDA_atan2  <generated>/aten/src/ATen/RegisterCUDA\.cpp:\d+", text)
    assert re.search(r"grad_fn Atan2Backward0  torch::autograd::generated::Atan2Backward0::apply "
                     r"<generated>/torch/csrc/autograd/generated/Functions\.cpp:\d+", text)


def test_impact_of_a_kernel_reaches_python_through_generated_binding(real_index):
    text = text_of(real_index, "impact", function_name="TORCH_IMPL_FUNC(atan2_out)", depth=2)
    assert re.search(r"torch::autograd::THPVariable_atan2  <generated>/torch/csrc/autograd/generated/"
                     r"python_torch_functions_\d\.cpp", text)
    assert re.search(r"^- torch\.atan2  \(via op atan2[^)]*binding <generated>/", text, re.M)
    assert "Vectorized" not in text  # a.atan2(b) on SIMD vectors is not the op


def test_index_select_edges(real_index):
    text = text_of(real_index, "called_by", function_name="index_select_out_cuda")
    assert "index_select_cuda  aten/src/ATen/native/cuda/Indexing.cu:1641" in text
    assert "index_select_quantized_cuda" in text and "index_select_out_cuda_impl" not in text
    text = text_of(real_index, "cuda_kernels", function_name="index_select")
    assert "__global__ indexSelectLargeIndex  aten/src/ATen/native/cuda/Indexing.cu:1397" in text
    assert "indexFuncLargeIndex" not in text


def test_modules_and_optimizers(real_index):
    res, text = run(get_tool("list_modules"), real_index, category="optim")
    optimizers = {c.name for c in res.groups["optimizers"]}
    assert optimizers == {"ASGD", "Adadelta", "Adagrad", "Adam", "AdamW", "Adamax", "LBFGS", "NAdam", "RAdam",
                          "RMSprop", "Rprop", "SGD", "SparseAdam"}
    assert "StepLR" in {c.name for c in res.groups["learning-rate schedulers"]}
    text = text_of(real_index, "trace_module", module_name="torch.nn.Conv2d")
    assert "torch/nn/modules/conv.py:378" in text and "F.conv2d" in text
    assert "aten/src/ATen/native/native_functions.yaml:1724" in text


def test_tests_layer(real_index):
    text = text_of(real_index, "find_similar_tests", query="cumsum")
    assert "TestTorchDeviceType.test_cumsum  test/test_torch.py:2610" in text
    assert "TestTorchDeviceTypeCPU.test_cumsum_cpu" in text
    assert "OpInfo('cumsum')" in text
    text = text_of(real_index, "test_file_info", file_path="test/test_nn.py")
    assert "TestNNDeviceType" in text and "allow_mps=True" in text
    text = text_of(real_index, "list_test_utils", category="decorators")
    assert "torch/testing/_internal/common_utils.py:594" in text
