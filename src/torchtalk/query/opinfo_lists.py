"""Which test files' ``@ops(...)`` tests run an OpInfo entry: the lists each file's @ops take, and which
entries each list holds.

Note [OpInfo lists]: the generic suites take the list an entry is written into (``op_db``: test_ops.py and
kin); the family suites take lists drawn from it (``unary_ufuncs = [op for op in ops_and_refs if
isinstance(op, UnaryUfuncInfo)]``: test_unary_ufuncs.py; ``sparse_unary_ufuncs = [... and op.supports_sparse]``:
test_sparse.py). Both are read from the tree: a file's @ops decorators name its lists, and a list's definition
(model.OpInfoList) says what an entry needs to be in it: to be in one of its sources, an instance of one of its
classes (the entry's constructor or a subclass of it), and to pass True for each attribute it tests. A list with
a condition that is not one of these (``op.ref is not None``) may leave the entry out: it is not counted. A name
defined in the file that uses it is that file's list (test_unary_ufuncs.py's own reference_filtered_ops), else
the one torch/testing defines.
"""

from __future__ import annotations

import json
import re
from collections import Counter
from dataclasses import dataclass

from ..store.reader import Index
from .testnames import generator

_WORD = re.compile(r"\b[A-Za-z_]\w*\b")


@dataclass(frozen=True)
class FamilySuite:
    """A test file whose @ops tests take a list drawn from an entry's own, and hold the entry."""

    path: str
    lists: tuple[str, ...]  # its @ops lists that hold the entry (sparse_unary_ufuncs)
    tests: int  # its @ops tests that take them
    command: str = ""  # the pytest command running the entry's tests there (Note [Exact -k selections])


@dataclass(frozen=True)
class _Def:
    path: str
    sources: tuple[str, ...]
    isa: tuple[str, ...]
    flags: frozenset[str]
    dropped: int


def _defs(ix: Index) -> dict[str, list[_Def]]:
    def build() -> dict[str, list[_Def]]:
        out: dict[str, list[_Def]] = {}
        for name, sources, isa, flags, dropped, fid in ix.q(
                "SELECT name, sources, isa, flags, dropped, file_id FROM op_info_list ORDER BY id"):
            out.setdefault(name, []).append(_Def(ix.path_of(fid), tuple(sources.split()), tuple(isa.split()),
                                                 frozenset(flags.split()), dropped))
        return out
    table: dict[str, list[_Def]] = ix.cached("opinfo_list_defs", build)
    return table


def list_uses(ix: Index) -> dict[str, Counter[str]]:
    """List name (op_db, unary_ufuncs) -> the test files whose @ops(...) tests take it, with how many tests (once per
    index version)."""
    def build() -> dict[str, Counter[str]]:
        known = set(_defs(ix)) | {db for (db,) in ix.q("SELECT DISTINCT db FROM op_info_entry WHERE db != ''")}
        counts: dict[str, Counter[str]] = {}
        for decorators, fid in ix.q("SELECT decorators, file_id FROM test_method WHERE decorators LIKE '%ops(%'"):
            for d in json.loads(decorators or "[]"):
                if generator(d) == "ops":
                    for name in set(_WORD.findall(d)) & known:
                        counts.setdefault(name, Counter())[ix.path_of(fid)] += 1
        return counts
    table: dict[str, Counter[str]] = ix.cached("opinfo_list_uses", build)
    return table


def db_files(ix: Index) -> dict[str, list[str]]:
    """An entry's own list (op_db, foreach_unary_op_db) -> the test files whose @ops(...) tests take it, most tests
    first."""
    return {name: [p for p, _n in c.most_common()] for name, c in list_uses(ix).items()}


def _classes(ix: Index, ctor: str) -> set[str]:
    """The constructor and the classes it derives from, by name (ElementwiseUnaryPythonRefInfo -> UnaryUfuncInfo)."""
    def build() -> dict[str, list[str]]:
        bases: dict[str, list[str]] = {}
        for name, written in ix.q("SELECT name, bases FROM py_class WHERE name LIKE '%Info'"):
            bases.setdefault(name, []).extend(b.rsplit(".", 1)[-1] for b in json.loads(written or "[]"))
        return bases
    bases: dict[str, list[str]] = ix.cached("opinfo_class_bases", build)
    out, todo = set(), [ctor]
    while todo:
        c = todo.pop()
        if c not in out:
            out.add(c)
            todo += bases.get(c, [])
    return out


def family_suites(ix: Index, ctor: str, db: str, flags: str) -> list[FamilySuite]:
    """The files whose @ops tests take a list drawn from the entry's own list ``db`` that holds it (Note [OpInfo
    lists]), most tests first; the files taking ``db`` itself (the generic suites) are not among them."""
    defs = _defs(ix)
    classes = _classes(ix, ctor)
    have = frozenset(flags.split())
    memo: dict[tuple[str, str], bool] = {}

    def holds(name: str, used_in: str) -> bool:
        if name == db:
            return True
        key = (name, used_in)
        if key not in memo:
            memo[key] = False  # a list drawn from itself holds nothing more
            mine = [d for d in defs.get(name, []) if d.path == used_in]
            memo[key] = any(not d.dropped and d.flags <= have and (not d.isa or classes & set(d.isa))
                            and any(holds(s, d.path) for s in d.sources)
                            for d in mine or [d for d in defs.get(name, []) if not d.path.startswith("test/")])
        return memo[key]

    by_file: dict[str, tuple[list[str], int]] = {}
    generic = set(list_uses(ix).get(db, Counter()))
    for name, files in list_uses(ix).items():
        if name == db:
            continue
        for path, n in files.items():
            if path not in generic and holds(name, path):
                lists, tests = by_file.get(path, ([], 0))
                by_file[path] = ([*lists, name], tests + n)
    return sorted((FamilySuite(p, tuple(sorted(ls)), n) for p, (ls, n) in by_file.items()),
                  key=lambda f: (-f.tests, f.path))
