"""trace's Why lines (render/trace.py): each names the overloads or kernels it is about when that is not every one
of the answer."""

from __future__ import annotations

from torchtalk.tools import get_tool, run


def test_why_lines_name_the_overloads_they_are_about(indexed):
    # trace("max") of the fixture: max.dim_max alone is autogen (max.dim has the autogen: line); the Why line was
    # worded about "this op" for every overload (mul's answer: mul.Tensor read as generated)
    _tree, ix = indexed
    _res, text = run(get_tool("trace"), ix, function_name="max", focus="yaml")
    (why,) = [ln for ln in text.splitlines() if ln.startswith("Why: autogen")]
    assert why.startswith("Why: autogen (max.dim_max): torchgen generates"), why
    _res, text = run(get_tool("trace"), ix, function_name="max.dim_max", focus="yaml")
    assert "Why: autogen: torchgen generates" in text
