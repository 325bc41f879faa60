"""Type-aware C++ call resolution on the fixture tree: each rule of C++ name lookup and overload choice
TorchTalk follows (graph/resolve.py), asserted through the `calls` / `called_by` / `impact` tools.

The fixture files (tests/fixtures/tree) mirror the real cases: c10/core/WrapDimMinimal.h and
ATen/WrapDimUtils.h (using c10::maybe_wrap_dim;), ATen/TensorIterator.h (TensorIteratorConfig),
ATen/core/TensorBase.h + templates/TensorBody.h (header-only accessors), native/Sorting.cpp (a static
and an anonymous-namespace function), native/TensorShape.cpp (the callers), ATen/test/ (a test header).
"""

from __future__ import annotations

from torchtalk.index.indexer import refresh
from torchtalk.model import EdgeHow
from torchtalk.source.tree import find_source
from torchtalk.store.reader import Index
from torchtalk.tools import get_tool, run

SHAPE = "aten/src/ATen/native/TensorShape.cpp"
SORTING = "aten/src/ATen/native/Sorting.cpp"


def calls(ix, name: str):
    res, text = run(get_tool("calls"), ix, function_name=name)
    assert len(res.sections) >= 1, text
    return res.sections[0], text


def picked(section) -> list[tuple[int, str, str, str]]:
    """(line of the call, callee, where it is defined, how the edge was made: "" when plain) of each resolved call."""
    return [(e.site.line, e.dst.label, f"{e.dst.loc.path}:{e.dst.loc.line}", "" if e.how is EdgeHow.DIRECT else e.how)
            for e in section.calls]


def test_using_declaration_brings_c10_overloads_into_at(indexed):
    _, ix = indexed
    sec, _ = calls(ix, "at::native::wrap_last_dim")
    # maybe_wrap_dim(dim, self.dim()): at's own overloads take a TensorImpl* / TensorList; the (int64_t, int64_t)
    # one comes from c10 through `using c10::maybe_wrap_dim;` in namespace at.
    assert ("c10::maybe_wrap_dim", "c10/core/WrapDimMinimal.h:5") in {(c, w) for _, c, w, _ in picked(sec)}
    assert not any(c == "at::maybe_wrap_dim" for _, c, _, _ in picked(sec))
    # Inside WrapDimUtils.h, maybe_wrap_dim(dim, tensor->dim()): the fixture does not define TensorImpl, so the
    # second argument's type is unknown and every two-argument overload, c10's among them, is a candidate
    sec, _ = calls(ix, "aten/src/ATen/WrapDimUtils.h:9")
    assert sorted((c, w, n) for _, c, w, n in picked(sec)) == [
        ("at::maybe_wrap_dim", "aten/src/ATen/WrapDimUtils.h:13", "candidate"),
        ("at::maybe_wrap_dim", "aten/src/ATen/WrapDimUtils.h:9", "candidate"),
        ("c10::maybe_wrap_dim", "c10/core/WrapDimMinimal.h:5", "candidate")]


def test_internal_linkage_is_seen_from_its_own_file_only(indexed):
    _, ix = indexed
    sec, text = calls(ix, "at::native::cat_check")
    # Sorting.cpp's static checkSameDevice and its anonymous-namespace fill_sorted are not TensorShape.cpp's
    assert [(c, w) for _, c, w, _ in picked(sec)] == [
        ("at::native::checkSameDevice", "aten/src/ATen/native/LinearAlgebraUtils.h:5")]
    assert SORTING not in text
    assert [e.dst.label for e in sec.unresolved] == ["fill_sorted"]
    # From Sorting.cpp itself both are visible, and the static one is the one its two arguments fit
    sec, _ = calls(ix, "at::native::sort_check")
    assert [(c, w) for _, c, w, _ in picked(sec)] == [
        ("at::native::checkSameDevice", f"{SORTING}:6"),
        ("at::native::(anonymous)::fill_sorted", f"{SORTING}:11")]


def test_receiver_type_from_parameter_local_auto_and_member(indexed):
    _, ix = indexed
    sec, _ = calls(ix, "at::native::config_receivers")
    got = {(line, c, w, n) for line, c, w, n in picked(sec)}
    header = "aten/src/ATen/TensorIterator.h"
    assert (17, "at::TensorIteratorConfig::add_output", f"{header}:12", "") in got  # a parameter
    assert (19, "at::TensorIteratorConfig::add_input", f"{header}:15", "") in got  # a local
    assert (20, "at::TensorIteratorConfig::TensorIteratorConfig", f"{header}:10", "") in got  # a construction
    # a chain on a temporary: each call's type from the previous call's declared return type
    assert (21, "at::TensorIteratorConfig::add_output", f"{header}:12", "") in got
    assert (22, "at::TensorIteratorConfig::add_input", f"{header}:15", "") in got
    assert (23, "at::TensorIteratorConfig::build", f"{header}:21", "declaration") in got
    # auto iter = ...build(): its type is build()'s return type
    assert (24, "at::TensorIterator::ntensors", f"{header}:28", "declaration") in got
    assert sec.unresolved == []
    sec, _ = calls(ix, "at::native::CatHolder::add")  # a data member of the enclosing class
    assert picked(sec) == [(31, "at::TensorIteratorConfig::add_input", f"{header}:15", "")]


def test_deleted_overload_is_never_a_candidate(indexed):
    _, ix = indexed
    sec, text = calls(ix, "at::native::config_receivers")
    # add_output(TensorBase&&) = delete is not a function a call can reach: add_output is decided
    assert [n for line, c, _, n in picked(sec) if c.endswith("add_output")] == ["", ""]
    assert "TensorIterator.h:18" not in text


def test_overload_by_arity_and_by_known_type_and_undecided_lists_all(indexed):
    _, ix = indexed
    sec, text = calls(ix, "at::native::combine_calls")
    got = picked(sec)
    assert (48, "at::native::combine", f"{SHAPE}:35", "") in got  # combine(k): the one-parameter overload
    assert (49, "at::native::combine", f"{SHAPE}:43", "") in got  # combine(self, k): self is a Tensor
    # combine(mystery_value(), k): the first argument's type is unknown, so both two-parameter overloads
    # remain, each listed and marked as a candidate (never a single guess)
    undecided = sorted((w, n) for line, _, w, n in got if line == 50)
    assert undecided == [(f"{SHAPE}:39", "candidate"), (f"{SHAPE}:43", "candidate")]
    assert "+1 candidates: the call does not say which" in text


def test_header_only_accessors_are_calls_and_op_methods_are_ops(indexed):
    _, ix = indexed
    sec, _ = calls(ix, "at::native::stack_like")
    # acc.size(d) and acc.is_complex() are TensorBase's inline accessors (class Tensor brings them in with
    # using TensorBase::size;), not the size.int / is_complex ops
    assert [(c, w) for _, c, w, _ in picked(sec)] == [
        ("at::TensorBase::size", "aten/src/ATen/core/TensorBase.h:10"),
        ("at::TensorBase::is_complex", "aten/src/ATen/core/TensorBase.h:13")]
    # acc.copy_(...) and tensors[1].unsqueeze(0) are op methods though neither receiver is named like a
    # tensor: acc's type is its parameter's, tensors[1] is an element of std::vector<Tensor>
    assert [(e.site.line, e.dst.key, e.note) for e in sec.ops] == [
        (59, "copy_", "Tensor method"), (60, "unsqueeze", "Tensor method"), (61, "rsqrt", "rsqrt")]
    assert sec.unresolved == []


def test_test_only_header_never_wins_for_library_code(indexed):
    _, ix = indexed
    # rsqrt(first, 2) in TensorShape.cpp: at::rsqrt(const Tensor&, int64_t) of ATen/test/vec_test_all_types.h
    # fits the arguments better than the op, but library code never calls into a test-only header
    sec, text = calls(ix, "at::native::stack_like")
    assert "vec_test_all_types.h" not in text and "rsqrt" in [e.dst.key for e in sec.ops]
    # a test calling it reaches it
    sec, _ = calls(ix, "at::check_rsqrt")
    assert [(c, w) for _, c, w, _ in picked(sec)] == [("at::rsqrt", "aten/src/ATen/test/vec_test_all_types.h:6")]
    assert sec.ops == []


def test_path_line_picks_one_of_several_definitions_of_a_name(indexed):
    _, ix = indexed
    res, text = run(get_tool("calls"), ix, function_name="checkSameDevice")
    assert len(res.sections) == 2 and "'checkSameDevice' names 2 functions:" in text
    res, _ = run(get_tool("calls"), ix, function_name=f"{SORTING}:6")
    assert len(res.sections) == 1 and res.sections[0].symbol.loc.path == SORTING and res.ambiguity is None
    res, _ = run(get_tool("called_by"), ix, function_name=f"{SORTING}:6")
    assert [e.src.label for e in res.sections[0].callers] == ["at::native::sort_check"]
    res, _ = run(get_tool("called_by"), ix, function_name="aten/src/ATen/native/LinearAlgebraUtils.h:5")
    assert [e.src.label for e in res.sections[0].callers] == ["at::native::cat_check"]
    res, text = run(get_tool("impact"), ix, function_name="aten/src/ATen/native/LinearAlgebraUtils.h:5")
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
        # the macro's use
        assert picked(sec) == [(10, "at::native::_cast_##n##", "aten/src/ATen/native/TensorFactories.cpp:7", "")]
        # only the parameter is any text: 'widen' ends like the pattern's parameter 'n' but lacks '_cast_'
        sec, _ = calls(ix2, "at::native::to_wide")
        assert picked(sec) == [] and [e.dst.label for e in sec.unresolved] == ["widen"]
    finally:
        ix2.close()
