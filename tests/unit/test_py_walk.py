"""The Python walk's receivers and scope (query/pywalk.py, graph/py_calls.py), on the fixture tree with tree_py,
tree_library and tests/fixtures/tree_pywalk over it (its README says what each file is cut down from):

- Note [Python Tensor methods]: ``input.norm(...)`` runs torch.Tensor's Python ``norm``, not the YAML's norm op;
- a receiver that is a str (a str literal's or f-string's method, a string literal argument no overload takes) is
  no Tensor, for the walk down and for "Called from Python" alike;
- trace_module walks into the helpers of its own package and names what it does not walk into (CutKind.SCOPE), its
  paths count the TORCH_LIBRARY ops they reach, and ``from torch._ops import ops`` is torch.ops (Note [Objects a
  package exports]), each m.impl reaching the function it names."""


from pathlib import Path

import pytest

from torchtalk.graph.nodes import op_node
from torchtalk.graph.py_attrs import function_node
from torchtalk.graph.py_calls import py_call_edges
from torchtalk.graph.py_edges import bindings_into
from torchtalk.graph.pynames import pynames
from torchtalk.graph.registry import registry
from torchtalk.model import CutKind, NodeKind
from torchtalk.tools import get_tool, run

from ..conftest import overlaid_index


@pytest.fixture(scope="module")
def ix(tmp_path_factory):
    index = overlaid_index(tmp_path_factory.mktemp("pywalk") / "pytorch", ("tree_py", "tree_library", "tree_pywalk"),
                           "tree_pywalk_ops.yaml")
    yield index
    index.close()


def _edges(ix, fq):
    return py_call_edges(ix, function_node(pynames(ix).definition(fq)))


def test_a_method_torch_tensor_defines_in_python_runs_that_method(ix):
    (edge,) = [e for e in _edges(ix, "torch.nn.modules.walked.normalize") if e.written == "input.norm"]
    assert (edge.dst.kind, edge.dst.key) == (NodeKind.PY_FUNCTION, "torch._tensor.Tensor.norm")
    res, text = run(get_tool("trace"), ix, function_name="torch.nn.modules.walked.normalize", focus="yaml")
    reached = {e.dst.key for e in res.entry.calls if e.dst.kind is NodeKind.OP}
    assert "linalg_vector_norm" in reached and "norm.ScalarOpt_dim" not in reached  # Tensor.norm -> torch.norm -> ...
    callers = {e.src.key for e in bindings_into(ix, op_node(registry(ix).by_full["norm.ScalarOpt_dim"]))}
    assert "torch.nn.modules.walked.normalize" not in callers


def test_a_str_receiver_is_no_tensor(ix):
    for fq in ("_addindent", "_keys", "_header"):  # s_.split("\n"), key[...].split(".", 1), f"{x}".split(2)
        assert not [e for e in _edges(ix, f"torch.nn.modules.walked.{fq}") if e.dst.kind is NodeKind.OP], fq
    assert [e.dst.key for e in _edges(ix, "torch.nn.modules.walked.chunks")] == ["split.Tensor"]
    callers = {e.src.key for e in bindings_into(ix, op_node(registry(ix).by_full["split.Tensor"]))}
    assert "torch.nn.modules.walked.chunks" in callers
    assert not callers & {f"torch.nn.modules.walked.{f}" for f in ("_addindent", "_keys", "_header")}


def test_trace_module_walks_its_packages_helpers_and_names_the_rest(ix):
    res, text = run(get_tool("trace_module"), ix, module_name="torch.ao.nn.quantized.reference.RefLinear")
    assert {"rsqrt", "unsqueeze"} <= set(res.ops)  # through helpers of torch.ao, outside torch.nn
    (choice,) = res.choices
    assert [(a.arm, a.ops) for a in choice.arms] == [("if self.is_decomposed", ["unsqueeze"]), ("else", ["rsqrt"])]
    assert "no op reached" not in text
    assert not res.cuts


def test_a_function_the_walk_does_not_walk_into_is_a_named_cut(ix):
    from torchtalk.graph import graph
    from torchtalk.query.cuts import explore, named
    from torchtalk.query.pywalk import walk_to_ops

    start = function_node(pynames(ix).definition("torch.ao.nn.quantized.reference.RefLinear.forward"))
    walk = walk_to_ops(graph(ix), start, lambda s: s.node.kind is not NodeKind.PY_FUNCTION, lambda e: 0)
    (cut,) = named(walk.cuts, lambda c: explore(c.at))
    assert (cut.kind, cut.at.key, cut.left) == (CutKind.SCOPE, "torch.ao.nn.quantized.utils."
                                                "_quantize_and_dequantize_weight_decomposed", 2)
    assert cut.shows == 'trace("torch.ao.nn.quantized.utils._quantize_and_dequantize_weight_decomposed")'


def test_ops_imported_from_torch_ops_are_torch_ops_and_count_as_ops_reached(ix):
    res, text = run(get_tool("trace_module"), ix, module_name="torch.ao.nn.quantized.dynamic_conv.DynConv3d")
    assert list(res.library_ops) == ["quantized::conv3d_dynamic_fp16", "quantized::conv3d_dynamic"]
    (choice,) = res.choices
    assert [a.ops for a in choice.arms] == [["quantized::conv3d_dynamic_fp16"], ["quantized::conv3d_dynamic"]]
    assert "Native ops reached (2):" in text and "no op reached" not in text
    # each m.impl reaches the run it names, not the file's first run
    assert "C++ at::native::(anonymous)::QConvDynamicFp16::run" in text
    assert "C++ at::native::(anonymous)::QConvDynamicInt8::run" in text
    assert "also calls, each shown at another call:  (" not in text


def test_a_call_of_what_a_local_holds_is_named_or_followed_never_dropped(ix):
    """Note [Loop callables]: a loop variable over an attribute or over ``self`` (its class's ``__iter__``), a
    parameter and another local are named, with what the code shows of them, as not followed; a nested function is
    followed; a builtin is no step."""
    def named(fq):
        return {e.written: (e.dst.kind, e.dst.label, e.how.value, e.note) for e in _edges(ix, fq)}

    stacks = "torch/nn/modules/stacks.py"
    assert named("torch.nn.modules.stacks.Stack.forward") == {"mod": (
        NodeKind.UNRESOLVED, "mod", "local",
        f"each item of self.layers (self.layers = _get_clones(...) at {stacks}:13); not followed")}
    assert named("torch.nn.modules.stacks.Chain.forward")["module"] == (
        NodeKind.UNRESOLVED, "module", "local", f"each item self's __iter__ gives ({stacks}:23); not followed")
    outer = named("torch.nn.modules.stacks.apply")
    assert outer["twice"][:2] == (NodeKind.PY_FUNCTION, "torch.nn.modules.stacks.apply.<locals>.twice")
    assert outer["scale"][2:] == ("local", "parameter scale of apply: whatever the caller passes; not followed")
    assert "len" not in outer
    assert named("torch.nn.modules.stacks.apply.<locals>.twice")["fn"][3] == (
        "parameter fn of apply: whatever the caller passes; not followed")  # of the function around it
    assert named("torch.nn.modules.stacks.run")["step"][3] == "a local of run, bound when it runs; not followed"
    assert "_pair" not in named("torch.nn.modules.stacks.pairs")  # a name of the module (made by a call): no local
    res, text = run(get_tool("trace_module"), ix, module_name="torch.nn.modules.stacks.Stack")
    assert f"- mod  [at {stacks}:18]  (each item of self.layers" in text
    assert "makes no call" not in text


def test_calls_of_one_spelling_that_hold_different_things_are_each_named(ix):
    """Two forwards' ``mod(...)`` (TransformerEncoder's and TransformerDecoder's under nn.Transformer) are two calls of
    different things: each is named at its own site, neither said to be 'shown at another call'."""
    res, text = run(get_tool("trace_module"), ix, module_name="torch.nn.modules.stacks.EncoderDecoder")
    stacks = "torch/nn/modules/stacks.py"
    assert f"- mod  [at {stacks}:18]  (each item of self.layers" in text, text
    assert f"- mod  [at {stacks}:51]  (each item of self.blocks" in text, text
    assert "shown at another call" not in text, text


def test_every_call_of_a_forward_is_in_its_tree(ix):
    """Note [Calls shown once]: a call repeated in another arm of a choice is that arm's call too (both arms of
    TransformerDecoderLayer's norm_first call the same blocks), and a call of an op the walk reached at another call
    is listed as such, never left out of its function's calls."""
    res, text = run(get_tool("trace_module"), ix, module_name="torch.nn.modules.stacks.NormFirst")
    sites = {(n.written, n.site.line) for n in res.entry.calls}
    assert {("self._block", 85), ("self._block", 87)} <= sites, text
    # a choice none of whose arms reaches an op is one line, not a block per arm (the structured answer keeps it)
    assert [c.head.line for c in res.choices] == [84] and "\nPaths: " not in text, text
    assert ("Paths that reach no op on any arm (1): torch.nn.modules.stacks.NormFirst.forward at "
            "torch/nn/modules/stacks.py:84; the structured answer") in text, text
    res, text = run(get_tool("trace_module"), ix, module_name="torch.nn.modules.stacks.Splits")
    assert "- x.split -> ?" in text and "also calls, each shown at another call: x.split (line 101)" in text, text


def test_a_call_of_an_item_of_a_container_is_named(ix):
    """``self.tail[i](x)`` (AdaptiveLogSoftmaxWithLoss) and ``self[0](x)`` (ParametrizationList) call an item of what
    the attribute or the module holds: named as not followed, never dropped."""
    stacks = "torch/nn/modules/stacks.py"
    res, text = run(get_tool("trace_module"), ix, module_name="torch.nn.modules.stacks.Indexed")
    assert (f"- self.tail[]  [at {stacks}:113]  (an item of self.tail (self.tail = _get_clones(...) at {stacks}:107); "
            "not followed)") in text, text
    assert f"- self[]  [at {stacks}:114]  (an item self's __getitem__ gives ({stacks}:109); not followed)" in text, text


def test_an_attribute_set_by_a_call_or_to_a_parameter_names_both(ix):
    """TransformerDecoderLayer sets ``self.activation = _get_activation_fn(activation)`` for a string and
    ``self.activation = activation`` else: its call runs the parameter's default (F.relu) too, besides the call's."""
    got = {(e.dst.kind, e.dst.label) for e in _edges(ix, "torch.nn.modules.stacks.Activated.forward")
           if e.written == "self.activation"}
    assert got == {(NodeKind.UNRESOLVED, "self.activation"), (NodeKind.PY_FUNCTION, "torch.nn.functional.relu")}


def test_apply_of_an_autograd_function_runs_its_forward(ix):
    """``sync_batch_norm.apply(...)`` in nn.SyncBatchNorm (a torch.autograd.Function): its forward, said so."""
    (edge,) = [e for e in _edges(ix, "torch.nn.modules.stacks.Synced.forward") if e.written == "_Sync.apply"]
    assert (edge.dst.key, edge.how.value) == ("torch.nn.modules.stacks._Sync.forward", "function_apply")
    assert edge.note == "torch.autograd.Function.apply runs forward (torch/autograd/function.py:7)"
    res, text = run(get_tool("trace_module"), ix, module_name="torch.nn.modules.stacks.Synced")
    assert "split.Tensor" in res.ops, text


def test_a_receiver_annotated_a_tensor_is_said_to_be_one(ix):
    """``input.norm(...)`` with ``input: Tensor`` in the signature: the annotation shows the receiver is a Tensor
    (before: "receiver not typed; assumed a Tensor")."""
    (edge,) = [e for e in _edges(ix, "torch.nn.modules.walked.normalize") if e.written == "input.norm"]
    assert edge.note == "a Tensor: parameter input: Tensor"
    assert [e.note for e in _edges(ix, "torch.nn.modules.walked.chunks")] == ["receiver not typed; assumed a Tensor"]


def test_a_choice_is_where_the_arms_reach_different_ops(ix):
    """Note [Choices that change the ops] (query/pywalk.py): arms that call ops only are a choice too (Adam's
    `if maximize:` _foreach_add_ or _foreach_add was left out), and arms reaching the same ops are none (Adam's line
    579, GRU's two calls of permute_hidden were listed)."""
    stacks = "torch/nn/modules/stacks.py"
    res, text = run(get_tool("trace_module"), ix, module_name="torch.nn.modules.stacks.Chooser")
    lines = (Path(__file__).parents[1] / "fixtures/tree_pywalk" / stacks).read_text().splitlines()
    training = next(i for i, ln in enumerate(lines, 1) if "if self.training:" in ln)
    assert [c.head.line for c in res.choices] == [training], text
    assert [arm.ops for arm in res.choices[0].arms] == [["cumsum"], ["atan2"]], text
    # a call not followed is named as written (it read "py:NNN": its key's last dot is the file's)
    assert "- if self.training: self.hook.prepare_for_backward, op cumsum (chosen at " in text, text


def test_a_method_called_through_self_is_the_class_of_the_instance(ix):
    """Note [Whose self] (graph/py_calls.py): ``_BatchNorm.forward``'s ``self._check_input_dim`` is the override of the
    class ``self`` is an instance of: the traced class, or the class ``__init__`` made a submodule of (qat LinearBn1d's
    ``self.bn = nn.BatchNorm1d(...)`` reached the abstract ``_NormBase._check_input_dim``), never the class around it
    that happens to derive from the same base."""
    def ops(cls):
        res, text = run(get_tool("trace_module"), ix, module_name=f"torch.nn.modules.selves.{cls}")
        return list(res.ops), text
    assert ops("Norm2")[0] == ["atan2"]
    got, text = ops("Holder")  # a Norm1 submodule: Norm1._check, not _Base._check (which raises)
    assert got == ["cumsum"] and "-> torch.nn.modules.selves.Norm1._check " in text, text
    got, text = ops("Wrapped")  # a Norm1 holding a Norm2: the inner forward's self is the Norm2
    assert got == ["atan2"] and "-> torch.nn.modules.selves.Norm2._check " in text, text


def test_the_ops_on_every_path_are_those_no_path_misses(ix):
    """Note [Ops on every path] (query/pywalk.py): a call past an ``if`` that returns runs only when it did not
    (Conv2d's ``_conv_forward``), either side of ``a if c else b`` only on its side (dropout), and an op every arm
    of a choice reaches runs on every path (GRU's ``_VF.gru``); before, the first two were on every path and the
    third on none."""
    def traced(cls):
        res, text = run(get_tool("trace_module"), ix, module_name=f"torch.nn.modules.every.{cls}")
        return res, text
    res, text = traced("Guarded")
    assert res.common == [] and "Outside any if: no op" in text, text
    assert [[(a.arm, a.ops) for a in c.arms] for c in res.choices] == [
        [("if self.flag", ["cumsum"]), ("past the return at line 20", ["atan2"])]], text
    res, text = traced("Ternary")
    assert res.common == [] and [[(a.arm, a.ops) for a in c.arms] for c in res.choices] == [
        [("if self.flag", ["cumsum"]), ("else", ["atan2"])]], text
    # cumsum in every arm of the chain; cumprod in two of three and under an if of one arm; relu past a hand-over to
    # __torch_function__ (Note [Hand-overs are no path] in graph/py_calls.py)
    res, text = traced("BothArms")
    assert sorted(res.common) == ["cumsum", "relu"], text
    assert "Outside any if (on every path): cumsum, relu" in text, text
    res, text = traced("OneArm")  # an if/elif with no else, then an arm that returns making no call: nothing for sure
    assert res.common == [] and {"cumsum", "relu"} <= set(res.ops), text
    # a choice in an arm of another may not run (cumsum); one past a hand-over runs on every path (relu, either way)
    res, text = traced("Nested")
    assert res.common == ["atan2", "relu"], text


def test_calls_record_the_arm_of_a_ternary_and_past_a_return_with_the_arms_of_their_choice():
    """Note [Branch arms]: two calls on one line in the two sides of ``a if c else b`` are told apart by column; a call
    past an if that returns is in that if's other arm; ``branch_arms`` counts the way past a chain with no else."""
    from torchtalk.extract.pymodules import extract_python
    from torchtalk.model import PyCall
    rel = "torch/nn/modules/every.py"
    src = (Path(__file__).parents[1] / "fixtures/tree_pywalk" / rel).read_bytes()
    got = {(c.callee, c.line): (c.branch, c.branch_line, c.branch_arms) for c in extract_python(rel, src)[PyCall]}
    assert got[("x.cumsum", 26)] == ("if self.flag", 26, 2) and got[("x.atan2", 26)] == ("else", 26, 2)
    assert got[("x.atan2", 21)] == ("past the return at line 20", 19, 2)
    assert got[("handle_torch_function", 7)] == ("if has_torch_function_unary(x)", 6, 2)
    assert got[("x.relu", 8)] == ("past the return at line 7", 6, 2)
    assert got[("x.cumsum", 32)] == ("if self.flag", 31, 3)  # if, elif, else
    assert got[("y.cumprod", 38)] == ("if self.other", 37, 2)  # and the way past it
    assert got[("x.cumsum", 47)] == ("elif self.other", 44, 3)  # if, elif, and the way past both
    assert got[("has_torch_function_unary", 6)][0] == ""  # the test of an if runs on every path



EVERY = Path(__file__).parents[1] / "fixtures/tree_pywalk/torch/nn/modules/every.py"


def _line(text: str, after: str = "") -> int:
    """The line of every.py holding ``text`` (stripped), the first past the line holding ``after``."""
    lines = [ln.strip() for ln in EVERY.read_text().splitlines()]
    start = lines.index(after) if after else 0
    return lines.index(text, start) + 1


def test_an_arm_reaches_the_ops_of_the_choices_nested_in_it():
    """Note [Branch arms]: a call records the arms around its own choice (``branch_within``), outermost first: GRUCell's
    ``else: hx = hx.unsqueeze(0) if not is_batched else hx`` is in the else of ``if hx is None``."""
    from torchtalk.extract.pymodules import extract_python
    from torchtalk.model import PyCall
    calls = {(c.callee, c.line): c for c in extract_python("torch/nn/modules/every.py", EVERY.read_bytes())[PyCall]}
    atan2 = calls[("hx.atan2", _line("hx = hx.atan2(x) if self.flag else hx"))]
    assert (atan2.branch, atan2.branch_within) == ("if self.flag", ((_line("if hx is None:"), "else", 2, False),))
    # past a hand-over nested in an arm: in the arm around it too
    handed = _line("if self.flag:", "class HandedInArm(Module):")
    cumsum = calls[("x.cumsum", _line("return x.cumsum(0)", "class HandedInArm(Module):"))]
    assert (cumsum.branch_line, cumsum.branch_past, cumsum.branch_within) == (
        handed + 1, True, ((handed, "if self.flag", 2, False),))


def test_a_choice_holds_the_calls_of_the_choices_nested_in_its_arms(ix):
    """GRUCell, LSTMCell and RNNCell lost their Paths: ``if hx is None`` chose zeros in its if arm and unsqueeze in a
    conditional expression of its else arm, which held the call alone, so the if's else made no call and the choice
    was one of an arm. A call in a choice nested in an arm is a call of that arm too (``Branch.within``)."""
    res, text = run(get_tool("trace_module"), ix, module_name="torch.nn.modules.every.Cell")
    assert [[(a.arm, a.ops) for a in c.arms] for c in res.choices] == [
        [("if hx is None", ["cumsum"]), ("else", ["atan2"])]], text
    chosen = f"chosen at torch/nn/modules/every.py:{_line('hx = hx.atan2(x) if self.flag else hx')}"
    assert res.common == ["relu"] and f"- else: op atan2 ({chosen})" in text, text
    assert "- if hx is None: op cumsum (chosen at " in text, text  # two calls of cumsum, named once
    # a hand-over nested in an arm is no path of its own choice, and the call past it stays in the arm around it:
    # before, cumsum was on every path, and the outer arm, whose own calls are plumbing, no path either
    res, text = run(get_tool("trace_module"), ix, module_name="torch.nn.modules.every.HandedInArm")
    returned = _line("return handle_torch_function(self.forward, (x,), x)")
    assert [[(a.arm, a.ops) for a in c.arms] for c in res.choices] == [
        [("if self.flag", ["cumsum"]), (f"past the return at line {returned}", ["atan2"])]], text
    assert res.common == [], text
    # Note [Arms hold their nested choices]: the rest past a return holds the next choices, not nested alternatives,
    # so a row of `if c: return ...` is not one choice per if, each arm listing all that follows
    res, text = run(get_tool("trace_module"), ix, module_name="torch.nn.modules.every.Cascade")
    returned = _line("return x.atan2(x)", "class Cascade(Module):")
    assert [[(a.arm, a.ops) for a in c.arms] for c in res.choices] == [
        [("if self.other", ["atan2"]), (f"past the return at line {returned}", ["relu"])]], text


def test_an_except_handler_is_an_arm_and_finally_runs_on_every_path(ix):
    """Note [Branch arms]: a try's body and ``finally`` run on every path, each ``except`` is an alternative arm, and
    the try's ``else`` the way none is taken; before, a handler's calls were on every path."""
    res, text = run(get_tool("trace_module"), ix, module_name="torch.nn.modules.every.Caught")
    assert sorted(res.common) == ["cumsum", "relu"] and "atan2" in res.ops, text
    res, text = run(get_tool("trace_module"), ix, module_name="torch.nn.modules.every.CaughtElse")
    assert [[(a.arm, a.ops) for a in c.arms] for c in res.choices] == [
        [("except (RuntimeError, ValueError)", ["cumsum"]), ("except", ["cumsum"]), ("else", ["atan2"])]], text
    assert sorted(res.common) == ["cumsum", "relu"], text


def test_every_kind_of_arm_is_read_and_decides_as_an_enum():
    """What kind of arm a span is decides its text and how its choice counts paths: an ``ArmKind`` (model/), never a
    string compared (it was "ternary-else", "past 20"). every.py holds each kind."""
    import ast

    from torchtalk.extract.pyarms import CHOICES, BranchArms
    from torchtalk.model import ArmKind
    tree = ast.parse(EVERY.read_bytes())
    kinds: set[ArmKind] = set()
    for fn in ast.walk(tree):
        if isinstance(fn, ast.FunctionDef):
            arms = BranchArms(fn.body)
            for n in ast.walk(fn):
                if n.__class__ in CHOICES:
                    arms.add(n)
            assert all(isinstance(s.kind, ArmKind) for s in arms.spans)
            kinds |= {s.kind for s in arms.spans}
    assert kinds == set(ArmKind)
