"""Tests of changed Python code no walk finds an op or a test for, by what the test files import.

Note [Tests by import]
~~~~~~~~~~~~~~~~~~~~~~
A helper of the compiler (torch/_inductor/codegen/triton.py's triton_store_type, LoopBody.get_nodes) reaches no op
and is named by no test: the walk up its Python callers ends in methods no test names either. An empty list would
read as "nothing to run", yet the tests that exercise it are those that import it. So, when nothing else is found,
the test files (test/**/test_*.py) are ranked by what they import (py_import rows, as written in the file):

1. the changed definition itself (``from torch._inductor.codegen.triton import triton_store_type``);
2. the class or function holding a Python caller of it (``TritonKernel``, whose codegen_block_ptr_store_line calls
   it), closest caller first;
3. anything else of the changed module or a caller's module;
4. when no test file imports from those modules: anything of the nearest package some test file imports from
   (torch._inductor for torch._inductor.loop_body), files importing more of it first.

Each test says which import put it there; the answer says the tests were found by import, not by a call.
"""

from __future__ import annotations

from ...graph.pynames import pynames
from ...model import Loc
from ...model.change import TestReason
from ...store.reader import Index, like_literal
from .tests import AffectedTest

MAX_FILES = 8
_PACKAGE_MIN_PARTS = 2  # never rank by the whole of torch


def _test_file(path: str) -> bool:
    return path.startswith("test/") and path.rsplit("/", 1)[-1].startswith("test_") and path.endswith(".py")


def _imports_of(ix: Index, prefix: str) -> list[tuple[str, str, int]]:
    """(test file, target, line) of every import of ``prefix`` or a name under it by a test file."""
    rows = ix.q("SELECT f.path, i.target, i.line FROM py_import i JOIN files f ON f.id = i.file_id "
                "WHERE f.path LIKE 'test/%' AND (i.target = ? OR i.target LIKE ? ESCAPE '\\') ORDER BY f.path, i.line",
                (prefix, like_literal(prefix) + ".%"))
    return [(p, t, ln) for p, t, ln in rows if _test_file(p)]


def importing_tests(ix: Index, changed: list[str], callers: list[str]) -> tuple[list[AffectedTest], str]:
    """(test files ranked by what they import of ``changed`` (Python fqs) and ``callers`` (their Python callers,
    closest first), how they were found): Note [Tests by import]."""
    names = pynames(ix)
    tops: list[tuple[str, str, str]] = []  # (module, importable name, why) by rank
    for fq, role in [(f, "") for f in changed] + [(f, "caller") for f in callers]:
        d = names.definition(fq)
        if d is None:
            continue
        top = d.qualname.split(".")[0]
        why = (f"imports {top}" + (f", whose {d.qualname.split('.<locals>')[0]} calls the change" if role and
                                   d.qualname != top else " (a caller of the change)" if role else " (changed)"))
        tops.append((d.module, f"{d.module}.{top}", why))
    picked: dict[str, AffectedTest] = {}

    def add(path: str, line: int, why: str, target: str) -> None:
        if path not in picked and len(picked) < MAX_FILES:
            picked[path] = AffectedTest(path, Loc(path, line), TestReason.IMPORTS, target, why, f"pytest {path}")

    modules = list(dict.fromkeys(m for m, _t, _w in tops))
    rows = {m: _imports_of(ix, m) for m in modules}
    for module, target, why in tops:
        for path, imported, line in rows[module]:
            if imported == target or imported.startswith(target + "."):
                add(path, line, why, target)
    for module in modules:
        for path, imported, line in rows[module]:
            add(path, line, f"imports {imported} (from the module of the change or a caller)", module)
    if picked:
        return list(picked.values()), "test files importing the changed code, its callers or their modules"
    for module in modules:
        parts = module.split(".")
        for n in range(len(parts) - 1, _PACKAGE_MIN_PARTS - 1, -1):
            package = ".".join(parts[:n])
            found = _imports_of(ix, package)
            if not found:
                continue
            counts: dict[str, int] = {}
            for path, _t, _l in found:
                counts[path] = counts.get(path, 0) + 1
            first = {p: ln for p, _t, ln in reversed(found)}
            for path in sorted(counts, key=lambda p: (-counts[p], p)):
                add(path, first[path], f"imports {counts[path]} name(s) of package {package} (no test file imports "
                    f"{module} or a caller's module)", package)
            return list(picked.values()), (f"test files importing most from package {package}: no test file imports "
                                           "the changed code, its callers or their modules")
    return [], ""
