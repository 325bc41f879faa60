"""What runs for an op: a composite kernel's op calls, also through its file-local helpers; and for CUDA
tensors, an op's own CUDA kernel rather than its composite one."""

from torchtalk.graph import graph
from torchtalk.graph.gpu import runs_for_cuda
from torchtalk.graph.nodes import op_node
from torchtalk.graph.registry import registry
from torchtalk.model import Edge, EdgeHow, EdgeKind, Loc, Node, NodeKind
from torchtalk.tools import get_tool, run

from ..annotations import Expectations, read_tree
from ..conftest import FIXTURE_TREE

TREE = Expectations(read_tree(FIXTURE_TREE))


def test_op_calls_through_a_file_local_helper(indexed):
    _, ix = indexed
    op = registry(ix).by_full["softmax.int"]
    edges = graph(ix).out(op_node(op), [EdgeKind.OP_CALL])
    # the call of at::_softmax in softmax_impl (annotated '// ^ op: _softmax' in SoftMax.cpp)
    site = TREE.site("op", "_softmax")
    assert [(e.dst.key, str(e.site), e.key) for e in edges] == [("_softmax", site, "CompositeImplicitAutograd")]
    assert edges[0].how is EdgeHow.HELPER and edges[0].note.endswith("(through softmax_impl)")
    back = graph(ix).into(op_node(registry(ix).by_full["_softmax"]), [EdgeKind.OP_CALL])
    assert [e.src.key for e in back] == ["softmax.int"]
    text = run(get_tool("trace"), ix, function_name="softmax.int")[1]
    assert f"_softmax  (called at {site}) -> CPU: softmax_cpu_out; CUDA: softmax_cuda_out" in text


def _edge(kind: EdgeKind, key: str, dst: str) -> Edge:
    return Edge(Node(NodeKind.OP, "x", "x"), Node(NodeKind.CPP_FUNCTION, dst, dst, Loc("a.cpp", 1)), kind,
                Loc("a.cpp", 1), key)


def test_cuda_runs_the_backend_kernel_not_the_composite():
    own = [_edge(EdgeKind.KERNEL, "CUDA", "1"), _edge(EdgeKind.KERNEL, "CompositeExplicitAutograd", "2"),
           _edge(EdgeKind.KERNEL, "NestedTensorCUDA", "3"), _edge(EdgeKind.OP_CALL, "CompositeExplicitAutograd", "4"),
           _edge(EdgeKind.BACKWARD, "", "5")]
    # the op asked about: its CUDA and NestedTensorCUDA kernels, its backward; not the composite kernel's calls
    assert [e.dst.key for e in runs_for_cuda(own, start=True)] == ["1", "3", "5"]
    # an op reached from dense code runs its dense CUDA kernel only
    assert [e.dst.key for e in runs_for_cuda(own, start=False)] == ["1", "5"]
    composite = [_edge(EdgeKind.KERNEL, "CompositeImplicitAutograd", "6"),
                 _edge(EdgeKind.OP_CALL, "CompositeImplicitAutograd", "7")]
    assert [e.dst.key for e in runs_for_cuda(composite, start=False)] == ["6", "7"]  # no CUDA kernel of its own


PASS_OPS = """
- func: logical_pass(Tensor self, Tensor other) -> Tensor
  variants: function
  dispatch:
    CompositeExplicitAutograd: logical_pass
"""
PASS_CPP = """namespace at::native {
using OutFunc = Tensor& (*)(const Tensor&, const Tensor&, Tensor&);
static Tensor comparison_helper(const Tensor& self, const Tensor& other, OutFunc out_impl) {
  Tensor result = self.clone();
  return out_impl(self, other, result);
}
Tensor logical_pass(const Tensor& self, const Tensor& other) {
  return comparison_helper(self, other, static_cast<OutFunc>(at::atan2_out));
}
}  // namespace at::native
"""


def _with_kernel(tree, tmp_path, name: str, cpp: str, ops: str):
    """The fixture tree's Index with ``aten/src/ATen/native/<name>`` holding ``cpp`` and ``ops`` appended to its
    native_functions.yaml."""
    from contextlib import closing

    from ..conftest import overlay_index
    overlay = tmp_path / "overlay"
    (overlay / "aten/src/ATen/native").mkdir(parents=True)
    (overlay / f"aten/src/ATen/native/{name}").write_text(cpp)
    return closing(overlay_index(tree, overlay, {"aten/src/ATen/native/native_functions.yaml": ops}))


def test_an_op_function_handed_on_is_an_op_call(tree, tmp_path):
    # BinaryOps.cpp's logical_and: comparison_op(self, other, static_cast<OutFunc>(at::logical_and_out)) runs
    # logical_and.out through the dispatcher (Note [Op references]): the composite kernel's op calls list it
    from ..conftest import line_of
    with _with_kernel(tree, tmp_path, "LogicalPass.cpp", PASS_CPP, PASS_OPS) as ix:
        reg = registry(ix)
        line = line_of(tree, "aten/src/ATen/native/LogicalPass.cpp", "static_cast<OutFunc>(at::atan2_out)")
        edges = graph(ix).out(op_node(reg.by_full["logical_pass"]), [EdgeKind.OP_CALL])
        assert [(e.dst.key, str(e.site)) for e in edges] == [
            ("atan2.out", f"aten/src/ATen/native/LogicalPass.cpp:{line}")]
        back = graph(ix).into(op_node(reg.by_full["atan2.out"]), [EdgeKind.OP_CALL])
        assert "logical_pass" in [e.src.key for e in back]


TWO_OPS = """
- func: relu_atan2(Tensor self, Tensor other) -> Tensor
  variants: function
"""
TWO_CPP = """namespace at::native {
Tensor relu_atan2(const Tensor& self, const Tensor& other) {
  return at::atan2(at::relu(self), other);
}
}  // namespace at::native
"""


def test_two_op_calls_on_one_line_are_two_calls_not_a_choice(tree, tmp_path):
    # kron's at::_unsafe_view(at::mul(a, b), shape): both run; "the call does not say which" is for one call's
    # overloads only
    from ..conftest import line_of
    with _with_kernel(tree, tmp_path, "ReluAtan2.cpp", TWO_CPP, TWO_OPS) as ix:
        line = line_of(tree, "aten/src/ATen/native/ReluAtan2.cpp", "return at::atan2(at::relu(self), other);")
        text = run(get_tool("trace"), ix, function_name="relu_atan2")[1]
        site = f"aten/src/ATen/native/ReluAtan2.cpp:{line}"
        assert f"      atan2  (called at {site}) -> " in text and f"      relu  (called at {site}) -> " in text, text
        assert "does not say which" not in text, text
