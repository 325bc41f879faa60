"""find_similar_tests, list_test_utils, test_file_info: from an op or concept to the tests to run."""

from __future__ import annotations

import difflib
import json
import os
from collections import Counter
from dataclasses import dataclass, field
from pathlib import PurePosixPath

from ..errors import BadArgument
from .args import MAX_LIMIT, check_int, clean_text, shown
from ..store.reader import Index
from ..model import Loc
from .results import NotFound
from ..graph.registry import registry
from .testnames import generated_names


@dataclass
class FoundTest:
    name: str
    cls: str
    loc: Loc
    why: str  # "name", "OpInfo", "calls torch.cumsum"
    command: str
    decorators: list[str]
    generated: list[str] = field(default_factory=list)


@dataclass
class MarkHit:
    """A skip, xfail or decorator that names the op in the generic tests."""

    mark: str
    test_class: str
    test_name: str
    device_type: str
    dtypes: str
    loc: Loc
    entry: str  # the OpInfo entry holding it ("" for a test file's list)


@dataclass
class OpInfoHit:
    name: str
    ctor: str
    variant: str
    loc: Loc
    command: str
    marks: list[MarkHit] = field(default_factory=list)  # in its own entry, in ref entries and in test lists


@dataclass
class SimilarTestsResult:
    query: str
    tests: list[FoundTest]
    total: int
    opinfos: list[OpInfoHit]
    home: list[str] = field(default_factory=list)  # the op's home test files, whose tests named after it rank first
    home_why: str = ""


def _like(text: str) -> str:
    return "%" + text.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_") + "%"


def _instantiations(ix: Index) -> dict[tuple[int, str], str]:
    """(file_id, generic class) -> options JSON, for classes passed to instantiate_device_type_tests."""
    return ix.cached("device_type_classes", lambda: {
        (fid, cls): opts for fid, cls, opts in ix.q(
            "SELECT file_id, cls, options FROM test_instantiation WHERE kind = 'device_type'")})


def _command(path: str, cls: str, name: str) -> str:
    if path.startswith("test/"):
        sel = f"{cls} and {name}" if cls else name
        return f'pytest {path} -k "{sel}"'
    return f"python -m pytest {path} -k {name}"


def _terms(q: str) -> tuple[str, list[str]]:
    """Search stem and the spellings a test body would use for it."""
    stem = q
    for prefix in ("torch.nn.functional.", "torch.nn.", "torch.", "F.", "nn.", "Tensor.", "aten::", "test_"):
        if stem.startswith(prefix):
            stem = stem[len(prefix):]
    return stem, [f"torch.{stem}", f".{stem}", f"F.{stem}", f"nn.{stem}", f"torch.nn.functional.{stem}"]


def _norm(name: str) -> str:
    """group_norm, GroupNorm and groupnorm alike: lower case without underscores."""
    return name.replace("_", "").lower()


def _test_names(ix: Index) -> list[tuple[int, int, str, str]]:
    """(method id, file id, name, normalized name) of every test, once per index version."""
    return ix.cached("test_names_norm", lambda: [(mid, fid, n, "test" + _norm(n[4:]) if n.startswith("test") else _norm(n))
                                                 for mid, fid, n in ix.q("SELECT id, file_id, name FROM test_method")])


def _name_score(name: str, norm: str, nkey: str) -> int | None:
    """0: test_<op> (any spelling: test_group_norm, test_GroupNorm); 1: it starts with it (test_cumsum_bool,
    test_GroupNorm_general); 2: it names it after another word (test_quantized_conv2d); None: it does not."""
    if norm == "test" + nkey:
        return 0
    if norm.startswith("test" + nkey):
        return 1
    pos = norm.find(nkey)
    if pos < 0:
        return None
    # a word boundary in the name as written: after "_" or at a capital letter
    words = [i for i, ch in enumerate(name) if i and (name[i - 1] == "_" or ch.isupper() and not name[i - 1].isupper())]
    plain = {len(_norm(name[:i])) for i in words}
    return 2 if pos in plain else 3


# Python namespaces of ops (the py_api names) -> the package their home test file is named after
_NAMESPACES = (("torch._C._nn.", "nn"), ("torch.nn.functional.", "nn"), ("torch._C._linalg.", "linalg"),
               ("torch.linalg.", "linalg"), ("torch._C._fft.", "fft"), ("torch.fft.", "fft"),
               ("torch._C._special.", "special"), ("torch.special.", "special"), ("torch._C._sparse.", "sparse"),
               ("torch.sparse.", "sparse"), ("torch._C._nested.", "nested"), ("torch.nested.", "nested"),
               ("Tensor.", "torch"), ("torch.", "torch"))


def _module_callers(ix: Index) -> dict[str, set[str]]:
    """Callee as written -> the torch.nn.modules.* modules whose classes call it (nn.GroupNorm calls F.group_norm)."""
    def build() -> dict[str, set[str]]:
        out: dict[str, set[str]] = {}
        for callee, module in ix.q("SELECT c.callee, f.module FROM py_call c JOIN py_function f ON f.id = c.func "
                                   "WHERE f.module LIKE 'torch.nn.modules.%' AND f.cls != ''"):
            out.setdefault(callee, set()).add(module)
        return out
    return ix.cached("nn_module_callers", build)


def home_files(ix: Index, ops: list, stem: str) -> tuple[list[str], str]:
    """The op's home test files, by PyTorch's test layout: its Python package's test/test_<package>.py
    (torch.cumsum -> test/test_torch.py, F.group_norm -> test/test_nn.py), and for an nn module's file
    torch/nn/modules/<stem>.py the test/nn/test_<stem>*.py next to it (nn.AvgPool2d -> test/nn/test_pooling.py)."""
    reg = registry(ix)
    packages: list[str] = []
    for op in ops:
        for p in reg.python_names(op):
            pkg = next((ns for prefix, ns in _NAMESPACES if p.name.startswith(prefix)), None)
            if pkg and pkg not in packages:
                packages.append(pkg)
    callers = _module_callers(ix)
    modules = sorted({m for sp in (f"F.{stem}", f"torch.nn.functional.{stem}", f"torch.{stem}",
                                   f"torch._C._nn.{stem}") for m in callers.get(sp, ())})
    if modules and "nn" not in packages:
        packages.insert(0, "nn")
    paths = set(ix.paths().values())
    out: list[str] = []
    why: list[str] = []
    for m in modules:
        mstem = m.rsplit(".", 1)[-1]
        found = sorted(p for p in paths if p.startswith(f"test/nn/test_{mstem}") and p.endswith(".py")
                       and "/" not in p[len("test/nn/"):])
        for p in found:
            if p not in out:
                out.append(p)
                why.append(f"{p} (nn module in {m.replace('.', '/')}.py)")
    for pkg in packages:
        p = f"test/test_{pkg}.py"
        if p in paths and p not in out:
            out.append(p)
            why.append(f"{p} (package torch.{pkg})" if pkg != "torch" else f"{p} (torch.{stem})")
    return out, "; ".join(why)


def _ops_for(ix: Index, stem: str) -> list:
    reg = registry(ix)
    ops = reg.lookup(stem)
    if not ops:
        by_norm = ix.cached("ops_by_norm", lambda: {_norm(n): n for n in reg.by_name})
        name = by_norm.get(_norm(stem))
        ops = list(reg.by_name[name]) if name else []
    return ops


def find_similar_tests(ix: Index, query: str, limit: int = 20) -> SimilarTestsResult:
    q = clean_text(query, "query", "softmax")
    limit = check_int(limit, "limit", 1, MAX_LIMIT)
    stem, spellings = _terms(q)
    key = stem.lower()
    if not key.strip(" ._"):
        raise BadArgument(f"query {shown(q)} is only a prefix; give an op, function or concept such as "
                          "'softmax', 'torch.cumsum' or 'nn.Linear'")
    ops = _ops_for(ix, stem)
    op_stem = ops[0].name if ops else key
    home, home_why = home_files(ix, ops, op_stem) if ops else ([], "")
    home_rank = {fid: home.index(p) for fid, p in ix.paths().items() if p in home}  # the nn module's file first
    home_ids = set(home_rank)
    inst = _instantiations(ix)
    scored: dict[int, tuple[tuple, FoundTest]] = {}

    def add(row, group: int, score: int, why: str) -> None:
        mid, fid, cls, name, line, decos, _touches = row
        path = ix.path_of(fid)
        # Top-level test files (test/test_torch.py) before subsystem suites (test/inductor/...).
        rank = (group, score, home_rank.get(fid, len(home)), path.count("/"), path, line)
        if mid in scored and scored[mid][0] <= rank:
            return
        decorators = json.loads(decos or "[]")
        opts = inst.get((fid, cls))
        scored[mid] = (rank, FoundTest(
            name, cls, Loc(path, line), why, _command(path, cls, name), decorators,
            generated_names(cls, name, decorators, opts, stem if any(d.startswith("ops(") for d in decorators) else None)))

    base_sql = ("SELECT m.id, m.file_id, coalesce(c.name, ''), m.name, m.line, m.decorators, m.touches "
                "FROM test_method m LEFT JOIN test_class c ON c.id = m.cls ")
    # Tests named after the op, however spelled (test_group_norm, test_GroupNorm_general): in the op's home
    # files first, then elsewhere; a name that has it after another word (test_log_softmax) comes later.
    nkey = _norm(key)
    named: dict[int, tuple[int, int]] = {}
    if len(nkey) >= 2:
        for mid, fid, name, norm in _test_names(ix):
            if nkey in norm:
                sc = _name_score(name, norm, nkey)
                if sc is not None:
                    named[mid] = (fid, sc)
    for i in range(0, len(named), 900):
        chunk = list(named)[i:i + 900]
        for row in ix.q(base_sql + f"WHERE m.id IN ({','.join('?' * len(chunk))})", chunk):
            fid, sc = named[row[0]]
            in_home = fid in home_ids
            group = (0 if in_home else 1) if sc <= 1 else 3
            add(row, group, sc, "name, home file" if in_home and sc <= 1 else "name")
    # Bodies that use the op: torch.X / F.X / nn.X first, then .X() on any receiver. One scan of the
    # bodies for every spelling (each scan reads all ~25k test bodies).
    where = " OR ".join(["m.touches LIKE ? ESCAPE '\\'"] * len(spellings))
    rows = ix.q(base_sql + f"WHERE {where} LIMIT {2000 * len(spellings)}", [_like(sp) for sp in spellings])
    bodies = [(row, set(row[6].split())) for row in rows]
    for method_call, group in ((False, spellings[:1] + spellings[2:]), (True, spellings[1:2])):
        if method_call and len(scored) >= limit:
            break
        for spelling in group:
            for row, touched in bodies:
                if spelling in touched:
                    g = 2 if row[1] in home_ids and not method_call else 4 if not method_call else 5
                    add(row, g, 0, f"calls {spelling}" + ("()" if method_call else ""))
    ranked = [t for _s, t in sorted(scored.values(), key=lambda x: x[0])]
    return SimilarTestsResult(q, ranked[:limit], len(ranked), _opinfos(ix, key, ops), home, home_why)


def _opinfos(ix: Index, key: str, ops: list) -> list[OpInfoHit]:
    names = {key} | {o.name.lower() for o in ops[:1]}
    rows = []
    for k in names:
        rows += ix.q("SELECT name, ctor, variant_test_name, file_id, line, aten_name, aliases, db FROM op_info_entry "
                     "WHERE lower(name) = ? OR lower(aten_name) = ? OR lower(aliases) LIKE ? ESCAPE '\\' "
                     "ORDER BY file_id, line", (k, k, _like(k)))
    # Aliases are space-separated: a substring hit counts only when it is a whole alias.
    rows = [r for r in dict.fromkeys(rows)
            if any(k in (r[0].lower(), r[5].lower()) or k in r[6].lower().split() for k in names)]
    # The op's own entries (op_db and kin), not the reference/decomposition entries that name it (_refs.X).
    rows = [r for r in rows if r[1] not in ("PythonRefInfo",) and not r[0].startswith("_refs.")] or rows
    out = []
    for name, ctor, variant, fid, line, _aten, _aliases, _db in rows[:10]:
        sel = name.replace(".", "_") + (f"_{variant}" if variant else "")
        hit = OpInfoHit(name, ctor, variant, Loc(ix.path_of(fid), line), f'pytest test/test_ops.py -k "{sel}"')
        for mark, cls, test, device, dtypes, mfid, mline, entry in ix.q(
                "SELECT mark, test_class, test_name, device_type, dtypes, file_id, line, entry FROM op_test_mark "
                "WHERE op = ? AND variant = ? ORDER BY entry = '', file_id, line", (name, variant)):
            hit.marks.append(MarkHit(mark, cls, test, device, dtypes, Loc(ix.path_of(mfid), mline), entry))
        out.append(hit)
    return out


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


def util_usage(ix: Index) -> dict[str, int]:
    """How many test files import each name from torch.testing._internal (the signal for what matters)."""
    def load() -> dict[str, int]:
        rows = ix.q("SELECT i.target, count(DISTINCT i.file_id) FROM py_import i JOIN files f ON f.id = i.file_id "
                    "WHERE f.path LIKE 'test/%' AND i.target LIKE 'torch.testing._internal.%' GROUP BY i.target")
        usage: dict[str, int] = {}
        for target, n in rows:
            name = target.rsplit(".", 1)[-1]
            usage[name] = usage.get(name, 0) + n
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
        items = [(name, kind, Loc(ix.path_of(fid), line), doc, usage.get(name.split(".")[0], 0))
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
    tests: int
    device_type: str  # options JSON when instantiated per device, else ""
    generated_classes: list[str]
    parametrized: bool


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
    total_tests: int
    command: str


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
    for c in (norm, f"test/{norm}"):
        cands += [c, c + ".py"] if not c.endswith(".py") else [c]
    if root is not None:
        for c in cands:
            full = os.path.join(root, c)
            if os.path.lexists(full) and not (os.path.realpath(full) + os.sep).startswith(str(root) + os.sep):
                raise BadArgument(f"file_path {shown(text)} is a link that leads outside the source tree; refused")
    return cands


def test_file_info(ix: Index, file_path: str) -> TestFileInfo | NotFound:
    text = clean_text(file_path, "file_path", "test_nn")
    cands = _safe_relpath(ix, text)
    inv = {p: fid for fid, p in ix.paths().items()}
    fid = next((inv[c] for c in cands if c in inv and (c.startswith("test/") or c.startswith("torch/testing/"))), None)
    if fid is None:
        names = sorted(p for p in inv if p.startswith("test/") and p.endswith(".py"))
        stem = PurePosixPath(text).name
        close = difflib.get_close_matches(stem if stem.endswith(".py") else stem + ".py",
                                          [PurePosixPath(n).name for n in names], n=8, cutoff=0.6)
        full = [n for n in names if PurePosixPath(n).name in close][:8]
        return NotFound("test file", text, full, "Give a file under test/, e.g. 'test_torch', 'test_nn.py', "
                                                 "'test/distributed/test_c10d.py'.")
    path = ix.path_of(fid)
    status = ix.one("SELECT status FROM files WHERE id = ?", (fid,))
    if status and status[0] != "ok":
        return NotFound("indexed test file", text, [], f"{path} is in the tree but was not indexed: {status[0]}.")
    insts = ix.q("SELECT kind, cls, line, options FROM test_instantiation WHERE file_id = ? ORDER BY line", (fid,))
    device = {cls: opts for kind, cls, _l, opts in insts if kind == "device_type"}
    param = {cls for kind, cls, _l, _o in insts if kind == "parametrized"}
    classes = []
    counts = dict(ix.q("SELECT cls, count(*) FROM test_method WHERE file_id = ? GROUP BY cls", (fid,)))
    for cid, name, bases, line in ix.q("SELECT id, name, bases, line FROM test_class WHERE file_id = ? ORDER BY line",
                                       (fid,)):
        n = counts.get(cid, 0)
        if not n and name not in device:
            continue  # helpers and fixtures classes without tests
        gen = [g.split(".")[0] for g in generated_names(name, "x", [], device[name])] if name in device else []
        classes.append(TestClassInfo(name, Loc(path, line), json.loads(bases or "[]"), n, device.get(name, ""),
                                     list(dict.fromkeys(gen)), name in param))
    functions = [(name, Loc(path, line)) for name, line in ix.q(
        "SELECT name, line FROM test_method WHERE file_id = ? AND cls IS NULL ORDER BY line", (fid,))]
    decos: Counter = Counter()
    touched: Counter = Counter()
    for decorators, touches in ix.q("SELECT decorators, touches FROM test_method WHERE file_id = ?", (fid,)):
        for d in json.loads(decorators or "[]"):
            decos[d.split("(")[0]] += 1
        touched.update(touches.split())
    utilities = [(alias, target.rsplit(".", 1)[0]) for alias, target in ix.q(
        "SELECT alias, target FROM py_import WHERE file_id = ? AND target LIKE 'torch.testing._internal.%' "
        "ORDER BY id", (fid,))]
    reg = registry(ix)
    ops: Counter = Counter()
    for tok, n in touched.items():
        name = tok.lstrip(".")
        if tok.startswith("torch.") and tok in reg.py_by_name:
            ops[tok] += n
        elif tok.startswith(".") and f"Tensor.{name}" in reg.py_by_name:
            ops[f"Tensor.{name}"] += n
        elif tok.startswith("F.") and f"torch.nn.functional.{tok[2:]}" in reg.py_by_name:
            ops[f"torch.nn.functional.{tok[2:]}"] += n
    total = sum(counts.values())
    return TestFileInfo(path, classes, functions, [(k, c, Loc(path, l), o) for k, c, l, o in insts],
                        decos.most_common(20), utilities, ops.most_common(40), total,
                        f"python {path}" if path.startswith("test/") else f"python -m pytest {path}")
