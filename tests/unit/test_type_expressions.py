"""Type expressions (Note [Type expressions] in model/cpp.py): the text the extractor writes, parsed into
``TypeExpr`` and written back unchanged, on the Note's grammar and on every one the fixture tree's index holds."""

from __future__ import annotations

import pytest

from torchtalk.model.cpp import TypeBase, TypeExpr, TypeStep, TypeStepKind


@pytest.mark.parametrize("text", [
    "t:Tensor|.options(0)|.dtype(0)",  # the Note's example
    "t:std::tuple<Tensor,Tensor>|#1", "c:at::empty/2|.sizes(0)|[]", "c:/0", "v:impl_|*|.storage_offset_",
    "this|*|.sizes_and_strides_|.size(0)", "t:char*", "t:", "t:Tensor|cmp", "v:fn|()2", "t:int|&",
    "c:std::numeric_limits<float>::max/0", "c:at/vec/weird/3",  # the last "/" separates the count
])
def test_round_trip(text):
    te = TypeExpr.parse(text)
    assert str(te) == text and TypeExpr.parse(str(te)) == te


def test_parsed_parts():
    te = TypeExpr.parse("c:at::native::make_info/2|.sizes(0)|#3|()1|.impl_")
    assert (te.base, te.text, te.nargs) == (TypeBase.CALL, "at::native::make_info", 2)
    assert te.steps == (TypeStep(TypeStepKind.METHOD, "sizes", 0), TypeStep(TypeStepKind.TUPLE, n=3),
                        TypeStep(TypeStepKind.CALL_OP, n=1), TypeStep(TypeStepKind.MEMBER, "impl_"))
    assert TypeExpr.parse("this") == TypeExpr(TypeBase.THIS)


@pytest.mark.parametrize("text", [
    "", " }|.load", "x:Tensor", "c:f", "c:f/x", "t:Tensor|", "t:Tensor|.f(x)", "t:Tensor|#", "t:Tensor|()",
    "t:Tensor|.", "t:Tensor|?", "this2",
])
def test_what_is_not_a_type_expression_is_an_error(text):
    with pytest.raises(ValueError, match=r"Note \[Type expressions\]"):
        TypeExpr.parse(text)


def test_every_type_expression_of_the_fixture_index_round_trips(indexed):
    _tree, ix = indexed
    texts = {t for recv, args in ix.q("SELECT recv, args FROM cpp_call")
             for t in [recv, *args.split(";")] if t and t != "?"}
    assert len(texts) > 50
    for text in texts:
        assert str(TypeExpr.parse(text)) == text
