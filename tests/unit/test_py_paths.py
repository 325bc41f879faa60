"""The Python walk to the ops (query/pywalk.py, Note [Walk to the ops]) and the paths the code chooses between
(Note [Branch arms]), on the fixture tree plus tests/fixtures/tree_paths: an optimizer in PyTorch's layout whose
functional ``adamw()`` binds ``func`` in an if/elif/else chain and calls it, a single-tensor path three helper
calls deep, and a module whose forward branches on ``self.training``."""

import re

import pytest

from torchtalk.extract.pymodules import extract_python
from torchtalk.model import CutKind, PyCall, PyFunction, PyReceiver
from torchtalk.query import pywalk
from torchtalk.tools import get_tool, run

from ..conftest import FIXTURE_TREE, overlaid_index

FIXTURES = FIXTURE_TREE.parent


@pytest.fixture(scope="module")
def paths_indexed(tmp_path_factory):
    ix = overlaid_index(tmp_path_factory.mktemp("paths") / "pytorch", ("tree_py", "tree_paths"), "tree_paths_ops.yaml")
    yield ix
    ix.close()


def call(ix, tool, **kw):
    return run(get_tool(tool), ix, **kw)


def test_calls_record_their_arm_and_the_assignment_that_chose_an_alias():
    src = (FIXTURES / "tree_paths/torch/optim/adamw.py").read_bytes()
    calls = {(c.callee, c.line): c for c in extract_python("torch/optim/adamw.py", src)[PyCall]}
    fused = calls[("_fused_adamw", 35)]  # func(params, lr=lr) at :35, func = _fused_adamw at :30
    assert (fused.branch, fused.branch_line, fused.chosen) == ("if fused and (not torch.jit.is_scripting())", 29, 30)
    assert (calls[("_multi_tensor_adamw", 35)].branch, calls[("_multi_tensor_adamw", 35)].chosen) == \
        ("elif foreach and (not torch.jit.is_scripting())", 32)
    assert (calls[("_single_tensor_adamw", 35)].branch, calls[("_single_tensor_adamw", 35)].branch_line) == ("else", 29)
    # a call in the test of an if runs on every path
    assert calls[("torch.jit.is_scripting", 29)].branch == ""
    assert calls[("torch._foreach_addcdiv_", 58)].branch == "if lr"
    # a name bound once to a call keeps the call's function (Note [Builtin receivers])
    assert calls[("grouped_tensors.values", 54)].recv_call == "Optimizer._group_tensors_by_device_and_dtype"
    opt = (FIXTURE_TREE.parent / "tree_py/torch/optim/optimizer.py").read_bytes()
    returns = {f.name: f.returns for f in extract_python("torch/optim/optimizer.py", opt)[PyFunction]}
    assert returns["_group_tensors_by_device_and_dtype"] is PyReceiver.DICT  # Union[Dict[...], Dict[...]]
    assert returns["step"] is PyReceiver.UNKNOWN


def test_trace_module_reaches_the_ops_of_each_path_with_the_line_that_chooses_it(paths_indexed):
    res, text = call(paths_indexed, "trace_module", module_name="AdamW")
    assert {o.split(".")[0] for o in res.ops} == {"is_complex", "_fused_adamw_", "_foreach_lerp_", "_foreach_addcdiv_",
                                                   "rsqrt"}
    (choice,) = res.choices
    assert choice.where.key == "torch.optim.adamw.adamw" and choice.head.line == 29
    arms = {a.arm: a for a in choice.arms}
    assert [a.arm for a in choice.arms] == ["if fused and (not torch.jit.is_scripting())",
                                            "elif foreach and (not torch.jit.is_scripting())", "else"]
    assert arms["if fused and (not torch.jit.is_scripting())"].ops == ["_fused_adamw_"]
    assert arms["else"].ops == ["rsqrt"]  # three helper calls below the choice: no depth stops the walk
    assert [o.split(".")[0] for o in arms["elif foreach and (not torch.jit.is_scripting())"].ops] == \
        ["_foreach_lerp_", "_foreach_addcdiv_"]
    assert [a.chosen.line for a in choice.arms] == [30, 32, 34]
    assert res.common == ["is_complex"]  # step -> _init_group, whatever the path
    assert "Paths: torch.optim.adamw.adamw chooses at torch/optim/adamw.py:29 (3 arms)" in text
    assert ("- if fused and (not torch.jit.is_scripting()): _fused_adamw (chosen at torch/optim/adamw.py:30, "
            "called at torch/optim/adamw.py:35): 1 ops: _fused_adamw_") in text
    assert "Outside any if (on every path): is_complex" in text
    assert not res.cuts and "Cut:" not in text


def test_a_forward_that_branches_on_training_has_a_path_each(paths_indexed):
    res, text = call(paths_indexed, "trace_module", module_name="Noise")
    choice, relu = res.choices
    assert [(a.arm, a.ops) for a in choice.arms] == [("if self.training", ["relu_", "relu"]), ("else", ["rsqrt"])]
    assert choice.arms[0].chosen.line == 16  # a direct call chooses at its own line
    # F.relu's `if inplace: return torch.relu_(input)`, then `return torch.relu(input)`: the rest past the return is
    # the if's other arm (Note [Branch arms])
    assert [(a.arm, a.ops) for a in relu.arms] == [("if inplace", ["relu_"]), ("past the return at line 17", ["relu"])]
    assert "unsqueeze" in res.ops and res.common == []  # unsqueeze is called under `if input.dim() == 0` only
    assert "Outside any if: no op" in text


def test_a_guard_returning_one_op_chooses_between_ops_and_an_if_of_one_arm_does_not(paths_indexed):
    # F.relu: `if inplace: return torch.relu_(input)`, then `return torch.relu(input)`: two paths, reaching different
    # ops (Note [Choices that change the ops]); before, the call past the return was taken for one on every path
    res, text = call(paths_indexed, "trace", function_name="F.relu", focus="yaml")
    assert res.entry is not None and [[a.ops for a in c.arms] for c in res.entry.choices] == [[["relu_"], ["relu"]]]
    assert "- torch.relu at torch/nn/functional.py:19 [past the return at line 17] -> relu" in text, text
    res, _ = call(paths_indexed, "trace_module", module_name="AdamW")
    assert all(c.where.key != "torch.optim.adamw._multi_tensor_adamw" for c in res.choices)  # `if lr:` ops only


def test_the_budget_is_named_when_it_cuts(paths_indexed, monkeypatch):
    monkeypatch.setattr(pywalk, "BUDGET", 4)
    res, text = call(paths_indexed, "trace_module", module_name="AdamW")
    assert [c.kind for c in res.cuts] == [CutKind.NODES]
    assert res.cuts[0].shows.startswith('trace("torch.') and "Cut: " in text and res.cuts[0].shows in text


def test_a_forward_calls_the_submodules_its_init_made(paths_indexed):
    """Note [Submodules]: ``self.proj(x)`` runs the forward of what ``self.proj = Linear(...)`` made, an object that
    is not a module its ``__call__``; a submodule's own ``self.`` calls are resolved in its own class; an attribute
    made by a function claims nothing; and the callers of ``Linear.forward`` include the owner's calls."""
    from torchtalk.graph import graph
    from torchtalk.graph.nodes import py_node
    from torchtalk.model import EdgeHow, EdgeKind, NodeKind, PyAttr

    src = (FIXTURES / "tree_paths/torch/nn/modules/block.py").read_bytes()
    attrs = {(a.attr, a.value, a.line) for a in extract_python("torch/nn/modules/block.py", src)[PyAttr]}
    assert {("proj", "Linear", 26), ("head", "Linear", 31), ("head", "LazyLinear", 33),
            ("helper", "make_helper", 34)} <= attrs

    res, text = call(paths_indexed, "trace_module", module_name="torch.nn.modules.block.Block")
    roots = {n.written: n for n in res.entry.calls}
    assert roots["self.proj"].target == "torch.nn.modules.linear.Linear.forward"
    assert roots["self.act"].target == "torch.nn.modules.activation.ReLU.forward"
    assert roots["self.scale"].target == "torch.nn.modules.block.Scaler.__call__"
    block_fwd = py_node(NodeKind.PY_FUNCTION, "torch.nn.modules.block.Block.forward", None)
    edges = [(e.written, e.dst.key) for e in graph(paths_indexed).out(block_fwd, [EdgeKind.PY_CALL])]
    # Linear and LazyLinear both run Linear.forward: one edge (the walk shows a function once, at self.proj)
    assert [d for w, d in edges if w == "self.head"] == ["torch.nn.modules.linear.Linear.forward"]
    # a function's result claims no class: the call is named, with what made the attribute, and not followed
    assert (roots["self.helper"].target, roots["self.helper"].children) == ("self.helper", [])
    assert [(e.dst.kind, e.how) for e in graph(paths_indexed).out(block_fwd, [EdgeKind.PY_CALL])
            if e.written == "self.helper"] == [(NodeKind.UNRESOLVED, EdgeHow.ATTRIBUTE)]
    assert ("- self.helper  [at torch/nn/modules/block.py:39]  (made by make_helper(...) at "
            "torch/nn/modules/block.py:34, whose class the code does not show; not followed)") in text
    # Noise.forward's own self._eval_forward is Noise's method, though the walk started from Block's forward
    assert [c.target for c in roots["self.noise"].children if c.written == "self._eval_forward"] == \
        ["torch.nn.modules.noise.Noise._eval_forward"]
    assert {o.split(".")[0] for o in res.ops} >= {"linear", "relu", "rsqrt"}
    assert ("- self.proj -> torch.nn.modules.linear.Linear.forward  torch/nn/modules/linear.py:26  "
            "[at torch/nn/modules/block.py:37]  (Linear(...) at torch/nn/modules/block.py:26)") in text

    linear_fwd = py_node(NodeKind.PY_FUNCTION, "torch.nn.modules.linear.Linear.forward", None)
    callers = {(e.src.key, e.site.line, e.how) for e in graph(paths_indexed).into(linear_fwd, [EdgeKind.PY_CALL])}
    assert {("torch.nn.modules.block.Block.forward", 37, EdgeHow.ATTRIBUTE),
            ("torch.nn.modules.block.Block.forward", 40, EdgeHow.ATTRIBUTE)} <= callers


def test_an_attribute_holding_a_parameter_runs_its_default_or_is_named(paths_indexed):
    """Note [Submodules]: ``self.activation = activation`` with ``activation=F.relu``: ``self.activation(x)`` runs
    F.relu, said to be the default; ``self.wrapped = wrapped`` with no default is named as not followed."""
    from torchtalk.model import PyAttr

    src = (FIXTURES / "tree_paths/torch/nn/modules/holder.py").read_bytes()
    attrs = {(a.attr, a.value, a.line, a.param) for a in extract_python("torch/nn/modules/holder.py", src)[PyAttr]}
    assert attrs == {("activation", "torch.nn.functional.relu", 12, "activation"), ("wrapped", "", 13, "wrapped")}
    res, text = call(paths_indexed, "trace_module", module_name="torch.nn.modules.holder.Holder")
    roots = {n.written: n for n in res.entry.calls}
    assert roots["self.activation"].target == "torch.nn.functional.relu"
    assert {"relu", "relu_"} <= {o.split(".")[0] for o in res.ops}
    assert ("(the default of parameter activation=torch.nn.functional.relu, set at torch/nn/modules/holder.py:12; "
            "a caller may pass another)") in text
    assert ("- self.wrapped  [at torch/nn/modules/holder.py:16]  (holds parameter wrapped, set at "
            "torch/nn/modules/holder.py:13: whatever the caller passes; not followed)") in text


def test_a_method_of_what_the_module_holds(paths_indexed):
    """``self.seen.cumsum(0)``: no method makes seen (a buffer), so it is taken for a Tensor's, said so;
    ``self.proj.forward(x)``: the method of the Linear __init__ made. Both were dropped unnamed."""
    res, text = call(paths_indexed, "trace_module", module_name="torch.nn.modules.counter.Counter")
    roots = {n.written: n for n in res.entry.calls}
    assert roots["self.proj.forward"].target == "torch.nn.modules.linear.Linear.forward"
    assert "cumsum" in {o.split(".")[0] for o in res.ops}
    assert ("self.seen.cumsum -> ?" in text and "(receiver not typed; assumed a Tensor)" in
            next(ln for ln in text.splitlines() if "self.seen.cumsum" in ln))


def test_a_second_call_of_a_function_the_tree_expands_is_listed_beside_the_first(paths_indexed):
    """Note [Calls shown once]: the walk steps into Linear.forward once, at ``self.proj``; ``self.head(...)`` runs it
    too and is in the tree (and its text) as a call shown at another call, not dropped."""
    res, text = call(paths_indexed, "trace_module", module_name="torch.nn.modules.block.Block")
    head = [(n.target, n.site.line, n.shown_above, n.children) for n in res.entry.calls if n.written == "self.head"]
    assert head == [("torch.nn.modules.linear.Linear.forward", 40, True, [])]
    proj = [n for n in res.entry.calls if n.written == "self.proj"]
    assert [(n.shown_above, bool(n.children)) for n in proj] == [(False, True)]
    assert "- also calls, each shown at another call: self.head (line 40)" in text.splitlines()


def test_a_tree_cut_by_its_budget_keeps_the_shallow_calls(paths_indexed, monkeypatch):
    """The tree's line budget is spent level by level: a forward's own calls are shown before what they call."""
    from torchtalk.render import modules as render

    full, full_text = call(paths_indexed, "trace_module", module_name="torch.nn.modules.block.Block")
    top = [n.written for n in full.entry.calls if not n.shown_above]
    monkeypatch.setattr(render, "MAX_TREE_LINES", len(top) + 1)
    res, text = call(paths_indexed, "trace_module", module_name="torch.nn.modules.block.Block")
    lines = text.splitlines()
    calls = lines[lines.index("forward calls:") + 1:]
    assert [re.split(r" -> |  \[", ln)[0][2:] for ln in calls[:len(top)]] == top  # each at the top level
    assert calls[len(top)] == "- also calls, each shown at another call: self.head (line 40)"
    # the cut is named once, counting the whole tree's lines (before: a "- ... calls: showing" line in the tree and a
    # cut line counting only the lines kept, which disagreed)
    cut = [ln for ln in lines if ln.startswith("Cut: the calls of forward (the deepest left out first): showing ")]
    assert len(cut) == 1 and not any(ln.startswith("- ... calls") for ln in lines), text
    full_lines = full_text.splitlines()
    start = full_lines.index("forward calls:") + 1
    whole = full_lines[start:full_lines.index("", start)]  # the whole tree, uncut
    assert f"showing {len(top) + 1} of {len(whole)} lines" in cut[0], cut
