"""On the real PyTorch 2.6.0 tree: autograd nodes of every name form, Python names that are not op names,
tests for an op, optimizers and schedulers, and what runs for an op on CUDA (set TORCHTALK_TEST_SOURCE)."""

import re

import pytest

from torchtalk.tools import get_tool, run

pytestmark = pytest.mark.integration


def call(ix, tool, **kw):
    return run(get_tool(tool), ix, **kw)


# ------------------------------------------------------------------ autograd nodes

def test_suffixed_autograd_nodes_are_linked_and_found(real_index):
    res, text = call(real_index, "search", query="ForeachAddBackward0List")
    hit = res.hits[0]
    assert (hit.kind, hit.name) == ("autograd node", "ForeachAddBackward0List")
    assert re.fullmatch(r"<generated>/torch/csrc/autograd/generated/Functions\.h:\d+", str(hit.loc))
    assert re.search(r"apply\(\) <generated>/torch/csrc/autograd/generated/Functions\.cpp:\d+; "
                     r"grad_fn of _foreach_add\.List \[Autograd\]", hit.detail)
    res, _ = call(real_index, "trace", function_name="SelectBackwardAutogradNestedTensor0", focus="yaml")
    assert [t.op.full_name for t in res.ops] == ["select.int"]


def test_view_copy_op_has_its_node_and_its_view_derivative(real_index):
    _, text = call(real_index, "trace", function_name="alias_copy")
    assert re.search(r"grad_fn AliasBackward0_copy  struct <generated>/torch/csrc/autograd/generated/Functions\.h:\d+",
                     text)
    assert ("Autograd: tools/autograd/derivatives.yaml:283  alias(Tensor(a) self) -> Tensor(a) (the entry of its view "
            "op alias: torchgen gives a view_copy op its view's derivative)") in text


# ------------------------------------------------------------------ Python names

@pytest.mark.parametrize("name, ops, where", [
    ("F.max_pool2d", {"max_pool2d", "max_pool2d_with_indices"}, "torch/nn/functional.py:833"),  # boolean_dispatch
    ("F.softmin", {"softmax.int"}, "torch/nn/functional.py:2070"),  # (-input).softmax(dim)
    ("F.threshold_", {"threshold_"}, "torch/nn/functional.py:1683"),  # threshold_ = _VF.threshold_
    ("Tensor.__neg__", {"neg"}, "torch/_tensor.py:1125"),  # __neg__ = _C.TensorBase.neg
    ("Tensor.__rsub__", {"rsub.Tensor"}, "torch/_tensor.py:1072"),
])
def test_python_names_reach_their_ops(real_index, name, ops, where):
    res, text = call(real_index, "trace", function_name=name, focus="yaml")
    assert ops <= {t.op.full_name for t in res.ops}, text[:600]
    assert f"{res.entry.loc}" == where


def test_alias_table_and_bindings_that_reach_ops(real_index):
    res, text = call(real_index, "trace", function_name="torch.spmm", focus="yaml")
    assert res.ops[0].op.full_name == "mm"
    assert ("torch.spmm is an alias of torch.mm: the binding table copies its entry under this name "
            "(torch/csrc/autograd/python_torch_functions_manual.cpp:507)") in text
    res, text = call(real_index, "trace", function_name="Tensor.__invert__", focus="yaml")
    assert [t.op.full_name for t in res.ops] == ["bitwise_not"]
    assert "reaches op bitwise_not through torch::autograd::dispatch_invert" in text


@pytest.mark.parametrize("name, where", [
    ("torch._disable_functionalization", "torch/csrc/autograd/python_torch_functions_manual.cpp:769"),  # import torch
    ("torch.is_grad_enabled", "torch/csrc/autograd/init.cpp:1287"),  # python_functions() table, added to torch._C
    ("Tensor.as_subclass", "torch/csrc/autograd/python_variable.cpp:1756"),  # extra_methods, tp_methods of TensorBase
    ("torch._C._functorch._add_batch_dim", "torch/csrc/functorch/init.cpp:448"),  # _C.def_submodule("_functorch")
])
def test_bindings_are_named_in_their_python_module(real_index, name, where):
    res, text = call(real_index, "trace", function_name=name)
    assert res.bindings and str(res.bindings[0].edge.site) == where, text[:500]


def test_pybind_class_names_are_not_torch_tensor(real_index):
    res, text = call(real_index, "trace", function_name="Tensor.__init__")
    assert "Tensor.__init__" not in {r[0] for r in real_index.q("SELECT name FROM py_api WHERE kind = 'pybind'")}
    assert "torch._C._te.Tensor.__init__" in {r[0] for r in real_index.q(
        "SELECT name FROM py_api WHERE kind = 'pybind'")}  # py::class_<Tensor>(te, "Tensor")
    assert "tensorexpr" not in text


def test_python_callers_reach_nn_modules(real_index):
    _, text = call(real_index, "trace", function_name="group_norm")
    assert "Called from Python: torch.nn.functional.group_norm (torch/nn/functional.py:2965)" in text
    _, text = call(real_index, "impact", function_name="GroupNormKernel")
    assert "- torch.nn.functional.group_norm  (via group_norm" in text
    assert "- torch.nn.modules.normalization.GroupNorm.forward  (via torch.nn.functional.group_norm" in text


# ------------------------------------------------------------------ tests for an op

@pytest.mark.parametrize("op, first_file", [
    ("group_norm", "test/test_nn.py"), ("layer_norm", "test/test_nn.py"), ("batch_norm", "test/test_nn.py"),
    ("softmax", "test/test_nn.py"), ("cumsum", "test/test_torch.py"), ("index_select", "test/test_torch.py"),
    ("avg_pool2d", "test/nn/test_pooling.py"), ("conv2d", "test/nn/test_convolution.py"),
])
def test_home_test_file_ranks_first(real_index, op, first_file):
    res, _ = call(real_index, "find_similar_tests", query=op)
    assert res.tests[0].loc.path == first_file and res.tests[0].why == "name, home file"
    assert first_file in res.home


def test_opinfo_section_is_specific_to_the_op(real_index):
    res, text = call(real_index, "find_similar_tests", query="group_norm")
    marks = res.opinfos[0].marks
    assert any((m.test_class, m.test_name, str(m.loc)) == (
        "TestJit", "test_variant_consistency_jit", "torch/testing/_internal/common_methods_invocations.py:15337")
        for m in marks)
    assert any(m.loc.path == "test/functorch/test_ops.py" and m.test_name == "test_jvpvjp" for m in marks)
    _, other = call(real_index, "find_similar_tests", query="cumsum")
    assert text.split("OpInfo entries")[1] != other.split("OpInfo entries")[1]
    assert "@ops tests live in" not in text


# ------------------------------------------------------------------ modules

def test_optim_lists_reduce_lr_on_plateau(real_index):
    res, text = call(real_index, "list_modules", category="optim")
    names = [c.name for c in res.groups["learning-rate schedulers"]]
    assert "ReduceLROnPlateau" in names and "StepLR" in names and "LRScheduler" not in names
    assert "torch/optim/lr_scheduler.py:1244" in text


# ------------------------------------------------------------------ what runs

def test_cuda_kernels_follow_what_runs_on_cuda(real_index):
    res, text = call(real_index, "cuda_kernels", function_name="group_norm")
    names = {k.name for k in res.kernels}
    assert {"RowwiseMomentsCUDAKernel", "ComputeFusedParamsCUDAKernel", "GammaBetaBackwardCUDAKernel1"} <= names
    # native_group_norm has its own CUDA kernel: its CompositeExplicitAutograd math version (batch_norm) never
    # runs on CUDA, nor does the NestedTensorCUDA kernel of an op that version calls
    assert not any("batch_norm" in n for n in names) and "op_dense_esuhm" not in names
    assert "[backward]" in text
    res, text = call(real_index, "cuda_kernels", function_name="cross_entropy")
    assert "reached from Python function torch.nn.functional.cross_entropy" in res.matched
    names = {k.name for k in res.kernels}
    assert {"nll_loss_forward_reduce_cuda_kernel_2d", "cunn_SoftMaxForward", "cunn_SoftMaxBackward"} <= names
    assert "CatArrayBatchedCopy" not in names  # the backward of a backward (masked_scatter's) is not followed


def test_composite_op_calls_go_through_file_local_helpers(real_index):
    _, text = call(real_index, "trace", function_name="dropout")
    assert "native_dropout  (called at aten/src/ATen/native/Dropout.cpp:139)" in text
    assert "empty_like  (called at aten/src/ATen/native/Dropout.cpp:73)" in text  # in _dropout_impl
