"""Latent damage in a copy of the real index: random 4 KiB pages in the middle of the call graph's tables
and indexes overwritten. Ordinary queries still answer (they do not read those pages), SQLite's quick_check
does not pass, and get_status then reports the damage."""

import random
import shutil

import pytest

from tests.unit.test_integrity import damage, pages_of
from torchtalk.store import integrity
from torchtalk.store.reader import Index
from torchtalk.tools import get_tool, run

pytestmark = pytest.mark.integration

CALL_GRAPH = ("cpp_call", "cpp_call_file", "cpp_call_caller", "cpp_call_callee", "cpp_symbol_qualname")


def test_damage_in_the_middle_of_the_call_graph_is_found_and_reported(real_index, tmp_path):
    copy = tmp_path / "trees" / "copy" / "index.db"
    copy.parent.mkdir(parents=True)
    shutil.copyfile(real_index.path, copy)
    assert integrity.check(copy).ok is True

    pages = pages_of(copy, CALL_GRAPH)
    middle = pages[len(pages) // 4: 3 * len(pages) // 4]
    rng = random.Random(20240611)
    damage(copy, sorted(rng.sample(middle, 6)), rng)

    ix = Index(copy, real_index.source_root)
    try:
        _r, text = run(get_tool("trace"), ix, function_name="softmax", focus="yaml")
        assert "aten/src/ATen/native/native_functions.yaml:" in text  # queries elsewhere still answer
        _r, status = run(get_tool("get_status"), ix)
        assert "damaged" not in status

        result = integrity.check_and_mark(copy)
        assert result.ok is False and result.detail, result
        assert result.seconds < integrity.BUDGET_S
        _r, status = run(get_tool("get_status"), ix)
        assert "Note: The index is damaged (integrity check failed: " in status, status[-800:]
    finally:
        ix.close()
