"""GPU answers on the real PyTorch 2.6.0 tree: launches written through same-file macros, and the code torchgen
writes for ufunc ops (set TORCHTALK_TEST_SOURCE; .ci/run does). benchmarks/bench_cuda_census.py measures the
whole tree; these pin the mechanisms on the cases that showed them."""

import pytest

from torchtalk.tools import get_tool, run

pytestmark = pytest.mark.integration

TOPK = "aten/src/ATen/native/cuda/TensorTopK.cu"


def test_topk_reaches_its_kernels_through_the_macros_defined_inside_its_launcher(real_index):
    # launch_gather_topk_kernel #defines RUN_K / RUN_MB / RUN_DIM / RUN_T in its body and calls mbtopk::launch and
    # sbtopk::launch only through them, at the RUN_T(uint32_t) and RUN_T(uint64_t) lines.
    res, _ = run(get_tool("cuda_kernels"), real_index, function_name="topk")
    launched = {(k.name, launch.site.src.label) for k in res.kernels for launch in k.launches}
    assert {("gatherTopK", "at::native::mbtopk::launch"), ("gatherTopK", "at::native::sbtopk::launch"),
            ("radixFindKthValues", "at::native::mbtopk::launch")} <= launched
    chains = {tuple(e.dst.label for e in launch.chain) for k in res.kernels for launch in k.launches}
    assert ("TORCH_IMPL_FUNC(topk_out_cuda)", "at::native::launch_gather_topk_kernel", "at::native::sbtopk::launch") \
        in chains
    res, _ = run(get_tool("called_by"), real_index, function_name="at::native::sbtopk::launch")
    sites = [(e.src.label, e.site.path, e.site.line) for e in res.sections[0].callers]
    assert sites == [("at::native::launch_gather_topk_kernel", TOPK, 897),
                     ("at::native::launch_gather_topk_kernel", TOPK, 899)]  # once per use, not per expansion


def test_a_launch_in_an_object_like_macro_is_seen_where_the_macro_is_used(real_index):
    # DepthwiseConv3d.cu: DWCONV3D_FORWARD_DISPATCH_OTHERS holds the generic launch, used bare at line 454.
    res, _ = run(get_tool("calls"), real_index, function_name="conv_depthwise3d_cuda")
    lines = {e.site.line for e in res.sections[0].launches if e.dst.label.endswith("conv_depthwise3d_cuda_kernel")}
    assert lines == {452, 453, 454}


def test_add_shows_the_dense_path_torchgen_writes_from_its_ufunc_loop(real_index):
    res, text = run(get_tool("trace"), real_index, function_name="add.out")
    cuda = next(k for k in res.ops[0].kernels if k.entry.key == "CUDA")
    assert cuda.entry.kernel == "ufunc_add_CUDA" and "ufunc_inner_loop" in cuda.entry.via
    assert [(d.path, d.kind.value) for d in cuda.definitions] == [("<generated>/aten/src/ATen/UfuncCUDA_add.cu",
                                                                    "impl_func")]
    assert "CUDA gpu_kernel(CUDAFunctor_add) at <generated>/aten/src/ATen/UfuncCUDA_add.cu:" in text
    cpu = next(k for k in res.ops[0].kernels if k.entry.key == "CPU")
    assert [d.path for d in cpu.definitions] == ["<generated>/aten/src/ATen/UfuncCPU_add.cpp"]
    assert ("CPU", "at::native::(anonymous)::add_kernel") in [(k.key, k.dst.label) for st in cpu.stubs
                                                              for k in st.kernels]  # UfuncCPUKernel_add.cpp
    res, text = run(get_tool("cuda_kernels"), real_index, function_name="add")
    helpers = {(h.site.src.label, h.site.site.path, h.site.dst.label) for h in res.helpers}
    assert ("at::native::add_kernel", "<generated>/aten/src/ATen/UfuncCUDA_add.cu", "gpu_kernel(CUDAFunctor_add)") \
        in helpers


def test_embedding_names_its_own_backward_kernels_before_any_cut(real_index):
    # derivatives.yaml: embedding's formula calls embedding_backward (a composite), which runs as
    # embedding_dense_backward, whose CUDA kernel launches embedding_backward_feature_kernel (Embedding.cu:48): the
    # op's own backward, after its forward (its composite kernel runs as index_select) and before cat's kernels
    # (its NestedTensorCUDA kernel's at::cat) and index_select's own backward (index_add's kernels).
    _res, text = run(get_tool("cuda_kernels"), real_index, function_name="embedding")
    lead = text.split("\nCut:", 1)[0]
    assert "## __global__ embedding_backward_feature_kernel  aten/src/ATen/native/cuda/Embedding.cu:48" in lead
    assert text.splitlines()[1].startswith("Nearest first: __global__ indexSelect")
    before = lead.split("embedding_backward_feature_kernel", 1)[0]
    assert "CatArrayBatchedCopy" not in before and "indexFuncLargeIndex" not in before


def test_mm_names_its_cublas_call_and_no_rocm_only_kernel(real_index):
    # mm_out_cuda -> addmm_out_cuda_impl calls at::cuda::blas::gemm (Blas.cpp:461) three calls from the op; TunableOp's
    # flush_icache_kernel, eight calls away (launchTunableGemmAndBias -> TunableOp::FindFastest -> ... flush_icache), is
    # launched under Sleep.cu's #ifdef USE_ROCM: no CUDA build runs it (Note [ROCm-only code])
    _res, text = run(get_tool("cuda_kernels"), real_index, function_name="mm")
    assert text.splitlines()[1].startswith("Nearest first: cuBLAS: at::cuda::blas::gemm")
    assert "cuBLAS: at::cuda::blas::gemm at aten/src/ATen/native/cuda/Blas.cpp:461" in text
    assert "flush_icache_kernel" not in text
