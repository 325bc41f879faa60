"""The reader of the expectations written in fixture sources (tests/annotations.py): a misplaced or
malformed annotation is an error that names its file and line, never an assertion about something else."""

from __future__ import annotations

import pytest

from ..annotations import Annotation, AnnotationError, Expectations, read_file, read_tree
from ..conftest import FIXTURE_TREE

SOURCE = """\
static int64_t combine(int64_t a) {
//             ^ defines: at::native::combine #one
  return a;
}
int64_t f(const Tensor& self, int64_t k) {
  int64_t one = combine(mystery(), k);
  //            ^ calls: at::native::combine #one (candidate)
  //                    ^ unresolved: mystery
}
"""


def _read(tmp_path, text: str, name: str = "a.cpp") -> list[Annotation]:
    (tmp_path / name).write_text(text)
    return read_file(tmp_path, name)


def test_an_annotation_is_about_the_name_its_caret_points_at_on_the_code_line_above(tmp_path):
    defines, call, unresolved = _read(tmp_path, SOURCE)
    assert (defines.kind, defines.target, defines.tag, defines.line, defines.word) == (
        "defines", "at::native::combine", "one", 1, "combine")
    assert (call.kind, call.line, call.column, call.how, call.at) == ("calls", 6, 16, "candidate", 7)
    assert (unresolved.line, unresolved.word) == (6, "mystery")  # stacked annotations share the code line
    ex = Expectations([defines, call, unresolved])
    assert ex.where("at::native::combine", "one") == "a.cpp:1"
    assert ex.expected(call) == ("a.cpp", 6, "combine", "calls", "at::native::combine", "a.cpp:1", "candidate")


def test_python_files_use_hash_comments(tmp_path):
    (a,) = _read(tmp_path, "def relu(input):\n    return torch.relu(input)\n    #            ^ op: relu\n", "f.py")
    assert (a.kind, a.target, a.line, a.word) == ("op", "relu", 2, "relu")


@pytest.mark.parametrize(("text", "error"), [
    ("  combine(k);\n  //  ^ calls: at::native::combine\n",
     r"a\.cpp:2: the caret \(column 6\) points at no name's start"),
    ("  combine(k);\n//^ calls: at::native::other\n", r"a\.cpp:2: the caret points at 'combine', but the annotation "
                                                         r"is about 'at::native::other'"),
    ("  combine(k);\n//^ resolves: at::native::combine\n", r"a\.cpp:2: unknown kind 'resolves'"),
    ("  combine(k);\n//^ calls at::native::combine\n", r"a\.cpp:2: not an annotation"),
    ("// ^ calls: combine\n", r"a\.cpp:1: an annotation needs a code line above it"),
    ("  combine(k);\n//^ calls: at::native::combine (candidat)\n",
     r"a\.cpp:2: \(candidat\) is no EdgeHow; one of direct"),
])
def test_a_misplaced_or_malformed_annotation_is_an_error(tmp_path, text, error):
    with pytest.raises(AnnotationError, match=error):
        _read(tmp_path, text)


def test_a_call_needs_its_callees_definition_annotated(tmp_path):
    (call,) = _read(tmp_path, "  combine(k);\n//^ calls: at::native::combine #two\n")
    with pytest.raises(AnnotationError, match=r"a\.cpp:2: no 'defines: at::native::combine #two' annotation"):
        Expectations([call])
    defines = _read(tmp_path, SOURCE)[0]
    with pytest.raises(AnnotationError, match=r"a\.cpp:2: at::native::combine #one is already defined at a\.cpp:1"):
        Expectations([defines, defines])


def test_the_fixture_trees_annotations_read():
    ex = Expectations(read_tree(FIXTURE_TREE))
    assert {a.kind for a in ex.all} == {"defines", "calls", "op", "unresolved"}
