"""extract_python: facts from torch/** modules (fixtures in tests/fixtures/py, real tree when configured)."""

from __future__ import annotations

import ast
import json
import pickle
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from torchtalk.extract import pyast
from torchtalk.extract.pyast import module_name, resolve_from
from torchtalk.extract.pymodules import extract_python as _extract_python
from torchtalk.extract.pytests import extract_tests as _extract_tests

from ..conftest import real_source
from ..factnames import REFS, ROW_TYPES, named


def extract_python(*args: object) -> dict:
    return named(_extract_python(*args))  # type: ignore[arg-type]


def extract_tests(*args: object) -> dict:
    return named(_extract_tests(*args))  # type: ignore[arg-type]

FIX = Path(__file__).parents[1] / "fixtures" / "py"


def facts_of(rel: str) -> dict:
    return extract_python(rel, (FIX / rel).read_bytes())


def func(facts: dict, qualname: str):
    rows = [f for f in facts["PyFunction"] if f.qualname == qualname]
    assert len(rows) == 1, (qualname, rows)
    return rows[0]


def calls_of(facts: dict, qualname: str) -> list[str]:
    fn = func(facts, qualname)
    idx = facts["PyFunction"].index(fn)
    return [c.callee for c in facts["PyCall"] if c.func == idx]


def oprefs(facts: dict) -> set[tuple[str, str, str]]:
    """(kind, op, qualname of the function or "")"""
    funcs = facts["PyFunction"]
    return {(r.kind, r.op, funcs[r.func].qualname if r.func >= 0 else "") for r in facts["PyOpRef"]}


def assert_well_formed(facts: dict) -> None:
    """Rows are the model's fact types, local refs point into the file, facts pickle."""
    for key, rows in facts.items():
        assert key in ROW_TYPES, key
        for r in rows:
            assert type(r) is ROW_TYPES[key]
            for field, target in REFS.get(key, {}).items():
                ref = getattr(r, field)
                assert ref == -1 or 0 <= ref < len(facts[target])
    assert pickle.loads(pickle.dumps(facts)) == facts


# ---------------------------------------------------------------- names and paths


def test_module_names_come_from_the_path():
    assert module_name("torch/nn/modules/linear.py") == ("torch.nn.modules.linear", False)
    assert module_name("torch/nn/__init__.py") == ("torch.nn", True)
    assert module_name("test/distributed/test_c10d.py") == ("test.distributed.test_c10d", False)


def test_relative_imports_resolve_against_module_or_package():
    assert resolve_from("torch.nn.modules.linear", False, 1, "module") == "torch.nn.modules.module"
    assert resolve_from("torch.nn.modules.linear", False, 2, None) == "torch.nn"
    assert resolve_from("torch.nn", True, 1, "functional") == "torch.nn.functional"
    assert resolve_from("torch.nn", True, 2, "utils") == "torch.utils"
    assert resolve_from("x", False, 0, "torch.nn") == "torch.nn"


# ---------------------------------------------------------------- classes, defs, calls


def test_classes_keep_bases_as_written_lines_and_docstring_first_line():
    facts = facts_of("torch/nn/modules/linear.py")
    assert_well_formed(facts)
    src = (FIX / "torch/nn/modules/linear.py").read_text().splitlines()
    classes = {c.qualname: c for c in facts["PyClass"]}
    assert json.loads(classes["Linear"].bases) == ["Module"]
    assert json.loads(classes["NonDynamicallyQuantizableLinear"].bases) == ["Linear"]
    assert json.loads(classes["LazyLinear"].bases) == ["LazyModuleMixin", "Linear"]
    assert classes["Identity"].doc == "A placeholder identity operator that is argument-insensitive."
    assert classes["LazyLinear.Inner"].name == "Inner"
    for c in classes.values():
        assert src[c.line - 1].lstrip().startswith(f"class {c.name}")
        assert c.module == "torch.nn.modules.linear"
    assert classes["Linear"].end_line >= func(facts, "Linear.fetch").end_line


def test_functions_have_full_signatures_and_kinds():
    facts = facts_of("torch/nn/modules/linear.py")
    src = (FIX / "torch/nn/modules/linear.py").read_text().splitlines()
    fwd = func(facts, "Linear.forward")
    assert (fwd.cls, fwd.kind, fwd.signature) == ("Linear", "method", "(self, input: Tensor) -> Tensor")
    assert src[fwd.line - 1].strip() == "def forward(self, input: Tensor) -> Tensor:"
    init = func(facts, "Linear.__init__")
    assert init.signature == ("(self, in_features: int, out_features: int, bias: bool = True, "
                              "device=None, dtype=None) -> None")
    make = func(facts, "Linear.make")
    assert make.kind == "staticmethod"
    assert make.signature == "(n: int, *sizes: int, bias: bool | None = None, **kwargs: Any) -> 'Linear'"
    assert func(facts, "Linear.from_float").signature == "(cls, mod, /, use_precomputed=False)"
    assert func(facts, "Linear.from_float").kind == "classmethod"
    assert func(facts, "Linear.fan_in").kind == "property"
    assert json.loads(func(facts, "Linear.fan_in").decorators) == ["property"]
    assert func(facts, "Linear.fetch").kind == "async"
    nested = func(facts, "_helper.<locals>.nested")
    assert (nested.cls, nested.kind) == ("", "function")
    assert func(facts, "LazyLinear.Inner.method").cls == "LazyLinear.Inner"


def test_calls_are_dotted_callees_of_their_enclosing_function():
    facts = facts_of("torch/nn/modules/linear.py")
    assert calls_of(facts, "Linear.forward") == ["F.linear"]
    assert calls_of(facts, "Linear.__init__") == ["super().__init__", "Parameter", "torch.empty",
                                                  "self.reset_parameters"]
    assert calls_of(facts, "LazyLinear.Inner.method") == ["torch.ops.aten.add.Tensor"]
    # foo()() : the outer call has no dotted callee and is skipped; the inner one is kept
    assert calls_of(facts, "_helper") == ["nested", "foo"]
    assert calls_of(facts, "_helper.<locals>.nested") == ["torch.relu"]
    for c in facts["PyCall"]:
        if c.func >= 0:
            f = facts["PyFunction"][c.func]
            assert f.line <= c.line <= f.end_line


RECEIVERS = """\
import collections
import os
from typing import Dict, Optional, Set


def named_modules(self, memo: Optional[Set["Module"]] = None, prefix: str = "", *args, **kwargs):
    if memo is None:
        memo = set()
    memo.add(self)  # memo.add: set
    prefix.split(".")  # prefix.split: str
    args.index(self)  # args.index: tuple
    kwargs.values()  # kwargs.values: dict
    seen = {}
    seen.values()  # seen.values: dict
    counts = collections.Counter()
    counts.values()  # counts.values: dict
    names: Dict[str, int] = make()
    names.values()  # names.values: dict
    items = dict(kwargs)
    items = sorted(items.items())  # items.items: builtins
    items.sort()  # items.sort: builtins
    picked = [] if prefix else None
    picked.sort()  # picked.sort: list
    text = ", ".join(prefix)
    text.split(",")  # text.split: str
    msg = "%s" % prefix
    msg.split()  # msg.split: str
    devices = os.getenv("CUDA_VISIBLE_DEVICES")
    devices.split(",")  # devices.split: str
    path = os.environ.get("PATH")
    path.split(":")  # path.split: str
    where = os.path.join(prefix, "x")
    where.split("/")  # where.split: str
    other_env = os.getenvb()
    other_env.split(b",")  # other_env.split: ?
    var = os.getenv("CUDA_VISIBLE_DEVICES")
    if prefix:
        var = devices
    var.split(",")  # var.split: str
    mixed = os.getenv("X")
    if prefix:
        mixed = make()
    mixed.split(",")  # mixed.split: ?
    loop_a = set()
    loop_b = loop_a
    loop_a = loop_b
    loop_a.add(1)  # loop_a.add: set
    param_alias = prefix
    param_alias.split()  # param_alias.split: str
    acc = []
    acc += [1]
    acc.index(1)  # acc.index: list
    out = make()
    out.add(1)  # out.add: ?
    both = set()
    both, other = make()
    both.add(1)  # both.add: ?
    loop = set()
    for loop in make():
        loop.add(1)  # loop.add: ?
    shadow = set()
    shadow.add(2)  # shadow.add: ?
    f = lambda shadow: shadow.add(1)  # shadow.add: ?
    bound = []
    def inner():
        nonlocal bound
        bound = make()
        bound.add(1)  # bound.add: ?
    bound.add(1)  # bound.add: ?
    self.memo.add(1)  # self.memo.add: ?
    untyped.add(1)  # untyped.add: ?
"""


def test_a_local_that_holds_a_builtin_marks_its_method_calls():
    """Note [Builtin receivers]: each call line above says, after ``#``, what the receiver of its method call
    holds ("?": not known, so a Tensor is assumed when the method is a Tensor's)."""
    facts = extract_python("torch/nn/modules/module.py", RECEIVERS.encode())
    lines = RECEIVERS.splitlines()
    got = {}
    for c in facts["PyCall"]:
        line = lines[c.line - 1]
        if "#" in line and "." in c.callee and not c.callee.startswith(("make", "collections")):
            got[c.line] = (c.callee, c.recv.value or "?")
    want = {n: tuple(lines[n - 1].rsplit("  # ", 1)[1].split(": ")) for n in range(1, len(lines) + 1)
            if "  # " in lines[n - 1]}
    assert got == want


LOOPS = """\
def forward(self, x, fn, pairs):
    for mod in self.layers:
        x = mod(x)  # mod: self.layers
    for module in self:
        x = module(x)  # module: self
    for i, blk in enumerate(self.blocks.values()):
        x = blk(x)  # blk: self.blocks.values()
    for a, b in zip(self.xs, self.ys):
        x = b(a(x))  # b: self.ys  # a: self.xs
    ys = [f(x) for f in self.fns]  # f: self.fns
    for k, v in pairs:
        v(x)  # v: -
    for g in self.gs:
        g(x)  # g: -
    g = make()
    for fn in self.fns:
        fn(x)  # fn: -
    for h in self.hs:
        h(x)  # h: -
    for h in self.others:
        h(x)  # h: -
    for c in self.chunks[0].parts:
        c(x)  # c: self.chunks[0].parts
    for w in torch.nn.modules.container.ModuleList.from_the_registry_of_modules_defined_elsewhere(x):
        w(x)  # w: -
"""


def test_a_call_of_a_name_only_loops_bind_records_their_iterable():
    """Note [Loop callables]: each call line above says, after ``#``, the iterable recorded for the call of that
    name ("-": none: the name is also assigned or a parameter, bound over two iterables, a tuple not of enumerate or
    zip, or the iterable is longer than 80 characters)."""
    facts = extract_python("torch/nn/modules/x.py", LOOPS.encode())
    lines = LOOPS.splitlines()
    got = {(c.line, c.callee): c.over or "-" for c in facts["PyCall"] if "." not in c.callee
           and c.callee not in ("enumerate", "zip", "make")}
    want = {(n, name): over for n in range(1, len(lines) + 1)
            for name, over in (part.split(": ") for part in lines[n - 1].split("  # ")[1:])}
    assert got == want


LOCALS = """\
import helper
def module_fn():
    pass
def f(x, fn, *args):
    y = make(x)
    y()  # y: local
    fn(x)  # fn: local
    helper(x)  # helper: -
    module_fn()  # module_fn: -
    len(x)  # len: -
    with open(x) as g:
        g()  # g: local
    def inner():
        fn()  # fn: local
        inner_only()  # inner_only: -
    for h in x:
        h()  # h: local
    step = module_fn
    step()  # module_fn: -
"""


def test_a_call_of_a_name_the_function_binds_is_marked_local():
    """Note [Loop callables]: each call line above says, after ``#``, whether the function (or one around it) binds
    the name it calls (a parameter, an assignment, a ``with`` or loop target): a builtin, an import or a function of
    the module is none of these."""
    facts = extract_python("torch/nn/modules/x.py", LOCALS.encode())
    lines = LOCALS.splitlines()
    got = {(c.line, c.callee): "local" if c.local else "-" for c in facts["PyCall"] if "  # " in lines[c.line - 1]}
    want = {(n, name): how for n in range(1, len(lines) + 1)
            for name, how in (part.split(": ") for part in lines[n - 1].split("  # ")[1:])}
    assert got == want


def test_a_string_annotation_that_is_no_type_is_read_without_a_warning():
    """A parameter annotated "1or 2" (Python parses it with a SyntaxWarning) or anything else that is no type is of
    an unknown type, quietly: the worker's stderr carries progress, not warnings about a string."""
    import warnings

    src = b'def f(x: "1or 2", y: "Set[int]", z: "a b"):\n    y.add(x)\n    z.add(x)\n'
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        calls = extract_python("torch/x.py", src)["PyCall"]
    assert [str(w.message) for w in caught] == []
    assert [(c.callee, c.recv.value) for c in calls] == [("y.add", "set"), ("z.add", "")]


def test_a_calls_shape_is_recorded():
    """Note [Overloads by arguments]: positional arguments written (-1 if one is starred), keyword names ("**" for a
    mapping), and what literal each argument is ("." for none; "" when no argument is a literal)."""
    src = b"""\
def f(x, xs, s, kw):
    torch.cat(xs, 1, out=x)
    x.transpose(0, -1)
    x.view(*s)
    torch.zeros(s, names=("N",), dtype=None, **kw)
    x.sum(dim="N", keepdim=True)
    x.pow(0.5)
    x.add(x)
    x.t()
"""
    facts = extract_python("torch/x.py", src)
    got = [(c.callee, c.nargs, c.keywords, c.literals) for c in facts["PyCall"]]
    assert got == [("torch.cat", 2, "out", ".i."), ("x.transpose", 2, "", "ii"), ("x.view", -1, "", ""),
                   ("torch.zeros", 1, "names,dtype,**", "..n."), ("x.sum", 0, "dim,keepdim", "sb"),
                   ("x.pow", 1, "", "f"), ("x.add", 1, "", ""), ("x.t", 0, "", "")]


def test_decorator_calls_belong_to_the_enclosing_scope():
    facts = facts_of("torch/_decomp/decompositions.py")
    module_level = [c.callee for c in facts["PyCall"] if c.func == -1]
    assert module_level.count("register_decomposition") == 4
    assert "out_wrapper" in module_level
    assert calls_of(facts, "helper") == ["register_decomposition"]


def test_calls_through_a_local_alias_name_the_aliased_functions():
    facts = facts_of("torch/nn/functional.py")
    assert sorted(calls_of(facts, "_pick")) == ["_multi_tensor_impl", "_single_tensor_impl", "torch._fused_impl"]
    assert calls_of(facts, "dropout") == ["_VF.dropout_", "_VF.dropout"]


# ---------------------------------------------------------------- imports and assignments


def test_imports_bind_aliases_to_absolute_targets():
    facts = facts_of("torch/nn/modules/linear.py")
    imports = {(i.alias, i.target) for i in facts["PyImport"]}
    assert {
        ("math", "math"),
        ("torch", "torch"),
        ("F", "torch.nn.functional"),
        ("init", "torch.nn.init"),
        ("Module", "torch.nn.modules.module.Module"),
        ("LazyModuleMixin", "torch.nn.modules.lazy.LazyModuleMixin"),
        ("F2", "torch.nn.functional"),
        ("parameter", "torch.nn.parameter"),
    } <= imports
    fimports = {(i.alias, i.target) for i in facts_of("torch/nn/functional.py")["PyImport"]}
    assert ("_VF2", "torch._C._VariableFunctions") in fimports
    assert ("_VF", "torch._VF") in fimports


def test_star_and_submodule_imports():
    facts = extract_python("torch/x/__init__.py", b"import torch.nn.functional\nfrom .y import *\nimport a.b as c\n")
    assert [(i.alias, i.target, i.line) for i in facts["PyImport"]] == [
        ("torch", "torch", 1), ("*", "torch.x.y", 2), ("c", "a.b", 3)]


def test_module_level_assignments_of_dotted_names_and_add_docstr():
    facts = facts_of("torch/nn/functional.py")
    src = (FIX / "torch/nn/functional.py").read_text().splitlines()
    assigns = {a.name: a for a in facts["PyAssign"]}
    assert assigns["linear"].value == "torch._C._nn.linear"
    assert assigns["conv2d"].value == "torch.conv2d"
    assert assigns["relu_"].value == "torch.relu_"
    assert assigns["threshold_"].value == "_VF.threshold_"
    assert assigns["Tensor"].value == "torch.Tensor"
    assert src[assigns["linear"].line - 1].startswith("linear = _add_docstr(")
    # make_logger(__name__) names nothing of this module; tuple targets are skipped
    assert "logger" not in assigns and "a" not in assigns


# ---------------------------------------------------------------- op registrations


def test_decompositions_and_python_impls():
    facts = facts_of("torch/_decomp/decompositions.py")
    assert_well_formed(facts)
    assert oprefs(facts) == {
        ("decomposition", "aten.tanh_backward", "tanh_backward"),
        ("decomposition", "aten.split_with_sizes_copy.default", "split_with_sizes_copy"),
        ("decomposition", "aten.split_with_sizes_copy.out", "split_with_sizes_copy"),
        ("decomposition", "aten.upsample_bilinear2d.vec", "upsample_bilinear2d_vec"),
        ("python_impl", "aten.upsample_bilinear2d.vec", "upsample_bilinear2d_vec"),
        ("decomposition", "aten.clamp_min.default", "clamp_min"),  # the overload alone
        # register_inplace(aten.addmm_, addmm): the out-of-place def implements it
        ("decomposition", "aten.addmm_", "addmm"),
        # register_decomposition(op) with a variable names no op: nothing recorded
    }
    src = (FIX / "torch/_decomp/decompositions.py").read_text().splitlines()
    for r in facts["PyOpRef"]:
        assert "register_" in src[r.line - 1] or "py_impl" in src[r.line - 1]


def test_inductor_lowerings_and_fallbacks():
    facts = facts_of("torch/_inductor/lowering.py")
    assert_well_formed(facts)
    assert oprefs(facts) == {
        ("lowering", "aten.add", "add"),
        ("lowering", "aten.sum", "reduce_sum"),
        ("lowering", "prims.xor_sum.default", "reduce_sum"),
        ("lowering", "torch.as_tensor", "as_tensor"),
        ("lowering", "torch._inductor.inductor_prims.seed", "seed"),
        ("lowering", "aten.clamp_min", "maximum"),  # register_lowering(aten.clamp_min)(maximum)
        ("lowering", "aten.amax", ""),  # register_lowering(aten.amax)(make_reduction("max"))
        ("fallback", "aten.topk", ""),
        ("fallback", "aten.upsample_linear1d_backward.default", ""),
        ("fallback", "quantized_decomposed.quantize_per_tensor", ""),
        ("lowering", "aten.cos", ""),
        ("lowering", "aten.add_", "add"),  # register_inplace under torch/_inductor is a lowering
        ("lowering", "_c10d_functional.all_reduce", "comms.<locals>._all_reduce"),  # local alias
    }


def test_meta_registrations_take_lists_and_skip_variables():
    facts = facts_of("torch/_meta_registrations.py")
    assert oprefs(facts) == {
        ("meta", "aten.cummax.default", "cummaxmin"),
        ("meta", "aten.cummax.out", "cummaxmin"),
        ("meta", "aten.cummin.default", "cummaxmin"),
        ("meta", "aten.cummin.out", "cummaxmin"),
        ("meta", "aten.take", "meta_take"),
    }


def test_refs_are_public_functions_listed_in_all():
    facts = facts_of("torch/_refs/__init__.py")
    assert oprefs(facts) == {
        ("ref", "aten.abs", "abs"),
        ("ref", "aten.add", "add"),
        ("decomposition", "aten.add", "add"),
        ("ref", "aten.where", "where"),  # from __all__ += [...]
        ("ref", "aten.abs_", ""),  # abs_ = _make_inplace(abs)
        ("ref", "aten._private_out", "_private_out"),  # @out_wrapper-decorated
        # not_listed is public but missing from __all__; helpers are private
    }
    special = facts_of("torch/_refs/special/__init__.py")
    assert oprefs(special) == {("ref", "aten.special_zeta", "zeta")}


def test_refs_only_under_torch_refs():
    data = (FIX / "torch/_refs/special/__init__.py").read_bytes()
    assert extract_python("torch/special/__init__.py", data)["PyOpRef"] == []


# ---------------------------------------------------------------- robustness


def test_syntax_error_gives_errors_not_an_exception():
    facts = facts_of("bad/syntax_error.py")
    assert list(facts) == ["errors"]
    assert facts["errors"][0].startswith("bad/syntax_error.py: SyntaxError: line 1")


def test_non_utf8_bytes_give_errors():
    facts = facts_of("bad/not_utf8.py")
    assert list(facts) == ["errors"] and "utf-8" in facts["errors"][0]


def test_coding_cookie_is_honoured():
    facts = facts_of("bad/latin1_cookie.py")
    assert [f.name for f in facts["PyFunction"]] == ["f"]


def test_nul_bytes_and_huge_files_give_errors(monkeypatch):
    assert list(extract_python("torch/a.py", b"x = 1\x00\n")) == ["errors"]
    monkeypatch.setattr(pyast, "MAX_BYTES", 10)
    facts = extract_python("torch/a.py", b"x = 1\n" * 10)
    assert facts == {"errors": ["torch/a.py: file too large: 60 bytes"]}


def test_empty_file_has_empty_rows():
    facts = extract_python("torch/empty.py", b"")
    assert facts and all(rows == [] for rows in facts.values())


def test_given_tree_is_used_and_left_untouched():
    data = (FIX / "torch/_inductor/lowering.py").read_bytes()
    tree = ast.parse(data)
    before = ast.dump(tree)
    assert extract_python("torch/_inductor/lowering.py", data, tree) == facts_of("torch/_inductor/lowering.py")
    assert ast.dump(tree) == before


_FIXTURE_TEXT = (FIX / "torch/_inductor/lowering.py").read_text() + (FIX / "torch/nn/modules/linear.py").read_text()


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.one_of(
    st.binary(max_size=300),
    st.integers(0, len(_FIXTURE_TEXT)).map(lambda n: _FIXTURE_TEXT[:n].encode()),
    st.text(alphabet="()[]{}:=.,@ \n\tdefclassimportfromaten_x0'\"", max_size=200).map(str.encode),
))
def test_extractors_never_raise(data):
    for rel in ("torch/_inductor/lowering.py", "torch/_refs/__init__.py", "torch/testing/_internal/common_utils.py"):
        facts = extract_python(rel, data)
        assert isinstance(facts, dict)
        if "errors" not in facts:
            assert_well_formed(facts)
        assert isinstance(extract_tests(rel, data), dict)


# ---------------------------------------------------------------- the real tree (2.6.0)

REAL = real_source()
needs_real = pytest.mark.skipif(REAL is None, reason="set TORCHTALK_TEST_SOURCE to a PyTorch 2.6.0 tree")


def real(rel: str) -> dict:
    facts = extract_python(rel, (REAL / rel).read_bytes())
    assert "errors" not in facts
    return facts


@pytest.mark.integration
@needs_real
def test_real_linear_conv2d():
    lin = real("torch/nn/modules/linear.py")
    cls = {c.name: c for c in lin["PyClass"]}
    assert cls["Linear"].line == 50 and json.loads(cls["Linear"].bases) == ["Module"]
    assert func(lin, "Linear.forward").line == 124
    assert calls_of(lin, "Linear.forward") == ["F.linear"]
    assert ("F", "torch.nn.functional") in {(i.alias, i.target) for i in lin["PyImport"]}
    assert ("Module", "torch.nn.modules.module.Module") in {(i.alias, i.target) for i in lin["PyImport"]}

    conv = real("torch/nn/modules/conv.py")
    cls = {c.name: c for c in conv["PyClass"]}
    assert cls["Conv2d"].line == 378 and json.loads(cls["Conv2d"].bases) == ["_ConvNd"]
    assert cls["Conv2d"].doc.startswith("Applies a 2D convolution")  # from __doc__ = r"""...""" + ...
    assert func(conv, "Conv2d.forward").line == 553
    assert calls_of(conv, "Conv2d.forward") == ["self._conv_forward"]
    assert func(conv, "Conv2d._conv_forward").line == 536
    assert "F.conv2d" in calls_of(conv, "Conv2d._conv_forward")


@pytest.mark.integration
@needs_real
def test_real_sgd():
    sgd = real("torch/optim/sgd.py")
    assert {c.name: c.line for c in sgd["PyClass"]}["SGD"] == 26
    step = func(sgd, "SGD.step")
    assert step.line == 104 and step.kind == "method"
    assert "sgd" in calls_of(sgd, "SGD.step")
    assert {"_single_tensor_sgd", "_multi_tensor_sgd"} <= set(calls_of(sgd, "sgd"))


@pytest.mark.integration
@needs_real
def test_real_functional_assignments():
    fn = real("torch/nn/functional.py")
    assigns = {a.name: a for a in fn["PyAssign"]}
    assert (assigns["linear"].value, assigns["linear"].line) == ("torch._C._nn.linear", 2309)
    assert assigns["conv2d"].value == "torch.conv2d"
    assert assigns["relu_"].value == "torch.relu_"


@pytest.mark.integration
@needs_real
def test_real_op_registrations():
    decomp = oprefs(real("torch/_decomp/decompositions.py"))
    assert ("decomposition", "aten.tanh_backward", "tanh_backward") in decomp
    assert ("decomposition", "aten.split_with_sizes_copy.out", "split_with_sizes_copy") in decomp
    assert ("python_impl", "aten.upsample_bilinear2d.vec", "_upsample_linear_vec") in decomp
    low = oprefs(real("torch/_inductor/lowering.py"))
    assert ("fallback", "aten.topk", "") in low
    assert ("lowering", "aten.clamp_min", "") in low  # register_lowering(aten.clamp_min)(maximum), an assignment
    assert ("lowering", "aten.lift_fresh", "nop") in low  # register_lowering(aten.lift_fresh)(nop), a def
    assert ("lowering", "prims.view_of", "nop") in low
    assert sum(k == "lowering" for k, _, _ in low) > 250
    meta = oprefs(real("torch/_meta_registrations.py"))
    assert ("meta", "aten.cummax.default", "cummaxmin") in meta and len(meta) > 250
    refs = oprefs(real("torch/_refs/__init__.py"))
    assert ("ref", "aten.abs", "abs") in refs and ("ref", "aten.abs_", "") in refs
    assert sum(k == "ref" for k, _, _ in refs) > 200
    assert ("ref", "aten.special_zeta", "zeta") in oprefs(real("torch/_refs/special/__init__.py"))
    assert ("ref", "aten.linalg_vector_norm", "vector_norm") in oprefs(real("torch/_refs/linalg/__init__.py"))
