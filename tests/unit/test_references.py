"""Functions used without a call (Note [References] in extract/cpp_calls.py) and calls of a parameter that holds a
function (Note [Calls of a function parameter] in graph/param_calls.py), on a fixture file written as PyTorch's
sdp_utils.cpp (a table of check functions looped over), tracer.cpp (``fmap(value, f)``) and cudnn/Conv_v7.cpp
(``split_batch_dim_to_32bit_out(..., raw_..._32bit)`` calling its ``func_t func_32bit``) and UpSampleNearest2d.cu
(``upsample_nearest2d_out_cuda_template<nearest_neighbor_compute_source_index>(...)``) write them."""

from __future__ import annotations

import pytest

from torchtalk.model import EdgeHow, EdgeKind
from torchtalk.tools import get_tool, run

from ..conftest import index_with, line_of

PATH = "aten/src/ATen/native/cudnn/Refs.cpp"
SOURCE = """\
namespace at { static int64_t maxer(int64_t i) { return i; } }
namespace at { namespace native {

static bool check_deterministic(const Tensor& t, bool debug) { return debug; }
static bool check_shape(const Tensor& t, bool debug) { return !debug; }
template <bool flag> bool check_stride(const Tensor& t, bool debug) { return flag; }
static int64_t group_count = 3;

bool can_use(const Tensor& t, bool debug) {
  constexpr auto constraints = array_of<bool (*)(const Tensor&, bool)>(
      check_deterministic,
      check_stride<true>,
      group_count);
  for (auto& constraint : constraints) {
    if (!constraint(t, debug)) {
      return false;
    }
  }
  auto more = {&check_shape};
  return true;
}

static void cudnn_backward_data(const Tensor& out) {}

static void backward_input_32bit(const Tensor& out, int64_t groups) {
  cudnn_backward_data(out);
}

static void forward_32bit(const Tensor& out, int64_t groups) {}

template <typename func_t>
static inline void split_batch(const Tensor& out, int64_t groups, func_t func_32bit) {
  func_32bit(out, groups);
}

void backward_input_v7(const Tensor& out, int64_t groups) {
  split_batch(out, groups, backward_input_32bit);
}

void forward_v7(const Tensor& out, int64_t groups) {
  split_batch(out, groups, &forward_32bit);
}

template <typename F>
void apply_each(const Tensor& t, F f) {
  f(t);
}

void with_lambda(const Tensor& t) {
  apply_each(t, [](const Tensor& x) {});
}

static int64_t nearest_index(int64_t i) { return i; }
struct index_rule {};
template <int64_t (*index_fn)(int64_t)>
static void upsample_frame(const Tensor& out) {
  index_fn(0);
}
template <typename scalar_t, int64_t (*index_fn)(int64_t)>
static void upsample_template(const Tensor& out) {
  upsample_frame<index_fn>(out);
}

void upsample_nearest(const Tensor& out) {
  upsample_template<float, nearest_index>(out);
  at::native::upsample_template<index_rule, &nearest_index>(out);
  upsample_frame<&nearest_index>(out);
}

static int64_t size(int64_t i) { return i; }
static int64_t normal_kernel(int64_t i) { return i; }
template <typename T> struct maxer {};
template <typename scalar_t, int64_t size, template <typename> class normal_kernel>
static void mode_template(const Tensor& out) {
  compute_mode<scalar_t, size>(out);
  foreach_op<maxer<scalar_t>>(out);
  foreach_op<maxer>(out);
  normal_impl_<normal_kernel>(out);
  reduce_impl<scalar_t, reduce_on_device>(out);
}

static void logical_out_impl(const Tensor& t) {}
using OutFunc = void (*)(const Tensor&);
void with_cast(const Tensor& t) {
  apply_each(t, static_cast<OutFunc>(logical_out_impl));
}

}} // namespace at::native
"""


DEVICE = ("aten/src/ATen/native/cuda/ReduceOnDevice.cuh",
          "namespace at { namespace native {\n__device__ int reduce_on_device(int x) { return x; }\n}}\n")


@pytest.fixture
def refs(tree):
    ix = index_with(tree, {PATH: SOURCE, DEVICE[0]: DEVICE[1]})
    try:
        yield tree, ix
    finally:
        ix.close()


def _callers(ix, name):
    res, text = run(get_tool("called_by"), ix, function_name=name)
    sec = res.sections[0]
    return [(e.src.label, e.site.line, e.how) for e in sec.callers + sec.references], text


def test_a_function_put_in_a_table_is_referenced_by_the_function_holding_the_table(refs):
    tree, ix = refs
    found, text = _callers(ix, "at::native::check_deterministic")
    assert found == [("at::native::can_use", line_of(tree, PATH, "      check_deterministic,"),
                      EdgeHow.REFERENCED)], text
    assert "Referenced without a call (1" in text and "[referenced at " in text, text
    found, text = _callers(ix, "at::native::check_shape")  # &f in an initializer list
    assert found == [("at::native::can_use", line_of(tree, PATH, "auto more = {&check_shape};"),
                      EdgeHow.REFERENCED)], text
    found, text = _callers(ix, "at::native::check_stride")  # a template's instance
    assert [f[0] for f in found] == ["at::native::can_use"], text


def test_a_variable_named_in_a_table_is_no_reference(refs):
    _tree, ix = refs
    res, text = run(get_tool("calls"), ix, function_name="at::native::can_use")
    labels = [e.dst.label for e in res.sections[0].references]
    assert "at::native::check_deterministic" in labels and not any("group_count" in x for x in labels), text


def test_references_rank_after_the_calls(refs):
    _tree, ix = refs
    res, text = run(get_tool("calls"), ix, function_name="at::native::backward_input_v7")
    sec = res.sections[0]
    assert [e.how for e in sec.calls] == [EdgeHow.DIRECT] and [e.how for e in sec.references] == [
        EdgeHow.REFERENCED], text
    assert text.index("Calls (1)") < text.index("Functions it names without calling (1"), text


def test_a_call_of_a_function_parameter_reaches_what_each_caller_passes(refs):
    tree, ix = refs
    res, text = run(get_tool("calls"), ix, function_name="at::native::split_batch")
    line = line_of(tree, PATH, "func_32bit(out, groups);")
    at_call = sorted((e.dst.label, e.how) for e in res.sections[0].calls if e.site.line == line)
    assert at_call == [("at::native::backward_input_32bit", EdgeHow.PARAMETER),
                       ("at::native::forward_32bit", EdgeHow.PARAMETER)], text
    # and the function passing it reaches it itself (a walk down from it), never the one another caller passes
    res, text = run(get_tool("calls"), ix, function_name="at::native::backward_input_v7")
    assert ("at::native::backward_input_32bit", EdgeHow.REFERENCED) in [
        (e.dst.label, e.how) for e in res.sections[0].references], text


def test_a_call_of_a_parameter_no_caller_names_a_function_for_is_listed_unresolved(refs):
    _tree, ix = refs
    res, text = run(get_tool("calls"), ix, function_name="at::native::apply_each")
    assert [(e.dst.label, e.kind) for e in res.sections[0].unresolved] == [
        ("f (function parameter)", EdgeKind.UNRESOLVED)], text


def test_a_function_given_as_a_template_argument_is_referenced_where_it_is_given(refs):
    """upsample_nearest2d_out_cuda_template<nearest_neighbor_compute_source_index>(...), a template that hands it on
    to the kernel that calls it: the function has that caller, by name or by its address; a type given beside it
    (float, a struct) references nothing; where the template itself calls it, the call hands it (Note [Functions as
    template arguments]) and is no reference besides."""
    tree, ix = refs
    found, text = _callers(ix, "at::native::nearest_index")
    line = line_of(tree, PATH, "upsample_template<float, nearest_index>(out);")
    assert sorted(found) == [("at::native::upsample_nearest", line, EdgeHow.REFERENCED),
                             ("at::native::upsample_nearest", line + 1, EdgeHow.REFERENCED),
                             ("at::native::upsample_nearest", line + 2, EdgeHow.HANDED)], text
    res, text = run(get_tool("calls"), ix, function_name="at::native::upsample_nearest")
    assert [e.dst.label for e in res.sections[0].references] == ["at::native::nearest_index"] * 2, text
    # a parameter of the template around the call, a class of the name (a functor struct), a device function named
    # in a host file (a name a dispatch macro defines, as AT_DISPATCH_REDUCTION_TYPES's reduce): no function given
    res, text = run(get_tool("calls"), ix, function_name="at::native::mode_template")
    assert res.sections[0].references == [], text


def test_a_function_named_in_a_cast_is_referenced(refs):
    # BinaryOps.cpp's comparison_op(self, other, static_cast<OutFunc>(at::logical_and_out)): the cast names it
    tree, ix = refs
    found, text = _callers(ix, "at::native::logical_out_impl")
    assert found == [("at::native::with_cast", line_of(tree, PATH, "static_cast<OutFunc>(logical_out_impl)"),
                      EdgeHow.REFERENCED)], text
