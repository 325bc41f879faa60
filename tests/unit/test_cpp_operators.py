"""Operators on class values are calls (Note [Operators] in extract/cpp_calls.py), on a fixture tree
(tests/fixtures/tree_operators over tree): ``self != self`` in isnan is ``at::operator!=(const Tensor&, const
Tensor&)``, whose ``x.ne(y)`` is op ne, so the GPU walk reaches ne's kernel; a Tensor times a double is the Scalar
overload; an enum compared with a constant is the language's comparison, no call and no unresolved name."""

from __future__ import annotations

from contextlib import closing
from pathlib import Path

import pytest

from torchtalk.graph.symbols import symbol
from torchtalk.tools import get_tool, run

from ..conftest import overlay_index

OVERLAY = Path(__file__).parents[1] / "fixtures" / "tree_operators"
OPS = """
- func: isnan(Tensor self) -> Tensor
  variants: function, method
  dispatch:
    CPU, CUDA: isnan

- func: ne.Tensor(Tensor self, Tensor other) -> Tensor
  variants: method, function
  dispatch:
    CUDA: ne_cuda

- func: mul.Tensor(Tensor self, Tensor other) -> Tensor
  variants: function, method
  dispatch:
    CompositeExplicitAutograd: mul

- func: trunc(Tensor self) -> Tensor
  variants: function, method
  dispatch:
    CompositeExplicitAutograd: trunc
"""


@pytest.fixture
def ops(tree):
    with closing(overlay_index(tree, OVERLAY, {"aten/src/ATen/native/native_functions.yaml": OPS})) as ix:
        yield ix


def _calls(ix, name):
    res, text = run(get_tool("calls"), ix, function_name=name)
    (sec,) = res.sections
    return sec, text


def test_an_operator_on_tensors_is_a_call_of_its_overload_and_reaches_the_op(ops):
    sec, text = _calls(ops, "at::native::isnan")
    assert [(e.dst.label, e.dst.loc.path, e.how.value, e.written) for e in sec.calls] == [
        ("at::operator!=", "aten/src/ATen/TensorOperators.h", "direct", "operator!=")], text
    assert symbol(ops, int(sec.calls[0].dst.key)).params == "(const Tensor& x, const Tensor& y)" and not sec.unresolved
    res, text = run(get_tool("cuda_kernels"), ops, function_name="isnan")
    assert [k.name for k in res.kernels] == ["ne_kernel"], text
    assert text.splitlines()[1].startswith("Nearest first: __global__ ne_kernel  "), text
    assert "(ne's code, 1 op away)" in text.splitlines()[1]


def test_the_operands_types_choose_the_overload(ops):
    # at::operator* is three functions (Tensor * Tensor, Tensor * Scalar, Scalar * Tensor): a double binds the Scalar
    sec, text = _calls(ops, "at::native::scaled")
    (edge,) = sec.calls
    assert (edge.dst.label, edge.how.value) == ("at::operator*", "direct"), text
    assert symbol(ops, int(edge.dst.key)).params == "(const Tensor& x, const Scalar& y)"


def test_an_enum_compared_is_the_languages_operator_no_call(ops):
    sec, text = _calls(ops, "at::native::on_cuda")
    assert not sec.calls and not sec.unresolved, text


def test_a_global_functions_result_is_no_tensor(ops):
    """``a - ::trunc(a)`` in frac's CUDA lambda: ::trunc is the global (C library) function, so its result is not
    at::trunc's Tensor and the difference is the language's, not at::operator- (which reached sub's kernels)."""
    sec, text = _calls(ops, "at::native::frac_kernel_cuda")
    assert not [e for e in sec.calls if e.dst.label.startswith("at::operator")], text
