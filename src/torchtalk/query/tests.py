"""find_similar_tests: from an op or concept to the tests to run (the other test tools: testfiles.py)."""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from functools import partial
from typing import NamedTuple

from ..errors import BadArgument
from ..graph.registry import registry
from ..model import Loc, Op
from ..store.reader import Index, like_literal
from .args import MAX_LIMIT, check_int, clean_text, shown
from .moduledb import DbEntry, entry_for
from .opinfo_lists import FamilySuite, db_files, family_suites
from .testclasses import run_where_collected
from .testmatch import known_names, names_another, namespace_files, namespace_short, opinfo_command, variant_words
from .testnames import generated_names, generator, run_command
from .testquery import entry_named, functional, named_home_file, opinfo_names, terms, word_stem
from .testquery import norm as _norm


@dataclass
class FoundTest:
    name: str
    cls: str
    loc: Loc
    why: str  # "name", "OpInfo", "calls torch.cumsum"
    command: str
    decorators: list[str]
    generated: list[str] = field(default_factory=list)
    by_name: bool = False  # found by its name (``why`` says how), not by what its body calls
    opinfo: str | None = None  # the OpInfo entry its @ops suffix names ("to_sparse_csc"), when it is the op asked


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
    db: str = ""  # the list it is in (op_db, foreach_unary_op_db), which the generic @ops tests take
    suites: list[FamilySuite] = field(default_factory=list)  # files whose @ops lists drawn from db hold it
    backward: str = ""  # the op asked is the entry's aten_backward_name (hardtanh_backward: nn.functional.hardtanh)


@dataclass
class SimilarTestsResult:
    query: str
    tests: list[FoundTest]
    total: int
    opinfos: list[OpInfoHit]
    home: list[str] = field(default_factory=list)  # the op's home test files, whose tests named after it rank first
    home_why: str = ""
    home_tests: int = 0  # the tests found in the home files (0: the layout names them, no test found is there)
    generic: DbEntry | None = None  # the module's ModuleInfo / the optimizer's OptimizerInfo entry (moduledb.py)
    note: str = ""  # how a query of several words was answered when no test holds them all


# How a found test ranks: (group, score, home file rank, path depth, path, line); lower first.
_Rank = tuple[int, int, int, int, str, int]


class _MethodRow(NamedTuple):
    """A test method as find_similar_tests selects it (base_sql)."""

    id: int
    file_id: int
    cls: str  # "" outside a class
    name: str
    line: int
    decorators: str | None  # JSON list
    touches: str  # the names its body uses, space-separated


_OPS_SPELLINGS = ("torch.ops.aten.", "aten.")  # an op called through the dispatcher (aten = torch.ops.aten)


def _like(text: str) -> str:
    return "%" + like_literal(text) + "%"


def device_instantiations(ix: Index) -> dict[tuple[int, str], str]:
    """(file_id, generic class) -> options JSON, for classes passed to instantiate_device_type_tests."""
    return ix.cached("device_type_classes", lambda: {
        (fid, cls): opts for fid, cls, opts in ix.q(
            "SELECT file_id, cls, options FROM test_instantiation WHERE kind = 'device_type'")})


def _test_names(ix: Index) -> list[tuple[int, int, str, str]]:
    """(method id, file id, name, normalized name) of every test, once per index version."""
    return ix.cached("test_names_norm", lambda: [
        (mid, fid, n, "test" + _norm(n[4:]) if n.startswith("test") else _norm(n))
        for mid, fid, n in ix.q("SELECT id, file_id, name FROM test_method")])


def _name_score(name: str, norm: str, nkey: str, another: Callable[[int, int], bool] | None = None) -> int | None:
    """0: test_<op> (any spelling: test_group_norm, test_GroupNorm); 1: it starts with it (test_cumsum_bool,
    test_GroupNorm_general); 2: it names it after another word (test_quantized_conv2d); 3: inside a longer word
    (test_digamma for igamma, test_igammac_common, test_addmm for add: another op's name), or with words before or
    after it that make another name of the tree (``another`` of where it starts and ends: test_pad_sequence for pad,
    test_smooth_l1_loss for l1_loss, Note [Named after another name]); None: it does not."""
    if norm == "test" + nkey:
        return 0
    found = [i for i in range(len(norm) - len(nkey) + 1) if norm.startswith(nkey, i)  # each place it is written
             and not (another and another(i, i + len(nkey)))]
    if not found:
        return None
    # a word boundary in the name as written: after "_" or at a capital letter, and the name's start (op _test_foo)
    words = [i for i, ch in enumerate(name) if i and (name[i - 1] == "_" or ch.isupper() and not name[i - 1].isupper())]
    plain = {0} | {len(_norm(name[:i])) for i in words}
    return min([1 if pos == 4 and norm.startswith("test") else 2 for pos in found
                if (pos in plain or pos == 4 and norm.startswith("test")) and _ends_word(name, pos + len(nkey))],
               default=3)


def _ends_word(name: str, count: int) -> bool:
    """Whether the name as written ends a word after its first ``count`` characters that are not underscores
    (the end of the name, an underscore, a capital after a lower-case letter or digit, or only digits left: the
    numbered tests test_adaptive_avg_pool2d1, test_adaptive_avg_pool2d2)."""
    seen = 0
    for i, ch in enumerate(name):
        if ch == "_":
            continue
        if seen == count:
            return ch.isupper() and not name[i - 1].isupper() or name[i - 1] == "_" or name[i:].isdigit()
        seen += 1
    return True


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


def home_files(ix: Index, ops: list[Op], stem: str) -> tuple[list[str], str]:
    """The op's home test files, by PyTorch's test layout: its Python package's test/test_<package>.py
    (torch.cumsum -> test/test_torch.py, F.group_norm -> test/test_nn.py), and for an nn module's file
    torch/nn/modules/<stem>.py the test/nn/test_<stem>*.py next to it (nn.AvgPool2d -> test/nn/test_pooling.py)."""
    reg = registry(ix)
    packages: list[str] = []
    for op in ops:
        for py in reg.python_names(op):
            pkg = next((ns for prefix, ns in _NAMESPACES if py.name.startswith(prefix)), None)
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


def _ops_for(ix: Index, stem: str) -> list[Op]:
    reg = registry(ix)
    ops = reg.lookup(stem)
    if not ops:
        by_norm = ix.cached("ops_by_norm", lambda: {_norm(n): n for n in reg.by_name})
        name = by_norm.get(_norm(stem))
        ops = list(reg.by_name[name]) if name else []
    return ops


def find_similar_tests(ix: Index, query: str, limit: int = 20, by_body: bool = True) -> SimilarTestsResult:
    """Tests for ``query``, ranked; ``by_body=False`` leaves out the tests found only by what their bodies call
    (one scan of every test body, the costly part: error_origin asks without it). Several words that no test holds
    all of ("gradient clipping": torch.gradient's tests hold no "clipping") are answered by the first other word,
    as its stem, that finds tests ("clip": test_clip_grad_norm), and the answer says so."""
    found = _find_similar_tests(ix, query, limit, by_body)
    words = found.query.split()
    if found.total or len(words) < 2:
        return found
    # the words the first answer required first (it picked the one naming an op), longest first
    for word in sorted(words, key=lambda w: (bool(_ops_for(ix, terms(w)[0])), -len(w))):
        stem = word_stem(word)
        if len(stem) < 3:
            continue
        other = _find_similar_tests(ix, stem, MAX_LIMIT, by_body)
        if other.total:
            # those whose names hold the start of another word first (test_clip_grad_norm: "grad" of "gradient")
            starts = [_norm(w)[:4] for w in words if w != word and len(w) >= 4]
            tests = sorted(other.tests, key=lambda t: not any(p in _norm(t.name) for p in starts))
            return replace(other, query=found.query, tests=tests[:limit], note=(
                f"No test holds every word of {found.query!r}: these are the tests for {stem!r}"
                + (f" (the stem of {word!r})" if stem != word else "")
                + (f", those whose names start another word ({', '.join(map(repr, starts))}) first" if starts else "")))
    return found


def _find_similar_tests(ix: Index, query: str, limit: int, by_body: bool) -> SimilarTestsResult:
    q = clean_text(query, "query", "softmax")
    limit = check_int(limit, "limit", 1, MAX_LIMIT)
    # Several words ("deterministic scatter_add"): the one that names an op (else the longest) is matched as a
    # query alone, and each other word must be in the test's name or what its body uses.
    words = q.split()
    pick = next((w for w in words if _ops_for(ix, terms(w)[0])), max(words, key=len)) if len(words) > 1 else q
    also = [_norm(w) for w in words if w != pick] if len(words) > 1 else []
    (stem, spellings), key = terms(pick), terms(pick)[0].lower()
    if not key.strip(" ._"):
        raise BadArgument(f"query {shown(q)} is only a prefix; give an op, function or concept such as "
                          "'softmax', 'torch.cumsum' or 'nn.Linear'")
    ops = _ops_for(ix, stem)
    if "." in stem and (o := registry(ix).by_full.get(stem)):  # softmax.int: tests name the op (stem, spellings, key)
        (stem, spellings), key = terms(o.name), o.name.lower()
    dotted = "." in stem.strip(".")  # a Python name with its package: a name, never a word to find inside others
    if not ops and dotted:
        # a Python name with its package (torch.nn.utils.clip_grad_norm_, torch.optim.NAdam): tests are named
        # after its last part, and bodies call it as written, by that part alone (imported from its module), or
        # under its package (optim.NAdam)
        last = stem.rsplit(".", 1)[-1]
        spellings += [pick, stem, last]
        stem, key = last, last.lower()
        ops = _ops_for(ix, stem)
    entry = entry_named(ix, q) if "." not in q else None  # an OpInfo entry as test names spell it
    if entry is not None and not ops:  # nn_functional_relu: the tests of relu
        stem, spellings = terms(entry[1])
        key = stem.lower()
        ops = _ops_for(ix, stem)
    op_stem = ops[0].name if ops else key
    home, home_why = home_files(ix, ops, op_stem) if ops else ([], "")
    home_rank = {fid: home.index(p) for fid, p in ix.paths().items() if p in home}  # the nn module's file first
    home_ids = set(home_rank)
    inst = device_instantiations(ix)
    scored: dict[int, tuple[_Rank, FoundTest]] = {}

    def add(row: _MethodRow, group: int, score: int, why: str, by_name: bool) -> None:
        mid, fid, cls, name, line, decos, _touches = row
        path = ix.path_of(fid)
        # Top-level test files (test/test_torch.py) before subsystem suites (test/inductor/...).
        rank = (group, score, home_rank.get(fid, len(home)), path.count("/"), path, line)
        if mid in scored and scored[mid][0] <= rank:
            return
        decorators = json.loads(decos or "[]")
        opts = inst.get((fid, cls))
        ops_stem = stem if any(generator(d) == "ops" for d in decorators) else None
        scored[mid] = (rank, FoundTest(
            name, cls, Loc(path, line), why, run_command(path, cls, name, decorators, opts), decorators,
            generated_names(cls, name, decorators, opts, ops_stem), by_name, ops_stem))

    base_sql = ("SELECT m.id, m.file_id, coalesce(c.name, ''), m.name, m.line, m.decorators, m.touches "
                "FROM test_method m LEFT JOIN test_class c ON c.id = m.cls ")
    # Tests named after the op, however spelled (test_group_norm, test_GroupNorm_general): in the op's home
    # files first, then elsewhere; a name that has it after another word (test_log_softmax) comes later.
    nkey = _norm(key)
    named: dict[int, tuple[int, int]] = {}
    # an op's or a Python name's tests: not those named after a longer name of the tree (Note [Named after another
    # name]); a namespace's op also by its short name in the namespace's own files (Note [Namespace test files])
    known, variants = (known_names(ix), variant_words(ix, ops)) if ops or dotted else (frozenset(), frozenset())
    short = namespace_short(ops)
    keys = [(nkey, None)] + ([(_norm(short[0]), namespace_files(ix, short[1]))] if short else [])
    for k, files in keys:
        if len(k) < 2:
            continue
        for mid, fid, name, norm in _test_names(ix):
            if k in norm and all(w in norm for w in also) and (files is None or fid in files) and mid not in named:
                sc = _name_score(name, norm, k, partial(names_another, name, key=k, known=known, variants=variants)
                                 if known else None)
                # inside another word, an op's name is another op's (igamma in test_digamma), a function's another
                # word (rprop in test_profiler_propagation): for a free query only
                if sc is not None and not ((ops or dotted) and sc == 3):
                    named[mid] = (fid, sc)
    by_tests = named_home_file(ix, named, home, {f for (f, _c), o in inst.items() if "only_for" not in json.loads(o)})
    if by_tests is not None:  # Note [A home by its tests]
        home_rank.update({by_tests[0]: -1})
        home_ids.add(by_tests[0])
        home, home_why = [by_tests[1], *home], "; ".join(x for x in (by_tests[2], home_why) if x)
    for i in range(0, len(named), 900):
        chunk = list(named)[i:i + 900]
        for row in map(_MethodRow._make, ix.q(base_sql + f"WHERE m.id IN ({','.join('?' * len(chunk))})", chunk)):
            fid, sc = named[row.id]
            in_home = fid in home_ids
            group = (0 if in_home else 1) if sc <= 1 else 3
            add(row, group, sc, "name, home file" if in_home and sc <= 1 else "name", True)
    # Bodies that use the op: torch.X / F.X / nn.X first, then .X() on any receiver. One scan of the
    # bodies for every spelling (each scan reads all ~25k test bodies).
    where = " OR ".join(["m.touches LIKE ? ESCAPE '\\'"] * len(spellings))
    rows = ix.q(base_sql + f"WHERE {where} LIMIT {2000 * len(spellings)}",
                [_like(sp) for sp in spellings]) if by_body else []
    bodies = [(row, set(row.touches.split())) for row in map(_MethodRow._make, rows)
              if all(w in _norm(f"{row.name} {row.touches}") for w in also)]
    # the op through the dispatcher, torch.ops.aten.X(...) / aten.X.default(...) (the SQL's ".X" finds them too)
    by_op = [f"{p}{stem}" for p in _OPS_SPELLINGS] if ops else []
    for method_call, batch in ((False, spellings[:1] + spellings[2:] + by_op), (True, spellings[1:2])):
        if method_call and len(scored) >= limit:
            break
        for spelling in batch:
            for row, touched in bodies:
                if spelling in touched or spelling in by_op and any(t.startswith(spelling + ".") for t in touched):
                    g = 2 if row.file_id in home_ids and not method_call else 4 if not method_call else 5
                    add(row, g, 0, f"calls {spelling}" + ("()" if method_call else ""), False)
    ranked = [t for _s, t in sorted(scored.values(), key=lambda x: x[0])]
    asked = {q, f"torch.{stem}", entry[0] if entry else ""} - {""}
    listed = run_where_collected(ix, ranked[:limit])  # a mixin's or template's test: as a class that runs it
    home_n = sum(1 for t in ranked if t.loc.path in home)
    return SimilarTestsResult(q, listed, len(ranked), _opinfos(ix, key, ops, asked), home, home_why, home_n,
                              entry_for(ix, q))


def _opinfos(ix: Index, key: str, ops: list[Op], asked: set[str]) -> list[OpInfoHit]:
    """The OpInfo entries of the op: named after it, its functional form (add for add_), a Python name of it, or
    the Python name asked (Note [Test queries as written]); an entry may write its name under torch.
    (torch._scaled_mm)."""
    reg = registry(ix)
    own = {key} | {o.name.lower() for o in ops[:1]} | {functional(o.name).lower() for o in ops[:1] if o.is_inplace}
    names = own | {n.lower() for n in opinfo_names([*asked, *(p.name for o in ops[:1] for p in reg.python_names(o))])}
    # a bare name is also torch.nn.functional's (grid_sample is F.grid_sample, whose entry is nn.functional.grid_sample;
    # an in-place op's functional form too: alpha_dropout_ runs in nn.functional.alpha_dropout's in-place variant)
    names = (names | {f"torch.{n}" for n in names} | {f"nn.functional.{n}" for n in own if n and "." not in n}) - {""}
    rows = []
    for k in sorted(names):
        rows += ix.q("SELECT name, ctor, variant_test_name, file_id, line, aten_name, aliases, db, flags, "
                     "aten_backward_name FROM op_info_entry "
                     "WHERE lower(name) = ? OR lower(aten_name) = ? OR lower(aliases) LIKE ? ESCAPE '\\' "
                     "OR lower(aten_backward_name) = ? ORDER BY file_id, line", (k, k, _like(k), k))
    # Aliases are space-separated: a substring hit counts only when it is a whole alias. The entries named after
    # the op itself first (add before __radd__, which Tensor.add's Python names also reach).
    rows = sorted((r for r in dict.fromkeys(rows)
                   if any(k in (r[0].lower(), r[5].lower(), r[9].lower()) or k in r[6].lower().split()
                          for k in names)),
                  key=lambda r: (not own & {r[0].lower(), r[5].lower(), r[0].lower().removeprefix("torch.")},
                                 r[3], r[4]))
    # The op's own entries (op_db and kin), not the reference/decomposition entries that name it (_refs.X), unless
    # one was asked by name (_refs.lerp, or _refs_lerp as test_python_ref__refs_lerp_cpu_float32 spells it).
    named = {a.lower() for a in asked}
    rows = [r for r in rows if r[1] not in ("PythonRefInfo",) and not r[0].startswith("_refs.")
            or r[0].lower() in named] or rows
    out = []
    files = db_files(ix)
    for name, ctor, variant, fid, line, _aten, _aliases, db, flags, backward in rows:
        sel = name.replace(".", "_") + (f"_{variant}" if variant else "")
        # the generic tests run in test_ops.py, or in the file whose @ops(...) tests use the entry's list alone
        # (foreach_unary_op_db: test_foreach.py)
        in_db = files.get(db, [])
        where = "test/test_ops.py" if not in_db or "test/test_ops.py" in in_db else in_db[0]
        hit = OpInfoHit(name, ctor, variant, Loc(ix.path_of(fid), line),
                        opinfo_command(ix, sel, where), db=db,
                        suites=[replace(f, command=opinfo_command(ix, sel, f.path))
                                for f in family_suites(ix, ctor, db, flags) if f.path != where],
                        backward=backward if backward.lower() in names else "")
        for mark, cls, test, device, dtypes, mfid, mline, entry in ix.q(
                "SELECT mark, test_class, test_name, device_type, dtypes, file_id, line, entry FROM op_test_mark "
                "WHERE op = ? AND variant = ? ORDER BY entry = '', file_id, line", (name, variant)):
            hit.marks.append(MarkHit(mark, cls, test, device, dtypes, Loc(ix.path_of(mfid), mline), entry))
        out.append(hit)
    return out
