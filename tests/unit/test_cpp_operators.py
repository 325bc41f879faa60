"""Operators on class values are calls (Note [Operators] in extract/cpp_calls.py), on a fixture tree
(tests/fixtures/tree_operators over tree): ``self != self`` in isnan is ``at::operator!=(const Tensor&, const
Tensor&)``, whose ``x.ne(y)`` is op ne, so the GPU walk reaches ne's kernel; a Tensor times a double is the Scalar
overload; an enum compared with a constant is the language's comparison, no call and no unresolved name."""

from __future__ import annotations

import shutil
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


STRING_VIEW = """#pragma once
namespace c10 {
template <class CharT>
class basic_string_view final {
 public:
  constexpr basic_string_view(const CharT* str) : begin_(str) {}
  constexpr bool equals_(basic_string_view rhs) const { return begin_ == rhs.begin_; }
  friend constexpr bool operator==(basic_string_view lhs, basic_string_view rhs) noexcept {
    return lhs.equals_(rhs);
  }
 private:
  const CharT* begin_;
};
using string_view = basic_string_view<char>;
} // namespace c10
"""
IVALUE = """#pragma once
#include <ATen/TensorOperators.h>
namespace c10 {
struct IValue {
  IValue(const char* s) {}
  at::Tensor toTensor() const;
  friend bool operator==(const IValue& lhs, const IValue& rhs);
};
inline bool operator==(const IValue& lhs, const IValue& rhs) {
  return (lhs.toTensor() != rhs.toTensor()).is_nonzero();
}
} // namespace c10
"""
GRID = """#include <ATen/core/StringView.h>
#include <ATen/core/IValueLike.h>
namespace at::native {
Tensor grid(const Tensor& self, c10::string_view indexing) {
  if (indexing == "xy") {
    return self;
  }
  return self;
}
bool same(const c10::IValue& a, const c10::IValue& b) {
  return a == b;
}
} // namespace at::native
"""


def test_a_friend_operator_in_its_class_is_the_one_its_operands_choose(tree, tmp_path):
    """Note [Hidden friends] in graph/resolve.py: ``indexing == "xy"`` (a string_view and a literal) is
    basic_string_view's friend operator==, which the index records in the class, not IValue's ``operator==`` that
    argument-dependent lookup also finds in c10 (1.13.1's meshgrid reached is_nonzero and a device sync so)."""
    overlay = tmp_path / "overlay"
    (overlay / "aten/src/ATen/core").mkdir(parents=True)
    (overlay / "aten/src/ATen/native").mkdir(parents=True)
    shutil.copytree(OVERLAY / "aten", overlay / "aten", dirs_exist_ok=True)
    (overlay / "aten/src/ATen/core/StringView.h").write_text(STRING_VIEW)
    (overlay / "aten/src/ATen/core/IValueLike.h").write_text(IVALUE)
    (overlay / "aten/src/ATen/native/Grid.cpp").write_text(GRID)
    with closing(overlay_index(tree, overlay, {"aten/src/ATen/native/native_functions.yaml": OPS})) as ix:
        sec, text = _calls(ix, "at::native::grid")
        assert [(e.dst.label, e.how.value) for e in sec.calls] == [("c10::basic_string_view::operator==", "direct")], \
            text
        # a friend the class only declares is the namespace's function: its definition, not a second candidate
        sec, text = _calls(ix, "at::native::same")
        assert [(e.dst.label, e.how.value, e.dst.loc.path) for e in sec.calls] == [
            ("c10::operator==", "direct", "aten/src/ATen/core/IValueLike.h")], text
