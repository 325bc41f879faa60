"""How an op's cuda_kernels answer is formed, on a fixture tree (tests/fixtures/tree_gpu_ops over tree).

A kernel's call of another op through the dispatcher is followed to that op's kernel for CUDA (Note [Calls
through the dispatcher] in graph/gpu.py), also one whose function is handed on (Note [Op references]); an
op whose only GPU work is a CUDA runtime call is answered by that call (Note [Libraries] in model/cuda.py);
an op whose complete walk finds no device work says so, with what the walk covered (Note [No device work]
in query/cuda.py).
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from torchtalk.graph import graph
from torchtalk.graph.nodes import op_node
from torchtalk.graph.registry import registry
from torchtalk.model import EdgeHow, EdgeKind
from torchtalk.model.cuda import library_of
from torchtalk.tools import get_tool, run

from ..conftest import index_with, line_of, overlay_index

OVERLAY = Path(__file__).parents[1] / "fixtures" / "tree_gpu_ops"
NATIVE = "aten/src/ATen/native"
OPS = """
- func: angle(Tensor self) -> Tensor
  dispatch:
    CPU, CUDA: angle

- func: angle.out(Tensor self, *, Tensor(a!) out) -> Tensor(a!)
  dispatch:
    CPU, CUDA: angle_out

- func: angle_(Tensor(a!) self) -> Tensor(a!)
  dispatch:
    CompositeExplicitAutograd: angle_

- func: coalesce(Tensor(a) self) -> Tensor(a)
  dispatch:
    CompositeImplicitAutograd: coalesce

- func: _coalesce(Tensor self) -> Tensor
  dispatch:
    SparseCUDA: _coalesce_sparse_cuda

- func: kron(Tensor self, Tensor other) -> Tensor
  dispatch:
    CompositeImplicitAutograd: kron

- func: alias(Tensor(a) self) -> Tensor(a)
  dispatch:
    CompositeExplicitAutograd: alias

- func: _local_scalar_dense(Tensor self) -> Scalar
  dispatch:
    CUDA: _local_scalar_dense_cuda

- func: hop_a(Tensor(a) self) -> Tensor(a)
  dispatch:
    CompositeExplicitAutograd: hop_a

- func: hop_b(Tensor(a) self) -> Tensor(a)
  dispatch:
    CompositeExplicitAutograd: hop_b

- func: hop_c(Tensor(a) self) -> Tensor(a)
  dispatch:
    CompositeExplicitAutograd: hop_c

- func: hop_d(Tensor(a) self) -> Tensor(a)
  dispatch:
    CompositeExplicitAutograd: hop_d
"""


@pytest.fixture
def gpu(tree):
    shutil.copytree(OVERLAY / "c10", tree / "c10", dirs_exist_ok=True)
    ix = overlay_index(tree, OVERLAY, {f"{NATIVE}/native_functions.yaml": OPS})
    yield tree, ix
    ix.close()


def test_a_kernels_call_through_the_dispatcher_reaches_the_called_ops_cuda_kernel(gpu):
    tree, ix = gpu
    cu = f"{NATIVE}/cuda/UnaryComplexKernels.cu"
    site = (cu, line_of(tree, cu, "gpu_kernel(iter, []GPU_LAMBDA"))
    # from angle's kernel: at::angle_out -> angle.out [CUDA] -> angle_out, which hands angle_stub on -> its CUDA kernel
    res, text = run(get_tool("cuda_kernels"), ix, function_name="at::native::angle")
    (h,) = res.helpers
    assert (h.site.site.path, h.site.site.line) == site
    assert [e.kind for e in h.chain] == [EdgeKind.DISPATCH_CALL, EdgeKind.KERNEL, EdgeKind.STUB_CALL,
                                         EdgeKind.STUB_KERNEL]  # the helper that calls ``stub(...)`` adds nothing
    hop, _kernel, handed, _reg = h.chain
    assert hop.dst.key == "angle.out" and hop.site.line == line_of(tree, f"{NATIVE}/UnaryOps.cpp", "at::angle_out(")
    # the stub handed on is its REF site (Note [References])
    assert handed.how is EdgeHow.PASSED_ON and handed.site.line == line_of(tree, f"{NATIVE}/UnaryOps.cpp",
                                                                    "unary_op_impl_out(result, self, angle_stub)")
    # next calls: tests are looked up for an op, not for a C++ function's name
    assert "find_similar_tests" not in text.rsplit("next:", 1)[1]
    # the op: angle.out is its own variant, so the launch is the op's own code
    res, text = run(get_tool("cuda_kernels"), ix, function_name="angle")
    (h,) = res.helpers
    assert (h.site.site.path, h.site.site.line) == site and h.via == ""
    assert "No device work" not in text and "No <<<>>> launch" not in text
    assert 'find_similar_tests("angle")' in text.rsplit("next:", 1)[1]


def test_an_ops_function_handed_on_is_followed_like_a_call(gpu):
    tree, ix = gpu
    res, text = run(get_tool("cuda_kernels"), ix, function_name="angle_")
    (h,) = res.helpers
    assert h.site.src.label == "at::native::angle_kernel_cuda" and not res.no_device_work
    # the composite kernel's op call (Note [Op references]: an op's function handed on is one)
    (hop,) = [e for e in h.chain if e.kind in (EdgeKind.DISPATCH_CALL, EdgeKind.OP_CALL)]
    assert (hop.dst.key, hop.how, hop.site.line) == ("angle.out", EdgeHow.PASSED_ON,
                                                     line_of(tree, f"{NATIVE}/UnaryOps.cpp", "(self, at::angle_out)"))


SPARSE_CSR_OPS = OPS.replace("    CPU, CUDA: angle_out\n", "    CPU, CUDA: angle_out\n"
                             "    SparseCsrCPU, SparseCsrCUDA: angle_sparse_csr_out\n").replace(
    "- func: angle_(Tensor(a!) self) -> Tensor(a!)\n  dispatch:\n",
    "- func: angle_(Tensor(a!) self) -> Tensor(a!)\n  variants: function, method\n  dispatch:\n"
    "    SparseCsrCPU, SparseCsrCUDA: angle_sparse_csr_\n")


def test_an_ops_function_passed_by_address_in_a_macros_expansion_is_a_call_of_the_op(tree):
    """Note [Op references]: ``CREATE_UNARY_UFUNC(angle)`` (sparse/SparseCsrTensorMath.cpp's shape) defines
    angle_sparse_csr_out, which passes ``&at::angle_outf`` to unary_op_out, and angle_sparse_csr_, which passes
    ``&Tensor::angle_``. Both are read from the arguments the expansion's calls record: the SparseCsr kernels call
    angle.out and angle_ (passed on, at the macro's line), angle.out's callers list the SparseCsr kernel, and the GPU
    walk from it reaches angle's CUDA kernel. Before, the macro's line named no op: unary_op_out was all it called."""
    shutil.copytree(OVERLAY / "c10", tree / "c10", dirs_exist_ok=True)
    assert SPARSE_CSR_OPS.count("angle_sparse_csr") == 2
    ix = overlay_index(tree, OVERLAY, {f"{NATIVE}/native_functions.yaml": SPARSE_CSR_OPS})
    try:
        path = f"{NATIVE}/sparse/SparseCsrTensorMath.cpp"
        line = line_of(tree, path, "CREATE_UNARY_UFUNC(angle)")
        for fn, op, written in (("at::native::angle_sparse_csr_out", "angle.out", "at::angle_outf"),
                                ("at::native::angle_sparse_csr_", "angle_", "Tensor::angle_")):
            res, text = run(get_tool("calls"), ix, function_name=fn)
            assert [(e.dst.key, e.how, str(e.site), e.written) for e in res.sections[0].ops] == [
                (op, EdgeHow.PASSED_ON, f"{path}:{line}", written)], text
        into = graph(ix).into(op_node(registry(ix).by_full["angle.out"]), [EdgeKind.DISPATCH_CALL])
        assert [(e.src.label, e.how, str(e.site)) for e in into if "sparse" in e.site.path] == [
            ("at::native::angle_sparse_csr_out", EdgeHow.PASSED_ON, f"{path}:{line}")]
        res, text = run(get_tool("cuda_kernels"), ix, function_name="at::native::angle_sparse_csr_out")
        assert [h.site.src.label for h in res.helpers] == ["at::native::angle_kernel_cuda"], text
    finally:
        ix.close()


def test_a_cuda_runtime_call_is_named_as_a_library_call(gpu):
    tree, ix = gpu
    res, text = run(get_tool("cuda_kernels"), ix, function_name="_local_scalar_dense")
    fns = "c10/cuda/CUDAFunctions.h"
    got = [(lib.library, lib.site.written, lib.site.site.path, lib.site.site.line) for lib in res.libraries]
    assert got == [("CUDA runtime", "cudaMemcpyAsync", fns, line_of(tree, fns, "cudaMemcpyAsync(")),
                   ("CUDA runtime", "cudaStreamSynchronize", fns, line_of(tree, fns, "cudaStreamSynchronize("))]
    assert "- CUDA runtime: cudaMemcpyAsync at c10/cuda/CUDAFunctions.h:" in text
    assert not res.no_device_work


def test_an_op_whose_complete_walk_finds_no_device_work_says_so(gpu):
    tree, ix = gpu
    res, text = run(get_tool("cuda_kernels"), ix, function_name="alias")
    assert not res.kernels and not res.helpers and not res.libraries and not res.cuts
    assert "at::native::alias [CompositeExplicitAutograd]" in res.no_device_work
    assert text.splitlines()[1].startswith("No device work: the complete walk (no cut)")
    assert "No <<<>>> launch" not in text


def test_a_view_reached_through_three_calls_of_the_dispatcher_does_no_device_work(gpu):
    """The first walk follows two calls through the dispatcher a chain; when it finds nothing and only its limits
    cut it, it looks again through three (graph/gpu.py NOTHING_HOPS): hop_a -> hop_b -> hop_c -> hop_d, the shape
    of movedim -> permute -> as_strided, is a complete walk, where it had stayed "nothing found" with a cut."""
    _, ix = gpu
    res, text = run(get_tool("cuda_kernels"), ix, function_name="hop_a")
    assert not res.kernels and not res.helpers and not res.libraries and not res.cuts, text
    assert "at::native::hop_d [CompositeExplicitAutograd]" in res.no_device_work
    assert text.splitlines()[1].startswith("No device work: the complete walk (no cut)")


def test_runtime_and_allocator_in_the_library_table():
    assert [library_of(n) for n in ("cudaMemcpyAsync", "cudaMemcpy2DAsync", "hipMemsetAsync",
                                    "cudaStreamSynchronize", "c10::cuda::CUDACachingAllocator::recordStream",
                                    "cudaGetLastError", "cudaStream_t", "cuda_equal",
                                    "c10::cuda::getCurrentCUDAStream")] == [
        "CUDA runtime", "CUDA runtime", "CUDA runtime", "CUDA runtime", "CUDA caching allocator",
        None, None, None, None]


def test_an_op_with_only_sparse_cuda_kernels_runs_them_when_another_op_calls_it(gpu):
    tree, ix = gpu
    res, text = run(get_tool("cuda_kernels"), ix, function_name="coalesce")
    (k,) = res.kernels
    assert k.name == "coalesce_values_kernel" and k.launches[0].via == "_coalesce" and not res.no_device_work


def test_a_method_of_a_file_local_class_on_a_temporary_is_walked_and_calls_left_unresolved_are_named(gpu):
    tree, ix = gpu
    # KronImpl(self, other).kron(): a method of a class in an anonymous namespace of the caller's own file, called
    # on a temporary, is resolved (s29-gpuk's file-local scopes) and walked; the ops it calls are not in this
    # fixture's registry, so the answer names them as calls not followed rather than passing over them.
    res, text = run(get_tool("cuda_kernels"), ix, function_name="kron")
    assert "through 3 functions" in res.no_device_work  # kron, KronImpl::kron and its constructor
    assert "not resolved to a definition and not walked (at::_unsafe_view, at::mul)" in text


def test_a_builder_chain_is_one_library_use_and_two_chains_stay_two(tree):
    """Note [Builder chains]: ``cudnn_frontend::OperationBuilder(d).setA(..).setB(..).build()`` is one use of cuDNN,
    not four library calls; the next chain, and two calls of one function on two lines, stay apart."""
    yaml = tree / f"{NATIVE}/native_functions.yaml"
    yaml.write_text(yaml.read_text() + "\n- func: conv_thing(Tensor self) -> Tensor\n  dispatch:\n"
                    "    CUDA: conv_thing_cuda\n")
    ix = index_with(tree, {f"{NATIVE}/cudnn/Thing.cpp": (
        "namespace at::native {\n"
        "Tensor conv_thing_cuda(const Tensor& self) {\n"
        "  auto op = cudnn_frontend::OperationBuilder(desc)\n"
        "                .setxDesc(getTensorDescriptor(\n"
        "                    self, 'x'))\n"
        "                .setyDesc(y)\n"
        "                .build();\n"
        "  auto graph = cudnn_frontend::OperationGraphBuilder()\n"
        "                   .setHandle(handle)\n"
        "                   .build();\n"
        "  cudnnSetStream(handle, s1);\n"
        "  cudnnSetStream(handle, s2);\n"
        "  return self;\n}\n}  // namespace at::native\n")})
    try:
        res, text = run(get_tool("cuda_kernels"), ix, function_name="conv_thing")
        got = [(lib.site.written.split("(")[0], lib.site.site.line, lib.site.note) for lib in res.libraries]
        assert got == [("cudnn_frontend::OperationBuilder", 3, "a chain of 4 calls on lines 3-7"),
                       ("cudnn_frontend::OperationGraphBuilder", 8, "a chain of 3 calls on lines 8-10"),
                       ("cudnnSetStream", 11, ""), ("cudnnSetStream", 12, "")], got
        assert "(a chain of 4 calls on lines 3-7)" in text
    finally:
        ix.close()


def test_looking_further_for_device_work_does_not_follow_functions_only_named(tree):
    """Note [Looking further without references]: an op whose walk finds nothing looks again 20 calls deep; a chain of
    functions that only name one another (each handed to a call) deeper than that no longer leaves it incomplete."""
    yaml = tree / f"{NATIVE}/native_functions.yaml"
    yaml.write_text(yaml.read_text() + "\n- func: host_only(Tensor self) -> Tensor\n  dispatch:\n"
                    "    CompositeImplicitAutograd: host_only\n")
    calls = "".join(f"int c{i}(int x) {{ return c{i + 1}(x); }}\n" for i in range(8, 0, -1))
    named = "".join(f"int r{i}(int x) {{ return apply_fn(&r{i + 1}, x); }}\n" for i in range(25, 0, -1))
    ix = index_with(tree, {f"{NATIVE}/HostOnly.cpp": (
        "namespace at::native {\nint c9(int x) { return x; }\nint r26(int x) { return x; }\n"
        "int apply_fn(int (*f)(int), int x);\n" + calls + named +
        "Tensor host_only(const Tensor& self) {\n  c1(1);\n  apply_fn(&r1, 1);\n  return self;\n}\n}\n")})
    try:
        res, text = run(get_tool("cuda_kernels"), ix, function_name="host_only")
        assert res.no_device_work, text
        assert "functions it only names are not followed" in text, text
    finally:
        ix.close()
