"""trace / search / get_status on the fixture registry, through the same path the front-ends use."""

import re

import pytest

from torchtalk.errors import BadArgument
from torchtalk.query.results import NotFound
from torchtalk.tools import get_tool, run

from ..conftest import index_with


def call(ix, tool, **kw):
    return run(get_tool(tool), ix, **kw)


def test_trace_yaml_lists_every_overload_with_its_func_line(indexed):
    tree, ix = indexed
    _, text = call(ix, "trace", function_name="cumsum", focus="yaml")
    lines = (tree / "aten/src/ATen/native/native_functions.yaml").read_text().splitlines()
    for full in ("cumsum", "cumsum.out"):
        m = re.search(rf"^## {re.escape(full)}  aten/src/ATen/native/native_functions.yaml:(\d+)$", text, re.M)
        assert m, full
        assert lines[int(m.group(1)) - 1].startswith(f"- func: {full}(")
    assert re.search(r"^- CPU, CUDA: cumsum_out ", text, re.M)
    assert "structured_delegate cumsum.out" in text
    assert "cumprod" not in text  # another op, even though it shares the prefix


def test_trace_one_overload_by_full_name(indexed):
    _, ix = indexed
    res, text = call(ix, "trace", function_name="add.Tensor", focus="yaml")
    assert [t.op.full_name for t in res.ops] == ["add.Tensor"]


def test_dispatch_follows_structured_delegate_and_ufunc(indexed):
    _, ix = indexed
    res, text = call(ix, "trace", function_name="add.Tensor", focus="dispatch")
    keys = {k.entry.key: k.entry for k in res.ops[0].kernels}
    assert keys["SparseCPU"].kernel == "add_sparse" and keys["SparseCPU"].via == ""
    assert keys["CPU"].kernel == "ufunc_add_CPU" and "structured_delegate add.out" in keys["CPU"].via
    assert keys["CUDA"].kernel == "ufunc_add_CUDA" and keys["CUDA"].structured  # torchgen's name for it
    assert "ufunc_inner_loop" in keys["CUDA"].via


def test_dispatch_lists_a_stub_the_kernel_hands_to_a_helper(indexed):
    """TORCH_IMPL_FUNC(cumsum_out) hands cumsum_stub to impl_func_cum_ops, which calls it by its parameter's name
    (Note [Stub uses]): the kernel's stub and its CPU kernel are listed under it, said to be passed on."""
    tree, ix = indexed
    res, text = call(ix, "trace", function_name="cumsum.out", focus="dispatch")
    (kernel,) = [k for k in res.ops[0].kernels if k.entry.key == "CPU"]
    assert [s.call.dst.key for s in kernel.stubs] == ["cumsum_stub"], text
    line = next(n for n, t in enumerate((tree / "aten/src/ATen/native/ReduceOps.cpp").read_text().splitlines(), 1)
                if "cumsum_stub" in t and "DISPATCH" not in t)
    assert (f"DispatchStub cumsum_stub: called at aten/src/ATen/native/ReduceOps.cpp:{line} by "
            "TORCH_IMPL_FUNC(cumsum_out) (passed on)") in text  # its REF site (Note [References])
    assert "CPU: cumsum_cpu_kernel  (defined aten/src/ATen/native/cpu/CumKernels.cpp:3, registered" in text


def test_dispatch_without_entry_is_implicit_composite_with_explanation(indexed):
    _, ix = indexed
    res, text = call(ix, "trace", function_name="softmax.int", focus="dispatch")
    entry = res.ops[0].kernels[0].entry
    assert (entry.key, entry.kernel) == ("CompositeImplicitAutograd", "softmax")
    assert "CompositeImplicitAutograd: one kernel for every backend" in text


def test_full_trace_has_python_and_autograd_layers(indexed):
    _, ix = indexed
    _, text = call(ix, "trace", function_name="atan2")
    assert "Python: torch.atan2 (function), Tensor.atan2 (method)" in text
    assert re.search(r"Autograd: tools/autograd/derivatives.yaml:\d+", text)
    assert "atan2_backward(grad, self, other, grad_input_mask)" in text


def test_python_names_resolve_to_ops(indexed):
    _, ix = indexed
    for name, expected in (("torch.relu", "relu"), ("Tensor.index_select", "index_select"),
                           ("torch.linalg.solve", "linalg_solve"), ("torch._C._nn.linear", "linear"),
                           ("aten::add.Tensor", "add.Tensor"), ("torch.ops.aten.relu.default", "relu")):
        res, _ = call(ix, "trace", function_name=name, focus="yaml")
        assert [t.op.full_name for t in res.ops][:1] == [expected], name


def test_misspelt_name_is_not_found_with_suggestions_never_another_op(indexed):
    _, ix = indexed
    _, text = call(ix, "trace", function_name="sofmax")
    assert text.startswith("No op named 'sofmax'. Close matches: ")
    assert "_softmax" in text and "## " not in text


@pytest.mark.parametrize("kwargs, message", [
    ({"function_name": ""}, "function_name is empty"),
    ({"function_name": "   "}, "function_name is empty"),
    ({"function_name": "x" * 10_000}, "the limit is 500"),
    ({"function_name": "relu\x00"}, "control characters"),
    ({"function_name": "relu", "focus": "everything"}, "choose one of: yaml, dispatch, full"),
])
def test_trace_bad_arguments_name_the_valid_values(indexed, kwargs, message):
    _, ix = indexed
    with pytest.raises(BadArgument, match=re.escape(message)):
        call(ix, "trace", **kwargs)


def test_search_ranks_exact_prefix_substring_and_counts(indexed):
    _, ix = indexed
    res, text = call(ix, "search", query="relu")
    names = [h.name for h in res.hits]
    assert names[0] == "relu" and names.index("relu_") < len(names)
    assert text.splitlines()[0] == f"# search relu: showing {len(res.hits)} of {res.total}"
    assert all(h.match in ("exact", "prefix", "substring", "kernel") for h in res.hits)
    res, _ = call(ix, "search", query="cum", limit=1)
    assert len(res.hits) == 1 and res.total >= 4


def test_a_delegating_op_gets_the_structured_keys_and_dispatch_empty_is_no_kernel(tree):
    """Note [Delegated keys]: ge_.Tensor delegates to ge.Tensor_out, whose QuantizedCPU kernel is not structured:
    torchgen registers it for ge.Tensor_out alone. `dispatch: {}` is no table and no implicit composite kernel."""
    yaml = tree / "aten/src/ATen/native/native_functions.yaml"
    yaml.write_text(yaml.read_text() + (
        "\n- func: ge.Tensor_out(Tensor self, Tensor other, *, Tensor(a!) out) -> Tensor(a!)\n  structured: True\n"
        "  dispatch:\n    CPU, CUDA: ge_Tensor_out\n    QuantizedCPU: ge_out_quantized_cpu\n\n"
        "- func: ge_.Tensor(Tensor(a!) self, Tensor other) -> Tensor(a!)\n  structured_delegate: ge.Tensor_out\n\n"
        "- func: _jagged_dummy(Tensor any) -> Tensor\n  dispatch: {}\n"))
    ix = index_with(tree, {})
    try:
        res, _ = call(ix, "trace", function_name="ge_.Tensor", focus="dispatch")
        assert [(k.entry.key, k.entry.kernel) for k in res.ops[0].kernels] == [("CPU", "ge_Tensor_out"),
                                                                              ("CUDA", "ge_Tensor_out")]
        res, _ = call(ix, "trace", function_name="ge.Tensor_out", focus="dispatch")
        assert "QuantizedCPU" in {k.entry.key for k in res.ops[0].kernels}
        res, text = call(ix, "trace", function_name="_jagged_dummy")
        assert res.ops[0].kernels == [] and res.ops[0].op.dispatch_empty
        assert "Dispatch: `dispatch: {}` in native_functions.yaml: no kernel here and no implicit" in text
    finally:
        ix.close()


def test_overloads_one_call_may_be_are_one_line_that_says_so(tree):
    """at::empty({0}, opts): nothing the index knows tells empty.memory_format from empty.names, so trace lists both
    on one line, said to be one call, each with its kernels, not as two calls."""
    yaml = tree / "aten/src/ATen/native/native_functions.yaml"
    yaml.write_text(yaml.read_text() + (
        "\n- func: empty.names(int[] size, *, Dimname[]? names, ScalarType? dtype=None, Layout? layout=None, "
        "Device? device=None, bool? pin_memory=None, MemoryFormat? memory_format=None) -> Tensor\n"
        "  dispatch:\n    CompositeExplicitAutograd: empty_names\n\n"
        "- func: empty.memory_format(SymInt[] size, *, ScalarType? dtype=None, Layout? layout=None, Device? "
        "device=None, bool? pin_memory=None, MemoryFormat? memory_format=None) -> Tensor\n"
        "  dispatch:\n    CPU: empty_cpu\n\n- func: fresh(Tensor self) -> Tensor\n"))
    ix = index_with(tree, {"aten/src/ATen/native/Fresh.cpp": (
        "namespace at::native {\nTensor fresh(const Tensor& self) {\n"
        "  return at::empty({0}, opts_of(self));\n}\n}  // namespace at::native\n")})
    try:
        res, text = call(ix, "trace", function_name="fresh")
        (kernel,) = res.ops[0].kernels
        assert sorted(c.edge.dst.key for c in kernel.op_calls) == ["empty.memory_format", "empty.names"], text
        lines = text.splitlines()
        i = next(n for n, ln in enumerate(lines) if "(called at aten/src/ATen/native/Fresh.cpp:3" in ln)
        assert " | " in lines[i] and lines[i].endswith("; the call does not say which)"), text
        assert {lines[i + 1].split(" -> ")[0].strip(), lines[i + 2].split(" -> ")[0].strip()} == {
            "empty.names", "empty.memory_format"}
    finally:
        ix.close()


def test_a_function_of_the_callers_file_named_like_a_stub_is_that_function(tree):
    """PaddingKernel.cpp defines a static copy_stub helper and calls it: the nearer name, not the copy_ DispatchStub
    (whose callers it joined)."""
    ix = index_with(tree, {"aten/src/ATen/native/cpu/Pad.cpp": (
        "namespace at::native {\nnamespace {\nstatic void cumsum_stub(int* out) {\n}\n\n"
        "void pad_kernel(int* p) {\n  cumsum_stub(p);\n}\n}  // namespace\n}  // namespace at::native\n")})
    try:
        res, text = call(ix, "calls", function_name="pad_kernel")
        (sec,) = res.sections
        assert [(e.dst.label, e.dst.loc.path) for e in sec.calls] == [
            ("at::native::(anonymous)::cumsum_stub", "aten/src/ATen/native/cpu/Pad.cpp")], text
        res, _ = call(ix, "called_by", function_name="cumsum_stub")
        assert all(e.src.label != "at::native::(anonymous)::pad_kernel" for s in res.sections for e in s.callers)
    finally:
        ix.close()


@pytest.mark.parametrize("tool", ["impact", "called_by", "cuda_kernels", "calls"])
def test_a_stub_is_named_as_its_namespace_qualifies_it_not_as_a_function_of_that_name(tree, tool):
    """``at::native::atan2_stub`` is the DispatchStub BinaryOps.h declares in at::native (as ``atan2_stub`` is), not
    the helper of that name another file's unnamed namespace defines, which C++ names the same; a namespace the stub
    is not in names nothing."""
    ix = index_with(tree, {"aten/src/ATen/native/cpu/Pad.cpp": (
        "namespace at::native {\nnamespace {\nstatic void atan2_stub(int* out) {\n}\n\n"
        "void pad_kernel(int* p) {\n  atan2_stub(p);\n}\n}  // namespace\n}  // namespace at::native\n")})
    try:
        bare, bare_text = call(ix, tool, function_name="atan2_stub")
        assert "BinaryOps.h" in bare_text and "Pad.cpp:3" not in bare_text.split("\n")[0], bare_text
        for name in ("at::native::atan2_stub", "native::atan2_stub", " at::native::atan2_stub "):
            res, text = call(ix, tool, function_name=name)
            assert text.replace(name.strip(), "atan2_stub") == bare_text.replace(name.strip(), "atan2_stub"), text
        _res, text = call(ix, tool, function_name="torch::atan2_stub")
        first = text.split("\n")[0]
        assert first.startswith("No ") and "named 'torch::atan2_stub'" in first, text
        assert "atan2_stub" in text.split("Close matches:")[1].split("\n")[0], text
    finally:
        ix.close()


def test_search_an_op_by_its_name_is_exact_before_a_function_of_another_case(tree):
    """search("size"): the op size has only overloads (size.int, size.Dimname); they match it exactly by the op's
    name and come before a C++ function whose name only differs in case (HeapBlock::Size)."""
    ix = index_with(tree, {"aten/src/ATen/mps/MPSAllocator.h": (
        "namespace at::mps {\nstruct HeapBlock {\n  size_t Size() const { return size_; }\n  size_t size_;\n};\n}\n")})
    try:
        res, _ = call(ix, "search", query="size")
        names = [h.name for h in res.hits]
        assert [(h.name, h.match) for h in res.hits[:2]] == [("size.Dimname", "exact"), ("size.int", "exact")]
        assert names.index("at::mps::HeapBlock::Size") > 1
    finally:
        ix.close()


def test_search_lists_every_definition_of_a_name_and_never_loses_an_exact_one(tree, monkeypatch):
    """Note [Names that flood]: five definitions of `run` (the first PER_NAME rank with the other hits, the rest
    after them, all counted), found although more names contain "run" than are listed (an exact name is ranked
    among all of them, not among the first the trigram index returns); the names left out are named."""
    import torchtalk.query.search as search
    runs = "".join(f"struct K{i} {{\n  void run() {{}}\n}};\n" for i in range(5))
    others = "".join(f"void prefix_run_{i}() {{}}\nvoid {'x' * i}run_suffix() {{}}\n" for i in range(4))
    ix = index_with(tree, {"aten/src/ATen/native/Runs.cpp": f"namespace at::native {{\n{runs}{others}}}\n"})
    monkeypatch.setattr(search, "MAX_NAMES", 3)
    try:
        res, text = call(ix, "search", query="run", limit=500)
        runs_found = [h for h in res.hits if h.name.endswith("::run")]
        assert [h.name for h in runs_found] == [f"at::native::K{i}::run" for i in range(5)]
        assert all(h.match == "exact" for h in runs_found)
        assert res.total == len(res.hits)  # every definition listed is counted
        names = [h.name for h in res.hits]
        # the first three definitions of run, then the other exact hits' kinds, then its two more (still exact)
        assert names.index("at::native::K2::run") < names.index("at::native::K3::run")
        assert "more names contain 'run' (a longer query narrows them)" in text
        res, text = call(ix, "search", query="run", limit=2)
        assert text.splitlines()[0] == f"# search run: showing 2 of {res.total}; limit={res.total} shows all"
    finally:
        ix.close()


def test_an_op_takes_the_overload_of_its_kernel_that_takes_its_signature(tree):
    """Note [Kernel overloads]: three overloads of one kernel name, three ops naming it: each op's kernel is the
    overload torchgen's native signature takes, in trace and in the graph both ways (called_by names the op)."""
    with open(tree / "aten/src/ATen/native/native_functions.yaml", "a") as f:
        f.write("\n- func: ovl(Tensor self) -> Tensor\n  dispatch:\n    CPU: ovl_kernel\n"
                "\n- func: ovl.dim(Tensor self, int[1] dim) -> Tensor\n  dispatch:\n    CPU: ovl_kernel\n"
                "\n- func: ovl.dtype(Tensor self, *, ScalarType dtype) -> Tensor\n  dispatch:\n    CPU: ovl_kernel\n")
    path = "aten/src/ATen/native/Ovl.cpp"
    ix = index_with(tree, {"c10/util/ArrayRef.h": (  # the types the signatures name, as c10 declares them
        "namespace c10 {\ntemplate <typename T> class ArrayRef {};\nusing IntArrayRef = ArrayRef<int64_t>;\n"
        "enum class ScalarType : int8_t { Float };\n}\nnamespace at { using c10::IntArrayRef; "
        "using c10::ScalarType; }\n"), path: (
        "namespace at::native {\n"
        "Tensor ovl_kernel(const Tensor& self) { return self; }\n"
        "Tensor ovl_kernel(const Tensor& self, IntArrayRef dim) { return self; }\n"
        "Tensor ovl_kernel(const Tensor& self, ScalarType dtype) { return self; }\n"
        "}\n")})
    try:
        for op, line in (("ovl", 2), ("ovl.dim", 3), ("ovl.dtype", 4)):
            res, text = call(ix, "trace", function_name=op, focus="dispatch")
            [kernel] = [k for k in res.ops[0].kernels if k.entry.key == "CPU"]
            assert [str(d.loc) for d in kernel.definitions] == [f"{path}:{line}"], op
            res, _ = call(ix, "called_by", function_name=f"{path}:{line}")
            assert [e.src.key for e in res.sections[0].registrations if e.kind == "kernel"] == [op]
    finally:
        ix.close()


def test_search_backend_filter_is_case_insensitive_and_filters_entries(indexed):
    _, ix = indexed
    res, text = call(ix, "search", query="cumsum", backend="mps")
    assert {h.name for h in res.hits} == {"cumsum", "cumsum.out"}
    assert all(k.entry.key == "MPS" for h in res.hits for k in h.kernels)
    assert "cumsum_out_mps" in text and "CUDA" not in text.split("Note:")[0]


def test_search_with_a_backend_names_the_ops_that_match_without_its_kernel(indexed):
    """An op that exists but has no kernel for the backend is not 'no name contains it'."""
    _, ix = indexed
    res, text = call(ix, "search", query="linear", backend="MPS")
    assert not res.hits and "linear" in res.other_backends
    assert "No op, kernel" not in text and "No op with a MPS kernel matches it" in text
    assert "search('linear') shows them" in text


def test_search_finds_ops_by_kernel_name(indexed):
    _, ix = indexed
    res, _ = call(ix, "search", query="index_select_cuda")
    assert res.hits[0].name == "index_select" and res.hits[0].match == "kernel"


@pytest.mark.parametrize("kwargs, message", [
    ({"query": "relu", "limit": 0}, "from 1 to 500"),
    ({"query": "relu", "limit": 501}, "from 1 to 500"),
    ({"query": "relu", "limit": -3}, "from 1 to 500"),
    ({"query": "relu", "backend": "TPU"}, "valid keys: "),
    ({"query": ""}, "query is empty"),
])
def test_search_bad_arguments(indexed, kwargs, message):
    _, ix = indexed
    with pytest.raises(BadArgument, match=re.escape(message)):
        call(ix, "search", **kwargs)


@pytest.mark.parametrize("q", ["%", "_", "'; DROP TABLE op; --", "(a|b)*", '"', "\\", "ü", "*"])
def test_search_metacharacters_are_plain_text(indexed, q):
    _, ix = indexed
    res, _ = call(ix, "search", query=q)
    for h in getattr(res, "hits", []):  # or not found
        assert q.lower() in h.name.lower() or h.match == "kernel"
    assert ix.one("SELECT count(*) FROM op")[0] > 0


def test_status_reports_version_counts_and_freshness(indexed):
    tree, ix = indexed
    res, text = call(ix, "get_status")
    assert res.pytorch_version == "9.9.0a0" and res.fresh is True
    assert res.components["op registry"]["ops (overloads)"] == 29  # 28 entries and max.dim_max, autogen'd
    assert "PyTorch version: 9.9.0a0" in text and "; fresh" in text
    (tree / "aten/src/ATen/native/tags.yaml").write_text("- tag: core\n  desc: changed\n")
    res, text = call(ix, "get_status")
    assert res.fresh is False and "aten/src/ATen/native/tags.yaml" in res.changed_files


def test_twin_definitions_in_preprocessor_branches_say_which_build_compiles_each(tree):
    """A kernel defined once as a stand-in for builds without the library and once for real: trace names each
    one's branch (Note [Twin definitions]); an include guard is no branch, and a kernel defined once gets none."""
    yaml = tree / "aten/src/ATen/native/native_functions.yaml"
    yaml.write_text(yaml.read_text() + "\n- func: mkldnn_thing(Tensor self) -> Tensor\n  dispatch:\n"
                    "    MkldnnCPU: mkldnn_thing\n\n- func: mkldnn_once(Tensor self) -> Tensor\n  dispatch:\n"
                    "    MkldnnCPU: mkldnn_once\n")
    ix = index_with(tree, {"aten/src/ATen/native/mkldnn/Thing.cpp": (
        "#ifndef THING_GUARD\n#define THING_GUARD\n#if !AT_MKLDNN_ENABLED()\nnamespace at::native {\n"
        "Tensor mkldnn_thing(const at::Tensor& self) {\n  TORCH_CHECK(false, \"not compiled with MKLDNN\");\n}\n"
        "}\n#else  // AT_MKLDNN_ENABLED\nnamespace at::native {\n"
        "Tensor mkldnn_thing(const Tensor& self) {\n  return self;\n}\n"
        "Tensor mkldnn_once(const Tensor& self) {\n  return self;\n}\n}\n#endif\n#endif\n")})
    try:
        res, text = call(ix, "trace", function_name="mkldnn_thing", focus="dispatch")
        info = res.ops[0].kernels[0]
        assert sorted(info.branches.values()) == ["#else of #if !AT_MKLDNN_ENABLED()", "#if !AT_MKLDNN_ENABLED()"]
        assert "Thing.cpp:5  [only in #if !AT_MKLDNN_ENABLED()]" in text, text
        res, text = call(ix, "trace", function_name="mkldnn_once", focus="dispatch")
        assert not res.ops[0].kernels[0].branches and "only in" not in text
    finally:
        ix.close()


def test_default_names_the_overload_without_a_name(indexed):
    # torch.ops.aten.atan2.default is atan2, not the family (atan2.out first); add has no overload without a name,
    # so aten.add.default is no op (torch.ops raises): its overloads are offered
    _, ix = indexed
    res, _ = call(ix, "trace", function_name="torch.ops.aten.atan2.default", focus="yaml")
    assert [t.op.full_name for t in res.ops] == ["atan2"]
    _, text = call(ix, "trace", function_name="aten.add.default")
    assert text.startswith("No op named 'aten.add.default'. Close matches: add.Tensor, add.out"), text


def test_an_overload_in_another_case_or_one_its_op_lacks_offers_the_ops_overloads(indexed):
    # trace('add.tensor') offered to_padded_tensor, aten::softmax.nonexist offered ones: never the op meant
    _, ix = indexed
    for asked, first in (("add.tensor", "add.Tensor"), ("aten::add.nonexist", "add.Tensor")):
        res, text = call(ix, "trace", function_name=asked)
        assert isinstance(res, NotFound) and res.suggestions[:2] == [first, "add.out"], text


def test_the_cpp_functions_torchgen_writes_for_an_op_are_that_op(indexed):
    # trace("at::asin") was "No op named" while aten::asin was the op: C++ code calls an op as at::X, at::X_out,
    # at::_ops::S::call or at::<key>::X (Note [Op call spellings]), and each says how it reaches the kernel
    _, ix = indexed
    for asked, first, how in (("at::atan2", "atan2", "it calls the dispatcher"),
                              ("at::atan2_out", "atan2.out", "it calls the dispatcher"),
                              ("at::_ops::add_Tensor::call", "add.Tensor", "it calls the dispatcher"),
                              ("at::cpu::atan2", "atan2", "cpu kernel: it calls that kernel, not the dispatcher")):
        res, text = call(ix, "trace", function_name=asked, focus="yaml")
        assert [t.op.full_name for t in res.ops][:1] == [first], (asked, text)
        assert how in text.splitlines()[1], (asked, text)
    res, _ = call(ix, "trace", function_name="at::native::atan2")  # a kernel's namespace names no op
    assert isinstance(res, NotFound)


def test_the_cpp_function_of_a_key_is_that_of_the_overloads_with_a_kernel_for_it(tree):
    # trace("at::cuda::add") traced add.Scalar too, which has no CUDA kernel: torchgen writes no at::cuda:: for it
    with open(tree / "aten/src/ATen/native/native_functions.yaml", "a") as f:
        f.write("\n- func: add.Scalar(Tensor self, Scalar other, Scalar alpha=1) -> Tensor\n  variants: function\n"
                "  dispatch:\n    CompositeExplicitAutograd: add\n")
    ix = index_with(tree, {})
    try:
        res, text = call(ix, "trace", function_name="at::cuda::add", focus="yaml")
        assert [t.op.full_name for t in res.ops] == ["add.Tensor"], text
        res, text = call(ix, "trace", function_name="at::compositeexplicitautograd::add", focus="yaml")
        assert [t.op.full_name for t in res.ops] == ["add.Scalar"], text
    finally:
        ix.close()


def test_a_name_in_another_case_is_offered_the_op_it_spells(indexed):
    # trace("ADD") had "No close matches": names compared as written, and ops are lower-case
    _, ix = indexed
    for asked in ("ADD", "torch.ATAN2"):
        res, text = call(ix, "trace", function_name=asked)
        assert isinstance(res, NotFound) and res.suggestions[:1] == [asked.split(".")[-1].lower()], text
