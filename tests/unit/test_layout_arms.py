"""Note [Layout arms] (graph/layout_arms.py): the arms of C++ ``if`` statements only a sparse, nested, quantized or
MKLDNN tensor takes, read from the text; what a GPU answer reaches through one ranks with the op's layout-specific
kernels and is tagged so (``select``'s ``if (self.is_sparse()) return select_sparse(...)``)."""

from __future__ import annotations

from contextlib import closing

import pytest

from torchtalk.graph import graph
from torchtalk.graph.layout_arms import arms
from torchtalk.graph.nodes import op_node
from torchtalk.graph.registry import registry
from torchtalk.model import EdgeKind
from torchtalk.query.cuda import near
from torchtalk.tools import get_tool, run

from ..conftest import line_of, overlay_index

# Annotated source: a line ending in "// L" is in a layout arm, "// D" is not.
CASES = {
    "block": """
Tensor select(const Tensor& self, int64_t dim, int64_t index) {
  if (self.is_sparse()) {
    return select_sparse(self, dim, index);  // L
  }
  return self.as_strided(sizes, strides);  // D
}""",
    "one statement, its call on the if's line": """
Scalar item(const Tensor& self) {
  if (self.is_sparse()) return _local_scalar_dense(self._values());  // L
  return _local_scalar_dense(self);  // D
}""",
    "else of a negated test": """
Tensor f(const Tensor& input) {
  if (!input.is_nested()) {
    return dense(input);  // D
  } else {
    return nested(input);  // L
  }
}""",
    "else if chain, the layout() spelling, a || of layout tests": """
Tensor g(const Tensor& self) {
  if (self.layout() == kSparseCsr || self.layout() == c10::Layout::SparseBsr) {
    return compressed(self);  // L
  } else if (self.dim() == 2) {
    return two(self);  // D
  } else {
    return other(self);  // D
  }
}""",
    "a && with another test; a || with another test decides nothing": """
void h(const Tensor& a, const Tensor& b) {
  if (a.is_quantized() && b.dim() == 2) {
    quantized(a);  // L
  }
  if (a.is_sparse() || use_fallback) {
    either(a);  // D
  }
  if (!a.is_sparse() || flag) {
    dense_or_flag(a);  // D
  } else {
    sparse_and_not_flag(a);  // D
  }
}""",
    "comments, strings and a nested arm": """
void k(const Tensor& self) {
  // if (self.is_sparse()) { fake(); }
  const char* s = "if (self.is_sparse()) {";
  plain(self);  // D
  if (self->is_mkldnn()) {
    if (self.dim() > 1) {
      deep(self);  // L
    }
  }
  after(self);  // D
}""",
}


@pytest.mark.parametrize("name", list(CASES))
def test_layout_arms(name):
    text = CASES[name]
    found = arms(text)
    for n, line in enumerate(text.split("\n"), 1):
        if line.endswith(("// L", "// D")):
            inside = any(a.first <= n <= a.last for a in found)
            assert inside is line.endswith("// L"), (name, n, line, found)


OPS = """
- func: pick(Tensor self, int dim, int index) -> Tensor
  variants: function
  dispatch:
    CompositeExplicitAutograd: pick

- func: pick_dense(Tensor self) -> Tensor
  variants: function
  dispatch:
    CUDA: pick_dense_cuda
"""
PICK = """namespace at::native {
static Tensor pick_sparse(const Tensor& self, int64_t dim, int64_t index) {
  auto values = self._values();
  return at::index_select(values, 0, index);
}
Tensor pick(const Tensor& self, int64_t dim, int64_t index) {
  if (self.is_sparse()) {
    return pick_sparse(self, dim, index);
  }
  return at::pick_dense(self);
}
}  // namespace at::native
"""
PICK_CUDA = """namespace at::native {
__global__ void pick_dense_kernel(float* out) {}
__global__ void pick_nested_kernel(float* out) {}
__global__ void pick_helper_kernel(float* out) {}
static void pick_helper() {
  pick_helper_kernel<<<1, 1>>>(nullptr);
}
template <typename T>
__global__ void pick_values_kernel(T* out) {}
template <>
__global__ void pick_values_kernel<bool>(bool* out) {}
Tensor pick_dense_cuda(const Tensor& self) {
  if (self.is_nested()) {
    pick_nested_kernel<<<1, 1>>>(nullptr);
  }
  pick_dense_kernel<<<1, 1>>>(nullptr);
  if (self.is_quantized()) {
    pick_helper();
  } else {
    pick_helper();
  }
  AT_DISPATCH_ALL_TYPES_AND(kBool, self.scalar_type(), "pick", [&] {
    pick_values_kernel<scalar_t><<<1, 1>>>(nullptr);
  });
  return self;
}
}  // namespace at::native
"""


@pytest.fixture
def picked(tree, tmp_path):
    overlay = tmp_path / "overlay"
    (overlay / "aten/src/ATen/native/cuda").mkdir(parents=True)
    (overlay / "aten/src/ATen/native/Pick.cpp").write_text(PICK)
    (overlay / "aten/src/ATen/native/cuda/Pick.cu").write_text(PICK_CUDA)
    with closing(overlay_index(tree, overlay, {"aten/src/ATen/native/native_functions.yaml": OPS})) as ix:
        yield tree, ix


def test_an_op_call_in_a_layout_arm_says_so(picked):
    tree, ix = picked
    edges = {e.dst.key: e for e in graph(ix).out(op_node(registry(ix).by_full["pick"]), [EdgeKind.OP_CALL])}
    # at::index_select in pick_sparse, which pick calls only for a sparse tensor; at::pick_dense after the arm
    sparse, dense = edges["index_select"], edges["pick_dense"]
    assert sparse.branch is not None and sparse.branch.layout and sparse.branch.arm == "if (self.is_sparse())"
    cpp = "aten/src/ATen/native/Pick.cpp"
    assert str(sparse.branch.head) == f"{cpp}:{line_of(tree, cpp, 'if (self.is_sparse())')}"
    assert dense.branch is None


def test_the_dense_path_leads_and_a_layout_arms_kernels_are_tagged(picked):
    tree, ix = picked
    res, text = run(get_tool("cuda_kernels"), ix, function_name="pick")
    order = [k.name for k in res.kernels]
    # pick_dense's kernels (the dense path) before index_select's (pick's sparse arm) and pick_nested_kernel (the
    # nested arm inside pick_dense_cuda)
    assert order.index("pick_dense_kernel") < order.index("pick_nested_kernel"), order
    assert order.index("pick_dense_kernel") < order.index("indexSelectSmallIndex"), order
    layout = {k.name for k in res.kernels if all(near(x).layout for x in k.launches)}
    # pick_helper is called in the quantized arm and in its else: the dense call is the one walked
    # (index_select_out_cuda's helper: embedding's answer led with fill_'s code)
    assert layout == {"pick_nested_kernel", "indexSelectSmallIndex", "indexSelectLargeIndex"}, layout
    assert "pick_helper_kernel" in order, order
    assert "## __global__ indexSelectSmallIndex" in text
    heading = next(ln for ln in text.splitlines() if ln.startswith("## __global__ pick_nested_kernel"))
    assert heading.endswith("[sparse/nested/quantized path]"), heading
    heading = next(ln for ln in text.splitlines() if ln.startswith("## __global__ pick_dense_kernel"))
    assert "sparse" not in heading, heading


def test_a_kernel_and_its_explicit_specialization_launched_once_are_one_kernel_one_launch(picked):
    # SparseCUDATensor.cu's coalesceValuesKernel<scalar_t, ...><<<>>> in AT_DISPATCH over Bool runs the template or
    # its bool specialization: one kernel with both definitions, launched at one line (it was listed twice)
    tree, ix = picked
    res, text = run(get_tool("cuda_kernels"), ix, function_name="pick")
    (k,) = [k for k in res.kernels if k.name == "pick_values_kernel"]
    cu = "aten/src/ATen/native/cuda/Pick.cu"
    assert [d.line for d in k.definitions] == [line_of(tree, cu, "__global__ void pick_values_kernel(T* out)"),
                                              line_of(tree, cu, "pick_values_kernel<bool>(bool* out)")]
    assert len(k.launches) == 1
    assert text.count(f"- launched at {cu}:{line_of(tree, cu, 'pick_values_kernel<scalar_t><<<')}") == 1, text


def test_traces_gpu_lines_say_which_run_only_in_a_layout_arm(picked):
    # trace's GPU lines of a kernel are its walk: a launch made only for a nested tensor comes under a line naming
    # the arm's ``if``, after the dense launch (narrow's row stated a device sync its quantized arm alone makes)
    tree, ix = picked
    res, text = run(get_tool("trace"), ix, function_name="pick_dense")
    cu = "aten/src/ATen/native/cuda/Pick.cu"
    lines = text.splitlines()
    dense = next(i for i, ln in enumerate(lines) if "CUDA kernel pick_dense_kernel" in ln)
    nested = next(i for i, ln in enumerate(lines) if "CUDA kernel pick_nested_kernel" in ln)
    arm = f"    only in `if (self.is_nested())` at {cu}:{line_of(tree, cu, 'if (self.is_nested())')}:"
    assert dense < nested and lines[nested - 1] == arm and arm not in lines[:dense], text
    assert lines[dense].startswith("    CUDA") and lines[nested].startswith("      CUDA"), text
    (kernel,) = res.ops[0].kernels
    arms = {g.site.dst.label.split("::")[-1]: g.arm for g in kernel.gpu}
    assert arms["pick_dense_kernel"] is None and arms["pick_nested_kernel"].arm == "if (self.is_nested())"


def test_a_virtual_calls_overrides_in_one_library_are_one_gpu_line():
    """``allocator.allocate`` in StorageImpl's constructor reaches two overrides, both the caching allocator's: trace
    printed the same line twice (the structured answer keeps both)."""
    from torchtalk.model import DispatchEntry, DispatchKey, Edge, EntryOrigin, Loc, Node, NodeKind
    from torchtalk.query.trace_results import GpuLine, KernelInfo
    from torchtalk.render.trace import _launches

    ctor = Node(NodeKind.CPP_FUNCTION, "7", "c10::StorageImpl::StorageImpl", Loc("c10/core/StorageImpl.h", 80))
    lines = [GpuLine(Edge(ctor, Node(NodeKind.CPP_FUNCTION, key, "allocate"), EdgeKind.CALL,
                          Loc("c10/core/StorageImpl.h", line), written="allocator.allocate"),
                     library="CUDA caching allocator", via="empty")
             for key in ("48228", "48601") for line in (84, 85)]
    info = KernelInfo(DispatchEntry(DispatchKey.CUDA, "k", Loc("y.yaml", 1), EntryOrigin.TABLE), gpu=lines)
    out: list[str] = []
    _launches(info, "empty", out)
    assert out == ["    CUDA caching allocator: allocator.allocate at c10/core/StorageImpl.h:84, "
                   "c10/core/StorageImpl.h:85 by c10::StorageImpl::StorageImpl  (empty's code)"]
