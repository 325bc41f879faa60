"""affected on the fixture tree: each kind of change, each kind of input, and bad input per file.

The tree is tests/fixtures/tree + tree_py + tree_change (a header helper shared by two
CPU kernels, a decomposition, OpInfo and ModuleInfo entries and the test files that
run them). Diffs are made the way a user makes them: by editing a line of the tree
(applied: the tree holds the new side) or of a copy of a file (not applied: the tree
holds the old side).
"""

from __future__ import annotations

import contextlib
import difflib
import io
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from torchtalk.errors import BadArgument
from torchtalk.model import EdgeHow
from torchtalk.model.change import Language
from torchtalk.query.change import reach as reach_mod
from torchtalk.query.change.diff import MAX_FILES, defined_names, parse_diff, tree_path
from torchtalk.query.results import NotFound
from torchtalk.query.tests import find_similar_tests
from torchtalk.tools import answer, get_tool, run

from ..annotations import Expectations, read_tree
from ..conftest import indexed_with, line_of

FIXTURES = Path(__file__).parents[1] / "fixtures"
TREE_PY = Expectations(read_tree(FIXTURES / "tree_py"))
GIT = shutil.which("git")


@pytest.fixture
def ctree(tmp_path) -> Path:
    dest = tmp_path / "pytorch"
    shutil.copytree(FIXTURES / "tree", dest)
    for overlay in ("tree_py", "tree_change"):
        shutil.copytree(FIXTURES / overlay, dest, dirs_exist_ok=True)
    return dest


def _index(tree: Path, codegen: bool = False):
    from torchtalk.index.indexer import refresh
    from torchtalk.source.tree import find_source
    from torchtalk.store.reader import Index
    st = find_source(tree)
    refresh(st, workers=1, codegen=codegen)
    return Index(st.index_path, st.root)


@pytest.fixture
def cix(ctree):
    ix = _index(ctree)
    yield ctree, ix
    ix.close()


def edit_diff(tree: Path, rel: str, line: int, old: str, new: str, apply: bool = False) -> str:
    """A unified diff changing ``old`` to ``new`` on ``line`` of ``rel``; with apply, the tree gets the edit."""
    text = (tree / rel).read_text().split("\n")
    assert old in text[line - 1], (rel, line, text[line - 1])
    mod = list(text)
    mod[line - 1] = mod[line - 1].replace(old, new, 1)
    if apply:
        (tree / rel).write_text("\n".join(mod))
    return "".join(x + "\n" for x in difflib.unified_diff(text, mod, f"a/{rel}", f"b/{rel}", lineterm=""))


def ask(ix, **kw):
    a = answer(get_tool("affected"), ix, **kw)
    return a.result, a.text, a.next


def op_keys(res) -> list[str]:
    return [r.op.key for r in res.ops]


# ------------------------------------------------------------------ diffs as data

GIT_DIFF = """\
diff --git a/aten/x.cpp b/aten/x.cpp
index 1111111..2222222 100644
--- a/aten/x.cpp
+++ b/aten/x.cpp
@@ -1,3 +1,3 @@
 int f() {
-  return 1;
+  return 2;
 }
\\ No newline at end of file
diff --git a/new.py b/new.py
new file mode 100644
index 0000000..3333333
--- /dev/null
+++ b/new.py
@@ -0,0 +1,2 @@
+def g():
+    pass
diff --git a/old.py b/old.py
deleted file mode 100644
index 4444444..0000000
--- a/old.py
+++ /dev/null
@@ -1 +0,0 @@
-class Gone: pass
diff --git a/a.cpp b/b.cpp
similarity index 100%
rename from a.cpp
rename to b.cpp
diff --git a/img.png b/img.png
index 5555555..6666666 100644
Binary files a/img.png and b/img.png differ
diff --git a/run.sh b/run.sh
old mode 100644
new mode 100755
"""


def test_parse_git_diff_every_kind_of_file():
    files = parse_diff(GIT_DIFF)
    assert [(f.old_path, f.new_path, f.status) for f in files] == [
        ("aten/x.cpp", "aten/x.cpp", "modified"), ("", "new.py", "added"), ("old.py", "", "deleted"),
        ("a.cpp", "b.cpp", "renamed"), ("img.png", "img.png", "binary"), ("run.sh", "run.sh", "mode")]
    x = files[0]
    assert x.hunks[0].removed() == [(2, "  return 1;")] and x.hunks[0].added() == [(2, "  return 2;")]
    assert files[4].problem == "binary file: no lines to map" and not files[0].problem


def test_parse_plain_diff_u_with_timestamps_and_a_hunk_cut_short():
    text = ("--- orig/y.py\t2024-01-01 00:00:00\n+++ mod/y.py\t2024-01-02 00:00:00\n@@ -1,4 +1,4 @@\n a\n-b\n+B\n"
            "--- orig/z.py\n+++ mod/z.py\n@@ -3 +3 @@\n-q\n+Q\n")
    y, z = parse_diff(text)
    assert (y.old_path, y.new_path) == ("orig/y.py", "mod/y.py")
    assert "cut short" in y.problem  # the next header came before the hunk's 4 lines
    assert z.hunks[0].removed() == [(3, "q")] and not z.problem


def test_hunk_changed_lines_and_gaps_on_each_side():
    h = parse_diff("--- a/x.py\n+++ b/x.py\n@@ -1,6 +1,6 @@\n a\n-b\n+B\n c\n+new\n d\n-e\n f\n")[0].hunks[0]
    # Old side: b replaced (2), an insertion between c and d, e deleted (5).
    assert h.changed(old=True) == ({2, 5}, {(3, 4)})
    # New side: B (2), the inserted line (4), and the gap where e was, between d and f.
    assert h.changed(old=False) == ({2, 4}, {(5, 6)})


@pytest.mark.parametrize("text,msg", [
    ("just some words\nno header", "no file of a unified diff"),
    ("", "no file of a unified diff"),
    ("x" * 2_000_001, "the limit is 2,000,000"),
])
def test_text_that_is_no_diff_is_refused_naming_diff(text, msg):
    with pytest.raises(BadArgument) as exc:
        parse_diff(text)
    assert "diff" in str(exc.value) and msg in str(exc.value)
    assert "x" * 100 not in str(exc.value)


def test_too_many_files_is_refused():
    text = "".join(f"--- a/f{i}.py\n+++ b/f{i}.py\n@@ -1 +1 @@\n-a\n+b\n" for i in range(MAX_FILES + 1))
    with pytest.raises(BadArgument, match=f"the limit is {MAX_FILES}"):
        parse_diff(text)


def test_defined_names_reads_definition_lines_only():
    cpp = ["TORCH_IMPL_FUNC(cumsum_out) (const Tensor& self) {", "static void cumsum_cpu_kernel(const Tensor& r,",
           "    int64_t dim) {", "  foo(1, 2);", "  return bar(x);", "Tensor& f(int a);", "if (x) {",
           "at::Tensor at::native::g(int a) {"]
    assert defined_names(cpp, Language.CPP) == ["TORCH_IMPL_FUNC(cumsum_out)", "cumsum_cpu_kernel", "at::native::g"]
    assert defined_names(["def f(x):", "    return g(x)", "class C(Base):", "async def h():"], Language.PYTHON) == [
        "f", "C", "h"]


def test_tree_path_maps_copies_and_refuses_what_leaves_the_tree():
    files = {"aten/src/ATen/native/ReduceOps.cpp"}
    exists = files.__contains__
    assert tree_path("aten/src/ATen/native/ReduceOps.cpp", exists, "/src") == ("aten/src/ATen/native/ReduceOps.cpp", "")
    # git diff --no-index /tmp/copy/aten/... : leading components dropped until a tree file is named
    assert tree_path("tmp/copy/aten/src/ATen/native/ReduceOps.cpp", exists, "/src")[0] == \
        "aten/src/ATen/native/ReduceOps.cpp"
    assert tree_path("/src/aten/src/ATen/native/ReduceOps.cpp", exists, "/src")[0] == \
        "aten/src/ATen/native/ReduceOps.cpp"
    assert "leaves the source tree" in tree_path("../../etc/passwd", exists, "/src")[1]
    assert "outside the source tree" in tree_path("/etc/passwd", exists, "/src")[1]


# ------------------------------------------------------------------ each kind of change

def test_cpu_kernel_registered_with_register_dispatch_reaches_its_ops_through_the_stub(cix):
    tree, ix = cix
    res, text, nxt = ask(ix, diff=edit_diff(tree, "aten/src/ATen/native/cpu/CumKernels.cpp", 6,
                                            "wrap_cum_dim(dim, self)", "wrap_cum_dim(dim, self) + 0"))
    assert [c.node.label for c in res.changed] == ["at::native::(anonymous)::cumsum_cpu_kernel"]
    assert res.files[0].side == "old"  # the patch is not applied: its old side is the tree
    assert {"cumsum", "cumsum.out"} <= set(op_keys(res)) and "cumprod" not in op_keys(res)
    cumsum = next(r for r in res.ops if r.op.key == "cumsum")
    # cumsum_stub is handed to impl_func_cum_ops, not called: its REF site says who uses it (Note [References])
    assert "registered for [CPU] cumsum_stub <- used by TORCH_IMPL_FUNC(cumsum_out)" in cumsum.path
    assert any(e.how is EdgeHow.PASSED_ON for e in cumsum.chain)
    assert res.device == "cpu" and "Only CPU code changed" in text
    assert res.run_first[0] == 'pytest test/test_ops.py -k "_cumsum_with_dtype_ and cpu"'
    assert nxt[0] == 'trace("cumsum")' and nxt[1] == 'impact("aten/src/ATen/native/cpu/CumKernels.cpp:5", depth=2)'


def test_cuda_kernel_suggests_cuda_variants_and_drops_tests_of_other_devices(cix):
    tree, ix = cix
    res, text, _ = ask(ix, diff=edit_diff(tree, "aten/src/ATen/native/cuda/BinaryGeometricKernels.cu", 8,
                                          "::atan2(a, b)", "::atan2f(a, b)"))
    assert res.device == "cuda"
    assert set(op_keys(res)) == {"atan2", "atan2.out"}
    by_name = {t.name: t for t in res.tests}
    assert by_name["OpInfo('atan2')"].command == 'pytest test/test_ops.py -k "_atan2_ and cuda"'
    t = by_name["TestBinaryUfuncs.test_atan2"]
    assert t.generated == ["TestBinaryUfuncsCUDA.test_atan2_cuda"] and t.command.endswith('and cuda"')
    # @onlyCPU and the MPS-only class cannot run the CUDA kernel.
    assert "TestBinaryUfuncs.test_atan2_cpu_scalar" not in by_name and "TestMPS.test_atan2" not in by_name
    assert "registered for [CUDA] atan2_stub <- used by TORCH_IMPL_FUNC(atan2_out) <- kernel of [CPU, CUDA] atan2" \
        in res.ops[0].path


def test_a_gpu_kernel_behind_host_helpers_walks_on_to_its_op_and_says_so(ctree):
    """Note [Walk on to an op]: the launch and two host helpers put the op at depth 3, past the default 2: the walk
    goes on to the first level with an op, says so, and the next call carries that depth."""
    with open(ctree / "aten/src/ATen/native/native_functions.yaml", "a") as f:
        f.write("\n- func: bucketize_deep(Tensor self, Tensor boundaries) -> Tensor\n  dispatch:\n"
                "    CUDA: bucketize_deep_cuda\n")
    (ctree / "aten/src/ATen/native/cuda/Bucketize.cu").write_text(
        "namespace at::native {\nnamespace {\n\n"
        "__global__ void bucketize_deep_kernel(float* out, const float* in) {\n  out[threadIdx.x] = in[0];\n}\n\n"
        "void launch_deep(float* out, const float* in) {\n  bucketize_deep_kernel<<<1, 32>>>(out, in);\n}\n\n"
        "void dispatch_deep(float* out, const float* in) {\n  launch_deep(out, in);\n}\n\n"
        "} // namespace\n\n"
        "Tensor bucketize_deep_cuda(const Tensor& self, const Tensor& boundaries) {\n"
        "  dispatch_deep(nullptr, nullptr);\n  return self;\n}\n\n} // namespace at::native\n")
    ix = _index(ctree)
    try:
        res, text, nxt = ask(ix, names="aten/src/ATen/native/cuda/Bucketize.cu:5")
        res3, text3, _ = ask(ix, names="aten/src/ATen/native/cuda/Bucketize.cu:5", depth=3)
    finally:
        ix.close()
    assert [c.node.label for c in res.changed] == ["__global__ at::native::(anonymous)::bucketize_deep_kernel"]
    assert op_keys(res) == ["bucketize_deep"] and res.ops[0].depth == 3
    assert (res.depth, res.walked_depth) == (2, 3)
    assert "No op is within the asked depth 2: the walk went on to depth 3" in text
    assert 'impact("aten/src/ATen/native/cuda/Bucketize.cu:4", depth=3)' in nxt
    assert (res3.depth, res3.walked_depth) == (3, 3) and "went on" not in text3  # asked deep enough: nothing added


def test_cuda_kernel_of_an_internal_op_finds_the_python_functions_and_modules_above_it(ctree):
    """embedding_renorm_ has no tests of its own: F.embedding (through a private helper) and nn.Embedding reach
    it, so their OpInfo / ModuleInfo tests run the changed kernel. For a CUDA-only change, tests that show no
    sign of running on CUDA go last and are not run first."""
    with open(ctree / "aten/src/ATen/native/native_functions.yaml", "a") as f:
        f.write("\n- func: embedding_renorm_(Tensor(a!) self, Tensor indices, float max_norm, float norm_type) -> "
                "Tensor(a!)\n  dispatch:\n    CUDA: embedding_renorm_cuda_\n")
    with open(ctree / "torch/nn/functional.py", "a") as f:
        f.write("\n\ndef _no_grad_embedding_renorm_(weight, input, max_norm, norm_type):\n"
                "    torch.embedding_renorm_(weight, input, max_norm, norm_type)\n\n\n"
                "def embedding(input, weight, max_norm=None):\n    if max_norm is not None:\n"
                "        _no_grad_embedding_renorm_(weight, input, max_norm, 2.0)\n    return weight[input]\n")
    with open(ctree / "torch/nn/modules/__init__.py", "a") as f:
        f.write("from .sparse import Embedding\n")
    ix = _index(ctree)
    try:
        res, text, _ = ask(ix, names="aten/src/ATen/native/cuda/Embedding.cu:8")
    finally:
        ix.close()
    assert res.device == "cuda" and op_keys(res) == ["embedding_renorm_"]
    assert [m.name for m in res.modules] == ["torch.nn.Embedding"]
    assert res.modules[0].why == ("Embedding.forward reaches op embedding_renorm_ through "
                                  "torch.nn.functional.embedding -> torch.nn.functional._no_grad_embedding_renorm_")
    by_name = {t.name: t for t in res.tests}
    assert by_name["OpInfo('nn.functional.embedding')"].command == \
        'pytest test/test_ops.py -k "_nn_functional_embedding_ and cuda"'
    assert by_name["ModuleInfo(nn.Embedding)"].command == 'pytest test/test_modules.py -k "nn_Embedding_ and cuda"'
    on = [t.name for t in res.tests if t.on_device]
    off = [t.name for t in res.tests if not t.on_device]
    assert {"TestEmbeddingNNDeviceType.test_embedding_max_norm_device",
            "TestEmbeddingNN.test_embedding_max_norm_on_gpu"} <= set(on)
    assert off == ["TestEmbeddingNN.test_embedding_max_norm"]
    assert [t.name for t in res.tests][-1] == off[0]
    assert not any("test_embedding_max_norm " in c or c.endswith("test_embedding_max_norm") for c in res.run_first)
    assert "\nNot shown to run on cuda (no cuda variant" in text


def test_a_decomposition_change_is_not_tested_through_eager_modules(ctree):
    """relu's decomposition runs only when code is compiled: nn.ReLU (whose forward reaches relu through F.relu) is
    a Python API above the op, but its eager tests do not run the change; the decomposition suite does."""
    with open(ctree / "torch/_decomp/decompositions.py", "a") as f:
        f.write("\n\n@register_decomposition(aten.relu)\ndef relu(self):\n    return torch.clamp_min(self, 0)\n")
    ix = _index(ctree)
    try:
        line = line_of(ctree, "torch/_decomp/decompositions.py", "return torch.clamp_min(self, 0)")
        res, _text, _ = ask(ix, names=f"torch/_decomp/decompositions.py:{line}")
        assert "relu" in op_keys(res) and "torch.nn.functional.relu" in res.python
        assert not res.modules and not [t for t in res.tests if t.kind.value == "module"]
        assert 'pytest test/test_decomp.py -k "_relu_"' in res.run_first
    finally:
        ix.close()


def _threshold_backward_tree(ctree: Path, also: str = ""):
    """threshold_backward (which relu's formula calls) and its CPU kernel, both through pass_grad (Threshold.cpp:3);
    ``also``: a second op whose kernel calls pass_grad too."""
    yaml = ("\n- func: threshold_backward(Tensor grad_output, Tensor self, Scalar threshold) -> Tensor\n"
            "  dispatch:\n    CPU: threshold_backward_cpu\n")
    cpp = ("Tensor threshold_backward_cpu(const Tensor& grad_output, const Tensor& self, const Scalar& threshold) {\n"
           "  return pass_grad(grad_output);\n}\n")
    if also:
        yaml += f"\n- func: {also}(Tensor self) -> Tensor\n  dispatch:\n    CPU: {also}_cpu\n"
        cpp += f"Tensor {also}_cpu(const Tensor& self) {{\n  return pass_grad(self);\n}}\n"
    with open(ctree / "aten/src/ATen/native/native_functions.yaml", "a") as f:
        f.write(yaml)
    (ctree / "aten/src/ATen/native/Threshold.cpp").write_text(
        "namespace at::native {\nstatic Tensor pass_grad(const Tensor& g) {\n  return g;\n}\n" + cpp
        + "}  // namespace at::native\n")
    return _index(ctree)


def test_a_backward_ops_kernel_is_tested_through_the_forward_op_whose_formula_calls_it(ctree):
    """threshold_backward has no test of its own; relu's derivatives.yaml formula calls it, so relu's OpInfo and the
    gradient suites run the changed kernel (it said "No test found")."""
    ix = _threshold_backward_tree(ctree)
    try:
        res, _text, _ = ask(ix, names="aten/src/ATen/native/Threshold.cpp:3")  # pass_grad, a helper of the kernel
        assert op_keys(res)[0] == "threshold_backward" and "relu" in op_keys(res)
        cmds = [t.command for t in res.tests]
        assert 'pytest test/test_ops_gradients.py -k "_relu_"' in cmds
        # past the walk's depth the forward op is not reached, and still gives the tests
        res, _text, _ = ask(ix, names="aten/src/ATen/native/Threshold.cpp:3", depth=1)
        assert op_keys(res) == ["threshold_backward"]
        assert 'pytest test/test_ops_gradients.py -k "_relu_"' in [t.command for t in res.tests]
        assert any("whose backward formula calls threshold_backward" in t.why for t in res.tests)
    finally:
        ix.close()


def test_a_backward_ops_decomposition_is_checked_through_the_forward_ops_entry(ctree):
    """TestDecomp checks every aten op an OpInfo run calls, backward included: a decomposition of threshold_backward
    (which relu's formula calls) is checked by test_decomp.py through relu's entry."""
    with open(ctree / "torch/_decomp/decompositions.py", "a") as f:
        f.write("\n\n@register_decomposition(aten.threshold_backward)\ndef threshold_backward(grad_output, self, t):\n"
                "    return grad_output\n")
    ix = _threshold_backward_tree(ctree)
    try:
        line = line_of(ctree, "torch/_decomp/decompositions.py", "return grad_output")
        res, _text, _ = ask(ix, names=f"torch/_decomp/decompositions.py:{line}")
    finally:
        ix.close()
    assert op_keys(res)[:2] == ["threshold_backward", "relu"]
    decomp = {t.command for t in res.tests if t.name.startswith("test/test_decomp.py")}
    assert decomp == {'pytest test/test_decomp.py -k "_relu_"'}


def test_a_forward_op_looked_up_for_its_backward_hides_no_cut(ctree, monkeypatch):
    """With tests looked up for one op only, threshold_backward's forward op relu is looked up too; it is no op
    the walk reached, so the answer still says _pad_helper_op's tests were not looked up."""
    monkeypatch.setattr(reach_mod.at, "MAX_OPS_FOR_TESTS", 1)
    ix = _threshold_backward_tree(ctree, also="_pad_helper_op")
    try:
        res, _text, _ = ask(ix, names="aten/src/ATen/native/Threshold.cpp:3", depth=1)
        assert op_keys(res) == ["threshold_backward", "_pad_helper_op"]
        assert any("whose backward formula calls threshold_backward" in t.why for t in res.tests)
        assert ("tests: looked up for the 1 closest of 2 ops reached (find_similar_tests on the others)"
                in res.cuts)
    finally:
        ix.close()


_FAMILY = """import torch
from torch.testing._internal.common_device_type import instantiate_device_type_tests, ops
from torch.testing._internal.common_methods_invocations import {lists}
from torch.testing._internal.common_utils import TestCase
{local}

class TestFamily(TestCase):
    @ops({lists})
    def test_one(self, device, dtype, op):
        pass

    @ops(filter(lambda op: op.supports_out, {lists}))
    def test_two(self, device, dtype, op):
        pass


instantiate_device_type_tests(TestFamily, globals())
"""


def test_opinfo_family_suites_are_the_files_whose_ops_lists_hold_the_entry(ctree):
    """Note [OpInfo lists]: binary_ufuncs (BinaryUfuncInfo entries of op_db) holds atan2, sparse_binary_ufuncs too once
    its entry says supports_sparse=True; unary_ufuncs does not, nor a list whose other condition may leave it out."""
    cmi = ctree / "torch/testing/_internal/common_methods_invocations.py"
    cmi.write_text(cmi.read_text().replace("supports_rhs_python_scalar=False)", "supports_rhs_python_scalar=False, "
                                           "supports_sparse=True)")
                   + "\nunary_ufuncs = [op for op in op_db if isinstance(op, UnaryUfuncInfo)]\n"
                   "binary_ufuncs = [op for op in op_db if isinstance(op, BinaryUfuncInfo)]\n"
                   "sparse_binary_ufuncs = [op for op in binary_ufuncs if op.supports_sparse]\n"
                   "sparse_unary_ufuncs = [op for op in op_db if isinstance(op, UnaryUfuncInfo) and "
                   "op.supports_sparse]\n"
                   # entries made from each (test_nestedtensor.py's njt_op_db): not the entries themselves
                   "njt_op_db = [translate_opinfo(op) for op in op_db]\n")
    for name, lists, local in (("binary_family", "binary_ufuncs", ""), ("unary_family", "unary_ufuncs", ""),
                               ("sparse_family", "sparse_binary_ufuncs, sparse_unary_ufuncs", ""),
                               ("ref_family", "binary_ufuncs", "binary_ufuncs = [op for op in binary_ufuncs if "
                                                               "op.ref is not None]\n"),
                               ("njt_family", "njt_op_db", "")):
        (ctree / f"test/test_{name}.py").write_text(_FAMILY.format(lists=lists, local=local))
    ix = _index(ctree)
    try:
        atan2 = find_similar_tests(ix, "atan2").opinfos[0]
        relu = find_similar_tests(ix, "relu").opinfos[0]
        res, text, _ = ask(ix, diff=edit_diff(ctree, "aten/src/ATen/native/cuda/BinaryGeometricKernels.cu", 8,
                                              "::atan2(a, b)", "::atan2f(a, b)"))
        similar = answer(get_tool("find_similar_tests"), ix, query="atan2").text
        # a change of its derivative formula: the gradient suites check it, not the family suites running its kernels
        grad, _t, _n = ask(ix, diff=edit_diff(ctree, "tools/autograd/derivatives.yaml", 7, "grad_input_mask",
                                              "grad_input_mask2"))
    finally:
        ix.close()
    grad_tests = [t.name for t in grad.tests]
    assert not any("family" in n for n in grad_tests), grad_tests
    assert atan2.command == 'pytest test/test_ops.py -k "_atan2_"'
    assert [(f.path, f.lists, f.tests) for f in atan2.suites] == [
        ("test/test_binary_family.py", ("binary_ufuncs",), 2),
        ("test/test_sparse_family.py", ("sparse_binary_ufuncs",), 2)]
    assert [(f.path, f.lists) for f in relu.suites] == [("test/test_unary_family.py", ("unary_ufuncs",))]
    assert ("also run by the @ops(binary_ufuncs) tests of test/test_binary_family.py (2): "
            'pytest test/test_binary_family.py -k "_atan2_"') in similar
    by_name = {t.name: t for t in res.tests}
    fam = by_name["test/test_binary_family.py for atan2"]
    assert fam.command == 'pytest test/test_binary_family.py -k "_atan2_ and cuda"'
    assert fam.why.startswith("its @ops(binary_ufuncs) tests run op atan2 through OpInfo('atan2')")
    assert "test/test_sparse_family.py for atan2" in by_name and "test/test_ref_family.py for atan2" not in by_name
    assert "test/test_njt_family.py for atan2" not in by_name


def test_find_similar_tests_names_the_module_and_optimizer_db_entries(cix):
    """A module's ModuleInfo and an optimizer's OptimizerInfo drive the generic suites; each is named however the
    class is spelled, with a selection of its own tests only (nn_Linear_ selects no nn_LinearX test)."""
    _tree, ix = cix
    for q in ("torch.nn.Linear", "nn.Linear", "Linear"):
        e = find_similar_tests(ix, q).generic
        assert (e.label, str(e.loc), e.command) == ("ModuleInfo(nn.Linear)",
                                                    "torch/testing/_internal/common_modules.py:11",
                                                    'pytest test/test_modules.py -k "nn_Linear_"')
    e = find_similar_tests(ix, "torch.optim.SGD").generic
    assert (e.label, e.command) == ("OptimizerInfo(SGD)", 'pytest test/test_optim.py -k "_SGD_"')
    assert find_similar_tests(ix, "cumsum").generic is None
    text = answer(get_tool("find_similar_tests"), ix, query="SGD").text
    assert "OptimizerInfo(SGD)  torch/testing/_internal/common_optimizers.py:10: the generic tests of " \
           "test/test_optim.py run it" in text


def test_structured_kernel_and_its_meta_function(cix):
    tree, ix = cix
    res, _, _ = ask(ix, diff=edit_diff(tree, "aten/src/ATen/native/BinaryOps.cpp", 14, "*this", "*this, true"))
    assert [c.node.label for c in res.changed] == ["TORCH_IMPL_FUNC(atan2_out)"]
    assert {(r.op.key, r.depth) for r in res.ops} == {("atan2", 0), ("atan2.out", 0)}
    res, _, _ = ask(ix, diff=edit_diff(tree, "aten/src/ATen/native/BinaryOps.cpp", 5, "float_op", "op"))
    meta = [c for c in res.changed if c.node.kind.value == "op"]
    assert {c.node.key for c in meta} == {"atan2", "atan2.out"}
    assert all(c.aspect == "meta" and "TORCH_META_FUNC(atan2)" in c.why for c in meta)


def test_native_functions_dispatch_line(cix):
    tree, ix = cix
    res, text, _ = ask(ix, diff=edit_diff(tree, "aten/src/ATen/native/native_functions.yaml", 91, "index_select_cuda",
                                          "index_select_cuda_v2"))
    assert [c.node.key for c in res.changed] == ["index_select"]
    # the patch is not applied: the tree's line is what the change replaces, and the answer says so
    # both sides of the line as the diff writes them (it printed the tree's side alone: an added key went unsaid)
    assert ("dispatch line 91 changed (before the change: the tree holds the diff's old side): "
            "CUDA: index_select_cuda -> CUDA: index_select_cuda_v2") in res.changed[0].why
    # one hunk changing two entries' lines: each op shows its own line (it showed the hunk's every line)
    text = (tree / "aten/src/ATen/native/native_functions.yaml").read_text().split("\n")
    mod = list(text)
    mod[90] = mod[90].replace("index_select_cuda", "index_select_cuda_v2")
    mod[97] = mod[97].replace("index_select_out_cuda", "index_select_out_cuda_v2")
    rel = "aten/src/ATen/native/native_functions.yaml"
    two = "".join(x + "\n" for x in difflib.unified_diff(text, mod, f"a/{rel}", f"b/{rel}", lineterm=""))
    res, _, _ = ask(ix, diff=two)
    why = {c.node.key: c.why for c in res.changed}
    assert why["index_select"].endswith(": CUDA: index_select_cuda -> CUDA: index_select_cuda_v2"), why
    assert why["index_select.out"].endswith(": CUDA: index_select_out_cuda -> CUDA: index_select_out_cuda_v2"), why
    assert res.device == "cuda"
    assert res.tests[0].name == "OpInfo('index_select')"
    assert res.tests[0].command == 'pytest test/test_ops.py -k "_index_select_ and cuda"'
    # A line of a structured op's entry: the ops delegating to it change with it.
    res, _, _ = ask(ix, diff=edit_diff(tree, "aten/src/ATen/native/native_functions.yaml", 41, "True", "False"))
    assert {c.node.key: c.why.split(":")[0] for c in res.changed} == {"cumsum.out": "entry changed (line 41)",
                                                                      "cumsum": "structured_delegate"}


def test_derivatives_formula_is_the_ops_backward(cix):
    tree, ix = cix
    res, _, _ = ask(ix, diff=edit_diff(tree, "tools/autograd/derivatives.yaml", 7, "grad_input_mask", "mask"))
    assert [(c.node.key, c.aspect) for c in res.changed] == [("atan2", "backward")]
    assert "derivatives.yaml formula for self, other changed (line 7)" in res.changed[0].why
    cmds = [t.command for t in res.tests]
    assert cmds[:2] == ['pytest test/test_ops.py -k "_atan2_"', 'pytest test/test_ops_gradients.py -k "_atan2_"']


def test_a_forward_mode_formula_is_the_ops_forward_mode_ad(ctree):
    """Note [Formula modes]: atan2's result: line is its JVP; a change to it is checked by the forward-mode suite
    (test_ops_fwd_gradients.py), not the backward one, and says forward-mode AD, not backward."""
    tree = ctree
    bwd = (tree / "test/test_ops_gradients.py").read_text()
    (tree / "test/test_ops_fwd_gradients.py").write_text(bwd.replace("TestBwdGradients", "TestFwdGradients")
                                                         .replace("test_fn_grad", "test_forward_mode_AD"))
    line = line_of(tree, "tools/autograd/derivatives.yaml", "result: (-self_p * other_t")
    ix = _index(tree)
    try:
        res, _, _ = ask(ix, diff=edit_diff(tree, "tools/autograd/derivatives.yaml", line, "self_p.pow(2)",
                                           "self_p.square()"))
    finally:
        ix.close()
    assert [(c.node.key, c.aspect) for c in res.changed] == [("atan2", "forward-mode AD")]
    assert res.changed[0].why.startswith(f"forward-mode AD: derivatives.yaml forward-mode formula for result "
                                         f"changed (line {line})")
    cmds = [t.command for t in res.tests]
    assert 'pytest test/test_ops_fwd_gradients.py -k "_atan2_"' in cmds
    assert 'pytest test/test_ops_gradients.py -k "_atan2_"' not in cmds


def test_nn_module_forward(cix):
    tree, ix = cix
    linear = "torch/nn/modules/linear.py"
    line = line_of(tree, linear, "F.linear(input, self.weight, self.bias)")
    res, text, nxt = ask(ix, diff=edit_diff(tree, linear, line, "self.bias", "bias=self.bias"))
    assert [c.node.key for c in res.changed] == ["torch.nn.modules.linear.Linear.forward"]
    assert [(m.name, m.why.startswith("subclass")) for m in res.modules] == [("torch.nn.Linear", False),
                                                                            ("torch.nn.LazyLinear", True)]
    assert [t.command for t in res.tests[:2]] == ['pytest test/test_modules.py -k "nn_Linear_"',
                                                  'pytest test/test_nn.py::TestNN::test_linear']  # a node id: exact
    assert res.tests[0].loc.path == "torch/testing/_internal/common_modules.py"
    assert nxt == ['trace_module("torch.nn.Linear")']


def test_decomposition_reaches_its_op_and_the_decomposition_suite(cix):
    tree, ix = cix
    res, _, _ = ask(ix, diff=edit_diff(tree, "torch/_decomp/decompositions.py", 9, "dtype=dtype", "dtype=None"))
    ops = {c.node.key: c for c in res.changed if c.node.kind.value == "op"}
    assert set(ops) == {"cumsum", "cumsum.out"} and all(c.aspect == "decomposition" for c in ops.values())
    assert 'pytest test/test_decomp.py -k "_cumsum_with_dtype_"' in res.run_first


def test_python_function_finds_the_modules_calling_it(cix):
    tree, ix = cix
    path, line = TREE_PY.site("op", "relu").split(":")  # the `torch.relu(input)` annotated in F.relu
    res, _, _ = ask(ix, diff=edit_diff(tree, path, int(line), "torch.relu(input)", "torch.relu(input + 0)"))
    assert [c.node.key for c in res.changed] == ["torch.nn.functional.relu"]
    assert [m.name for m in res.modules] == ["torch.nn.ReLU"]
    assert "F.relu(...) at torch/nn/modules/activation.py:11" in res.modules[0].why
    assert res.tests[0].name == "OpInfo('relu')"


def test_an_optimizers_private_helper_is_tested_through_the_optimizer_above_it(cix):
    """_single_tensor_sgd is reached only from sgd(), which calls it through `func` (bound in a branch), from
    SGD.step: its Python callers are walked up, so the optimizer and its OptimizerInfo tests come with it."""
    tree, ix = cix
    path = "torch/optim/sgd.py"
    line = line_of(tree, path, "param.add_(param, alpha=-lr)")
    res, text, _ = ask(ix, diff=edit_diff(tree, path, line, "alpha=-lr", "alpha=-2 * lr"))
    assert [c.node.key for c in res.changed] == ["torch.optim.sgd._single_tensor_sgd"]
    assert [m.name for m in res.modules] == ["torch.optim.SGD"], text
    assert "SGD.step reaches torch.optim.sgd._single_tensor_sgd (changed) through sgd" in res.modules[0].why
    assert 'pytest test/test_optim.py -k "_SGD_"' in [t.command for t in res.tests], text
    # a Python name with its package is a name: a test named after it, none holding it inside a longer word
    named = [t.name for t in find_similar_tests(ix, "torch.optim.sgd.sgd").tests if t.why.startswith("name")]
    assert named[0] == "test_sgd" and "test_sgdr_warm_restarts" not in named
    assert "test_sgdr_warm_restarts" in [t.name for t in find_similar_tests(ix, "sgd").tests]  # a free query


def test_header_helper_used_by_many_kernels_is_bounded_and_says_what_was_cut(cix, monkeypatch):
    tree, ix = cix
    diff = edit_diff(tree, "aten/src/ATen/native/cpu/CumUtils.h", 7, "self.dim()", "self.dim() + 0")
    res, _, _ = ask(ix, diff=diff)
    # the walk's only limit is its depth (named, with the depth that goes further)
    assert {"cumsum", "cumprod"} <= set(op_keys(res)) and len(res.cuts) == 1
    assert "at depth 2 not walked further" in res.cuts[0] and res.cuts[0].endswith("depth=3 goes further")
    monkeypatch.setattr(reach_mod, "MAX_LEVEL_NODES", 1)
    res, text, _ = ask(ix, diff=diff)
    assert set(op_keys(res)) == {"cumsum", "cumsum.out"}  # only the first caller is walked from
    assert "walk: 1 node reached but not walked from (at most 1 a level; e.g. at::native::(anonymous)::" \
        'cumprod_cpu_kernel); impact("aten/src/ATen/native/cpu/CumKernels.cpp:8", depth=2) goes further' in text
    assert "Cut (bounded answer):" in text


def test_a_helper_reaching_more_ops_than_tests_are_looked_up_for_says_its_tests_are_a_sample(cix, monkeypatch):
    """A helper nearly every kernel calls (c10::maybe_wrap_dim) reaches more ops than tests are looked up for: the
    answer leads with the counts and calls its tests a sample, not coverage; a narrow change says nothing of it."""
    tree, ix = cix
    diff = edit_diff(tree, "aten/src/ATen/native/cpu/CumUtils.h", 7, "self.dim()", "self.dim() + 0")
    res, text, _ = ask(ix, diff=diff)
    assert res.sample is None and "Wide reach" not in text and "\nRun these first:" in text
    monkeypatch.setattr(reach_mod.at, "MAX_OPS_FOR_TESTS", 1)
    res, text, _ = ask(ix, diff=diff)
    assert res.sample is not None and (res.sample.names, res.sample.looked_up) == (2, 1)
    assert res.sample.ops == res.ops_total and res.sample.functions == res.functions_reached
    assert (f"Wide reach: the change reaches {res.ops_total} ops (2 op names) and {res.functions_reached} C++ "
            "functions within depth 2. Tests were looked up for the 1 closest op names only: the tests below are a "
            "sample of what it reaches, not coverage") in text
    assert "\nRun these first (a sample, not coverage):" in text


def test_changed_tests_come_first(cix):
    tree, ix = cix
    res, text, _ = ask(ix, diff=edit_diff(tree, "test/test_binary_ufuncs.py", 8, "ones", "zeros"))
    assert res.tests[0].kind == "changed" and res.tests[0].name == "TestBinaryUfuncs.test_atan2"
    assert res.run_first == ['pytest test/test_binary_ufuncs.py -k "TestBinaryUfuncs and test_atan2"']
    assert "Nothing the index knows changed" not in text
    res, _, _ = ask(ix, diff=edit_diff(tree, "test/test_binary_ufuncs.py", 1, "import torch", "import torch as t"))
    assert [(t.name, t.why) for t in res.tests] == [("test/test_binary_ufuncs.py",
                                                     "module-level code changed (line 1)")]


def test_opinfo_entry_and_sample_inputs(cix):
    tree, ix = cix
    mi = "torch/testing/_internal/common_methods_invocations.py"
    res, _, _ = ask(ix, diff=edit_diff(tree, mi, 12, "False", "True"))
    assert [(t.name, t.command) for t in res.tests] == [("OpInfo('atan2')", 'pytest test/test_ops.py -k "_atan2_"')]
    assert not res.files[0].note  # the line is inside an entry, not "outside any definition"
    res, _, _ = ask(ix, diff=edit_diff(tree, mi, 5, "None", "1"))
    assert res.tests[0].name == "OpInfo('index_select')" and "matched by name" in res.tests[0].why


def test_codegen_template_and_generator_by_layer(ctree):
    from .test_generated_layer import _add_generators
    _add_generators(ctree)
    ix = _index(ctree, codegen=True)
    try:
        res, text, _ = ask(ix, diff=edit_diff(ctree, "aten/src/ATen/templates/RegisterDispatchKey.cpp", 4, "m)", "m) "))
        gen = res.generators[0]
        assert gen.role == "template" and [lay.layer for lay in gen.layers] == [
            "dispatcher wrappers and registrations (Register<Key>.cpp)"]
        assert gen.layers[0].files == ["<generated>/aten/src/ATen/RegisterCPU.cpp"] and gen.layers[0].symbols >= 2
        assert "everything generated from it is affected" in text
        res, _, _ = ask(ix, names="torchgen/gen.py")
        assert res.generators[0].role == "generator" and res.files[0].kind == "codegen"
        assert res.tests[-1].kind == "suite" or not res.tests  # suites only when the tree has them
    finally:
        ix.close()


def test_deleted_and_renamed_functions_from_the_diffs_old_side(cix):
    tree, ix = cix
    rel = "aten/src/ATen/native/cuda/BinaryGeometricKernels.cu"
    old = (tree / rel).read_text().split("\n")
    new = [x.replace("void atan2_kernel_cuda(", "void atan2_kernel_cuda_v2(") for x in old]
    diff = "".join(x + "\n" for x in difflib.unified_diff(old, new, f"a/{rel}", f"b/{rel}", lineterm=""))
    # Not applied: the tree still has the function, which the change removes.
    res, text, _ = ask(ix, diff=diff)
    assert [(c.node.label, c.deleted) for c in res.changed] == [("at::native::atan2_kernel_cuda", True)]
    assert "[removed by the change]" in text
    # Applied: the old name is gone from the tree; who still names it is listed.
    (tree / rel).write_text("\n".join(new))
    ix2 = _index(tree)
    try:
        res, text, _ = ask(ix2, diff=diff)
        gone = {r.name: r for r in res.removed}
        assert set(gone) == {"atan2_kernel_cuda"}
        assert [str(loc) for loc in gone["atan2_kernel_cuda"].still_named] == [f"{rel}:13"]  # REGISTER_DISPATCH
        assert "still named at 1 place(s)" in text
    finally:
        ix2.close()


def test_bad_files_are_reported_per_file_and_the_rest_is_answered(cix):
    tree, ix = cix
    good = edit_diff(tree, "aten/src/ATen/native/cuda/BinaryGeometricKernels.cu", 8, "::atan2(a, b)", "::atan2f(a, b)")
    bad = ("diff --git a/img.png b/img.png\nBinary files a/img.png and b/img.png differ\n"
           "--- /etc/passwd\n+++ /etc/passwd\n@@ -1 +1 @@\n-root\n+toor\n"
           "--- a/../../etc/shadow\n+++ b/../../etc/shadow\n@@ -1 +1 @@\n-x\n+y\n"
           "--- a/aten/src/ATen/native/Nope.cpp\n+++ b/aten/src/ATen/native/Nope.cpp\n@@ -1 +1 @@\n-x\n+y\n"
           "--- a/CMakeLists.txt\n+++ b/CMakeLists.txt\n@@ -1 +1 @@\n-x\n+y\n")
    res, text, _ = ask(ix, diff=bad + good)
    notes = {f.written: f.note for f in res.files}
    assert notes["img.png"] == "binary file: no lines to map"
    assert "outside the source tree" in notes["/etc/passwd"]
    assert "leaves the source tree" in notes["../../etc/shadow"]
    assert "not in the source tree" in notes["aten/src/ATen/native/Nope.cpp"]
    assert "not in the source tree" in notes["CMakeLists.txt"]
    assert set(op_keys(res)) == {"atan2", "atan2.out"}  # the good file is answered


def test_a_diff_against_another_version_says_so(cix):
    tree, ix = cix
    diff = edit_diff(tree, "aten/src/ATen/native/cuda/BinaryGeometricKernels.cu", 8, "::atan2(a, b)", "::x(a, b)")
    diff = diff.replace("   return ::", "   return ::y")  # the context no longer matches the tree
    res, _, _ = ask(ix, diff=diff)
    assert res.files[0].side == "neither" and "matches neither side" in res.files[0].note


# ------------------------------------------------------------------ names, git, CLI

def test_names_mix_paths_ops_functions_and_python_names(cix):
    _, ix = cix
    res, text, _ = ask(ix, names="aten/src/ATen/native/BinaryOps.cpp:14, cumsum\nindex_select_out_cpu_ "
                                  "torch.nn.Linear, nosuchthing")
    labels = [c.node.label for c in res.changed]
    assert labels == ["TORCH_IMPL_FUNC(atan2_out)", "cumsum", "cumsum.out", "at::native::index_select_out_cpu_",
                      "torch.nn.modules.linear.Linear"]
    assert [u.name for u in res.unknown] == ["nosuchthing"] and "Names not found:" in text
    assert {"atan2", "cumsum", "index_select.out"} <= set(op_keys(res))
    res, text, nxt = ask(ix, names="nosuchthing")
    assert isinstance(res, NotFound) and "No op, C++ function, Python name or path named 'nosuchthing'" in text
    # a path the tree lacks, or a line past the file's end, is not found (exit 3) with the files named like it;
    # it was "nothing changed" (exit 0)
    for names, why in (("native/BinaryOps.cpp:14", "'native/BinaryOps.cpp' is not a file of the source tree"),
                       ("aten/src/ATen/native/BinaryOps.cpp:99999", "line 99999 is past the end of "
                                                                    "aten/src/ATen/native/BinaryOps.cpp")):
        res, text, _ = ask(ix, names=names)
        assert isinstance(res, NotFound) and res.suggestions[0] == "aten/src/ATen/native/BinaryOps.cpp", text
        assert why in text, text


@pytest.mark.parametrize("kw,msg", [
    ({}, "is not a git checkout"),
    ({"rev": "HEAD~1"}, "rev needs a git checkout"),
    ({"names": "a/b.cpp:0"}, "is not a line range"),
    ({"names": "aten/src/ATen/native/BinaryOps.cpp:-5"}, "the line must be a number from 1"),
    ({"names": "aten/src/ATen/native/BinaryOps.cpp:abc"}, "the line must be a number from 1"),
    ({"names": ", ".join(f"n{i}" for i in range(51))}, "the limit is 50"),
    ({"depth": 6, "names": "cumsum"}, "from 1 to 5"),
])
def test_bad_input_is_a_clear_error(cix, kw, msg):
    _, ix = cix
    if "names" in kw and ":0" in kw["names"]:
        kw = {"names": "aten/src/ATen/native/BinaryOps.cpp:0"}
    with pytest.raises(BadArgument, match=msg):
        ask(ix, **kw)


def _git(tree: Path, *args: str) -> None:
    env = {**os.environ, "GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@t", "GIT_COMMITTER_NAME": "t",
           "GIT_COMMITTER_EMAIL": "t@t", "GIT_CONFIG_GLOBAL": os.devnull, "GIT_CONFIG_SYSTEM": os.devnull}
    subprocess.run(["git", "-C", str(tree), *args], check=True, capture_output=True, env=env)


@pytest.mark.skipif(GIT is None, reason="git is not installed")
def test_git_working_tree_revisions_and_ranges(ctree):
    _git(ctree, "init", "-q")
    _git(ctree, "add", "-A")
    _git(ctree, "commit", "-qm", "base")
    edit_diff(ctree, "aten/src/ATen/native/cuda/BinaryGeometricKernels.cu", 8, "::atan2(a, b)", "::atan2f(a, b)",
              apply=True)
    ix = _index(ctree)
    try:
        res, _, _ = ask(ix)  # nothing given in a checkout: the working tree against HEAD
        assert "working tree against HEAD" in res.source and res.files[0].side == "new"
        assert set(op_keys(res)) == {"atan2", "atan2.out"}
        _git(ctree, "commit", "-qam", "cuda")
        res, _, _ = ask(ix, rev="HEAD~1..HEAD")
        assert res.source == "git diff HEAD~1..HEAD" and set(op_keys(res)) == {"atan2", "atan2.out"}
        res, text, _ = ask(ix)
        assert not res.files and "Nothing the index knows changed" in text
        for bad, msg in (("--output=/tmp/x", "is not a git revision"), ("nosuchbranch", "is not a commit"),
                         ("HEAD;rm -rf /", "is not a git revision")):
            with pytest.raises(BadArgument, match=msg) as exc:
                ask(ix, rev=bad)
            assert "rev" in str(exc.value)
    finally:
        ix.close()


def test_cli_reads_the_diff_from_a_file_and_from_stdin(ctree, tmp_path):
    diff = edit_diff(ctree, "aten/src/ATen/native/cuda/BinaryGeometricKernels.cu", 8, "::atan2(a, b)", "::atan2f(a, b)")
    patch = tmp_path / "change.diff"
    patch.write_text(diff)
    from torchtalk.cli import main
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main(["affected", "--source", str(ctree), "--diff", str(patch), "--limit", "2"])
    assert code == 0, err.getvalue()
    assert out.getvalue().startswith("# affected: a diff of 1 file") and "atan2 and cuda" in out.getvalue()
    env = {**os.environ, "TORCHTALK_CACHE_DIR": os.environ["TORCHTALK_CACHE_DIR"]}
    run = subprocess.run([sys.executable, "-m", "torchtalk", "affected", "--source", str(ctree), "--json"],
                         input=diff, capture_output=True, text=True, env=env, timeout=120)
    assert run.returncode == 0, run.stderr
    import json
    data = json.loads(run.stdout)
    assert data["kind"] == "result" and data["result"]["device"] == "cuda"
    run = subprocess.run([sys.executable, "-m", "torchtalk", "affected", "--source", str(ctree), "--diff",
                          str(tmp_path / "missing.diff")], capture_output=True, text=True, env=env, timeout=120)
    assert run.returncode == 2 and "cannot read it" in run.stderr and "Traceback" not in run.stderr


def test_a_device_change_takes_each_ops_tests_shown_on_the_device_first(indexed):
    """Note [Tests of a device's change]: for a CUDA change, an op's PER_OP tests are chosen from a larger pool of
    find_similar_tests' ranking, those shown to run on CUDA first (GridSampler.cu: F.grid_sample's onlyCUDA
    test_grid_sample_large ranks 9th); in rank order otherwise, and a CPU or device-less change takes PER_OP."""
    from torchtalk.model import Loc
    from torchtalk.model.dispatch import Device
    from torchtalk.query.change import tests as at
    from torchtalk.query.tests import FoundTest

    cpu = [FoundTest(f"test_cpu_{i}", "TestNN", Loc("test/test_nn.py", i), "name", f"pytest c{i}", [], [], True)
           for i in range(at.PER_OP + 2)]
    cuda = [FoundTest("test_large", "TestNNDeviceType", Loc("test/test_nn.py", 99), "name", "pytest -k x", ["onlyCUDA"],
                      ["TestNNDeviceTypeCUDA.test_large_cuda"], True)]
    assert at._pool(Device.CUDA) > at._pool(Device.CPU) == at._pool(None) == at.PER_OP
    _, ix = indexed  # holds none of these test files: no template copies them
    got = at._found(ix, cpu + cuda, "grid_sample", "grid_sampler", "how", Device.CUDA)
    assert len(got) == at.PER_OP and got[0].name == "TestNNDeviceType.test_large" and got[0].on_device
    assert [t.name for t in got[1:]] == [f"TestNN.test_cpu_{i}" for i in range(at.PER_OP - 1)]  # then in rank order
    assert [t.name for t in at._found(ix, cpu[:3], "g", "g", "how", None)] == [
        f"TestNN.test_cpu_{i}" for i in range(3)]


def test_a_helper_only_a_meta_function_calls_reaches_its_op(tree):
    """Note [Meta functions] (graph/op_edges.py): DilatedMaxPool2d.cpp's TORCH_META_FUNC(max_pool2d_with_indices)
    calls Pool.h's pooling_output_shape; the generated wrappers that run the meta function are calls the index does
    not resolve, so affected by a Pool.h change missed max_pool2d_with_indices. Walked up, a meta function is its
    op's (and of the ops delegating to it); called_by names it so."""
    src = (tree / "aten/src/ATen/native/BinaryOps.cpp").read_text().replace(
        "  build_borrowing_binary_float_op(maybe_get_output(), self, other);",
        "  build_borrowing_binary_float_op(maybe_get_output(), self, other);\n  check_shapes(self, other);")
    with indexed_with(tree, {"aten/src/ATen/native/BinaryOps.cpp": src, "aten/src/ATen/native/ShapeCheck.h": (
        "namespace at { namespace meta {\ninline void check_shapes(const Tensor& a, const Tensor& b) {}\n}}\n")}) as ix:
        res, text, _ = ask(ix, names="aten/src/ATen/native/ShapeCheck.h:2")
        assert {"atan2", "atan2.out"} <= set(op_keys(res)), text
        # the path says how: the meta function of the op (it printed "kernel of [] atan2", no dispatch key)
        assert "called by TORCH_META_FUNC(atan2) <- meta function of atan2" in text and "[]" not in text, text
        res, text = run(get_tool("called_by"), ix, function_name="at::meta::structured_atan2::meta")
        assert "atan2.out: its meta function, run first by every backend's generated wrapper" in text, text
        _res, text = run(get_tool("impact"), ix, function_name="at::meta::check_shapes", depth=2)
        assert "(TORCH_META_FUNC(atan2) is its meta function; level 1)" in text, text


@pytest.mark.parametrize("minus, plus, lang, only", [
    (["    _pair(0),"], ["    _pair(0),  # padding already applied"], "python", True),
    (["x = 1"], ["x = 1", "", "# a note"], "python", True),
    (["        return x"], ["    return x"], "python", False),  # a line moved out of its block
    (["s = 'a # b'"], ["s = 'a # c'"], "python", False),
    (["  int a = f(x);  // old"], ["  int  a = f(x);"], "cpp", True),
    (["  /* old", "   * text */"], ["  /* new", "   * words */"], "cpp", True),
    (["  *out = v;"], ["  *out = w;"], "cpp", False),
])
def test_a_change_of_comments_and_spacing_only_changes_no_code(minus, plus, lang, only):
    # a comment added to torch/nn/modules/conv.py was 'def changed' with 7 tests to run
    from torchtalk.model.change import Language
    from torchtalk.query.change.lines import _comments_only
    assert _comments_only(minus, plus, Language(lang)) is only
