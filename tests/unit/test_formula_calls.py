"""The calls of a derivatives.yaml formula and the op overloads each can mean (Note [Formula calls] in
graph/formulas.py), on the fixture registry: a call's arguments decide between overloads where their types are
known (numbers, the entry's own arguments, grad and result), and a call no overload can take is no op's."""

from __future__ import annotations

import pytest

from torchtalk.graph.formulas import formula_calls
from torchtalk.graph.registry import registry

from ..conftest import indexed_with


@pytest.fixture
def calls(indexed):
    _tree, ix = indexed
    reg = registry(ix)
    entry = reg.by_full["add.Tensor"]  # add.Tensor(Tensor self, Tensor other, *, Scalar alpha=1)

    def of(text):
        return [(c.name, c.method, c.ops, c.op_name) for c in formula_calls(ix, reg, text, entry)]
    return of


def test_a_number_picks_the_overload_it_can_bind(calls):
    # size.int(Tensor self, int dim) and size.Dimname(Tensor self, Dimname dim) both take two arguments
    assert calls("grad * at::size(self, 0)") == [("size", False, ("size.int",), True)]


def test_a_call_no_overload_can_take_is_no_op(calls):
    # rsqrt(Tensor self): a number binds no Tensor, so rsqrt(M_PI) is the C library's
    assert calls("0.5 * rsqrt(M_PI) * grad") == [("rsqrt", False, (), True)]
    assert calls("grad * rsqrt(other)") == [("rsqrt", False, ("rsqrt",), True)]


def test_a_method_of_an_argument_that_is_no_tensor_is_no_op(calls):
    # alpha is a Scalar: alpha.relu() would be c10::Scalar's, never the op relu
    assert calls("grad * alpha.relu()") == [("relu", True, (), True)]
    assert calls("grad.relu() * other_t.unsqueeze(0)") == [
        ("relu", True, ("relu",), True), ("unsqueeze", True, ("unsqueeze",), True)]


def test_helpers_and_qualified_calls(calls):
    # a name no op has is a helper's (FunctionsManual); std::/c10:: calls are the library's, at:: ones are ops
    assert calls("handle_r_to_c(self.scalar_type(), grad)") == [("handle_r_to_c", False, (), False)]
    assert calls("std::sqrt(2) * at::rsqrt(grad)") == [("rsqrt", False, ("rsqrt",), True)]


def test_split_arguments_keep_operators_apart_from_template_brackets(calls):
    # "self <= max" is a comparison, not the start of template arguments: where( takes three arguments here
    from torchtalk.graph.cpp_text import split_args
    assert split_args("self <= max, grad, at::scalar_tensor(0., grad.options())") == [
        "self <= max", "grad", "at::scalar_tensor(0., grad.options())"]
    assert split_args("std::map<int, std::pair<a, b>> m, x << 2, p->y") == [
        "std::map<int, std::pair<a, b>> m", "x << 2", "p->y"]


def test_an_operator_with_a_tensor_operand_is_an_op(calls):
    # Note [Tensor operators]: grad + other is grad.add(other), add.Tensor; the fixture has no mul, so * is no op's
    assert calls("grad + other") == [("operator+", True, ("add.Tensor",), True)]
    assert calls("(grad + other).relu()") == [
        ("operator+", True, ("add.Tensor",), True), ("relu", True, ("relu",), True)]
    # precedence: the left operand of + is grad * self (a Tensor), though its nearest name is self
    assert calls("~(grad * self + other)") == [
        ("operator~", True, ("bitwise_not",), True), ("operator+", True, ("add.Tensor",), True)]


def test_an_operator_between_numbers_or_sizes_is_no_op(calls):
    # self.dim() and at::size(self, 0) are numbers (size.int returns an int): their arithmetic is the language's
    assert calls("self.dim() + 1") == []
    assert calls("at::size(self, 0) + 1") == [("size", False, ("size.int",), True)]


def test_operands_read_with_precedence_unary_signs_and_exponents():
    # the left operand of + in "a * -b + c" is "a * -b" (a unary minus inside it); 1e-5's sign is no operator
    from torchtalk.graph.formulas import _left, _right
    text = "a * -b + c"
    assert _left(text, text.index("+"), "+").strip() == "a * -b"
    text = "grad * 1e-5 - other"
    assert _right(text, text.index("*") + 1, "*") == "1e-5"
    assert _left(text, text.index(" - ") + 1, "-").strip() == "grad * 1e-5"


def test_template_brackets_are_told_from_comparisons():
    from torchtalk.graph.cpp_text import template_brackets
    text = "std::get<0>(x) > y"
    assert template_brackets(text) == {text.index("<"), text.index(">")}
    assert template_brackets("where(self<other, grad, grad) * (self > 0)") == set()  # "<" left open: an operator
    assert template_brackets("self <= max, x << 2, p->y") == set()


def test_a_number_on_the_left_and_a_tensor_result_of_a_helper(calls):
    # other + grad: add.Tensor; (grad + other) + other: the left is a Tensor, though written as a group
    assert calls("other + grad") == [("operator+", True, ("add.Tensor",), True)]
    assert calls("(grad + other) + other") == [
        ("operator+", True, ("add.Tensor",), True), ("operator+", True, ("add.Tensor",), True)]
    # a number binds no Tensor: 2.0 + grad is no overload of the fixture's add (it has no add.Scalar)
    assert calls("2.0 + grad") == []


def test_a_braced_list_is_one_argument_and_a_symint_name_calls_its_op(calls):
    # im2col's col2im_symint(grad, {self.sym_size(-2), self.sym_size(-1)}, ...) was split at the braces' comma, and
    # 31 formula lines call an op by its _symint name (self.unsqueeze_symint(...), at::cumsum_symint(...)): both
    # were dropped
    from torchtalk.graph.cpp_text import split_args
    assert split_args("grad, {self.sym_size(-2), self.sym_size(-1)}, 3") == [
        "grad", "{self.sym_size(-2), self.sym_size(-1)}", "3"]
    assert calls("grad.unsqueeze_symint(0)") == [("unsqueeze_symint", True, ("unsqueeze",), True)]
    assert calls("at::cumsum_symint(grad, 0)") == [("cumsum_symint", False, ("cumsum",), True)]


def test_a_hand_written_tensor_method_that_calls_no_op_is_no_op_call(calls):
    # _linalg_det's jvp: A_p.is_complex() is TensorBase's inline method (is_complex is manual_cpp_binding): it was
    # listed among the jvp's calls
    assert calls("grad * self.is_complex()") == [("is_complex", True, (), True)]


def test_an_operand_a_functions_manual_helper_returns_is_its_type(tree):
    # add.Tensor's jvp self_t + maybe_multiply(other_t, alpha) listed add.Scalar: the helper's result (at::Tensor,
    # FunctionsManual.h) was of no known type
    with open(tree / "aten/src/ATen/native/native_functions.yaml", "a") as f:
        f.write("\n- func: add.Scalar(Tensor self, Scalar other, Scalar alpha=1) -> Tensor\n  variants: function, "
                "method\n")
    with indexed_with(tree, {"torch/csrc/autograd/FunctionsManual.h": (
        "namespace torch::autograd::generated::details {\n"
        "at::Tensor maybe_multiply(const at::Tensor& t, const at::Scalar& s);\n}\n")}) as ix:
        reg = registry(ix)
        got = formula_calls(ix, reg, "self_t + maybe_multiply(other_t, alpha)", reg.by_full["add.Tensor"])
        assert [(c.name, c.ops) for c in got] == [("operator+", ("add.Tensor",)), ("maybe_multiply", ())]
