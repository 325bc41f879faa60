"""find_similar_tests: the op's home test files first, and what the generic @ops tests do to this op."""

import ast
import re

import pytest

from torchtalk.extract.opinfo import op_test_marks
from torchtalk.query.results import NotFound
from torchtalk.query.tests import _name_score, _norm
from torchtalk.tools import get_tool, run

from ..conftest import index_with, indexed_with


def call(ix, tool, **kw):
    return run(get_tool(tool), ix, **kw)


def test_names_match_however_the_op_is_spelled():
    key = _norm("group_norm")
    assert _name_score("test_group_norm", "testgroupnorm", key) == 0
    assert _name_score("test_GroupNorm_general", "testgroupnormgeneral", key) == 1
    assert _name_score("test_native_group_norm", "testnativegroupnorm", key) == 2  # after another word
    assert _name_score("test_log_softmax", "testlogsoftmax", _norm("softmax")) == 2
    assert _name_score("test_hardsoftmaxing", "testhardsoftmaxing", _norm("softmax")) == 3  # inside a word
    # a longer word that starts or ends with it is another op's name: igammac, digamma, addmm, conv2d for conv
    assert _name_score("test_igammac_common", "testigammaccommon", _norm("igamma")) == 3
    assert _name_score("test_digamma", "testdigamma", _norm("igamma")) == 3
    assert _name_score("test_addmm", "testaddmm", _norm("add")) == 3
    assert _name_score("test_quantized_conv2d", "testquantizedconv2d", _norm("conv")) == 3
    assert _name_score("test_softmaxBackward", "testsoftmaxbackward", _norm("softmax")) == 1  # a capital: a new word
    assert _name_score("test_adaptive_avg_pool2d1", "testadaptiveavgpool2d1", _norm("adaptive_avg_pool2d")) == 1
    assert _name_score("test_optional_intlist_invalid", "testoptionalintlistinvalid",
                       _norm("_test_optional_intlist")) == 2  # an op named _test_*: the name's start is a word's
    assert _name_score("test_qadd_and_add", "testqaddandadd", _norm("add")) == 2  # its best place, not its first


def test_an_ops_tests_by_name_leave_out_other_ops_named_inside_longer_words(py_indexed):
    """cumsum's answer lists test_cumsum, not the fixture's test_logcumsumexp (logcumsumexp's test, which holds
    cumsum inside a longer word; before, it was listed as named after cumsum)."""
    _, ix = py_indexed
    res, _text = call(ix, "find_similar_tests", query="cumsum")
    assert [t.name for t in res.tests if t.why.startswith("name")] == ["test_cumsum", "test_cumsum_cuda"]
    res, _text = call(ix, "find_similar_tests", query="logcumsumexp")
    assert [t.name for t in res.tests if t.why.startswith("name")] == ["test_logcumsumexp"]


def test_home_files_rank_first(py_indexed):
    _, ix = py_indexed
    res, text = call(ix, "find_similar_tests", query="cumsum")
    # torch.cumsum: its home is test/test_torch.py, whose test_cumsum comes before test_nn.py's test_cumsum_cuda
    assert res.home == ["test/test_torch.py"]
    assert [(t.loc.path, t.name, t.why) for t in res.tests[:2]] == [
        ("test/test_torch.py", "test_cumsum", "name, home file"), ("test/test_nn.py", "test_cumsum_cuda", "name")]
    res, text = call(ix, "find_similar_tests", query="relu")
    # nn.ReLU (torch/nn/modules/activation.py) calls F.relu: test/nn/test_activation.py, test_nn.py, test_torch.py
    assert res.home == ["test/nn/test_activation.py", "test/test_nn.py", "test/test_torch.py"]
    assert "test/nn/test_activation.py (nn module in torch/nn/modules/activation.py)" in text
    assert {t.name for t in res.tests if t.why == "name, home file"} == {
        "test_relu", "test_relu_functional", "test_ReLU_inplace", "test_relu_gradient"}
    assert res.tests[0].name == "test_relu"  # exactly test_<op> first


def test_opinfo_marks_are_specific_to_the_op(py_indexed):
    _, ix = py_indexed
    res, text = call(ix, "find_similar_tests", query="cumsum")
    by_variant = {o.variant: o for o in res.opinfos}
    plain = by_variant[""]
    assert [(m.test_class, m.test_name, m.mark, m.entry) for m in plain.marks] == [
        ("TestCommon", "test_out", "unittest.expectedFailure", "cumsum"),
        ("TestJit", "test_variant_consistency_jit", "unittest.skip('Skipped!')", "cumsum"),
        ("TestCommon", "test_python_ref", "unittest.expectedFailure", "_refs.cumsum"),
        ("TestOperators", "test_vjp", "xfail", "")]
    assert plain.marks[1].device_type == "cuda" and plain.marks[1].dtypes == "torch.float32"
    # the with_dtype variant is xfailed in the module-level set that skipOps gives test_grad
    assert [(m.test_class, m.test_name, m.loc.path) for m in by_variant["with_dtype"].marks] == [
        ("TestOperators", "test_grad", "test/functorch/test_ops.py")]
    assert "skips/xfails/decorators in its entry (2):" in text
    assert "TestJit.test_variant_consistency_jit: unittest.skip('Skipped!') [cuda, torch.float32]" in text
    assert "@ops tests live in" not in text
    relu, relu_text = call(ix, "find_similar_tests", query="relu")
    assert [m.device_type for m in relu.opinfos[0].marks] == ["cuda"]
    assert relu_text.split("OpInfo entries")[1] != text.split("OpInfo entries")[1]


def test_marks_come_from_entries_and_lists_only():
    src = (
        "import unittest\n"
        "from torch.testing._internal.opinfo.core import DecorateInfo, OpInfo\n"
        "op_db = [OpInfo('sum', decorators=[DecorateInfo(toleranceOverride({}), 'TestDecomp', 'test_comprehensive',\n"
        "                                               device_type='cpu')])]\n"
        "fails = {xfail('sum', 'nonempty'), skip('Skipped!'), xfail('not an op name')}\n"
        "@skipOps('TestX', 'test_y', fails)\n"
        "def test_y(): unittest.skip('reason')\n"
    )
    marks = op_test_marks(ast.parse(src), src.encode(), has_opinfo=True)
    assert [(m.op, m.variant, m.entry, m.mark, m.test_class, m.test_name, m.line) for m in marks] == [
        ("sum", "", "sum", "toleranceOverride({})", "TestDecomp", "test_comprehensive", 3),
        ("sum", "nonempty", "", "xfail", "TestX", "test_y", 5)]


def test_queries_as_written_reach_the_op_and_its_entries(py_indexed):
    """Note [Test queries as written]: an op or OpInfo entry asked the way a user meets it."""
    _, ix = py_indexed
    relu, _ = call(ix, "find_similar_tests", query="relu")
    assert relu.tests and [o.name for o in relu.opinfos] == ["relu"]
    for q in ("nn.functional.relu", "torch.nn.functional.relu", "F.relu", "torch.ops.aten.relu.default",
              "aten::relu.out", "aten.relu", "test_relu"):
        res, text = call(ix, "find_similar_tests", query=q)
        assert [t.loc for t in res.tests] == [t.loc for t in relu.tests], q
        assert [o.name for o in res.opinfos] == ["relu"], q
        assert text.startswith(f"# tests for {q}:")
    # an in-place op's tests are its own; its entry is the functional op's
    assert [o.name for o in call(ix, "find_similar_tests", query="relu_")[0].opinfos] == ["relu"]
    # the entry as test names and pytest -k spell it: its name and variant, dots as underscores
    res, _ = call(ix, "find_similar_tests", query="cumsum_with_dtype")
    cumsum, _ = call(ix, "find_similar_tests", query="cumsum")
    # an overload as native_functions.yaml names it: its op's tests (softmax.int found none: no test spells .int)
    assert call(ix, "find_similar_tests", query="cumsum.out")[0].tests == cumsum.tests
    assert res.tests == cumsum.tests and [(o.name, o.variant) for o in res.opinfos] == [
        ("cumsum", "with_dtype"), ("cumsum", "")]
    # an entry may write its op's name under torch.
    for q in ("addmm", "torch.addmm", "torch_addmm"):
        res, _ = call(ix, "find_similar_tests", query=q)
        assert [o.name for o in res.opinfos] == ["torch.addmm"], q
    none, text = call(ix, "find_similar_tests", query="nn_functional_nothing")
    assert isinstance(none, NotFound) and "No test name, test body or OpInfo entry mentions it." in text


def test_a_packaged_name_and_several_words(py_indexed):
    """torch.nn.utils.clip_grad_norm_: tests named after its last part and bodies that call it as imported from its
    module; "deterministic cumsum": each word in the test (a test named after cumsum alone is not listed)."""
    tree, ix = py_indexed
    ix.close()
    ix = index_with(tree, {"test/test_utils_clip.py": (
        "import torch\nfrom torch.nn.utils import clip_grad_norm_\nfrom torch.testing._internal.common_utils import "
        "TestCase\n\n\nclass TestClip(TestCase):\n    def test_clip_grad_norm(self):\n        pass\n\n"
        "    def test_gradients_stay_finite(self):\n        clip_grad_norm_([torch.ones(2)], 1.0)\n\n"
        "    def test_cumsum_deterministic(self):\n        torch.use_deterministic_algorithms(True)\n"
        "        torch.cumsum(torch.ones(2), 0)\n")})
    try:
        res, _ = call(ix, "find_similar_tests", query="torch.nn.utils.clip_grad_norm_")
        assert {(t.name, t.why) for t in res.tests} == {("test_clip_grad_norm", "name"),
                                                        ("test_gradients_stay_finite", "calls clip_grad_norm_")}
        res, _ = call(ix, "find_similar_tests", query="deterministic cumsum")
        assert [t.name for t in res.tests] == ["test_cumsum_deterministic"]
        # no test holds every word: the word the op's answer required, as its stem, with the start of the others
        # ranking first; and the answer says so (it was "torch.cumsum" alone, or nothing)
        res, text = call(ix, "find_similar_tests", query="cumsum clipping")
        assert res.tests[0].name == "test_clip_grad_norm" and "test_cumsum" not in [t.name for t in res.tests]
        assert ("No test holds every word of 'cumsum clipping': these are the tests for 'clip' (the stem of "
                "'clipping'), those whose names start another word ('cums') first.") in text
    finally:
        ix.close()


def test_word_stems_as_test_names_spell_them():
    from torchtalk.query.testquery import word_stem
    assert [word_stem(w) for w in ("clipping", "padded", "norms", "pool", "clip_grad", "gradient")] == [
        "clip", "pad", "norm", "pool", "clip_grad", "gradient"]


def _yaml_and_db(tree, ops: str, entries: str) -> dict[str, str]:
    """The fixture's native_functions.yaml with ``ops`` appended, and its op_db with ``entries`` added."""
    yaml = tree / "aten/src/ATen/native/native_functions.yaml"
    db = tree / "torch/testing/_internal/common_methods_invocations.py"
    return {"aten/src/ATen/native/native_functions.yaml": yaml.read_text() + ops,
            "torch/testing/_internal/common_methods_invocations.py": db.read_text().replace(
                "op_db = [\n", "op_db = [\n" + entries, 1)}


def test_tests_named_after_another_name_and_a_namespace_ops_short_name(py_indexed):
    """pad's tests are test_pad and test_pad_circular (a variant of its OpInfo entry), not test_pad_sequence
    (torch.nn.utils.rnn.pad_sequence's: before, named after pad); linalg_eig's are also test_linalg.py's test_eig_*
    (the namespace's own file drops the linalg_ prefix: before, none), not test_eigvals (another op) nor test_ops.py's
    test_eig_foo (another file); OpInfo('normal')'s -k rules out nn.functional.normalize (before, "-k normal")."""
    tree, ix = py_indexed
    ix.close()
    files = _yaml_and_db(
        tree, '\n- func: pad(Tensor self, SymInt[] pad, str mode="constant", float? value=None) -> Tensor\n'
        "  python_module: nn\n\n- func: linalg_eig(Tensor self) -> (Tensor eigenvalues, Tensor eigenvectors)\n"
        "  python_module: linalg\n\n- func: linalg_eigvals(Tensor self) -> Tensor\n  python_module: linalg\n",
        "    OpInfo('nn.functional.pad', variant_test_name='circular'),\n    OpInfo('normal'),\n"
        "    OpInfo('nn.functional.normalize'),\n    OpInfo('normal', variant_test_name='in_place'),\n")
    head = "import torch\nfrom torch.testing._internal.common_utils import TestCase\n\n\n"
    files["torch/nn/utils/rnn.py"] = "def pad_sequence(sequences):\n    return sequences\n"
    files["test/test_padding.py"] = head + "".join(
        f"class Test{n.title()}(TestCase):\n    def test_{n}(self):\n        pass\n\n\n"
        for n in ("pad", "pad_circular", "pad_sequence"))
    files["test/test_linalg.py"] = head + "class TestLinalg(TestCase):\n" + "".join(
        f"    def test_{n}(self):\n        pass\n\n" for n in ("eig_numpy", "eig_compare_backends", "eigvals"))
    files["test/test_eigs.py"] = head + "class TestEigs(TestCase):\n    def test_eig_foo(self):\n        pass\n"
    ix = index_with(tree, files)
    try:
        res, _ = call(ix, "find_similar_tests", query="pad")
        assert {t.name for t in res.tests if t.by_name} == {"test_pad", "test_pad_circular"}
        res, _ = call(ix, "find_similar_tests", query="linalg_eig")
        assert [(t.loc.path, t.name) for t in res.tests if t.by_name] == [
            ("test/test_linalg.py", "test_eig_numpy"), ("test/test_linalg.py", "test_eig_compare_backends")]
        res, _ = call(ix, "find_similar_tests", query="normal")
        assert [o.command.split(" -k ")[1] for o in res.opinfos] == [
            '"_normal_ and not _normal_in_place_"', '"_normal_in_place_"']
    finally:
        ix.close()


def test_an_internal_ops_tests_go_on_to_the_public_op_and_the_tests_calling_it(py_indexed):
    """error_origin's tests for a site that only _softmax reaches: those calling torch._softmax, and those of softmax,
    the public op whose composite kernel calls it (before: only the tests named after _softmax, none)."""
    from torchtalk.query.error_test_names import tests_for
    tree, ix = py_indexed
    ix.close()
    ix = index_with(tree, {"test/test_softmaxes.py": (
        "import torch\nfrom torch.testing._internal.common_utils import TestCase\n\n\nclass TestSoftmaxes(TestCase):\n"
        "    def test_softmax(self):\n        torch.softmax(torch.ones(2), 0)\n\n"
        "    def test_fast_path(self):\n        torch._softmax(torch.ones(2), 0, False)\n")})
    try:
        shown, _opinfos, tests, _cut = tests_for(ix, ["_softmax"], 5, None)
        assert shown == "_softmax (internal) and softmax"
        assert {(t.name, t.by_name) for t in tests if t.loc.path == "test/test_softmaxes.py"} == {
            ("test_fast_path", False), ("test_softmax", True)}
    finally:
        ix.close()


@pytest.mark.parametrize("query, close", [("cumsom", "cumsum"), ("torch.cumsom", "torch.cumsum"),
                                          ("xyzzy plugh", None)])
def test_a_query_no_test_answers_is_not_found_with_the_names_close_to_it(py_indexed, query, close):
    """A misspelt op finds no test: the answer says so and names what is close (exit 3 on the CLI), not an empty
    list that reads as "this op has no tests"."""
    _, ix = py_indexed
    res, text = run(get_tool("find_similar_tests"), ix, query=query)
    assert isinstance(res, NotFound), text
    assert text.startswith(f"No test or OpInfo entry named '{query}'."), text
    if close:
        assert close in res.suggestions, text
    else:
        assert "No close matches." in text.splitlines()[0]
    res, _ = run(get_tool("find_similar_tests"), ix, query="cumsum")
    assert not isinstance(res, NotFound) and res.total
    # an op the index knows that no test mentions: that is the answer, not a typo
    res, text = run(get_tool("find_similar_tests"), ix, query="index_select")
    assert not isinstance(res, NotFound) and res.total == 0 and "No test names or test bodies mention it." in text


class _Paths:
    """The two lookups nn_home_file makes of an index."""

    def __init__(self, paths: dict[int, str]):
        self.paths = paths

    def path_of(self, fid: int) -> str:
        return self.paths[fid]

    def file_ids(self) -> dict[str, int]:
        return {p: f for f, p in self.paths.items()}


def test_a_home_by_its_tests_when_the_layouts_home_names_none():
    """Note [A home by its tests]: nn.EmbeddingBag's tests are in test/nn/test_embedding.py (22 named
    test_embedding_bag*), and the layout's home, test/test_torch.py, names none; only names that lead with the query
    count (test_lazy_batchnorm is no batchnorm test), only files of test/ and test/nn/ with device-type tests for
    every device (not test_mps.py), and only when the layout's first home names none and the file HOME_MIN."""
    from torchtalk.query.testquery import HOME_MIN, named_home_file

    ix = _Paths({1: "test/nn/test_embedding.py", 2: "test/test_torch.py", 3: "test/nn/test_lazy_modules.py",
                 4: "test/inductor/test_torchinductor.py", 5: "test/test_mps.py"})
    devices = {1, 2, 3, 4}
    named = {i: (1, 1) for i in range(HOME_MIN)} | {10: (4, 0), 11: (4, 0), 12: (4, 0), 13: (4, 0),
                                                    20: (3, 2), 21: (3, 2), 22: (3, 2), 23: (3, 2)}
    assert named_home_file(ix, named, ["test/test_torch.py"], devices)[:2] == (1, "test/nn/test_embedding.py")
    assert named_home_file(ix, named, [], devices)[:2] == (1, "test/nn/test_embedding.py")
    assert named_home_file(ix, named | {30: (2, 1)}, ["test/test_torch.py"], devices) is None  # the home names one
    fewer = {i: v for i, v in named.items() if i != 0}
    assert named_home_file(ix, fewer, ["test/test_torch.py"], devices) is None  # below HOME_MIN
    mps = {i: (5, 0) for i in range(10)}
    assert named_home_file(ix, mps, ["test/test_torch.py"], devices) is None  # only_for a device
    assert named_home_file(ix, mps, ["test/test_torch.py"], devices | {5}) is not None


def test_a_bare_name_finds_the_functional_forms_opinfo(py_indexed):
    """grid_sample is no op (its op is grid_sampler) but F.grid_sample, whose entry is
    OpInfo('nn.functional.grid_sample'): the bare name lists it, as torch.nn.functional.grid_sample does (before: no
    OpInfo section)."""
    tree, ix = py_indexed
    ix.close()
    ix = index_with(tree, _yaml_and_db(tree, "", "    OpInfo('nn.functional.grid_sample'),\n"))
    try:
        for q in ("grid_sample", "torch.nn.functional.grid_sample"):
            res, _ = call(ix, "find_similar_tests", query=q)
            assert [o.name for o in res.opinfos] == ["nn.functional.grid_sample"], q
    finally:
        ix.close()


def test_a_backward_op_finds_the_opinfo_naming_it_its_aten_backward_name(py_indexed):
    # find_similar_tests("hardtanh_backward") answered one test and no OpInfo, though OpInfo('nn.functional.hardtanh',
    # aten_backward_name='hardtanh_backward') runs it in its gradient tests (and test_decomp checks it)
    _, ix = py_indexed
    res, text = call(ix, "find_similar_tests", query="_softmax")
    assert [o.name for o in res.opinfos] == ["softmax"], text
    assert "OpInfo('softmax')" in text and "(its aten_backward_name='_softmax': its gradient tests run it)" in text
    res, text = call(ix, "find_similar_tests", query="softmax")
    assert all(not o.backward for o in res.opinfos) and "aten_backward_name" not in text


def test_a_backward_op_no_test_names_has_the_tests_of_the_op_whose_formula_calls_it(py_indexed):
    # conv_tbc_backward, adaptive_max_pool2d_backward: 'No test names or test bodies mention it', though the forward
    # op's gradient checks run them (derivatives.yaml)
    tree, ix = py_indexed
    ix.close()
    with open(tree / "aten/src/ATen/native/native_functions.yaml", "a") as f:
        f.write("\n- func: threshold_backward(Tensor grad_output, Tensor self, Scalar threshold) -> Tensor\n"
                "  variants: function\n")
    with indexed_with(tree, {}) as ix:
        relu, _ = call(ix, "find_similar_tests", query="relu")
        res, text = call(ix, "find_similar_tests", query="threshold_backward")
        assert res.tests == relu.tests and res.query == "threshold_backward", text
        assert "No test names 'threshold_backward': these are the tests of 'relu', whose derivatives.yaml formula" \
            in text, text


def test_an_opinfo_k_keeps_the_ops_python_reference_and_rules_out_another_modules_op(tree):
    # OpInfo('cholesky')'s -k kept linalg_cholesky (linalg.cholesky, another op) as if it were a reference of
    # cholesky; _refs.linalg.svd is linalg.svd's reference and _refs._conversions.bfloat16 bfloat16's
    from torchtalk.query.testmatch import exact_k
    entries = {"torch/testing/_internal/common_methods_invocations.py": (
        "from torch.testing._internal.opinfo.core import OpInfo, PythonRefInfo\n"
        "op_db = [OpInfo('cholesky'), OpInfo('linalg.cholesky'), OpInfo('linalg.svd'), OpInfo('svd'),\n"
        "         OpInfo('bfloat16')]\n"
        "python_ref_db = [PythonRefInfo('_refs.linalg.svd', torch_opinfo_name='linalg.svd'),\n"
        "                 PythonRefInfo('_refs._conversions.bfloat16', torch_opinfo_name='bfloat16')]\n")}
    with indexed_with(tree, entries) as ix:
        assert exact_k(ix, "cholesky", "test/test_ops.py") == "_cholesky_ and not _linalg_cholesky_"
        assert exact_k(ix, "linalg_svd", "test/test_ops.py") == "_linalg_svd_"
        assert exact_k(ix, "svd", "test/test_ops.py") == "_svd_ and not _linalg_svd_"
        assert exact_k(ix, "bfloat16", "test/test_ops.py") == "_bfloat16_"


def _k_selects(expr: str, name: str) -> bool:
    """pytest -k as it matches a unittest test: each word a case-insensitive substring of the test's name or its
    parents' (class, module); not > and > or."""
    words = re.findall(r"\(|\)|[^\s()]+", expr)
    py = " ".join(w if w in ("and", "or", "not", "(", ")") else
                  repr(any(w.lower() in n.lower() for n in (name, "TestCommonCPU", "test_ops.py"))) for w in words)
    return bool(eval(py))  # noqa: S307 - True/False/and/or/not/parentheses only


def test_an_opinfo_k_selects_its_entrys_generated_tests_and_no_others(tree):
    # -k bfloat16 (OpInfo('bfloat16')) selected every entry's bfloat16 tests (test_out_abs_cpu_bfloat16), -k T every
    # test of TestCommon, -k neg every entry's test_neg_view: anchored on the underscores around the entry's name,
    # with the suite's test names holding it ruled out and their runs of the entry put back
    from torchtalk.query.testmatch import exact_k
    names = ["bfloat16", "float", "float_power", "neg", "T", "abs", "_foreach_abs", "view_as", "as_strided",
             "bool", "div.trunc", "div.floor"]
    entries = {"torch/testing/_internal/common_methods_invocations.py": (
        "from torch.testing._internal.opinfo.core import OpInfo\n"
        "op_db = [OpInfo('bfloat16'), OpInfo('float'), OpInfo('float_power'), OpInfo('neg'), OpInfo('T'),\n"
        "         OpInfo('abs'), OpInfo('_foreach_abs'), OpInfo('view_as'), OpInfo('as_strided'), OpInfo('bool'),\n"
        "         OpInfo('div', variant_test_name='trunc'), OpInfo('div', variant_test_name='floor')]\n"),
        "test/test_ops.py": (
        "from torch.testing._internal.common_device_type import ops\n"
        "from torch.testing._internal.common_methods_invocations import op_db\n"
        "from torch.testing._internal.common_utils import TestCase\n"
        "class TestCommon(TestCase):\n"
        + "".join(f"    @ops(op_db)\n    def test_{t}(self, device, dtype, op):\n        pass\n"
                  for t in ("out", "neg_view", "conj_view", "non_standard_bool_values", "dtypes"))
        + "    def test_float_ops(self, device):\n        pass\n")}
    templates = ["test_out", "test_neg_view", "test_conj_view", "test_non_standard_bool_values", "test_dtypes"]
    ids = {n: [f"{t}_{n.replace('.', '_')}_{d}_{dt}" for t in templates for d in ("cpu", "cuda")
               for dt in ("float32", "bfloat16", "bool", "float64")] for n in names}
    others = ["test_float_ops_cpu"]
    with indexed_with(tree, entries) as ix:
        for n in names:
            expr = exact_k(ix, n.replace(".", "_"), "test/test_ops.py")
            picked = {m for m in names for i in ids[m] if _k_selects(expr, i)}
            assert picked == {n}, (n, expr, picked)
            assert all(_k_selects(expr, i) for i in ids[n]), (n, expr)
            assert not any(_k_selects(expr, i) for i in others), (n, expr)
        assert exact_k(ix, "neg", "test/test_ops.py") == \
            "(_neg_ and not test_neg_view or test_neg_view_neg_)"
        assert exact_k(ix, "abs", "test/test_ops.py") == "_abs_ and not __foreach_abs_"


def test_an_in_place_op_finds_the_opinfo_of_its_functional_forms_nn_functional_entry(tree):
    # alpha_dropout_ listed no OpInfo, though test_ops runs it through OpInfo("nn.functional.alpha_dropout")'s
    # in-place variant; alpha_dropout found it as F.alpha_dropout's
    with open(tree / "aten/src/ATen/native/native_functions.yaml", "a") as f:
        f.write("\n- func: alpha_dropout(Tensor input, float p, bool train) -> Tensor\n"
                "\n- func: alpha_dropout_(Tensor(a!) self, float p, bool train) -> Tensor(a!)\n")
    entries = {"torch/testing/_internal/common_methods_invocations.py": (
        "from torch.testing._internal.opinfo.core import OpInfo\n"
        "op_db = [OpInfo('nn.functional.alpha_dropout')]\n")}
    with indexed_with(tree, entries) as ix:
        for q in ("alpha_dropout", "alpha_dropout_"):
            res, _ = call(ix, "find_similar_tests", query=q)
            assert [o.name for o in res.opinfos] == ["nn.functional.alpha_dropout"], q


def test_a_name_joined_with_the_words_before_it_into_another_name_is_that_names_test():
    # Note [Named after another name]: l1_loss's tests listed seven of smooth_l1_loss's; softmax's, log_softmax's
    from functools import partial

    from torchtalk.query.testmatch import names_another
    known = frozenset({"smoothl1loss", "logsoftmax", "scaleddotproductattention", "l1loss", "softmax"})

    def score(name, key):
        nk = _norm(key)
        norm = "test" + _norm(name[4:])
        return _name_score(name, norm, nk, partial(names_another, name, key=nk, known=known, variants=frozenset()))
    assert score("test_smooth_l1_loss_reduction_mean", "l1_loss") is None  # not named after it
    assert score("test_log_softmax_dtype", "softmax") is None
    assert score("test_scaled_dot_product_attention", "dot") is None  # words on both sides
    assert score("test_quantized_l1_loss", "l1_loss") == 2  # another word, no other name: still l1_loss's
    assert score("test_l1_loss_correct", "l1_loss") == 1


def test_a_home_file_no_test_found_is_in_is_named_as_the_layouts(py_indexed):
    # gcd's home was stated as test/test_torch.py, which holds no gcd test (they are in test_binary_ufuncs.py)
    _tree, ix = py_indexed
    res, text = call(ix, "find_similar_tests", query="cumsum")
    assert res.home_tests and "Home test files (its tests named after it there rank first): " in text
    res, text = call(ix, "find_similar_tests", query="mm")
    assert res.home and not res.home_tests
    assert "Home test files by PyTorch's layout (no test found is there): test/test_torch.py" in text


def _with_op(tree, ix, op_yaml, appended):
    """The fixture tree's Index after appending an op to native_functions.yaml and text to files (created with their
    directories if missing): a context, as indexed_with."""
    ix.close()
    for rel, text in {"aten/src/ATen/native/native_functions.yaml": op_yaml, **appended}.items():
        (tree / rel).parent.mkdir(parents=True, exist_ok=True)
        with open(tree / rel, "a") as f:
            f.write(text)
    return indexed_with(tree, {})


# _upsample_bicubic2d_aa: 'No test names or test bodies mention it', though F.interpolate(mode="bicubic",
# antialias=True) calls it and test_nn's interpolate tests run it; _unpack_dual, called by
# torch.autograd.forward_ad.unpack_dual, outside the API modules the graph links Python callers in
@pytest.mark.parametrize("op, module, caller, written, test", [
    ("_resample_aa(Tensor self, float scale) -> Tensor\n  python_module: nn", "torch/nn/functional.py", "resample",
     "torch._C._nn._resample_aa(input, scale)", "test_resample_scales"),
    ("_unpack_twin(Tensor(a) input, float scale) -> (Tensor(a) primal, Tensor tangent)", "torch/autograd/twin_ad.py",
     "unpack_twin", "torch._VF._unpack_twin(input, scale)", "test_levels_roundtrip"),
])
def test_an_op_no_test_names_has_the_tests_of_the_python_function_calling_it(py_indexed, op, module, caller,
                                                                               written, test):
    tree, ix = py_indexed
    full = module.removesuffix(".py").replace("/", ".") + "." + caller
    with _with_op(tree, ix, f"\n- func: {op}\n", {
            module: f"\nimport torch\n\n\ndef {caller}(input, scale):\n    return {written}\n",
            "test/test_nn.py": (f"\n\nclass TestCaller(TestCase):\n    def {test}(self):\n"
                                f"        {full}(torch.ones(2), 0.5)\n")}) as ix:
        name = op.split("(")[0]
        res, text = call(ix, "find_similar_tests", query=name)
        assert [t.name for t in res.tests] == [test], text
        assert f"No test names {name!r}: these are the tests of {full}, which calls it" in text, text


def test_an_op_no_test_mentions_is_no_tests_not_an_unknown_name(tree):
    # quantized_batch_norm and native_norm were "not found" (exit 3) like a typo: no C++ function has their name
    with open(tree / "aten/src/ATen/native/native_functions.yaml", "a") as f:
        f.write("\n- func: lonely_norm(Tensor self) -> Tensor\n")
    with indexed_with(tree, {}) as ix:
        res, text = call(ix, "find_similar_tests", query="lonely_norm")
        assert not isinstance(res, NotFound) and res.total == 0, text
        assert "No test names or test bodies mention it." in text


def test_a_test_calling_the_op_through_the_dispatcher_is_its_test(py_indexed):
    # slice_inverse: test_autograd.py calls torch.ops.aten.slice_inverse(...), which the body spellings missed; 30
    # test files call aten.X.default(...) after aten = torch.ops.aten, which touches did not record
    tree, ix = py_indexed
    with _with_op(tree, ix, "\n- func: slice_twin(Tensor self, int dim) -> Tensor\n", {"test/test_nn.py": (
            "\n\naten = torch.ops.aten\n\n\nclass TestViews(TestCase):\n    def test_replay(self):\n"
            "        torch.ops.aten.slice_twin(torch.ones(2), 0)\n"
            "    def test_replay_default(self):\n        aten.slice_twin.default(torch.ones(2), 0)\n")}) as ix:
        res, text = call(ix, "find_similar_tests", query="slice_twin")
        assert {(t.name, t.why) for t in res.tests} == {("test_replay", "calls torch.ops.aten.slice_twin"),
                                                         ("test_replay_default", "calls aten.slice_twin")}, text
