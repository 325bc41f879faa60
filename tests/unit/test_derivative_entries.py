"""Which derivatives.yaml entry an op's autograd kernel uses (Note [The entry an op uses] in graph/op_derivatives.py,
Note [Signatures] in model/schema.py): its own, or the one torchgen's match_differentiability_info gives it.

Checked over whole trees against torchgen itself (its load_derivatives and match_differentiability_info run on the
tree): every non-out op of 2.6.0 (2,019) and 1.13.1 (1,860) gets the entry torchgen gives it; README "Autograd
entries". Here, each rule on a small tree in PyTorch's layout.
"""

from __future__ import annotations

import pytest

from torchtalk.graph import graph
from torchtalk.graph.nodes import op_node
from torchtalk.graph.op_derivatives import derivative_entry
from torchtalk.graph.registry import registry
from torchtalk.index.indexer import refresh
from torchtalk.model import DerivativeMatch, EdgeKind, FunctionSchema
from torchtalk.query.trace import trace
from torchtalk.render.trace import render_trace
from torchtalk.source.tree import find_source
from torchtalk.store.reader import Index


def _sig(func: str):
    return FunctionSchema.parse(func).signature()


@pytest.mark.parametrize(("a", "b"), [
    ("relu_(Tensor(a!) self) -> Tensor(a!)", "relu(Tensor self) -> Tensor"),
    ("add_.Tensor(Tensor(a!) self, Tensor other, *, Scalar alpha=1) -> Tensor(a!)",
     "add.Tensor(Tensor self, Tensor other, *, Scalar alpha=1) -> Tensor"),
    ("__iand__.Tensor(Tensor(a!) self, Tensor other) -> Tensor(a!)",
     "__and__.Tensor(Tensor self, Tensor other) -> Tensor"),
    # out= arguments go; a written argument not returned becomes a return
    ("mul.out(Tensor self, Tensor other, *, Tensor(a!) out) -> Tensor(a!)",
     "mul.Tensor(Tensor self, Tensor other) -> Tensor"),
    ("_bn(Tensor input, Tensor(a!) running_mean, float eps) -> (Tensor, Tensor)",
     "_bn_functional(Tensor input, Tensor running_mean, float eps) -> (Tensor, Tensor, Tensor running_mean_out)"),
    # the TensorOptions group goes (an out= factory pairs with its functional one)
    ("arange.out(Scalar end, *, Tensor(a!) out) -> Tensor(a!)",
     "arange(Scalar end, *, ScalarType? dtype=None, Layout? layout=None, Device? device=None, bool? pin_memory=None)"
     " -> Tensor"),
])
def test_variants_of_one_function_have_one_signature(a, b):
    assert _sig(a) == _sig(b)


@pytest.mark.parametrize(("a", "b"), [
    ("add.Scalar(Tensor self, Scalar other, Scalar alpha=1) -> Tensor",
     "add.Tensor(Tensor self, Tensor other, *, Scalar alpha=1) -> Tensor"),  # another type, and kwarg-only
    ("__iand__.Tensor(Tensor(a!) self, Tensor other) -> Tensor(a!)", "and.Tensor(Tensor self, Tensor other) -> Tensor"),
    ("bernoulli_.float(Tensor(a!) self, float p=0.5, *, Generator? generator=None) -> Tensor(a!)",
     "bernoulli.p(Tensor self, float p, *, Generator? generator=None) -> Tensor"),  # torchgen's Note [bernoulli.p]
    ("foo(Tensor self, int x) -> Tensor", "foo(Tensor self, int y) -> Tensor"),  # names count
])
def test_other_functions_have_other_signatures(a, b):
    assert _sig(a) != _sig(b)


_OPS = """
- func: twice(Tensor self) -> Tensor
  dispatch:
    CPU: twice_cpu

- func: twice_(Tensor(a!) self) -> Tensor(a!)
  dispatch:
    CPU: twice_cpu_

- func: twice.out(Tensor self, *, Tensor(a!) out) -> Tensor(a!)
  dispatch:
    CPU: twice_out

- func: halve(Tensor self) -> Tensor
  dispatch:
    CPU: halve_cpu

- func: _track(Tensor input, Tensor(a!) running, float eps) -> (Tensor, Tensor)
  dispatch:
    CPU: track_cpu
  autogen: _track_functional

- func: _foreach_twice(Tensor[] self) -> Tensor[]
  dispatch:
    CPU: foreach_twice_slow

- func: _foreach_twice_(Tensor(a!)[] self) -> ()
  dispatch:
    CPU: foreach_twice_slow_

- func: _foreach_halve(Tensor[] self, int extra) -> Tensor[]
  dispatch:
    CPU: foreach_halve_slow
"""

_DERIVATIVES = """
- name: twice(Tensor self) -> Tensor
  self: halve(grad)

- name: halve(Tensor self) -> Tensor
  self: twice(grad)

- name: _track(Tensor input, Tensor(a!) running, float eps) -> (Tensor, Tensor)
  input: halve(grad)
"""

_TORCHGEN = '''
_foreach_with_inplace_ref = {"_foreach_zero_"}
_skip_argument_len_check = {%s}


def gen_foreach_derivativeinfo(foreach_function, functional_info_by_signature, non_functional_info_by_signature):
    pass
'''


def _index(tree, torchgen: str | None):
    nf = tree / "aten/src/ATen/native/native_functions.yaml"
    nf.write_text(nf.read_text() + _OPS)
    d = tree / "tools/autograd/derivatives.yaml"
    d.write_text(d.read_text() + _DERIVATIVES)
    if torchgen is not None:
        (tree / "torchgen/api").mkdir(parents=True)
        (tree / "torchgen/api/autograd.py").write_text(torchgen)
    st = find_source(tree)
    refresh(st, workers=1, codegen=False)
    return Index(st.index_path, st.root)


def _entries(ix) -> dict[str, tuple[str, DerivativeMatch] | None]:
    reg = registry(ix)
    return {name: derivative_entry(ix, reg.by_full[name]) for name in (
        "twice", "twice_", "twice.out", "halve", "_track", "_track_functional", "_foreach_twice", "_foreach_twice_",
        "_foreach_halve", "relu_", "add.out")}


def test_each_op_gets_the_entry_torchgen_gives_it(tree):
    ix = _index(tree, _TORCHGEN % "")
    assert _entries(ix) == {
        "twice": ("twice", DerivativeMatch.EXACT),
        "twice_": ("twice", DerivativeMatch.FUNCTIONAL),  # an in-place op: its functional op's
        "twice.out": None,  # out= kernels do not differentiate
        "halve": ("halve", DerivativeMatch.EXACT),
        "_track": ("_track", DerivativeMatch.EXACT),
        "_track_functional": ("_track", DerivativeMatch.MUTABLE),  # a generated functional variant: its mutable op's
        "_foreach_twice": ("twice", DerivativeMatch.FOREACH),
        "_foreach_twice_": ("twice", DerivativeMatch.FOREACH),
        "_foreach_halve": None,  # halve takes one argument, it two: not its reference
        "relu_": ("relu", DerivativeMatch.FUNCTIONAL),
        "add.out": None,
    }


def test_foreach_ops_follow_the_trees_own_torchgen(tree):
    """The foreach rule and its tables are read from the tree's torchgen/api/autograd.py: a tree whose torchgen
    has no such rule (1.13.1) differentiates no foreach op; one whose table lets an op take a longer reference
    gives it that reference."""
    without = _entries(_index(tree, None))
    assert without["_foreach_twice"] is None and without["_foreach_twice_"] is None
    assert without["twice_"] == ("twice", DerivativeMatch.FUNCTIONAL)


def test_a_table_of_the_trees_torchgen_lets_a_foreach_op_take_a_longer_reference(tree):
    ix = _index(tree, _TORCHGEN % '"_foreach_halve"')
    assert _entries(ix)["_foreach_halve"] == ("halve", DerivativeMatch.FOREACH)


def test_an_in_place_op_answers_with_its_functional_ops_formulas_and_its_backward_edges_come_back(tree):
    ix = _index(tree, _TORCHGEN % "")
    reg = registry(ix)
    text = render_trace(trace(ix, "twice_"))
    assert "Autograd: no derivatives.yaml entry" not in text
    assert ("twice(Tensor self) -> Tensor (the entry of twice: torchgen gives twice_ the formulas of the functional op "
            "of its signature)") in text
    assert "- self: halve(grad)" in text
    g = graph(ix)
    (out,) = g.out(op_node(reg.by_full["twice_"]), [EdgeKind.BACKWARD])
    assert out.dst.key == "halve"
    into = {e.src.key for e in g.into(op_node(reg.by_full["halve"]), [EdgeKind.BACKWARD])}
    assert {"twice", "twice_", "_foreach_twice", "_foreach_twice_"} <= into


# ------------------------------------------------------------------ ops without an entry (query/no_entry.py)

_VARIABLE_TYPE = '''
import os
def generate_code(gen_dir, native_functions_path=None, tags_path=None, install_dir=None, subset=None, **kw):
    d = os.path.join(str(gen_dir), "torch/csrc/autograd/generated")
    os.makedirs(d, exist_ok=True)
    if subset == "pybindings":
        return
    with open(os.path.join(d, "VariableType_0.cpp"), "w") as f:
        f.write("""namespace torch::autograd {
namespace VariableType {
namespace {
at::Tensor mm(c10::DispatchKeySet ks, const at::Tensor & self, const at::Tensor & mat2) {
  return at::redispatch::mm(ks, self, mat2);
}
at::Tensor & copy_(c10::DispatchKeySet ks, at::Tensor & self, const at::Tensor & src, bool non_blocking) {
  std::shared_ptr<NotImplemented> grad_fn;
  grad_fn = std::shared_ptr<NotImplemented>(new NotImplemented("copy_"), deleteNode);
  return at::redispatch::copy_(ks, self, src, non_blocking);
}
}
}
TORCH_LIBRARY_IMPL(aten, Autograd, m) {
  m.impl("mm", TORCH_FN(VariableType::mm));
  m.impl("copy_", TORCH_FN(VariableType::copy_));
  m.impl("bitwise_not", torch::autograd::autogradNotImplementedFallback());
}
}
""")
'''


def test_an_op_without_an_entry_answers_with_what_autograd_does_with_it(tree):
    """Only a CompositeImplicitAutograd kernel is differentiated through its calls; every other op's Autograd
    registration tells: torchgen's not-implemented fallback, a kernel that records no node, one that records a
    NotImplemented node, a hand-written one; and without the generated layer the answer says it cannot tell."""
    from torchtalk.model import NoEntry
    from torchtalk.query.no_entry import no_entry

    from .test_generated_layer import _add_generators

    (tree / "torch/csrc/autograd/manual_autograd.cpp").write_text(
        'TORCH_LIBRARY_IMPL(aten, Autograd, m) {\n  m.impl("index_select", TORCH_FN(VariableType::index_select));\n}\n')
    before = _index(tree, None)
    reg = registry(before)
    assert no_entry(before, reg.by_full["mm"]).kind is NoEntry.UNKNOWN  # no generated layer here
    assert "its Autograd kernel is in the generated layer, which is not indexed" in render_trace(trace(before, "mm"))

    _add_generators(tree, autograd=_VARIABLE_TYPE)
    st = find_source(tree)
    refresh(st, workers=1)
    ix = Index(st.index_path, st.root)
    reg = registry(ix)
    names = ("linear", "mm", "copy_", "bitwise_not", "index_select", "addmm")
    kinds = {name: no_entry(ix, reg.by_full[name]) for name in names}
    assert {name: w.kind for name, w in kinds.items()} == {
        "linear": NoEntry.COMPOSITE,
        "mm": NoEntry.NOT_DIFFERENTIABLE,  # a generated kernel that records no node
        "copy_": NoEntry.NOT_IMPLEMENTED,  # ... that records a NotImplemented node
        "bitwise_not": NoEntry.NOT_IMPLEMENTED,  # torchgen's autogradNotImplementedFallback
        "index_select": NoEntry.MANUAL,  # registered by hand, outside the generated layer
        "addmm": NoEntry.UNREGISTERED,
    }
    assert str(kinds["index_select"].at) == "torch/csrc/autograd/manual_autograd.cpp:2"
    text = render_trace(trace(ix, "bitwise_not"))
    assert ("Autograd: no derivatives.yaml entry; its Autograd kernel is "
            "torch::autograd::autogradNotImplementedFallback() (<generated>/torch/csrc/autograd/generated/"
            "VariableType_0.cpp:17): the forward runs, a backward through it raises that its derivative is not "
            "implemented") in text
    # Its CompositeExplicitAutograd kernel's note defers to that line: no derivatives.yaml entry is promised.
    note = next(line for line in text.splitlines() if line.startswith("- CompositeExplicitAutograd: one kernel"))
    assert "derivatives.yaml entry, or without one the autograd line above" in note
    assert text.index("Autograd: no derivatives.yaml entry") < text.index(note)
    assert "composite ops differentiate" in render_trace(trace(ix, "linear"))
    assert "Autograd: no derivatives.yaml entry" not in render_trace(trace(ix, "relu_"))  # relu's, given


def test_an_autograd_registration_decides_before_a_composite_kernel(tree):
    """silu_backward has a CompositeImplicitAutograd kernel and a structured_delegate whose CPU/CUDA kernels take
    precedence over it; gen_variable_type registers autogradNotImplementedFallback for its Autograd key, and that
    registration, not the composite kernel, is what autograd meets (here: linear given such a registration)."""
    from torchtalk.model import NoEntry
    from torchtalk.query.no_entry import no_entry

    from .test_generated_layer import _add_generators

    mm = '  m.impl("mm", TORCH_FN(VariableType::mm));'
    fallback = '  m.impl("linear", torch::autograd::autogradNotImplementedFallback());'
    _add_generators(tree, autograd=_VARIABLE_TYPE.replace(mm, mm + "\\n" + fallback))
    st = find_source(tree)
    refresh(st, workers=1)
    ix = Index(st.index_path, st.root)
    assert no_entry(ix, registry(ix).by_full["linear"]).kind is NoEntry.NOT_IMPLEMENTED
    assert "composite ops differentiate" not in render_trace(trace(ix, "linear"))


def test_an_entry_beside_a_composite_kernel_serves_only_the_backends_with_their_own(tree, tmp_path):
    """Note [An entry beside a CompositeImplicitAutograd kernel] (render/autograd.py): chunk's entry
    (not_implemented("chunk") by default) read as its backward on every backend; CPU and CUDA run its composite
    kernel, differentiated through split_with_sizes."""
    from contextlib import closing

    from torchtalk.tools import get_tool, run

    from ..conftest import overlay_index
    ops = ("\n- func: chunky(Tensor(a -> *) self, int chunks, int dim=0) -> Tensor(a)[]\n  variants: function\n"
           "  dispatch:\n    CompositeImplicitAutograd: chunky\n    NestedTensorCPU, NestedTensorCUDA: chunky_nested\n")
    derivs = "\n- name: chunky(Tensor(a -> *) self, int chunks, int dim=0) -> Tensor(a)[]\n  self: grad\n"
    (tmp_path / "overlay" / "aten").mkdir(parents=True)
    with closing(overlay_index(tree, tmp_path / "overlay", {"aten/src/ATen/native/native_functions.yaml": ops,
                                                            "tools/autograd/derivatives.yaml": derivs})) as ix:
        _res, text = run(get_tool("trace"), ix, function_name="chunky", focus="yaml")
        assert ("- serves only the backends with a kernel of their own (NestedTensorCPU, NestedTensorCUDA): for the "
                "others (CPU, CUDA, ... without one) the CompositeImplicitAutograd kernel runs") in text, text
        _res, text = run(get_tool("trace"), ix, function_name="cumsum", focus="yaml")
        assert "serves only the backends" not in text  # no composite kernel: its entry is every backend's
