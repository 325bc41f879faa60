"""extract_tests: test classes/methods, instantiations, OpInfos and helpers of torch/testing/_internal."""

from __future__ import annotations

import json
import os
from collections import Counter
from multiprocessing import Pool
from pathlib import Path

import pytest

from torchtalk.extract.pyast import parse
from torchtalk.extract.pymodules import extract_python as _extract_python
from torchtalk.extract.pytests import MAX_TOUCHES
from torchtalk.extract.pytests import extract_tests as _extract_tests

from ..conftest import real_source
from ..factnames import REFS, ROW_TYPES, named


def extract_python(*args: object) -> dict:
    return named(_extract_python(*args))  # type: ignore[arg-type]


def extract_tests(*args: object) -> dict:
    return named(_extract_tests(*args))  # type: ignore[arg-type]

FIX = Path(__file__).parents[1] / "fixtures" / "py"
NN_TESTS = "test/test_nn_fixture.py"  # relpath the fixture test/nn_device_tests.py stands for


def nn_facts() -> dict:
    return extract_tests(NN_TESTS, (FIX / "test/nn_device_tests.py").read_bytes())


def internal(name: str) -> dict:
    rel = f"torch/testing/_internal/{name}"
    return extract_tests(rel, (FIX / rel).read_bytes())


def methods(facts: dict) -> dict:
    classes = facts["TestClass"]
    return {(classes[m.cls].name if m.cls >= 0 else "", m.name): m for m in facts["TestMethod"]}


def utils(facts: dict) -> dict:
    return {(u.name, u.line): u for u in facts["TestUtil"]}


def categories(facts: dict) -> dict[str, str]:
    return {u.name: u.category for u in facts["TestUtil"]}


def assert_well_formed(facts: dict) -> None:
    for key, rows in facts.items():
        assert key in ROW_TYPES, key
        for r in rows:
            assert type(r) is ROW_TYPES[key]
            for field, target in REFS.get(key, {}).items():
                ref = getattr(r, field)
                assert ref == -1 or 0 <= ref < len(facts[target])


# ---------------------------------------------------------------- test files


def test_every_class_is_recorded_with_bases_as_written():
    facts = nn_facts()
    assert_well_formed(facts)
    src = (FIX / "test/nn_device_tests.py").read_text().splitlines()
    classes = {c.name: c for c in facts["TestClass"]}
    assert json.loads(classes["TestNNDeviceType"].bases) == ["NNTestCase"]
    assert json.loads(classes["TestParam"].bases) == ["TestCase"]
    assert json.loads(classes["TestParam"].decorators) == ["instantiate_parametrized_tests"]
    # classes nested in helpers are classes too (the lead filters by TestCase ancestry)
    assert json.loads(classes["Inner"].bases) == ["nn.Module"]
    assert "TestGenerated" in classes
    for c in classes.values():
        assert src[c.line - 1].lstrip().startswith(f"class {c.name}")


def test_test_methods_with_decorators_as_source_text():
    ms = methods(nn_facts())
    assert set(ms) == {
        ("TestNNDeviceType", "test_softmax"),
        ("TestNNDeviceType", "test_linear_cuda"),
        ("TestNNDeviceType", "test_ops_run"),
        ("TestParam", "test_param"),
        ("TestParam", "test_only_with_cuda"),  # defined under an `if` in the class body
        ("TestPlain", "test_plain"),
        ("", "test_module_level"),
    }
    assert json.loads(ms["TestNNDeviceType", "test_softmax"].decorators) == ["dtypes(torch.float, torch.double)"]
    assert json.loads(ms["TestNNDeviceType", "test_linear_cuda"].decorators) == [
        "onlyCUDA", "unittest.skipIf(scipy is None, 'no scipy')"]
    assert json.loads(ms["TestNNDeviceType", "test_ops_run"].decorators) == [
        "ops(op_db, allowed_dtypes=(torch.float,))"]
    assert json.loads(ms["TestParam", "test_param"].decorators) == ["parametrize('x', [1, 2])"]
    src = (FIX / "test/nn_device_tests.py").read_text().splitlines()
    for (_, name), m in ms.items():
        assert src[m.line - 1].lstrip().startswith(f"def {name}(")
        assert m.end_line > m.line


def test_touches_name_ops_and_modules_not_asserts_or_dtypes():
    ms = methods(nn_facts())
    softmax = ms["TestNNDeviceType", "test_softmax"].touches.split()
    assert softmax == ["torch.randn", "F.softmax", "torch.nn.functional.softmax", ".sum", ".cumsum", "torch.cumsum"]
    linear = ms["TestNNDeviceType", "test_linear_cuda"].touches.split()
    assert set(linear) == {"nn.Linear", ".to", "torch.ones", "torch.add"}  # fn = torch.add: a reference
    assert "torch.ops.aten.add.Tensor" in ms["TestPlain", "test_plain"].touches.split()
    assert ".item" in ms["TestPlain", "test_plain"].touches.split()  # method on a subscript


def test_a_name_a_test_binds_to_an_imported_chain_is_touched_as_written_in_that_test_only():
    # aten = torch.ops.aten inside a test (test_x86inductor_quantizer.py's test_linear_unary): its aten.relu.default
    # was not recorded, as the name was a root only when bound at module level; it is written as the chain it names
    src = ("import torch\nclass TestQ:\n    def test_unary(self):\n        aten = torch.ops.aten\n"
           "        self.check(aten.relu.default, aten.gelu.default)\n"
           "    def test_nested(self):\n        with ctx():\n            ops = torch.ops\n            a = ops.aten\n"
           "            a.add.Tensor(x, y)\n"
           "    def test_other(self):\n        self.check(aten.relu.default)\n")
    ms = {m.name: m.touches.split() for m in extract_tests("test/test_q.py", src.encode())["TestMethod"]}
    assert ms["test_unary"] == ["torch.ops.aten", "torch.ops.aten.relu.default", "torch.ops.aten.gelu.default"]
    assert ms["test_nested"] == ["torch.ops", "torch.ops.aten", "torch.ops.aten.add.Tensor"]
    assert ms["test_other"] == []


def test_touches_are_bounded():
    body = "\n".join(f"    torch.op{i}(x)" for i in range(MAX_TOUCHES + 50))
    facts = extract_tests("test/test_big.py", f"import torch\ndef test_big():\n{body}\n".encode())
    names = facts["TestMethod"][0].touches.split()
    assert len(names) == MAX_TOUCHES and names[0] == "torch.op0"


def test_instantiations_with_keyword_and_positional_options():
    insts = [(i.kind, i.cls, json.loads(i.options)) for i in nn_facts()["TestInstantiation"]]
    assert insts == [
        ("parametrized", "TestParam", {}),  # @instantiate_parametrized_tests on the class
        ("device_type", "TestGenerated", {"only_for": "cpu"}),  # inside a helper function
        ("device_type", "TestNNDeviceType", {"only_for": ["cpu", "cuda"], "allow_mps": True}),
        # a name the file never binds: unknown, never the device "devices" (Note [Instantiation options])
        ("device_type", "TestPlain", {"except_for": None, "only_for": {"unread": "devices"}}),
        ("parametrized", "TestPlain", {}),
    ]
    src = (FIX / "test/nn_device_tests.py").read_text().splitlines()
    for i in nn_facts()["TestInstantiation"]:
        assert "instantiate_" in src[i.line - 1]


def only_for(source: str) -> object:
    """The only_for option the extractor reads from a test file's source."""
    facts = extract_tests("test/test_x.py", source.encode())
    return json.loads(facts["TestInstantiation"][-1].options)["only_for"]


@pytest.mark.parametrize(("source", "value"), [
    # test/test_proxy_tensor.py:2160, test/distributed/fsdp/test_fsdp_comm.py:385: a module-level constant
    ('only_for = ("cpu")\nf(T, globals(), only_for=only_for)', "cpu"),
    ('devices = ("cuda", "hpu")\nf(T, globals(), only_for=devices)', ["cuda", "hpu"]),
    ('d: tuple = ("cuda",)\nmine = d\nf(T, globals(), only_for=mine)', ["cuda"]),  # a name of one
    # test/test_jit_fuser_te.py:2973: an expression; a name bound twice; an import; a call: unknown
    ('only_for = ("cuda") if IS_FBCODE else ("cpu", "cuda")\nf(T, globals(), only_for=only_for)',
     {"unread": "only_for"}),
    ('d = "cpu"\nif X:\n    d = "cuda"\nf(T, globals(), only_for=d)', {"unread": "d"}),
    ('from x import d\nf(T, globals(), only_for=d)', {"unread": "d"}),
    ('f(T, globals(), only_for=get_devices())', {"unread": "get_devices()"}),
])
def test_an_option_naming_a_module_constant_is_read_as_its_value(source, value):
    head = "from torch.testing._internal.common_device_type import instantiate_device_type_tests\n"
    assert only_for(head + source.replace("f(T", "instantiate_device_type_tests(T")) == value


def test_a_deleted_or_guarded_class_is_recorded_as_such():
    """Note [Classes pytest may not collect]: the line of a module-level ``del`` of a class, and the module-level
    ``if`` arms it is defined in."""
    src = (
        "import sys\n"
        "class Base(TestCase):\n    def test_a(self): pass\n"           # 2
        "class Derived(Base): pass\n"                                      # 4
        "del Base\n"                                                       # 5
        "if sys.version_info < (3, 9):\n"                                  # 6
        "    class Old(TestCase):\n        def test_b(self): pass\n"
        "elif IS_WINDOWS:\n    pass\n"
        "else:\n    class Other(TestCase):\n        class Inner: pass\n"
        "def helper():\n    class Local(TestCase): pass\n    del Local\n"
    )
    facts = extract_tests("test/test_x.py", src.encode())
    got = {c.name: (c.deleted, c.guard) for c in facts["TestClass"]}
    assert got == {"Base": (5, ""), "Derived": (0, ""), "Old": (0, "sys.version_info < (3, 9)"),
                   "Other": (0, "not (sys.version_info < (3, 9)) and not (IS_WINDOWS)"),
                   "Inner": (0, ""), "Local": (0, "")}


def test_imports_are_recorded_for_test_files_only_outside_torch():
    imports = {(i.alias, i.target) for i in nn_facts()["PyImport"]}
    assert ("instantiate_device_type_tests",
            "torch.testing._internal.common_device_type.instantiate_device_type_tests") in imports
    assert ("F", "torch.nn.functional") in imports
    assert ("NNTestCase", "test.common_nn.NNTestCase") in imports  # relative to the test package
    assert ("scipy", "scipy") in imports  # inside try/except at module level
    # extract_python already records them for torch/testing/_internal: no duplicates
    assert "PyImport" not in internal("common_fixture_utils.py")


def test_errors_are_reported_not_raised():
    bad = extract_tests("test/test_bad.py", (FIX / "bad/syntax_error.py").read_bytes())
    assert list(bad) == ["errors"]
    assert list(extract_tests("test/test_bad.py", (FIX / "bad/not_utf8.py").read_bytes())) == ["errors"]
    assert list(extract_tests("test/test_bad.py", b"\x00\x00")) == ["errors"]


def test_one_parse_serves_both_extractors():
    rel = "torch/testing/_internal/common_methods_invocations.py"
    data = (FIX / rel).read_bytes()
    tree, err = parse(data)
    assert err == ""
    assert extract_tests(rel, data, tree) == extract_tests(rel, data)
    assert extract_python(rel, data, tree) == extract_python(rel, data)


# ---------------------------------------------------------------- OpInfo entries


def test_opinfo_entries_with_names_variants_aliases_and_db():
    facts = internal("common_methods_invocations.py")
    assert_well_formed(facts)
    rows = [(e.name, e.ctor, e.aten_name, e.variant_test_name, e.aliases, e.db) for e in facts["OpInfoEntry"]]
    assert rows == [
        ("mvlgamma", "UnaryUfuncInfo", "", "", "special.multigammaln", ""),  # built in a helper
        ("cumsum", "OpInfo", "", "", "", "op_db"),
        ("abs", "UnaryUfuncInfo", "abs", "", "absolute", "op_db"),
        ("add", "BinaryUfuncInfo", "", "", "plus addition", "op_db"),
        ("norm", "OpInfo", "linalg_vector_norm", "fro", "", "op_db"),
        ("extra_op", "OpInfo", "", "", "", "op_db"),  # op_db += [...]
        ("_refs.abs", "PythonRefInfo", "", "", "", "python_ref_db"),
    ]  # DecorateInfo(...) and OpInfo(f"...") are not entries
    src = (FIX / "torch/testing/_internal/common_methods_invocations.py").read_text().splitlines()
    for e in facts["OpInfoEntry"]:
        assert e.ctor in src[e.line - 1] and e.name in src[e.line - 1] + src[e.line]


def test_a_foreach_entry_is_named_as_it_names_itself():
    """Note [OpInfo names set after construction]: ForeachFuncInfo('neg') is the entry _foreach_neg (its
    __post_init__ renames it), in its own list; the DecorateInfo marks in it are that entry's."""
    code = (b"from torch.testing._internal.opinfo.core import OpInfo, ForeachFuncInfo, DecorateInfo\n"
            b"foreach_unary_op_db = [\n    ForeachFuncInfo(\n        'neg',\n"
            b"        decorators=(DecorateInfo(unittest.expectedFailure, 'TestMeta', 'test_meta_inplace'),),\n"
            b"    ),\n]\n")
    facts = extract_tests("torch/testing/_internal/common_methods_invocations.py", code)
    assert [(e.name, e.ctor, e.db) for e in facts["OpInfoEntry"]] == [
        ("_foreach_neg", "ForeachFuncInfo", "foreach_unary_op_db")]
    assert [(m.op, m.entry, m.test_class, m.test_name) for m in facts["OpTestMark"]] == [
        ("_foreach_neg", "_foreach_neg", "TestMeta", "test_meta_inplace")]


def test_info_calls_count_only_where_opinfo_is_in_scope():
    code = b"from torch.distributed.rpc import WorkerInfo\nw = [WorkerInfo('abc', 1)]\n"
    assert extract_tests("torch/testing/_internal/distributed/rpc/rpc_test.py", code)["OpInfoEntry"] == []


# ---------------------------------------------------------------- helpers (TestUtil)


def test_helpers_are_classified_from_their_source():
    cats = categories(internal("common_fixture_utils.py"))
    assert cats == {
        "slowTest": "decorators",  # @wraps wrapper
        "skipIfTorchDynamo": "decorators",  # factory returning a decorator
        "xfailIfLinux": "decorators",  # returns unittest.expectedFailure(func) or func
        "onlyCPU": "decorators",  # applies onlyOn("cpu") to fn
        "skipIfNoLapack": "decorators",  # returns unittest.skipIf(...)
        "slowTestIf": "decorators",  # returns a decorator or `lambda fn: fn`
        "markStrict": "decorators",  # class decorator
        "onlyIfCuda": "decorators",  # defined under `if` at module level
        "gradcheck": "other",  # takes fn but also required inputs, returns a result
        "get_function_arglist": "other",
        "assert_allclose_ish": "assertions",
        "TestCase.assertEqual": "assertions",
        "TestCase.assertNotWarn": "assertions",
        "TestCase.helper": "other",  # a test base's method asserting nothing (Note [Helper methods of the test bases])
        "freeze_rng_state": "fixtures",  # @contextmanager
        "make_symmetric_matrices": "fixtures",
        "sample_inputs_thing": "opinfo",  # an OpInfo entry's inputs, not a fixture
        "random_pairs": "fixtures",  # generator of test data
        "instantiate_parametrized_tests": "fixtures",
        "run_tests": "other",
        "parametrize": "decorators",  # subclasses a decorator class of the file
        "subtest": "other",
        "DeterministicGuard": "fixtures",  # context manager class
        "TestCase": "fixtures",
        "NNTestCase": "fixtures",
        "TestEnvironment": "other",
    }  # _TestParametrizer is private: not listed


def test_a_decorator_factory_returning_a_partial_of_its_decorator_is_a_decorator():
    """common_dtensor's ``with_comms(eager_init=False)`` returns ``decorator(func=...)`` when handed the test and
    ``partial(decorator, eager_init=...)`` otherwise: a decorator either way (it was 'other')."""
    code = (b"from functools import partial, wraps\n"
            b"def with_comms(eager_init=False):\n"
            b"    def decorator(func, eager_init=False):\n"
            b"        @wraps(func)\n"
            b"        def wrapper(self, *a):\n"
            b"            func(self, *a)\n"
            b"        return wrapper\n"
            b"    return decorator(func=eager_init) if callable(eager_init) else \\\n"
            b"        partial(decorator, eager_init=eager_init)\n"
            b"def not_one(x):\n"
            b"    return partial(print, x)\n")
    cats = categories(extract_tests("torch/testing/_internal/distributed/_tensor/common_dtensor.py", code))
    assert cats == {"with_comms": "decorators", "not_one": "other"}


def test_the_assertions_of_every_test_base_are_listed():
    """JitTestCase.assertAllFused (a TestCase subclass of another module) is an assertion helper like
    TestCase.assertEqual; a plain class's assert method is not."""
    code = (b"from torch.testing._internal.common_utils import TestCase\n"
            b"class JitTestCase(TestCase):\n    def assertAllFused(self, graph):\n        pass\n"
            b"class Plain:\n    def assertNothing(self):\n        pass\n")
    cats = categories(extract_tests("torch/testing/_internal/jit_utils.py", code))
    assert cats["JitTestCase.assertAllFused"] == "assertions" and "Plain.assertNothing" not in cats


def test_decorators_bound_by_assignment_are_decorators():
    """inductor_utils' ``requires_gpu = functools.partial(unittest.skipIf, ...)`` and common_utils' ``skipIfNoDill =
    unittest.skipIf(...)`` are decorators a test imports like any other (they were not listed at all); a decorated
    function and a partial of a plain function are not."""
    code = (b"import functools, unittest\n"
            b"from functools import partial\n"
            b"HAS_GPU = False\n"
            b"requires_gpu = functools.partial(unittest.skipIf, not HAS_GPU, 'requires gpu')\n"
            b"skipIfNoDill = unittest.skipIf(True, 'no dill')\n"
            b"def skipDeviceIf(cond, msg, *, device):\n"
            b"    def decorate_fn(fn):\n        return fn\n"
            b"    return decorate_fn\n"
            b"skipCUDAIf = functools.partial(skipDeviceIf, device='cuda')\n"
            b"slow = skipIfNoDill\n"
            b"def helper(x):\n    return x\n"
            b"wrapped = skipIfNoDill(helper)\n"
            b"threshold = partial(helper, 3)\n"
            b"TOL = dict(atol=1)\n")
    facts = extract_tests("torch/testing/_internal/inductor_utils.py", code)
    got = {u.name: (u.kind, u.category, u.line) for u in facts["TestUtil"]}
    assert got == {"requires_gpu": ("bound", "decorators", 4), "skipIfNoDill": ("bound", "decorators", 5),
                   "skipDeviceIf": ("function", "decorators", 6), "skipCUDAIf": ("bound", "decorators", 10),
                   "slow": ("bound", "decorators", 11), "helper": ("function", "other", 12)}
    docs = {u.name: u.doc for u in facts["TestUtil"]}
    assert docs["skipCUDAIf"] == "skipCUDAIf = functools.partial(skipDeviceIf, device='cuda')"


def test_the_helper_methods_of_a_test_base_are_listed():
    """JitTestCase.checkScript asserts through self.assertEqual: an assertion though not named assert* (it was
    missing); one calling it asserts too; a plain helper is 'other', a generator of inputs a fixture; properties,
    the unittest protocol, tests and private methods are not helpers; a context manager lists assert* only."""
    code = (b"from torch.testing._internal.common_utils import TestCase\n"
            b"class JitTestCase(TestCase):\n"
            b"    def checkScript(self, fn, inputs):\n        self.assertEqual(fn(*inputs), fn(*inputs))\n"
            b"    def checkModule(self, m, inputs):\n        return self.checkScript(m, inputs)\n"
            b"    def run_pass(self, name, graph):\n        return graph\n"
            b"    def gen_inputs(self):\n        self.assertTrue(True)\n        yield 1\n"
            b"    @property\n    def world_size(self):\n        return 2\n"
            b"    def setUp(self):\n        pass\n"
            b"    def run(self, result=None):\n        pass\n"
            b"    def test_itself(self):\n        self.checkScript(len, ([],))\n"
            b"    def _private(self):\n        self.fail()\n"
            b"class Guard:\n"
            b"    def __enter__(self):\n        return self\n"
            b"    def __exit__(self, *a):\n        pass\n"
            b"    def check_it(self):\n        self.assertTrue(1)\n"
            b"    def assertClean(self):\n        pass\n")
    cats = categories(extract_tests("torch/testing/_internal/jit_utils.py", code))
    assert cats == {"JitTestCase": "fixtures", "JitTestCase.checkScript": "assertions",
                    "JitTestCase.checkModule": "assertions", "JitTestCase.run_pass": "other",
                    "JitTestCase.gen_inputs": "fixtures", "Guard": "fixtures", "Guard.assertClean": "assertions"}


def test_device_type_helpers():
    facts = internal("common_fixture_device_type.py")
    cats = categories(facts)
    assert cats["DeviceTypeTestBase"] == cats["CPUTestBase"] == "fixtures"
    assert cats["instantiate_device_type_tests"] == "fixtures"
    for name in ("ops", "skipIf", "skipCUDAIf", "dtypes", "dtypesIfCUDA", "onlyCUDA", "skipCUDAIfNoMagma",
                 "largeTensorTest"):
        assert cats[name] == "decorators", name
    assert cats["get_all_device_types"] == "other"
    kinds = {u.name: u.kind for u in facts["TestUtil"]}
    assert kinds["ops"] == "class" and kinds["onlyCUDA"] == "function"


def test_helper_lines_and_docs():
    facts = internal("common_fixture_utils.py")
    src = (FIX / "torch/testing/_internal/common_fixture_utils.py").read_text().splitlines()
    by_name = {u.name: u for u in facts["TestUtil"]}
    assert by_name["skipIfTorchDynamo"].doc == "Usage: @skipIfTorchDynamo(msg)"
    assert by_name["parametrize"].doc == "Decorator for applying generic test parametrizations."
    assert by_name["onlyCPU"].doc == "onlyCPU(fn)"  # no docstring: the signature
    assert by_name["TestCase"].doc == "class TestCase(expecttest.TestCase)"
    assert by_name["TestCase.assertEqual"].doc == "Asserts that x and y are close."
    for u in facts["TestUtil"]:
        line = src[u.line - 1].lstrip()
        assert line.startswith(("def ", "class ")) and u.name.split(".")[-1] in line


# ---------------------------------------------------------------- the real tree (2.6.0)

REAL = real_source()
needs_real = pytest.mark.skipif(REAL is None, reason="set TORCHTALK_TEST_SOURCE to a PyTorch 2.6.0 tree")


def real(rel: str) -> dict:
    facts = extract_tests(rel, (REAL / rel).read_bytes())
    assert "errors" not in facts
    return facts


@pytest.mark.integration
@needs_real
def test_real_opinfo_db():
    entries = real("torch/testing/_internal/common_methods_invocations.py")["OpInfoEntry"]
    assert len(entries) >= 390
    cumsum = [e for e in entries if e.name == "cumsum"]
    assert len(cumsum) == 1 and cumsum[0].db == "op_db" and cumsum[0].ctor == "OpInfo"
    dbs = Counter(e.db for e in entries)
    assert dbs["op_db"] > 500 and dbs["python_ref_db"] > 250
    linalg = real("torch/testing/_internal/opinfo/definitions/linalg.py")["OpInfoEntry"]
    assert any(e.name == "linalg.svd" for e in linalg)


@pytest.mark.integration
@needs_real
def test_real_test_utils():
    dt = {u.name: u for u in real("torch/testing/_internal/common_device_type.py")["TestUtil"]}
    assert (dt["instantiate_device_type_tests"].line, dt["instantiate_device_type_tests"].category) == (888, "fixtures")
    for name in ("dtypes", "onlyCUDA", "ops", "skipCUDAIfNoMagma", "largeTensorTest", "toleranceOverride"):
        assert dt[name].category == "decorators", name
    assert dt["DeviceTypeTestBase"].category == "fixtures"
    cu = {u.name: u for u in real("torch/testing/_internal/common_utils.py")["TestUtil"]}
    assert (cu["parametrize"].line, cu["parametrize"].category, cu["parametrize"].kind) == (594, "decorators", "class")
    assert (cu["skipIfTorchDynamo"].line, cu["skipIfTorchDynamo"].category) == (1605, "decorators")
    assert cu["TestCase"].category == "fixtures" and cu["TestCase.assertEqual"].category == "assertions"
    assert cu["instantiate_parametrized_tests"].category == "fixtures"


@pytest.mark.integration
@needs_real
def test_real_test_nn_and_test_torch():
    nn = real("test/test_nn.py")
    insts = {(i.kind, i.cls): (i.line, json.loads(i.options)) for i in nn["TestInstantiation"]}
    assert insts["device_type", "TestNNDeviceType"] == (13080, {"allow_mps": True})
    assert ("parametrized", "TestNN") in insts
    ms = methods(nn)
    assert len(ms) > 450
    assert any(name.startswith("test_softmax") for _, name in ms)
    tt = methods(real("test/test_torch.py"))
    cumsum = tt["TestTorchDeviceType", "test_cumsum"]
    assert cumsum.line == 2610
    assert {"torch.cumsum", ".cumsum_"} <= set(cumsum.touches.split())


def _whole_file(rel: str) -> tuple[str, list[str], dict[str, int]]:
    data = (REAL / rel).read_bytes()
    tree, err = parse(data)
    if tree is None:
        return rel, [err], {}
    out = []
    if rel.startswith("torch/"):
        out.append(extract_python(rel, data, tree))
    if rel.startswith(("test/", "torch/testing/_internal/")):
        out.append(extract_tests(rel, data, tree))
    errors, counts = [], Counter()
    for f in out:
        errors += f.pop("errors", [])
        counts.update({k: len(v) for k, v in f.items()})
    return rel, errors, dict(counts)


@pytest.mark.integration
@needs_real
def test_real_tree_extracts_without_errors():
    files = [p.relative_to(REAL).as_posix() for top in ("torch", "test") for p in (REAL / top).rglob("*.py")]
    assert len(files) > 3000
    totals: Counter = Counter()
    with Pool(min(2, os.cpu_count() or 1)) as pool:
        for rel, errors, counts in pool.imap_unordered(_whole_file, files, 16):
            assert errors == [], rel
            totals.update(counts)
    assert totals["TestMethod"] > 20000 and totals["TestClass"] > 3000
    assert totals["PyFunction"] > 30000 and totals["PyOpRef"] > 1500
    assert totals["OpInfoEntry"] > 1000 and totals["TestInstantiation"] > 400
