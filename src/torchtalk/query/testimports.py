"""What a test file runs beyond the tests it writes: TestCases it imports, classes filled at import time, and the
conditions on the whole class or the whole file.

Note [Imported test classes]
~~~~~~~~~~~~~~~~~~~~~~~~~~~~
pytest and unittest's loader (run_tests) collect every TestCase in a module's namespace as it is once the module
has run, wherever the class is written: ``from jit.test_tracer import TestTracer  # noqa: F401`` in
test/test_jit.py runs TestTracer's tests as test_jit's, and ``from test_jit import *`` (test/test_jit_simple.py,
after setting ``--jit-executor=simple``) binds every public name of test_jit, its imported classes too, so the
file runs all of them under another executor. A name is resolved as Note [Test imports] says (beside the file, then
test/); a star import binds the module's own public classes and, recursively, the names that module imports.

A TestCase with no tests written whose name the file passes to a call outside the class
(``post_add_test(test_name, (), do_test, TestJitGeneratedModule)``, run from module-level loops) has its tests
added at import time: its count is not known from the source, and the answer says so rather than leaving it out.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Collection
from dataclasses import dataclass

from ..graph.pynames import pynames
from ..link.pyclasses import TEST_PACKAGE, module_of
from ..store.reader import Index

MAX_DEPTH = 6


@dataclass(frozen=True)
class ImportedClass:
    name: str  # the name bound in the importing module
    fq: str
    path: str  # the file it is written in
    line: int
    module: str  # the module imported from, as written ("jit.test_tracer", "test_jit")


def imported_classes(ix: Index, path: str) -> list[ImportedClass]:
    """The TestCases of other test files that ``path``'s module namespace holds by import (Note [Imported test
    classes]), in import order."""
    memo: dict[str, list[ImportedClass]] = ix.cached("imported_test_classes", dict)
    if path not in memo:
        found: dict[str, ImportedClass] = {}
        _bound(ix, module_of(path), path, found, 0, frozenset())
        memo[path] = list(found.values())
    return memo[path]


def _bound(ix: Index, module: str, path: str, found: dict[str, ImportedClass], depth: int,
           seen: frozenset[str], written: str = "") -> None:
    names = pynames(ix)
    explicit, stars = names.imports(module)
    for alias, target in explicit.items():
        if alias.startswith("_") and depth or alias in found:
            continue
        row = _testcase(ix, _candidates(module, target))
        if row is not None and row[2] != path:
            found[alias] = ImportedClass(alias, row[0], row[2], row[1], written or target.rsplit(".", 1)[0])
    if depth >= MAX_DEPTH:
        return
    for star in stars:
        other = next((m for m in _candidates(module, star) if m in names.module_files and m not in seen), None)
        if other is None:
            continue
        fid = names.module_files[other]
        for name, fq, line in ix.q("SELECT name, fq, line FROM py_class_fq WHERE file_id = ? AND source = 'test' "
                                   "AND (' ' || roots || ' ') LIKE '% testcase %' ORDER BY line", (fid,)):
            if not name.startswith("_") and name not in found and fq == f"{other}.{name}":
                found[name] = ImportedClass(name, fq, ix.path_of(fid), line, written or star)
        _bound(ix, other, path, found, depth + 1, seen | {module}, written or star)


def _candidates(module: str, target: str) -> list[str]:
    """``target`` as imported from ``module``: itself, beside the file, in test/ (Note [Test imports])."""
    out = [target]
    if module.startswith(TEST_PACKAGE):
        for package in dict.fromkeys((module.rpartition(".")[0], TEST_PACKAGE.rstrip("."))):
            out.append(f"{package}.{target}")
    return out


def _testcase(ix: Index, fqs: list[str]) -> tuple[str, int, str] | None:
    for fq in fqs:
        row = ix.one("SELECT fq, line, file_id, roots, source FROM py_class_fq WHERE fq = ?", (fq,))
        if row is not None and row[4] == "test" and "testcase" in row[3].split():
            return row[0], row[1], ix.path_of(row[2])
    return None


def filled_at_import(source: str, name: str, start: int, end: int, skip: Collection[int] = ()) -> int:
    """The line of the first call outside the class (lines ``start``..``end``) that passes class ``name`` as an
    argument (Note [Imported test classes]), or 0; ``skip``: lines known to be other calls (the instantiations)."""
    arg = re.compile(rf"[(,]\s*{re.escape(name)}\s*[,)]")
    for i, line in enumerate(source.splitlines(), 1):
        if start <= i <= end or i in skip or line.lstrip().startswith(("#", "class ")):
            continue
        if any(_callee(line, m.start()) not in _READS_A_CLASS for m in arg.finditer(line)):
            return i
    return 0


# builtins a class is passed to without any test being added to it (``if hasattr(TestNN, name)``)
_READS_A_CLASS = frozenset({"hasattr", "getattr", "isinstance", "issubclass", "super", "type", "id", "print", "repr",
                            "str", "vars", "dir"})


def _callee(line: str, at: int) -> str:
    """The name of the function whose argument list holds position ``at`` of ``line`` ("" when none shows)."""
    depth = 0
    for j in range(at, -1, -1):
        ch = line[j]
        if ch == ")" and j != at:
            depth += 1
        elif ch == "(":
            if depth == 0:
                m = re.search(r"([\w.]+)\s*$", line[:j])
                return m.group(1).rsplit(".", 1)[-1] if m else ""
            depth -= 1
    return ""


# Note [Conditions on the whole file]
# ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
# A ``__main__`` block may run the tests only under a condition (test/inductor/test_aot_inductor_custom_ops.py:
# ``if HAS_CUDA or sys.platform == "darwin": run_tests(needs="filelock")``): ``python <file>`` on a machine where
# it does not hold runs nothing, whatever the classes. pytest, which imports the module without running
# ``__main__``, is not gated by it. The condition is read from the block as written and shown with the command.
def main_gate(main_body: str) -> str:
    """The condition of the ``if`` arms around the ``run_tests(`` call of a ``__main__`` block's body ("": none)."""
    lines = main_body.splitlines()
    indent = min((len(x) - len(x.lstrip()) for x in lines if x.strip()), default=0)
    try:
        tree = ast.parse("\n".join(x[indent:] for x in lines))
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return ""

    def gate(body: list[ast.stmt], conds: tuple[str, ...]) -> str | None:
        for s in body:
            if s.__class__ is ast.If:
                for sub, cond in ((s.body, ast.unparse(s.test)), (s.orelse, f"not ({ast.unparse(s.test)})")):
                    found = gate(sub, (*conds, cond))
                    if found is not None:
                        return found
            elif any(n.__class__ is ast.Call and getattr(n.func, "id", getattr(n.func, "attr", "")) == "run_tests"
                     for n in ast.walk(s)):
                return " and ".join(conds)
        return None

    return gate(tree.body, ()) or ""
