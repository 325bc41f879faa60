"""error_origin on a part of a message (Note [A part of a message]): text that starts inside a site's text."""

from __future__ import annotations

from torchtalk.model.raises import Verdict
from torchtalk.query.error_align import align
from torchtalk.tools import get_tool, run

from ..conftest import indexed_with

CAST = ('#include <ATen/TensorIterator.h>\nnamespace at {\nvoid TensorIteratorBase::compute_types(int a, int b) {\n'
        '  TORCH_CHECK(canCast(a, b), "result type ", a, " can\'t be cast to the desired output type ", b);\n}\n}\n')
FOLD = ('namespace at { namespace native {\nvoid col2im_check(IntArrayRef kernel_size) {\n'
        '  TORCH_CHECK(kernel_size.size() == 2, "It is expected kernel_size equals to 2, but got size ",\n'
        '              kernel_size.size());\n'
        '  TORCH_CHECK(kernel_size[0] > 0, "kernel_size should be greater than zero, but got ", kernel_size[0]);\n'
        '}\n}}\n')


def ask(ix, message):
    return run(get_tool("error_origin"), ix, message=message)


def test_a_part_from_the_middle_of_a_message_finds_the_sites_that_print_it(tree):
    """F17: 'can't be cast to the desired output type' and 'expected kernel_size equals to 2' (lower case, its head
    'It is ' and its value cut) were "Nothing in this tree prints this message"."""
    with indexed_with(tree, {"aten/src/ATen/TensorIterator.cpp": CAST, "aten/src/ATen/native/Col2Im.cpp": FOLD}) as ix:
        for asked, where in (("can't be cast to the desired output type", "aten/src/ATen/TensorIterator.cpp:4"),
                             ("expected kernel_size equals to 2", "aten/src/ATen/native/Col2Im.cpp:3"),
                             ("be cast to the desired output type Long", "aten/src/ATen/TensorIterator.cpp:4")):
            r, text = ask(ix, asked)
            assert r.verdict is not Verdict.NONE and r.sites and str(r.sites[0].loc) == where, text
            assert r.sites[0].opened and r.sites[0].coverage > 0.85, text  # 'Long' is a value
            assert "Nothing in this tree prints this message" not in text
        r, text = ask(ix, "expected kernel_size equals to 2")
        assert "the message starts and stops inside its text" in text and "a part was pasted" in text, text
        assert "a part of 'It is expected kernel_size equals to 2, but got size '" in text, text


def test_a_message_that_starts_inside_a_piece_counts_what_is_before_it_as_outside_not_missing():
    pieces = ("result type ", " can't be cast to the desired output type ", "")
    a = align(pieces, "be cast to the desired output type Long")
    assert a.covered == len("be cast to the desired output type ")  # every character but digits
    assert a.head == len("result type ") + len(" can't ") and a.cut == 0 and not a.exact
    assert a.hits[1].start == len(" can't ") and a.hits[1].at == 0
    whole = align(pieces, "result type Float can't be cast to the desired output type Long")
    assert whole.head == 0 and whole.covered == len("result type  can't be cast to the desired output type ")


POOL = ('namespace at { namespace native {\nstruct QPool {\n  static Tensor run(Tensor x) {\n'
        '    TORCH_CHECK(x.dim() == 4, "qpool: expected a four dimensional quantized input, got ", x.dim());\n'
        '    return x;\n  }\n};\nstruct QLinear {\n  static Tensor run(Tensor x) { return x; }\n};\n'
        'TORCH_LIBRARY_IMPL(quantized, QuantizedCPU, m) {\n  m.impl("quantized::pool", TORCH_FN(QPool::run));\n'
        '  m.impl("quantized::linear", TORCH_FN(QLinear::run));\n'
        '  m.impl("quantized::linear2", TORCH_FN(QLinear::run));\n'
        '}\nvoid pool_user(ThreadPool& pool) {\n  pool.run(1);\n}\n}}\n')


def test_callers_found_by_name_are_said_to_be_calls_of_the_name_and_other_classes_are_left_out(tree, monkeypatch):
    """F19/F18: QMaxPool_arr_args::run was 'called at 299 sites; too many to walk, so by name' with a thread pool's
    run as its callers, and the ops above read 'showing 1 of 1' though the walk was cut (Note [Callers by name])."""
    from torchtalk.query import error_reach

    monkeypatch.setattr(error_reach, "FAN_IN", 1)
    with indexed_with(tree, {"aten/src/ATen/native/quantized/Pool.cpp": POOL}) as ix:
        r, text = ask(ix, "qpool: expected a four dimensional quantized input, got 3")
        reach = r.sites[0].reach
        (fan,) = reach.fan_in
        assert fan.by_name and fan.other_classes == 2 and fan.sites == 2, text  # QLinear::run twice left out
        assert [e.site.line for e in fan.samples][:1] == [12], text  # the reference naming QPool first
        assert "calls of any function of that name, not its callers" in text and "2 more written on other " \
            "classes left out" in text and 'called_by("aten/src/ATen/native/quantized/Pool.cpp:3")' in text, text
        assert "e.g. a call in at::native::pool_user" in text, text
        assert reach.ops_partial


def test_a_check_under_a_preprocessor_condition_says_the_build_decides(tree):
    """F7: the stand-in for a build without BLAS was 'raised always (its condition is false)'."""
    src = ('namespace at { namespace native {\nvoid apply_solve(Tensor& a) {\n#if !AT_BUILD_WITH_BLAS()\n'
           '  TORCH_CHECK(false, "Calling torch.solve_thing on a CPU tensor requires compiling PyTorch with BLAS.");\n'
           '#else\n  solve(a);\n#endif\n}\n}}\n')
    with indexed_with(tree, {"aten/src/ATen/native/Solve.cpp": src}) as ix:
        r, text = ask(ix, "Calling torch.solve_thing on a CPU tensor requires compiling")
        assert r.sites[0].branch == "#if !AT_BUILD_WITH_BLAS()", text
        assert "only in a build where #if !AT_BUILD_WITH_BLAS() holds" in text and "raised always" not in text


def test_a_needle_whose_words_many_sites_hold_together_is_not_searched_for():
    """F7: 'Calling torch' (the head of 'Calling torch.triangular_solve on a CPU tensor ...') was taken as dynamo's
    tests expecting the message: its words are in hundreds of the tree's messages."""
    from torchtalk.query.error_match import Sites
    from torchtalk.query.error_tests import needles_of

    n = 1000
    data = Sites([None] * n, {"calling": list(range(250)), "torch": list(range(900)),  # type: ignore[list-item]
                              "triangular_solve": [1], "requires": list(range(40)), "blas": [1, 2]}, {})
    pieces = ["Calling torch.triangular_solve requires BLAS."]
    assert needles_of(pieces) == ["Calling torch", "triangular_solve requires BLAS"]  # by words alone: both
    assert needles_of(pieces, data) == ["triangular_solve requires BLAS"]


def test_the_sites_past_those_walked_name_the_call_that_walks_the_next(tree):
    """F22: 'what leads there is walked for the first 3 sites; impact("path:line") on another site's function'."""
    funcs = "".join(f'void im2col_{i}(IntArrayRef k) {{\n  TORCH_CHECK(k.size() == 2, "It is expected kernel_size '
                    f'equals to 2, but got size ", k.size());\n}}\n' for i in range(5))
    with indexed_with(tree, {"aten/src/ATen/native/Im2Col.cpp": "namespace at { namespace native {\n" + funcs
                             + "}}\n"}) as ix:
        r, text = ask(ix, "It is expected kernel_size equals to 2, but got size 3")
        assert len(r.sites) == 5, text
        fourth = r.sites[3].function.loc
        assert f'impact("{fourth.path}:{fourth.line}", depth=3) walks site 4\'s function' in text, text


def test_an_op_python_calls_privately_has_the_tests_of_the_public_function_above_it(tree):
    """F9 (Note [Tests of an op Python calls privately]): col2im's only Python name is torch._C._nn.col2im; its
    check's tests (test_nn.py's test_fold_invalid_arg) are named after torch.nn.functional.fold, which calls it."""
    from torchtalk.query.error_test_names import public_api, tests_for

    assert public_api(["torch._C._nn.col2im"], ["torch._C._nn.col2im", "torch.nn.functional.fold",
                                                "torch.nn.modules.fold.Fold.forward"]) == "torch.nn.functional.fold"
    assert public_api(["torch.cat"], ["torch.cat", "torch.nn.functional.multi_head_attention_forward"]) == ""
    files = {"torch/nn/functional.py": "import torch\n\n\ndef fold(input, output_size):\n"
                                      "    return torch._C._nn.col2im(input, output_size)\n",
             "test/test_nn.py": "import torch.nn.functional as F\nfrom torch.testing._internal.common_utils import "
                                "TestCase\n\n\nclass TestNN(TestCase):\n    def test_fold_invalid_arg(self):\n"
                                "        F.fold(1, 2)\n",
             "test/fx/test_const_fold.py": "from torch.testing._internal.common_utils import TestCase\n\n\n"
                                           "class TestConstFold(TestCase):\n    def test_fold_module(self):\n"
                                           "        pass\n"}
    with indexed_with(tree, files) as ix:
        shown, _opinfos, tests, cut = tests_for(ix, ["linear"], 5, None, "torch.nn.functional.fold")
        assert shown == "linear and torch.nn.functional.fold"
        assert ("TestNN", "test_fold_invalid_arg") in {(t.cls, t.name) for t in tests}
        assert "test_fold_module" not in {t.name for t in tests} and "import nothing of torch.nn.functional" in cut


def test_a_message_pasted_with_its_class_starts_where_a_site_starts(tree):
    """Note [A part of a message]: 'RuntimeError: Given groups=1, ...' led with qconv.cpp's '[QConv2D] Given
    groups=' check, whose ', ' pieces match the commas of the printed sizes, above Convolution.cpp's."""
    conv = ('namespace at { namespace native {\nvoid check_shape_forward(Tensor input, IntArrayRef w, int groups) {\n'
            '  TORCH_CHECK(input.size(1) == w[1] * groups, "Given groups=", groups, ", weight of size ", w,\n'
            '              ", expected input", input.sizes(), " to have ", w[1] * groups, " channels, but got ",\n'
            '              input.size(1), " channels instead");\n}\n}}\n')
    qconv = ('namespace at { namespace native {\nvoid qconv_check(int C, int g, int M, int kh, int kw, int N, int H,'
             ' int W) {\n  TORCH_CHECK(C == 3, "[QConv2D] Given groups=", g, ", weight of size ", M, ", ", kh, ", ",'
             ' kw, ", ", C,\n              ", expected input (NCHW) ", N, ", ", C, ", ", H, ", ", W, " to have ", C,'
             '\n              " channels, but got ", C, " channels instead");\n}\n}}\n')
    msg = ("Given groups=1, weight of size [8, 3, 3, 3], expected input[1, 4, 16, 16] to have 3 channels, but got 4 "
           "channels instead")
    with indexed_with(tree, {"aten/src/ATen/native/Convolution.cpp": conv,
                             "aten/src/ATen/native/quantized/cpu/qconv.cpp": qconv}) as ix:
        r, text = ask(ix, "RuntimeError: " + msg)
        assert r.same_text == 1 and [s.loc.path for s in r.sites][:2] == ["aten/src/ATen/native/Convolution.cpp",
                                                     "aten/src/ATen/native/quantized/cpu/qconv.cpp"], text
        r, text = ask(ix, msg)  # without its class the message may start anywhere: the site covering more leads
        assert r.sites[0].loc.path == "aten/src/ATen/native/quantized/cpu/qconv.cpp" and r.sites[0].opened, text


def test_overloads_of_one_name_are_summarised_by_name_once(tree, monkeypatch):
    """F25: conv1d's check printed the same 'at::native::conv2d is called at 50 sites' block twice, once per
    overload of conv2d: the sites of a name are the same for each."""
    from torchtalk.query import error_reach

    monkeypatch.setattr(error_reach, "FAN_IN", 2)
    src = ('namespace at { namespace native {\nvoid check_input(int x) {\n'
           '  TORCH_CHECK(x > 0, "conv_thing: expected a positive channel quantity here, got ", x);\n}\n'
           'Tensor conv_thing(Tensor a) {\n  check_input(1);\n  return a;\n}\n'
           'Tensor conv_thing(Tensor a, int b) {\n  check_input(b);\n  return a;\n}\n'
           'void user_a(Tensor t) {\n  conv_thing(t);\n}\nvoid user_b(Tensor t) {\n  conv_thing(t, 1);\n}\n'
           'void user_c(Tensor t) {\n  conv_thing(t, 2);\n}\n}}\n')
    with indexed_with(tree, {"aten/src/ATen/native/ConvThing.cpp": src}) as ix:
        r, text = ask(ix, "conv_thing: expected a positive channel quantity here, got 0")
        fans = r.sites[0].reach.fan_in
        assert [f.callee.label for f in fans] == ["at::native::conv_thing"], text
        assert text.count("a function named conv_thing is called at") == 1, text
