"""trace_module / list_modules / find_similar_tests / list_test_utils / test_file_info on a fixture tree."""

import re

import pytest

from torchtalk.errors import BadArgument
from torchtalk.tools import get_tool, run

from ..annotations import Expectations, read_tree
from ..conftest import FIXTURE_TREE, index_with, indexed_with, line_of

LINEAR = Expectations(read_tree(FIXTURE_TREE.parent / "tree_py")).where("torch.nn.modules.linear.Linear")


def call(ix, tool, **kw):
    return run(get_tool(tool), ix, **kw)


def test_bases_resolve_transitively_through_imports_and_reexports(py_indexed):
    _, ix = py_indexed
    rows = dict(ix.q("SELECT fq, roots FROM py_class_fq"))
    assert rows["torch.nn.modules.linear.LazyLinear"] == "module"  # Linear -> Module, via .module import
    assert rows["torch.nn.modules.lazy.LazyModuleMixin"] == ""  # a mixin is not a module
    assert rows["torch.optim.sgd.SGD"] == "optimizer"
    assert rows["torch.optim.lr_scheduler.StepLR"] == "lr_scheduler"
    assert rows["torch.optim.lr_scheduler.ReduceLROnPlateau"] == "lr_scheduler"  # by what it does, not its bases
    assert rows["torch.optim.lr_scheduler._Averager"] == ""  # a step() without an optimizer
    assert rows["test.test_nn.TestNNDeviceType"] == "testcase"  # TestCase of torch.testing._internal
    # the names the packages above a class export it under, shortest first (search matches torch.nn.Linear so)
    exported = dict(ix.q("SELECT fq, exported FROM py_class_fq"))
    assert exported["torch.nn.modules.linear.Linear"] == "torch.nn.Linear torch.nn.modules.Linear"
    assert exported["torch.optim.lr_scheduler.StepLR"] == "torch.optim.StepLR"
    assert exported["torch.optim.lr_scheduler._Averager"] == ""
    assert exported["test.test_nn.TestNNDeviceType"] == ""  # a test file's class: no package exports it


def test_list_modules_by_category(py_indexed):
    _, ix = py_indexed
    res, text = call(ix, "list_modules", category="nn")
    names = {c.name for group in res.groups.values() for c in group}
    assert names == {"Identity", "Linear", "LazyLinear", "ReLU"}  # not Module itself, not the mixin
    assert LINEAR in text and "torch/optim" not in text
    # grouped by the file that defines them (a category word filed MultiheadAttention, of activation.py, under
    # "activations")
    assert [c.name for c in res.groups["torch/nn/modules/activation.py"]] == ["ReLU"]
    assert all(c.loc.path == path for path, group in res.groups.items() for c in group)
    res, _ = call(ix, "list_modules", category="optim")
    assert [c.name for c in res.groups["optimizers"]] == ["SGD"]
    # ReduceLROnPlateau derives from no scheduler class (as in 1.13.1) but is made on an optimizer and steps it;
    # _Averager has a step() but no optimizer, and private classes are not listed anyway.
    assert [c.name for c in res.groups["learning-rate schedulers"]] == ["ReduceLROnPlateau", "StepLR"]
    res, text = call(ix, "list_modules", category="lin")
    assert "is not a category" in text and {c.name for g in res.groups.values() for c in g} >= {"Linear", "LazyLinear"}


def test_list_modules_takes_a_package_as_its_category_and_a_module_path_as_where_classes_are(py_indexed):
    # list_modules("torch.optim") was "0 classes ... No class matches": searched as a class name
    _, ix = py_indexed
    for spelled, category in (("torch.optim", "optim"), ("torch.nn", "nn"), ("nn.modules", "nn")):
        res, _ = call(ix, "list_modules", category=spelled)
        assert res.total == call(ix, "list_modules", category=category)[0].total > 0, spelled
    for path in ("torch.optim.lr_scheduler", "optim.lr_scheduler"):
        res, text = call(ix, "list_modules", category=path)
        assert {c.name for g in res.groups.values() for c in g} == {"LRScheduler", "ReduceLROnPlateau", "StepLR"}, text
        assert "classes defined in module torch.optim.lr_scheduler" in text


def test_list_modules_takes_exported_private_modules_and_ranks_test_classes_last(py_indexed):
    """torch.optim.Adafactor lives in torch/optim/_adafactor.py and torch/optim/__init__.py exports it: listed; its
    private helper class is not. A search lists a test file's own module class after the library's."""
    tree, ix = py_indexed
    ix.close()
    init = (tree / "torch/optim/__init__.py").read_text() + "from ._adafactor import Adafactor\n"
    ix = index_with(tree, {
        "torch/optim/__init__.py": init,
        "torch/optim/_adafactor.py": "from .optimizer import Optimizer\n\n\nclass Adafactor(Optimizer):\n"
                                     "    def step(self):\n        pass\n\n\nclass Helper(Optimizer):\n    pass\n",
        "test/test_linearity.py": "import torch\n\n\nclass ALinearNet(torch.nn.Module):\n    pass\n",
        # a nested class of torch/testing/_internal (common_quantization's TestHelperModules.TwoLinearModule): once
        "torch/testing/_internal/common_linear.py": "import torch\n\n\nclass Helpers:\n"
                                                    "    class TwoLinearNet(torch.nn.Module):\n        pass\n"})
    try:
        res, _ = call(ix, "list_modules", category="optim")
        assert [c.name for c in res.groups["optimizers"]] == ["Adafactor", "SGD"]
        res, _ = call(ix, "list_modules", category="Linear")
        listed = [c.fq for g in res.groups.values() for c in g]
        assert listed.index("test.test_linearity.ALinearNet") > listed.index("torch.nn.modules.linear.Linear")
        assert [fq for fq in listed if fq.endswith("TwoLinearNet")] == [
            "torch.testing._internal.common_linear.Helpers.TwoLinearNet"]
    finally:
        ix.close()


@pytest.mark.parametrize("name", ["Linear", "nn.Linear", "torch.nn.Linear", "torch.nn.modules.linear.Linear"])
def test_trace_module_spellings_reach_the_op(py_indexed, name):
    _, ix = py_indexed
    res, text = call(ix, "trace_module", module_name=name)
    assert res.cls.fq == "torch.nn.modules.linear.Linear"
    assert LINEAR in text and "forward(self, input: Tensor) -> Tensor" in text
    assert "F.linear -> torch.nn.functional.linear = torch._C._nn.linear" in text
    assert re.search(r"- linear  aten/src/ATen/native/native_functions.yaml:78  "
                     r"\[CompositeImplicitAutograd: linear", text)


def test_trace_module_optimizer_follows_function_aliases(py_indexed):
    _, ix = py_indexed
    res, text = call(ix, "trace_module", module_name="torch.optim.SGD")
    assert res.entry.name == "step"
    assert "_single_tensor_sgd" in text and "_multi_tensor_sgd" in text


def test_trace_module_inherited_forward_and_unknown_names(py_indexed):
    _, ix = py_indexed
    res, text = call(ix, "trace_module", module_name="LazyLinear")
    assert "(inherited from torch.nn.modules.linear.Linear)" in text
    _, text = call(ix, "trace_module", module_name="Lienar")
    assert text.startswith("No module or optimizer named 'Lienar'. Close matches: Linear")
    # a class of that name that is not under the path asked for (torch.nn does not export it) is named first
    _, text = call(ix, "trace_module", module_name="nn.LazyModuleMixin")
    assert text.startswith("No module or optimizer named 'nn.LazyModuleMixin'. Close matches: "
                           "torch.nn.modules.lazy.LazyModuleMixin")


def test_trace_module_lists_every_other_class_of_the_name(py_indexed, monkeypatch):
    """The other classes of a bare name: all in the structured answer, the text names what it leaves out."""
    import torchtalk.render.modules as render
    tree, ix = py_indexed
    (tree / "torch/nn/modules/many.py").write_text("".join(
        f"\n\nclass Sub{i:02}:\n    class Linear(Module):\n        pass\n" for i in range(14)))
    from ..conftest import _reindexed
    ix.close()
    ix = _reindexed(tree)
    try:
        res, text = call(ix, "trace_module", module_name="Linear")
        assert res.cls.fq == "torch.nn.modules.linear.Linear"
        assert [fq for fq, _loc in res.others] == [f"torch.nn.modules.many.Sub{i:02}.Linear" for i in range(14)]
        assert "Other classes with this name (showing 12 of 14; the structured answer" in text
        assert "Sub11.Linear" in text and "Sub12.Linear" not in text
        monkeypatch.setattr(render, "MAX_OTHERS", 20)
        _, text = call(ix, "trace_module", module_name="Linear")
        assert "Other classes with this name: torch.nn.modules.many.Sub00.Linear" in text and "Sub13.Linear" in text
    finally:
        ix.close()


def test_find_similar_tests_names_generated_tests_and_commands(py_indexed):
    _, ix = py_indexed
    res, text = call(ix, "find_similar_tests", query="relu")
    first = res.tests[0]
    assert (first.cls, first.name) == ("TestNNDeviceType", "test_relu")
    assert first.command == 'pytest test/test_nn.py -k "TestNNDeviceType and test_relu"'
    assert first.generated[:2] == ["TestNNDeviceTypeCPU.test_relu_cpu_float32",
                                   "TestNNDeviceTypeCPU.test_relu_cpu_float64"]
    assert "TestNNDeviceTypeMPS.test_relu_mps_float32" in first.generated  # allow_mps=True
    assert any(t.name == "test_relu_functional" for t in res.tests)
    assert "UnaryUfuncInfo('relu')" in text
    res, _ = call(ix, "find_similar_tests", query="cumsum")
    cuda_only = next(t for t in res.tests if t.name == "test_cumsum_cuda")
    assert cuda_only.generated == ["TestNNDeviceTypeCUDA.test_cumsum_cuda_cuda"]  # @onlyCUDA


def test_list_test_utils_is_derived_from_the_source(py_indexed):
    _, ix = py_indexed
    res, text = call(ix, "list_test_utils", category="decorators")
    names = {n for n, *_ in res.groups["decorators"]}
    assert {"parametrize", "skipIfTorchDynamo", "dtypes", "onlyCUDA"} <= names
    res, _ = call(ix, "list_test_utils", category="all")
    assert "TestCase.assertEqual" in {n for n, *_ in res.groups["assertions"]}
    assert "instantiate_device_type_tests" in {n for n, *_ in res.groups["fixtures"]}
    with pytest.raises(BadArgument, match="choose one of: all, "):
        call(ix, "list_test_utils", category="helpers")


def test_list_test_utils_suggests_follow_ups_an_agent_can_read_at_once(py_indexed, monkeypatch):
    """The next: calls list a cut category whole when it is small, else its first NEXT_UTILS (a follow-up of all 654
    fixtures of 2.6.0 was 86k characters); the answer's own line still names the limit that lists all."""
    from torchtalk.render import next as nxt
    from torchtalk.tools import answer
    _, ix = py_indexed
    res, _ = call(ix, "list_test_utils", category="decorators", limit=1)
    total = res.counts["decorators"]
    assert total > 3
    monkeypatch.setattr(nxt, "NEXT_UTILS", 3)
    a = answer(get_tool("list_test_utils"), ix, category="decorators", limit=1)
    assert a.next == ['list_test_utils("decorators", limit=3)'], a.next
    assert f"limit={total} shows all" in a.text
    monkeypatch.setattr(nxt, "NEXT_UTILS", 500)
    assert answer(get_tool("list_test_utils"), ix, category="decorators", limit=1).next == [
        f'list_test_utils("decorators", limit={total})']


def test_test_file_info(py_indexed):
    _, ix = py_indexed
    # a topic names its file as PyTorch's layout does (nn -> test/test_nn.py, nn/activation ->
    # test/nn/test_activation.py)
    for spelling in ("nn", "nn/activation", "test_nn", "test_nn.py", "test/test_nn.py"):
        res, text = call(ix, "test_file_info", file_path=spelling)
        assert res.path == ("test/nn/test_activation.py" if "/act" in spelling else "test/test_nn.py"), spelling
    # close matches: the test files named with it first
    res, text = call(ix, "test_file_info", file_path="activ")
    assert res.suggestions[0] == "test/nn/test_activation.py"
    res, text = call(ix, "test_file_info", file_path="test_nn")
    assert {c.name: c.tests for c in res.classes} == {"TestNN": 2, "TestNNDeviceType": 2}
    device = next(c for c in res.classes if c.name == "TestNNDeviceType")
    assert device.generated_classes == ["TestNNDeviceTypeCPU", "TestNNDeviceTypeCUDA", "TestNNDeviceTypeMPS"]
    assert "instantiate_device_type_tests(TestNNDeviceType, allow_mps=True)" in text
    assert "torch.testing._internal.common_device_type: dtypes, instantiate_device_type_tests, onlyCUDA" in text
    assert "torch.relu" in text
    with pytest.raises(BadArgument, match="leaves the source tree"):
        call(ix, "test_file_info", file_path="../../etc/passwd")


def test_test_file_info_runs_the_file_as_its_main_block_says(py_indexed):
    """python FILE only where its __main__ calls run_tests; the file a __main__ that refuses names (test/jit/*.py:
    "use python test/test_jit.py"); pytest where there is no __main__ (functorch/test_ops.py here)."""
    tree, ix = py_indexed
    ix.close()
    jit = ("from torch.testing._internal.common_utils import TestCase\n\n\nclass TestList(TestCase):\n"
           "    def test_append(self):\n        pass\n\n\nif __name__ == \"__main__\":\n    raise RuntimeError(\n"
           "        \"This test file is not meant to be run directly, use:\\n\\n\"\n"
           "        \"\\tpython test/test_jit.py TESTNAME\\n\\n\"\n        \"instead.\"\n    )\n")
    ix = index_with(tree, {"test/jit/test_list_dict.py": jit})
    try:
        for path, command in (("test/test_nn.py", "python test/test_nn.py"),
                              ("test/functorch/test_ops.py", "pytest test/functorch/test_ops.py"),
                              ("test/jit/test_list_dict.py",
                               "python test/test_jit.py (its __main__ says to run it from there)")):
            res, text = call(ix, "test_file_info", file_path=path)
            assert res.command == command and f"run the file: {command}" in text
    finally:
        ix.close()


def test_test_file_info_lists_each_test_with_its_line_and_where_it_runs(py_indexed):
    _, ix = py_indexed
    res, text = call(ix, "test_file_info", file_path="test_nn")
    assert [(t.cls, t.name, t.loc.line) for t in res.page.tests] == [
        ("TestNN", "test_linear", 8), ("TestNN", "test_relu_functional", 12),
        ("TestNNDeviceType", "test_relu", 18), ("TestNNDeviceType", "test_cumsum_cuda", 23)]
    assert "- test_relu  test/test_nn.py:18  @dtypes(torch.float, torch.double)" in text
    assert "- test_cumsum_cuda  test/test_nn.py:23  @onlyCUDA" in text
    assert 'run one: pytest test/test_nn.py -k "TestNNDeviceType and test_relu"' in text
    assert "TestNNDeviceTypeCPU.test_relu_cpu_float32" in text and res.page.next_call == ""
    # A generated device class names its class as written; query narrows by name.
    res, text = call(ix, "test_file_info", file_path="test_nn", class_name="TestNNDeviceTypeCUDA", query="CUMSUM")
    assert [t.name for t in res.page.tests] == ["test_cumsum_cuda"] and res.page.class_name == "TestNNDeviceType"
    assert "class TestNNDeviceType and names containing 'CUMSUM'): 1-1 of 1 (of 4 in the file)" in text
    with pytest.raises(BadArgument, match="choose one of: TestNN, TestNNDeviceType"):
        call(ix, "test_file_info", file_path="test_nn", class_name="TestNope")
    res, text = call(ix, "test_file_info", file_path="test_nn", query="no_such_test")
    assert res.page.matching == 0 and "No test matches." in text


@pytest.mark.parametrize("node, cls, tests", [
    ("test/test_nn.py::TestNNDeviceTypeCPU::test_relu_cpu_float32", "TestNNDeviceType", ["test_relu"]),
    ("test_nn.py::TestNNDeviceType::test_relu", "TestNNDeviceType", ["test_relu"]),
    ("test/test_nn.py::TestNN::test_relu_functional[param]", "TestNN", ["test_relu_functional"]),
    ("test/test_nn.py::TestNN", "TestNN", ["test_linear", "test_relu_functional"]),
])
def test_test_file_info_takes_a_pytest_node_id(py_indexed, node, cls, tests):
    """A node id as CI logs print it names the file, the class (a generated one: its class as written) and the test
    (a generated name: the test it was made from, test_relu_cpu_float32 -> test_relu)."""
    _, ix = py_indexed
    res, text = call(ix, "test_file_info", file_path=node)
    assert res.path == "test/test_nn.py" and res.page.class_name == cls
    assert [t.name for t in res.page.tests] == tests
    # the answer leads with the class asked about: the file's other classes are named by the call that lists them
    other = ({"TestNN", "TestNNDeviceType"} - {cls}).pop()
    assert f"- {other}  " not in text and '(1 other classes: test_file_info("test/test_nn.py") lists them)' in text


def test_test_file_info_refuses_a_node_id_and_a_class_that_differ(py_indexed):
    _, ix = py_indexed
    with pytest.raises(BadArgument, match="class_name 'TestNN' and the node id's class 'TestNNDeviceType' differ"):
        call(ix, "test_file_info", file_path="test/test_nn.py::TestNNDeviceType::test_relu", class_name="TestNN")


def test_test_file_info_pages_a_long_list_and_names_the_call_for_the_rest(py_indexed, monkeypatch):
    from torchtalk.query import testlist
    _, ix = py_indexed
    monkeypatch.setattr(testlist, "PAGE_BUDGET", 100)  # two of the fixture's test lines
    res, text = call(ix, "test_file_info", file_path="test_nn")
    assert [t.name for t in res.page.tests] == ["test_linear", "test_relu_functional"]
    assert 'The rest (2 more): test_file_info("test/test_nn.py", offset=2)' in text
    assert 'test_file_info("test/test_nn.py", offset=2)' in text.split("next: ")[1]
    seen = []
    offset = 0
    while True:  # following the calls the answers name lists every test once
        res, _ = call(ix, "test_file_info", file_path="test_nn", offset=offset)
        seen += [t.name for t in res.page.tests]
        if not res.page.next_call:
            break
        offset = res.page.offset + len(res.page.tests)
    assert seen == ["test_linear", "test_relu_functional", "test_relu", "test_cumsum_cuda"]


@pytest.mark.parametrize("tool, kw, offered", [
    ("trace", {"function_name": "nn.Linear"}, 'trace_module("nn.Linear")'),
    ("cuda_kernels", {"function_name": "torch.optim.SGD"}, 'trace_module("torch.optim.SGD")'),
    ("calls", {"function_name": "torch.nn.functional.relu"}, 'trace("torch.nn.functional.relu")'),
    ("impact", {"function_name": "torch/nn/functional.py:15"}, 'trace("torch.nn.functional.relu")'),
    ("trace", {"function_name": "torch/nn/functional.py:15"}, 'trace("torch.nn.functional.relu")'),
    ("test_file_info", {"file_path": "cumsum"}, 'find_similar_tests("cumsum")'),
    ("trace_module", {"module_name": "cumsum"}, 'trace("cumsum")'),
])
def test_not_found_names_the_tool_that_knows_the_name(py_indexed, tool, kw, offered):
    """Note [Names of another kind]: the call that answers, in the text before the hint and first among next calls."""
    from torchtalk.query.results import NotFound
    from torchtalk.tools import answer
    _, ix = py_indexed
    a = answer(get_tool(tool), ix, **kw)
    assert isinstance(a.result, NotFound)
    assert a.next[0] == offered
    line = next(ln for ln in a.text.splitlines() if ln.startswith("It is "))
    assert line.endswith(f": {offered} answers it.")
    assert a.text.index(line) < a.text.index(a.result.hint)
    assert [f'{e.tool}("{e.arg}")' for e in a.result.elsewhere][0] == offered


def test_not_found_offers_nothing_for_a_name_no_tool_knows(py_indexed):
    from torchtalk.tools import answer
    _, ix = py_indexed
    for tool, kw in (("trace", {"function_name": "no_such_name_zz"}), ("calls", {"function_name": "no_such_name_zz"}),
                     ("trace_module", {"module_name": "NoSuchModuleZz"})):
        a = answer(get_tool(tool), ix, **kw)
        assert a.result.elsewhere == [] and "It is " not in a.text


def test_a_mixins_tests_run_in_the_test_cases_deriving_from_it(py_indexed):
    """Note [Where tests run]: StoreTestBase is no TestCase, so pytest runs its tests only as those of the classes
    deriving from it; HashStoreTest has no test of its own and runs two; LibUvFileStoreTest overrides one."""
    _, ix = py_indexed
    res, text = call(ix, "test_file_info", file_path="test/distributed/test_store.py")
    got = {c.name: (c.tests, c.inherited, c.collected) for c in res.classes}
    assert got == {"StoreTestBase": (2, 0, False), "FileStoreTest": (1, 2, True), "HashStoreTest": (0, 2, True),
                   "LibUvFileStoreTest": (1, 2, True)}, text
    assert res.total_tests == 8  # what pytest runs: 3 + 2 + 3, never the mixin's own
    assert ("no TestCase, so pytest runs its tests only in FileStoreTest, HashStoreTest, LibUvFileStoreTest") in text
    # a command names a class that runs the test; a test no generator renames is run by its node id
    assert "StoreTestBase: run one: pytest test/distributed/test_store.py::FileStoreTest::test_set_get_check" in text
    assert "FileStoreTest: run one: pytest test/distributed/test_store.py::FileStoreTest::test_refcount" in text
    # a node id of an inherited test lists it as the test of the class it names, saying which class writes it, and
    # runs it there (TestBase::test_x would run the base's copy: another class, its own setUp)
    p = "test/distributed/test_store.py"
    res, _ = call(ix, "test_file_info", file_path=f"{p}::HashStoreTest::test_append")
    assert (res.page.class_name, [(t.name, t.origin) for t in res.page.tests]) == (
        "HashStoreTest", [("test_append", "StoreTestBase")])
    assert res.page.runs[0].command == f"pytest {p}::HashStoreTest::test_append"
    res, _ = call(ix, "test_file_info", file_path=f"{p}::LibUvFileStoreTest::test_refcount")
    assert (res.page.class_name, [(t.name, t.origin) for t in res.page.tests]) == (
        "LibUvFileStoreTest", [("test_refcount", "FileStoreTest")])
    assert res.page.runs[0].command == f"pytest {p}::LibUvFileStoreTest::test_refcount"


def test_a_class_derived_from_another_test_files_class_runs_its_tests(py_indexed):
    """Note [Test imports]: `import test_c10d_common` in test/distributed/ is the file beside it; a class deriving
    from one of its classes is a TestCase through it and runs the tests written there."""
    _, ix = py_indexed
    res, text = call(ix, "test_file_info", file_path="test/distributed/test_c10d_nccl.py")
    got = {c.name: (c.tests, c.inherited, c.collected) for c in res.classes}
    # the TestCase the file imports by name is in its namespace, so pytest collects it here too (Note [Imported
    # test classes])
    assert got == {"DistributedDataParallelTest": (1, 2, True),
                   "NcclProcessGroupWithDispatchedCollectivesTests": (1, 1, True),
                   "ProcessGroupWithDispatchedCollectivesTests": (1, 0, True)}, text
    assert res.total_tests == 6 and "no TestCase" not in text
    # a generated name of an inherited test is found where it is written, and run as the class asked for
    res, text = call(ix, "test_file_info", file_path="test/distributed/test_c10d_nccl.py::DistributedDataParallelTest"
                     "::test_ddp_checkpointing_once_use_reentrant_True")
    assert [(t.name, t.loc.path) for t in res.page.tests] == [
        ("test_ddp_checkpointing_once", "test/distributed/test_c10d_common.py")], text
    assert "class CommonDistributedDataParallelTest (test/distributed/test_c10d_common.py; " \
        "DistributedDataParallelTest derives from it)" in text
    assert "pytest test/distributed/test_c10d_nccl.py -k \"DistributedDataParallelTest and " \
        "test_ddp_checkpointing_once\"" in text
    assert [c.name for c in res.classes] == ["DistributedDataParallelTest",
                                             "NcclProcessGroupWithDispatchedCollectivesTests",
                                             "ProcessGroupWithDispatchedCollectivesTests"]
    assert "- DistributedDataParallelTest  test/distributed/test_c10d_nccl.py:" in text
    assert "- NcclProcessGroupWithDispatchedCollectivesTests" not in text
    # found where it is written, a mixin's test is run as a class of the file deriving from it
    res, text = call(ix, "find_similar_tests", query="invalid_powerSGD_state")
    (found,) = [t for t in res.tests if t.name == "test_invalid_powerSGD_state"]
    assert (found.loc.path, found.command) == ("test/distributed/test_c10d_common.py", "pytest test/distributed/"
                                               "test_c10d_nccl.py::DistributedDataParallelTest::test_invalid_powerSGD_state")


def test_a_templates_tests_run_where_a_helper_copies_them(py_indexed):
    """copy_tests(CommonTemplate, CpuTests, "cpu") makes CpuTests.test_bool_cpu of CommonTemplate.test_bool;
    copy_tests(CommonTemplate, GPUTests, GPU_TYPE), a suffix made at run time, GPUTests.test_bool_cuda (before: GPUTests
    had 0 tests, "how many is not known")."""
    _, ix = py_indexed
    res, text = call(ix, "test_file_info", file_path="test/inductor/test_torchinductor.py")
    got = {c.name: (c.tests, c.inherited, c.runs_in) for c in res.classes}
    assert got == {"CommonTemplate": (2, 0, ["CpuTests (as test_..._cpu)", "GPUTests (as test_..._<GPU_TYPE>)"]),
                   "CpuTests": (0, 2, []), "GPUTests": (0, 2, [])}, text
    assert res.total_tests == 4
    assert "CommonTemplate: run one: pytest test/inductor/test_torchinductor.py::CpuTests::test_bool_cpu" in text
    for node in ("CpuTests::test_bool_cpu", "GPUTests::test_bool_cuda", "GPUTests::test_bool_xpu"):
        res, _ = call(ix, "test_file_info", file_path=f"test/inductor/test_torchinductor.py::{node}")
        assert (res.page.class_name, [t.name for t in res.page.tests]) == ("CommonTemplate", ["test_bool"]), node
        # run in the class the node id names, by its name there
        assert res.page.runs[0].command == f"pytest test/inductor/test_torchinductor.py::{node}", node


def test_find_similar_tests_runs_a_mixins_test_as_a_class_that_collects_it(py_indexed):
    _, ix = py_indexed
    res, text = call(ix, "find_similar_tests", query="set_get_check")
    (found,) = [t for t in res.tests if t.name == "test_set_get_check"]
    assert (found.cls, found.command) == (
        "StoreTestBase", "pytest test/distributed/test_store.py::FileStoreTest::test_set_get_check"), text


def test_not_found_says_what_kind_of_python_name_trace_answers(py_indexed):
    """A Python function that is no op's name is offered as one, not as 'an op, or a Python name of one', though it
    reaches ops of other names (F.softmin reaches softmax)."""
    from torchtalk.tools import answer
    _, ix = py_indexed
    a = answer(get_tool("impact"), ix, function_name="torch.optim.lr_scheduler._warn_get_lr_called_within_step")
    assert ("It is a Python function (trace follows it to the ops it reaches): "
            'trace("torch.optim.lr_scheduler._warn_get_lr_called_within_step") answers it.') in a.text
    a = answer(get_tool("calls"), ix, function_name="torch.nn.functional.relu")
    assert 'It is an op, or a Python name of one: trace("torch.nn.functional.relu") answers it.' in a.text
    a = answer(get_tool("calls"), ix, function_name="torch.nn.functional.softmin")
    assert ('It is a Python function (trace follows it to the ops it reaches): '
            'trace("torch.nn.functional.softmin") answers it.') in a.text


def test_a_class_the_file_deletes_is_not_collected_but_runs_in_those_derived_from_it(py_indexed):
    """Note [Classes pytest may not collect]: test/test_proxy_tensor.py derives TestGenericProxyTensorReal/Fake from
    TestGenericProxyTensor, then ``del TestGenericProxyTensor``: its tests run twice, as theirs, never as its own."""
    _, ix = py_indexed
    res, text = call(ix, "test_file_info", file_path="test/test_proxy_tensor.py")
    got = {c.name: (c.tests, c.inherited, c.collected, c.deleted) for c in res.classes}
    assert got == {"TestGenericProxyTensor": (2, 0, False, 23), "TestGenericProxyTensorReal": (0, 2, True, 0),
                   "TestGenericProxyTensorFake": (0, 2, True, 0), "TestRealProxyTensor": (1, 0, True, 0),
                   "TestProxyTensorOpInfo": (1, 0, True, 0)}, text
    assert res.total_tests == 2 + 2 + 1 + 1
    assert text.startswith("# test/test_proxy_tensor.py: 6 tests in 4 classes and 0 functions (and 1 class pytest "
                           "does not collect)")
    assert "deleted by the `del TestGenericProxyTensor` at line 23, so pytest runs its tests only in " \
        "TestGenericProxyTensorFake, TestGenericProxyTensorReal" in text
    assert "TestGenericProxyTensor: run one: pytest test/test_proxy_tensor.py::TestGenericProxyTensorFake::" \
        "test_make_fx_simple" in text
    assert "::TestGenericProxyTensor::" not in text
    # the header counts 6 while the list shows the 4 written: it says why
    assert "the file's 6 count each as pytest runs it" in text
    # only_for=only_for, with ``only_for = ("cpu")``: the class is TestProxyTensorOpInfoCPU, and a node id of it is one
    assert "instantiate_device_type_tests -> TestProxyTensorOpInfoCPU" in text and "ONLY_FOR" not in text
    res, text = call(ix, "test_file_info",
                     file_path="test/test_proxy_tensor.py::TestProxyTensorOpInfoCPU::test_make_fx_exhaustive_cpu")
    assert [(t.cls, t.name) for t in res.page.tests] == [("TestProxyTensorOpInfo", "test_make_fx_exhaustive")]


def test_an_unread_only_for_lists_the_usual_devices_and_admits_a_node_id_of_any(py_indexed):
    """Note [Devices of a generic class]: ``only_for = ("cuda") if IS_FBCODE else ("cpu", "cuda")`` is not read."""
    _, ix = py_indexed
    res, text = call(ix, "test_file_info", file_path="test/test_jit_fuser_te.py")
    assert "instantiate_device_type_tests -> TestNNCOpInfoCPU, TestNNCOpInfoCUDA (only_for=only_for: not a " \
        "constant of the file, so not read; listed as the usual devices, it may make a class of any other)" in text
    assert "instantiate_device_type_tests(TestNNCOpInfo, only_for=only_for (not read: not a constant of the " \
        "file))" in text
    for cls in ("TestNNCOpInfoCPU", "TestNNCOpInfoCUDA", "TestNNCOpInfoXPU"):
        res, text = call(ix, "test_file_info", file_path=f"test/test_jit_fuser_te.py::{cls}::test_nnc_correctness_x")
        assert [t.name for t in res.page.tests] == ["test_nnc_correctness"], text
    with pytest.raises(BadArgument):
        call(ix, "test_file_info", file_path="test/test_jit_fuser_te.py::TestNNCOpInfoONLY_FOR::test_x")


def test_a_class_defined_under_a_module_level_if_is_said_to_be_conditional(py_indexed):
    """Note [Classes pytest may not collect]: test/distributed/test_c10d_spawn_ucc.py defines classes only under
    ``if sys.version_info < (3, 9):`` (and, in the fixture, an else arm)."""
    _, ix = py_indexed
    res, text = call(ix, "test_file_info", file_path="test/distributed/test_c10d_spawn_ucc.py")
    got = {c.name: c.guard for c in res.classes}
    assert got == {"ProcessGroupShareTensorTest": "sys.version_info < (3, 9)", "TestUccAlways": "",
                   "TestDistributedNNFunctionsUcc": "not (not TEST_WITH_DEV_DBG_ASAN)"}, text
    assert (res.total_tests, res.conditional) == (4, 3)
    assert "4 tests in 3 classes and 0 functions; 3 of the tests only if the module-level condition of their " \
        "class holds" in text
    assert "defined only if sys.version_info < (3, 9): pytest collects it only when that holds" in text


def test_bases_are_in_pythons_method_resolution_order(py_indexed):
    """C3, not breadth first: ConvReLU3d(qat.Conv3d, _FusedModule) looks up all of qat.Conv3d's side (qat._ConvNd,
    nn.Conv3d, nn._ConvNd) before _FusedModule, and a base shared by both sides (Module) comes last."""
    from torchtalk.graph.pynames import pynames

    tree, ix = py_indexed
    ix.close()
    ix = index_with(tree, {"torch/ao/fused.py": (
        "from torch.nn import Module\n\n\nclass _ConvNd(Module):\n    pass\n\n\nclass Conv3d(_ConvNd):\n    pass\n\n\n"
        "class QatConvNd(_ConvNd):\n    pass\n\n\nclass QatConv3d(QatConvNd, Conv3d):\n    pass\n\n\n"
        "class Sequential(Module):\n    pass\n\n\nclass _FusedModule(Sequential):\n    pass\n\n\n"
        "class ConvReLU3d(QatConv3d, _FusedModule):\n    pass\n")})
    try:
        mro = [c.rsplit(".", 1)[-1] for c in pynames(ix).mro("torch.ao.fused.ConvReLU3d")]
        assert mro == ["ConvReLU3d", "QatConv3d", "QatConvNd", "Conv3d", "_ConvNd", "_FusedModule", "Sequential",
                       "Module"]
    finally:
        ix.close()


def test_an_attribute_made_by_a_tensor_op_or_a_tensor_class_is_a_tensor(py_indexed):
    """self.bias = Parameter(...) and self.buf = torch.cumsum(...) make Tensors: their methods are Tensor methods,
    said so with the line that makes them (before: "whose class the code does not show; not followed")."""
    tree, ix = py_indexed
    ix.close()
    ix = index_with(tree, {
        "torch/nn/parameter.py": "import torch\n\n\nclass Parameter(torch.Tensor):\n    pass\n",
        "torch/nn/modules/scaled.py": (
            "import torch\nfrom torch.nn.parameter import Parameter\n\nfrom .module import Module\n\n\n"
            "class Scaled(Module):\n    def __init__(self):\n        super().__init__()\n"
            "        self.weight = Parameter(torch.ones(3))\n        self.buf = torch.cumsum(torch.ones(3), 0)\n\n"
            "    def forward(self, x):\n        self.buf.relu_()\n        return x.mm(self.weight.unsqueeze(1))\n")})
    try:
        _res, text = call(ix, "trace_module", module_name="torch.nn.modules.scaled.Scaled")
        assert "self.buf.relu_ -> relu_ " in text and \
            "(a Tensor: made by torch.cumsum(...) at torch/nn/modules/scaled.py:11)" in text, text
        assert "self.weight.unsqueeze -> unsqueeze " in text and \
            "(a Tensor: made by Parameter(...) at torch/nn/modules/scaled.py:10)" in text, text
        assert "does not show" not in text
    finally:
        ix.close()


def test_a_hand_bound_tensor_method_takes_the_calls_its_yaml_method_cannot(py_indexed):
    """Tensor.size is bound by hand (THPVariable_size); the YAML gives only size.Dimname a method variant (size.int
    is manual_cpp_binding, a function). x.size(d + 1) and x.size() are that binding, never size.Dimname; a string
    literal is a Dimname (x.size("N"))."""
    tree, ix = py_indexed
    ix.close()
    ix = index_with(tree, {
        "torch/csrc/autograd/python_variable.cpp": (tree / "torch/csrc/autograd/python_variable.cpp").read_text() + (
            "\nnamespace torch::autograd {\n\nstatic PyObject* THPVariable_size(PyObject* self, PyObject* args) {\n"
            "  Py_RETURN_NONE;\n}\n\nstatic PyMethodDef size_methods[] = {\n"
            "    {\"size\", THPVariable_size, METH_VARARGS, nullptr},\n    {nullptr}};\n\n"
            "bool THPVariable_initSize(PyObject* module) {\n  static std::vector<PyMethodDef> methods;\n"
            "  THPUtils_addPyMethodDefs(methods, size_methods);\n  THPVariableType.tp_methods = methods.data();\n"
            "  return true;\n}\n\n} // namespace torch::autograd\n"),
        "torch/nn/modules/sized.py": (
            "from .module import Module\n\n\nclass Sized(Module):\n    def forward(self, x, d):\n"
            "        a = x.size(d + 1)\n        b = x.size()\n        c = x.size(\"N\")\n        return a, b, c\n")})
    try:
        _res, text = call(ix, "trace_module", module_name="torch.nn.modules.sized.Sized")
        lines = [ln for ln in text.splitlines() if "x.size" in ln and "[at torch/nn/modules/sized.py:" in ln]
        assert any("x.size -> Tensor.size " in ln and "sized.py:6]" in ln for ln in lines), text
        assert any("size.Dimname" in ln and "sized.py:8]" in ln for ln in lines), text
        assert not any("size.Dimname" in ln and ("sized.py:6]" in ln or "sized.py:7]" in ln) for ln in lines), text
    finally:
        ix.close()


def test_two_helpers_of_one_name_in_two_modules_are_counted_apart(tree):
    """The DTensor and the sharded-tensor ``with_comms`` are different decorators: each is counted by the test files
    importing it from its own module (a re-export counts for the one module defining the name)."""
    dec = ("from functools import wraps\ndef with_comms(func):\n    @wraps(func)\n    def wrapper(self):\n"
           "        return func(self)\n    return wrapper\n")
    base = "torch/testing/_internal/distributed"
    files = {f"{base}/_tensor/common_dtensor.py": dec, f"{base}/_shard/sharded_tensor/__init__.py": dec,
             "torch/testing/_internal/common_only.py": "def only_here(fn):\n    return fn\n",
             "torch/testing/_internal/reexport.py": "from torch.testing._internal.common_only import only_here\n"}
    for i in range(3):
        files[f"test/distributed/test_d{i}.py"] = \
            "from torch.testing._internal.distributed._tensor.common_dtensor import with_comms\n"
    files["test/distributed/test_s.py"] = \
        "from torch.testing._internal.distributed._shard.sharded_tensor import with_comms\n" \
        "from torch.testing._internal.reexport import only_here\n"
    ix = index_with(tree, files)
    try:
        res, _ = call(ix, "list_test_utils", category="decorators", limit=500)
        used = {(str(loc.path), name): n for name, _k, loc, _d, n in res.groups["decorators"]}
        assert used[f"{base}/_tensor/common_dtensor.py", "with_comms"] == 3
        assert used[f"{base}/_shard/sharded_tensor/__init__.py", "with_comms"] == 1
        assert used["torch/testing/_internal/common_only.py", "only_here"] == 1
    finally:
        ix.close()


def test_a_mixins_tests_are_run_by_a_class_of_another_file_on_its_own_page(py_indexed):
    """test_c10d_common.py's CommonDistributedDataParallelTest is no TestCase and no class of its file derives from
    it: its page's command runs it where test_c10d_nccl.py's DistributedDataParallelTest does (before: a command on
    test_c10d_common.py that selects nothing)."""
    _, ix = py_indexed
    res, text = call(ix, "test_file_info", file_path="test/distributed/test_c10d_common.py")
    runs = {r.cls: r.command for r in res.page.runs}
    assert runs["CommonDistributedDataParallelTest"].startswith(
        "pytest test/distributed/test_c10d_nccl.py"), text
    assert "DistributedDataParallelTest" in runs["CommonDistributedDataParallelTest"]
    assert runs["ProcessGroupWithDispatchedCollectivesTests"].startswith(
        "pytest test/distributed/test_c10d_common.py::ProcessGroupWithDispatchedCollectivesTests::"), text


def test_a_mixins_test_asked_through_a_node_id_runs_in_the_class_it_names(py_indexed):
    """test_store.py's StoreTestBase runs in FileStoreTest and HashStoreTest: a node id naming HashStoreTest is run
    there (before: in FileStoreTest, the first class deriving from the mixin)."""
    _, ix = py_indexed
    for cls in ("HashStoreTest", "FileStoreTest"):
        res, text = call(ix, "test_file_info", file_path=f"test/distributed/test_store.py::{cls}::test_set_get_check")
        assert [t.name for t in res.page.tests] == ["test_set_get_check"], text
        assert res.page.runs[0].command == f"pytest test/distributed/test_store.py::{cls}::test_set_get_check", text



def test_a_templates_copy_for_a_device_is_the_class_a_device_change_runs(py_indexed):
    # affected by a CUDA-only change named CommonTemplate.test_polar with CpuTests' command and "no cuda variant":
    # copy_tests(CommonTemplate, GPUTests, GPU_TYPE) is its copy for CUDA (GPU_TYPE is "cuda" or "xpu")
    from torchtalk.query.testclasses import device_copy
    _, ix = py_indexed
    path = "test/inductor/test_torchinductor.py"
    assert [device_copy(ix, path, "CommonTemplate", "test_bool", d) for d in ("cuda", "cpu", "mps")] == [
        f"{path}::GPUTests::test_bool_cuda", f"{path}::CpuTests::test_bool_cpu", ""]
    assert device_copy(ix, path, "CpuTests", "test_bool", "cuda") == ""  # a collected class is no template


def test_a_test_parameterized_expand_renames_runs_as_its_named_copies(py_indexed):
    # test_dynamo_with_onnxruntime_backend.py's @parameterized.expand([(True,), (False,)]): pytest collects
    # test_x_0 and test_x_1, never test_x (the library marks it __test__ = False)
    tree, ix = py_indexed
    ix.close()
    with indexed_with(tree, {"test/test_expand.py": (
        "from parameterized import parameterized\nfrom torch.testing._internal.common_utils import TestCase\n\n\n"
        "class TestExpand(TestCase):\n    @parameterized.expand([(\"relu\",), (\"gelu-tanh\",)])\n"
        "    def test_act(self, name):\n        pass\n")}) as ix:
        _res, text = call(ix, "test_file_info", file_path="test/test_expand.py")
        assert "test/test_expand.py::TestExpand::test_act_0_relu" in text, text
        assert "TestExpand.test_act_1_gelu_tanh" in text and "::TestExpand::test_act " not in text, text



def test_a_modules_call_of_a_bound_name_reaches_the_overloads_its_arguments_take(py_indexed):
    # nn.GELU: F.gelu(input, approximate=...) listed gelu.out first; F.gelu = _add_docstr(torch._C._nn.gelu, ...)
    tree, ix = py_indexed
    ix.close()
    with indexed_with(tree, {"torch/nn/modules/angle.py": (
        "import torch.nn.functional as F\nfrom .module import Module\n\n\nclass Angle(Module):\n"
        "    def forward(self, input, other):\n        return F.atan2_of(input, other)\n")}) as ix:
        res, text = call(ix, "trace_module", module_name="torch.nn.modules.angle.Angle")
        binding = line_of(tree, "torch/nn/functional.py", "atan2_of = _add_docstr(")
        assert (f"- F.atan2_of -> torch.nn.functional.atan2_of = torch.atan2  torch/nn/functional.py:{binding} -> "
                "op atan2  [at torch/nn/modules/angle.py:7]") in text, text
        assert [o.full_name for o, _via in res.ops.values()] == ["atan2"], text
