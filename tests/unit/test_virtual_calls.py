"""Virtual calls (Note [Virtual calls] in graph/overrides.py), on a fixture tree (tests/fixtures/tree_virtual over
tree): ``quantizer->quantize(self)`` resolves to ``at::Quantizer::quantize``, declared pure virtual, and runs the
override of the object's class: the call reaches each definition of ``quantize`` with its arity in a class derived
from Quantizer (through AffineQuantizer), ``called_by`` of an override lists it, and the GPU walk goes on into
PerTensorAffineQuantizer's stub and its CUDA kernel. A virtual method with a body (``c10d::Backend::allreduce``, which
throws; ``Backend::getBackendName``, declared ``virtual`` in its class and defined out of line) leads to its body and
to the overrides; a method that is not virtual leads to no override."""

from __future__ import annotations

import shutil
from contextlib import closing
from pathlib import Path

import pytest

from torchtalk.model import EdgeHow
from torchtalk.tools import get_tool, run

from ..conftest import line_of, overlay_index

OVERLAY = Path(__file__).parents[1] / "fixtures" / "tree_virtual"
OPS = """
- func: quantize_per_tensor(Tensor self, float scale, int zero_point, ScalarType dtype) -> Tensor
  variants: function
  dispatch:
    CPU, CUDA: quantize_per_tensor
"""
QTENSOR = "aten/src/ATen/native/quantized/QTensor.cpp"


@pytest.fixture
def ops(tree):
    for top in ("c10", "torch"):  # overlay_index copies aten/
        shutil.copytree(OVERLAY / top, tree / top, dirs_exist_ok=True)
    with closing(overlay_index(tree, OVERLAY, {"aten/src/ATen/native/native_functions.yaml": OPS})) as ix:
        yield tree, ix


def test_a_call_of_a_pure_virtual_method_reaches_the_overrides_of_derived_classes(ops):
    tree, ix = ops
    res, text = run(get_tool("calls"), ix, function_name="at::native::quantize_per_tensor")
    line = line_of(tree, QTENSOR, "return quantizer->quantize(self);")
    at_call = [e for e in res.sections[0].calls if e.site.line == line]
    assert {(e.dst.label, e.how) for e in at_call} == {
        ("at::Quantizer::quantize", EdgeHow.DECLARATION),
        ("at::PerTensorAffineQuantizer::quantize", EdgeHow.OVERRIDE),  # two levels down, through AffineQuantizer
        ("at::PerChannelAffineQuantizer::quantize", EdgeHow.OVERRIDE),  # and not its two-parameter overload
    }, text
    assert ("- at::Quantizer::quantize  aten/src/ATen/core/QuantizerBase.h:9 (declaration) (virtual: runs an "
            "override, 2 in derived classes: ") in text


def test_called_by_of_an_override_lists_the_virtual_call(ops):
    tree, ix = ops
    _res, text = run(get_tool("called_by"), ix, function_name="at::PerTensorAffineQuantizer::quantize")
    line = line_of(tree, QTENSOR, "return quantizer->quantize(self);")
    assert f"- at::native::quantize_per_tensor  {QTENSOR}:" in text and f"[call at {QTENSOR}:{line}]" in text, text


def test_the_gpu_walk_goes_on_into_the_override(ops):
    _tree, ix = ops
    res, text = run(get_tool("cuda_kernels"), ix, function_name="quantize_per_tensor")
    (helper,) = res.helpers
    assert helper.site.src.label == "at::native::(anonymous)::quantize_tensor_per_tensor_affine_cuda", text
    assert "at::PerTensorAffineQuantizer::quantize" in [e.dst.label for e in helper.chain]


def test_a_method_that_is_not_virtual_leads_to_no_override(ops):
    """Tensor::numel hides TensorBase::numel (neither is virtual): a call resolved to a definition is the
    definition alone."""
    _tree, ix = ops
    res, text = run(get_tool("calls"), ix, function_name="at::native::count_elements")
    assert [e.dst.label for e in res.sections[0].calls] == ["at::TensorBase::numel"], text
    res, text = run(get_tool("calls"), ix, function_name="c10d::ops::rank_of")
    assert [e.dst.label for e in res.sections[0].calls] == ["c10d::Backend::getRank"], text


def test_a_call_qualified_by_its_class_runs_that_class_s_method(ops):
    """``Backend::getBackendName()`` in a ProcessGroupGloo method names the function it runs: no override (torchgen's
    structured wrappers call ``at::native::structured_x::set_output_raw_strided`` so, hundreds of them)."""
    _tree, ix = ops
    res, text = run(get_tool("calls"), ix, function_name="c10d::ProcessGroupGloo::describe")
    assert [(e.dst.label, e.how) for e in res.sections[0].calls] == [
        ("c10d::Backend::getBackendName", EdgeHow.DIRECT)], text


@pytest.mark.parametrize("caller, method, written", [
    ("c10d::ops::allreduce_CPU", "allreduce", "virtual c10::intrusive_ptr<Work> allreduce("),  # a body in its class
    ("c10d::ops::backend_name", "getBackendName", "const std::string Backend::getBackendName() const {"),
])
def test_a_virtual_method_with_a_body_leads_to_it_and_to_its_overrides(ops, caller, method, written):
    tree, ix = ops
    res, text = run(get_tool("calls"), ix, function_name=caller)
    header, source = "torch/csrc/distributed/c10d/Backend.hpp", "torch/csrc/distributed/c10d/Backend.cpp"
    path = header if method == "allreduce" else source
    assert {(e.dst.label, e.how) for e in res.sections[0].calls} == {
        (f"c10d::Backend::{method}", EdgeHow.DIRECT),  # runs for an object of a class that overrides nothing
        (f"c10d::ProcessGroupGloo::{method}", EdgeHow.OVERRIDE_OF_BODY),
    }, text
    assert (f"- c10d::Backend::{method}  {path}:{line_of(tree, path, written)} (virtual: runs this body or an "
            f"override, 1 in derived classes: c10d::ProcessGroupGloo::{method})") in text
    _res, text = run(get_tool("called_by"), ix, function_name=f"c10d::ProcessGroupGloo::{method}")
    assert f"- {caller}  torch/csrc/distributed/c10d/Ops.cpp:" in text, text
