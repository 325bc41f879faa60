"""list_test_utils and test_file_info: what torch.testing._internal offers, and what one test file holds."""

from __future__ import annotations

import difflib
import json
import os
import re
from collections import Counter
from dataclasses import dataclass, field, replace
from functools import partial
from pathlib import PurePosixPath

from ..errors import BadArgument
from ..graph.registry import registry
from ..graph.source_lines import file_lines
from ..link.pyclasses import module_of
from ..model import InstantiationKind, Loc
from ..store.reader import Index
from .args import MAX_LIMIT, check_int, clean_text, shown
from .decorator_defs import decides_where
from .parametrizers import renamers
from .results import NotFound
from .testclasses import Classes, classes_of, derived_elsewhere
from .testimports import filled_at_import, imported_classes, main_gate
from .testlist import (
    NodeId,
    TestPage,
    clean_filter,
    generic_class,
    node_filters,
    node_id,
    page_call,
    runs_where,
    test_page,
)
from .testnames import generated_names, possible_devices

# ------------------------------------------------------------------ list_test_utils

@dataclass
class TestUtilsResult:
    __test__ = False
    category: str
    groups: dict[str, list[tuple[str, str, Loc, str, int]]]  # category -> [(name, kind, loc, doc, used_by)]
    counts: dict[str, int]
    hidden: dict[str, int] = field(default_factory=dict)
    limit: int = 0  # per category; counts says how many there are


def util_categories(ix: Index) -> list[str]:
    return ix.cached("util_categories", lambda: sorted(r[0] for r in ix.q("SELECT DISTINCT category FROM test_util")))


def util_usage(ix: Index) -> dict[tuple[str, str], int]:
    """How many test files import each helper from torch.testing._internal (the signal for what matters), by
    (defining module, name): two helpers of one name in two modules (the DTensor and the sharded-tensor
    ``with_comms``) are counted apart. A name imported from a module that only re-exports it counts for the one
    module defining it, when only one does."""
    def load() -> dict[tuple[str, str], int]:
        defined: dict[str, set[str]] = {}
        for fid, name in ix.q("SELECT DISTINCT file_id, name FROM test_util"):
            defined.setdefault(name.split(".")[0], set()).add(module_of(ix.path_of(fid)))
        rows = ix.q("SELECT i.target, count(DISTINCT i.file_id) FROM py_import i JOIN files f ON f.id = i.file_id "
                    "WHERE f.path LIKE 'test/%' AND i.target LIKE 'torch.testing._internal.%' GROUP BY i.target")
        usage: dict[tuple[str, str], int] = {}
        for target, n in rows:
            module, _, name = target.rpartition(".")
            mods = defined.get(name, set())
            where = module if module in mods else next(iter(mods)) if len(mods) == 1 else None
            if where is not None:
                usage[where, name] = usage.get((where, name), 0) + n
        return usage
    return ix.cached("util_usage", load)


def list_test_utils(ix: Index, category: str = "all", limit: int = 25) -> TestUtilsResult:
    cat = clean_text(category, "category", "all", max_len=100).lower()
    limit = check_int(limit, "limit", 1, MAX_LIMIT)
    cats = util_categories(ix)
    if cat != "all" and cat not in cats:
        if not cats:
            raise BadArgument(f"category {shown(cat)}: no test utilities are indexed (torch/testing/_internal is "
                              "missing from this tree); the only valid category is 'all'")
        raise BadArgument(f"category {shown(cat)} is not valid; choose one of: all, {', '.join(cats)}")
    counts = dict(ix.q("SELECT category, count(*) FROM test_util GROUP BY category"))
    usage = util_usage(ix)
    # "all" lists the categories a test author reaches for; the long tail stays countable.
    chosen = [c for c in cats if c != "other"] if cat == "all" else [cat]
    groups: dict[str, list[tuple[str, str, Loc, str, int]]] = {}
    for c in chosen:
        rows = ix.q("SELECT name, kind, file_id, line, doc FROM test_util WHERE category = ? ORDER BY file_id, line",
                    (c,))
        # Most-imported first (a method counts its class's imports), then source order.
        items = [(name, kind, Loc(ix.path_of(fid), line), doc,
                  usage.get((module_of(ix.path_of(fid)), name.split(".")[0]), 0))
                 for name, kind, fid, line, doc in rows]
        items.sort(key=lambda it: -it[4])
        groups[c] = items[:limit]
    hidden = {c: counts[c] for c in cats if c not in chosen}
    return TestUtilsResult(cat, groups, counts, hidden, limit)


# ------------------------------------------------------------------ test_file_info

@dataclass
class TestClassInfo:
    __test__ = False
    name: str
    loc: Loc
    bases: list[str]
    tests: int  # its own
    device_type: str  # options JSON when instantiated per device, else ""
    generated_classes: list[str]
    parametrized: bool
    inherited: int = 0  # tests it runs from the file's classes it derives from or a helper copies in (Note [Where
    #                     tests run] in query/testclasses.py)
    runs_in: list[str] = field(default_factory=list)  # no TestCase: the classes its tests run in ("CpuTests _cpu")
    collected: bool = True  # pytest collects it (a TestCase), or the file's classes are not known
    deleted: int = 0  # the line of the module-level ``del`` that removes it (Note [Classes pytest may not collect])
    guard: str = ""  # the condition of the module-level ``if`` it is defined under: collected only when it holds
    decorators: list[str] = field(default_factory=list)  # on the class, deciding where it runs: each test has them
    imported_from: str = ""  # another file's TestCase this module imports (Note [Imported test classes])
    filled_at: int = 0  # the line of the call that adds its tests at import time (its count is not known)
    from_bases: list[tuple[str, str]] = field(default_factory=list)  # (class of the file it derives from, one of
    #                                                                   that class's ``decorators``): applies here too


@dataclass
class TestFileInfo:
    __test__ = False
    path: str
    classes: list[TestClassInfo]
    functions: list[tuple[str, Loc]]
    instantiations: list[tuple[str, str, Loc, str]]  # kind, class, loc, options
    decorators: list[tuple[str, int]]
    utilities: list[tuple[str, str]]  # imported name, from module
    ops: list[tuple[str, int]]
    total_tests: int  # what pytest runs: each test once per class that collects it
    command: str
    page: TestPage | None = None  # the tests listed, with their lines and where they run
    via_class: str = ""  # the page's class is another file's: the class of this file asked for, which derives from it
    conditional: int = 0  # of total_tests, those of classes defined under a module-level ``if``
    imported_by: tuple[str, str] = ("", "")  # asked through another file that imports the class: (its path, module)
    added_at: int = 0  # a node id's test no class writes, of a class a call adds tests to at import time: its line


def _safe_relpath(ix: Index, text: str) -> list[str]:
    """Candidate relpaths for ``text``, refusing anything that leaves the source tree."""
    root = ix.source_root
    p = text.replace("\\", "/")
    if p.startswith("~") or p.startswith("/") or (len(p) > 1 and p[1] == ":"):
        if root is None:
            raise BadArgument("file_path must be relative to the source tree, e.g. 'test/test_nn.py'")
        real = os.path.realpath(os.path.expanduser(p))
        if not (real + os.sep).startswith(str(root) + os.sep):
            raise BadArgument(f"file_path {shown(text)} is outside the source tree {root}; give a path inside it, "
                              "e.g. 'test/test_nn.py' or 'test_nn'")
        p = os.path.relpath(real, root)
    norm = os.path.normpath(p)
    if norm == ".." or norm.startswith("../") or ".." in PurePosixPath(p).parts:
        raise BadArgument(f"file_path {shown(text)} leaves the source tree ('..' is not allowed); give a path such as "
                          "'test/test_nn.py' or 'test_nn'")
    cands = []
    named = PurePosixPath(norm)
    # a topic names its test file as PyTorch's layout does: autograd -> test/test_autograd.py,
    # distributed/c10d -> test/distributed/test_c10d.py
    prefixed = [] if named.name.startswith("test") else [str(named.parent / f"test_{named.name}")]
    for c in (norm, f"test/{norm}", *prefixed, *(f"test/{x}" for x in prefixed)):
        cands += [c, c + ".py"] if not c.endswith(".py") else [c]
    if root is not None:
        for c in cands:
            full = os.path.join(root, c)
            if os.path.lexists(full) and not (os.path.realpath(full) + os.sep).startswith(str(root) + os.sep):
                raise BadArgument(f"file_path {shown(text)} is a link that leads outside the source tree; refused")
    return cands


def test_file_info(ix: Index, file_path: str, class_name: str = "", query: str = "",
                   offset: int = 0) -> TestFileInfo | NotFound:
    node = node_id(clean_text(file_path, "file_path", "test_nn"))  # a pytest node id names a class and a test too
    text = node.path
    class_name = clean_filter(class_name, "class_name", "TestNN")
    query = clean_filter(query, "query", "softmax")
    offset = check_int(offset, "offset", 0, 1_000_000)
    cands = _safe_relpath(ix, text)
    inv = ix.file_ids()
    fid = next((inv[c] for c in cands if c in inv and (c.startswith("test/") or c.startswith("torch/testing/"))), None)
    if fid is None:
        names = sorted(p for p in inv if p.startswith("test/") and p.endswith(".py"))
        stem = PurePosixPath(text).name.removesuffix(".py")
        # test files named with it first (conv: test_convolution.py), then names close to test_<it>.py, which is how
        # a test file is named (relu is close to no test file, though it is to setup.py)
        bases = [PurePosixPath(n).name for n in names]
        low = stem.lower()
        close = sorted((b for b in dict.fromkeys(bases) if b.startswith("test") and low in b.lower()),
                       key=lambda b: (not b.lower().startswith(f"test_{low}"), len(b), b))
        close += [b for b in difflib.get_close_matches(stem if stem.startswith("test") else f"test_{stem}",
                                                      [b.removesuffix(".py") for b in bases], n=8, cutoff=0.6)]
        close = list(dict.fromkeys(c if c.endswith(".py") else c + ".py" for c in close))
        full = sorted((n for n in names if PurePosixPath(n).name in close),
                      key=lambda n: (close.index(PurePosixPath(n).name), n.count("/"), n))[:8]
        return NotFound("test file", text, full, "Give a file under test/, e.g. 'test_torch', 'test_nn.py', "
                                                 "'test/distributed/test_c10d.py'.")
    path = ix.path_of(fid)
    status = ix.one("SELECT status FROM files WHERE id = ?", (fid,))
    if status and status[0] != "ok":
        return NotFound("indexed test file", text, [], f"{path} is in the tree but was not indexed: {status[0]}.")
    there = _imported_class_asked(ix, fid, path, node, class_name, query, offset)
    if there is not None:
        return there
    insts = ix.q("SELECT kind, cls, line, options FROM test_instantiation WHERE file_id = ? ORDER BY line", (fid,))
    device = {cls: opts for kind, cls, _l, opts in insts if kind == InstantiationKind.DEVICE_TYPE}
    param = {cls for kind, cls, _l, _o in insts if kind == InstantiationKind.PARAMETRIZED}
    classes = []
    spans: dict[str, tuple[int, int]] = {}
    rows = ix.q("SELECT coalesce(c.name, ''), m.name, m.line, m.decorators FROM test_method m "
                "LEFT JOIN test_class c ON c.id = m.cls WHERE m.file_id = ? ORDER BY m.line", (fid,))
    where = classes_of(ix, fid)  # Note [Where tests run]
    by_class = where.own  # class ('' for module-level functions) -> its tests, in source order
    source = "\n".join(file_lines(ix, path))
    class_rows = ix.q("SELECT name, bases, line, end_line, decorators FROM test_class WHERE file_id = ? ORDER BY line",
                      (fid,))
    on_class = {name: [d for d in json.loads(cdecos or "[]") if runs_where(d) or decides_where(ix, path, d)]
                for name, _b, _l, _e, cdecos in class_rows}
    for name, bases, line, end, _cdecos in class_rows:
        spans[name] = (line, end)
        n, inherited = len(by_class.get(name, [])), len(where.inherited.get(name, [])) + where.copied.get(name, 0)
        filled = filled_at_import(source, name, line, end) if name in where.collected and not n + inherited else 0
        if not n and not inherited and name not in device and not filled:
            continue  # helpers and fixtures classes without tests
        gen = [g.split(".")[0] for g in generated_names(name, "x", [], device[name])] if name in device else []
        runs_in = [] if where.is_collected(name) else [f"{c} (as test_..._{s})" if s else c
                                                       for c, s in where.runs_in.get(name, [])]
        classes.append(TestClassInfo(name, Loc(path, line), json.loads(bases or "[]"), n, device.get(name, ""),
                                     list(dict.fromkeys(gen)), name in param, inherited, runs_in,
                                     where.is_collected(name), where.deleted.get(name, 0),
                                     where.guards.get(name, ""),
                                     on_class[name], filled_at=filled,
                                     # a skip or xfail on a class marks it, and a class deriving from it inherits that
                                     from_bases=[(a, d) for a in where.ancestors.get(name, [])
                                                 for d in on_class.get(a, []) if d not in on_class[name]]))
    imported = _imported(ix, path, {c.name for c in classes})
    classes += imported
    functions = [(name, Loc(path, line)) for name, line in ix.q(
        "SELECT name, line FROM test_method WHERE file_id = ? AND cls IS NULL ORDER BY line", (fid,))]
    decos: Counter[str] = Counter()
    touched: Counter[str] = Counter()
    for decorators, touches in ix.q("SELECT decorators, touches FROM test_method WHERE file_id = ?", (fid,)):
        for d in json.loads(decorators or "[]"):
            decos[d.split("(")[0]] += 1
        touched.update(touches.split())
    utilities = [(alias, target.rsplit(".", 1)[0]) for alias, target in ix.q(
        "SELECT alias, target FROM py_import WHERE file_id = ? AND target LIKE 'torch.testing._internal.%' "
        "ORDER BY id", (fid,))]
    reg = registry(ix)
    ops: Counter[str] = Counter()
    for tok, n in touched.items():
        name = tok.lstrip(".")
        if tok.startswith("torch.") and tok in reg.py_by_name:
            ops[tok] += n
        elif tok.startswith(".") and f"Tensor.{name}" in reg.py_by_name:
            ops[f"Tensor.{name}"] += n
        elif tok.startswith("F.") and f"torch.nn.functional.{tok[2:]}" in reg.py_by_name:
            ops[f"torch.nn.functional.{tok[2:]}"] += n
    # what pytest runs: each collected class's own and inherited tests, a template's in each class it is copied into
    runs = {c: len(t) for c, t in by_class.items() if where.is_collected(c)}
    for c, t in where.inherited.items():
        runs[c] = runs.get(c, 0) + len(t)
    for c, n in where.copied.items():
        runs[c] = runs.get(c, 0) + n
    for imp in imported:
        runs[imp.name] = imp.tests + imp.inherited
    total, conditional = sum(runs.values()), sum(n for c, n in runs.items() if c in where.guards)
    # the classes a node id may name: a generic class's, of every device type when an option is unread
    names = [c.name for c in classes if not c.imported_from]
    generated = {c.name: list(dict.fromkeys([*c.generated_classes, *(
        f"{c.name}{d.upper()}" for d in possible_devices(c.device_type, []))])) if c.device_type else []
        for c in classes}
    via = ""
    asked_as = node.parts if len(node.parts) == 2 else ("", "")  # the class a node id runs its test in, as named
    if len(node.parts) == 2 and (src := where.source_of(*node.parts)) is not None:
        if src[0] not in where.elsewhere and (node.parts[0], src[1]) in where.origin:
            node = replace(node, parts=(node.parts[0], src[1]))  # inherited from a class here: listed as its own
        else:
            via = node.parts[0] if src[0] in where.elsewhere else ""
            node = replace(node, parts=src)  # a test inherited from another file's class or copied into the class
    names += where.elsewhere  # the classes of other files that tests run here are written in
    class_name, query = node_filters(node, names, generated, by_class, class_name, query)
    if class_name:
        class_name = generic_class(class_name, names, generated)
    # a class's tests inherited from classes of this file, as its own rows (Note [Where tests run]); then those
    # that run here as inherited from another file's classes (Note [Test imports]): after the file's own
    from_bases, origins = where.inherited_rows(rows, class_name)
    rows = rows + from_bases + [r for fq in _elsewhere_for(where, class_name) for r in where.elsewhere[fq][1]]
    page = test_page(path, rows, device, class_name, query, offset, lambda n: page_call(path, class_name, query, n),
                     partial(_run_as, ix, fid, path, where, asked_as),
                     {c: p for c, (p, _r) in where.elsewhere.items()},
                     lambda p, d: renamers(ix, p, d), origins, lambda p, d: decides_where(ix, p, d))
    # Note [Tests added at import time]: a node id's test that no class writes, of a class a module-level call fills
    # (test_nn.py's add_test(...) runs setattr(TestNN, name, fn) for each module test of common_nn.py)
    added = filled_at_import(source, class_name, *spans[class_name], {ln for _k, _c, ln, _o in insts}) \
        if len(node.parts) == 2 and not page.matching and class_name in spans else 0
    return TestFileInfo(path, classes, functions, [(k, c, Loc(path, ln), o) for k, c, ln, o in insts],
                        decos.most_common(20), utilities, ops.most_common(40), total, _file_command(ix, path), page,
                        via, conditional, added_at=added)


def _imported(ix: Index, path: str, written: set[str]) -> list[TestClassInfo]:
    """The TestCases of other files the module holds by import, as rows of this file (Note [Imported test
    classes]): their tests, where they are written, run here too."""
    out = []
    for imp in imported_classes(ix, path):
        fid = ix.file_ids().get(imp.path)
        if imp.name in written or fid is None:
            continue
        there = classes_of(ix, fid)
        name = imp.fq.rsplit(".", 1)[-1]
        row = ix.one("SELECT bases, end_line FROM test_class WHERE file_id = ? AND name = ?", (fid, name))
        n, inherited = len(there.own.get(name, [])), len(there.inherited.get(name, [])) + there.copied.get(name, 0)
        filled = 0 if n or inherited or row is None else \
            filled_at_import("\n".join(file_lines(ix, imp.path)), name, imp.line, row[1])
        out.append(TestClassInfo(imp.name, Loc(imp.path, imp.line), json.loads(row[0] or "[]") if row else [],
                                 n, "", [], False, inherited, imported_from=imp.module, filled_at=filled))
    return out


def _run_as(ix: Index, fid: int, path: str, where: Classes, asked_as: tuple[str, ...], cls: str, name: str
            ) -> tuple[str, str, str]:
    """(file, class, name) a test of the page runs as: in a class of this file (Note [Where tests run]), the one a
    node id names when it runs it there (TestSerialization, though TestOldSerialization runs SerializationMixin's
    tests first), or, for a class of this file no class here runs (test_c10d_common.py's
    CommonDistributedDataParallelTest), in another file's class deriving from it (test_c10d_nccl.py's
    DistributedDataParallelTest)."""
    into = dict(where.runs_in.get(cls, []))
    asked_cls, asked_name = asked_as
    if asked_cls in into:
        suffix = into[asked_cls]
        if suffix.startswith("<"):  # made at run time: the node id spells it (GPUTests::test_bool_cuda)
            return path, asked_cls, asked_name if asked_name.startswith(f"{name}_") else name
        return path, asked_cls, f"{name}_{suffix}" if suffix else name
    if cls in where.elsewhere or where.is_collected(cls) or into:
        return (path, *where.run_as(cls, name))
    other = derived_elsewhere(ix, fid, cls)
    return (other[0], other[1], name) if other is not None else (path, cls, name)


def _imported_class_asked(ix: Index, fid: int, path: str, node: NodeId, class_name: str, query: str,
                          offset: int) -> TestFileInfo | NotFound | None:
    """A node id or class_name naming a TestCase the file imports, not one it writes
    (``test/test_ao_sparsity.py::TestWeightNormSparsifier::test_prepare``): pytest collects it there, so the answer
    is its own file's, asked the same way, saying which file asked (Note [Imported test classes]); else None."""
    asked = class_name or (node.parts[0] if node.parts else "")
    if not asked or ix.one("SELECT 1 FROM test_class WHERE file_id = ? AND name = ?", (fid, asked)):
        return None
    imp = next((i for i in imported_classes(ix, path) if i.name == asked), None)
    if imp is None:
        return None
    written = imp.fq.rsplit(".", 1)[-1]
    parts = (written, *node.parts[1:]) if node.parts and node.parts[0] == asked else node.parts
    there = test_file_info(ix, "::".join((imp.path, *parts)), written if class_name else "", query, offset)
    return replace(there, imported_by=(path, imp.module)) if isinstance(there, TestFileInfo) else there


def _elsewhere_for(where: Classes, class_name: str) -> list[str]:
    """The classes of other files whose tests a page of ``class_name`` lists ("": the whole file's)."""
    if not class_name:
        return list(where.elsewhere)
    if class_name in where.elsewhere:
        return [class_name]
    return list(dict.fromkeys(a for (c, _t), a in where.origin.items() if c == class_name and a in where.elsewhere))


_MAIN = re.compile(r"^if\s+__name__\s*==\s*['\"]__main__['\"]\s*:[ \t]*\n((?:[ \t]+.*\n?|[ \t]*\n)*)", re.M)
_RUN_FROM = re.compile(r"python3?\s+(test/[\w/.]+\.py)")


def _file_command(ix: Index, path: str) -> str:
    """How to run the whole file: ``python path`` when its ``__main__`` block calls run_tests (PyTorch's own
    runner: its options, its device-type setup); the file its ``__main__`` names when that refuses to run it
    directly (test/jit/*.py: "use python test/test_jit.py"); else pytest, which needs no ``__main__``."""
    try:
        text = (ix.source_root / path).read_text(encoding="utf-8", errors="replace") if ix.source_root else ""
    except OSError:
        text = ""
    main = _MAIN.search(text)
    body = main.group(1) if main else ""
    if "run_tests(" in body:
        gate = main_gate(body)  # Note [Conditions on the whole file]
        return f"python {path}" + (f" (its __main__ runs the tests only if {gate}: elsewhere it runs none; "
                                   f"pytest {path} is not gated so)" if gate else "")
    other = _RUN_FROM.search(body.replace("\\t", " ").replace("\\n", " ")) if "raise" in body else None
    if other is not None and other.group(1) != path:
        return f"python {other.group(1)} (its __main__ says to run it from there)"
    return f"pytest {path}"
