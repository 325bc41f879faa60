"""The names PyTorch's test generators give a test (query/testnames.py), from decorator text as written."""

import json

import pytest

from torchtalk.query.testnames import (
    devices_for,
    generated_names,
    generator,
    possible_devices,
    run_command,
    unread_options,
)


@pytest.mark.parametrize(("decorator", "kind"), [
    ("ops(op_db)", "ops"),
    ("common_device_type.ops(op_db, allowed_dtypes=(torch.float,))", "ops"),
    ("parametrize('foreach', (False, True))", "parametrize"),
    ("common_utils.parametrize('is_exported_program', [True, False])", "parametrize"),
    ("parametrize_test('norm_type', (0.5, 2))", "parametrize"),  # test_nn.py: `parametrize as parametrize_test`
    ("parametrize_axis", "parametrize"),  # test/torch_np: parametrize_axis = parametrize("axis", [...])
    ("parametrize", ""),  # bare, it is no generator's call
    ("ops", ""),
    ("dtypes(torch.float)", ""),
    ("skipIfMPS", ""),
    ("unittest.skipIf(not TEST_CUDA, 'ops(x) in a message')", ""),
])
def test_a_generator_is_known_however_it_is_written(decorator, kind):
    assert generator(decorator) == kind


def test_a_parametrized_test_is_run_by_its_generated_names():
    """A qualified or aliased @parametrize renames the test: no node id names the template, which the
    generator deletes (instantiate_parametrized_tests), so the command selects the generated ones."""
    decos = ["common_utils.parametrize('is_exported_program', [True, False])"]
    assert generated_names("TestModularizePass", "test_pass", decos, None) == ["TestModularizePass.test_pass_<params>"]
    assert run_command("test/onnx/test_fx_passes.py", "TestModularizePass", "test_pass", decos, None) == \
        'pytest test/onnx/test_fx_passes.py -k "TestModularizePass and test_pass"'
    names = generated_names("TestNNDeviceType", "test_clip", ["parametrize_test('foreach', (False, True))"],
                            json.dumps({}))
    assert names == ["TestNNDeviceTypeCPU.test_clip_<params>_cpu", "TestNNDeviceTypeCUDA.test_clip_<params>_cuda"]


def test_an_unread_device_option_lists_the_usual_devices_and_admits_any():
    """Note [Devices of a generic class]: only_for the file does not give as a constant filters nothing we know."""
    unread = json.dumps({"only_for": {"unread": "only_for"}, "allow_xpu": {"unread": "TEST_XPU"}})
    assert devices_for(unread, []) == ["cpu", "cuda"]  # never a device named "only_for"
    assert possible_devices(unread, []) == ["cpu", "cuda", "mps", "xpu"]
    assert unread_options(unread) == {"only_for": "only_for", "allow_xpu": "TEST_XPU"}
    assert generated_names("TestFoo", "test_x", [], unread) == ["TestFooCPU.test_x_cpu", "TestFooCUDA.test_x_cuda"]
    read = json.dumps({"only_for": ["cuda", "hpu"]})
    assert (devices_for(read, []), possible_devices(read, []), unread_options(read)) == (["cuda"], ["cuda"], {})


def test_every_dtype_is_generated_and_an_answer_says_how_many_it_leaves_out():
    """test_unary_ufuncs.py:1005 ``@dtypes(torch.float, torch.double, torch.bfloat16)``: bfloat16 was dropped."""
    from torchtalk.render.common import some
    decos = ["dtypes(torch.float, torch.double, torch.bfloat16)"]
    names = generated_names("TestUnaryUfuncs", "test_hardsigmoid", decos, json.dumps({}))
    assert names == [f"TestUnaryUfuncs{d.upper()}.test_hardsigmoid_{d}_{t}" for d in ("cpu", "cuda")
                     for t in ("float32", "float64", "bfloat16")]
    assert some(names, 4).endswith("TestUnaryUfuncsCUDA.test_hardsigmoid_cuda_float32 (+2 more)")


def test_a_device_types_own_dtypes_win_there():
    """Note [Dtypes per device type]: @dtypesIfCUDA and @dtypes(..., device_type=...) name the dtypes of one device
    type; @dtypes those of the others (test_nn.py's test_log_softmax_big: float on CPU, float and half on
    CUDA); a device type with none of its own and no general @dtypes has no dtype suffix."""
    decos = ["dtypes(torch.float)", "dtypesIfCUDA(torch.float, torch.half)"]
    assert generated_names("TestNNDeviceType", "test_bn", decos, json.dumps({})) == [
        "TestNNDeviceTypeCPU.test_bn_cpu_float32", "TestNNDeviceTypeCUDA.test_bn_cuda_float32",
        "TestNNDeviceTypeCUDA.test_bn_cuda_float16"]
    decos = ["dtypes(torch.double, device_type='cpu')", "dtypes(torch.half, torch.bfloat16)"]
    assert generated_names("TestFoo", "test_x", decos, json.dumps({})) == [
        "TestFooCPU.test_x_cpu_float64", "TestFooCUDA.test_x_cuda_float16", "TestFooCUDA.test_x_cuda_bfloat16"]
    assert generated_names("TestFoo", "test_x", ["dtypesIfCUDA(torch.half)"], json.dumps({})) == [
        "TestFooCPU.test_x_cpu", "TestFooCUDA.test_x_cuda_float16"]


def test_a_device_always_skipped_is_not_one_the_test_runs_on():
    """@skipCUDAIf(True, "flaky") (test_nn.py's test_ctc_loss) skips the CUDA variant on every machine; a condition
    (``not TEST_CUDNN``) may hold or not, so it leaves the device in."""
    assert devices_for(json.dumps({}), ["skipCUDAIf(True, 'Test is flaky')"]) == ["cpu"]
    assert devices_for(json.dumps({}), ["skipCPUIf(True, 'x')"]) == ["cuda"]
    assert devices_for(json.dumps({}), ["skipCUDAIf(not TEST_CUDNN, 'x')"]) == ["cpu", "cuda"]
    assert devices_for(json.dumps({}), ["skipCUDAIf(TrueValue)"]) == ["cpu", "cuda"]


def test_parameterized_expand_names_its_tests_by_index_and_first_string():
    # the parameterized library's default_name_func: {test}_{i}, then _{to_safe_name(first arg)} for a string
    from torchtalk.query.parametrizers import _expanded
    assert _expanded("parameterized.expand([(True,), (False,)])") == ("0", "1")
    assert _expanded('parameterized.expand([("add", 1), ("mul-op x", 2), [3]])') == ("0_add", "1_mul_op_x", "2")
    assert _expanded('parameterized.expand(["relu", "gelu"])') == ("0_relu", "1_gelu")
    assert _expanded("parameterized.expand(CASES)") == ()  # not written out: the placeholder <index>
    assert _expanded("parameterized.expand([(1,)], name_func=f)") == ()
    assert _expanded('parameterized.expand([(NAME, 1), (f"x{i}", 2)])') == ()  # may be strings: names unknown


def test_a_device_generic_test_named_in_its_file_name_is_run_by_node_ids():
    # pytest's -k matches the module's name too: -k "TestSortAndSelect and test_sort" selected ~22 of the 32 test
    # families of test_sort_and_select.py
    cmd = run_command("test/test_sort_and_select.py", "TestSortAndSelect", "test_sort", [], "")
    assert cmd == ("pytest test/test_sort_and_select.py::TestSortAndSelectCPU::test_sort_cpu "
                   "test/test_sort_and_select.py::TestSortAndSelectCUDA::test_sort_cuda"), cmd
    assert "-k" in run_command("test/test_torch.py", "TestTorchDeviceType", "test_sort", [], "")  # not in its name
