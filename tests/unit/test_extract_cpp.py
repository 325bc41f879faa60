"""extract_cpp on small hand-written fixtures (tests/fixtures/cpp) and on the real tree."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from torchtalk.extract.cpp import extract_cpp
from torchtalk.model import CallSite as CppCall
from torchtalk.model import CppClass, CppField, CppSymbol, RaiseSite, SymbolKind, Using, UsingKind
from torchtalk.model import Registration as CppRegistration

# The facts of a file by the names these tests use for them.
_NAMES = {CppSymbol: "CppSymbol", CppCall: "CppCall", CppRegistration: "CppRegistration", Using: "CppUsing",
          CppClass: "CppClass", CppField: "CppField", RaiseSite: "RaiseSite"}


def named(f: dict) -> dict:
    return {_NAMES[k]: v for k, v in f.items()}

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures" / "cpp"


def facts(name: str, relpath: str) -> dict:
    return named(extract_cpp(relpath, (FIXTURES / name).read_bytes()))


def sym(f: dict, name: str, **where) -> CppSymbol:
    found = [s for s in f["CppSymbol"] if s.name == name and all(getattr(s, k) == v for k, v in where.items())]
    assert len(found) == 1, (name, where, found)
    return found[0]


def spans(f: dict) -> list[tuple[str, int, int]]:
    """The definitions of a file as (qualified name, first line, last line)."""
    return [(s.qualname, s.line, s.end_line) for s in f["CppSymbol"] if s.is_definition]


def calls_of(f: dict, symbol: CppSymbol) -> list[CppCall]:
    idx = f["CppSymbol"].index(symbol)
    return [c for c in f["CppCall"] if c.caller == idx]


def regs(f: dict, kind: str) -> list[CppRegistration]:
    return [r for r in f["CppRegistration"] if r.kind == kind]


def check_refs(f: dict) -> None:
    n = len(f["CppSymbol"])
    assert all(-1 <= c.caller < n for c in f["CppCall"])
    assert all(-1 <= r.scope < n for r in f["CppRegistration"])
    assert all(isinstance(s, CppSymbol) for s in f["CppSymbol"])
    assert all(isinstance(u, Using) for u in f["CppUsing"])


# ---------------------------------------------------------------- dispatch stubs


def test_dispatch_stub_macros_cpu_file():
    f = facts("dispatch.cpp", "aten/src/ATen/native/cpu/FooKernel.cpp")
    check_refs(f)
    got = {(r.kind, r.name, r.target, r.key, r.line, r.detail) for r in f["CppRegistration"]}
    assert got == {
        ("declare_dispatch", "atan2_stub", "atan2_fn", "at::native", 7, "DECLARE_DISPATCH"),
        ("declare_dispatch", "fill_stub", "void(*)(TensorIterator&, const Scalar&)", "at::native", 8,
         "DECLARE_DISPATCH"),
        ("define_dispatch", "atan2_stub", "", "at::native", 9, "DEFINE_DISPATCH"),
        ("register_dispatch", "atan2_stub", "atan2_kernel", "CPU", 22, "ALSO_REGISTER_AVX512_DISPATCH"),
        ("register_dispatch", "sign_stub", "CPU_CAPABILITY::sign_kernel", "CPU", 23, "REGISTER_DISPATCH"),
        ("register_dispatch", "flatten_stub", "flatten_cpu_kernel", "CPU", 24, "REGISTER_ARCH_DISPATCH"),
        ("register_dispatch", "cuda_only_stub", "", "CPU", 25, "REGISTER_NO_CPU_DISPATCH"),
        ("register_dispatch", "explicit_cuda_stub", "explicit_cuda_kernel", "CUDA", 26, "REGISTER_CUDA_DISPATCH"),
        ("register_dispatch", "avx2_stub", "avx2_kernel", "CPU", 27, "REGISTER_AVX2_DISPATCH"),
        ("register_dispatch", "long_stub", "long_kernel_name", "CPU", 28, "REGISTER_DISPATCH"),
    }
    # Mentions in a comment, a string and an unused #define are not registrations.
    names = {r.name for r in f["CppRegistration"]}
    assert not names & {"commented_stub", "string_stub", "op_stub"}
    # Registration macros are not reported as calls.
    assert not [c for c in f["CppCall"] if "DISPATCH" in c.callee]


@pytest.mark.parametrize("source, namespace", [
    ("namespace at { namespace native {\nDECLARE_DISPATCH(f_fn, x_stub);\n}}\n", "at::native"),
    ("namespace at::native { namespace {\nDECLARE_DISPATCH(f_fn, x_stub);\n}}\n", "at::native"),
    ("DECLARE_DISPATCH(f_fn, x_stub);\nnamespace at {}\n", ""),
    ("namespace at::native {\nvoid f() {}\n}\nnamespace torch {\nDECLARE_DISPATCH(f_fn, x_stub);\n}\n", "torch"),
    # a damaged tree (an unbalanced #if): the namespaces as the text's braces give them
    ("namespace at::native {\n#if X\nvoid g() {\n#else\nvoid g() { if (1) {\n#endif\n}\n"
     "DECLARE_DISPATCH(f_fn, x_stub);\n}\n", "at::native"),
])
def test_a_stub_declaration_records_its_namespace(source, namespace):
    f = named(extract_cpp("aten/src/ATen/native/Foo.h", source.encode()))
    [r] = [r for r in f["CppRegistration"] if r.kind == "declare_dispatch"]
    assert (r.name, r.key) == ("x_stub", namespace)


@pytest.mark.parametrize(
    "relpath, key",
    [
        ("aten/src/ATen/native/cuda/FooKernel.cu", "CUDA"),
        ("aten/src/ATen/native/mps/operations/Foo.mm", "MPS"),
        ("aten/src/ATen/native/cpu/FooKernel.cpp", "CPU"),
        ("aten/src/ATen/native/quantized/cpu/kernels/Foo.cpp", "CPU"),
    ],
)
def test_register_dispatch_key_follows_path(relpath, key):
    f = named(extract_cpp(relpath, b"namespace at::native {\nREGISTER_DISPATCH(x_stub, &x_kernel);\n}\n"))
    [r] = f["CppRegistration"]
    assert (r.name, r.target, r.key, r.line) == ("x_stub", "x_kernel", key, 2)


# ---------------------------------------------------------------- structured kernels and macros


def test_structured_kernel_macros():
    f = facts("structured.cpp", "aten/src/ATen/native/UnaryOps.cpp")
    check_refs(f)
    tanh = sym(f, "tanh")
    assert (tanh.qualname, tanh.kind, tanh.line, tanh.end_line) == (
        "at::meta::structured_tanh::meta", "meta_func", 4, 6)
    add = sym(f, "add_Tensor")
    assert (add.qualname, add.kind) == ("at::meta::structured_add_Tensor::meta", "meta_func")
    pool = sym(f, "avg_pool2d")
    assert (pool.qualname, pool.kind, pool.line) == (
        "at::meta::structured_avg_pool2d::meta", "precompute_meta_func", 12)
    rd = sym(f, "round_decimals_out")
    assert (rd.qualname, rd.kind, rd.line, rd.macro) == (
        "at::native::structured_round_decimals_out::impl", "impl_func", 30, "")
    assert rd.params == "(const Tensor& self, int64_t decimals, const Tensor& result)"
    assert {c.callee for c in calls_of(f, rd)} == {"round_decimals_stub", "device_type"}
    impl = {(r.name, r.target, r.line, r.detail) for r in regs(f, "impl_func")}
    assert ("round_decimals_out", "at::native::structured_round_decimals_out::impl", 30, "TORCH_IMPL_FUNC") in impl
    meta = {(r.name, r.detail) for r in regs(f, "meta_func")}
    assert meta == {("tanh", "TORCH_META_FUNC"), ("add_Tensor", "TORCH_META_FUNC2"),
                    ("avg_pool2d", "TORCH_PRECOMPUTE_META_FUNC")}


def test_same_file_macro_expansion_defines_functions_at_the_invocation():
    f = facts("structured.cpp", "aten/src/ATen/native/UnaryOps.cpp")
    acos = sym(f, "acos_out")
    assert (acos.qualname, acos.kind, acos.line, acos.macro) == (
        "at::native::structured_acos_out::impl", "impl_func", 26, "CREATE_UNARY_TORCH_IMPL_FUNC")
    tanh = sym(f, "tanh_out")  # invocation spread over two lines
    assert (tanh.line, tanh.end_line) == (27, 28)
    assert [(c.callee, c.line) for c in calls_of(f, tanh) if c.callee.endswith("_stub")] == [("tanh_stub", 27)]
    assert ("tanh_out", 27) in {(r.name, r.line) for r in regs(f, "impl_func")}
    # Nested macros, ## and #: a kernel in an inline namespace and its registration.
    exp = sym(f, "exp_kernel")
    assert (exp.qualname, exp.line, exp.macro) == (
        "at::native::CPU_CAPABILITY::exp_kernel", 46, "IMPLEMENT_KERNEL_AND_REGISTER")
    [reg] = [r for r in regs(f, "register_dispatch")]
    assert (reg.name, reg.target, reg.key, reg.line) == ("exp_stub", "CPU_CAPABILITY::exp_kernel", "CPU", 46)
    # #undef then #define: the later definition is used after it.
    assert sym(f, "log_other").qualname == "at::native::log_other"
    # Line numbers after the expansions are unchanged.
    assert sym(f, "after_macros").line == 52


def test_a_pasting_macro_handed_to_a_list_of_the_same_file_is_expanded_per_entry():
    # quantized/cpu/TensorOperators.cpp: the list macro is in the file, so each entry's name is known; a list
    # of another header (AT_FORALL_SCALAR_TYPES) still leaves the name as a pattern (test_cpp_resolution.py)
    src = (b"namespace at::native {\n"
           b"#define DEFINE_COMPARATOR(at_op) \\\n"
           b"Tensor& at_op##_out_quantized_cpu(const Tensor& self, Tensor& out) { \\\n"
           b"  return at:: at_op##_out(out, self); \\\n"
           b"}\n"
           b"#define AT_FORALL_OPERATORS(_) \\\n"
           b"_(ne)                          \\\n"
           b"_(lt)                          \\\n"
           b"\n"
           b"AT_FORALL_OPERATORS(DEFINE_COMPARATOR)\n"
           b"#undef AT_FORALL_OPERATORS\n"
           b"Tensor& after(Tensor& out) { return out; }\n"
           b"}\n")
    f = named(extract_cpp("aten/src/ATen/native/quantized/cpu/TensorOperators.cpp", src))
    defs = {(s.qualname, s.line, s.macro) for s in f["CppSymbol"] if s.is_definition}
    assert defs == {("at::native::ne_out_quantized_cpu", 10, "AT_FORALL_OPERATORS"),
                    ("at::native::lt_out_quantized_cpu", 10, "AT_FORALL_OPERATORS"),
                    ("at::native::after", 12, "")}
    lt = sym(f, "lt_out_quantized_cpu")
    assert [(c.callee, c.qualifier, c.line) for c in calls_of(f, lt)] == [("lt_out", "at", 10)]


def test_a_multi_line_argument_of_a_same_file_macro_keeps_its_lines():
    # Note [Arguments keep their lines]: TriangularOps.cu's BOOL_SWITCH uses its lambda twice, ForeachReduceOp.cu's
    # local dispatch macro four times; the launch and the call inside are on their own lines, once each
    src = (b"#define BOOL_SWITCH(COND, CONST_NAME, ...) \\\n"
           b"  [&] { if (COND) { return __VA_ARGS__(); } else { return __VA_ARGS__(); } }()\n"
           b"void launcher(bool c) {\n"            # line 3
           b"  BOOL_SWITCH(c, inplace, [&] {\n"     # line 4
           b"    prepare();\n"                      # line 5
           b"    kernel<float>\n"                   # line 6
           b"      <<<1, 2>>>(c);\n"                # line 7
           b"  });\n"                               # line 8
           b"  after();\n"                          # line 9
           b"}\n")
    f = named(extract_cpp("aten/src/ATen/native/cuda/Tri.cu", src))
    launcher = sym(f, "launcher")
    assert sorted((c.callee, c.line) for c in calls_of(f, launcher) if c.callee in ("prepare", "kernel", "after")) \
        == [("after", 9), ("kernel", 6), ("prepare", 5)]


# ---------------------------------------------------------------- definitions and declarations


def test_scopes_overloads_and_declarations():
    f = facts("symbols.h", "c10/core/Device.h")
    check_refs(f)
    ctor = sym(f, "Device")
    assert (ctor.qualname, ctor.kind, ctor.is_definition) == ("c10::Device::Device", "constructor", True)
    assert sym(f, "index").kind == "method"  # C10_HOST_DEVICE blanked, still a method
    assert sym(f, "operator==").qualname == "c10::Device::operator=="
    # Declaration in the class and out-of-line definition at global scope.
    decl = sym(f, "cpu", is_definition=False)
    defn = sym(f, "cpu", is_definition=True)
    assert decl.qualname == defn.qualname == "c10::Device::cpu"
    assert (decl.line, defn.line, defn.kind) == (11, 42, "method")
    assert sym(f, "~Device", is_definition=True).qualname == "c10::Device::~Device"
    # TORCH_API prototypes: overloads stay distinct through their parameters.
    adds = [s for s in f["CppSymbol"] if s.name == "add"]
    assert {s.params for s in adds} == {
        "(const Tensor& self, const Tensor& other, const Scalar& alpha = 1)",
        "(const Tensor& self, const Scalar& other)",
    }
    assert all(s.qualname == "at::native::add" and not s.is_definition for s in adds)
    out = sym(f, "add_out")
    assert out.params == "(const Tensor& self, const Tensor& other, Tensor& out)"  # comment gone
    assert (out.line, out.end_line) == (21, 23)
    assert sym(f, "fast_helper").is_definition  # C10_ALWAYS_INLINE blanked
    assert sym(f, "clamp_value").qualname == "at::native::clamp_value"
    assert sym(f, "hidden").qualname == "at::(anonymous)::hidden"
    assert not [s for s in f["CppSymbol"] if s.name == "function_pointer"]
    assert f["CppUsing"] == [Using(UsingKind.NAMESPACE, "at::native", "", 45, "")]


# ---------------------------------------------------------------- calls


def test_calls_kinds_and_no_calls_from_comments_or_strings():
    f = facts("calls.cpp", "aten/src/ATen/native/Calls.cpp")
    check_refs(f)
    fn = sym(f, "index_select_cpu")
    got = {(c.callee, c.qualifier, c.kind) for c in calls_of(f, fn)}
    assert ("empty", "at", "call") in got
    assert ("call", "at::_ops::add_Tensor", "call") in got
    assert ("index_select_out_cpu_", "", "call") in got
    assert ("view", "self.contiguous()", "method") in got
    assert ("set_sizes_contiguous", "impl", "method") in got
    assert ("convert", "", "call") in got  # template call convert<float>(v)
    assert ("OptionalDeviceGuard", "", "construct") in got
    assert ("fill_values", "", "call") in got  # inside the AT_DISPATCH lambda
    assert ("compute_one", "", "call") in got  # inside a local lambda
    assert ("add_stub", "", "call") in got
    assert not [c for c in f["CppCall"] if c.callee == "index_select_out_cpu_impl"]
    lines = {c.callee: c.line for c in calls_of(f, fn)}
    assert (lines["empty"], lines["call"], lines["fill_values"]) == (8, 11, 18)


def test_overloads_methods_and_namespace_scope_calls():
    f = facts("calls.cpp", "aten/src/ATen/native/Calls.cpp")
    two = sym(f, "overloaded", params="(int x, int y)")
    sym(f, "overloaded", params="(int x)")
    assert [(c.callee, c.line) for c in calls_of(f, two)] == [("overloaded", 26)]
    run = sym(f, "run")
    assert run.qualname == "at::native::Helper::run"
    assert {(c.callee, c.qualifier, c.kind) for c in calls_of(f, run)} == {
        ("step", "", "call"), ("finish", "this", "method")}
    step = sym(f, "step", is_definition=True)
    assert (step.qualname, step.kind, step.line) == ("at::native::Helper::step", "method", 34)
    # A static initialiser's call has no enclosing function.
    assert [(c.caller, c.line) for c in f["CppCall"] if c.callee == "make_registry"] == [(-1, 36)]


# ---------------------------------------------------------------- CUDA


def test_cuda_kernels_launches_and_helpers():
    f = facts("kernels.cu", "aten/src/ATen/native/cuda/FooKernels.cu")
    check_refs(f)
    k = sym(f, "avg_pool_frame")
    assert (k.kind, k.line, k.end_line, k.qualname) == (
        "global_kernel", 9, 13, "at::native::(anonymous)::avg_pool_frame")
    # CUDA_KERNEL_LOOP(i, n) { ... } is a loop macro: its calls belong to the kernel.
    assert ("accumulate", 11) in {(c.callee, c.line) for c in calls_of(f, k)}
    assert not [s for s in f["CppSymbol"] if "CUDA_KERNEL_LOOP" in s.name]
    assert sym(f, "accumulate").kind == "device_function"
    assert sym(f, "plain_kernel").kind == "global_kernel"
    assert sym(f, "operator()").kind == "method"
    host = sym(f, "avg_pool_out_cuda")
    launches = [(c.callee, c.line, c.detail) for c in calls_of(f, host) if c.kind == "launch"]
    assert launches[0] == ("avg_pool_frame", 34, "ceil_div(count, 1024), 1024, 0, at::cuda::getCurrentCUDAStream()")
    # Launches hidden in a same-file macro with type arguments, inside if/else blocks.
    assert [(c, ln) for c, ln, _ in launches[1:]] == [("plain_kernel", 39), ("plain_kernel", 41)]
    absk = sym(f, "abs_kernel_cuda")
    assert [(c.callee, c.detail, c.line) for c in calls_of(f, absk) if c.kind == "gpu_launch"] == [
        ("gpu_kernel", "AbsFunctor", 47)]
    neg = sym(f, "neg_kernel_cuda")
    assert [(c.callee, c.detail) for c in calls_of(f, neg) if c.kind == "gpu_launch"] == [("gpu_kernel", "lambda@53")]
    assert ("negate_value", 54) in {(c.callee, c.line) for c in calls_of(f, neg)}
    tan = sym(f, "tan_kernel_cuda")
    assert [(c.callee, c.detail) for c in calls_of(f, tan) if c.kind != "ref"] == [("jitted_gpu_kernel", "tan_name")]
    # a name passed without a call, or given as a template argument, is a REF site (Note [References]): strings here,
    # which resolve to no function
    assert [(c.callee, c.detail) for c in calls_of(f, tan) if c.kind == "ref"] == [
        ("tan_string", ""), ("tan_name", "template argument")]
    assert {(r.name, r.target, r.key) for r in regs(f, "register_dispatch")} == {
        ("abs_stub", "abs_kernel_cuda", "CUDA"), ("neg_stub", "neg_kernel_cuda", "CUDA")}


def test_header_with_launch_uses_cuda_grammar():
    src = b"namespace at {\nvoid go(float* p) {\n  fill_kernel<<<1, 32, 0, s>>>(p);\n}\n}\n"
    f = named(extract_cpp("aten/src/ATen/native/cuda/Helpers.h", src))
    [c] = [c for c in f["CppCall"] if c.kind == "launch"]
    assert (c.callee, c.line, c.detail, f["CppSymbol"][c.caller].name) == ("fill_kernel", 3, "1, 32, 0, s", "go")


# ---------------------------------------------------------------- bindings and library blocks


def test_pymethoddef_tables_both_forms():
    f = facts("bindings.cpp", "torch/csrc/Module.cpp")
    check_refs(f)
    got = {(r.name, r.target, r.key, r.line) for r in regs(f, "pymethoddef")}
    assert got == {
        ("set_num_threads", "THPModule_setNumThreads", "TorchMethods", 10),
        ("get_num_threads", "THPModule_getNumThreads", "TorchMethods", 11),
        ("_cuda_init", "THPModule_cudaInit", "TorchMethods", 16),
        ("__add__", "THPVariable_add", "variable_methods", 22),
        ("detach", "THPVariable_detach", "variable_methods", 24),
    }


def test_pybind_defs_on_any_receiver():
    f = facts("bindings.cpp", "torch/csrc/Module.cpp")
    got = {(r.name, r.target, r.key, r.line, r.detail) for r in regs(f, "pybind_def")}
    graph = 'py::class_<Graph, std::shared_ptr<Graph>>(m, "Graph")'
    assert got == {
        ("_jit_pass_inline", "Inline", "m", 29, ".def"),
        ("_get_tracing_state", "lambda@30", "m", 30, ".def"),
        ("Graph.__init__", "py::init<>()", graph, 32, ".def"),
        ("Graph.nodes", "Graph::nodes", graph, 33, ".def"),
        ("Graph.global_graph", "Graph::global", graph, 34, ".def_static"),
        ("Graph.name", "lambda@35", graph, 35, ".def_property_readonly"),
        ("Node.kind", "Node::kind", "node_class", 37, ".def"),
        ("_set_backcompat", "setBackcompat", "py_module", 39, ".def"),
        ("Holder.get", "Holder::get", 'm.class_<Holder>("Holder")', 46, ".def"),
    }
    init = sym(f, "initModule")
    assert all(r.scope == f["CppSymbol"].index(init) for r in regs(f, "pybind_def") if r.line < 40)


def test_torch_library_blocks():
    f = facts("bindings.cpp", "torch/csrc/Module.cpp")
    blocks = [s.name for s in f["CppSymbol"] if s.kind == "library_block"]
    assert blocks == ["TORCH_LIBRARY(myops)", "TORCH_LIBRARY_FRAGMENT(aten)", "TORCH_LIBRARY_IMPL(aten, CPU)",
                      "TORCH_LIBRARY_IMPL(_, AutogradCPU)"]
    defs = {(r.name, r.target, r.key, r.line) for r in regs(f, "library_def")}
    assert defs == {("myadd", "", "myops", 43), ("mymul.out", "", "myops", 44), ("with_tags", "", "myops", 45),
                    ("extra_op", "extra_op_impl", "aten", 50)}
    schema = [r.detail for r in regs(f, "library_def") if r.name == "myadd"]
    assert schema == ["myadd(Tensor self, Tensor other) -> Tensor"]
    impls = {(r.name, r.target, r.key, r.line) for r in regs(f, "library_impl")}
    assert impls == {("add.Tensor", "wrapper_CPU_add", "CPU", 54), ("relu", "relu_cpu", "CPU", 55),
                     ("sum", "sum_impl", "CompositeExplicitAutograd", 56)}
    [fb] = regs(f, "library_fallback")
    assert (fb.target, fb.key, fb.line) == ("autograd_fallback", "AutogradCPU", 60)
    block = f["CppSymbol"][fb.scope]
    assert block.name == "TORCH_LIBRARY_IMPL(_, AutogradCPU)"


# ---------------------------------------------------------------- Objective-C++ and conditionals


def test_objective_cpp_definitions_survive_objc_syntax():
    f = facts("objc.mm", "aten/src/ATen/native/mps/operations/Foo.mm")
    check_refs(f)
    relu = sym(f, "relu_mps")
    assert (relu.qualname, relu.line, relu.end_line) == ("at::native::relu_mps", 20, 32)
    assert ("runMPSGraph", 29) in {(c.callee, c.line) for c in calls_of(f, relu)}
    op = sym(f, "unary_op")
    assert op.qualname == "at::native::mps::unary_op"
    got = {(c.callee, c.line) for c in calls_of(f, op)}
    assert ("runMPSGraph", 14) in got  # inside a ^() block
    assert ("getMPSDataType", 11) in got  # an argument of a message send
    cs = sym(f, "cumsum_out_mps")
    assert (cs.qualname, cs.kind, cs.line) == ("at::native::structured_cumsum_out_mps::impl", "impl_func", 34)
    assert [(r.name, r.key) for r in regs(f, "register_dispatch")] == [("cross_stub", "MPS")]


def test_damage_at_namespace_scope_is_confined_to_one_item():
    f = facts("damaged.cpp", "aten/src/ATen/native/Damaged.cpp")
    check_refs(f)
    assert sym(f, "broken").qualname == "at::native::(anonymous)::broken"
    after = sym(f, "after_damage")
    assert (after.qualname, after.line, after.end_line) == ("at::native::after_damage", 18, 20)
    assert [(c.callee, c.line) for c in calls_of(f, after)] == [("helper_after", 19)]
    assert not [s for s in f["CppSymbol"] if s.kind == "macro_block"]


def test_conditionals_that_split_a_signature_do_not_swallow_the_file():
    f = facts("conditionals.cpp", "aten/src/ATen/native/Cond.cpp")
    # "#ifdef USE_VULKAN_API" must keep its name (it ends in _API like export macros).
    assert sym(f, "vulkan_only").qualname == "at::native::vulkan_only"
    assert [s.qualname for s in f["CppSymbol"] if s.name == "split_signature"] == ["at::native::split_signature"]
    after = sym(f, "after_split")
    assert (after.qualname, after.line) == ("at::native::after_split", 18)
    assert [c.callee for c in calls_of(f, after)] == ["after_helper"]


# ---------------------------------------------------------------- robustness


@pytest.mark.parametrize("relpath", ["a.cpp", "a.cu", "a.mm", "a.h"])
def test_empty_and_odd_input(relpath):
    assert all(v == [] for v in walk_facts(relpath, b"").values())
    f = walk_facts(relpath, b"\xff\xfe\x00 void f() { g(); } \x80\x81 /* unterminated")
    check_refs(f)
    assert [c.callee for c in f["CppCall"]] == ["g"]


def test_non_utf8_text_is_kept_readable():
    f = named(extract_cpp("a.cpp", 'void caf\u00e9_user() {\n  run("\u00e9t\u00e9");\n}\n'.encode() + b"\xff\n"))
    assert [c.callee for c in f["CppCall"]] == ["run"]


def test_deep_nesting_and_huge_input():
    deep = b"void f() { int x = " + b"(" * 3000 + b"1" + b")" * 3000 + b"; g(); }\n"
    f = walk_facts("deep.cpp", deep)
    assert [c.callee for c in f["CppCall"]] == ["g"]
    blocks = b"void h() {" + b"{" * 2000 + b"k();" + b"}" * 2000 + b"}\n"
    assert [c.callee for c in walk_facts("b.cpp", blocks)["CppCall"]] == ["k"]
    many = b"".join(b"int f%d(int x) { return g%d(x); }\n" % (i, i) for i in range(20000))
    f = named(extract_cpp("big.cpp", many))
    assert len(f["CppSymbol"]) == 20000 and len(f["CppCall"]) == 20000
    assert f["CppSymbol"][19999] == CppSymbol("f19999", "f19999", "(int x)", SymbolKind.FUNCTION, 20000, 20000,
                                              True, "", ret="int")


def test_recursive_and_self_referencing_macros_terminate():
    src = (b"#define A(x) B(x) void x##_a() {}\n#define B(x) A(x) void x##_b() {}\nA(foo)\n"
           b"#define SELF(x) SELF(x) int x() { return 1; }\nSELF(bar)\n")
    f = walk_facts("m.cpp", src)
    check_refs(f)
    assert "bar" in {s.name for s in f["CppSymbol"]}


def walk_facts(relpath: str, data: bytes) -> dict:
    """extract_cpp by the names these tests use (a walker bug raises and fails the test)."""
    return named(extract_cpp(relpath, data))


def test_comments_in_macro_arguments_do_not_swallow_the_expansion():
    src = (b"#define DISPATCH(NAME, ...) AT_DISPATCH_ALL_TYPES(t, NAME, __VA_ARGS__)\n"
           b"namespace at {\nvoid f(Tensor t) {\n  DISPATCH(\"f\", [&] {\n    // step 1: a comment\n"
           b"    first_step(t);\n    second_step(t); // trailing\n  });\n}\n}\nvoid after() { tail_call(); }\n")
    f = walk_facts("c.cpp", src)
    fn = sym(f, "f")
    assert {c.callee for c in calls_of(f, fn)} >= {"first_step", "second_step"}
    after = sym(f, "after")
    assert (after.qualname, after.line, [c.callee for c in calls_of(f, after)]) == ("after", 11, ["tail_call"])


def test_macros_defined_inside_a_function_with_block_comments_expand_where_used():
    # TensorTopK.cu: "#define RUN_T(...)" inside the function, with a /* comment */ on a continued line of its
    # body: tree-sitter ended the directive at the comment and read the rest of the body ("});") as code, which
    # closed the function early, so the RUN_T uses below fell outside it and their launches were lost.
    src = (b"namespace at::native {\nnamespace mb { void launch(int k) { gather<<<1, 1>>>(k); } }\n"
           b"namespace sb { void launch(int k) { other<<<1, 1>>>(k); } }\n"
           b"void launch_topk(int k, bool multi) {\n"
           b"#define RUN_K(FN) FN(k)\n"
           b"#define RUN_T(T)                   \\\n  DISPATCH(k, [&] {                  \\\n"
           b"    /* pick one launcher */          \\\n    int n = k;  if (multi) {         \\\n"
           b"      RUN_K(mb::launch);             \\\n    } else {                         \\\n"
           b"      RUN_K(sb::launch);             \\\n    }                                \\\n  });\n"
           b"  if (k > 0) {\n    RUN_T(int);\n  }\n#undef RUN_K\n}\nvoid after() { tail(); }\n}\n")
    f = walk_facts("aten/src/ATen/native/cuda/TopK.cu", src)
    fn = sym(f, "launch_topk")
    assert (fn.line, fn.end_line) == (4, 19)
    assert {(c.callee, c.qualifier, c.line) for c in calls_of(f, fn)} >= {("launch", "mb", 16), ("launch", "sb", 16)}
    assert [c.callee for c in calls_of(f, sym(f, "after"))] == ["tail"]


def test_a_call_a_macro_writes_several_times_at_one_line_is_one_fact():
    # TensorTopK.cu: RUN_DIM expands RUN_MB once per dimension case, each with the same launcher call.
    src = (b"void launch(int k);\n#define RUN(D) if (d == D) { launch(k); }\n"
           b"#define ALL() RUN(1) else RUN(2) else RUN(3)\n"
           b"void f(int d, int k) {\n  ALL();\n  launch(k); launch(k);\n}\n")
    f = walk_facts("aten/src/ATen/native/cuda/K.cu", src)
    assert [(c.callee, c.line) for c in calls_of(f, sym(f, "f"))] == [("launch", 5), ("launch", 6), ("launch", 6)]


def test_macro_parameters_continued_over_lines_are_substituted():
    # DepthwiseConv3d.cu: "#define DWCONV3D_BACKWARD_INPUT_DISPATCH_SPECIALIZATION(  \\" then "kt, kh, ...)": the
    # first parameter kept the backslash and was never replaced.
    src = (b"__global__ void kern(int n) {}\n#define LAUNCH(   \\\n    K, n)         \\\n  K<<<1, n>>>(n)\n"
           b"void f(int n) { LAUNCH(kern, n); }\n")
    f = walk_facts("aten/src/ATen/native/cuda/K.cu", src)
    assert [(c.callee, c.kind, c.line) for c in calls_of(f, sym(f, "f"))] == [("kern", "launch", 5)]


def test_object_like_macros_that_stand_for_statements_expand_where_used():
    # DepthwiseConv3d.cu: "#define DWCONV3D_FORWARD_DISPATCH_OTHERS { ... kernel<...><<<...>>>(...); }", used bare.
    src = (b"__global__ void kern(int n) {}\n#define N_THREADS 128\n#define OTHERS        \\\n"
           b"  {                           \\\n    kern<<<1, N_THREADS>>>(n);  \\\n  }\n"
           b"void f(int n) {\n  if (n) { g(N_THREADS); }\n  OTHERS\n}\n")
    f = walk_facts("aten/src/ATen/native/cuda/K.cu", src)
    assert [(c.callee, c.kind, c.line) for c in calls_of(f, sym(f, "f"))] == [("g", "call", 8), ("kern", "launch", 9)]


def test_macro_fan_out_expands_and_exponential_macros_are_cut_off():
    fan = b"#define A0(x) void x##_f() { g(); }\n" + b"".join(
        b"#define A%d(x) A%d(x##a) A%d(x##b)\n" % (i, i - 1, i - 1) for i in range(1, 7)) + b"A6(z)\n"
    f = walk_facts("fan.cpp", fan)
    assert len([s for s in f["CppSymbol"] if s.macro == "A6" and s.line == 8]) == 64
    assert "zabbaba_f" in {s.name for s in f["CppSymbol"]}
    bomb = b"#define A0(x) void x##_f() { g(); }\n" + b"".join(
        b"#define A%d(x) A%d(x##a) A%d(x##b) A%d(x##c) A%d(x##d)\n" % ((i,) + (i - 1,) * 4) for i in range(1, 12))
    f = walk_facts("bomb.cpp", bomb + b"A11(z)\nint tail() { return 1; }\n")
    assert ("tail", 14) in {(s.name, s.line) for s in f["CppSymbol"]}


@settings(max_examples=150, deadline=None)
@given(st.binary(max_size=400), st.sampled_from(["x.cpp", "x.cu", "x.mm", "x.h"]))
def test_never_raises_on_random_bytes(data, relpath):
    check_refs(walk_facts(relpath, data))


_CPPISH = st.lists(st.sampled_from([
    "namespace a {", "}", "{", "(", ")", "void f()", "int g(int x)", "#define M(x) void x() {}", "M(y)",
    "#if X", "#else", "#endif", "TORCH_IMPL_FUNC(z)(const Tensor& t)", "REGISTER_DISPATCH(s, &k);",
    "m.def(\"n\", &f);", "[obj msg:1]", "^{", "k<<<1, 2>>>(p);", ";", "\"str", "/*", "*/", "// c\n", "\n",
    "@autoreleasepool", "TORCH_API", "template <typename T>", "x = f(y);", "#define R(a, ...) R(__VA_ARGS__)",
    "R(1, 2)", "static PyMethodDef t[] = {{\"a\", b, 0, nullptr},",
]), max_size=60)


@settings(max_examples=200, deadline=None)
@given(_CPPISH, st.sampled_from(["x.cpp", "x.cu", "x.mm"]))
def test_never_raises_on_cpp_like_soup(tokens, relpath):
    f = walk_facts(relpath, " ".join(tokens).encode())
    check_refs(f)
    assert all(s.line >= 1 and s.end_line >= s.line for s in f["CppSymbol"])


# ---------------------------------------------------------------- the real tree

SOURCE = os.environ.get("TORCHTALK_TEST_SOURCE", "")
real = pytest.mark.skipif(not SOURCE or not os.path.isdir(SOURCE), reason="TORCHTALK_TEST_SOURCE not set")


def real_facts(relpath: str) -> dict:
    return named(extract_cpp(relpath, (Path(SOURCE) / relpath).read_bytes()))


@pytest.mark.integration
@real
def test_real_atan2_stub_registrations():
    found = set()
    for rel in ("aten/src/ATen/native/BinaryOps.h", "aten/src/ATen/native/BinaryOps.cpp",
                "aten/src/ATen/native/cpu/BinaryOpsKernel.cpp", "aten/src/ATen/native/cuda/BinaryGeometricKernels.cu"):
        for r in real_facts(rel)["CppRegistration"]:
            if r.name == "atan2_stub":
                found.add((rel.rsplit("/", 1)[-1], r.kind, r.target, r.key, r.line))
    assert found == {
        ("BinaryOps.h", "declare_dispatch", "structured_binary_fn", "at::native", 64),  # its namespace
        ("BinaryOps.cpp", "define_dispatch", "", "at::native", 384),
        ("BinaryOpsKernel.cpp", "register_dispatch", "atan2_kernel", "CPU", 1427),
        ("BinaryGeometricKernels.cu", "register_dispatch", "atan2_kernel_cuda", "CUDA", 36),
    }


@pytest.mark.integration
@real
def test_real_tanh_out_from_macro_and_its_stub():
    f = real_facts("aten/src/ATen/native/UnaryOps.cpp")
    s = sym(f, "tanh_out")
    assert (s.qualname, s.kind, s.line, s.macro) == (
        "at::native::structured_tanh_out::impl", "impl_func", 361, "CREATE_UNARY_TORCH_IMPL_FUNC")
    assert ("tanh_stub", 361) in {(c.callee, c.line) for c in calls_of(f, s)}
    cu = real_facts("aten/src/ATen/native/cuda/UnaryGeometricTanhKernel.cu")
    assert ("tanh_stub", "tanh_kernel_cuda", "CUDA", 56) in {
        (r.name, r.target, r.key, r.line) for r in regs(cu, "register_dispatch")}


@pytest.mark.integration
@real
def test_real_topk_launches_through_its_in_function_macros():
    f = real_facts("aten/src/ATen/native/cuda/TensorTopK.cu")
    s = sym(f, "launch_gather_topk_kernel")
    calls = {(c.callee, c.qualifier) for c in calls_of(f, s) if c.line in (897, 899)}  # RUN_T(uint32_t / uint64_t)
    assert {("launch", "mbtopk"), ("launch", "sbtopk"), ("should_use_multiblock", "")} <= calls


@pytest.mark.integration
@real
def test_real_index_select_cuda():
    f = real_facts("aten/src/ATen/native/cuda/Indexing.cu")
    s = sym(f, "index_select_cuda")
    assert (s.qualname, s.line) == ("at::native::index_select_cuda", 1641)
    callees = {(c.callee, c.qualifier) for c in calls_of(f, s)}
    assert ("empty", "at") in callees and ("index_select_out_cuda", "at::native") in callees
    assert not [c for c in calls_of(f, s) if c.callee == "index_select_out_cuda_impl"]
    k = sym(f, "indexSelectLargeIndex")
    assert (k.kind, k.line) == ("global_kernel", 1397)
    # The launches sit in a function-local macro (LARGE_INDEX) invoked with type arguments.
    impl = sym(f, "index_select_out_cuda_impl")
    assert "indexSelectLargeIndex" in {c.callee for c in calls_of(f, impl) if c.kind == "launch"}


@pytest.mark.integration
@real
def test_real_avg_pool2d_kernel_and_launch():
    f = real_facts("aten/src/ATen/native/cuda/AveragePool2d.cu")
    k = sym(f, "avg_pool2d_out_cuda_frame")
    assert (k.kind, k.line) == ("global_kernel", 33)
    launches = [c for c in f["CppCall"] if c.kind == "launch" and c.callee == "avg_pool2d_out_cuda_frame"]
    assert [c.line for c in launches] == [325]
    caller = f["CppSymbol"][launches[0].caller]
    assert (caller.name, caller.kind, caller.line) == ("avg_pool2d_out_cuda", "impl_func", 243)


@pytest.mark.integration
@real
def test_real_torch_methods_table():
    f = real_facts("torch/csrc/Module.cpp")
    assert ("set_num_threads", "THPModule_setNumThreads", "TorchMethods") in {
        (r.name, r.target, r.key) for r in regs(f, "pymethoddef")}
    assert len([r for r in regs(f, "pymethoddef") if r.key == "TorchMethods"]) > 100


@pytest.mark.integration
@real
def test_real_mps_objective_cpp():
    relu = sym(real_facts("aten/src/ATen/native/mps/operations/Activation.mm"), "relu_mps")
    assert (relu.qualname, relu.line) == ("at::native::relu_mps", 48)
    cs = sym(real_facts("aten/src/ATen/native/mps/operations/UnaryOps.mm"), "cumsum_out_mps")
    assert (cs.qualname, cs.kind, cs.line) == ("at::native::structured_cumsum_out_mps::impl", "impl_func", 478)
    pool = sym(real_facts("aten/src/ATen/native/mps/operations/Pooling.mm"), "avg_pool2d_out_mps")
    assert (pool.qualname, pool.line) == ("at::native::structured_avg_pool2d_out_mps::impl", 496)


def test_a_decltype_return_type_after_a_macro_is_not_part_of_the_name():
    """c10/util/C++17.h (1.13.1): behind a macro the file defines for itself, tree-sitter reads
    ``decltype(auto) apply(...)`` as the qualified name ``decltype(auto)::apply`` with a missing ``::``;
    the function is ``apply``, in its namespace."""
    code = (b"namespace c10 { namespace guts {\n#define CUDA_HOST_DEVICE C10_HOST_DEVICE\n"
            b"template <class F, class Tuple>\n"
            b"CUDA_HOST_DEVICE inline constexpr decltype(auto) apply(F&& f, Tuple&& t) {\n"
            b"  return std::apply(std::forward<F>(f), std::forward<Tuple>(t));\n}\n}}\n")
    syms = extract_cpp("c10/util/C++17.h", code)[CppSymbol]
    assert [(s.name, s.qualname, s.line) for s in syms] == [("apply", "c10::guts::apply", 4)]


def test_statement_macros_leave_the_binding_its_calls():
    """Note [Statement macros]: ``HANDLE_TH_ERRORS`` alone on its line before an ``if`` read as the type of a
    function ``if`` defined in the binding, whose block then held the call; the pair inside a block swallowed the
    next function."""
    code = (b"static PyObject * THPVariable_dim(PyObject* self, PyObject* args)\n{\n"
            b"  HANDLE_TH_ERRORS\n"
            b"  if (check_has_torch_function(self)) {\n"
            b"    return handle_torch_function(self, \"dim\", args);\n  }\n"
            b"  return THPUtils_packInt64(THPVariable_Unpack(self).dim());\n"
            b"  END_HANDLE_TH_ERRORS\n}\n\n"
            b"static PyObject * THPVariable_bool_scalar(PyObject* self, PyObject* args) {\n"
            b"  if (check_has_torch_function(self)) {\n    HANDLE_TH_ERRORS\n"
            b"    return handle_torch_function(self, \"__bool__\", args);\n    END_HANDLE_TH_ERRORS\n  }\n"
            b"  return THPVariable_is_nonzero(self, args);\n}\n\n"
            b"static PyObject * THPVariable___eq__(PyObject* self_, PyObject* args, PyObject* kwargs)\n{\n"
            b"  HANDLE_TH_ERRORS\n  return wrap(dispatch_eq(self_));\n  END_HANDLE_TH_ERRORS\n}\n"
            b"enum class Mode {\n  FIRST_MODE,\n  LAST_MODE\n};\n"
            b"void g() {\n  AT_DISPATCH_ALL_TYPES\n      (t, \"g\", [&] { h(); });\n}\n")
    f = named(extract_cpp("torch/csrc/autograd/python_variable_methods.cpp", code))
    assert spans(f) == [
        ("THPVariable_dim", 1, 9), ("THPVariable_bool_scalar", 11, 18), ("THPVariable___eq__", 20, 25),
        ("g", 30, 33)]
    dim = sym(f, "THPVariable_dim")
    assert {"check_has_torch_function", "handle_torch_function", "THPUtils_packInt64"} <= {
        c.callee for c in calls_of(f, dim)}
    assert "wrap" in {c.callee for c in calls_of(f, sym(f, "THPVariable___eq__"))}
    # a macro call whose arguments start on the next line is a call, not a statement macro
    assert "AT_DISPATCH_ALL_TYPES" in {c.callee for c in calls_of(f, sym(f, "g"))}


def test_a_dependent_temporary_argument_keeps_the_call():
    """``gpu_reduce_kernel<scalar_t, out_t, 2>(iter, ops, typename ops_t::acc_t{});`` (std/var's CUDA kernel) read as a
    function defined inside the one that holds it, and the launch was lost."""
    code = (b"namespace at::native {\ntemplate <typename scalar_t, typename out_t=scalar_t>\n"
            b"void std_var_kernel_impl(TensorIterator& iter, double correction, bool take_sqrt) {\n"
            b"  using ops_t = WelfordOps<scalar_t, accscalar_t, int32_t, thrust::pair<out_t, out_t>>;\n"
            b"  ops_t ops(static_cast<accscalar_t>(correction), take_sqrt);\n"
            b"  gpu_reduce_kernel<scalar_t, out_t, 2>(iter, ops, typename ops_t::acc_t{});\n}\n"
            b"template <typename T>\nvoid other(typename T::Params const& p) { use(p); }\n}\n")
    f = named(extract_cpp("aten/src/ATen/native/cuda/ReduceMomentKernel.cu", code))
    assert [(s.qualname, s.line) for s in f["CppSymbol"] if s.is_definition] == [
        ("at::native::std_var_kernel_impl", 3), ("at::native::other", 9)]
    impl = sym(f, "std_var_kernel_impl")
    assert ("gpu_reduce_kernel", 6) in {(c.callee, c.line) for c in calls_of(f, impl)}
    assert sym(f, "other").params == "(typename T::Params const& p)"


def test_objective_cpp_nested_message_receivers_and_fast_enumeration():
    """``[[[Cls alloc] initWith:x] autorelease]`` (a receiver two message sends deep) and ``for (T* x in coll)`` cost
    the rest of the function, and the functions after it were read as nested in it."""
    code = (b"namespace at::native::mps {\n"
            b"static void copy_cast_mps(at::Tensor& dst, id<MTLBuffer> buf) {\n"
            b"  MPSGraphTensorData* srcData = [[[MPSGraphTensorData alloc] initWithMTLBuffer:buf\n"
            b"                                                         shape:getMPSShape(dst)] autorelease];\n"
            b"  run(srcData);\n}\n"
            b"std::string shape_string(MPSShape* shape) {\n  std::string str;\n"
            b"  for (NSNumber* elem in shape) {\n    str += std::to_string(elem.unsignedLongValue);\n  }\n"
            b"  return str;\n}\n"
            b"void mps_copy_(at::Tensor& dst) { copy_cast_mps(dst, nil); }\n}\n")
    f = named(extract_cpp("aten/src/ATen/native/mps/operations/Copy.mm", code))
    assert spans(f) == [
        ("at::native::mps::copy_cast_mps", 2, 6), ("at::native::mps::shape_string", 7, 13),
        ("at::native::mps::mps_copy_", 14, 14)]
    assert {"getMPSShape", "run"} <= {c.callee for c in calls_of(f, sym(f, "copy_cast_mps"))}
    assert "to_string" in {c.callee for c in calls_of(f, sym(f, "shape_string"))}


@pytest.mark.integration
@real
def test_real_block_scope_misreads_are_gone():
    """Functions the files above define, read before as defined inside another function."""
    f = real_facts("aten/src/ATen/native/cuda/ReduceMomentKernel.cu")
    assert [c.kind for c in calls_of(f, sym(f, "std_var_kernel_impl")) if c.callee == "gpu_reduce_kernel"] == [
        "gpu_launch"]
    copy = real_facts("aten/src/ATen/native/mps/operations/Copy.mm")
    assert sym(copy, "mps_copy_").qualname == "at::native::mps::mps_copy_"
    init = real_facts("torch/csrc/autograd/init.cpp")
    assert "is_enabled" in {c.callee for c in calls_of(init, sym(init, "is_grad_enabled"))}
    assert not [s for s in init["CppSymbol"] if s.name == "if"]


def test_an_empty_last_macro_argument_keeps_the_class():
    """``PYBIND11_OVERRIDE(int, ProcessGroup, getRank, /* name */\n);``: the empty last argument lost the class around
    it, and its methods were read as defined in the first one. Strings keep their commas."""
    code = (b"namespace c10d {\nclass PyProcessGroup : public ProcessGroup {\n public:\n"
            b"  int getRank() const override {\n    PYBIND11_OVERRIDE(\n        int, /* Return type */\n"
            b"        ProcessGroup, /* Parent class */\n        getRank, /* Name of function in C++ */\n    );\n  }\n"
            b"  int getSize() const override {\n    TORCH_CHECK(ok(), \"shape (3, )\");\n    return size();\n  }\n"
            b"};\n}\n")
    f = named(extract_cpp("torch/csrc/distributed/c10d/PyProcessGroup.hpp", code))
    assert spans(f) == [
        ("c10d::PyProcessGroup::getRank", 4, 10), ("c10d::PyProcessGroup::getSize", 11, 14)]
    assert [r.pieces for r in f["RaiseSite"]] == [("shape (3, )",)]


def test_a_macro_standing_for_an_ifs_parentheses():
    """``if C10_LIKELY (cond) {`` (linalg_solve_triangular_out): the macro writes the parentheses; unread, the block's
    calls went to a callee ``if``."""
    code = (b"Tensor& solve(const Tensor& out, const Tensor& B) {\n  if C10_LIKELY (contiguous(out)) {\n"
            b"    out.copy_(B);\n  } else if C10_UNLIKELY (out.is_neg()) {\n    fix(out);\n  }\n  return out;\n}\n")
    f = named(extract_cpp("aten/src/ATen/native/BatchLinearAlgebra.cpp", code))
    callees = {(c.callee, c.line) for c in calls_of(f, sym(f, "solve"))}
    assert {("contiguous", 2), ("copy_", 3), ("is_neg", 4), ("fix", 5)} <= callees
    assert "if" not in {c for c, _ in callees}


def test_a_variable_made_from_a_call_is_a_call_though_the_grammar_reads_a_declaration():
    # Note [Calls read as declarations]: python_anomaly_mode.cpp's THPObjectPtr parent_node_(functionToPyObject(
    # parent_node)); is the most vexing parse; with a literal argument the grammar reads the call itself
    from torchtalk.extract.cpp import extract_cpp
    from torchtalk.model import CallKind, CallSite
    src = (b"namespace torch::autograd {\nvoid assign_parent(const Node& parent_node, Node* b) {\n"
           b"  THPObjectPtr parent_node_(functionToPyObject(parent_node));\n"
           b"  THPObjectPtr grads(python::wrap_variables(parent_node, b));\n"
           b"  THPObjectPtr tup(PyTuple_New(2));\n"
           b"  THPObjectPtr x(bar(parent_node, /*inplace=*/b)), y(baz(qux(b)));\n  Foo z(int(b));\n}\n}\n")
    sites = extract_cpp("torch/csrc/autograd/x.cpp", src)[CallSite]
    calls = [(c.callee, c.qualifier, c.line, c.nargs) for c in sites if c.kind is CallKind.CALL]
    assert calls == [("functionToPyObject", "", 3, 1), ("wrap_variables", "python", 4, 2), ("PyTuple_New", "", 5, 1),
                     ("bar", "", 6, 2), ("baz", "", 6, 1), ("qux", "", 6, 1)]  # every declarator, nested, no int()
    # each variable is constructed (Note [Constructions written as declarations]); Foo z(int(b)) declares a function
    assert [(c.callee, c.line, c.nargs) for c in sites if c.kind is CallKind.CONSTRUCT] == \
        [("THPObjectPtr", 3, 1), ("THPObjectPtr", 4, 1), ("THPObjectPtr", 5, 1), ("THPObjectPtr", 6, 1),
         ("THPObjectPtr", 6, 1)]


def test_numeric_limits_members_are_of_their_type():
    """TensorCompare.cpp's at::fill_(result, std::numeric_limits<double>::quiet_NaN()) passes a double: a Scalar,
    so fill_.Scalar (the argument's type was unknown, and error_origin said clamp reaches fill_.Tensor's check)."""
    src = (b"namespace at::native {\nvoid f(Tensor& r) {\n  at::fill_(r, std::numeric_limits<double>::quiet_NaN());\n"
           b"  g(std::numeric_limits<c10::Half>::max(), numeric_limits<float>::lowest());\n}\n}\n")
    calls = {c.callee: c.args for c in extract_cpp("aten/src/ATen/native/X.cpp", src)[CppCall]}
    assert calls["fill_"] == "t:Tensor;t:double" and calls["g"] == "t:c10::Half;t:float"
