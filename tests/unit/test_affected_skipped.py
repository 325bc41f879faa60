"""affected names the files the index skipped as skipped, with the reason (review F3).

Before: a changed line of a file the index never read (NUL bytes, a symlink out of the tree, too large) was
"1 changed line(s) outside any definition ... declarations, macros, includes or comments", rc 0, as if the
index knew the file and the line changed nothing; and the file behind a symlink out of the tree was read.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

from torchtalk.tools import answer, get_tool

from ..conftest import indexed_with

FIXTURES = Path(__file__).parents[1] / "fixtures"
NATIVE = "aten/src/ATen/native"


def _affected(ix, **kw) -> str:
    return answer(get_tool("affected"), ix, **kw).text


def test_a_skipped_file_is_named_as_skipped_with_its_reason(tmp_path):
    tree = tmp_path / "pytorch"
    shutil.copytree(FIXTURES / "tree", tree)
    outside = tmp_path / "outside.cpp"
    outside.write_text("int secret_fn() { return 1; }\n")
    os.symlink(outside, tree / NATIVE / "Linked.cpp")
    with indexed_with(tree, {f"{NATIVE}/Nul.cpp": "int f() {\n  return 0;\0\n}\n"}) as ix:
        for name, why in ((f"{NATIVE}/Nul.cpp:2", "NUL"), (f"{NATIVE}/Linked.cpp:1", "symlink leads outside")):
            text = _affected(ix, names=name)
            line = next(ln for ln in text.splitlines() if ln.startswith("    ") and "index" in ln)
            assert "skipped by the index (" in line and why in line and "nothing of it is indexed" in line, text
            assert "outside any definition" not in text, text
        diff = (f"--- a/{NATIVE}/Nul.cpp\n+++ b/{NATIVE}/Nul.cpp\n@@ -2,1 +2,1 @@\n-  return 0;\n+  return 1;\n")
        text = _affected(ix, diff=diff)
        assert "skipped by the index (" in text and "outside any definition" not in text, text
        # a file the index read is mapped as before
        assert "outside any definition" not in _affected(ix, names=f"{NATIVE}/SoftMax.cpp:6")
