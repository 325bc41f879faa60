"""Hand-written Python bindings linked to the ops they wrap (query/handbound.py), in a manual file and in the
hand-written part of a binding template that the generator copies."""

from torchtalk.index.indexer import refresh
from torchtalk.query.handbound import hand_bindings, in_template
from torchtalk.source.tree import find_source
from torchtalk.store.reader import Index
from torchtalk.tools import get_tool, run

from .test_generated_layer import _add_generators

TEMPLATE = """\
// Fixture template: torch.Tensor's methods; the parts between the placeholders are written by hand.
#include <torch/csrc/autograd/python_variable_methods.h>

namespace torch::autograd {

static Tensor dispatch_unsqueeze(const Tensor & self, int64_t dim) {
  return self.unsqueeze(dim);
}

static PyObject * THPVariable_unsqueeze(PyObject* self, PyObject* args, PyObject* kwargs)
{
  static PythonArgParser parser({
    "unsqueeze(int64_t dim)",
  });
  auto& self_ = THPVariable_Unpack(self);
  return wrap(dispatch_unsqueeze(self_, 0));
}

// generated methods start here
${py_methods}

PyMethodDef variable_methods[] = {
  {"unsqueeze", castPyCFunctionWithKeywords(THPVariable_unsqueeze), METH_VARARGS | METH_KEYWORDS, nullptr},
  ${py_method_defs}
  {nullptr}
};

} // namespace torch::autograd
"""

# Renders the template as gen_python_functions does: each placeholder line becomes generated code.
AUTOGRAD = '''
import os
def generate_code(gen_dir, native_functions_path=None, tags_path=None, install_dir=None, subset=None, **kw):
    d = os.path.join(str(gen_dir), "torch/csrc/autograd/generated")
    os.makedirs(d, exist_ok=True)
    if subset != "pybindings":
        return
    methods = """static PyObject * THPVariable_relu(PyObject* self_, PyObject* args)
{
  // aten::relu(Tensor self) -> Tensor
  auto dispatch_relu = [](const at::Tensor & self) -> at::Tensor {
    return self.relu();
  };
  return wrap(dispatch_relu(THPVariable_Unpack(self_)));
}
"""
    defs = '  {"relu", castPyCFunctionWithKeywords(THPVariable_relu), METH_VARARGS | METH_KEYWORDS, nullptr},\\n'
    text = open("tools/autograd/templates/python_variable_methods.cpp").read()
    text = text.replace("${py_methods}\\n", methods).replace("  ${py_method_defs}\\n", defs)
    with open(os.path.join(d, "python_variable_methods.cpp"), "w") as f:
        f.write(text)
'''


def test_a_manual_binding_is_linked_by_what_it_dispatches_to(indexed):
    _, ix = indexed
    found = {b.python_name: b for b in hand_bindings(ix)}
    invert = found["Tensor.__invert__"]  # torch/csrc/autograd/python_variable.cpp: dispatch_invert -> bitwise_not
    assert (invert.function.name, invert.ops, invert.how) == ("THPVariable_invert", ["bitwise_not"], "dispatch")
    assert (invert.written.path, invert.written.line, invert.entry.line) == (
        "torch/csrc/autograd/python_variable.cpp", 11, 17)
    numel = found["torch.numel"]  # its body returns None: it wraps no op, and nothing is guessed
    assert numel.ops == [] and numel.how == ""
    assert "torch._C._initExtension" not in found  # Module.cpp's tables fill torch._C, not a binding namespace
    _, text = run(get_tool("trace"), ix, function_name="bitwise_not")
    assert ("- Python Tensor.__invert__: THPVariable_invert  torch/csrc/autograd/python_variable.cpp:11; "
            "PyMethodDef torch/csrc/autograd/python_variable.cpp:17  [linked by dispatch]") in text


def test_a_template_binding_is_cited_where_it_is_written(tree):
    _add_generators(tree, autograd=AUTOGRAD)
    (tree / "tools/autograd/templates").mkdir(parents=True)
    (tree / "tools/autograd/templates/python_variable_methods.cpp").write_text(TEMPLATE)
    st = find_source(tree)
    refresh(st, workers=1)
    ix = Index(st.index_path, st.root)
    gen = "<generated>/torch/csrc/autograd/generated/python_variable_methods.cpp"
    assert in_template(ix, gen, 10).line == 10  # before the first placeholder: the same line
    assert in_template(ix, gen, 22) is None  # a generated line (THPVariable_relu's dispatch lambda)
    assert in_template(ix, gen, 30).line == 23  # after it: the template's line
    found = {b.python_name: b for b in hand_bindings(ix)}
    assert "Tensor.unsqueeze" in found and "Tensor.relu" not in found  # relu's entry is the generator's
    b = found["Tensor.unsqueeze"]
    template = "tools/autograd/templates/python_variable_methods.cpp"
    assert (b.written.path, b.written.line, b.entry.path, b.entry.line) == (template, 10, template, 23)
    assert (b.function.path, b.function.line) == (gen, 10)
    assert (b.ops, b.how) == (["unsqueeze"], "name")
    _, text = run(get_tool("trace"), ix, function_name="unsqueeze")
    assert (f"- Python Tensor.unsqueeze: THPVariable_unsqueeze  {template}:10 (indexed as {gen}:10); "
            f"PyMethodDef {template}:23  [linked by name]") in text


def test_parser_signatures_of_hand_written_code_are_facts_of_their_function():
    from torchtalk.extract.worker import extract
    from torchtalk.model import CppSymbol, GeneratedFact, GeneratedKind, Layer

    src = b"""namespace torch::autograd {
static PyObject* THPVariable_range(PyObject* self, PyObject* args, PyObject* kwargs) {
  static PythonArgParser parser({
      "range(Scalar start, Scalar end, Scalar step=1, *, Tensor out=None)",
      "range(Scalar start, Scalar end, Scalar step=1, *, ScalarType dtype=None)",
  });
  Py_RETURN_NONE;
}
}
"""
    facts = extract("torch/csrc/autograd/python_torch_functions_manual.cpp", Layer.CPP, src)
    fn = [i for i, s in enumerate(facts[CppSymbol]) if s.name == "THPVariable_range"]
    sigs = [(f.value.split(",")[0], f.line, f.scope) for f in facts[GeneratedFact]
            if f.kind is GeneratedKind.PARSER_SIGNATURE]
    assert sigs == [("range(Scalar start", 4, fn[0]), ("range(Scalar start", 5, fn[0])]
