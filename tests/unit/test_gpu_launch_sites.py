"""How launch sites reach __global__ kernels in cuda_kernels' answers, on a fixture tree.

tests/fixtures/tree_gpu_reach (over tests/fixtures/tree) keeps the shapes of PyTorch's code that hid kernels
from the GPU walk: a kernel launched through a local variable it was given (DistanceKernel.cu's
``impl_fptr<<<>>>``, flash attention's ``auto kernel = &flash_fwd_kernel<...>; kernel<<<>>>``), a launch reached
through temporary functors called in place (ScatterGatherKernel.cu), and a launcher object handed to a template
that calls a method on it (Sort.cu's ``sortCommon(SmallBitonicSort{}, ...)``, Sorting.cu's ``run_launcher(...,
KthValueLauncher(k))``), and a kernel launched through a parameter of a lambda that helpers call with each kernel
(memory-efficient attention's ``kernel_fn<<<>>>``). Each kernel is named with the line of its launch.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from torchtalk.tools import get_tool, run

from ..conftest import indexed_with, line_of, overlay_index

OVERLAY = Path(__file__).parents[1] / "fixtures" / "tree_gpu_reach"
CUDA = "aten/src/ATen/native/cuda"
OPS = "".join(f"""
- func: {op}(Tensor self) -> Tensor
  dispatch:
    CUDA: {fn}
""" for op, fn in (("_cdist_forward", "_cdist_forward"), ("_flash_forward", "_flash_forward"),
                   ("_flash_backward", "_flash_backward"),
                   ("gather_fx", "gather_cuda"), ("sort_kv", "sort_kv_cuda"), ("kthvalue_fx", "kthvalue_cuda"),
                   ("median_fx", "median_cuda"), ("_mem_eff_forward", "_mem_eff_forward")))


@pytest.fixture
def reach(tree):
    ix = overlay_index(tree, OVERLAY, {"aten/src/ATen/native/native_functions.yaml": OPS})
    yield tree, ix
    ix.close()


def _launched(ix, op: str) -> set[tuple[str, str, int]]:
    res, _text = run(get_tool("cuda_kernels"), ix, function_name=op)
    return {(k.name, la.site.site.path, la.site.site.line) for k in res.kernels for la in k.launches}


def test_a_kernel_held_in_a_local_variable_is_launched_where_the_variable_is(reach):
    tree, ix = reach
    cu = f"{CUDA}/DistanceKernel.cu"
    # both kernels the variable is given (the branch's too), at the launch's line; never one a comment names
    assert _launched(ix, "_cdist_forward") == {
        ("cdist_kernel_cuda_impl", cu, line_of(tree, cu, "impl_fptr<<<"))}
    hdr = f"{CUDA}/flash_fwd_launch_template.h"
    assert _launched(ix, "_flash_forward") == {("flash_fwd_kernel", hdr, line_of(tree, hdr, "  kernel<<<"))}
    res, text = run(get_tool("cuda_kernels"), ix, function_name="_flash_forward")
    # the library's entry point is named; the library calls inside its code are not listed again
    assert [(lib.library, lib.site.written) for lib in res.libraries] == [("FlashAttention", "pytorch_flash::mha_fwd")]
    assert "cublasSgemm" not in text
    # a function's address held in a local variable that is called: auto launch = &run_mha_bwd; launch(q, false)
    launch = line_of(tree, hdr, "flash_bwd_kernel<int><<<")
    assert _launched(ix, "_flash_backward") == {("flash_bwd_kernel", hdr, launch)}


def test_a_launch_behind_temporary_functors_called_in_place(reach):
    tree, ix = reach
    cu = f"{CUDA}/ScatterGatherKernel.cu"
    assert _launched(ix, "gather_fx") == {
        ("_scatter_gather_elementwise_kernel", cu, line_of(tree, cu, "_scatter_gather_elementwise_kernel<nt, vt"))}


def test_a_method_of_a_launcher_object_handed_to_a_template(reach):
    tree, ix = reach
    cu = f"{CUDA}/Sort.cu"
    assert _launched(ix, "sort_kv") == {
        ("bitonicSortKVInPlace", cu, line_of(tree, cu, "bitonicSortKVInPlace<K><<<")),
        ("radixSortKVInPlace", cu, line_of(tree, cu, "radixSortKVInPlace<K><<<"))}
    # run_launcher (a header) calls l.launch: the launcher kthvalue's code hands it, not median's
    cu = f"{CUDA}/Sorting.cu"
    assert _launched(ix, "kthvalue_fx") == {("gatherKthValue", cu, line_of(tree, cu, "gatherKthValue<scalar_t"))}
    assert _launched(ix, "median_fx") == {("gatherMedian", cu, line_of(tree, cu, "gatherMedian<scalar_t"))}


def test_called_by_a_handed_objects_method_names_the_call_that_hands_it(reach):
    tree, ix = reach
    res, _text = run(get_tool("called_by"), ix, function_name="KthValueLauncher::launch")
    cu = f"{CUDA}/Sorting.cu"
    sites = {(e.src.label, e.site.line) for sec in res.sections for e in sec.callers}
    assert sites == {("at::native::launch_kthvalue_kernel", line_of(tree, cu, "KthValueLauncher(k));"))}


def test_impact_of_a_kernel_walks_up_its_launches(reach):
    """impact walks the edges called_by shows: a __global__ kernel's launch sites, then their callers and ops; a
    qualified name finds it without its unnamed namespace, as C++ code names it."""
    tree, ix = reach
    res, text = run(get_tool("impact"), ix, function_name="at::native::KthValueLauncher::launch", depth=1)
    assert "No C++ function" not in text
    res, text = run(get_tool("impact"), ix, function_name="gatherKthValue", depth=3)
    cu = f"{CUDA}/Sorting.cu"
    (sec,) = res.sections
    first = {(e.src.label, e.site.line) for e in sec.levels[0].callers}
    launch = line_of(tree, cu, "gatherKthValue<scalar_t")
    assert first == {("at::native::(anonymous)::KthValueLauncher::launch", launch)}
    assert "- level 1: 1 caller (1 kernel launches)" in text and f"[launch at {cu}:" in text
    assert "kthvalue_fx" in {op.key for op, _e, _d in sec.ops}, text


def test_a_stub_passed_on_to_a_helper_leads_down_to_its_cuda_kernel(reach):
    # TORCH_IMPL_FUNC(cumsum_out) hands cumsum_stub to impl_func_cum_ops, which calls it by its parameter's name:
    # the walk down finds the stub in the text (as called_by does going up) and reaches its CUDA registration
    tree, ix = reach
    cu = f"{CUDA}/ScanKernels.cu"
    assert _launched(ix, "cumsum") == {
        ("tensor_kernel_scan_innermost_dim", cu, line_of(tree, cu, "tensor_kernel_scan_innermost_dim<scalar_t><<<"))}


def test_kernels_handed_to_a_launching_lambda(reach):
    """Note [Kernels handed to a launching lambda]: ``kernel_fn<<<>>>`` in ``launchKernel``, handed to
    dispatch_cutlassF, which passes it on to the per-arch helpers calling ``cb(AttentionKernel<...>(), kernel)``."""
    tree, ix = reach
    cu = "aten/src/ATen/native/transformers/cuda/attention.cu"
    launch = line_of(tree, cu, "kernel_fn<<<")
    # every kernel a helper hands it (the argument in kernel_fn's place, not AttentionKernel<...>()); never a
    # kernel only a comment names
    assert _launched(ix, "_mem_eff_forward") == {
        ("fmha_cutlassF_f32_aligned_64x64_rf_sm80", cu, launch),
        ("fmha_cutlassF_f32_aligned_32x128_gmem_sm80", cu, launch),
        ("fmha_cutlassF_f16_aligned_64x64_rf_sm50", cu, launch)}
    res, text = run(get_tool("cuda_kernels"), ix, function_name="_mem_eff_forward")
    # the definitions, not the generated header's declarations
    assert {d.path.rsplit("/", 1)[-1] for k in res.kernels for d in k.definitions} == {
        "cutlassF_f32_aligned.cu", "cutlassF_f16_aligned.cu"}
    # kernels sharing their one launch site are one section of the text, led by it
    head = f"## 3 __global__ kernels launched at {cu}:{launch} by at::native::_mem_eff_forward"
    assert head in text and text.count("## ") == 1
    assert f"Nearest first: 3 __global__ kernels launched at {cu}:{launch}" in text
    assert all(f"- __global__ {k.name}  " in text for k in res.kernels)
    # and back: the launch is among each kernel's callers
    _res, text = run(get_tool("called_by"), ix, function_name="fmha_cutlassF_f16_aligned_64x64_rf_sm50")
    assert f"at::native::_mem_eff_forward  {cu}:" in text and f"[call at {cu}:{launch}]" in text
    _res, text = run(get_tool("called_by"), ix, function_name="fmha_decoy_in_a_comment")
    assert "_mem_eff_forward" not in text


def test_a_kernel_launched_elsewhere_too_keeps_its_own_section():
    """Kernels whose only launch is one shared site are one section; a kernel launched there and at another site
    is not in that group, and keeps its section (it was left out of the text when its first launch was the
    shared site)."""
    from torchtalk.graph.gpu import KernelLaunch
    from torchtalk.model import Edge, EdgeKind, Loc, Node, NodeKind
    from torchtalk.query.cuda import CudaKernelsResult, GpuKernel
    from torchtalk.render.cuda import render_cuda

    fn = Node(NodeKind.CPP_FUNCTION, "1", "at::native::attn", Loc("attention.cu", 5))

    def launch(kernel: str, line: int) -> KernelLaunch:
        return KernelLaunch(Edge(fn, Node(NodeKind.GPU_KERNEL, kernel, kernel), EdgeKind.LAUNCH,
                                 Loc("attention.cu", line)), [], False)

    kernels = [GpuKernel(f"k{i}", Node(NodeKind.GPU_KERNEL, f"k{i}", f"k{i}"), [], [launch(f"k{i}", 9)])
               for i in range(3)]
    both = GpuKernel("k_both", Node(NodeKind.GPU_KERNEL, "k_both", "k_both"), [],
                     [launch("k_both", 9), launch("k_both", 20)])
    text = render_cuda(CudaKernelsResult("attn", "function attn", [*kernels, both], []))
    assert "## 3 __global__ kernels launched at attention.cu:9" in text
    assert "## __global__ k_both" in text and "launched at attention.cu:20" in text


def test_calls_lists_the_template_called_then_the_method_it_runs_on_the_object_handed(reach):
    """run_launcher(..., KthValueLauncher(k)) calls run_launcher, which runs KthValueLauncher::launch: two lines, the
    call first (before: launch was listed as the call, with run_launcher one of '+1 candidates')."""
    tree, ix = reach
    res, text = run(get_tool("calls"), ix, function_name="launch_kthvalue_kernel")
    cu = f"{CUDA}/Sorting.cu"
    line = line_of(tree, cu, "KthValueLauncher(k));")
    rows = [ln for ln in text.splitlines() if f"{cu}:{line}" in ln and ("run_launcher " in ln or "::launch " in ln)]
    assert len(rows) == 2 and "candidates" not in text, text
    assert rows[0].startswith("- at::native::run_launcher ") and rows[0].endswith(f"[called at {cu}:{line}]")
    assert "KthValueLauncher::launch" in rows[1] and f"[run by run_launcher, which the call at {cu}:{line} hands" \
        in rows[1]


def test_a_name_of_cpu_and_cuda_code_means_its_cuda_definition_and_says_so(tree):
    """Note [A name of CPU and CUDA code] (query/cuda.py): cuda_kernels('GroupNormKernelImpl') answered from
    cpu/group_norm_kernel.cpp's definition (no launch) and never said cuda/group_norm_kernel.cu has one."""
    with indexed_with(tree, {
        "aten/src/ATen/native/cpu/norm_kernel.cpp": "namespace at::native {\nnamespace {\n"
                                                    "void NormKernelImpl(const Tensor& x) {}\n}\n}\n",
        "aten/src/ATen/native/cuda/norm_kernel.cu": "namespace at::native {\nnamespace {\n"
                                                    "__global__ void norm_cuda_kernel(float* y) {}\n"
                                                    "void NormKernelImpl(const Tensor& x) {\n"
                                                    "  norm_cuda_kernel<<<1, 1>>>(nullptr);\n}\n}\n}\n"}) as ix:
        res, text = run(get_tool("cuda_kernels"), ix, function_name="NormKernelImpl")
        assert [k.name for k in res.kernels] == ["norm_cuda_kernel"], text
        assert "aten/src/ATen/native/cuda/norm_kernel.cu:4" in res.matched
        assert ("'NormKernelImpl' names 2 functions; this answer walks its CUDA definitions "
                "(aten/src/ATen/native/cuda/norm_kernel.cu:4), not aten/src/ATen/native/cpu/norm_kernel.cpp:3: "
                'cuda_kernels("aten/src/ATen/native/cpu/norm_kernel.cpp:3") asks about another') in text, text



def test_a_kernel_declared_in_a_header_and_defined_elsewhere_is_one_kernel(tree):
    # cutlassB.h declares 209 fmha_ kernels that .cu files define: asked by name, each answered '2 __global__ kernels'
    with indexed_with(tree, {
        "aten/src/ATen/native/cuda/kernels/decl.h": "__global__ void fmha_like_kernel(float* p);\n",
        "aten/src/ATen/native/cuda/kernels/fmha_like.cu": "#include \"decl.h\"\n"
                                                          "__global__ void fmha_like_kernel(float* p) {}\n"
                                                          "void run_it() {\n"
                                                          "  fmha_like_kernel<<<1, 1>>>(nullptr);\n}\n"}) as ix:
        res, text = run(get_tool("cuda_kernels"), ix, function_name="fmha_like_kernel")
        assert [(k.name, [d.line for d in k.definitions]) for k in res.kernels] == [("fmha_like_kernel", [2])], text
        assert text.startswith("# GPU kernels for fmha_like_kernel (kernel name): 1 __global__ kernels"), text
