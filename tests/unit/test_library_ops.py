"""trace of an op another namespace defines with TORCH_LIBRARY (Note [Library ops] in query/library_ops.py), on the
fixture tree with tests/fixtures/tree_library over it: not in native_functions.yaml, so trace answers with its
schemas and kernels as the C++ registers them, and the call that follows a kernel; never another op's close match.
It is an answer (kind "result", exit 0), not a "not found" that lists the op after all."""

from __future__ import annotations

from contextlib import closing
from pathlib import Path

import pytest

from torchtalk.query.results import NotFound
from torchtalk.tools import get_tool, run

from ..conftest import line_of, overlay_index

OVERLAY = Path(__file__).parents[1] / "fixtures" / "tree_library"
LIB = "aten/src/ATen/native/quantized/library.cpp"
QCONV = "aten/src/ATen/native/quantized/cpu/qconv.cpp"


@pytest.fixture
def lib(tree):
    with closing(overlay_index(tree, OVERLAY, {})) as ix:
        yield tree, ix


def test_a_library_op_is_answered_with_its_schemas_and_kernels(lib):
    tree, ix = lib
    res, text = run(get_tool("trace"), ix, function_name="quantized::conv3d")
    assert res.library is not None and res.ops == [] and res.related == []  # no aten op is offered for it
    assert text.startswith("# trace quantized::conv3d: a TORCH_LIBRARY op of namespace quantized (defined in C++ "
                           "with m.def, not in native_functions.yaml)\n"), text
    assert "quantized::conv3d.new(Tensor qx, " in text and f"{LIB}:{line_of(tree, LIB, 'conv3d.new(')}" in text
    assert f"{LIB}:{line_of(tree, LIB, 'quantized::conv3d(')}" in text
    assert "conv3d_relu" not in text  # another op, though its name starts alike
    assert (f"- quantized::conv3d.new [QuantizedCPU]: QConvInt8<3, false>::run  registered "
            f"{QCONV}:{line_of(tree, QCONV, 'conv3d.new')}") in text
    assert 'next: calls("QConvInt8::run") · find_similar_tests("conv3d")' in text


@pytest.mark.parametrize("spelled", ["torch.ops.quantized.conv3d", "torch.ops.quantized.conv3d.new",
                                     "torch.ops.quantized.conv3d.default", "quantized::conv3d.new"])
def test_a_library_op_as_python_and_the_dispatcher_spell_it(lib, spelled):
    _tree, ix = lib
    res, text = run(get_tool("trace"), ix, function_name=spelled)
    assert res.library is not None and "a TORCH_LIBRARY op of namespace quantized" in text, text
    assert "quantized::conv3d.new [QuantizedCPU]: QConvInt8<3, false>::run" in text


def test_an_unknown_namespaced_name_is_not_found_with_close_matches(lib):
    _tree, ix = lib
    for name in ("quantized::no_such_op", "quantized::", "::conv3d", "torch.ops.quantized", "torch.ops.quantized."):
        res, text = run(get_tool("trace"), ix, function_name=name)
        assert isinstance(res, NotFound) and "TORCH_LIBRARY" not in text and "Ops are named as in" in text, name


def test_a_kernel_an_m_impl_registers_is_reached_from_its_python_name(lib):
    """called_by and impact of QConvInt8::run name torch.ops.quantized.conv3d and conv3d_relu, whose m.impl lines
    register it (before: no caller and no registration); no other function named run gets them."""
    tree, ix = lib
    res, text = run(get_tool("called_by"), ix, function_name="QConvInt8::run")
    (sec,) = res.sections
    assert sorted(e.src.key for e in sec.registrations) == ["torch.ops.quantized.conv3d",
                                                            "torch.ops.quantized.conv3d_relu"]
    line = line_of(tree, QCONV, "conv3d.new")
    assert ("- Python torch.ops.quantized.conv3d (m.impl of quantized::conv3d.new for QuantizedCPU)  "
            f"{QCONV}:{line}") in text
    res, text = run(get_tool("impact"), ix, function_name="QConvInt8::run")
    assert "torch.ops.quantized.conv3d  (via " in text


def test_python_calling_a_library_op_reaches_the_functions_its_m_impl_lines_register(tree):
    """torch.ops.quantized.conv3d(...) in Python (an ao module's forward) is a call of the op: the walk goes on to
    QConvInt8::run, which its m.impl registers (before: a dead end, the name and nothing further)."""
    fn = tree / "torch/ao/nn/quantized/functional.py"
    fn.parent.mkdir(parents=True, exist_ok=True)
    fn.write_text("import torch\n\n\ndef conv3d(input, packed, scale, zero_point):\n"
                  "    return torch.ops.quantized.conv3d(input, packed, scale, zero_point)\n")
    with closing(overlay_index(tree, OVERLAY, {})) as ix:
        _res, text = run(get_tool("trace"), ix, function_name="torch.ao.nn.quantized.functional.conv3d")
        assert "torch.ops.quantized.conv3d" in text and "QConvInt8::run" in text, text

