from torchtalk.extract import native_yaml
from torchtalk.model import FormulaMode, Variant

from ..conftest import FIXTURE_TREE
from ..factnames import named


def extract_native_functions(path: str, data: bytes) -> dict:
    return named(native_yaml.extract_native_functions(path, data))


def extract_derivatives(path: str, data: bytes) -> dict:
    return named(native_yaml.extract_derivatives(path, data))


def extract_tags(path: str, data: bytes) -> dict:
    return named(native_yaml.extract_tags(path, data))

NF = "aten/src/ATen/native/native_functions.yaml"


def _facts():
    return extract_native_functions(NF, (FIXTURE_TREE / NF).read_bytes())


def test_every_func_entry_is_one_op_with_its_line():
    facts = _facts()
    ops = {o.full_name: o for o in facts["Op"] if not o.autogen_from}
    text = (FIXTURE_TREE / NF).read_text().splitlines()
    assert len(ops) == sum(1 for line in text if line.startswith("- func:"))
    relu = ops["relu"]
    assert text[relu.line - 1].startswith("- func: relu(")
    assert relu.variants == {Variant.FUNCTION, Variant.METHOD} and relu.tags == ("core", "pointwise")
    assert ops["cumsum"].structured_delegate == "cumsum.out" and ops["cumsum.out"].structured
    assert dict(ops["add.out"].ufunc_inner_loop)["Generic"].startswith("add")
    assert ops["linear"].python_module == "nn"
    assert ops["max.dim"].autogen == ("max.dim_max",)
    assert ops["relu_"].is_inplace and ops["cumsum.out"].is_out


def test_comma_joined_dispatch_keys_become_one_row_each_on_their_line():
    facts = _facts()
    ops = facts["Op"]
    rows = [(d.key, d.kernel, d.line) for d in facts["OpDispatch"] if ops[d.op].full_name == "relu"]
    text = (FIXTURE_TREE / NF).read_text().splitlines()
    assert [(k, kern) for k, kern, _ in rows] == [("CPU", "relu"), ("CUDA", "relu"), ("MPS", "relu_mps"),
                                                  ("QuantizedCPU", "relu_quantized_cpu")]
    for key, kernel, line in rows:
        assert key in text[line - 1] and kernel in text[line - 1]


def test_yaml_syntax_error_names_file_and_line():
    facts = extract_native_functions(NF, b"- func: a(Tensor x) -> Tensor\n  dispatch: [\n")
    assert facts["Op"] == []
    assert facts["errors"][0].startswith(f"{NF}:3: YAML syntax error")


def test_bad_schema_is_reported_and_other_entries_kept():
    data = b"- func: good(Tensor x) -> Tensor\n\n- func: bad(Tensor x\n"
    facts = extract_native_functions(NF, data)
    assert [o.full_name for o in facts["Op"]] == ["good"]
    assert ":3:" in facts["errors"][0]


def test_derivatives_formulas_per_input_result_and_dispatch():
    path = "tools/autograd/derivatives.yaml"
    facts = extract_derivatives(path, (FIXTURE_TREE / path).read_bytes())
    derivs = facts["Derivative"]
    names = [d.op_full_name for d in derivs]
    assert names == ["relu", "atan2", "cumsum", "_softmax", "max.dim"]
    atan2 = names.index("atan2")
    rows = [(f.variables, f.mode) for f in facts["DerivativeFormula"] if f.derivative == atan2]
    assert rows == [("self, other", FormulaMode.BACKWARD), ("result", FormulaMode.FORWARD)]
    mx = names.index("max.dim")
    assert derivs[mx].output_differentiability == "[true, false]"
    modes = {(f.variables, f.mode, f.key) for f in facts["DerivativeFormula"] if f.derivative == mx}
    assert {("self", "backward", ""), ("values", "forward-mode AD", ""), ("self", "backward", "Default"),
            ("self", "backward", "AutogradNestedTensor")} <= modes


def test_a_formulas_mode_is_torchgens_an_argument_backward_anything_else_forward():
    """Note [Formula modes]: load_derivatives.py's is_forward_derivative_definition. A key naming an argument is a
    backward formula (grad_output is an argument here, not the incoming gradient); an output's (result0, a named
    return, one under dispatch:) is forward-mode, whatever the name."""
    data = b"""
- name: _thnn_fused_gru_cell(Tensor input_gates, Tensor hidden_gates, Tensor hx) -> (Tensor, Tensor)
  input_gates, hidden_gates: fused_gru_backward(grads[0], input_gates)
  result0: gru_cell_jvp(input_gates_t, hx_p)
  result1: auto_linear
- name: threshold_backward(Tensor grad_output, Tensor self, Scalar threshold) -> Tensor
  grad_output, self: threshold_backward(grad, self, threshold)
  output: auto_element_wise
- name: mean(Tensor self, *, ScalarType? dtype=None) -> Tensor
  dispatch:
    Default:
      self: grad.expand_symint(self.sym_sizes()) / self.sym_numel()
      result: auto_linear
"""
    rows = [(f.variables, f.mode, f.key) for f in extract_derivatives("tools/autograd/derivatives.yaml", data)[
        "DerivativeFormula"]]
    assert rows == [("input_gates, hidden_gates", "backward", ""), ("result0", "forward-mode AD", ""),
                    ("result1", "forward-mode AD", ""), ("grad_output, self", "backward", ""),
                    ("output", "forward-mode AD", ""), ("self", "backward", "Default"),
                    ("result", "forward-mode AD", "Default")]


def test_tags():
    path = "aten/src/ATen/native/tags.yaml"
    tags = extract_tags(path, (FIXTURE_TREE / path).read_bytes())["Tag"]
    assert [(t.name, t.line) for t in tags] == [("core", 2), ("pointwise", 5)]
