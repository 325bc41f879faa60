"""affected for Python code that only traced or compiled code runs (decompositions, lowerings and their helpers):
the overload a registration names, the walk stopping at the op, Python callers reaching a lowering (nested, of a
TORCH_LIBRARY namespace), and tests found by import when nothing reached has tests of its own."""

from __future__ import annotations

from ..conftest import index_with, line_of
from .test_affected import ask, ctree, op_keys

__all__ = ["ctree"]  # the fixture, used by name

DECOMP = "torch/_decomp/decompositions.py"


def test_a_registration_of_one_overload_changes_that_overload_only(ctree):
    """Note [Packet or overload]: aten.cumsum.default is the OpOverload cumsum alone (_add_op_to_registry registers
    it alone); aten.cumsum, the packet, is every overload (cumsum.out too)."""
    with open(ctree / DECOMP, "a") as f:
        f.write("\n\n@register_decomposition(aten.cumsum.default)\ndef cumsum_one(self, dim):\n    return self + 1\n")
    ix = index_with(ctree, {})
    try:
        one, _t, _ = ask(ix, names=f"{DECOMP}:{line_of(ctree, DECOMP, 'return self + 1')}")
        packet, _t, _ = ask(ix, names=f"{DECOMP}:{line_of(ctree, DECOMP, 'dtype=dtype)')}")
    finally:
        ix.close()
    assert [c.node.key for c in one.changed if c.node.kind.value == "op"] == ["cumsum"]
    assert {c.node.key for c in packet.changed if c.node.kind.value == "op"} == {"cumsum", "cumsum.out"}


def test_a_decomposition_change_is_walked_up_what_tracing_runs_only(ctree):
    """Note [Compiled only]: cumsum_twice's CPU kernel calls at::cumsum, which runs cumsum's C++ kernel, not its
    decomposition, and tracing records cumsum_twice itself: not reached. cumsum_thrice's CompositeImplicitAutograd
    kernel runs while tracing, so the cumsum it calls is in the graph and decomposed: reached, with the
    decomposition's suites."""
    with open(ctree / "aten/src/ATen/native/native_functions.yaml", "a") as f:
        f.write("\n- func: cumsum_twice(Tensor self) -> Tensor\n  dispatch:\n    CPU: cumsum_twice\n"
                "\n- func: cumsum_thrice(Tensor self) -> Tensor\n  dispatch:\n"
                "    CompositeImplicitAutograd: cumsum_thrice\n")
    ix = index_with(ctree, {"aten/src/ATen/native/CumsumTwice.cpp": (
        "namespace at::native {\nTensor cumsum_twice(const Tensor& self) {\n  return at::cumsum(self, 0);\n}\n"
        "Tensor cumsum_thrice(const Tensor& self) {\n  return at::cumsum(self, 0);\n}\n"
        "}  // namespace at::native\n")})
    try:
        kernel, _t, _ = ask(ix, names="aten/src/ATen/native/CumsumTwice.cpp:3")
        res, text, _ = ask(ix, names=f"{DECOMP}:{line_of(ctree, DECOMP, 'dtype=dtype)')}")
    finally:
        ix.close()
    assert "cumsum_twice" in op_keys(kernel)  # the C++ graph does have the eager caller
    assert set(op_keys(res)) == {"cumsum", "cumsum.out", "cumsum_thrice"}
    assert set(res.compiled) == {"cumsum", "cumsum.out"} and "Compiled only:" in text
    assert 'pytest test/test_decomp.py -k "_cumsum_with_dtype_"' in res.run_first  # Note [Exact -k selections]


LOWERINGS = {
    "torch/_inductor/__init__.py": "",
    "torch/_inductor/lowering.py": "def register_lowering(op):\n    return lambda fn: fn\n",
    "torch/_inductor/mkldnn_ir.py": (
        "class ConvolutionUnary:\n"
        "    @classmethod\n"
        "    def create(cls, x):\n"
        "        return x  # the helper\n"),
    "torch/_inductor/mkldnn_lowerings.py": (
        "import torch\n"
        "from torch._inductor import mkldnn_ir\n"
        "from torch._inductor.lowering import register_lowering\n\n\n"
        "def register_onednn_fusion_ops():\n"
        "    @register_lowering(torch.ops.mkldnn._convolution_pointwise)\n"
        "    def convolution_unary(x):\n"
        "        return mkldnn_ir.ConvolutionUnary.create(x)  # the lowering\n"),
}


def test_a_helper_of_a_nested_lowering_of_another_namespace_reaches_its_op(ctree):
    """Note [Registered above the change]: ConvolutionUnary.create is called by a lowering nested in
    register_onednn_fusion_ops, registered for torch.ops.mkldnn._convolution_pointwise (a TORCH_LIBRARY op, not
    aten): the Python callers walk reaches the lowering, so its op is reached, as a lowering (compiled only)."""
    ix = index_with(ctree, LOWERINGS)
    try:
        helper, text, _ = ask(ix, names="torch/_inductor/mkldnn_ir.py:4")
        lowering, ltext, _ = ask(ix, names="torch/_inductor/mkldnn_lowerings.py:9")
    finally:
        ix.close()
    nested = "torch._inductor.mkldnn_lowerings.register_onednn_fusion_ops.<locals>.convolution_unary"
    assert [fq for fq, _how in helper.python_callers] == [nested]
    assert op_keys(helper) == ["torch.ops.mkldnn._convolution_pointwise"]
    assert "its lowering (mkldnn._convolution_pointwise, line 7): convolution_unary calls" in helper.ops[0].path
    assert "no op is given meaning" not in text and f"- {nested}" in text
    assert [(c.node.key, c.aspect) for c in lowering.changed if c.compiled] == [
        ("torch.ops.mkldnn._convolution_pointwise", "lowering")]
    assert "no op is given meaning" not in ltext


CODEGEN = {
    "torch/_inductor/__init__.py": "",
    "torch/_inductor/codegen/__init__.py": "",
    "torch/_inductor/codegen/triton.py": (
        "def triton_store_type(dtype):\n"
        "    return str(dtype)  # the helper\n\n\n"
        "class TritonKernel:\n"
        "    def store(self, dtype):\n"
        "        return triton_store_type(dtype)\n\n\n"
        "class OpDtypeSupport:\n"
        "    pass\n"),
    "torch/_inductor/loop_body.py": "def _walk(body):\n    return body  # nothing names it\n",
    "test/inductor/test_kernels.py": (
        "from torch._inductor.codegen.triton import TritonKernel\n"
        "from torch.testing._internal.common_utils import TestCase\n\n\n"
        "class TestKernels(TestCase):\n"
        "    def test_store(self):\n"
        "        TritonKernel().store(None)\n"),
    "test/inductor/test_dtypes.py": (
        "from torch._inductor.codegen.triton import OpDtypeSupport\n"
        "from torch.testing._internal.common_utils import TestCase\n\n\n"
        "class TestDtypes(TestCase):\n"
        "    def test_support(self):\n"
        "        OpDtypeSupport()\n"),
}


def test_a_compiler_helper_no_walk_finds_tests_for_gets_the_tests_importing_it(ctree):
    """Note [Tests by import]: triton_store_type reaches no op and no test names it; the test importing the class
    of its caller (TritonKernel.store) comes first, then the one importing another name of its module. A module no
    test imports (loop_body) falls back to the tests importing most of its package. It said "No test found"."""
    ix = index_with(ctree, CODEGEN)
    try:
        res, text, _ = ask(ix, names="torch/_inductor/codegen/triton.py:2")
        pkg, ptext, _ = ask(ix, names="torch/_inductor/loop_body.py:2")
    finally:
        ix.close()
    assert [fq for fq, _how in res.python_callers] == ["torch._inductor.codegen.triton.TritonKernel.store"]
    assert [t.name for t in res.tests] == ["test/inductor/test_kernels.py", "test/inductor/test_dtypes.py"]
    assert "imports TritonKernel, whose TritonKernel.store calls the change" in res.tests[0].why
    assert res.run_first[0] == "pytest test/inductor/test_kernels.py"
    assert "Found by import" in text and "No test found" not in text
    # the fixture's test_aot_inductor_custom_ops.py imports torch._inductor.test_case: of the package too
    assert {t.name for t in pkg.tests} == {"test/inductor/test_kernels.py", "test/inductor/test_dtypes.py",
                                           "test/inductor/test_aot_inductor_custom_ops.py"}
    assert "package torch._inductor" in pkg.tests_by and "No test found" not in ptext
