"""Autograd nodes of every name form: linked to the op whose generated Autograd kernel creates them, found
by search (their struct and their apply), and asked about by name; with stand-in generators that write
VariableType, Functions.h and Functions.cpp in the shape tools/autograd writes them."""

import textwrap

from torchtalk.extract.generated import extract_generated
from torchtalk.index.indexer import refresh
from torchtalk.model import GeneratedFact, GeneratedKind
from torchtalk.source.tree import find_source
from torchtalk.store.reader import Index
from torchtalk.tools import get_tool, run

TORCHGEN = '''
import os, sys
def main():
    out = sys.argv[sys.argv.index("-d") + 1]
    os.makedirs(out, exist_ok=True)
    with open(os.path.join(out, "RegisterCPU.cpp"), "w") as f:
        f.write("namespace at {\\n}\\n")
'''

# max.dim has a per-key derivative for AutogradNestedTensor in the fixture's derivatives.yaml: torchgen names
# that node MaxBackwardAutogradNestedTensor0 (nothing after the digit is the plain case, something between
# "Backward" and the digit or after it is what a `\\w+Backward\\d+` pattern misses).
VARIABLE_TYPE = """namespace torch::autograd {
namespace VariableType {
namespace {
at::Tensor atan2(c10::DispatchKeySet ks, const at::Tensor & self, const at::Tensor & other) {
  std::shared_ptr<Atan2Backward0> grad_fn;
  if (_any_requires_grad) {
    grad_fn = std::shared_ptr<Atan2Backward0>(new Atan2Backward0(), deleteNode);
  }
  return result;
}
::std::tuple<at::Tensor,at::Tensor> max_dim(c10::DispatchKeySet ks, const at::Tensor & self, \
int64_t dim, bool keepdim) {
  std::shared_ptr<MaxBackward0> grad_fn;
  grad_fn = std::shared_ptr<MaxBackward0>(new MaxBackward0(), deleteNode);
  return std::make_tuple(std::move(values), std::move(indices));
}
::std::tuple<at::Tensor,at::Tensor> max_dim_AutogradNestedTensor(c10::DispatchKeySet ks, \
const at::Tensor & self, int64_t dim, bool keepdim) {
  std::shared_ptr<MaxBackwardAutogradNestedTensor0> grad_fn;
  grad_fn = std::shared_ptr<MaxBackwardAutogradNestedTensor0>(new MaxBackwardAutogradNestedTensor0(), deleteNode);
  return std::make_tuple(std::move(values), std::move(indices));
}
at::Tensor & relu_(c10::DispatchKeySet ks, at::Tensor & self) {
  auto grad_fn = std::shared_ptr<NotImplemented>(new NotImplemented("relu_"), deleteNode);
  return self;
}
}
}
namespace {
TORCH_LIBRARY_IMPL(aten, AutogradNestedTensor, m) {
m.impl("max.dim", TORCH_FN(VariableType::max_dim_AutogradNestedTensor));
}
TORCH_LIBRARY_IMPL(aten, Autograd, m) {
m.impl("atan2", TORCH_FN(VariableType::atan2));
m.impl("max.dim", TORCH_FN(VariableType::max_dim));
m.impl("relu_", TORCH_FN(VariableType::relu_));
}
}
}
"""

FUNCTIONS_H = """namespace torch::autograd::generated {
struct TORCH_API Atan2Backward0 : public TraceableFunction {
  variable_list apply(variable_list&& grads) override;
};
struct TORCH_API MaxBackward0 : public TraceableFunction {
  variable_list apply(variable_list&& grads) override;
};
struct TORCH_API MaxBackwardAutogradNestedTensor0 : public TraceableFunction {
  variable_list apply(variable_list&& grads) override;
};
}
"""

FUNCTIONS_CPP = """namespace torch::autograd::generated {
variable_list Atan2Backward0::apply(variable_list&& grads) {
  return Atan2Backward0_apply_functional(std::move(grads));
}
variable_list MaxBackward0::apply(variable_list&& grads) {
  return grads;
}
variable_list MaxBackwardAutogradNestedTensor0::apply(variable_list&& grads) {
  return grads;
}
}
"""

AUTOGRAD = f'''
import os
def generate_code(gen_dir, native_functions_path=None, tags_path=None, install_dir=None, subset=None, **kw):
    d = os.path.join(str(gen_dir), "torch/csrc/autograd/generated")
    os.makedirs(d, exist_ok=True)
    if subset != "libtorch":
        return
    for name, text in (("VariableType_0.cpp", {VARIABLE_TYPE!r}), ("Functions.h", {FUNCTIONS_H!r}),
                       ("Functions.cpp", {FUNCTIONS_CPP!r})):
        with open(os.path.join(d, name), "w") as f:
            f.write(text)
'''


def _index_with_generators(tree):
    (tree / "torchgen").mkdir()
    (tree / "torchgen/__init__.py").write_text("")
    (tree / "torchgen/gen.py").write_text(textwrap.dedent(TORCHGEN))
    (tree / "tools/__init__.py").write_text("")
    (tree / "tools/autograd/__init__.py").write_text("")
    (tree / "tools/setup_helpers").mkdir(parents=True)
    (tree / "tools/setup_helpers/__init__.py").write_text("")
    (tree / "tools/setup_helpers/generate_code.py").write_text(textwrap.dedent(AUTOGRAD))
    st = find_source(tree)
    refresh(st, workers=1, codegen=True)
    return Index(st.index_path, st.root)


def call(ix, tool, **kw):
    return run(get_tool(tool), ix, **kw)


def test_every_node_name_form_is_a_grad_fn_fact():
    facts = extract_generated("<generated>/torch/csrc/autograd/generated/VariableType_0.cpp", VARIABLE_TYPE.encode())
    assert [(f.kind, f.value) for f in facts[GeneratedFact]] == [
        (GeneratedKind.GRAD_FN, "Atan2Backward0"), (GeneratedKind.GRAD_FN, "MaxBackward0"),
        (GeneratedKind.GRAD_FN, "MaxBackwardAutogradNestedTensor0"), (GeneratedKind.GRAD_FN, "NotImplemented")]
    odd = (b"void f() {\n  grad_fn = std::shared_ptr<ForeachAddBackward0List>(new ForeachAddBackward0List(), d);\n"
           b"  grad_fn = std::shared_ptr<AliasBackward0_copy>(new AliasBackward0_copy(), d);\n"
           b"  auto p = std::shared_ptr<Node>(new Other());\n}\n")
    facts = extract_generated("<generated>/torch/csrc/autograd/generated/VariableType_4.cpp", odd)
    assert [f.value for f in facts[GeneratedFact]] == ["ForeachAddBackward0List", "AliasBackward0_copy"]
    header = extract_generated("<generated>/torch/csrc/autograd/generated/Functions.h", FUNCTIONS_H.encode())
    assert [(f.kind, f.value, f.line) for f in header[GeneratedFact]] == [
        (GeneratedKind.NODE_STRUCT, "Atan2Backward0", 2), (GeneratedKind.NODE_STRUCT, "MaxBackward0", 5),
        (GeneratedKind.NODE_STRUCT, "MaxBackwardAutogradNestedTensor0", 8)]


def test_nodes_are_linked_searched_and_traced(tree):
    ix = _index_with_generators(tree)
    res, text = call(ix, "trace", function_name="max.dim", focus="dispatch")
    grad_fns = [(a.wrapper.key, [n.dst.key for n in a.nodes]) for t in res.ops for a in t.generated.autograd]
    assert grad_fns == [("Autograd", ["MaxBackward0"]), ("AutogradNestedTensor", ["MaxBackwardAutogradNestedTensor0"])]
    assert ("grad_fn MaxBackwardAutogradNestedTensor0  struct <generated>/torch/csrc/autograd/generated/Functions.h:8; "
            "apply <generated>/torch/csrc/autograd/generated/Functions.cpp:8 (created at "
            "<generated>/torch/csrc/autograd/generated/VariableType_0.cpp:18)") in text

    res, text = call(ix, "search", query="MaxBackwardAutogradNestedTensor0")
    hit = res.hits[0]
    assert (hit.kind, hit.name, str(hit.loc), hit.match) == (
        "autograd node", "MaxBackwardAutogradNestedTensor0", "<generated>/torch/csrc/autograd/generated/Functions.h:8",
        "exact")
    assert hit.detail == ("apply() <generated>/torch/csrc/autograd/generated/Functions.cpp:8; "
                          "grad_fn of max.dim [AutogradNestedTensor]")
    # its struct is a C++ class too, and its one hit is the autograd node's (query/search_classes.py)
    assert [h.kind for h in res.hits if h.match == "exact"] == ["autograd node"], text

    res, text = call(ix, "trace", function_name="Atan2Backward0", focus="yaml")
    assert [t.op.full_name for t in res.ops] == ["atan2"]
    assert text.splitlines()[1] == ("Atan2Backward0 is an autograd node (grad_fn); shown: the op whose generated "
                                    "Autograd kernel creates it.")
    res, _ = call(ix, "trace", function_name="relu_", focus="dispatch")  # a kernel that only raises: still a node
    assert [n.dst.key for a in res.ops[0].generated.autograd for n in a.nodes] == ["NotImplemented"]
    ix.close()
