"""test_file_info: the tests a class inherits from classes of its file (Note [Where tests run]), and decorators read
from their definition (Note [Decorators read from their definition]): a helper returning ``parametrize(...)``
renames its tests, one applying ``unittest.expectedFailure`` decides where they run."""

from torchtalk.tools import get_tool, run

from ..conftest import indexed_with, line_of

PATH = "test/test_helpers_fixture.py"
FILES = {
    "torch/testing/_internal/common_xfail.py": (
        "import unittest\n"
        "TEST_WITH_TORCHDYNAMO = False\n"
        "def xpassIfTorchDynamo_np(func):\n"
        "    return func if TEST_WITH_TORCHDYNAMO else unittest.expectedFailure(func)\n"
        "def plain(func):\n"
        "    return func\n"),
    PATH: (
        "from torch.testing._internal.common_utils import TestCase, instantiate_parametrized_tests, parametrize, "
        "run_tests\n"
        "from torch.testing._internal.common_xfail import plain, xpassIfTorchDynamo_np\n"
        "\n"
        "def layouts(name='layout'):\n"
        "    return parametrize(name, ['csr', 'csc'])\n"
        "\n"
        "def registrations(key):\n"
        "    subtests = [key]\n"
        "    return parametrize('registration', subtests)\n"
        "\n"
        "import unittest\n"
        "IS_X = False\n"
        "@unittest.skipIf(IS_X, 'never')\n"
        "class TestBase(TestCase):\n"
        "    def test_len(self):\n"
        "        pass\n"
        "\n"
        "    @xpassIfTorchDynamo_np\n"
        "    def test_compress(self):\n"
        "        pass\n"
        "\n"
        "class Mixin:\n"
        "    def test_from_mixin(self):\n"
        "        pass\n"
        "\n"
        "class TestDerived(TestBase, Mixin):\n"
        "    def test_own(self):\n"
        "        pass\n"
        "\n"
        "@xpassIfTorchDynamo_np\n"
        "class TestMarked(TestCase):\n"
        "    @layouts()\n"
        "    def test_to_dense(self):\n"
        "        pass\n"
        "\n"
        "    @registrations('CompositeImplicitAutograd')\n"
        "    @plain\n"
        "    def test_register(self):\n"
        "        pass\n"
        "\n"
        "instantiate_parametrized_tests(TestMarked)\n"
        "\n"
        "if __name__ == '__main__':\n"
        "    run_tests()\n"),
}


def _edited(old: str, new: str) -> dict[str, str]:
    """FILES with ``old`` replaced by ``new`` in the test file (once, and it must be there)."""
    assert PATH in FILES and old in FILES[PATH]
    return {**FILES, PATH: FILES[PATH].replace(old, new, 1)}


def call(ix, **kw):
    return run(get_tool("test_file_info"), ix, **kw)


def test_a_class_lists_the_tests_it_inherits_from_classes_of_its_file(py_indexed):
    """TestDerived(TestBase, Mixin) runs TestBase's tests (a base pytest also collects) and Mixin's (one it does
    not) as its own: its list shows them, each where it is written, run as TestDerived's (they were missing:
    'No test matches.' for query='test_len')."""
    tree, _ = py_indexed
    with indexed_with(tree, FILES) as ix:
        res, text = call(ix, file_path=PATH, class_name="TestDerived")
        got = [(t.cls, t.name, t.loc.line, t.origin) for t in res.page.tests]
        assert got == [("TestDerived", "test_own", line_of(tree, PATH, "def test_own"), ""),
                       ("TestDerived", "test_len", line_of(tree, PATH, "def test_len"), "TestBase"),
                       ("TestDerived", "test_compress", line_of(tree, PATH, "def test_compress"), "TestBase"),
                       ("TestDerived", "test_from_mixin", line_of(tree, PATH, "def test_from_mixin"), "Mixin")], text
        assert f"- test_len  {PATH}:{line_of(tree, PATH, 'def test_len')}  (inherited from TestBase)" in text
        res, text = call(ix, file_path=PATH, class_name="TestDerived", query="test_len")
        assert res.page.runs[0].command == f"pytest {PATH}::TestDerived::test_len", text
        # the base's class-level skip marks the class, and the class deriving from it inherits the mark
        derived = next(c for c in res.classes if c.name == "TestDerived")
        assert derived.from_bases == [("TestBase", "unittest.skipIf(IS_X, 'never')")], text
        assert "@unittest.skipIf(IS_X, 'never') on TestBase, which it derives from: applies to each of its tests too" \
            in text
        res, text = call(ix, file_path=f"{PATH}::TestDerived::test_len")  # a node id of it: the same test
        assert [(t.cls, t.name) for t in res.page.tests] == [("TestDerived", "test_len")], text
        assert res.page.runs[0].command == f"pytest {PATH}::TestDerived::test_len", text
        res, text = call(ix, file_path=PATH)  # the whole file lists each test once, where it is written
        assert [t.name for t in res.page.tests].count("test_len") == 1, text


def test_a_decorator_applying_expected_failure_is_shown_where_tests_run(py_indexed):
    """xpassIfTorchDynamo_np returns unittest.expectedFailure(func) outside dynamo: shown on the test and on the
    class, though its name is none of WHERE_IT_RUNS (it was dropped); a decorator returning its function is not."""
    tree, _ = py_indexed
    with indexed_with(tree, FILES) as ix:
        res, text = call(ix, file_path=PATH, class_name="TestBase", query="test_compress")
        assert res.page.tests[0].decorators == ["xpassIfTorchDynamo_np"], text
        res, text = call(ix, file_path=PATH)
        assert {c.name: c.decorators for c in res.classes}["TestMarked"] == ["xpassIfTorchDynamo_np"], text
        register = next(t for t in res.page.tests if t.name == "test_register")
        assert not any(d.startswith("plain") for d in register.decorators), text


def test_a_helper_returning_parametrize_renames_its_tests(py_indexed):
    """``def layouts(): return parametrize(...)`` (test_sparse_csr.py's all_sparse_compressed_layouts,
    test_vmap_registrations.py's dispatch_registrations): its tests run as test_x_<params>, so no node id names
    test_x itself (the command named it, and pytest found no such test)."""
    tree, _ = py_indexed
    with indexed_with(tree, FILES) as ix:
        for query, deco in (("test_to_dense", "layouts()"), ("test_register", "registrations('CompositeImplicit")):
            res, text = call(ix, file_path=PATH, class_name="TestMarked", query=query)
            run_ = res.page.runs[0]
            assert run_.generated == [f"TestMarked.{query}_<params>"], text
            assert f"::TestMarked::{query}" not in run_.command and run_.command.startswith(
                f'pytest {PATH} -k "TestMarked and {query}'), text
            assert res.page.tests[0].decorators[0].startswith(deco), text


def test_a_helper_parametrize_above_ops_keeps_the_op_in_the_names(py_indexed):
    """1.13.1's test_sparse_csr.py: ``@all_sparse_compressed_layouts() @ops(...) def test_consistency``: the layout,
    then the op entry, then device and dtype (find_similar_tests named the op ``<op>`` once another parametrizer
    renamed the test, and before that left the layout out); a name bound to ``ops(...)`` is an @ops."""
    tree, _ = py_indexed
    code = ("import torch\n"
            "from torch.testing._internal.common_device_type import instantiate_device_type_tests, ops\n"
            "from torch.testing._internal.common_methods_invocations import op_db\n"
            "from torch.testing._internal.common_utils import TestCase, parametrize, run_tests\n"
            "def layouts():\n"
            "    return parametrize('layout', ['csr', 'csc'])\n"
            "class TestSparseCompressed(TestCase):\n"
            "    @layouts()\n"
            "    @ops(op_db)\n"
            "    def test_consistency(self, layout, device, dtype, op):\n"
            "        torch.cumsum(op, 0)\n"
            "    @unary_ops\n"
            "    def test_alias(self, device, dtype, op):\n"
            "        pass\n"
            "unary_ops = ops(op_db)\n"
            "instantiate_device_type_tests(TestSparseCompressed, globals())\n")
    with indexed_with(tree, {"test/test_sparse_helper_fixture.py": code}) as ix:
        res, text = run(get_tool("find_similar_tests"), ix, query="cumsum", limit=50)
        found = next(t for t in res.tests if t.name == "test_consistency")
        assert found.generated[0] == "TestSparseCompressedCPU.test_consistency_<params>_cumsum_cpu_<dtype>", text
        # test_sparse.py's ``_sparse_unary_ops = ops(sparse_unary_ufuncs, ...)`` is an @ops: an entry, then the dtype
        res, text = run(get_tool("test_file_info"), ix, file_path="test/test_sparse_helper_fixture.py",
                        query="test_alias")
        assert res.page.runs[0].generated[0] == "TestSparseCompressedCPU.test_alias_<op>_cpu_<dtype>", text


def test_definitions_are_read_alone_not_by_parsing_their_files(py_indexed, monkeypatch):
    """A decorator's definition is read from its own lines: parsing the whole file it is in (test_torch.py, or
    common_methods_invocations.py's 1.2 MB in 0.7 s) made find_similar_tests("cumsum") take 1.1 s; and a keyword
    argument on a line of its own (``dtypes=[...]`` under ``@ops(``) is no module-level assignment of the name."""
    from torchtalk.query import decorator_defs

    def whole_file(*_a):
        raise AssertionError("a whole file was parsed")
    monkeypatch.setattr(decorator_defs, "parsed", whole_file)
    tree, _ = py_indexed
    files = _edited("@layouts()\n", "@ops(\n        op_db,\n        layouts=[1]\n    )\n    @layouts()\n")
    with indexed_with(tree, files) as ix:
        res, text = call(ix, file_path=PATH, class_name="TestMarked", query="test_to_dense")
        assert res.page.runs[0].generated == ["TestMarked.test_to_dense_<op>_<params>"], text
        res, text = call(ix, file_path=PATH, class_name="TestBase", query="test_compress")
        assert res.page.tests[0].decorators == ["xpassIfTorchDynamo_np"], text


def test_a_helper_returning_a_call_of_itself_ends(py_indexed):
    # renamers and the helpers they read through called each other with no bound: a RecursionError, shown as an
    # internal error
    tree, _ = py_indexed
    files = _edited("    return parametrize(name, ['csr', 'csc'])\n", "    return layouts(name)\n")
    with indexed_with(tree, files) as ix:
        res, text = call(ix, file_path=PATH, class_name="TestMarked", query="test_to_dense")
        assert res.page.tests[0].name == "test_to_dense", text
