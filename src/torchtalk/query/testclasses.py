"""Where a test file's tests run: the classes pytest collects, and the tests each inherits or is given.

Note [Where tests run]
~~~~~~~~~~~~~~~~~~~~~~
pytest collects the classes derived from a TestCase (``py_class_fq.roots`` says ``testcase``); a class that is
none (``StoreTestBase`` in test/distributed/test_store.py, a mixin; inductor's ``CommonTemplate``) runs none of its
tests itself. They run in the collected classes of the file that derive from it, as that class's (``FileStoreTest``,
``HashStoreTest``, ... each runs StoreTestBase's six: HashStoreTest has no test of its own), or in a class a helper
copies them into: a module-level call that hands a template class and a collected class of the file, then a name
suffix (``copy_tests(CommonTemplate, CpuTests, "cpu")``: ``CpuTests.test_bool_cpu``), as test/inductor's
``copy_tests`` does with ``setattr(other_cls, f"{name}_{suffix}", ...)``. A test of such a class is run as one of
the class it runs in. A class the file deletes is not collected either, and one defined under a module-level
``if`` is collected when that holds (Note [Classes pytest may not collect] in model/tests.py). A collected class
runs the tests it inherits as its own (``TestDataLoaderPersistentWorkers(TestDataLoader)`` runs
``TestDataLoaderPersistentWorkers::test_len``, written in TestDataLoader): test_file_info's list of that class
lists them with it, each at the line where it is written and saying which class writes it.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from typing import Protocol, TypeVar

from ..graph.pynames import pynames
from ..graph.source_lines import file_lines
from ..model import Loc
from ..model.paths import TESTING_INTERNAL
from ..model.tests import GPU_TYPE_SUFFIX
from ..store.reader import Index
from .parametrizers import renamers
from .testnames import generated_names, select_one


class _Test(Protocol):
    cls: str
    name: str
    loc: Loc
    decorators: list[str]
    command: str
    generated: list[str]
    opinfo: str | None


T = TypeVar("T", bound=_Test)

_ELSEWHERE = ("test.", "torch.testing._internal.")  # full names of the classes a test class may derive from
# helper(Template, Collected, "suffix"...): the first call of a line that hands two classes and a string
# template, class, then the suffix as a string, or a name the file does not give (GPU_TYPE: "cuda" or "xpu" when
# the tests run, made at run time: ``<GPU_TYPE>`` stands for it)
_COPY = re.compile(r"^\s*[\w.]+\(\s*(\w+)\s*,\s*(\w+)\s*,\s*(?:[\"'](\w+)[\"']|([A-Za-z_]\w*)\s*[,)])", re.M)


@dataclass
class Classes:
    """The test classes of one file, as pytest sees them (Note [Where tests run])."""

    collected: set[str] = field(default_factory=set)  # classes pytest collects (empty: not known, all are)
    inherited: dict[str, list[str]] = field(default_factory=dict)  # collected class -> tests from its bases
    runs_in: dict[str, list[tuple[str, str]]] = field(default_factory=dict)  # not collected -> (class, suffix)
    copied: dict[str, int] = field(default_factory=dict)  # collected class -> tests a helper copies into it
    own: dict[str, list[str]] = field(default_factory=dict)  # class -> the tests it defines
    origin: dict[tuple[str, str], str] = field(default_factory=dict)  # (class, inherited test) -> the class defining it
    # a class of another file that a class here derives from (keyed by its full name) -> its file, its tests as
    # test_file_info's rows (Note [Test imports] in link/pyclasses.py)
    elsewhere: dict[str, tuple[str, list[tuple[str, str, int, str]]]] = field(default_factory=dict)
    deleted: dict[str, int] = field(default_factory=dict)  # class -> the line of the module-level ``del`` of it
    guards: dict[str, str] = field(default_factory=dict)  # class -> the module-level ``if`` it is defined under
    ancestors: dict[str, list[str]] = field(default_factory=dict)  # collected class -> the classes it derives from
    #                                                                 here or in another test file, nearest first

    def is_collected(self, cls: str) -> bool:
        return cls not in self.elsewhere and (not self.collected or not cls or cls in self.collected)

    def source_of(self, cls: str, test: str) -> tuple[str, str] | None:
        """The class and test as written that a test run as ``cls.test`` is (``CpuTests.test_bool_cpu``:
        CommonTemplate.test_bool; ``HashStoreTest.test_append``: StoreTestBase.test_append), or None."""
        if (cls, test) in self.origin:
            return self.origin[(cls, test)], test
        own = self.own.get(cls, [])
        if test in own:  # its own test, though an inherited one's name begins its name (test_serialization_with_header)
            return None
        # a generator's name of an inherited test (test_ddp_checkpointing_once_use_reentrant_True), unless one of the
        # class's own tests names it more closely
        written = max((t for c, t in self.origin if c == cls and test.startswith(f"{t}_")), key=len, default="")
        if written and not any(test.startswith(f"{t}_") and len(t) > len(written) for t in own):
            return self.origin[(cls, written)], written
        for template, into in self.runs_in.items():
            for where, suffix in into:
                if suffix.startswith("<"):  # made at run time: one word ("cuda")
                    base = test.rsplit("_", 1)[0] if "_" in test[5:] else test
                else:
                    base = test[:-len(suffix) - 1] if suffix and test.endswith(f"_{suffix}") else test
                if where == cls and (base != test or not suffix) and base in self.own.get(template, []):
                    return template, base
        return None

    def inherited_rows(self, rows: list[tuple[str, str, int, str]], cls: str
                       ) -> tuple[list[tuple[str, str, int, str]], dict[tuple[str, str], str]]:
        """The tests ``cls`` inherits from classes of its file (a base pytest also collects, a mixin it does not):
        of ``rows`` (test_file_info's: class, test, line, decorators), those of the classes writing them, as rows of
        ``cls`` (with the line and decorators where written, in source order), and (cls, test) -> the class writing
        each. pytest runs them as ``cls``'s: ``TestDataLoaderPersistentWorkers::test_len``. Those of another file's
        classes are ``elsewhere``'s."""
        written = {(r[0], r[1]): r for r in rows}
        out: list[tuple[str, str, int, str]] = []
        origins: dict[tuple[str, str], str] = {}
        for test in self.inherited.get(cls, []):
            base = self.origin.get((cls, test), "")
            row = written.get((base, test))
            if row is not None and base not in self.elsewhere:
                out.append((cls, test, row[2], row[3]))
                origins[(cls, test)] = base
        return sorted(out, key=lambda r: r[2]), origins

    def run_as(self, cls: str, name: str) -> tuple[str, str]:
        """The class and name a test of ``cls`` runs as (itself, when ``cls`` is collected or runs nowhere)."""
        if self.is_collected(cls) or not self.runs_in.get(cls):
            return cls, name
        where, suffix = self.runs_in[cls][0]
        return where, f"{name}_{suffix}" if suffix else name


def test_classes(ix: Index, fid: int, source: str | None, own: dict[str, list[str]]) -> Classes:
    """``own``: class -> its own tests, in source order; ``source``: the file's text (None: unread)."""
    rows = ix.q("SELECT name, roots, bases, module FROM py_class_fq WHERE file_id = ? AND source = 'test'", (fid,))
    if not rows:
        return Classes(own=own)
    names = {r[0] for r in rows}
    parents: dict[str, list[str]] = {}
    deleted, guards = _deleted_and_guarded(ix, fid)
    out = Classes({name for name, roots, _b, _m in rows if "testcase" in (roots or "").split()
                   and name not in deleted}, own=own, deleted=deleted, guards=guards)
    for name, _roots, bases, module in rows:
        parents[name] = []
        for b in json.loads(bases or "[]"):
            if b.rsplit(".", 1)[0] == module and b.rsplit(".", 1)[-1] in names:
                parents[name].append(b.rsplit(".", 1)[-1])
            elif _foreign(ix, b, parents, out):  # a class of another test file (Note [Test imports])
                parents[name].append(b)

    def ancestors(cls: str, seen: frozenset[str] = frozenset()) -> list[str]:
        found: list[str] = []
        for p in parents.get(cls, []):
            if p not in seen and p not in found:
                found += [p, *(a for a in ancestors(p, seen | {cls}) if a not in found)]
        return found

    for cls in sorted(out.collected):
        mine, above = set(own.get(cls, [])), ancestors(cls)
        out.ancestors[cls] = above
        got = [(t, a) for a in above for t in own.get(a, []) if t not in mine]
        if got:
            out.inherited[cls] = list(dict.fromkeys(t for t, _a in got))
            for t, a in reversed(got):  # the first ancestor defining it wins, as Python's lookup does
                out.origin[(cls, t)] = a
        for a in above:
            if a not in out.collected and own.get(a):
                out.runs_in.setdefault(a, []).append((cls, ""))
    for m in _COPY.finditer(source or ""):
        template, into, literal, name = m.groups()
        suffix = literal or f"<{name}>"
        if template in names and template not in out.collected and into in out.collected and own.get(template):
            out.runs_in.setdefault(template, []).append((into, suffix))
            out.copied[into] = out.copied.get(into, 0) + len(own[template])
    return out


def _deleted_and_guarded(ix: Index, fid: int) -> tuple[dict[str, int], dict[str, str]]:
    """(class -> line of the module-level ``del`` that removes it before pytest collects, class -> the module-level
    ``if`` it is defined under) of one file (Note [Classes pytest may not collect]). A class the device-type
    generator instantiated before its ``del`` still runs, as the classes generated from it: not deleted here."""
    generated = dict(ix.q("SELECT cls, min(line) FROM test_instantiation WHERE file_id = ? AND kind = 'device_type' "
                          "GROUP BY cls", (fid,)))
    deleted: dict[str, int] = {}
    guards: dict[str, str] = {}
    for name, line, guard in ix.q("SELECT name, deleted, guard FROM test_class WHERE file_id = ? AND "
                                  "(deleted > 0 OR guard != '')", (fid,)):
        if line and not (name in generated and generated[name] < line):
            deleted[name] = line
        if guard:
            guards[name] = guard
    return deleted, guards


def _foreign(ix: Index, fq: str, parents: dict[str, list[str]], out: Classes, depth: int = 0) -> bool:
    """Whether ``fq`` is a class of another test file (or of torch/testing/_internal) with tests or bases of its
    own; if so, record its tests and bases in ``out`` and ``parents``, keyed by ``fq`` (its bases too)."""
    if fq in parents or fq in out.own:
        return True
    row = ix.q("SELECT file_id, name, bases FROM py_class_fq WHERE fq = ?", (fq,)) if fq.startswith(_ELSEWHERE) else []
    if not row or depth > 8:
        return False
    fid, name, bases = row[0]
    rows = [(fq, t, line, decos) for t, line, decos in ix.q(
        "SELECT m.name, m.line, m.decorators FROM test_method m JOIN test_class c ON c.id = m.cls "
        "WHERE c.file_id = ? AND c.name = ? ORDER BY m.line", (fid, name))]
    parents[fq] = [b for b in json.loads(bases or "[]") if _foreign(ix, b, parents, out, depth + 1)]
    if not rows and not parents[fq]:
        del parents[fq]
        return False
    out.own[fq] = [r[1] for r in rows]
    out.elsewhere[fq] = (ix.path_of(fid), rows)
    return True


def classes_of(ix: Index, fid: int) -> Classes:
    """``test_classes`` of one indexed test file (memoised per index version)."""
    memo: dict[int, Classes] = ix.cached("test_classes_of", dict)
    if fid not in memo:
        own: dict[str, list[str]] = {}
        for cls, name in ix.q("SELECT coalesce(c.name, ''), m.name FROM test_method m LEFT JOIN test_class c "
                              "ON c.id = m.cls WHERE m.file_id = ? ORDER BY m.line", (fid,)):
            own.setdefault(cls, []).append(name)
        memo[fid] = test_classes(ix, fid, "\n".join(file_lines(ix, ix.path_of(fid))), own)
    return memo[fid]


def run_where_collected(ix: Index, tests: list[T]) -> list[T]:
    """``tests`` (find_similar_tests' FoundTest) with the command of each test of a class pytest does not collect
    naming a class it runs in (Note [Where tests run]), and each command selecting that test's family only (Note
    [Selecting one test's family]); a test another parametrizer renames (Note [Parametrizers rename tests]) with
    the names it makes."""
    for t in tests:
        where = runs_where(ix, t.loc.path, t.cls, t.name)
        fid = ix.file_ids().get(where[0])
        named = renamers(ix, t.loc.path, t.decorators)
        opts = None
        if where == (t.loc.path, t.cls, t.name):
            row = ix.one("SELECT options FROM test_instantiation WHERE file_id = ? AND cls = ? AND kind = "
                         "'device_type'", (fid, t.cls))
            opts = row[0] if row else None
        others: list[str] = []
        if fid is not None and where[0].startswith("test/"):
            mine = classes_of(ix, fid)
            others = [n for n in mine.own.get(where[1], []) + mine.inherited.get(where[1], []) if n != where[2]]
            others += [c for c in mine.own if c and "." not in c and c != where[1]]
        t.command = select_one(*where, t.decorators, opts, named, others).command
        if named:
            t.generated = generated_names(where[1] if opts is None else t.cls, where[2], t.decorators, opts,
                                          t.opinfo, named)
    return tests


def runs_where(ix: Index, path: str, cls: str, name: str) -> tuple[str, str, str]:
    """(file, class, name) pytest runs test ``cls.name`` of ``path`` as: itself; as a class of its file that
    derives from its class or that a helper copies it into (Note [Where tests run]); as a class of another test
    file deriving from it (Note [Test imports]: test_c10d_common.py's mixins, torch/testing/_internal's
    _DistTestBase, which no test run collects where they are written). Itself when none is known."""
    fid = ix.file_ids().get(path)
    if fid is None or not cls:
        return path, cls, name
    if not path.startswith(TESTING_INTERNAL):
        where = classes_of(ix, fid)
        if where.is_collected(cls):
            return path, cls, name
        into, as_name = where.run_as(cls, name)
        if into != cls:
            return path, into, as_name
    other = derived_elsewhere(ix, fid, cls)
    return (other[0], other[1], name) if other is not None else (path, cls, name)


def device_copy(ix: Index, path: str, cls: str, name: str, device: str) -> str:
    """The node id of template ``cls``'s test ``name`` in the class a helper copies it into for ``device``
    (``copy_tests(CommonTemplate, GPUTests, GPU_TYPE)``: GPU_TYPE is "cuda" or "xpu" when the tests run, so on a
    CUDA machine the copy suffixed ``<GPU_TYPE>`` is ``GPUTests::test_x_cuda``); "" when none is known (Note [Where
    tests run])."""
    fid = ix.file_ids().get(path)
    if fid is None or not cls or path.startswith(TESTING_INTERNAL):
        return ""
    gpu = (GPU_TYPE_SUFFIX,) if device == "cuda" else ()
    into = next((into for into, suffix in classes_of(ix, fid).runs_in.get(cls, []) if suffix in (device, *gpu)), "")
    return f"{path}::{into}::{name}_{device}" if into else ""


def derived_elsewhere(ix: Index, fid: int, cls: str) -> tuple[str, str] | None:
    """(file, class) of the first class pytest collects in another test file that derives from ``cls`` of file
    ``fid`` (a mixin of test_c10d_common.py, torch/testing/_internal's _DistTestBase: Note [Test imports]), or
    None."""
    memo: dict[tuple[int, str], tuple[str, str] | None] = ix.cached("derived_elsewhere", dict)
    if (fid, cls) not in memo:
        found = None
        for (fq,) in ix.q("SELECT fq FROM py_class_fq WHERE file_id = ? AND name = ?", (fid, cls)):
            rows = [(ix.path_of(d.file_id), d.name) for d in pynames(ix).derived(fq)
                    if d.source == "test" and d.file_id != fid and "testcase" in d.roots.split()]
            if rows:
                found = min(rows)
                break
        memo[(fid, cls)] = found
    return memo[(fid, cls)]
