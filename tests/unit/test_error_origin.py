"""error_origin: raise sites indexed per file, messages matched to them, and what leads there (fixture trees).

Messages are built from the fixture tree's own raise sites (tests/fixtures/tree:
aten/src/ATen/native/LinearAlgebra.cpp, aten/src/ATen/core/adaption.cpp, torch/csrc/autograd/*;
tests/fixtures/tree_py: torch/utils/data/dataloader.py, torch/_meta_registrations.py).
"""

from __future__ import annotations

import shutil
import time

import pytest

from torchtalk.errors import BadArgument
from torchtalk.extract.cpp import extract_cpp
from torchtalk.extract.pymodules import extract_python
from torchtalk.model import CppSymbol, Layer, PyFunction, RaiseKind, RaiseSite
from torchtalk.model.raises import Verdict
from torchtalk.query import error_reach
from torchtalk.query import errors as errors_query
from torchtalk.query.error_text import MAX_INPUT, MAX_MESSAGE, clean
from torchtalk.store.reader import Index
from torchtalk.tools import get_tool, run

from ..conftest import FIXTURE_TREE, build_index, indexed_with

MAT = "RuntimeError: mat1 and mat2 shapes cannot be multiplied (64x10 and 20x30)"


@pytest.fixture(scope="module")
def fixture_ix(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("errors")
    tree = tmp / "pytorch"
    shutil.copytree(FIXTURE_TREE, tree)
    shutil.copytree(FIXTURE_TREE.parent / "tree_py", tree, dirs_exist_ok=True)
    shutil.copytree(FIXTURE_TREE.parent / "tree_errors", tree, dirs_exist_ok=True)
    _st, ix, _rep = build_index(tree, tmp / "cache", workers=1, codegen=False)
    yield ix
    ix.close()


def ask(ix, message, **kw):
    return run(get_tool("error_origin"), ix, message=message, **kw)


def cpp_sites(src: str, path: str = "aten/src/ATen/native/X.cpp") -> tuple[list[RaiseSite], list[CppSymbol]]:
    facts = extract_cpp(path, src.encode())
    return facts[RaiseSite], facts[CppSymbol]


def py_sites(src: str, path: str = "torch/x.py") -> tuple[list[RaiseSite], list[PyFunction]]:
    facts = extract_python(path, src.encode())
    return facts[RaiseSite], facts[PyFunction]


# ------------------------------------------------------------------ extraction


def test_cpp_check_pieces_condition_macro_and_function():
    sites, syms = cpp_sites('''
namespace at::native {
Tensor f(const Tensor& a) {
  TORCH_CHECK_INDEX(a.dim() ==   2,
      "expected ", "a 2-D tensor, got ", a.dim(), "-D with sizes ", a.sizes());
  TORCH_CHECK(a.numel() > 0);
  TORCH_INTERNAL_ASSERT(a.defined(), "undefined");
  TORCH_WARN("slow path for ", a.scalar_type());
  AT_ERROR("no kernel for ", a.device());
  C10_THROW_ERROR(ValueError, c10::str("bad value: ", a.item()));
  if (a.dim() > 8) throw std::runtime_error(std::string("too many dims: ") + std::to_string(a.dim()));
  return a;
}
}''')
    by = {s.macro: s for s in sites}
    idx = by["TORCH_CHECK_INDEX"]
    assert (idx.pieces, idx.gaps) == (("expected a 2-D tensor, got ", "-D with sizes ", ""), ("a.dim()", "a.sizes()"))
    assert idx.condition == "a.dim() == 2" and idx.exception == "IndexError" and idx.kind is RaiseKind.CHECK
    assert (idx.line, idx.end_line) == (4, 5)
    assert syms[idx.cpp_func].qualname == "at::native::f"
    plain = by["TORCH_CHECK"]  # no message: the one TORCH_CHECK_MSG prints, with the condition in it
    assert plain.pieces == ("Expected a.numel() > 0 to be true, but got false.  (Could this error message be "
                            "improved?  If so, please report an enhancement request to PyTorch.)",)
    assert by["TORCH_INTERNAL_ASSERT"].pieces[0] == 'a.defined() INTERNAL ASSERT FAILED at "'
    assert by["TORCH_INTERNAL_ASSERT"].pieces[-1] == ", please report a bug to PyTorch. undefined"
    assert by["TORCH_WARN"].exception == "UserWarning" and by["TORCH_WARN"].kind is RaiseKind.WARN
    assert by["AT_ERROR"].pieces == ("no kernel for ", "")
    assert by["C10_THROW_ERROR"].exception == "ValueError" and by["C10_THROW_ERROR"].pieces == ("bad value: ", "")
    thrown = by["throw std::runtime_error"]
    assert thrown.pieces == ("too many dims: ", "") and thrown.condition == ""


def test_cpp_printf_fmt_and_python_error_setters():
    sites, _ = cpp_sites('''
PyObject* g(PyObject* o, int64_t n) {
  PyErr_Format(PyExc_TypeError, "expected %s (got %" PRId64 "), 100%% sure", Py_TYPE(o)->tp_name, n);
  throw TypeError("%s(): argument '%s' must be %s", "f", "x", "int");
  TORCH_CHECK(n > 0, fmt::format("n must be positive, got {} ({:d})", n, n));
}''', "torch/csrc/x.cpp")
    by = {s.macro: s for s in sites}
    assert by["PyErr_Format"].exception == "TypeError"
    assert by["PyErr_Format"].pieces == ("expected ", " (got ", "), 100% sure")
    assert by["throw TypeError"].pieces == ("", "(): argument '", "' must be ", "")
    assert by["TORCH_CHECK"].pieces == ("n must be positive, got ", " (", ")")


def test_cpp_checks_in_a_same_file_macro_count_at_its_use():
    sites, syms = cpp_sites((FIXTURE_TREE / "aten/src/ATen/native/LinearAlgebra.cpp").read_text())
    mult = [s for s in sites if s.pieces[0].startswith("mat1 and mat2 shapes")]
    assert len(mult) == 1 and mult[0].via == "ADDMM_META" and mult[0].line == 15  # the ADDMM_META(); line
    assert syms[mult[0].cpp_func].display == "TORCH_META_FUNC(addmm)"
    assert not [s for s in sites if s.line < 14]  # nothing recorded inside the #define itself


def test_cpp_string_constants_are_recorded_where_defined():
    sites, _ = cpp_sites((FIXTURE_TREE / "torch/csrc/autograd/saved_variable.cpp").read_text(),
                         "torch/csrc/autograd/saved_variable.cpp")
    const = [s for s in sites if s.kind is RaiseKind.CONSTANT]
    assert [c.macro for c in const] == ["ERR_BACKWARD_TWICE"] and const[0].pieces[0].startswith("Trying to backward")
    use = [s for s in sites if s.kind is RaiseKind.CHECK]
    assert use[0].gaps == ("ERR_BACKWARD_TWICE",)  # a message that is only a constant's name is kept


def test_python_raises_f_strings_format_percent_locals_and_constants():
    sites, funcs = py_sites((FIXTURE_TREE.parent / "tree_py/torch/utils/data/dataloader.py").read_text(),
                            "torch/utils/data/dataloader.py")
    texts = {s.template: s for s in sites}
    batch = texts["batch_size should be a positive integer value, but got batch_size={batch_size}"]
    assert batch.exception == "ValueError" and batch.macro == "raise ValueError" and batch.kind is RaiseKind.RAISE
    assert batch.condition == "not isinstance(batch_size, int) or batch_size <= 0"
    assert funcs[batch.py_func].qualname == "DataLoader.__init__"
    assert "sampler option is mutually exclusive with shuffle" in texts  # a module-level constant
    assert "num_workers option should be non-negative; use num_workers=0 to disable multiprocessing." in texts
    warn = texts["This DataLoader will create {num_workers} worker processes in total."]
    assert warn.kind is RaiseKind.WARN and warn.exception == "UserWarning"
    assert "dataset {type(dataset).__name__} is not a Dataset" in texts
    assert texts["batch_size is too large"].exception == "AssertionError"


def test_python_torch_check_takes_the_lambdas_message():
    sites, _ = py_sites((FIXTURE_TREE.parent / "tree_py/torch/_meta_registrations.py").read_text(),
                        "torch/_meta_registrations.py")
    by = {s.macro: s for s in sites}
    assert by["torch._check"].template == "mat1 must be a matrix, got {mat1.dim()}-D tensor"
    assert by["torch._check"].condition == "mat1.dim() == 2"
    assert by["torch._check_index"].exception == "IndexError"
    assert by["torch._check_index"].pieces[0].startswith("Expected cond to be True")


# ------------------------------------------------------------------ the message as pasted


def test_clean_strips_the_cpp_stack_torch_2_5_on_prints():
    """From 2.5 on, TORCH_SHOW_CPP_STACKTRACES=1 prints "C++ CapturedTraceback:" and frames "#5 f from file:0"
    (torch/csrc/Module.cpp); they were matched as the message (its title, "the message comes from another
    library"). Real output of the 2.6.0 wheel for torch.gather(torch.randn(3, 4), 2, ...). The innermost Python frame
    is the user's, but the C++ that raised it is the tree's: not another library's."""
    c = clean("Traceback (most recent call last):\n  File \"<string>\", line 1, in <module>\n"
              "IndexError: Dimension out of range (expected to be in range of [-2, 1], but got 2)\n"
              "Exception raised from maybe_wrap_dim_slow at /pytorch/c10/core/WrapDimMinimal.cpp:22 (most recent call "
              "first):\nC++ CapturedTraceback:\n#4 std::_Function_handler<...>::_M_invoke(std::_Any_data const&) from "
              "Logging.cpp:0\n#5 c10::Error::Error(c10::SourceLocation, std::string) from ??:0\n"
              "#14 torch::autograd::THPVariable_gather(_object*, _object*, _object*) from "
              "python_torch_functions_1.cpp:0\n"
              "#26 _start from ??:0\n")
    assert c.message == "Dimension out of range (expected to be in range of [-2, 1], but got 2)"
    assert (c.exception, c.foreign) == ("IndexError", "")
    assert [(h.path, h.line) for h in c.hints][:1] == [("c10/core/WrapDimMinimal.cpp", 22)]


def test_clean_strips_traceback_class_and_cpp_frames_keeping_hints():
    c = clean('Traceback (most recent call last):\n  File "/x/site-packages/torch/nn/functional.py", line 9, in f\n'
              "    return torch._C._nn.linear(input, weight)\n           ^^^^^^^^^^^^^\n" + MAT +
              "\nException raised from meta at /pytorch/aten/src/ATen/native/LinearAlgebra.cpp:15 (most recent "
              "call first):\nframe #0: c10::Error::Error() + 0x96\nframe #1: at::meta::x() + 0x1\n")
    assert c.message == "mat1 and mat2 shapes cannot be multiplied (64x10 and 20x30)"
    assert c.exception == "RuntimeError"
    assert [(h.path, h.line, h.how) for h in c.hints] == [
        ("aten/src/ATen/native/LinearAlgebra.cpp", 15, "Exception raised from"),
        ("torch/nn/functional.py", 9, "innermost frame")]
    w = clean("/x/m.py:3: UserWarning: slow path (Triggered internally at /pytorch/aten/src/ATen/X.cpp:7.)\n  y()")
    assert (w.message, w.exception) == ("slow path", "UserWarning") and w.hints[0].path == "aten/src/ATen/X.cpp"
    assert clean("KeyError: 'parameter name can\\'t contain \".\"'").message.startswith("parameter name can")


def test_clean_strips_a_bare_exception_and_a_qualified_custom_class():
    """Python prints ``Exception: msg`` for a bare Exception and a custom class with its module; both are the class,
    not the message (it was matched at offset 11 of "Exception: Unknown Event Type")."""
    for text, cls in (("Exception: Unknown Event Type", "Exception"), ("Warning: Unknown Event Type", "Warning"),
                      ("torch.distributed.elastic.rendezvous.api.RendezvousError: Unknown Event Type",
                       "torch.distributed.elastic.rendezvous.api.RendezvousError")):
        c = clean(text)
        assert (c.exception, c.message) == (cls, "Unknown Event Type"), text
    assert clean("torch.add: Expected x").message == "torch.add: Expected x"  # a dotted name is no class
    assert clean("Error: bad").message == "Error: bad"  # nor a word Python has no class for


def test_clean_bad_input():
    for empty in ("", "   \n\t", "Traceback (most recent call last):\n  File \"x.py\", line 1, in <module>\n"):
        with pytest.raises(BadArgument, match="message"):
            clean(empty)
    with pytest.raises(BadArgument, match="message must be a string"):
        clean(b"bytes")
    huge = clean("mat1 and mat2 " * 40_000)
    assert len(huge.message) == MAX_MESSAGE and any(f"first {MAX_INPUT:,}" in n for n in huge.notes)
    odd = clean("mat1 and mat2 \udcff\udcfe shapes")  # bytes that were not UTF-8, as surrogateescape reads them
    assert "\ufffd" in odd.message and any("not UTF-8" in n for n in odd.notes)


# ------------------------------------------------------------------ answers on the fixture tree


def test_the_check_in_a_macro_is_found_with_the_ops_and_python_apis_reaching_it(fixture_ix, monkeypatch):
    # The walk up is what this test is about, not its CPU budget (40 ms for the first site): on a loaded CI
    # machine the fixture's cold walk once ran past it and stopped before linear (the next test has the cut).
    monkeypatch.setattr(errors_query, "FIRST_WALK_S", 10.0)
    monkeypatch.setattr(errors_query, "WALK_S", 10.0)
    r, text = ask(fixture_ix, MAT)
    assert r.verdict is Verdict.EXACT and r.exception == "RuntimeError"
    best = r.sites[0]
    assert str(best.loc) == "aten/src/ATen/native/LinearAlgebra.cpp:15" and best.via == "ADDMM_META"
    assert best.condition == "mat1.sizes()[1] == mat2.sizes()[0]" and best.function.label == "TORCH_META_FUNC(addmm)"
    ops = {o.op.key: o for o in best.reach.ops}
    assert {"addmm", "addmm.out", "linear"} <= set(ops)
    assert ops["addmm"].depth == 0 and ops["linear"].depth == 1  # linear's composite kernel calls at::addmm
    assert "torch.nn.functional.linear" in best.reach.python
    assert "TORCH_META_FUNC(addmm) <- the meta function of addmm <- called by the composite op linear" in text
    assert "next: trace(\"addmm\")" in text


def test_the_tests_whose_bodies_spell_the_message_are_named_with_their_commands(fixture_ix):
    """Note [Tests that expect a message]: test_addmm_shapes' assertRaisesRegex spells the message as a regex; the
    needle is its plain run before the parenthesis; a module-level hit is outside any test."""
    r, text = ask(fixture_ix, MAT)
    e = r.expecting
    assert e.needle == "mat1 and mat2 shapes cannot be multiplied" and e.total == 2
    assert [(t.cls, t.name, str(t.loc)) for t in e.tests] == [("TestLinalg", "test_addmm_shapes",
                                                               "test/test_linalg.py:9")]
    assert e.tests[0].command == 'pytest test/test_linalg.py -k "TestLinalg and test_addmm_shapes"'
    assert [str(loc) for loc in e.elsewhere] == ["test/test_linalg.py:5"]
    assert "Tests that expect this message (their bodies spell 'mat1 and mat2 shapes cannot be multiplied'" in text
    # a message no test spells says where it looked; one with no plain run long enough is not looked up
    r, text = ask(fixture_ix, "ValueError: batch_size should be a positive integer value, but got batch_size=-1")
    assert r.expecting.total == 0 and "No test spells 'batch_size should be a positive integer value'" in text
    assert errors_query.tests_expecting(fixture_ix, ["x(", "short"]) is None


def test_the_needles_are_the_messages_head_and_its_longest_runs_never_an_identifier():
    """Note [Tests that expect a message]: test_add_dense_sparse_mismatch asserts the head of the dense-sparse add
    check, not its longest run; an identifier alone (allgather_coalesced) is what tests call, not a message."""
    from torchtalk.query.error_tests import needles_of

    pieces = ["add: expected 'self' and 'other' to have same size, but self has size ", " while other has size ",
              " (FYI: dense-sparse addition does not currently support broadcasting)"]
    assert needles_of(pieces) == ["expected 'self' and 'other' to have same size",
                                  "dense-sparse addition does not currently support broadcasting",
                                  "while other has size"]
    assert needles_of(["allgather_coalesced_tensors", ": ", "ok"]) == []
    # a run of words any message has is in unrelated tests (a docstring's "..., but they are all safe to ignore")
    assert needles_of([": ", " must be batches of square matrices, but they are ", " by ", " matrices"]) == [
        "must be batches of square matrices"]
    assert needles_of([" should contain ", " elements not ", ", but received ", " at dimension "]) == []
    assert needles_of(["running_mean should contain ", " elements not "]) == ["running_mean should contain"]


def test_beside_a_site_printing_the_whole_message_a_shared_start_is_no_match(fixture_ix):
    """"Unexpected query type" is printed whole by one check; "Unexpected qscheme " shares its first 12 characters
    (57% of the message), which beside an exact site is noise; asked for that text, it is the match."""
    r, _ = ask(fixture_ix, "RuntimeError: Unexpected query type")
    assert [str(s.loc) for s in r.sites] == ["torch/csrc/distributed/Store.cpp:6"] and r.total == 1
    r, _ = ask(fixture_ix, "RuntimeError: Unexpected qscheme 3")
    assert str(r.sites[0].loc) == "torch/csrc/distributed/Store.cpp:10"


def test_a_walk_up_past_its_budget_is_cut_and_says_so(fixture_ix, monkeypatch):
    monkeypatch.setattr(errors_query, "FIRST_WALK_S", 0.0)
    monkeypatch.setattr(errors_query, "WALK_S", 0.0)
    r, text = ask(fixture_ix, MAT)
    best = r.sites[0]
    assert str(best.loc) == "aten/src/ATen/native/LinearAlgebra.cpp:15"  # the site itself is never cut
    assert "linear" not in {o.op.key for o in best.reach.ops}
    assert "the walk up stopped at its budget (0 ms of CPU)" in text


def test_tests_not_looked_up_within_the_budget_are_never_said_to_be_missing(fixture_ix, monkeypatch):
    monkeypatch.setattr(errors_query, "TESTS_S", -10.0)  # the answer is past its budget for tests from the start
    r, text = ask(fixture_ix, MAT)
    assert not r.sites[0].reach.tests_looked_up
    assert "tests were not looked up within the answer's time budget: find_similar_tests(\"addmm\")" in text
    assert "No test is named" not in text, text


def test_the_budgets_clock_leaves_out_building_shared_tables(fixture_ix):
    """Index.work_clock: the CPU a thread spends building cached lookups (once per index version) is not the
    answer's own work, so a walk goes as far in a fresh CLI process as in a warmed-up server; a build inside a
    build is left out once (the clock never runs backwards)."""
    def burn(seconds):
        until = time.thread_time() + seconds
        while time.thread_time() < until:
            pass
        return seconds

    def outer():
        fixture_ix.cached("test_work_clock_inner", lambda: burn(0.1))
        return burn(0.1)

    work, cpu = fixture_ix.work_clock(), time.thread_time()
    fixture_ix.cached("test_work_clock_outer", outer)
    assert time.thread_time() - cpu >= 0.2
    assert 0.0 <= fixture_ix.work_clock() - work < 0.05
    burn(0.05)  # work outside a build counts
    assert fixture_ix.work_clock() - work >= 0.05


def test_a_message_cut_short_still_names_its_site(fixture_ix):
    r, text = ask(fixture_ix, "Expected all tensors to be on the same device, but found at least two devices, "
                              "cuda:0 and cpu!")
    best = r.sites[0]
    assert r.verdict is Verdict.MATCH and best.cut and not best.exact
    assert str(best.loc) == "aten/src/ATen/core/adaption.cpp:6"
    assert best.function.label == "c10::impl::common_device_check_failure"
    assert [e.src.label for e in best.reach.callers] == ["c10::impl::check_and_update_common_device"]
    assert "the message stops inside its text" in text


def test_much_called_functions_are_summarised_by_name(fixture_ix, monkeypatch):
    monkeypatch.setattr(error_reach, "FAN_IN", 0)  # the fixture has one caller; PyTorch has 1,691 (generated)
    full = ("Expected all tensors to be on the same device, but found at least two devices, cuda:0 and cpu! "
            "(when checking argument for argument self in method wrapper_CPU_mm)")
    r, text = ask(fixture_ix, full)
    fan = r.sites[0].reach.fan_in
    assert r.verdict is Verdict.EXACT and fan and fan[0].callee.label == "c10::impl::common_device_check_failure"
    assert fan[0].samples[0].src.label == "c10::impl::check_and_update_common_device"
    assert "common_device_check_failure(*common_device, tensor, methodName, argName);" in text


def test_with_the_calls_resolved_a_summary_counts_the_callers_not_the_name(tmp_path, monkeypatch):
    """Another namespace's common_device_check_failure is called three times: by name, four sites (a summary of
    other code); with the store of resolved calls, the one real caller, walked as usual."""
    from torchtalk.graph.resolved_build import build

    tree = tmp_path / "pytorch"
    shutil.copytree(FIXTURE_TREE, tree)
    shutil.copytree(FIXTURE_TREE.parent / "tree_py", tree, dirs_exist_ok=True)
    (tree / "torch/csrc/other.cpp").write_text(
        "namespace other {\nvoid common_device_check_failure(int n) {}\nvoid f() {\n  common_device_check_failure(1);\n"
        "  common_device_check_failure(2);\n  common_device_check_failure(3);\n}\n}  // namespace other\n")
    st, ix, _rep = build_index(tree, tmp_path / "cache", workers=1, codegen=False)
    monkeypatch.setattr(error_reach, "FAN_IN", 2)
    full = ("Expected all tensors to be on the same device, but found at least two devices, cuda:0 and cpu! "
            "(when checking argument for argument self in method wrapper_CPU_mm)")
    try:
        r, _ = ask(ix, full)
        (fan,) = r.sites[0].reach.fan_in
        assert fan.sites == 4 and "other::f" in {e.src.label for e in fan.samples}
    finally:
        ix.close()
    monkeypatch.setenv("TORCHTALK_CACHE_DIR", str(tmp_path / "cache"))
    assert build(st.index_path, st.root, workers=1) is not None
    ix = Index(st.index_path, st.root)
    try:
        r, text = ask(ix, full)
        assert not r.sites[0].reach.fan_in and "other::f" not in text
        assert "c10::impl::check_and_update_common_device" in text
    finally:
        ix.close()


def test_a_constant_used_as_the_message_is_matched_where_it_is_used(fixture_ix):
    r, _ = ask(fixture_ix, "RuntimeError: Trying to backward through the graph a second time (or directly access "
                           "saved tensors after they have already been freed).")
    assert r.verdict is Verdict.EXACT and r.same_text == 2  # saved_variable.cpp and python_engine.cpp
    assert {s.loc.path for s in r.sites} == {"torch/csrc/autograd/saved_variable.cpp",
                                            "torch/csrc/autograd/python_engine.cpp"}


def test_sites_of_the_same_text_and_another_exception_class_are_told_apart(tmp_path):
    """"TypeError: Not yet implemented": a site raising NotImplementedError with that text is not one the message
    cannot tell apart from the TypeError site (it said "2 sites print this same text")."""
    tree = tmp_path / "pytorch"
    shutil.copytree(FIXTURE_TREE, tree)
    (tree / "torch/fx").mkdir(parents=True)
    (tree / "torch/fx/rules.py").write_text(
        "def get_attr_rule(n):\n    raise TypeError('Not yet implemented')\n\n\n"
        "def call_rule(n):\n    raise NotImplementedError('Not yet implemented')\n\n\n"
        "def other_rule(n):\n    raise ValueError('Not yet implemented for this node kind')\n")
    _st, ix, _rep = build_index(tree, tmp_path / "cache", workers=1, codegen=False)
    try:
        r, text = ask(ix, "TypeError: Not yet implemented")
        assert r.same_text == 1 and r.sites[0].exception == "TypeError" and "same text" not in text, text
        r, text = ask(ix, "Not yet implemented")
        assert r.same_text == 2 and "2 sites print this same text" in text
        # a site that matches in part is listed after them, and the lead counts it (it said 2, then showed 3)
        assert r.total == 3 and "; 1 more matches it in part." in text, text
    finally:
        ix.close()


def test_the_function_a_traceback_names_picks_its_site_whatever_the_line(fixture_ix):
    """A build of other sources prints other line numbers: "Exception raised from unpack at ...:99" names the site in
    SavedVariable::unpack though line 99 is past the file's end."""
    r, text = ask(fixture_ix, "RuntimeError: Trying to backward through the graph a second time (or directly access "
                              "saved tensors after they have already been freed).\nException raised from unpack at "
                              "/pytorch/torch/csrc/autograd/saved_variable.cpp:99 (most recent call first):")
    best = r.sites[0]
    assert (best.loc.path, best.hinted) == ("torch/csrc/autograd/saved_variable.cpp", True), text
    assert not r.sites[1].hinted
    assert "[the pasted text names this site: its line, or its function in its file]" in text


def test_a_python_warning_names_the_python_functions_that_reach_it(fixture_ix):
    """A private helper warns; the answer names who calls it (StepLR.get_lr), public ones among them, and looks up
    tests for the class that calls it."""
    r, text = ask(fixture_ix, "UserWarning: To get the last learning rate computed by the scheduler, please use "
                              "`get_last_lr()`.")
    best = r.sites[0]
    assert best.function.key == "torch.optim.lr_scheduler._warn_get_lr_called_within_step"
    assert [e.src.key for e in best.reach.callers] == ["torch.optim.lr_scheduler.StepLR.get_lr"]
    assert "torch.optim.lr_scheduler.StepLR.get_lr" in best.reach.python
    assert "- torch.optim.lr_scheduler.StepLR.get_lr  torch/optim/lr_scheduler.py:" in text
    assert best.reach.tests_for == "StepLR"


def test_python_raise_with_its_function_and_the_op_it_is_registered_for(fixture_ix):
    r, text = ask(fixture_ix, "ValueError: batch_size should be a positive integer value, but got batch_size=-1")
    best = r.sites[0]
    assert r.verdict is Verdict.EXACT and best.language is Layer.PYTHON and best.exception == "ValueError"
    assert best.function.key == "torch.utils.data.dataloader.DataLoader.__init__"
    # the condition in its sense: a Python raise sits in an `if` whose test holds; a C++ check raises when its fails
    assert "  raised when: not isinstance(batch_size, int) or batch_size <= 0" in text
    _, mat = ask(fixture_ix, MAT)
    assert "  check (raised when it fails): mat1.sizes()[1] == mat2.sizes()[0]" in mat
    r, _ = ask(fixture_ix, "RuntimeError: mat1 must be a matrix, got 3-D tensor")
    py = next(s for s in r.sites if s.language is Layer.PYTHON)
    assert py.reach.registered == ["aten.addmm (meta)"] and py.reach.ops[0].op.key == "addmm"
    assert r.same_text == 2  # the meta registration and ADDMM_META's first check print the same text
    # the message cannot tell them apart: tests are looked up for each, not the first only
    assert [s.reach.tests_for for s in r.sites[:2]] == ["addmm", "addmm"]


def test_tests_of_a_device_specific_site_leave_out_tests_written_for_another_device(fixture_ix, monkeypatch):
    """A raise site in aten/src/ATen/native/cuda/ runs on CUDA: TestMPS.test_median is no test of it."""
    from torchtalk.model import Loc
    from torchtalk.model.dispatch import Device
    from torchtalk.query.tests import FoundTest

    found = [FoundTest("test_median", "TestMPS", Loc("test/test_mps.py", 5), "name", "pytest x", []),
             FoundTest("test_median_real_values", "TestReductions", Loc("test/test_reductions.py", 9), "name",
                       "pytest y", [])]
    from torchtalk.query import error_test_names
    monkeypatch.setattr(error_test_names, "find_similar_tests",
                        lambda *a, **k: type("Found", (), {"tests": found, "opinfos": []})())
    every = ["test_median", "test_median_real_values"]
    for device, names in ((Device.CUDA, ["test_median_real_values"]), (None, every)):
        reach = error_reach.Reach()
        error_reach._tests(fixture_ix, reach, ["median.dim_values"], time.process_time() + 100, device)
        assert [t.name for t in reach.tests] == names


def test_exception_class_breaks_ties_and_the_innermost_frame_is_a_hint(fixture_ix):
    r, _ = ask(fixture_ix, 'Traceback (most recent call last):\n  File "/s/site-packages/torch/utils/data/'
                           'dataloader.py", line 20, in __init__\n    raise ValueError(msg)\n'
                           "ValueError: num_workers option should be non-negative; use num_workers=0 to disable "
                           "multiprocessing.")
    assert r.sites[0].hinted and str(r.sites[0].loc) == "torch/utils/data/dataloader.py:20"


def test_weak_and_foreign_messages_say_what_matched(fixture_ix):
    r, text = ask(fixture_ix, "RuntimeError: mat1 and mat2 shapes are odd in this message of mine, really odd")
    assert r.verdict is Verdict.WEAK and "No site prints this message well" in text
    assert "the start of 'mat1 and mat2 shapes cannot be multiplied (' ('mat1 and mat2 shapes ') at 0" in text
    assert "not in the message: 'x'" in text
    r, text = ask(fixture_ix, 'Traceback (most recent call last):\n  File "/s/site-packages/numpy/core/x.py", line 3, '
                              'in f\nnumpy.core._exceptions._ArrayMemoryError: Unable to allocate 3.73 GiB for an '
                              "array with shape (1000, 1000, 500) and data type float64")
    assert r.verdict is Verdict.NONE and "numpy/core/x.py: the message comes from another library" in text


def test_mermaid_draws_the_site_and_what_reaches_it(fixture_ix):
    _r, text = run(get_tool("error_origin"), fixture_ix, message=MAT, format="mermaid")
    assert text.startswith("```mermaid") or "flowchart" in text
    assert "TORCH_META_FUNC#40;addmm#41;" in text and '"op_call CompositeImplicitAutograd"' in text


def test_bad_arguments(fixture_ix):
    for bad, what in ((0, "limit"), (51, "limit")):
        with pytest.raises(BadArgument, match=what):
            ask(fixture_ix, MAT, limit=bad)
    with pytest.raises(BadArgument, match="message is empty"):
        ask(fixture_ix, "  ")
    r, text = ask(fixture_ix, "x" * 300_000)
    assert "x" * 1000 not in text and "were read" in text


def test_op_callers_found_by_name_are_the_overload_the_call_binds_and_the_same_backend(tmp_path):
    """``at::add(output, bias)`` in a composite kernel is add.Tensor, never add.out (C++ spells that ``at::add_out``):
    a SparseCPU check in add.out's kernel was said to be reached by "the composite op linear" through add.out. A
    SparseCPU kernel of add.Tensor calling ``at::add_out`` does reach add.out's SparseCPU kernel, and says it is that
    backend's kernel, not a composite one."""
    tree = tmp_path / "pytorch"
    shutil.copytree(FIXTURE_TREE, tree)
    sparse = tree / "aten/src/ATen/native/sparse"
    sparse.mkdir(parents=True)
    (sparse / "SparseTensorMath.cpp").write_text(
        "namespace at::native {\n"
        "Tensor& add_out_sparse_cpu(const Tensor& t, const Tensor& src, const Scalar& value, Tensor& r) {\n"
        "  TORCH_CHECK(t.sizes().equals(src.sizes()), \"add: expected sizes of 'self' and 'other' to match, but \",\n"
        "              t.sizes(), \" != \", src.sizes());\n"
        "  return r;\n}\n"
        "Tensor add_sparse(const Tensor& self, const Tensor& other, const Scalar& alpha) {\n"
        "  Tensor result = at::empty({0}, self.options());\n"
        "  return at::add_out(result, self, other, alpha);\n}\n"
        "Tensor my_composite(const Tensor& self, const Tensor& bias) {\n"
        "  return at::add(self, bias);\n}\n"
        "}  // namespace at::native\n")
    yaml = tree / "aten/src/ATen/native/native_functions.yaml"
    yaml.write_text(yaml.read_text() + "\n- func: my_composite(Tensor self, Tensor bias) -> Tensor\n"
                    "  dispatch:\n    CompositeImplicitAutograd: my_composite\n")
    _st, ix, _rep = build_index(tree, tmp_path / "cache", workers=1, codegen=False)
    try:
        r, text = ask(ix, "RuntimeError: add: expected sizes of 'self' and 'other' to match, but [2, 3] != [3, 2]")
        ops = {o.op.key: o for o in r.sites[0].reach.ops}
        assert ops["add.Tensor"].depth == 1, text
        assert "called by the [SparseCPU] kernel of op add.Tensor" in text
        # my_composite calls add.Tensor (whose SparseCPU kernel calls add.out), not add.out itself
        assert ops["my_composite"].depth == 2, text
        assert [e.src.key for e in ops["my_composite"].chain[1:]] == ["add.Tensor", "my_composite"], text
    finally:
        ix.close()


# ------------------------------------------------------------------ the function's name, assert heads, nested defs


def test_func_prints_the_enclosing_functions_name():
    """Note [The function's own name]: __func__ / __FUNCTION__ print the function's unqualified name (a constructor's
    is its class's, a lambda's operator()); __PRETTY_FUNCTION__ and a macro-named function stay values."""
    sites, _ = cpp_sites('''
namespace at::native {
Tensor _weight_int8pack_mm_cpu(const Tensor& A) {
  TORCH_CHECK(A.dim() == 2,
      __func__, " : expect A to be 2D tensor.");
  auto f = [&]() { TORCH_CHECK(A.dim() == 2, __FUNCTION__, ": in a lambda"); };
  TORCH_CHECK(A.dim() == 2, __PRETTY_FUNCTION__, ": pretty");
  return A;
}
template <typename T>
Tensor& Foo<T>::bar(const Tensor& A) {
  TORCH_CHECK(A.dim() == 2, "in ", __func__, " of Foo");
  return A;
}
Foo::Foo(int x) { TORCH_CHECK(x, __func__, " ctor"); }
TORCH_IMPL_FUNC(addmm_out)(const Tensor& A) { TORCH_CHECK(A.dim() == 2, __func__, " impl"); }
}''')
    assert [(s.pieces, s.gaps) for s in sites] == [
        (("_weight_int8pack_mm_cpu : expect A to be 2D tensor.",), ()), (("operator(): in a lambda",), ()),
        (("", ": pretty"), ("__PRETTY_FUNCTION__",)), (("in bar of Foo",), ()), (("Foo ctor",), ()),
        (("", " impl"), ("__func__",))]


def test_a_message_naming_its_function_picks_the_one_site_that_prints_it(fixture_ix):
    """The same check in _weight_int4pack_mm_cpu and _weight_int8pack_mm_cpu: the name __func__ prints tells them
    apart (it said "2 sites print this same text" and ranked the int4 one first)."""
    r, text = ask(fixture_ix, "RuntimeError: _weight_int8pack_mm_cpu : expect A to be 2D tensor.")
    assert r.verdict is Verdict.EXACT and r.same_text == 1 and "same text" not in text
    assert [str(s.loc) for s in r.sites] == ["aten/src/ATen/native/WeightPack.cpp:11"]


def test_an_asserts_own_message_is_found_without_its_head_and_its_boilerplate_is_no_evidence(fixture_ix):
    """Note [Assert boilerplate]: "cudaGetDevice returns invalid device -1" is TORCH_INTERNAL_ASSERT's own message,
    pasted without the head every internal assert prints; with the head, the tests spelling only "please report a
    bug to PyTorch" are no tests of this assert."""
    r, text = ask(fixture_ix, "cudaGetDevice returns invalid device -1")
    assert r.verdict is Verdict.EXACT and "No site prints" not in text, text
    # two asserts of other conditions print this message: it cannot tell them apart
    assert [str(s.loc) for s in r.sites] == ["c10/cuda/CUDAFunctions.cpp:7", "c10/cuda/CUDAFunctions.cpp:22"]
    assert r.same_text == 2 and "2 sites print this same text" in text
    full = ('RuntimeError: d >= 0 && d < device_count() INTERNAL ASSERT FAILED at "/pytorch/c10/cuda/'
            'CUDAFunctions.cpp":7, please report a bug to PyTorch. cudaGetDevice returns invalid device -1')
    r, text = ask(fixture_ix, full)
    assert r.verdict is Verdict.EXACT and str(r.sites[0].loc) == "c10/cuda/CUDAFunctions.cpp:7", text
    assert [t.name for t in r.expecting.tests] == ["test_invalid_device"], text
    assert "please report a bug" not in " ".join(r.expecting.needles)
    # the head alone is in every assert: a message of it and another condition matches this assert weakly at best
    r, _ = ask(fixture_ix, 'x > 0 INTERNAL ASSERT FAILED at "/pytorch/c10/cuda/CUDAFunctions.cpp":7, please report a '
                           "bug to PyTorch. ")
    assert r.verdict in (Verdict.NONE, Verdict.WEAK)


def test_the_needles_leave_out_a_macros_own_text():
    from torchtalk.query.error_tests import needles_of

    assert needles_of(['"', "\" not implemented for '", "'"]) == []
    assert needles_of(['"add_cpu_kernel" not implemented for \'', "'"]) == ['"add_cpu_kernel" not implemented for \'']


def test_sites_alike_in_a_weak_match_are_not_said_to_print_the_message():
    """The lead said "4 sites print this same text" and "No site prints this message well" at once."""
    from torchtalk.render.errors import render_error_origin

    site = errors_query.ErrorSite(errors_query.Loc("c10/x.cpp", 3), 3, Layer.CPP, RaiseKind.CHECK, "TORCH_CHECK",
                                  "RuntimeError", "", "invalid device pointer: {ptr}", "", None, 0.4, 0.5, False, False,
                                  False, False, "", [])
    r = errors_query.ErrorOriginResult("cudaGetDevice returns invalid device -1", "", Verdict.WEAK, [site, site], 2, 2,
                                       9)
    text = render_error_origin(r)
    assert "print this same text" not in text and "2 of them match it equally" in text


def test_a_raise_in_a_nested_def_names_the_innermost_def_and_not_the_outer_as_its_api(fixture_ix):
    """Note [Nested defs]: the raise is in outer.<locals>.inner; a decorated nested def runs where its decorator
    registers it (calling the outer never raises); an undecorated one where the outer's body uses it."""
    r, text = ask(fixture_ix, "RuntimeError: functionalize a hpu RNG operator is not supported.")
    best = r.sites[0]
    assert best.function.key == ("torch.profiler._utils.register_run_and_save_rng_state_op.<locals>.impl_hpu")
    assert str(best.function.loc) == "torch/profiler/_utils.py:17"
    assert best.reach.python == [] and best.reach.callers == []
    assert best.reach.decorators == ["run_and_save_rng_state.py_impl(DispatchKey.HPU)"]
    assert "registered by @run_and_save_rng_state.py_impl(DispatchKey.HPU)" in text
    assert best.reach.tests_for == "impl_hpu"  # the tests line names the same def as the "in" line
    r, text = ask(fixture_ix, "Exception: Unknown Event Type")
    best = r.sites[0]
    assert r.verdict is Verdict.EXACT and r.exception == "Exception"
    assert best.function.key == \
        "torch.profiler._utils.BasicEvaluation.compute_queue_depth.<locals>.new_old_event_comparator"
    assert best.reach.nested_in == "torch.profiler._utils.BasicEvaluation.compute_queue_depth"
    assert "A def nested in torch.profiler._utils.BasicEvaluation.compute_queue_depth: it runs where" in text
    assert "its direct callers" not in text


def test_a_python_assert_cannot_have_raised_another_class():
    """Note [A class that rules out]: torch/_meta_registrations.py asserts linalg.inv's check in more of its words than
    the C++ TORCH_CHECK a user hits; a RuntimeError pasted did not come from the assert (AssertionError), nor an
    AssertionError from a TORCH_CHECK. Other classes only tell equal matches apart: they rule nothing out."""
    from torchtalk.query.error_match import _contradicts

    assert _contradicts("RuntimeError", "AssertionError") and _contradicts("AssertionError", "RuntimeError")
    assert not _contradicts("AssertionError", "AssertionError")
    assert not _contradicts("", "AssertionError") and not _contradicts("RuntimeError", "")
    assert not _contradicts("RuntimeError", "ValueError")  # a wrapper may re-raise as another class


def test_frames_pasted_without_the_traceback_line_are_a_traceback():
    # copying only the frames is common: they were matched as the message ("0% of it")
    frames = "".join(f'  File "/site-packages/torch/nn/modules/module.py", line {1500 + i}, in _call_impl\n'
                     "    return forward_call(*args, **kwargs)\n" for i in range(120))
    c = clean(frames + "RuntimeError: mat1 and mat2 shapes cannot be multiplied (64x10 and 20x30)")
    assert (c.exception, c.message) == ("RuntimeError", "mat1 and mat2 shapes cannot be multiplied (64x10 and 20x30)")


def test_an_over_long_traceback_keeps_its_end_where_the_error_is():
    frames = "".join(f'  File "/x/y{i}.py", line {i + 1}, in f\n    g()\n' for i in range(20_000))
    text = "Traceback (most recent call last):\n" + frames + "ValueError: the real error"
    assert len(text) > 2 * MAX_INPUT
    c = clean(text)
    assert c.message == "the real error" and any("its last 200,000 were read" in n for n in c.notes), c.notes
    c = clean("x" * (MAX_INPUT + 10))  # no traceback: the head, as before
    assert any("its first 200,000 were read" in n for n in c.notes)


def test_tests_named_after_a_python_function_are_those_of_files_importing_its_package(tree):
    """Note [Tests of a Python function's package]: profiler's EnforceUnique.see raised 'duplicate key' and its tests
    to run were test_cuda.py's test_manual_seed (named like 'see'); a function that reaches no op has its tests in
    the files importing its package; the others are counted in a cut with the call that lists them."""
    with indexed_with(tree, {
        "torch/masked/maskedtensor/checks.py": "def layout_check(x):\n"
                                               "    raise ValueError('masked tensors of this layout are refused')\n",
        "test/test_masked.py": "from torch.masked.maskedtensor.checks import layout_check\n"
                               "from torch.testing._internal.common_utils import TestCase\n\n\n"
                               "class TestMasked(TestCase):\n    def test_layout_check(self):\n        pass\n",
        "test/test_other.py": "import torch\nfrom torch.testing._internal.common_utils import TestCase\n\n\n"
                              "class TestOther(TestCase):\n    def test_layout_check(self):\n        pass\n"}) as ix:
        r, text = ask(ix, "ValueError: masked tensors of this layout are refused")
        reach = r.sites[0].reach
        assert [(t.cls, t.loc.path) for t in reach.tests] == [("TestMasked", "test/test_masked.py")], text
        assert ('1 test(s) named like layout_check were left out: their files import nothing of '
                'torch.masked.maskedtensor') in text
