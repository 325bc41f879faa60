"""Backward and forward-mode formulas of derivatives.yaml (Note [Formula modes] in model/kinds.py), on the GPU fixture
tree (tests/fixtures/tree_gpu_rank over tree): only a backward formula's calls are the backward's (BACKWARD edges,
cuda_kernels' backward lines, trace's "backward calls"); a forward-mode (JVP) formula's calls are FORWARD_AD edges,
shown by trace in a line of their own and never as the op's backward."""

from __future__ import annotations

from contextlib import closing
from pathlib import Path

import pytest

from torchtalk.graph import graph
from torchtalk.graph.nodes import op_node
from torchtalk.graph.registry import registry
from torchtalk.model import EdgeKind
from torchtalk.tools import get_tool, run

from ..conftest import line_of, overlay_index

OVERLAY = Path(__file__).parents[1] / "fixtures" / "tree_gpu_rank"
OPS = """
- func: cat(Tensor[] tensors, int dim=0) -> Tensor
  dispatch:
    CUDA: cat_cuda

- func: addmv(Tensor self, Tensor mat, Tensor vec) -> Tensor
  dispatch:
    CUDA: addmv_cuda
"""

# cat's JVP calls addmv (cuBLAS gemv); its backward calls no op
DERIVATIVES = """
- name: cat(Tensor[] tensors, int dim=0) -> Tensor
  tensors: cat_tensors_backward(grad, dim)
  result: addmv(result, result, result)
"""


@pytest.fixture
def modes(tree):
    with closing(overlay_index(tree, OVERLAY, {"aten/src/ATen/native/native_functions.yaml": OPS,
                                               "tools/autograd/derivatives.yaml": DERIVATIVES})) as ix:
        yield tree, ix


def test_a_forward_mode_formulas_calls_are_forward_ad_edges_not_backward(modes):
    tree, ix = modes
    reg = registry(ix)
    cat, addmv = op_node(reg.by_full["cat"]), op_node(reg.by_full["addmv"])
    g = graph(ix)
    assert g.out(cat, [EdgeKind.BACKWARD]) == [] and g.into(addmv, [EdgeKind.BACKWARD]) == []
    (fwd,) = g.out(cat, [EdgeKind.FORWARD_AD])
    jvp = line_of(tree, "tools/autograd/derivatives.yaml", "result: addmv(")
    assert (fwd.dst.key, fwd.site.line) == ("addmv", jvp)
    assert [e.src.key for e in g.into(addmv, [EdgeKind.FORWARD_AD])] == ["cat"]


def test_cuda_kernels_lists_no_jvp_code_as_the_backward(modes):
    _tree, ix = modes
    # the JVP's addmv (cuBLAS gemv) runs only for dual tensors: not cat's backward, not listed
    res, text = run(get_tool("cuda_kernels"), ix, function_name="cat")
    assert not res.libraries and "gemv" not in text and "[backward" not in text
    assert {k.name for k in res.kernels} == {"CatArrayBatchedCopy", "indexSelectLargeIndex", "indexSelectSmallIndex"}
    assert not any(launch.backward for k in res.kernels for launch in k.launches)


def test_trace_shows_the_jvp_calls_in_a_line_of_their_own(modes):
    _tree, ix = modes
    _res, text = run(get_tool("trace"), ix, function_name="cat")
    assert "- result [forward-mode AD]: addmv(result, result, result)" in text
    assert "  forward-mode AD (jvp) calls: addmv" in text
    assert not any(line.strip().startswith("backward calls:") and "addmv" in line for line in text.splitlines())


def test_a_long_formula_is_cut_with_a_word_saying_so(tree):
    # _linalg_svd's and convolution_backward's formulas were cut at 300 characters without a word
    long = "cat_tensors_backward(grad, dim" + ", dim" * 120 + ")"
    with closing(overlay_index(tree, OVERLAY, {"aten/src/ATen/native/native_functions.yaml": OPS,
                                               "tools/autograd/derivatives.yaml": DERIVATIVES.replace(
                                                   "cat_tensors_backward(grad, dim)", long)})) as ix:
        _res, text = run(get_tool("trace"), ix, function_name="cat", focus="yaml")
        line = next(ln for ln in text.splitlines() if ln.startswith("- tensors: cat_tensors_backward("))
        assert f" ... (+{len(long) - 300} characters: the structured answer and the line hold it)" in line, line
