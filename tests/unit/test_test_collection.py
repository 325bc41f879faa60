"""How a test file's tests are collected and named (test_file_info on tests/fixtures/tree_py): parametrizers known by
their class, imported TestCases, classes filled at import time, selectors of one test, class-level and __main__
conditions."""

import json

from torchtalk.query import testlist
from torchtalk.query.testclasses import Classes
from torchtalk.query.testnames import Renamer, generated_names, select_one
from torchtalk.tools import get_tool, run


def call(ix, tool, **kw):
    return run(get_tool(tool), ix, **kw)


def runs_of(res):
    return {r.cls: r for r in res.page.runs}


def test_a_parametrizer_known_by_its_class_renames_the_test_with_the_suffixes_its_source_makes(py_indexed):
    """Note [Parametrizers rename tests]: ``@swap([True, False])`` (class swap(_TestParametrizer), suffix
    ``f'swap_{swap}'``) makes test_x_swap_True and test_x_swap_False; no node id names test_x itself."""
    _, ix = py_indexed
    res, text = call(ix, "test_file_info", file_path="test/nn/test_parametrization.py")
    runs = runs_of(res)
    p = "test/nn/test_parametrization.py"
    assert runs["TestNNParametrization"].command == (
        f"pytest {p}::TestNNParametrization::test_register_and_remove_parametrization_swap_True "
        f"{p}::TestNNParametrization::test_register_and_remove_parametrization_swap_False"), text
    assert "::TestNNParametrization::test_register_and_remove_parametrization\n" not in text
    assert runs["TestNNParametrizationDevice"].generated == [
        "TestNNParametrizationDeviceCPU.test_weight_norm_parametrization_swap_True_cpu",
        "TestNNParametrizationDeviceCPU.test_weight_norm_parametrization_swap_False_cpu",
        "TestNNParametrizationDeviceCUDA.test_weight_norm_parametrization_swap_True_cuda",
        "TestNNParametrizationDeviceCUDA.test_weight_norm_parametrization_swap_False_cuda"]
    assert "- test_register_and_remove_parametrization  test/nn/test_parametrization.py:8  @swap([True, False])" \
        in text
    # decorateIf is a parametrizer too, whose suffix is '': it renames nothing
    res, text = call(ix, "test_file_info", file_path="test/nn/test_parametrization.py", query="nested")
    assert runs_of(res)["TestNNParametrization"].command == \
        f"pytest {p}::TestNNParametrization::test_register_and_remove_nested", text


def test_a_parametrizer_over_a_db_gives_a_placeholder_and_its_dtype_after_the_device(py_indexed):
    """@optims names each test by ``optim_info.name`` (not computable from the source) and puts the dtype in
    param_kwargs, so it follows the device; the decorator, which no WHERE_IT_RUNS name matches, is shown."""
    _, ix = py_indexed
    res, text = call(ix, "test_file_info", file_path="test/test_optim.py", query="foreach_matches")
    run_ = runs_of(res)["TestOptimRenewed"]
    assert run_.generated[0] == "TestOptimRenewedCPU.test_foreach_matches_forloop_<optim_info.name>_cpu_<dtype>", text
    assert run_.command == 'pytest test/test_optim.py -k "TestOptimRenewed and test_foreach_matches_forloop"'
    assert "@optims([optim for optim in optim_db" in text and "<...>: made at run time" in text


def test_run_one_excludes_the_tests_whose_names_begin_with_its_own(py_indexed):
    """Note [Selecting one test's family]: ``-k "TestFXGraphPasses and test_partitioner"`` also selects
    test_partitioner_independent_output's tests."""
    _, ix = py_indexed
    res, text = call(ix, "test_file_info", file_path="test/test_fx_passes.py")
    run_ = runs_of(res)["TestFXGraphPasses"]
    assert run_.command == ('pytest test/test_fx_passes.py -k "TestFXGraphPasses and test_partitioner and not '
                            'test_partitioner_independent_output"'), text
    assert run_.exact and "TestFXGraphPasses: run one: " in text
    res, text = call(ix, "test_file_info", file_path="test/test_optim.py", query="goes_right")
    assert runs_of(res)["TestOptimRenewed"].command == ('pytest test/test_optim.py -k "TestOptimRenewed and '
                                                        'test_forloop_goes_right_direction and not '
                                                        'test_forloop_goes_right_direction_multigpu"')


def test_a_selector_that_cannot_tell_the_test_apart_is_not_called_run_one():
    swap = {"swap([1])": Renamer("swap", ("swap_1",), "<params>", False)}
    sel = select_one("test/test_a.py", "TestA", "test_x", ["swap([1])"], json.dumps({}), swap, ["test_x_swap_1"])
    assert not sel.exact  # the sibling's name is one of test_x's own: -k cannot leave it out
    assert not select_one("test/test_a.py", "TestA", "test_x", ["parametrize('x', [1])"], None).exact  # siblings?
    decos = ["swap([1])", "parametrize('x', [1])"]
    assert generated_names("TestA", "test_x", decos, json.dumps({})) == \
        ["TestACPU.test_x_<params>_cpu", "TestACUDA.test_x_<params>_cuda"]
    assert generated_names("TestA", "test_x", decos, json.dumps({}), None, swap) == \
        ["TestACPU.test_x_swap_1_<params>_cpu", "TestACUDA.test_x_swap_1_<params>_cuda"]


def test_imported_test_cases_run_in_the_importing_file(py_indexed):
    """Note [Imported test classes]: test_jit.py imports TestTracer; test_jit_simple.py star-imports test_jit; a
    class a module-level loop fills is shown, flagged."""
    _, ix = py_indexed
    res, text = call(ix, "test_file_info", file_path="test/test_jit_simple.py")
    got = {c.name: (c.tests + c.inherited, c.imported_from, c.loc.path) for c in res.classes}
    assert got == {"TestTracer": (2, "test_jit", "test/jit/test_tracer.py"),
                   "TestJit": (1, "test_jit", "test/test_jit.py"),
                   "TestJitGeneratedModule": (0, "test_jit", "test/test_jit.py")}, text
    assert res.total_tests == 3 and "The file has no test methods" not in text
    assert [c.filled_at for c in res.classes if c.name == "TestJitGeneratedModule"] == [23]
    res, text = call(ix, "test_file_info", file_path="test/test_jit.py")
    got = {c.name: (c.tests, c.imported_from, c.filled_at) for c in res.classes}
    assert got == {"TestJit": (1, "", 0), "TestJitGeneratedModule": (0, "", 23),
                   "TestTracer": (2, "jit.test_tracer", 0)}, text
    assert res.total_tests == 3
    assert "tests added at import time (test/test_jit.py:23 passes it to a call)" in text


def test_a_node_id_of_an_imported_class_answers_where_its_tests_are_written(py_indexed):
    """pytest collects an imported TestCase in the importing file and names it so
    (``test/test_jit_simple.py::TestTracer::test_trace_b``, through two imports): the answer is the page of the file
    that writes it, saying which file asked; a class_name the file only imports is answered the same way."""
    _, ix = py_indexed
    res, text = call(ix, "test_file_info", file_path="test/test_jit_simple.py::TestTracer::test_trace_b")
    assert res.path == "test/jit/test_tracer.py" and res.imported_by == ("test/test_jit_simple.py", "test_jit"), text
    assert [(t.name, t.loc.line) for t in res.page.tests] == [("test_trace_b", 8)], text
    assert runs_of(res)["TestTracer"].command == "pytest test/jit/test_tracer.py::TestTracer::test_trace_b", text
    assert text.splitlines()[1].startswith("Asked through test/test_jit_simple.py, which imports the class from "
                                           "test_jit")
    res, text = call(ix, "test_file_info", file_path="test/test_jit.py", class_name="TestTracer")
    assert res.path == "test/jit/test_tracer.py"
    assert [t.name for t in res.page.tests] == ["test_trace_a", "test_trace_b"]
    # a class the file writes is its own, as before
    res, text = call(ix, "test_file_info", file_path="test/test_jit.py::TestJit::test_script")
    assert res.path == "test/test_jit.py" and res.imported_by == ("", ""), text


def test_a_node_id_of_a_test_added_at_import_time_says_where_it_may_come_from(py_indexed):
    """Note [Tests added at import time]: test_jit.py's loop adds test_nn_<name> to TestJitGeneratedModule through
    post_add_test(..., TestJitGeneratedModule) at line 23; ``hasattr(TestJit, ...)`` reads TestJit and adds nothing."""
    _, ix = py_indexed
    res, text = call(ix, "test_file_info", file_path="test/test_jit.py::TestJitGeneratedModule::test_nn_Linear")
    assert res.added_at == 23 and not res.page.tests, text
    assert ("TestJitGeneratedModule gets tests added when the module is imported (test/test_jit.py:23 passes it to a "
            "call), so pytest may collect test_nn_Linear there: pytest "
            "test/test_jit.py::TestJitGeneratedModule::test_nn_Linear runs it if so.") in text
    res, text = call(ix, "test_file_info", file_path="test/test_jit.py::TestJit::test_nn_Linear")
    assert res.added_at == 0 and "No test matches." in text, text
    res, text = call(ix, "test_file_info", file_path="test/test_jit.py::TestJit::test_script")  # a written one
    assert res.added_at == 0 and [t.name for t in res.page.tests] == ["test_script"], text


def test_run_one_is_the_test_a_node_id_names_when_others_contain_its_name():
    """A node id's test is its class's example even when a test whose name contains it comes first in the file
    (test/jit/test_class_type.py: test_type_annotations at line 177, test_type_annotation at 1146)."""
    rows = [("TestClassType", "test_type_annotations", 177, "[]"),
            ("TestClassType", "test_type_annotation", 1146, "[]")]
    page = testlist.test_page("test/jit/test_class_type.py", rows, {}, "TestClassType", "test_type_annotation", 0, str)
    assert [t.name for t in page.tests] == ["test_type_annotations", "test_type_annotation"]  # source order kept
    assert page.runs[0].example == "test_type_annotation"
    assert page.runs[0].command == "pytest test/jit/test_class_type.py::TestClassType::test_type_annotation"
    page = testlist.test_page("test/jit/test_class_type.py", rows, {}, "TestClassType", "type_annot", 0, str)
    assert page.runs[0].example == "test_type_annotations"  # no exact name: the first


def test_class_decorators_and_a_gated_main_are_shown(py_indexed):
    _, ix = py_indexed
    res, text = call(ix, "test_file_info", file_path="test/distributed/test_symmetric_memory.py")
    got = {c.name: c.decorators for c in res.classes}
    assert got == {"SymmetricMemoryTest": ["requires_cuda_p2p_access()"],
                   "AsyncTPTest": ["unittest.skipIf(sys.platform == 'darwin', 'No CUDA on darwin')"]}, text
    assert "@requires_cuda_p2p_access() on the class: applies to each of its tests" in text
    assert "(each test of SymmetricMemoryTest also has the class's @requires_cuda_p2p_access())" in text
    res, text = call(ix, "test_file_info", file_path="test/inductor/test_aot_inductor_custom_ops.py")
    assert res.command.startswith("python test/inductor/test_aot_inductor_custom_ops.py (its __main__ runs the "
                                  "tests only if HAS_CUDA or sys.platform == 'darwin'"), res.command


def test_a_node_id_of_a_class_own_test_is_not_taken_for_an_inherited_one_its_name_begins_with():
    """test_serialization.py: TestSerialization(TestCase, SerializationMixin) writes test_serialization_with_header
    and inherits test_serialization; the node id of the first is its own test, not a generated name of the second.
    A generated name of an inherited test is still that test, unless an own test names it more closely."""
    where = Classes(own={"TestSerialization": ["test_serialization_with_header", "test_x"],
                         "SerializationMixin": ["test_serialization"]},
                    origin={("TestSerialization", "test_serialization"): "SerializationMixin"})
    assert where.source_of("TestSerialization", "test_serialization_with_header") is None
    assert where.source_of("TestSerialization", "test_serialization_cpu") == ("SerializationMixin",
                                                                               "test_serialization")
    assert where.source_of("TestSerialization", "test_serialization") == ("SerializationMixin", "test_serialization")
    where.own["TestSerialization"].append("test_serialization_with")
    assert where.source_of("TestSerialization", "test_serialization_with_header_cpu") is None
