"""How affected reads the file names of a diff (review F10, F11).

Before: ``diff -u X.orig X`` run in a directory of the tree was "X.orig [other, renamed]: not in the source tree"
(two names on ---/+++ read as a rename, bare names as paths of the root); a rename-only git diff (similarity
100%, no hunk) printed no Files entry at all.
"""

from __future__ import annotations

import shutil
from pathlib import Path

from torchtalk.model.change import ChangeStatus
from torchtalk.query.change.diff import parse_diff
from torchtalk.tools import answer, get_tool

from ..conftest import indexed_with

FIXTURES = Path(__file__).parents[1] / "fixtures"
N = "aten/src/ATen/native"


def _edit(line: str) -> str:
    return line.replace("int64_t dim", "int64_t dimension")


def test_diff_names_from_a_directory_of_the_tree_and_a_rename_only_diff(tmp_path):
    tree = tmp_path / "pytorch"
    shutil.copytree(FIXTURES / "tree", tree)
    line = (tree / N / "ReduceOps.cpp").read_text().split("\n")[9]
    assert "int64_t dim" in line
    bare = f"--- ReduceOps.cpp.orig\n+++ ReduceOps.cpp\n@@ -10,1 +10,1 @@\n-{line}\n+{_edit(line)}\n"
    assert parse_diff(bare)[0].status is ChangeStatus.MODIFIED  # two copies compared, not a rename
    rename = (f"diff --git a/{N}/ReduceOps.cpp b/{N}/ReduceOps2.cpp\nsimilarity index 100%\n"
              f"rename from {N}/ReduceOps.cpp\nrename to {N}/ReduceOps2.cpp\n")
    assert parse_diff(rename)[0].status is ChangeStatus.RENAMED
    with indexed_with(tree, {f"{N}/cpu/ReduceOps.cpp": "int other_fn() { return 1; }\n"}) as ix:
        # ReduceOps.cpp ends two paths of the tree: the one whose text the hunk matches is meant
        text = answer(get_tool("affected"), ix, diff=bare).text
        assert f"impl_func_cum_ops  {N}/ReduceOps.cpp:8  body changed (line 10)" in text, text
        text = answer(get_tool("affected"), ix, diff=bare.replace(line, line + "x")).text  # matches neither
        assert f"{N}/ReduceOps.cpp, {N}/cpu/ReduceOps.cpp; give the path" in text and "renamed" not in text, text
        text = answer(get_tool("affected"), ix, diff=bare.replace("ReduceOps.cpp", "native/ReduceOps.cpp")).text
        assert f"impl_func_cum_ops  {N}/ReduceOps.cpp:8  body changed (line 10)" in text, text
        text = answer(get_tool("affected"), ix, diff=rename).text
        assert f"- {N}/ReduceOps.cpp  [cpp, renamed]" in text and f"to {N}/ReduceOps2.cpp, no line changed" in text
