"""The order of a GPU answer (Note [Nearest first] in graph/gpu_rank.py), on a fixture tree (tests/fixtures/
tree_gpu_rank over tree): kernels, launch families and library calls on one scale of nearness to the op asked, the
budget cutting the farthest, trace's GPU lines in the same order, and the cut of the one-call-through-the-dispatcher
limit in words of its own."""

from __future__ import annotations

from contextlib import closing
from pathlib import Path

import pytest

from torchtalk.graph import graph
from torchtalk.graph.gpu import gpu_reach
from torchtalk.graph.nodes import op_node
from torchtalk.graph.registry import registry
from torchtalk.model import CutKind, EdgeKind
from torchtalk.query.cuda import near
from torchtalk.query.cuts import describe, gpu_cuts
from torchtalk.render import budget
from torchtalk.tools import get_tool, run

from ..conftest import line_of, overlay_index

OVERLAY = Path(__file__).parents[1] / "fixtures" / "tree_gpu_rank"
OPS = """
- func: embedding(Tensor weight, Tensor indices, SymInt padding_idx=-1) -> Tensor
  dispatch:
    CompositeExplicitAutograd: embedding_symint
    NestedTensorCPU, NestedTensorCUDA: NestedTensor_embedding

- func: embedding_backward(Tensor grad, Tensor indices, SymInt num_weights, SymInt padding_idx) -> Tensor
  dispatch:
    CompositeImplicitAutograd: embedding_backward_symint

- func: embedding_dense_backward(Tensor grad_output, Tensor indices, SymInt num_weights, SymInt padding_idx) -> Tensor
  dispatch:
    CUDA: embedding_dense_backward_cuda

- func: cat(Tensor[] tensors, int dim=0) -> Tensor
  dispatch:
    CUDA: cat_cuda

- func: addmv(Tensor self, Tensor mat, Tensor vec) -> Tensor
  dispatch:
    CUDA: addmv_cuda
"""

DERIVATIVES = """
- name: embedding(Tensor weight, Tensor indices, SymInt padding_idx=-1) -> Tensor
  indices: non_differentiable
  weight: embedding_backward_symint(grad, indices, weight.sym_size(0), padding_idx)
"""


@pytest.fixture
def gpu(tree):
    with closing(overlay_index(tree, OVERLAY, {"aten/src/ATen/native/native_functions.yaml": OPS,
                                               "tools/autograd/derivatives.yaml": DERIVATIVES})) as ix:
        yield tree, ix


def test_the_nearest_device_work_leads_whatever_its_kind(gpu):
    tree, ix = gpu
    # addmv_cuda calls cuBLAS itself (1 edge from the op); TunableOp's flush_icache_kernel is 5 edges down
    res, text = run(get_tool("cuda_kernels"), ix, function_name="addmv")
    (lib,) = res.libraries
    (k,) = res.kernels
    assert lib.site.written == "at::cuda::blas::gemv" and k.name == "flush_icache_kernel"
    assert near(lib) < near(k.launches[0]) and len(lib.chain) < len(k.launches[0].chain)
    blas = "aten/src/ATen/native/cuda/Blas.cpp"
    site = f"{blas}:{line_of(tree, blas, 'at::cuda::blas::gemv<float>(')}"
    assert text.splitlines()[1].startswith(f"Nearest first: cuBLAS: at::cuda::blas::gemv at {site} (its own code)")
    assert text.index(f"- cuBLAS: at::cuda::blas::gemv at {site}") < text.index("## __global__ flush_icache")
    assert text.splitlines()[-1].startswith('next: calls("at::native::addmv_cuda")')  # where the nearest work is


def test_the_forward_then_the_own_backward_then_farther_ops_and_other_layouts(gpu):
    tree, ix = gpu
    res, text = run(get_tool("cuda_kernels"), ix, function_name="embedding")
    names = [k.name for k in res.kernels]
    # the forward (its composite kernel runs as index_select), its own backward (the formula's op runs as
    # embedding_dense_backward), then the nested-tensor kernel's at::cat: cat's code, after the dense path
    assert names == ["indexSelectLargeIndex", "indexSelectSmallIndex", "embedding_backward_feature_kernel",
                     "CatArrayBatchedCopy"]
    fwd, back, cat = res.kernels[0].launches[0], res.kernels[2].launches[0], res.kernels[3].launches[0]
    assert (fwd.via, fwd.hops, fwd.backward) == ("index_select", 0, False)
    # whose code: the op whose own kernel launches (the formula's op is composite: it runs as that one)
    assert (back.via, back.hops, back.backward) == ("embedding_dense_backward", 0, True)
    assert (cat.via, cat.hops, near(cat).layout) == ("cat", 1, True)
    formula = line_of(tree, "tools/autograd/derivatives.yaml", "weight: embedding_backward_symint(")
    assert f"[backward tools/autograd/derivatives.yaml:{formula}]" in text
    # index_select's sites reached again from the backward (at::index_select in embedding_dense_backward_cuda) are
    # listed once, with their nearest chain: the forward's
    assert all(not launch.backward for launch in res.kernels[0].launches)


def test_the_budget_cuts_the_farthest_first(gpu, monkeypatch):
    tree, ix = gpu
    _res, whole = run(get_tool("cuda_kernels"), ix, function_name="embedding")
    monkeypatch.setattr(budget, "BUDGET", len(whole.split("\n\nnext:")[0]) - 50)  # one section too many
    _res, text = run(get_tool("cuda_kernels"), ix, function_name="embedding")
    assert "## __global__ embedding_backward_feature_kernel  aten/src/ATen/native/cuda/Embedding.cu:" in text
    assert "## __global__ CatArrayBatchedCopy" not in text
    assert 'Cut: __global__ CatArrayBatchedCopy (1 launch lines); cuda_kernels("CatArrayBatchedCopy") shows it' in text


def test_trace_lists_a_kernels_gpu_lines_in_the_same_order(gpu):
    tree, ix = gpu
    # embedding_dense_backward_cuda: its own kernel is 4 calls down; index_select's, reached through the
    # dispatcher (at::index_select), are 3 calls down: walk order would list them first, nearness does not
    res, text = run(get_tool("trace"), ix, function_name="embedding_dense_backward")
    (cuda,) = [k for k in res.ops[0].kernels if k.entry.key == "CUDA"]
    assert [e.dst.label.split("::")[-1] for e in cuda.launches] == [
        "embedding_backward_feature_kernel", "indexSelectSmallIndex", "indexSelectLargeIndex"]
    lines = [ln for ln in text.splitlines() if ln.strip().startswith("CUDA kernel ")]
    assert lines[0].strip().startswith("CUDA kernel embedding_backward_feature_kernel:")
    _res, answer = run(get_tool("cuda_kernels"), ix, function_name="embedding_dense_backward")
    assert answer.index("embedding_backward_feature_kernel") < answer.index("indexSelect")


def test_the_limit_of_calls_through_the_dispatcher_is_a_cut_of_its_own(gpu):
    tree, ix = gpu
    # the nested kernel calls at::cat (its one call through the dispatcher), whose kernel calls at::index_select: a
    # second, kept as reached, not walked into; the cut says so in its own words (not a level's), at the op whose
    # calls were not followed, with the call that goes on from there
    (kernel,) = [e.dst for e in graph(ix).out(op_node(registry(ix).by_full["embedding"]), [EdgeKind.KERNEL])
                 if e.key == "NestedTensorCUDA"]
    reach = gpu_reach(ix, kernel)
    assert [launch.site.dst.label.split("::")[-1] for launch in reach.launches] == ["CatArrayBatchedCopy"]
    (cut,) = gpu_cuts(reach.cuts)
    assert (cut.kind, cut.at.key, cut.left, cut.limit) == (CutKind.HOPS, "cat", 1, 1)
    assert describe(cut) == ("1 op called through the dispatcher by ops themselves reached through the dispatcher "
                             "was not walked (e.g. the ones cat's code calls; the walk follows 1 call through the "
                             'dispatcher a chain); cuda_kernels("cat") goes further')
    # cuda_kernels("cat") goes on: index_select's kernels
    res, _text = run(get_tool("cuda_kernels"), ix, function_name="cat")
    assert {k.name for k in res.kernels} == {"CatArrayBatchedCopy", "indexSelectLargeIndex", "indexSelectSmallIndex"}


def test_the_formula_of_an_op_called_below_autograd_is_not_listed(tree):
    # Note [Backward of called ops]: embedding's CompositeExplicitAutograd kernel calls index_select below
    # embedding's autograd kernel, so index_select's formula (here: addmv, cuBLAS) never runs for embedding; it
    # runs for index_select itself
    formula = DERIVATIVES + """
- name: index_select(Tensor self, int dim, Tensor index) -> Tensor
  self: addmv(grad, grad, grad)
  index: non_differentiable
"""
    with closing(overlay_index(tree, OVERLAY, {"aten/src/ATen/native/native_functions.yaml": OPS,
                                               "tools/autograd/derivatives.yaml": formula})) as ix:
        res, _text = run(get_tool("cuda_kernels"), ix, function_name="index_select")
        assert [(lib.site.written, lib.backward) for lib in res.libraries] == [("at::cuda::blas::gemv", True)]
        res, text = run(get_tool("cuda_kernels"), ix, function_name="embedding")
        assert not res.libraries and "gemv" not in text and "flush_icache" not in text
        assert "embedding_backward_feature_kernel" in [k.name for k in res.kernels]  # its own formula still runs


def test_a_formula_that_calls_an_aten_helper_reaches_what_the_helper_calls(tree):
    # expand's formula is at::sum_to(grad, ...), a function of ExpandUtils.h (not an op, not FunctionsManual's):
    # the formula's BACKWARD edge goes to it, and the GPU walk below it finds the op it calls
    formula = DERIVATIVES + """
- name: cat(Tensor[] tensors, int dim=0) -> Tensor
  tensors: at::reduce_to(grad)
"""
    with closing(overlay_index(tree, OVERLAY, {"aten/src/ATen/native/native_functions.yaml": OPS,
                                               "tools/autograd/derivatives.yaml": formula})) as ix:
        cat = op_node(registry(ix).by_full["cat"])
        (edge,) = graph(ix).out(cat, [EdgeKind.BACKWARD])
        assert edge.dst.label == "at::reduce_to" and edge.dst.loc.path == "aten/src/ATen/ExpandUtils.h"
        res, _text = run(get_tool("cuda_kernels"), ix, function_name="cat")
        assert [(lib.site.written, lib.backward) for lib in res.libraries] == [("at::cuda::blas::gemv", True)]


RANKED_OPS = """
- func: mcat.out(Tensor self, *, Tensor(a!) out) -> Tensor(a!)
  dispatch:
    CPU, CUDA: mcat_out

- func: bucketize.Scalar(Scalar self, Tensor boundaries) -> Tensor
  dispatch:
    CUDA: bucketize_cuda
  autogen: bucketize.Scalar_out

- func: searchsorted.Scalar(Tensor sorted_sequence, Scalar self) -> Tensor
  dispatch:
    CUDA: searchsorted_cuda

- func: clamp(Tensor self, Scalar? min=None, Scalar? max=None) -> Tensor
  dispatch:
    CUDA: clamp_cuda

- func: hardtanh(Tensor self) -> Tensor
  dispatch:
    CUDA: hardtanh_cuda

- func: hardtanh_backward(Tensor grad_output, Tensor self) -> Tensor
  dispatch:
    CUDA: hardtanh_backward_cuda

- func: bernoulli.p(Tensor self, float p) -> Tensor
  dispatch:
    CompositeExplicitAutograd: bernoulli

- func: bernoulli_.float(Tensor(a!) self, float p) -> Tensor(a!)
  variants: method
  dispatch:
    CUDA: bernoulli_cuda_

- func: empty_like(Tensor self) -> Tensor
  dispatch:
    CUDA: empty_like_cuda

- func: reduce_dim(Tensor self, int dim) -> Tensor
  dispatch:
    CUDA: reduce_dim_cuda

- func: reduce_all(Tensor self) -> Tensor
  dispatch:
    CompositeExplicitAutograd: reduce_all

- func: trace2(Tensor self) -> Tensor
  dispatch:
    CUDA: trace2_cuda

- func: alloc_like(Tensor self) -> Tensor
  dispatch:
    CUDA: alloc_like_cuda

- func: fill_random(Tensor self) -> Tensor
  dispatch:
    CUDA: fill_random_cuda

- func: random_like(Tensor self) -> Tensor
  dispatch:
    CompositeExplicitAutograd: random_like

- func: mpow(Tensor self, int n) -> Tensor

- func: linalg_mpow(Tensor self, int n) -> Tensor

- func: mmul(Tensor self, Tensor other) -> Tensor

- func: mm2(Tensor self, Tensor other) -> Tensor
  dispatch:
    CUDA: mm2_cuda
"""

RANKED_DERIVATIVES = """
- name: hardtanh(Tensor self) -> Tensor
  self: hardtanh_backward(grad, self)
"""

# The kernel torchgen writes for an autogen'd out= variant (CompositeViewCopyKernels.cpp): the functional op, then
# the copy into out.
STAND_IN_TORCHGEN = '''
import os, sys
def main():
    out = sys.argv[sys.argv.index("-d") + 1]
    os.makedirs(out, exist_ok=True)
    with open(os.path.join(out, "CompositeViewCopyKernels.cpp"), "w") as f:
        f.write("""namespace at {
namespace native {
void copy_arg(const at::Tensor& dst, const at::Tensor& src) {
  dst.copy_(src);
}
at::Tensor & bucketize_Scalar_out(const at::Scalar & self, const at::Tensor & boundaries, at::Tensor & out) {
  auto tmp_output = at::_ops::bucketize_Scalar::call(self, boundaries);
  copy_arg(out, tmp_output);
  return out;
}
} // namespace native
} // namespace at
""")
'''


@pytest.fixture
def ranked(tree):
    (tree / "torchgen").mkdir()
    (tree / "torchgen/__init__.py").write_text("")
    (tree / "torchgen/gen.py").write_text(STAND_IN_TORCHGEN)
    with closing(overlay_index(tree, OVERLAY, {"aten/src/ATen/native/native_functions.yaml": RANKED_OPS,
                                               "tools/autograd/derivatives.yaml": RANKED_DERIVATIVES},
                               codegen=True)) as ix:
        yield tree, ix


def test_an_autogen_variants_copy_into_out_is_another_ops_code_one_op_away(ranked):
    """bucketize.Scalar_out is torchgen's: it runs bucketize.Scalar and copies the result into out. The copy is
    copy_'s code one op away, so it ties with searchsorted's kernel (bucketize_cuda calls searchsorted_cuda) and
    is farther by calls; before, it was no crossing and led the answer (cudaMemcpyAsync, copy_'s code)."""
    _tree, ix = ranked
    res, text = run(get_tool("cuda_kernels"), ix, function_name="bucketize")
    (lib,) = res.libraries
    assert (lib.site.written, lib.via, lib.hops) == ("cudaMemcpyAsync", "copy_", 1)
    assert [e.src.key for e in lib.chain[:1]] == ["bucketize.Scalar_out"]
    assert text.splitlines()[1].startswith(
        "Nearest first: __global__ searchsorted_cuda_kernel  aten/src/ATen/native/cuda/Bucketization.cu:5 "
        "(searchsorted's code, 1 op away)"), text


def test_the_forward_leads_the_backward_whatever_it_crosses(ranked):
    """hardtanh runs clamp's kernel (its CUDA kernel calls at::clamp: one op away); autograd runs its formula's
    hardtanh_backward, no crossing. A call of hardtanh runs the first: it leads."""
    _tree, ix = ranked
    res, text = run(get_tool("cuda_kernels"), ix, function_name="hardtanh")
    assert [k.name for k in res.kernels] == ["clamp_kernel", "hardtanh_backward_kernel"], text
    fwd, back = res.kernels[0].launches[0], res.kernels[1].launches[0]
    assert (fwd.via, fwd.hops, fwd.backward) == ("clamp", 1, False)
    assert (back.via, back.hops, back.backward) == ("hardtanh_backward", 0, True)
    assert near(fwd) < near(back)


def test_the_ops_own_code_leads_another_ops_at_the_same_crossings(ranked):
    """bernoulli.p's composite kernel calls empty_like (another op's code, no crossing: a composite runs as the ops
    it calls) and bernoulli_ (its own variant), whose kernel launches one call deeper than empty_like's allocation:
    the op's own kernel leads all the same."""
    _tree, ix = ranked
    res, text = run(get_tool("cuda_kernels"), ix, function_name="bernoulli")
    (lib,) = res.libraries
    (kernel,) = res.kernels
    own = kernel.launches[0]
    assert (lib.site.written, lib.via, lib.hops) == ("cudaMalloc", "empty_like", 0)
    assert (kernel.name, own.via, own.hops) == ("bernoulli_kernel", "", 0)
    assert len(lib.chain) < len(own.chain) and near(own) < near(lib)
    assert text.splitlines()[1].startswith("Nearest first: __global__ bernoulli_kernel  "), text


def test_a_composite_kernels_own_calls_through_the_dispatcher_are_no_second_crossing(ranked):
    """trace2's CUDA kernel calls reduce_all through the dispatcher (its one crossing); reduce_all's composite kernel
    runs as the op it calls, reduce_dim, whose kernel launches: reached, reduce_dim's code one op away. Before, the
    composite's call was a second crossing: a cut, and no kernel."""
    _tree, ix = ranked
    res, text = run(get_tool("cuda_kernels"), ix, function_name="trace2")
    assert [k.name for k in res.kernels] == ["reduce_kernel"], text
    assert [lib.site.written for lib in res.libraries] == ["cudaMemsetAsync"]
    launch = res.kernels[0].launches[0]
    assert (launch.via, launch.hops) == ("reduce_dim", 1), text


def test_a_composite_kernels_code_includes_the_helpers_it_calls_directly(ranked):
    """mpow's composite kernel calls linalg_mpow's composite kernel directly, whose helper calls mmul through the
    dispatcher, whose composite kernel's helper calls mm2: no op boundary on the way, as the op runs as the ops its
    composite kernels' code calls (before, the calls from helpers were crossings: mm2 was a second one, a cut, and
    its cuBLAS call was not reached). The answer names whose code the call is: mm2's, the op whose own kernel makes
    it. The CUDA runtime's copy in copy_'s code (for n == 0) is housekeeping: it no longer leads."""
    _tree, ix = ranked
    res, text = run(get_tool("cuda_kernels"), ix, function_name="mpow")
    libs = {lib.site.written: lib for lib in res.libraries}
    gemm = libs["at::cuda::blas::gemm"]
    assert (gemm.via, gemm.hops) == ("mm2", 0), text
    assert (libs["cudaMemcpyAsync"].via, libs["cudaMemcpyAsync"].hops) == ("copy_", 0), text
    assert len(gemm.chain) > len(libs["cudaMemcpyAsync"].chain)  # fewer calls alone would put the copy first
    assert text.splitlines()[1].startswith("Nearest first: cuBLAS: at::cuda::blas::gemm at "), text
    assert not [c for c in res.cuts if c.kind is CutKind.HOPS], text


def test_a_librarys_handle_setup_comes_after_its_work(ranked):
    """mm2's kernel sets the cuBLAS handle's stream, then calls gemm: the same calls away, and first in the body;
    the set-up is housekeeping (model/cuda.py is_setup: a C API's Set/Get/Create/Destroy), so gemm leads."""
    _tree, ix = ranked
    res, text = run(get_tool("cuda_kernels"), ix, function_name="mm2")
    assert [lib.site.written for lib in res.libraries] == ["at::cuda::blas::gemm", "cublasSetStream"], text
    assert text.splitlines()[1].startswith("Nearest first: cuBLAS: at::cuda::blas::gemm at "), text


def test_device_work_leads_the_caching_allocator(ranked):
    """random_like's composite kernel allocates with alloc_like (its kernel calls the caching allocator: one call
    down) and fills with fill_random (its kernel launches two calls down): the launch leads, the allocation after."""
    _tree, ix = ranked
    res, text = run(get_tool("cuda_kernels"), ix, function_name="random_like")
    (lib,) = res.libraries
    (kernel,) = res.kernels
    assert lib.library == "CUDA caching allocator" and len(lib.chain) < len(kernel.launches[0].chain)
    assert text.splitlines()[1].startswith("Nearest first: __global__ fill_random_kernel  "), text


def test_trace_lists_a_kernels_library_calls_with_its_launches_nearest_first(ranked):
    """trace's GPU lines are cuda_kernels' order for the kernel: mpow's composite kernel reaches mm2's cuBLAS call
    (before, trace listed launches only: mm's CUDA kernel showed TunableOp's and the epilogue's kernels, never its
    gemm), named as mm2's code, and the copy in copy_'s code after it (housekeeping)."""
    tree, ix = ranked
    res, text = run(get_tool("trace"), ix, function_name="mpow")
    (kernel,) = res.ops[0].kernels
    assert [(g.library, g.site.written, g.via) for g in kernel.gpu] == [
        ("cuBLAS", "at::cuda::blas::gemm", "mm2"), ("CUDA runtime", "cudaMemcpyAsync", "copy_"),
        ("cuBLAS", "cublasSetStream", "mm2")]  # housekeeping both, the copy fewer calls away
    line = line_of(tree, "aten/src/ATen/native/cuda/Blas.cpp", "at::cuda::blas::gemm<float>")
    assert (f"    cuBLAS: at::cuda::blas::gemm at aten/src/ATen/native/cuda/Blas.cpp:{line} by at::native::mm2_cuda"
            "  (mm2's code)\n") in text
    assert not kernel.launches  # the LAUNCH edges alone, as before


def test_trace_lists_a_kernel_launched_at_several_lines_on_one_line(ranked):
    """reduce_dim's CUDA kernel launches reduce_kernel at two lines: one GPU line names both, each as path:line."""
    tree, ix = ranked
    _res, text = run(get_tool("trace"), ix, function_name="reduce_dim")
    path = "aten/src/ATen/native/cuda/Reduce.cu"
    first, second = line_of(tree, path, "reduce_kernel<<<1, 1>>>"), line_of(tree, path, "reduce_kernel<<<2, 1>>>")
    lines = [ln for ln in text.splitlines() if ln.strip().startswith("CUDA kernel reduce_kernel:")]
    assert len(lines) == 1 and f"launched <<<>>> at {path}:{first}, {path}:{second} by at::native::reduce_dim_cuda" \
        in lines[0], text


def test_trace_lists_a_cpu_and_cuda_kernels_own_gpu_work_first_each_kernel_once(ranked):
    """mcat_out serves CPU and CUDA: its GPU lines rank its own stub kernel's launches before copy_'s code (ranked
    under the first key, CPU, its own code counted as a layout variant and went last), and the two kernels one
    macro use launches are two lines (one line per launch site kept one of them)."""
    tree, ix = ranked
    res, _text = run(get_tool("trace"), ix, function_name="mcat.out")
    (kernel,) = {k.entry.kernel: k for k in res.ops[0].kernels}.values()
    assert [(g.site.dst.label.split("::")[-1].split("(")[0], g.via) for g in kernel.gpu] == [
        ("mcat_small", ""), ("mcat_large", ""), ("cudaMemcpyAsync", "copy_")]
    line = line_of(tree, "aten/src/ATen/native/cuda/MCat.cu", "  LAUNCH_BOTH(float)")
    assert {(g.site.site.path, g.site.site.line) for g in kernel.gpu[:2]} == {("aten/src/ATen/native/cuda/MCat.cu",
                                                                               line)}
