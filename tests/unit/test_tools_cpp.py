"""calls / called_by / impact / cuda_kernels / trace full on the fixture tree's C++, CUDA and ObjC++."""

import re

import pytest

from torchtalk.errors import BadArgument
from torchtalk.tools import get_tool, run

from ..conftest import index_with


def call(ix, tool, **kw):
    return run(get_tool(tool), ix, **kw)


def test_calls_answers_for_the_structured_kernel_and_names_the_other_candidate(indexed):
    _, ix = indexed
    res, text = call(ix, "calls", function_name="cumsum_out")
    # Both functions named cumsum_out are answered, each in its own section, the structured kernel first.
    first, other = res.sections
    assert first.symbol.display == "TORCH_IMPL_FUNC(cumsum_out)" and other.symbol.qualname == "at::native::cumsum_out"
    assert "'cumsum_out' names 2 functions:" in text and "Each of the first 2 is answered" in text
    assert [e.dst.label for e in first.calls] == ["at::native::impl_func_cum_ops"]
    # The stub is only passed on, to impl_func_cum_ops, which calls it (Note [Stub uses]): its kernels belong one level
    # deeper, where trace lists them under the kernel.
    assert first.stubs == [] and "cumsum_cpu_kernel" not in text.split("# calls of at::native::cumsum_out")[0]
    res, _ = call(ix, "calls", function_name="at::native::cumsum_out")
    assert res.sections[0].symbol.kind == "function" and len(res.sections) == 1 and res.ambiguity is None


def test_kernel_named_as_the_yaml_names_it_resolves_in_every_cpp_tool(indexed):
    # native_functions.yaml says "CPU: softmax_cpu_out": the function is TORCH_IMPL_FUNC(softmax_cpu_out), whose C++
    # name is at::native::structured_softmax_cpu_out::impl; at::native::softmax_cpu_out names no function as such.
    _, ix = indexed
    for tool in ("calls", "called_by", "impact"):
        res, text = call(ix, tool, function_name="at::native::softmax_cpu_out")
        assert [s.symbol.display for s in res.sections] == ["TORCH_IMPL_FUNC(softmax_cpu_out)"], (tool, text)
    res, _ = call(ix, "called_by", function_name="at::native::cumsum_out_mps")
    assert [s.symbol.display for s in res.sections] == ["TORCH_IMPL_FUNC(cumsum_out_mps)"]
    assert {e.src.key for e in res.sections[0].registrations} >= {"cumsum.out"}
    # A name that is neither a function nor a YAML kernel stays not found.
    res, text = call(ix, "calls", function_name="at::native::softmax_cpu_outt")
    assert res.what == "C++ function or DispatchStub" and "softmax_cpu_out" in text


def test_calls_resolves_qualified_and_marks_ops_and_launches(indexed):
    _, ix = indexed
    res, text = call(ix, "calls", function_name="index_select_cuda")
    assert [e.dst.label for e in res.sections[0].calls] == ["at::native::index_select_out_cuda"]
    assert "index_select_out_cuda_impl" not in text and "indexSelect" not in text
    res, text = call(ix, "calls", function_name="index_select_out_cuda_impl")
    launched = sorted(e.dst.label.split("::")[-1] for e in res.sections[0].launches)
    assert launched == ["indexSelectLargeIndex", "indexSelectSmallIndex"]
    assert re.search(r"indexSelectSmallIndex<<<1, 128, 0, stream>>>  "
                     r"__global__ aten/src/ATen/native/cuda/Indexing.cu:7", text)


def test_calls_through_the_dispatcher_and_stubs(indexed):
    _, ix = indexed
    res, text = call(ix, "calls", function_name="index_select_backward_helper")
    assert [(e.note, e.dst.key) for e in res.sections[0].ops] == [("Tensor method", "index_select")]
    assert "grad.index_select" not in {e.dst.label for e in res.sections[0].unresolved}
    res, text = call(ix, "calls", function_name="TORCH_IMPL_FUNC(atan2_out)")
    (stub,) = res.sections[0].stubs
    assert stub.call.dst.key == "atan2_stub"
    assert {(k.key, k.dst.label.split("::")[-1]) for k in stub.kernels} == {("CPU", "atan2_kernel"),
                                                                         ("CUDA", "atan2_kernel_cuda")}


def test_comment_mentions_make_no_edge(indexed):
    _, ix = indexed
    res, _ = call(ix, "calls", function_name="relu_")
    sec = res.sections[0]
    assert "relu" not in {e.dst.label.split("::")[-1] for e in sec.calls + sec.unresolved}


def test_called_by_lists_call_sites_and_registrations(indexed):
    _, ix = indexed
    res, text = call(ix, "called_by", function_name="index_select_out_cuda")
    assert [e.src.label for e in res.sections[0].callers] == ["at::native::index_select_cuda"]
    assert "call at aten/src/ATen/native/cuda/Indexing.cu:43" in text
    assert "index_select.out dispatch CUDA: index_select_out_cuda" in text
    res, text = call(ix, "called_by", function_name="atan2_kernel")
    assert [(e.kind, e.src.key, e.key) for e in res.sections[0].registrations] == [("stub_kernel", "atan2_stub", "CPU")]
    assert "REGISTER_DISPATCH(atan2_stub, atan2_kernel) for CPU" in text
    res, text = call(ix, "called_by", function_name="THPModule_setNumThreads")
    assert "Python torch._C.set_num_threads (pymethoddef)  torch/csrc/Module.cpp:" in text


def test_a_method_call_whose_receiver_is_spelled_like_a_scope_of_the_method_is_one_caller(tree):
    # `Impl.run()` on a parameter named like its class: a method call (qualifier "Impl", the receiver's text)
    # whose qualifier is also one the method's scope allows. The callers of a method take the sites with an
    # allowed qualifier, then every other: this site was in both and listed twice.
    ix = index_with(tree, {"aten/src/ATen/native/Receiver.cpp": (
        "namespace at { namespace native {\n"
        "struct Impl { int run() const; };\n"
        "int Impl::run() const { return 0; }\n"
        "int run_it(const Impl& Impl) { return Impl.run(); }\n"
        "}}\n")})
    res, _ = call(ix, "called_by", function_name="at::native::Impl::run")
    assert [(e.src.label, e.site.line) for e in res.sections[0].callers] == [("at::native::run_it", 4)]
    ix.close()


def test_impact_crosses_dispatcher_and_reaches_python(indexed):
    _, ix = indexed
    res, text = call(ix, "impact", function_name="impl_func_cum_ops", depth=2)
    sec = res.sections[0]
    assert {e.src.label for e in sec.levels[0].callers} == {"TORCH_IMPL_FUNC(cumsum_out)",
                                                           "TORCH_IMPL_FUNC(cumprod_out)"}
    assert {op.key for op, _, _ in sec.ops} >= {"cumsum", "cumsum.out", "cumprod", "cumprod.out"}
    assert "torch.cumsum" in text and "Tensor.cumprod" in text
    res, text = call(ix, "impact", function_name="index_select_out_cpu_", depth=3)
    level1 = {e.src.label.split("::")[-1] for e in res.sections[0].levels[0].callers}
    assert level1 == {"index_select_cpu_", "index_select_quantized_cpu_"}
    assert "index_select_out_cpu_dim1_" not in text  # a callee, not a caller
    assert "take_along" in text and "(calls op index_select)" in text  # at::index_select -> the CPU kernel
    assert "torch.index_select" in text
    # each level's title counts its callers once; how many of them are shown is the cut line's to say (before:
    # "Level 2: showing 54 of 54 callers" over a list the budget then cut to 10)
    assert "\nLevel 1: 2 callers\n" in text and "Level 1: showing" not in text, text


@pytest.mark.parametrize("depth", [0, 6, -1, 10**9])
def test_impact_depth_out_of_range(indexed, depth):
    _, ix = indexed
    with pytest.raises(BadArgument, match="from 1 to 5"):
        call(ix, "impact", function_name="relu", depth=depth)


def test_unknown_function_gets_suggestions(indexed):
    _, ix = indexed
    _, text = call(ix, "called_by", function_name="index_select_out_cpu")
    assert text.startswith("No C++ function or DispatchStub named 'index_select_out_cpu'. Close matches:")
    assert "index_select_out_cpu_" in text


def test_cuda_kernels_for_an_op_follow_its_cuda_kernel_only(indexed):
    _, ix = indexed
    res, text = call(ix, "cuda_kernels", function_name="index_select")
    assert [k.name for k in res.kernels] == ["indexSelectLargeIndex", "indexSelectSmallIndex"]
    assert "aten/src/ATen/native/cuda/Indexing.cu:14" in text  # C10_LAUNCH_BOUNDS between __global__ and the name
    assert "indexFuncLargeIndex" not in text
    res, text = call(ix, "cuda_kernels", function_name="atan2")
    assert [h.site.written for h in res.helpers] == ["gpu_kernel_with_scalars"]
    assert "atan2_stub [CUDA]" in text


def test_the_gpu_warm_up_walks_what_cuda_sources_call_and_changes_no_answer(indexed):
    # Note [The GPU warm-up]: the functions CUDA sources call most are walked ahead of the first question; what
    # is asked afterwards reads the memos and answers exactly as a cold index does.
    from torchtalk.graph.gpu_warm import warm_shared
    from torchtalk.graph.symbols import defs_by_name
    from torchtalk.store.reader import Index

    tree, ix = indexed
    asked = [("cuda_kernels", "index_select"), ("cuda_kernels", "atan2"), ("trace", "relu"), ("cuda_kernels", None)]
    cold = [call(ix, tool, function_name=name) for tool, name in asked]
    warm = Index(ix.path, ix.source_root)
    assert warm_shared(warm, names=1, op_names=0) == len(defs_by_name(warm, _most_called_from_cuda(tree))[:4])
    assert warm_shared(warm, names=1000, op_names=0) > 1
    (impl,) = defs_by_name(warm, "index_select_out_cuda_impl")  # called once, from Indexing.cu
    assert any(key[1] == str(impl.id) for key in warm.cached("gpu_reach", dict))
    assert [call(warm, tool, function_name=name)[1] for tool, name in asked] == [text for _, text in cold]
    warm.close()


def test_the_gpu_warm_up_walks_the_ops_cuda_sources_call_and_changes_no_answer(tree):
    # Note [The GPU warm-up], its second part: the ops that the names CUDA sources call most mean (at::relu in a
    # .cu file: relu) are walked as cuda_kernels walks an op; what is asked afterwards answers as a cold index does.
    from torchtalk.graph.gpu_warm import warm_shared
    from torchtalk.index.indexer import refresh
    from torchtalk.source.tree import find_source
    from torchtalk.store.reader import Index

    cu = tree / "aten/src/ATen/native/cuda/Indexing.cu"
    cu.write_text(cu.read_text() + "\nnamespace at::native {\n"
                  "Tensor relu_twice_cuda(const Tensor& self) { return at::relu(at::relu(self)); }\n"
                  "Tensor relu_again_cuda(const Tensor& self) { return at::relu(self); }\n}\n")
    st = find_source(tree)
    refresh(st, workers=1, codegen=False)
    asked = [("cuda_kernels", "relu"), ("trace", "relu"), ("cuda_kernels", "index_select")]
    cold = Index(st.index_path, st.root)
    before = [call(cold, tool, function_name=name)[1] for tool, name in asked]
    warm = Index(st.index_path, st.root)
    assert warm_shared(warm, names=0, op_names=1) == 1  # relu, called by the most functions of CUDA sources
    assert [key[0] for key in warm.cached("gpu_walks", dict)] == ["relu"]
    assert warm_shared(warm, names=0, op_names=0) == 0
    assert [call(warm, tool, function_name=name)[1] for tool, name in asked] == before
    cold.close()
    warm.close()


def _most_called_from_cuda(tree) -> str:
    """The callee name the most C++ functions of the fixture's .cu/.cuh files call (ties: the first name)."""
    from collections import Counter

    from torchtalk.extract.cpp import extract_cpp
    from torchtalk.model.cpp import CallSite

    callers: dict[str, set] = {}
    for path in sorted(tree.rglob("*.cu*")):
        for c in extract_cpp(str(path.relative_to(tree)), path.read_bytes())[CallSite]:
            if c.caller is not None:
                callers.setdefault(c.callee, set()).add((path, c.caller))
    counts = Counter({name: len(who) for name, who in callers.items()})
    return min(counts, key=lambda name: (-counts[name], name))


def test_cuda_kernels_summary(indexed):
    _, ix = indexed
    res, text = call(ix, "cuda_kernels")
    assert res.summary["global_kernels"] == 3
    assert "__global__ indexSelectSmallIndex  aten/src/ATen/native/cuda/Indexing.cu:7" in text


def test_trace_full_shows_cpp_stub_kernels_mps_and_metal(indexed):
    _, ix = indexed
    _, text = call(ix, "trace", function_name="relu")
    assert re.search(r"^- CPU, CUDA: relu .*\n    C\+\+: at::native::relu\(const Tensor& self\)  "
                     r"aten/src/ATen/native/Activation.cpp:6$", text, re.M)
    assert "C++: at::native::relu_mps(const Tensor& self)  aten/src/ATen/native/mps/operations/Activation.mm:5" in text
    _, text = call(ix, "trace", function_name="cumsum")
    assert "C++: TORCH_IMPL_FUNC(cumsum_out_mps)  aten/src/ATen/native/mps/operations/Activation.mm:14" in text
    _, text = call(ix, "trace", function_name="index_select")
    assert "CUDA kernel indexSelectSmallIndex: __global__ at aten/src/ATen/native/cuda/Indexing.cu:7, launched" in text


def test_trace_of_a_cpp_name_says_what_kind_of_cpp_name_it_is(indexed):
    # Note [Names of another kind]: the line that offers calls() says what the name is, a DispatchStub or a function
    _, ix = indexed
    for name, what in (("cumsum_stub", "a DispatchStub"), ("index_select_out_cuda", "a C++ function")):
        res, text = call(ix, "trace", function_name=name)
        assert f'It is {what}: calls("{name}") answers it.' in text.splitlines()
        assert [e.what for e in res.elsewhere] == [what]


def test_called_by_lists_a_recursive_call_as_calls_lists_it(indexed):
    # a function calling itself is one of its callers: called_by and calls are two directions of one edge
    from ..conftest import line_of

    tree, ix = indexed
    name = "torch::autograd::VariableType::(anonymous)::count_down"
    path = "torch/csrc/autograd/VariableTypeManual.cpp"
    line = line_of(tree, path, "count_down(n - 1)")
    res, text = call(ix, "called_by", function_name=name)
    (sec,) = res.sections
    assert [(e.src, e.site.line) for e in sec.callers] == [(sec.function, line)]
    assert f"[call at {path}:{line}] (recursive: it calls itself)" in text
    out, _ = call(ix, "calls", function_name=name)
    assert [(e.dst, e.site.line) for e in out.sections[0].calls] == [(sec.function, line)]


def test_a_bare_name_a_metal_kernel_has_is_every_functions_of_that_name(indexed):
    """A Metal kernel (Indexing.metal's index_select) is in no namespace, so its qualified name is the bare name: it hid
    every C++ function of the name (called_by("im2col") answered the .metal kernel alone, 0 callers, no other
    candidate). A bare name is now every namespace's, the C++ ones first."""
    _, ix = indexed
    ix.close()
    ix = index_with(indexed[0], {"aten/src/ATen/native/Gather.cpp": (
        "namespace at::native {\nTensor index_select(const Tensor& self, int64_t dim, const Tensor& index) {\n"
        "  return self;\n}\nTensor gather_helper(const Tensor& t) {\n  return index_select(t, 0, t);\n}\n}\n")})
    try:
        res, text = call(ix, "called_by", function_name="index_select")
        labels = [s.function.label for s in res.sections]
        assert labels[0] == "at::native::index_select" and "index_select" in labels, text
        assert "Indexing.metal" in text and "gather_helper" in text, text
    finally:
        ix.close()


def test_host_code_calls_the_host_helper_not_the_device_one_of_its_name(indexed):
    """Note [Host code calls no device code]: ATen writes area_pixel_compute_source_index in UpSample.h for the CPU
    kernels and as __device__ in cuda/UpSample.cuh; a call from a .cpp file is the host one's (before: the CUDA
    helper listed 6 callers in CPU files), a call from a .cu file may be either."""
    _, ix = indexed
    ix.close()
    helper = "area_pixel_compute_source_index"
    ix = index_with(indexed[0], {
        "aten/src/ATen/native/UpS.h": f"namespace at::native {{\nstatic inline float {helper}(float s, int i) {{\n"
                                      "  return s * i;\n}\n}\n",
        "aten/src/ATen/native/cuda/UpS.cuh": f"namespace at::native {{\n__device__ __forceinline__ static float "
                                            f"{helper}(float s, int i) {{\n  return s * i;\n}}\n}}\n",
        "aten/src/ATen/native/UpSCpu.cpp": f"#include <ATen/native/UpS.h>\nnamespace at::native {{\n"
                                           f"float up_cpu(float s) {{\n  return {helper}(s, 1);\n}}\n}}\n",
        "aten/src/ATen/native/cuda/UpSKernel.cu": f"#include <ATen/native/cuda/UpS.cuh>\nnamespace at::native {{\n"
                                                f"__global__ void up_kernel(float s) {{\n  {helper}(s, 1);\n}}\n}}\n"})
    try:
        def callers(where):
            res, text = call(ix, "called_by", function_name=where)
            return sorted(e.src.label.rsplit("::", 1)[-1] for sec in res.sections for e in sec.callers)
        assert callers("aten/src/ATen/native/cuda/UpS.cuh:2") == ["up_kernel"]
        assert "up_cpu" in callers("aten/src/ATen/native/UpS.h:2")
    finally:
        ix.close()


def test_a_caller_whose_call_does_not_decide_the_overload_is_marked_maybe(tree):
    """called_by listed every overload's candidates as certain callers (the JSON marked them, the text did not):
    _get_model_bytecode_version's five 'callers' called another overload."""
    ix = index_with(tree, {"torch/csrc/overloads.cpp": (
        "namespace torch::jit {\nint version(std::istream& in) { return 1; }\nint version(const std::string& p) "
        "{ return 2; }\nint use_it(Unknown thing) {\n  return version(thing);\n}\n}\n")})
    try:
        _res, text = run(get_tool("called_by"), ix, function_name="torch/csrc/overloads.cpp:2")
        line = next(ln for ln in text.splitlines() if "use_it" in ln)
        assert line.endswith("(maybe: the call's arguments fit other overloads of the name too)"), text
    finally:
        ix.close()


def test_a_stub_kernel_registered_once_per_cpu_capability_is_one_line_of_called_by(tree):
    # called_by("svd_stub") listed at::native::svd_kernel six times, one line per REGISTER_*_DISPATCH macro
    ix = index_with(tree, {"aten/src/ATen/native/cpu/CumKernels.cpp": (
        "namespace at::native {\n"
        "static void cumsum_cpu_kernel(const Tensor& result, const Tensor& self, int64_t dim) {}\n"
        "REGISTER_ARCH_DISPATCH(cumsum_stub, DEFAULT, &cumsum_cpu_kernel)\n"
        "REGISTER_AVX512_DISPATCH(cumsum_stub, &cumsum_cpu_kernel)\n"
        "REGISTER_AVX2_DISPATCH(cumsum_stub, &cumsum_cpu_kernel)\n"
        "}\n")})
    res, text = call(ix, "called_by", function_name="cumsum_stub")
    assert len(res.sections[0].registrations) >= 3  # the structured answer keeps each registration
    lines = [line for line in text.splitlines() if "cumsum_cpu_kernel" in line]
    path = "aten/src/ATen/native/cpu/CumKernels.cpp"
    assert len(lines) == 1 and lines[0].endswith(
        f"[registered {path}:3-5 (REGISTER_ARCH_DISPATCH, REGISTER_AVX512_DISPATCH, REGISTER_AVX2_DISPATCH)]"), text
    assert re.search(r"Kernels registered for it \(\d+, in \d+ registrations\)", text), text
    ix.close()
