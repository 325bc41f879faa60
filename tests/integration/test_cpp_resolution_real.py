"""Type-aware C++ call resolution on the real PyTorch 2.6.0 tree (set TORCHTALK_TEST_SOURCE; .ci/run does).

Each case is one a C++ front-end (libclang, benchmarks/bench_resolution.py) resolves the same way.
"""

import pytest

from torchtalk.model import EdgeHow
from torchtalk.tools import get_tool, run

pytestmark = pytest.mark.integration


def calls_at(ix, where: str):
    res, text = run(get_tool("calls"), ix, function_name=where)
    assert len(res.sections) == 1, text
    sec = res.sections[0]
    return {(e.site.line, e.dst.label, f"{e.dst.loc.path}:{e.dst.loc.line}", "" if e.how is EdgeHow.DIRECT else e.how)
            for e in sec.calls}, sec


def test_using_declaration_picks_c10_maybe_wrap_dim(real_index):
    # tensor_split_sections_symint: maybe_wrap_dim(dim, self.dim()) in at::native is c10's (int64_t, int64_t)
    # overload, brought into namespace at by `using c10::maybe_wrap_dim;` (ATen/WrapDimUtils.h:15)
    got, _ = calls_at(real_index, "aten/src/ATen/native/TensorShape.cpp:976")
    assert (978, "c10::maybe_wrap_dim", "c10/core/WrapDimMinimal.h:34", "") in got
    assert not any(c == "at::maybe_wrap_dim" for line, c, _, _ in got if line == 978)


def test_tensor_iterator_config_methods_resolve_by_receiver_type(real_index):
    # make_index_put_iterator: `TensorIteratorConfig config; config.add_output(info.src) ...`
    got, sec = calls_at(real_index, "aten/src/ATen/native/TensorAdvancedIndexing.cpp:604")
    header = "aten/src/ATen/TensorIterator.h"
    assert (616, "at::TensorIteratorConfig::add_output", f"{header}:798", "") in got
    assert (617, "at::TensorIteratorConfig::add_const_input", f"{header}:804", "") in got
    assert (621, "at::TensorIteratorConfig::build", f"{header}:964", "") in got
    assert not [e for e in sec.unresolved if e.dst.label.endswith(("add_output", "build"))]


def test_static_function_of_another_file_is_not_picked(real_index):
    # cholesky_solve_out (the definition spanning line 1741) calls checkSameDevice: LinearAlgebraUtils.h's,
    # never quantized/AffineQuantizer.cpp's (a function of its anonymous namespace)
    got, _ = calls_at(real_index, "aten/src/ATen/native/BatchLinearAlgebra.cpp:1741")
    picks = {(c, w) for line, c, w, _ in got if c.endswith("checkSameDevice")}
    assert picks == {("at::native::checkSameDevice", "aten/src/ATen/native/LinearAlgebraUtils.h:495")}


def test_header_accessor_is_a_call_and_method_op_is_an_op(real_index):
    # tensor_split_sections_symint: self.dim() is TensorBase's inline accessor, not the op `dim`
    got, sec = calls_at(real_index, "aten/src/ATen/native/TensorShape.cpp:976")
    assert any(c == "at::TensorBase::dim" and line == 977 for line, c, _, _ in got)
    assert "dim" not in {e.dst.key for e in sec.ops}


def test_type_expressions_of_the_tree_round_trip(real_index):
    # Note [Type expressions]: every receiver and argument text of 2.6.0 parses and is written back as it was,
    # except a few dozen leftovers of code the extractor could not read (" uint32_t width", " }|.load"): they
    # have no base, so their type was unknown before they were parsed too.
    from torchtalk.model.cpp import TypeExpr

    texts = {t for recv, args in real_index.q("SELECT recv, args FROM cpp_call")
             for t in [recv, *args.split(";")] if t and t != "?"}
    bad = []
    for text in texts:
        try:
            assert str(TypeExpr.parse(text)) == text
        except ValueError:
            bad.append(text)
    assert len(texts) > 50_000 and len(bad) < 200
    assert not [b for b in bad if b.split("|")[0].startswith(("t:", "c:", "v:", "this"))]
