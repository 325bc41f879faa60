"""error_origin on a part of a message (Note [A part of a message]): text that starts inside a site's text."""

from __future__ import annotations

from torchtalk.model.raises import Verdict
from torchtalk.query.error_match import align
from torchtalk.tools import get_tool, run

from ..conftest import indexed_with

CAST = ('#include <ATen/TensorIterator.h>\nnamespace at {\nvoid TensorIteratorBase::compute_types(int a, int b) {\n'
        '  TORCH_CHECK(canCast(a, b), "result type ", a, " can\'t be cast to the desired output type ", b);\n}\n}\n')
FOLD = ('namespace at { namespace native {\nvoid col2im_check(IntArrayRef kernel_size) {\n'
        '  TORCH_CHECK(kernel_size.size() == 2, "It is expected kernel_size equals to 2, but got size ",\n'
        '              kernel_size.size());\n'
        '  TORCH_CHECK(kernel_size[0] > 0, "kernel_size should be greater than zero, but got ", kernel_size[0]);\n'
        '}\n}}\n')


def ask(ix, message):
    return run(get_tool("error_origin"), ix, message=message)


def test_a_part_from_the_middle_of_a_message_finds_the_sites_that_print_it(tree):
    """F17: 'can't be cast to the desired output type' and 'expected kernel_size equals to 2' (lower case, its head
    'It is ' and its value cut) were "Nothing in this tree prints this message"."""
    with indexed_with(tree, {"aten/src/ATen/TensorIterator.cpp": CAST, "aten/src/ATen/native/Col2Im.cpp": FOLD}) as ix:
        for asked, where in (("can't be cast to the desired output type", "aten/src/ATen/TensorIterator.cpp:4"),
                             ("expected kernel_size equals to 2", "aten/src/ATen/native/Col2Im.cpp:3"),
                             ("be cast to the desired output type Long", "aten/src/ATen/TensorIterator.cpp:4")):
            r, text = ask(ix, asked)
            assert r.verdict is not Verdict.NONE and r.sites and str(r.sites[0].loc) == where, text
            assert r.sites[0].opened and r.sites[0].coverage > 0.85, text  # 'Long' is a value
            assert "Nothing in this tree prints this message" not in text
        r, text = ask(ix, "expected kernel_size equals to 2")
        assert "the message starts and stops inside its text" in text and "a part was pasted" in text, text
        assert "a part of 'It is expected kernel_size equals to 2, but got size '" in text, text


def test_a_message_that_starts_inside_a_piece_counts_what_is_before_it_as_outside_not_missing():
    pieces = ("result type ", " can't be cast to the desired output type ", "")
    a = align(pieces, "be cast to the desired output type Long")
    assert a.covered == len("be cast to the desired output type ")  # every character but digits
    assert a.head == len("result type ") + len(" can't ") and a.cut == 0 and not a.exact
    assert a.hits[1].start == len(" can't ") and a.hits[1].at == 0
    whole = align(pieces, "result type Float can't be cast to the desired output type Long")
    assert whole.head == 0 and whole.covered == len("result type  can't be cast to the desired output type ")
