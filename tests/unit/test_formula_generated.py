"""The formulas torchgen writes for auto_element_wise and auto_linear (Note [Formulas torchgen writes] in
graph/formula_edges.py), a formula calling its own op (named "itself", no edge), and a Tensor method's declared
result typing a formula's argument (``.to(self.scalar_type())`` is ``to.dtype``), on the fixture tree."""

from __future__ import annotations

import pytest

from torchtalk.graph import graph
from torchtalk.graph.formula_edges import calls_itself
from torchtalk.graph.nodes import op_node
from torchtalk.graph.registry import registry
from torchtalk.model import EdgeKind
from torchtalk.tools import get_tool, run

from ..conftest import indexed_with

OPS = """
- func: sigmoid(Tensor self) -> Tensor
  variants: function, method

- func: sigmoid_backward(Tensor grad_output, Tensor output) -> Tensor

- func: conj(Tensor(a) self) -> Tensor(a)
  variants: function, method

- func: mul.Tensor(Tensor self, Tensor other) -> Tensor
  variants: function, method

- func: to.dtype(Tensor(a) self, ScalarType dtype, bool non_blocking=False, bool copy=False) -> Tensor(a)
  variants: method

- func: to.other(Tensor(a) self, Tensor other, bool non_blocking=False, bool copy=False) -> Tensor(a)
  variants: method

- func: cumprod(Tensor self, int dim) -> Tensor
  variants: function, method
"""

DERIVATIVES = """
- name: sigmoid(Tensor self) -> Tensor
  self: sigmoid_backward(grad, result)
  result: auto_element_wise

- name: mul.Tensor(Tensor self, Tensor other) -> Tensor
  self: grad.to(self.scalar_type())
  other: grad
  result: other_t * self_p + self_t * other_p

- name: cumprod(Tensor self, int dim) -> Tensor
  self: grad
  result: auto_linear
"""

TENSOR_BASE = """#pragma once
namespace c10 { enum class ScalarType : int8_t { Float, Double }; }
namespace at {
using c10::ScalarType;
class TensorBase {
 public:
  ScalarType scalar_type() const {
    return impl_->dtype();
  }
  int64_t dim() const {
    return impl_->dim();
  }
 protected:
  TensorImpl* impl_;
};
} // namespace at
"""


@pytest.fixture
def ix(tree):
    for rel, text in (("aten/src/ATen/native/native_functions.yaml", OPS),
                      ("tools/autograd/derivatives.yaml", DERIVATIVES)):
        with open(tree / rel, "a") as f:
            f.write(text)
    with indexed_with(tree, {"aten/src/ATen/core/TensorBase.h": TENSOR_BASE}) as ix:
        yield ix


def _out(ix, op: str, kind: EdgeKind) -> list[str]:
    return sorted(e.dst.key for e in graph(ix).out(op_node(registry(ix).by_full[op]), [kind]))


def test_auto_element_wise_calls_the_backward_formula_on_the_tangent(ix):
    # torchgen: (sigmoid_backward(self_t.conj(), result)).conj(); the answer listed no jvp calls
    assert _out(ix, "sigmoid", EdgeKind.FORWARD_AD) == ["conj", "sigmoid_backward"]
    assert _out(ix, "sigmoid", EdgeKind.BACKWARD) == ["sigmoid_backward"]
    _res, text = run(get_tool("trace"), ix, function_name="sigmoid")
    assert "  forward-mode AD (jvp) calls: sigmoid_backward, conj" in text


def test_auto_linear_calls_the_op_itself_and_says_so(ix):
    # torchgen: at::cumprod(self_t, dim): no edge (an op is no caller of itself), named "itself" in the answer
    node = op_node(registry(ix).by_full["cumprod"])
    assert _out(ix, "cumprod", EdgeKind.FORWARD_AD) == []
    assert calls_itself(ix, node, EdgeKind.FORWARD_AD) and not calls_itself(ix, node, EdgeKind.BACKWARD)
    _res, text = run(get_tool("trace"), ix, function_name="cumprod")
    assert "  forward-mode AD (jvp) calls: cumprod (itself)" in text
    assert "backward calls" not in text


def test_a_formula_calling_its_own_op_names_it(ix):
    # mul's jvp other_t * self_p + self_t * other_p: its mul.Tensor was dropped from the line without a word
    _res, text = run(get_tool("trace"), ix, function_name="mul.Tensor")
    assert "  forward-mode AD (jvp) calls: mul.Tensor (itself)" in text


def test_a_tensor_methods_declared_result_types_an_argument(ix):
    # self.scalar_type() is a c10::ScalarType (TensorBase.h): .to() of it is to.dtype, never to.other
    assert _out(ix, "mul.Tensor", EdgeKind.BACKWARD) == ["to.dtype"]

