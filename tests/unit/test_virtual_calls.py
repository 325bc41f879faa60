"""Virtual calls (Note [Virtual calls] in graph/overrides.py), on a fixture tree (tests/fixtures/tree_virtual over
tree): ``quantizer->quantize(self)`` resolves to ``at::Quantizer::quantize``, declared pure virtual, and runs the
override of the object's class: the call reaches each definition of ``quantize`` with its arity in a class derived
from Quantizer (through AffineQuantizer), ``called_by`` of an override lists it, and the GPU walk goes on into
PerTensorAffineQuantizer's stub and its CUDA kernel. A method with a body leads to no override."""

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
    shutil.copytree(OVERLAY / "c10", tree / "c10", dirs_exist_ok=True)  # overlay_index copies aten/
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
    assert ("- at::Quantizer::quantize  aten/src/ATen/core/QuantizerBase.h:9 (declaration) (virtual: runs the "
            "override of the object's class, 2 in derived classes: ") in text


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


def test_a_method_with_a_body_leads_to_no_override(ops):
    """Tensor::numel hides TensorBase::numel; the index cannot tell a virtual method with a body from a hidden
    one, so a call resolved to a definition is the definition alone."""
    _tree, ix = ops
    res, text = run(get_tool("calls"), ix, function_name="at::native::count_elements")
    assert [e.dst.label for e in res.sections[0].calls] == ["at::TensorBase::numel"], text
