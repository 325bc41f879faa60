"""Type-aware C++ call resolution on the fixture tree: each rule of C++ name lookup and overload choice
TorchTalk follows (graph/resolve.py), asserted through the `calls` / `called_by` / `impact` tools.

The expectations are written in the fixture sources as annotations (tests/annotations.py): under each
call, what it resolves to, and under each definition, its name. The annotated files (tests/fixtures/tree)
mirror the real cases:

- a using-declaration: ATen/WrapDimUtils.h's `using c10::maybe_wrap_dim;` brings c10's (int64_t, int64_t)
  overload into namespace at (native/TensorShape.cpp's wrap_last_dim), and where an argument's type is
  unknown (`tensor->dim()`: the fixture does not define TensorImpl) every two-argument overload is a candidate;
- internal linkage: native/Sorting.cpp's static checkSameDevice and its anonymous-namespace fill_sorted are
  seen from Sorting.cpp only (TensorShape.cpp's cat_check gets LinearAlgebraUtils.h's and leaves fill_sorted
  unresolved);
- a receiver's type from a parameter, a local, a construction, a chain on a temporary (each call's type
  from the previous call's declared return type), `auto` and a data member (ATen/TensorIterator.h); a
  deleted overload is never a candidate;
- overloads by arity and by a known argument type, and an undecided call listing every candidate;
- header-only accessors (ATen/core/TensorBase.h) are calls, while `acc.copy_(...)`,
  `tensors[1].unsqueeze(0)` are op methods though neither receiver is named like a tensor;
- a test-only header (ATen/test/vec_test_all_types.h): its at::rsqrt fits `rsqrt(first, 2)` better than
  the op does, but library code never calls into it; a test does.
"""

from __future__ import annotations

import shutil
from dataclasses import replace

import pytest

from torchtalk.index.indexer import refresh
from torchtalk.source.tree import find_source
from torchtalk.store.reader import Index
from torchtalk.tools import get_tool, run

from ..annotations import Expectations, Fact, facts, read_tree
from ..conftest import FIXTURE_TREE, indexed_with

TREE = Expectations(read_tree(FIXTURE_TREE))


def calls(ix, name: str):
    res, text = run(get_tool("calls"), ix, function_name=name)
    assert len(res.sections) >= 1, text
    return res.sections[0], text


def found(sec) -> set[Fact]:
    """A `calls` section's edges: resolved calls, op calls and unresolved names."""
    return facts([*sec.calls, *sec.ops, *sec.unresolved])


def mismatches(ix, expectations: Expectations) -> dict[str, dict[str, list]]:
    """Per annotated function (every function holding an annotated call), what its annotations expect and
    `calls` does not give ("missing"), and what `calls` gives that no annotation says ("unexpected")."""
    by_function: dict[str, tuple[object, set]] = {}
    for a in expectations.uses():
        sec, _ = calls(ix, a.where)  # path:line of a call names the function around it
        by_function.setdefault(f"{sec.symbol.qualname} ({sec.symbol.loc})", (sec, set()))[1].add(
            expectations.expected(a))
    out = {}
    for name, (sec, expected) in by_function.items():
        got = found(sec)
        if got != expected:
            out[name] = {"missing": sorted(expected - got), "unexpected": sorted(got - expected)}
    return out


def test_every_annotated_call_resolves_as_its_annotation_says(indexed):
    _, ix = indexed
    assert len({a.where for a in TREE.uses()}) >= 20  # the annotations are read (a typo in the syntax raises)
    assert mismatches(ix, TREE) == {}


def test_a_wrong_annotation_fails(indexed):
    _, ix = indexed
    # combine(k) is the one-parameter overload: say it is the (Tensor, int64_t) one instead
    wrong = [a if not (a.kind == "calls" and a.target == "at::native::combine" and a.tag == "one")
             else replace(a, tag="tensor") for a in TREE.all]
    bad = mismatches(ix, Expectations(wrong))
    (function,) = bad
    assert function.startswith("at::native::combine_calls (aten/src/ATen/native/TensorShape.cpp:")
    (missing,), (unexpected,) = bad[function].values()
    assert missing[5] == TREE.where("at::native::combine", "tensor")
    assert unexpected[5] == TREE.where("at::native::combine", "one")


def test_an_undecided_call_says_so(indexed):
    _, ix = indexed
    _, text = calls(ix, "at::native::combine_calls")
    assert "+1 candidates: the call does not say which" in text


def test_path_line_picks_one_of_several_definitions_of_a_name(indexed):
    _, ix = indexed
    static, header = TREE.where("at::native::checkSameDevice", "static"), TREE.where(
        "at::native::checkSameDevice", "header")
    res, text = run(get_tool("calls"), ix, function_name="checkSameDevice")
    assert len(res.sections) == 2 and "'checkSameDevice' names 2 functions:" in text
    res, _ = run(get_tool("calls"), ix, function_name=static)
    assert len(res.sections) == 1 and str(res.sections[0].symbol.loc) == static and res.ambiguity is None
    res, _ = run(get_tool("called_by"), ix, function_name=static)
    assert [e.src.label for e in res.sections[0].callers] == ["at::native::sort_check"]
    res, _ = run(get_tool("called_by"), ix, function_name=header)
    assert [e.src.label for e in res.sections[0].callers] == ["at::native::cat_check"]
    res, text = run(get_tool("impact"), ix, function_name=header)
    assert "cat_check" in text and "sort_check" not in text


def test_token_pasted_names_resolve_to_the_macro_use(indexed):
    tree, ix = indexed
    # TensorFactories-style: a same-file pasting macro handed to an X-macro of another header
    (tree / "aten/src/ATen/native/TensorFactories.cpp").write_text(
        "#include <ATen/native/TensorFactories.h>\n"
        "namespace at::native {\n"
        "#define DEFINE_CAST_OP(_1, n)                       \\\n"
        "  Tensor _cast_##n(const Tensor& self, bool non_blocking) { \\\n"
        "    return self;                                   \\\n"
        "  }\n"
        "AT_FORALL_SCALAR_TYPES(DEFINE_CAST_OP)\n"
        "#undef DEFINE_CAST_OP\n"
        "Tensor to_byte(const Tensor& self) {\n"
        "  return _cast_Byte(self, false);\n"
        "}\n"
        "Tensor to_wide(const Tensor& self) {\n"
        "  return widen(self, false);\n"
        "}\n"
        "}  // namespace at::native\n")
    refresh(find_source(tree), workers=1, codegen=False)
    ix2 = Index(find_source(tree).index_path, find_source(tree).root)
    try:
        sec, _ = calls(ix2, "at::native::to_byte")
        # the macro's use (line 7 of the source above), for the call on line 10
        path = "aten/src/ATen/native/TensorFactories.cpp"
        assert found(sec) == {(path, 10, "_cast_Byte", "calls", "at::native::_cast_##n##", f"{path}:7", "")}
        # only the parameter is any text: 'widen' ends like the pattern's parameter 'n' but lacks '_cast_'
        sec, _ = calls(ix2, "at::native::to_wide")
        assert found(sec) == {(path, 13, "widen", "unresolved", "widen", "", "")}
    finally:
        ix2.close()
    # the ops whose kernel the pattern makes: trace names its definition, and called_by of it names the ops
    with open(tree / "aten/src/ATen/native/native_functions.yaml", "a") as f:
        f.write("\n- func: _cast_Byte(Tensor self, bool non_blocking=False) -> Tensor\n"
                "\n- func: _cast_Char(Tensor self, bool non_blocking=False) -> Tensor\n")
    refresh(find_source(tree), workers=1, codegen=False)
    ix2 = Index(find_source(tree).index_path, find_source(tree).root)
    try:
        res, _ = run(get_tool("trace"), ix2, function_name="_cast_Byte", focus="dispatch")
        assert [str(d.loc) for k in res.ops[0].kernels for d in k.definitions] == [f"{path}:7"]
        res, _ = run(get_tool("called_by"), ix2, function_name=f"{path}:7")
        assert sorted(e.src.key for e in res.sections[0].registrations if e.kind == "kernel") == [
            "_cast_Byte", "_cast_Char"]
    finally:
        ix2.close()


def test_callers_through_a_namespace_that_imports_the_function(tree):
    """Note [Qualified through another namespace]: what calls lists, called_by lists too, for a site that names
    the function through a namespace importing it (by using-declaration or using-directive), or its class."""
    from ..conftest import index_with
    ix = index_with(tree, {
        "c10/util/Imported.h": ("namespace c10 {\ninline void declared_f() {}\ninline void directed_g() {}\n}\n"
                                "namespace at {\nusing c10::declared_f;\n}\n"
                                "namespace at::detail {\nusing namespace c10;\n}\n"),
        "aten/src/ATen/native/Importer.cpp": ("#include <c10/util/Imported.h>\nnamespace at::native {\n"
                                              "void user() {\n  at::declared_f();\n  at::detail::directed_g();\n"
                                              "}\n}\n")})
    try:
        path = "aten/src/ATen/native/Importer.cpp"
        for callee, line in (("c10::declared_f", 4), ("c10::directed_g", 5)):
            res, _ = run(get_tool("calls"), ix, function_name="at::native::user")
            assert any(e.dst.label == callee and e.site.line == line for e in res.sections[0].calls), callee
            res, _ = run(get_tool("called_by"), ix, function_name=callee)
            assert [(e.src.label, str(e.site)) for e in res.sections[0].callers] == [
                ("at::native::user", f"{path}:{line}")], callee
    finally:
        ix.close()


def test_a_qualifier_found_through_a_using_directive(tree):
    """A qualified call's first component is looked up like any name, in the namespaces the scope's using-directives
    nominate too: `python::PythonEngine::get_python_engine()` at file scope after `using namespace torch::autograd;`
    (torch/csrc/autograd/python_engine.cpp) is torch::autograd::python's; called_by agrees."""
    from ..conftest import index_with
    ix = index_with(tree, {
        "torch/csrc/autograd/engine_like.cpp": (
            "namespace torch::autograd::python {\nstruct PyEngine {\n  static int get_engine();\n};\n"
            "int PyEngine::get_engine() { return 0; }\n}\n"
            "using namespace torch::autograd;\n"
            "int run_it() {\n  return python::PyEngine::get_engine();\n}\n")})
    try:
        res, _ = run(get_tool("calls"), ix, function_name="run_it")
        assert [(e.dst.label, e.site.line) for e in res.sections[0].calls] == \
            [("torch::autograd::python::PyEngine::get_engine", 9)]
        res, _ = run(get_tool("called_by"), ix, function_name="torch::autograd::python::PyEngine::get_engine")
        assert [(e.src.label, str(e.site)) for e in res.sections[0].callers] == \
            [("run_it", "torch/csrc/autograd/engine_like.cpp:9")]
    finally:
        ix.close()


def test_a_using_directive_nominates_the_unnamed_namespace_in_its_namespace_too(tree):
    """DilatedMaxPool2d.cpp's TORCH_META_FUNC(max_pool2d_with_indices) is in at::meta under ``using namespace
    at::native;`` and calls Pool.h's at::native::(anonymous)::pooling_output_shape<int64_t>(...): unresolved, so
    affected by a Pool.h change missed max_pool2d_with_indices (and called_by listed 49 callers, not this one)."""
    with indexed_with(tree, {
        "aten/src/ATen/native/PoolLike.h": (
            "namespace at::native {\nnamespace {\ntemplate <typename T>\ninline T out_shape(T size, T k) {\n"
            "  return size - k;\n}\n}  // namespace\n}  // namespace at::native\n"),
        "aten/src/ATen/native/PoolLike.cpp": (
            "#include <ATen/native/PoolLike.h>\nnamespace at::meta {\nusing namespace at::native;\n"
            "int64_t meta_shape(int64_t s) {\n  return out_shape<int64_t>(s, 2);\n}\n}\n")}) as ix:
        res, _ = run(get_tool("calls"), ix, function_name="at::meta::meta_shape")
        assert [(e.dst.label, e.site.line) for e in res.sections[0].calls] == \
            [("at::native::(anonymous)::out_shape", 5)]
        res, _ = run(get_tool("called_by"), ix, function_name="at::native::(anonymous)::out_shape")
        assert [e.src.label for e in res.sections[0].callers] == ["at::meta::meta_shape"]


def test_a_name_of_an_unnamed_namespace_nested_in_another_is_a_member_of_the_enclosing_namespace(tree):
    """The generated Register*.cpp define their wrappers two unnamed namespaces deep (at::(anonymous)::(anonymous)::
    wrapper_CPU_add) and at::cpu::add calls them unqualified: every such call was left unresolved."""
    from ..conftest import index_with
    ix = index_with(tree, {"aten/src/ATen/RegisterThing.cpp": (
        "namespace at {\nnamespace {\nnamespace {\nint wrapper_CPU_thing(int x) { return x; }\n}  // namespace\n"
        "}  // namespace\nnamespace cpu {\nint thing(int x) {\n  return wrapper_CPU_thing(x);\n}\n}\n}\n")})
    try:
        res, _ = run(get_tool("calls"), ix, function_name="at::cpu::thing")
        assert [(e.dst.label, e.site.line) for e in res.sections[0].calls] == \
            [("at::(anonymous)::(anonymous)::wrapper_CPU_thing", 9)]
    finally:
        ix.close()


TYPES_TREE = FIXTURE_TREE.parent / "tree_types"


@pytest.fixture
def typed(tree):
    """The fixture tree with tests/fixtures/tree_types over it: enums, namespace constants, using-directives that
    chain (torch -> at -> c10), a class template with a specialization, a function of a codegen template."""
    from ..conftest import _reindexed
    shutil.copytree(TYPES_TREE, tree, dirs_exist_ok=True)
    ix = _reindexed(tree)
    yield ix
    ix.close()


def test_values_and_enums_type_the_arguments_that_pick_an_overload(typed):
    """An enum is a type (``ScalarType st``, ``ScalarType local{}``), so is a namespace's constant (``kLong``,
    ``at::kFloat`` through ``namespace at { using namespace c10; }``), an enum's value (``ScalarType::Long``) and
    ``optional<ScalarType>`` (not ``optional<TypeMeta>``): each ``options.dtype(x)`` picks the ScalarType
    overload, where before the two were listed as candidates; ``toString(st)`` picks ``toString(ScalarType)``.
    Using-directives chain: ``ScalarType`` written in torch::autograd is c10's (torch -> at -> c10). A function
    of a codegen template that no other file has (templates/TensorBody.h's ``borrow_from_optional_tensor``) is
    a candidate, and fits ``optional<Tensor>`` better than TensorBase's. ``options.dtype()`` is ``dtype() const``,
    not ``template <typename T> dtype()`` (nothing to deduce T from), ``options.data_ptr<float>()`` (also written
    ``options.template data_ptr<float>()``) is the template, ``options.data_ptr()`` the other, and
    ``list.size()`` is List<T>::size defined out of its class template (one function with its in-class
    declaration, though written under a template). An alias template binds its arguments: ``StorePtr`` is
    ``NodePtr<Store>``, ``std::shared_ptr<Store>``, so ``v->base_handle()`` is Store's. A function handed to a
    function template as its template argument (``repeat_common<int64_t, compute_cuda<int64_t>>(...)``, Repeat.h's
    ``void compute(...)`` parameter) is called by the call that hands it (how: handed)."""
    expectations = Expectations(read_tree(TYPES_TREE))
    assert len({a.where for a in expectations.uses()}) == 26
    assert mismatches(typed, expectations) == {}


DIRECTIVE_FILES = ("aten/src/ATen/native/SobolEngineOps.cpp", "aten/src/ATen/native/SobolEngineOpsUtils.h",
                   "aten/src/ATen/native/mps/OperationUtils.h", "aten/src/ATen/native/mps/operations/UnaryOps.mm",
                   "torch/csrc/api/src/nn/detail_users.cpp")


def test_a_using_directive_names_its_namespace_from_its_scope_outward(typed):
    """Note [Using-directive targets]: SobolEngineOps.cpp's ``namespace at::native { using namespace sobol_utils; }``
    nominates at::native::sobol_utils, so ``cdot_pow2(...)`` and ``bitsubseq(...)`` resolve (they were unresolved:
    the name was taken as ::sobol_utils); ``using namespace mps;`` in a function of at::native is at::native::mps
    though at::mps exists; ``using namespace detail;`` in torch::nn is torch::nn::detail, ``using namespace
    ::detail;`` the global one. called_by agrees."""
    expectations = Expectations(a for a in read_tree(TYPES_TREE) if a.path in DIRECTIVE_FILES)
    assert len({a.where for a in expectations.uses()}) == 6
    assert mismatches(typed, expectations) == {}
    helper = "at::native::sobol_utils::cdot_pow2"
    res, text = run(get_tool("called_by"), typed, function_name=helper)
    assert [(e.src.label, str(e.site)) for e in res.sections[0].callers] == [
        ("at::native::_sobol_engine_scramble_bits", expectations.site("calls", helper))], text


def test_a_class_templates_own_member_comes_before_a_specializations(typed):
    """``Vectorized<float>::store`` is listed with both definitions (the primary template's, compiled for the
    default CPU capability, and the AVX2 specialization's, compiled for AVX2 only): the primary's first."""
    sec, text = calls(typed, "at::native::CPU_CAPABILITY::store_row")
    assert [(e.dst.loc.path, e.how.value) for e in sec.calls] == [
        ("aten/src/ATen/cpu/vec/vec_base.h", "candidate"),
        ("aten/src/ATen/cpu/vec/vec256/vec256_float.h", "candidate")], text


def test_a_function_handed_as_a_template_argument_has_that_call_as_its_caller_and_its_kernels_are_reached(typed):
    """Note [Functions as template arguments]: ``called_by(compute_cuda)`` names the call handing it to
    ``repeat_common`` (the call site names only the template), and the GPU walk from the function making that call
    reaches the kernel ``compute_cuda`` launches. Before, ``compute_cuda`` had no callers and the walk found no
    kernel (Repeat.h's ``compute(data, n)`` names no function)."""
    handing = Expectations(read_tree(TYPES_TREE)).site("calls", "compute_cuda")
    res, text = run(get_tool("called_by"), typed, function_name="compute_cuda")
    assert [(e.src.label, str(e.site), e.how.value, e.written) for e in res.sections[0].callers] == [
        ("at::native::repeat_cuda", handing, "handed", "compute_cuda")], text
    res, text = run(get_tool("cuda_kernels"), typed, function_name="at::native::repeat_cuda")
    assert "__global__ compute_cuda_kernel  aten/src/ATen/native/cuda/Repeat.cu:4" in text, text


def test_a_method_called_on_what_a_smart_pointer_factory_made(tree):
    """auto p = std::make_shared<T>(...); p->f(): the factory's result was untyped (636 such receivers in
    torch/csrc), so IntraNodeComm::rendezvous and GraphTask::init_to_execute had no callers."""
    with indexed_with(tree, {
        "torch/csrc/made.cpp": "namespace torch {\nstruct Foo {\n  void bar();\n};\nvoid Foo::bar() {}\n"
                               "void f() {\n  auto p = std::make_shared<Foo>(1);\n  p->bar();\n"
                               "  auto r = c10::make_intrusive<Foo>();\n  r->bar();\n"
                               "  auto u = std::make_unique<Foo>();\n  u->bar();\n}\n}\n",
        "c10/util/intrusive_ptr.h": "namespace c10 {\ntemplate <class TTarget>\nclass intrusive_ptr {\n public:\n"
                                    "  TTarget* operator->() const noexcept { return target_; }\n  TTarget* target_;\n"
                                    "};\ntemplate <class TTarget, class... Args>\n"
                                    "inline intrusive_ptr<TTarget> make_intrusive(Args&&... args);\n}\n"}) as ix:
        res, text = run(get_tool("called_by"), ix, function_name="torch::Foo::bar")
        assert [str(e.site) for e in res.sections[0].callers] == [
            "torch/csrc/made.cpp:8", "torch/csrc/made.cpp:10", "torch/csrc/made.cpp:12"], text


def test_a_body_of_macros_from_another_file_says_its_calls_are_not_listed(tree):
    # Adam::serialize's body is one macro of serialize.h: "No calls found in its body." read as "calls nothing"
    from torchtalk.tools import get_tool, run

    from ..conftest import indexed_with
    with indexed_with(tree, {
        "aten/src/ATen/native/CallMacro.h": "#define CALL_HELPER(x) helper(x)\n",
        "aten/src/ATen/native/UsesMacro.cpp": ('#include "CallMacro.h"\nnamespace at { namespace native {\n'
                                               "void uses_macro(int x) {\n  CALL_HELPER(x);\n}\n}}\n")}) as ix:
        _res, text = run(get_tool("calls"), ix, function_name="at::native::uses_macro")
        assert "No calls found in its body outside the macros it uses (below)." in text, text
        assert "Macros used, not expanded here (what their definitions call is not listed): CALL_HELPER" in text, text
