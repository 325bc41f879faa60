"""The whole pipeline on PyTorch 1.13.1 (set TORCHTALK_TEST_SOURCE_1131; .ci/run does).

Older trees differ where it matters: torchgen's options, wrapper names
(wrapper_atan2, not wrapper_CPU_atan2), fewer layers of Python. One index of
the real 1.13.1 tree checks that every layer still comes out.
"""

import os
import re
from pathlib import Path

import pytest

from torchtalk.tools import get_tool, run

from ..conftest import build_index

pytestmark = pytest.mark.integration


@pytest.fixture(scope="module")
def index_1131(tmp_path_factory):
    src = os.environ.get("TORCHTALK_TEST_SOURCE_1131")
    if not src or not (Path(src) / "aten/src/ATen/native/native_functions.yaml").is_file():
        pytest.skip("set TORCHTALK_TEST_SOURCE_1131 to a PyTorch 1.13.1 source tree")
    return build_index(Path(src), tmp_path_factory.mktemp("cache-1131"))[1]


def test_every_layer_is_there(index_1131):
    res, _ = run(get_tool("get_status"), index_1131)
    assert res.pytorch_version.startswith("1.13")
    assert all(v.startswith("ready") for v in res.readiness.values()), res.readiness


def test_generated_layer_with_old_wrapper_names(index_1131):
    _, text = run(get_tool("trace"), index_1131, function_name="atan2", focus="dispatch")
    assert re.search(r"Python torch\.atan2: THPVariable_atan2  <generated>/torch/csrc/autograd/generated/"
                     r"python_torch_functions_\d\.cpp:\d+", text)
    assert "parser: atan2(Tensor input, Tensor other, *, Tensor out=None)" in text
    assert re.search(r"- CPU: wrapper_atan2  <generated>/aten/src/ATen/RegisterCPU\.cpp:\d+", text)
    assert "grad_fn Atan2Backward0" in text
    assert re.search(r"C\+\+: TORCH_IMPL_FUNC\(atan2_out\)  aten/src/ATen/native/BinaryOps\.cpp:\d+", text)


def test_python_layer(index_1131):
    _, text = run(get_tool("trace_module"), index_1131, module_name="Linear")
    assert "torch/nn/modules/linear.py:" in text and "F.linear" in text


def test_trace_module_adam_paths(index_1131):
    # 1.13.1: if foreach ... func = _multi_tensor_adam / elif fused ... func = _fused_adam / else (adam.py:293)
    res, _ = run(get_tool("trace_module"), index_1131, module_name="Adam")
    (choice,) = [c for c in res.choices if c.where.key == "torch.optim.adam.adam"]
    assert choice.head.line == 293 and [a.chosen.line for a in choice.arms] == [294, 296, 298]
    arms = [{o.split(".")[0] for o in a.ops} for a in choice.arms]
    assert {"_foreach_add_", "_foreach_mul_"} <= arms[0] and "_fused_adam_" in arms[1]


def test_reduce_lr_on_plateau_is_a_scheduler_without_the_base_class(index_1131):
    # 1.13.1: class ReduceLROnPlateau(object), made on an optimizer and stepping it
    res, text = run(get_tool("list_modules"), index_1131, category="optim")
    assert "ReduceLROnPlateau" in [c.name for c in res.groups["learning-rate schedulers"]]
    assert re.search(r"ReduceLROnPlateau  torch/optim/lr_scheduler\.py:906\b", text)


def test_ufunc_add_reaches_the_kernels_torchgen_writes(index_1131):
    # 1.13's torchgen writes the same UfuncCPU_add.cpp / UfuncCUDA_add.cu from add.out's ufunc_inner_loop
    res, _ = run(get_tool("trace"), index_1131, function_name="add.out", focus="dispatch")
    defs = {k.entry.key: [d.path for d in k.definitions] for k in res.ops[0].kernels}
    assert defs["CUDA"] == ["<generated>/aten/src/ATen/UfuncCUDA_add.cu"]
    assert defs["CPU"] == ["<generated>/aten/src/ATen/UfuncCPU_add.cpp"]
    res, _ = run(get_tool("cuda_kernels"), index_1131, function_name="add")
    assert "<generated>/aten/src/ATen/UfuncCUDA_add.cu" in {h.site.site.path for h in res.helpers}
