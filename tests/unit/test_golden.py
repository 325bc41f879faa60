"""Golden answers: every tool's Markdown on the fixture trees, kept in tests/golden/*.md.

A change of wording or layout is one reviewed diff of these files. Regenerate them on
purpose with ``TORCHTALK_REGEN_GOLDEN=1 python -m pytest tests/unit/test_golden.py``,
then read the diff before committing it.
"""

from __future__ import annotations

import os
import re
import shutil
from pathlib import Path

import pytest

from torchtalk.tools import get_tool, run

from ..conftest import FIXTURE_TREE, build_index

GOLDEN = Path(__file__).resolve().parents[1] / "golden"
REGEN = os.environ.get("TORCHTALK_REGEN_GOLDEN") == "1"

# (file stem, tool, arguments): answers of the C++ and op layers on tests/fixtures/tree ...
CPP_CASES = [
    ("trace-relu", "trace", {"function_name": "relu"}),
    ("trace-cumsum-dispatch", "trace", {"function_name": "cumsum", "focus": "dispatch"}),
    ("trace-add-tensor-yaml", "trace", {"function_name": "add.Tensor", "focus": "yaml"}),
    ("trace-not-found", "trace", {"function_name": "sofmax"}),
    ("search-index", "search", {"query": "index"}),
    ("calls-cumsum_out", "calls", {"function_name": "cumsum_out"}),
    ("calls-atan2-stub", "calls", {"function_name": "TORCH_IMPL_FUNC(atan2_out)"}),
    ("called_by-index_select_out_cuda", "called_by", {"function_name": "index_select_out_cuda"}),
    ("called_by-stub", "called_by", {"function_name": "atan2_stub"}),
    ("impact-impl_func_cum_ops", "impact", {"function_name": "impl_func_cum_ops", "depth": 2}),
    ("cuda_kernels-index_select", "cuda_kernels", {"function_name": "index_select"}),
    ("cuda_kernels-summary", "cuda_kernels", {}),
    ("error_origin-mat1", "error_origin",
     {"message": "RuntimeError: mat1 and mat2 shapes cannot be multiplied (64x10 and 20x30)"}),
    ("error_origin-weak", "error_origin", {"message": "Expected all tensors on one device: cuda:0 and cpu"}),
]
# ... and of the Python and test layers on tests/fixtures/tree + tree_py.
PY_CASES = [
    ("trace_module-linear", "trace_module", {"module_name": "nn.Linear"}),
    ("list_modules-optim", "list_modules", {"category": "optim"}),
    ("find_similar_tests-relu", "find_similar_tests", {"query": "relu"}),
    ("list_test_utils-decorators", "list_test_utils", {"category": "decorators"}),
    ("test_file_info-test_nn", "test_file_info", {"file_path": "test/test_nn.py"}),
    ("trace-F-relu", "trace", {"function_name": "F.relu"}),
]


def _indexed(tmp: Path, with_py: bool) -> tuple[Path, object]:
    tree = tmp / "pytorch"
    shutil.copytree(FIXTURE_TREE, tree)
    if with_py:
        shutil.copytree(FIXTURE_TREE.parent / "tree_py", tree, dirs_exist_ok=True)
    return tree, build_index(tree, tmp / "cache", workers=1, codegen=False)[1]


@pytest.fixture(scope="module")
def indexed_once(tmp_path_factory):
    return _indexed(tmp_path_factory.mktemp("golden"), with_py=False)


@pytest.fixture(scope="module")
def py_indexed_once(tmp_path_factory):
    return _indexed(tmp_path_factory.mktemp("golden-py"), with_py=True)


def _stable(text: str, tree: Path) -> str:
    """The answer without what differs between runs: the fixture copy's temporary path, timings."""
    text = text.replace(str(tree), "<tree>")
    return re.sub(r"\b\d+(\.\d+)? ?(s|ms)\b", "<time>", text)


def _check(stem: str, text: str) -> None:
    path = GOLDEN / f"{stem}.md"
    if REGEN:
        path.write_text(text + "\n", encoding="utf-8")
        return
    assert path.is_file(), f"no golden file {path.name}: run with TORCHTALK_REGEN_GOLDEN=1 to write it"
    assert text + "\n" == path.read_text(encoding="utf-8"), (
        f"{stem}: the answer differs from tests/golden/{path.name}; if the change is wanted, regenerate with "
        "TORCHTALK_REGEN_GOLDEN=1 and review the diff")


@pytest.mark.parametrize("stem, tool, kwargs", CPP_CASES, ids=[c[0] for c in CPP_CASES])
def test_cpp_and_op_answers(indexed_once, stem, tool, kwargs):
    tree, ix = indexed_once
    _check(stem, _stable(run(get_tool(tool), ix, **kwargs)[1], tree))


@pytest.mark.parametrize("stem, tool, kwargs", PY_CASES, ids=[c[0] for c in PY_CASES])
def test_python_and_test_answers(py_indexed_once, stem, tool, kwargs):
    tree, ix = py_indexed_once
    _check(stem, _stable(run(get_tool(tool), ix, **kwargs)[1], tree))


def test_every_golden_file_is_checked():
    stems = {c[0] for c in CPP_CASES + PY_CASES}
    assert {p.stem for p in GOLDEN.glob("*.md")} == stems
