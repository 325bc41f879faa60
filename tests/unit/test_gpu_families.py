"""Launch families and GPU libraries in cuda_kernels' answers, on a fixture tree.

tests/fixtures/tree_gpu (over tests/fixtures/tree) holds cut-down copies of PyTorch's launch families
(Loops.cuh / CUDALoops.cuh, Reduce.cuh, MultiTensorApply.cuh) and calls into cuBLAS and CUB. A call to a
family names the device code passed at the call site (a lambda's line, a functor class) and the __global__
templates the family's own body launches; a library call is named with its site; a launch reached through a
direct call into another op's kernel says whose code it is.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from torchtalk.graph.gpu_families import library_edges
from torchtalk.model import Edge, EdgeKind, Node, NodeKind
from torchtalk.model.cuda import library_match, library_of
from torchtalk.tools import get_tool, run

from ..conftest import indexed_with, line_of, overlay_index

OVERLAY = Path(__file__).parents[1] / "fixtures" / "tree_gpu"
CUDA = "aten/src/ATen/native/cuda"
OPS = """
- func: nansum(Tensor self) -> Tensor
  dispatch:
    CUDA: nansum_cuda

- func: logaddexp(Tensor self, Tensor other) -> Tensor
  dispatch:
    CUDA: logaddexp_cuda

- func: _fused_adamw_(Tensor(a!)[] self, Tensor(b!)[] grads, float lr) -> ()
  dispatch:
    CUDA: _fused_adamw_kernel_cuda_

- func: nansum_backward(Tensor grad, Tensor self) -> Tensor
  dispatch:
    CompositeImplicitAutograd: nansum_backward

- func: bmm(Tensor self, Tensor mat2) -> Tensor
  dispatch:
    CUDA: bmm_cuda
"""

DERIVATIVES = """
- name: nansum(Tensor self) -> Tensor
  self: nansum_backward(grad, self)
"""


@pytest.fixture
def gpu(tree):
    ix = overlay_index(tree, OVERLAY, {"aten/src/ATen/native/native_functions.yaml": OPS,
                                       "tools/autograd/derivatives.yaml": DERIVATIVES})
    yield tree, ix
    ix.close()


def test_gpu_kernel_names_its_lambda_and_the_cudaloops_templates(gpu):
    tree, ix = gpu
    res, text = run(get_tool("cuda_kernels"), ix, function_name="logaddexp")
    (h,) = res.helpers
    lam = line_of(tree, f"{CUDA}/LogAddExpKernel.cu", "gpu_kernel(iter, [] GPU_LAMBDA")
    assert (h.site.written, h.site.site.line, h.functor.line) == ("gpu_kernel", lam, lam)
    loops = f"{CUDA}/CUDALoops.cuh"
    assert {(t.name, t.defined.path, t.defined.line, t.launched.line) for t in h.templates} == {
        ("vectorized_elementwise_kernel", loops, line_of(tree, loops, "void vectorized_elementwise_kernel("),
         line_of(tree, loops, "vectorized_elementwise_kernel<4, func_t, array_t><<<")),
        ("elementwise_kernel", loops, line_of(tree, loops, "void elementwise_kernel("),
         line_of(tree, loops, "elementwise_kernel<nt, vt, func_t><<<")),
    }
    assert f"vectorized_elementwise_kernel {loops}:" in text and "Launch families" in text


def test_a_temporary_functor_leads_to_gpu_reduce_kernel_and_reduce_kernel(gpu):
    tree, ix = gpu
    res, text = run(get_tool("cuda_kernels"), ix, function_name="nansum")
    h, back = res.helpers
    cu = f"{CUDA}/ReduceSumProdKernel.cu"
    assert h.site.written == "gpu_reduce_kernel" and h.site.src.label.endswith("nansum_functor::operator()")
    assert h.functor.path == cu and h.functor.line == line_of(tree, cu, "[] GPU_LAMBDA(acc_t a, acc_t b)")
    assert [(t.name, t.defined.line) for t in h.templates] == [
        ("reduce_kernel", line_of(tree, f"{CUDA}/Reduce.cuh", "void reduce_kernel(R reduction)"))]
    assert f"reduce_kernel {CUDA}/Reduce.cuh:" in text


def test_multi_tensor_apply_names_the_functor_class(gpu):
    tree, ix = gpu
    res, text = run(get_tool("cuda_kernels"), ix, function_name="_fused_adamw_")
    (h,) = res.helpers
    utils = f"{CUDA}/fused_adam_utils.cuh"
    assert h.site.dst.label == "multi_tensor_apply(FusedAdamMathFunctor)"
    assert (h.functor.path, h.functor.line) == (utils, line_of(tree, utils, "struct FusedAdamMathFunctor"))
    assert [t.name for t in h.templates] == ["multi_tensor_apply_kernel"]
    assert f"multi_tensor_apply(FusedAdamMathFunctor {utils}:{h.functor.line}) at {CUDA}/FusedAdamWKernel.cu:" in text


def test_library_calls_are_named_with_their_site_and_other_ops_code_is_marked(gpu):
    tree, ix = gpu
    res, text = run(get_tool("cuda_kernels"), ix, function_name="bmm")
    blas = f"{CUDA}/Blas.cpp"
    got = [(lib.library, lib.site.site.path, lib.site.site.line) for lib in res.libraries]
    assert got == [("cuBLAS", blas, line_of(tree, blas, "at::cuda::blas::gemm<float>")),
                   ("CUB", blas, line_of(tree, blas, "at::cuda::cub::inclusive_sum"))]
    # the walk stops at the library's entry point: cublasSgemm inside CUDABlas.cpp is not listed again
    assert "cublasSgemm" not in text and "- cuBLAS: at::cuda::blas::gemm" in text
    # logaddexp_cuda is another op's kernel, called directly: its launch is listed as that op's code
    (h,) = res.helpers
    assert h.via == "logaddexp" and "(logaddexp's code)" in text
    assert "No <<<>>> launch" not in text


def test_library_table():
    assert [library_of(n) for n in ("at::cuda::blas::gemm", "cublasLtMatmul", "cusolverDnXgeqrf", "magma_dgesv",
                                    "cufftExecC2C", "cudnnConvolutionForward", "cudnn_is_acceptable",
                                    "thrust::sort", "cub::DeviceScan::InclusiveSum", "at::native::cpublas::gemm")] == [
        "cuBLAS", "cuBLASLt", "cuSOLVER", "MAGMA", "cuFFT", "cuDNN", None, "Thrust", "CUB", None]
    # MAGMA's BLAS (BatchLinearAlgebra.cpp's magmablas_dtrsm_batched, triangular_solve's batched path)
    assert library_of("magmablas_dtrsm_batched") == "MAGMA"


def test_thrusts_helpers_are_no_device_work_and_a_c_api_match_says_so():
    """thrust::sort_by_key is work; the iterators, pointers, policies and tuples given to it are not. A C API prefix
    match (magma_int_cast) is told apart from a namespace's (at::cuda::blas::): library_edges drops the first when
    the tree defines the function (PyTorch's helper, not MAGMA's)."""
    assert [library_of(n) for n in ("thrust::sort_by_key", "thrust::make_counting_iterator", "thrust::device_ptr",
                                    "thrust::cuda::par(allocator).on", "thrust::get", "thrust::tuple")] == [
        "Thrust", None, None, None, None, None]
    assert library_match("magma_int_cast") == ("MAGMA", True)
    assert library_match("at::cuda::blas::gemm") == ("cuBLAS", False)
    src, defined = (Node(NodeKind.CPP_FUNCTION, str(i), label, None) for i, label in (
        (1, "at::native::f"), (2, "magma_int_cast")))
    edges = [Edge(src, defined, EdgeKind.CALL, None, written="magma_int_cast"),
             Edge(src, Node(NodeKind.UNRESOLVED, "magma_dgesv_gpu", "magma_dgesv_gpu", None), EdgeKind.UNRESOLVED,
                  None, written="magma_dgesv_gpu")]
    assert [(lib, e.written) for lib, e in library_edges(edges)] == [("MAGMA", "magma_dgesv_gpu")]


def test_the_backward_follows_the_formulas_ops_through_composites_and_the_dispatcher(gpu):
    tree, ix = gpu
    res, text = run(get_tool("cuda_kernels"), ix, function_name="nansum")
    back = res.helpers[-1]  # forward first
    formula = line_of(tree, "tools/autograd/derivatives.yaml", "self: nansum_backward(grad, self)")
    # nansum's formula calls nansum_backward, a composite op whose kernel calls at::logaddexp: its gpu_kernel,
    # logaddexp's code
    assert back.backward and back.site.src.label == "at::native::logaddexp_cuda" and back.via == "logaddexp"
    assert [e.kind.value for e in back.chain] == ["backward", "op_call", "kernel"]
    assert f"[backward tools/autograd/derivatives.yaml:{formula}]" in text


@pytest.mark.parametrize("name", ["at::native::nansum_functor::operator()", "nansum_functor::operator()",
                                  "nansum_functor::operator()(TensorIterator& iter)"])
def test_a_call_operator_is_asked_by_its_name(gpu, name):
    """``operator()``'s parentheses are its name, not a parameter list: a functor's call operator is found by the
    name answers give it, with or without its parameters, and its callers and calls are answered."""
    tree, ix = gpu
    _, callers = run(get_tool("called_by"), ix, function_name=name)
    assert "# callers of at::native::nansum_functor::operator()" in callers
    assert "at::native::nansum_kernel_cuda" in callers
    _, calls = run(get_tool("calls"), ix, function_name=name)
    assert "gpu_reduce_kernel" in calls


@pytest.mark.parametrize("name", ["TEST_F(ScalarTest, Adds)", "TEST_F( ScalarTest,Adds )"])
def test_a_definition_named_by_a_macro_is_asked_by_that_name(tree, name):
    """A gtest body (and a TORCH_LIBRARY_IMPL block, a REGISTER_OPERATOR_FUNCTOR lambda) is a definition the index
    names by its macro's text, ``TEST_F(ScalarTest, Adds)``: its parentheses are its name, not a parameter list,
    however the arguments are spaced."""
    test_cpp = ("static int helper_add(int a, int b) { return a + b; }\n\n"
                "TEST_F(ScalarTest, Adds) {\n  EXPECT_EQ(helper_add(1, 2), 3);\n}\n")
    ix = overlay_index(tree, OVERLAY, {"aten/src/ATen/native/native_functions.yaml": OPS,
                                       "aten/src/ATen/test/scalar_test.cpp": test_cpp})
    try:
        _, calls = run(get_tool("calls"), ix, function_name=name)
        assert calls.startswith("# calls of TEST_F(ScalarTest, Adds)  aten/src/ATen/test/scalar_test.cpp:3")
        assert "helper_add  aten/src/ATen/test/scalar_test.cpp:1" in calls
        _, callers = run(get_tool("called_by"), ix, function_name="helper_add")
        assert "TEST_F(ScalarTest, Adds)  aten/src/ATen/test/scalar_test.cpp:3" in callers
    finally:
        ix.close()


def test_a_definition_in_a_c_file_is_asked_by_path_and_line(tree):
    """path:line names a definition in any file the C++ layer indexes: qnnpack's and dynamo's .c files too."""
    c_file = "static int clamp_q8(int x) { return x; }\n\nint setup_hardswish(int x) {\n  return clamp_q8(x);\n}\n"
    path = "aten/src/ATen/native/quantized/cpu/qnnpack/src/hardswish.c"
    (tree / path).parent.mkdir(parents=True, exist_ok=True)
    ix = overlay_index(tree, OVERLAY, {"aten/src/ATen/native/native_functions.yaml": OPS, path: c_file})
    try:
        _, calls = run(get_tool("calls"), ix, function_name=f"{path}:3")
        assert calls.startswith(f"# calls of setup_hardswish  {path}:3")
        assert f"clamp_q8  {path}:1" in calls
    finally:
        ix.close()


def test_next_calls_name_tests_for_an_op_and_not_for_a_cpp_function_or_a_kernel(gpu):
    _tree, ix = gpu
    res, text = run(get_tool("cuda_kernels"), ix, function_name="nansum")
    assert res.matched_kind is NodeKind.OP and 'find_similar_tests("nansum")' in text.splitlines()[-1]
    res, text = run(get_tool("cuda_kernels"), ix, function_name="at::native::nansum_cuda")
    assert res.matched_kind is NodeKind.CPP_FUNCTION and "find_similar_tests" not in text.splitlines()[-1]
    res, text = run(get_tool("cuda_kernels"), ix, function_name="reduce_kernel")  # Reduce.cuh's __global__
    assert res.matched_kind is NodeKind.GPU_KERNEL and "find_similar_tests" not in text.splitlines()[-1]


def test_a_wrappers_accessor_in_a_library_namespace_is_no_library_call(gpu):
    """Note [Wrapper accessors]: descA.descriptor() on ATen's cuSPARSE descriptor wrapper (at::cuda::sparse::) was
    listed as a cuSPARSE call, 25 of them for triangular_solve; a method called on an object counts only when its
    own code does the library's work (set_mode calls cusparseSetMatFillMode)."""
    tree, ix = gpu
    ix.close()
    blas = f"{CUDA}/Blas.cpp"
    src = (tree / blas).read_text().replace("  logaddexp_cuda(self, mat2);\n", (
        "  at::cuda::sparse::DnMatDescriptor desc;\n  cusparseSpMM(handle, desc.descriptor());\n"
        "  desc.set_mode(1);\n"))
    with indexed_with(tree, {blas: src, "aten/src/ATen/cuda/CUDASparseDescriptors.h": (
        "namespace at::cuda::sparse {\nstruct DnMatDescriptor {\n  int descriptor() const { return d_; }\n"
        "  void set_mode(int m) { cusparseSetMatFillMode(d_, m); }\n  int d_;\n};\n}\n")}) as ix:
        res, text = run(get_tool("cuda_kernels"), ix, function_name="bmm")
        got = [(lib.library, lib.site.written) for lib in res.libraries]
        assert ("cuSPARSE", "cusparseSpMM") in got and ("cuSPARSE", "desc.set_mode") in got, got
        assert all(w != "desc.descriptor" for _lib, w in got), got
