"""The generated layer end to end, with small stand-in generators in a fixture tree.

The stand-ins write code in the shape torchgen and tools/autograd write it
(RegisterCPU.cpp wrappers with m.impl, THPVariable_* with PythonArgParser
strings and "// aten::" comments, a PyMethodDef table), from the tree's YAML, so
a YAML edit changes their output.
"""

import textwrap

from torchtalk.index.indexer import refresh
from torchtalk.source.tree import find_source
from torchtalk.store.reader import Index
from torchtalk.tools import get_tool, run

TORCHGEN = '''
import os, re, sys
def main():
    out = sys.argv[sys.argv.index("-d") + 1]
    os.makedirs(out, exist_ok=True)
    text = open("aten/src/ATen/native/native_functions.yaml").read()
    wrappers, impls = [], []
    for name, kernel in re.findall(r"- func: (\\w+)\\(.*\\n(?:  .*\\n)*?    CPU(?:, CUDA)?: (\\w+)", text):
        wrappers.append("at::Tensor wrapper_CPU_%s(const at::Tensor & self) {\\n  return at::native::%s(self);\\n}\\n"
                        % (name, kernel))
        impls.append('m.impl("%s", TORCH_FN(wrapper_CPU_%s));' % (name, name))
    with open(os.path.join(out, "RegisterCPU.cpp"), "w") as f:
        f.write("namespace at {\\nnamespace {\\n" + "".join(wrappers) + "} // namespace\\n"
                "TORCH_LIBRARY_IMPL(aten, CPU, m) {\\n" + "\\n".join(impls) + "\\n}\\n} // namespace at\\n")
'''

AUTOGRAD = '''
import os
def generate_code(gen_dir, native_functions_path=None, tags_path=None, install_dir=None, subset=None, **kw):
    d = os.path.join(str(gen_dir), "torch/csrc/autograd/generated")
    os.makedirs(d, exist_ok=True)
    if subset != "pybindings":
        return
    body = """namespace torch::autograd {
static PyObject * THPVariable_relu(PyObject* self_, PyObject* args, PyObject* kwargs)
{
  static PythonArgParser parser({
    "relu(Tensor input)",
  }, /*traceable=*/true);
  // aten::relu(Tensor self) -> Tensor
  auto dispatch_relu = [](const at::Tensor & self) -> at::Tensor {
    return self.relu();
  };
  return wrap(dispatch_relu(_r.tensor(0)));
}
static PyMethodDef torch_functions_shard[] = {
  {"relu", castPyCFunctionWithKeywords(THPVariable_relu), METH_VARARGS | METH_KEYWORDS | METH_STATIC, nullptr},
  {nullptr, nullptr, 0, nullptr}
};
}
"""
    with open(os.path.join(d, "python_torch_functions_0.cpp"), "w") as f:
        f.write(body)
'''


def _add_generators(tree, torchgen=TORCHGEN, autograd=AUTOGRAD):
    (tree / "torchgen").mkdir()
    (tree / "torchgen/__init__.py").write_text("")
    (tree / "torchgen/gen.py").write_text(textwrap.dedent(torchgen))
    (tree / "tools/__init__.py").write_text("")
    (tree / "tools/autograd/__init__.py").write_text("")
    (tree / "tools/setup_helpers").mkdir(parents=True)
    (tree / "tools/setup_helpers/__init__.py").write_text("")
    (tree / "tools/setup_helpers/generate_code.py").write_text(textwrap.dedent(autograd))


def test_generated_code_is_indexed_linked_and_shown(tree):
    _add_generators(tree)
    st = find_source(tree)
    rep = refresh(st, workers=1)
    ix = Index(st.index_path, st.root)
    paths = [r[0] for r in ix.q("SELECT path FROM files WHERE generated = 1 ORDER BY path")]
    assert paths == ["<generated>/aten/src/ATen/RegisterCPU.cpp",
                     "<generated>/torch/csrc/autograd/generated/python_torch_functions_0.cpp"]
    assert "generated code" in " ".join(rep.layer_seconds)
    _, text = run(get_tool("trace"), ix, function_name="relu", focus="dispatch")
    assert ("- Python torch.relu: THPVariable_relu  "
            "<generated>/torch/csrc/autograd/generated/python_torch_functions_0.cpp:2") in text
    assert "    parser: relu(Tensor input)" in text
    assert "- CPU: wrapper_CPU_relu  <generated>/aten/src/ATen/RegisterCPU.cpp:" in text
    res, text = run(get_tool("impact"), ix, function_name="relu", depth=2)
    callers = {e.src.label.split("::")[-1] for lv in res.sections[0].levels for e in lv.callers}
    assert {"wrapper_CPU_relu", "THPVariable_relu"} <= callers
    assert "binding <generated>/torch/csrc/autograd/generated/python_torch_functions_0.cpp:2" in text
    res, _ = run(get_tool("get_status"), ix)
    assert res.readiness["generated code"].startswith("ready (generators: ok")
    res, text = run(get_tool("search"), ix, query="relu")
    assert "binding torch.relu" in text


def test_yaml_edit_publishes_first_then_regenerates(tree):
    _add_generators(tree)
    st = find_source(tree)
    refresh(st, workers=1)
    nf = tree / "aten/src/ATen/native/native_functions.yaml"
    nf.write_text(nf.read_text().replace("CPU, CUDA: relu\n", "CPU, CUDA: relu_v2\n"))
    rep = refresh(st, workers=1)
    assert "first version published" in rep.layer_seconds
    ix = Index(st.index_path, st.root)
    text = ix.one("SELECT count(*) FROM cpp_call WHERE callee = 'relu_v2'")[0]
    assert text == 1  # the wrapper was regenerated from the edited YAML and re-indexed
    assert ix.meta["codegen_status"] == "ok"
    assert refresh(st, workers=1).mode == "up-to-date"


def test_failing_generator_leaves_an_index_without_the_layer_and_says_why(tree):
    _add_generators(tree, torchgen="def main():\n    raise RuntimeError('boom in torchgen')\n",
                    autograd="def generate_code(**kw):\n    raise ImportError('no module named typing_extensions')\n")
    st = find_source(tree)
    refresh(st, workers=1)
    ix = Index(st.index_path, st.root)
    assert ix.one("SELECT count(*) FROM files WHERE generated = 1")[0] == 0
    res, text = run(get_tool("get_status"), ix)
    assert res.readiness["generated code"].startswith("unavailable")
    assert "boom in torchgen" in text
    _, text = run(get_tool("trace"), ix, function_name="relu", focus="dispatch")
    assert "Generated code: not indexed (unavailable:" in text
    assert "C++: at::native::relu" in text  # the rest of the index is there


def test_no_codegen_removes_the_layer(tree):
    _add_generators(tree)
    st = find_source(tree)
    refresh(st, workers=1)
    refresh(st, workers=1, codegen=False)
    ix = Index(st.index_path, st.root)
    assert ix.one("SELECT count(*) FROM files WHERE generated = 1")[0] == 0
    assert ix.meta["codegen_status"] == "disabled (--no-codegen)"


# torchgen/dest/ufunc.py's output for add.out, in its shape (UfuncCPU.cpp, UfuncCPUKernel.cpp, UfuncCUDA.cu templates).
TORCHGEN_UFUNC = '''
import os, sys
CPU = """namespace at {
namespace native {
struct TORCH_API structured_ufunc_add_CPU : public at::meta::structured_add_Tensor {
void impl(const at::Tensor & self, const at::Tensor & other, const at::Scalar & alpha, const at::Tensor & out);
};
using add_fn = void(*)(TensorIteratorBase&, const at::Scalar &);
DECLARE_DISPATCH(add_fn, add_stub)
DEFINE_DISPATCH(add_stub);
TORCH_IMPL_FUNC(ufunc_add_CPU)(const at::Tensor & self, const at::Tensor & other, const at::Scalar & alpha,
                               const at::Tensor & out) {
  add_stub(device_type(), *this, alpha);
}
}} // namespace at::native
"""
CPU_KERNEL = """namespace at {
namespace native {
namespace {
void add_kernel(TensorIteratorBase& iter, const at::Scalar & alpha) {
  AT_DISPATCH_SWITCH(iter.common_dtype(), "add_stub",
AT_DISPATCH_CASE(at::ScalarType::Float,
  [&]() {
cpu_kernel_vec(iter,
  [=](scalar_t self, scalar_t other) { return ufunc::add(self, other, alpha.to<scalar_t>()); },
  [=](at::vec::Vectorized<scalar_t> self, at::vec::Vectorized<scalar_t> other) {
    return ufunc::add(self, other, alpha); }
);
  }
)
  );
}
} // anonymous namespace
using add_fn = void(*)(TensorIteratorBase&, const at::Scalar &);
DECLARE_DISPATCH(add_fn, add_stub)
REGISTER_DISPATCH(add_stub, &add_kernel)
}} // namespace at::native
"""
CUDA = """namespace at {
namespace native {
template <typename scalar_t>
struct CUDAFunctor_add {
  using opmath_t = at::opmath_type<scalar_t>;
  opmath_t alpha_;
  CUDAFunctor_add(opmath_t alpha) : alpha_(alpha) {}
  __device__ scalar_t operator()(scalar_t self, scalar_t other) const {
    return ufunc::add(static_cast<opmath_t>(self), static_cast<opmath_t>(other), alpha_);
  }
};
void add_kernel(TensorIteratorBase& iter, const at::Scalar & alpha) {
  AT_DISPATCH_SWITCH(iter.common_dtype(), "ufunc_add_CUDA",
AT_DISPATCH_CASE(at::ScalarType::Float,
  [&]() {
    using opmath_t = at::opmath_type<scalar_t>;
  CUDAFunctor_add<scalar_t> ufunctor((alpha).to<opmath_t>());
  gpu_kernel(iter, ufunctor);
  }
)
  );
}
TORCH_IMPL_FUNC(ufunc_add_CUDA)(const at::Tensor & self, const at::Tensor & other, const at::Scalar & alpha,
                                const at::Tensor & out) {
  add_kernel(*this, alpha);
}
}} // namespace at::native
"""
def main():
    out = sys.argv[sys.argv.index("-d") + 1]
    os.makedirs(out, exist_ok=True)
    for name, text in (("UfuncCPU_add.cpp", CPU), ("UfuncCPUKernel_add.cpp", CPU_KERNEL), ("UfuncCUDA_add.cu", CUDA)):
        with open(os.path.join(out, name), "w") as f:
            f.write(text)
'''


def test_ufunc_op_reaches_the_kernels_torchgen_writes(tree):
    """add.out has no CPU/CUDA dispatch entry: torchgen writes TORCH_IMPL_FUNC(ufunc_add_<key>) from its
    ufunc_inner_loop; trace and cuda_kernels follow it into the generated code, down to the gpu_kernel launch."""
    _add_generators(tree, torchgen=TORCHGEN_UFUNC)
    st = find_source(tree)
    refresh(st, workers=1)
    ix = Index(st.index_path, st.root)
    res, text = run(get_tool("trace"), ix, function_name="add.out", focus="dispatch")
    entries = {k.entry.key: k for k in res.ops[0].kernels}
    assert entries["CUDA"].entry.kernel == "ufunc_add_CUDA" and entries["CUDA"].entry.structured
    defs = {key: [(d.path, d.line) for d in k.definitions] for key, k in entries.items()}
    assert defs["CUDA"] == [("<generated>/aten/src/ATen/UfuncCUDA_add.cu", 23)]
    assert defs["CPU"] == [("<generated>/aten/src/ATen/UfuncCPU_add.cpp", 9)]
    assert "generated from ufunc_inner_loop (Generic: add" in text
    assert "CPU: add_kernel  (defined <generated>/aten/src/ATen/UfuncCPUKernel_add.cpp:4" in text  # add_stub's
    _, text = run(get_tool("trace"), ix, function_name="add")
    assert "CUDA gpu_kernel(ufunctor) at <generated>/aten/src/ATen/UfuncCUDA_add.cu:18 by at::native::add_kernel" \
        in text
    res, text = run(get_tool("cuda_kernels"), ix, function_name="add")
    sites = {(h.site.src.label, h.site.site.path, h.site.site.line) for h in res.helpers}
    assert ("at::native::add_kernel", "<generated>/aten/src/ATen/UfuncCUDA_add.cu", 18) in sites
    assert "gpu_kernel" in text and "TORCH_IMPL_FUNC(ufunc_add_CUDA)" in text


OPERATORS = '''
    ops = []
    for name in re.findall(r"- func: (\\w+)\\(Tensor self\\) -> Tensor", text):
        ops.append("at::Tensor %s::call(const at::Tensor & self) {\\n"
                   "    static auto op = create_%s_typed_handle();\\n    return op.call(self);\\n}\\n" % (name, name))
    with open(os.path.join(out, "Operators_0.cpp"), "w") as f:
        f.write("namespace at { namespace _ops {\\n" + "".join(ops) + "}} // namespace at::_ops\\n")
'''


def test_an_ops_dispatcher_entry_reaches_the_op_and_its_callers(tree):
    """Note [Dispatcher entries]: at::_ops::relu::call (Operators_N.cpp, what C++ stack traces show) is called by
    no C++ function as the index records calls (at::relu(x) is a call of the op relu), so called_by names the op
    it is the entry of, and impact walks up through that op to the op's callers."""
    _add_generators(tree, torchgen=TORCHGEN + textwrap.indent(OPERATORS, "    "))
    (tree / "aten/src/ATen/native/UsesRelu.cpp").write_text(
        "namespace at { namespace native {\nTensor relu_twice(const Tensor& self) {\n"
        "  return at::relu(at::relu(self));\n}\n}}\n")
    st = find_source(tree)
    refresh(st, workers=1)
    ix = Index(st.index_path, st.root)
    try:
        res, text = run(get_tool("called_by"), ix, function_name="at::_ops::relu::call")
        assert [(e.kind.value, e.src.key) for e in res.sections[0].registrations] == [("entry", "relu")]
        assert "the dispatcher entry of op relu: every C++ call of the op goes through it" in text
        res, text = run(get_tool("impact"), ix, function_name="at::_ops::relu::call", depth=1)
        callers = {e.src.label for lv in res.sections[0].levels for e in lv.callers}
        assert "at::native::relu_twice" in callers
    finally:
        ix.close()


def test_python_names_are_the_ones_the_generated_bindings_bind(tree):
    """Note [Bound names]: the stand-in binding generator binds torch.relu alone, so the YAML's torch.add
    (gen_python_functions leaves ops out the same way: .*_backward, div.Scalar) is no Python name of add; no
    generated file fills Tensor's namespace here, so its YAML names stay."""
    _add_generators(tree)
    st = find_source(tree)
    refresh(st, workers=1)
    ix = Index(st.index_path, st.root)
    try:
        names = set(ix.q("SELECT name, op FROM py_api WHERE kind IN ('function', 'method')"))
        assert ("torch.relu", "relu") in names and ("Tensor.add", "add.Tensor") in names
        assert not {n for n, o in names if o == "add.Tensor" and n.startswith("torch.")}
    finally:
        ix.close()


def test_impact_walks_up_a_generated_wrapper_to_its_op(tree):
    # RegisterCPU.cpp's wrapper_CPU_cos_out_out copies its structured kernel's result with copy_: walked up, a
    # wrapper was a dead end that took a place of impact's bounded level (copy_'s depth-3 answer reached 46 ops,
    # not 88); it is the kernel the dispatcher runs for its op (WRAPPER)
    torchgen = TORCHGEN.replace("return at::native::%s(self);", "return at::native::copy_result(self);").replace(
        "% (name, kernel))", "% (name,))")
    assert torchgen != TORCHGEN
    _add_generators(tree, torchgen=torchgen)
    (tree / "aten/src/ATen/native/CopyResult.cpp").write_text(
        "namespace at { namespace native {\nTensor copy_result(const Tensor& self) {\n  return self;\n}\n}}\n")
    st = find_source(tree)
    refresh(st, workers=1)
    ix = Index(st.index_path, st.root)
    res, text = run(get_tool("impact"), ix, function_name="at::native::copy_result", depth=2)
    ops = {n.key for n, _e, _lv in res.sections[0].ops}
    assert {"relu", "index_select", "mm"} <= ops, text
