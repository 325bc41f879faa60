"""A refresh equals a full build: every table, row for row and in the same order, and every answer.

Property: start from an indexed copy of the fixture trees (C++, CUDA, YAML, Python, tests, and stand-in
generators for the generated layer), apply random edits (rename a function across files, add, delete, move
and copy files, add ops and change kernels in native_functions.yaml, edit derivatives.yaml, rename Python
functions, add tests, touch files, put a byte that is not UTF-8 in a comment), refresh, and compare with an
index built from scratch: `tests/indexdump.py` turns every table into content (ids replaced by what they
stand for) in id order, since queries break ties by id.

On main before issue 26 this failed in three ways: names of deleted rows stayed in `names` (a renamed
function's old name was still suggested), a refreshed file's rows moved to the end of their tables (ties
listed in another order: the "showing 60 of 112" of `impact` differed), and a full build numbered files in
the order its workers finished them.
"""

from __future__ import annotations

import os
import random
import re
import shutil
from pathlib import Path

from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st

from torchtalk.index.indexer import refresh
from torchtalk.source.files import layer_of
from torchtalk.source.tree import find_source
from torchtalk.store.reader import Index
from torchtalk.tools import get_tool, run

from ..conftest import FIXTURE_TREE
from ..indexdump import differences, dump, fts_whole
from .test_generated_layer import _add_generators

NF = "aten/src/ATen/native/native_functions.yaml"
DERIVATIVES = "tools/autograd/derivatives.yaml"
KEEP = {NF, "aten/src/ATen/native/tags.yaml", DERIVATIVES}
EDITS = ("rename_cpp", "add_cpp_fn", "delete", "move", "copy", "yaml_op", "yaml_kernel", "derivative",
         "py_rename", "test_add", "touch", "bad_byte")
EXAMPLES = int(os.environ.get("TT_PROPERTY_EXAMPLES", "8"))


def _indexable(tree: Path) -> list[str]:
    out = []
    for p in sorted(tree.rglob("*")):
        rel = p.relative_to(tree).as_posix()
        if p.is_file() and layer_of(rel) is not None:
            out.append(rel)
    return out


class Editor:
    """Edits a tree as a contributor would; every write replaces the file and moves its mtime on."""

    def __init__(self, tree: Path):
        self.tree = tree
        self.tick = 0
        self.touched: list[str] = []  # names the edits created or removed: asked about afterwards

    def _write(self, rel: str, data: bytes) -> None:
        path = self.tree / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_name(path.name + ".tt-edit")
        tmp.write_bytes(data)
        os.replace(tmp, path)
        self._bump(rel)

    def _bump(self, rel: str) -> None:
        self.tick += 1
        st_ = os.stat(self.tree / rel)
        os.utime(self.tree / rel, ns=(st_.st_atime_ns, st_.st_mtime_ns + self.tick * 1_000_000))

    def _pick(self, rng: random.Random, pred) -> str | None:
        files = [f for f in _indexable(self.tree) if pred(f)]
        return rng.choice(files) if files else None

    def apply(self, kind: str, seed: int) -> str:
        rng = random.Random(seed)
        cpp = (".cpp", ".cu", ".h", ".mm")
        if kind == "rename_cpp":
            words = sorted({w for f in _indexable(self.tree) if f.endswith(cpp)
                            for w in re.findall(r"\b([a-z]\w*_\w+)\s*\(", (self.tree / f).read_text(errors="replace"))})
            if not words:
                return "no word"
            old = rng.choice(words)
            new = f"{old}_r{seed % 1000}"
            self.touched += [old, new]
            for f in _indexable(self.tree):  # across every file, as a refactoring does
                data = (self.tree / f).read_bytes()
                if re.search(rb"\b" + re.escape(old.encode()) + rb"\b", data):
                    self._write(f, re.sub(rb"\b" + re.escape(old.encode()) + rb"\b", new.encode(), data))
            return f"rename {old} -> {new}"
        if kind == "add_cpp_fn":
            f = self._pick(rng, lambda f: f.endswith(".cpp"))
            name = f"added_fn_{seed % 997}"
            self.touched.append(name)
            body = (f"\nnamespace at {{ namespace native {{\nTensor {name}(const Tensor& self) {{\n"
                    f"  return at::relu(self);\n}}\n}} }}\n")
            self._write(f, (self.tree / f).read_bytes() + body.encode())
            return f"add {name} to {f}"
        if kind in ("delete", "move", "copy"):
            f = self._pick(rng, lambda f: f not in KEEP)
            if f is None:
                return "nothing to " + kind
            if kind == "delete":
                (self.tree / f).unlink()
                return f"delete {f}"
            stem, ext = os.path.splitext(f)
            dest = f"{stem}_{kind}{seed % 89}{ext}"
            if (self.tree / dest).exists():
                return "exists"
            if kind == "move":
                os.replace(self.tree / f, self.tree / dest)
            else:
                shutil.copy2(self.tree / f, self.tree / dest)  # duplicate names: ties between files
            self._bump(dest)
            return f"{kind} {f} -> {dest}"
        if kind == "yaml_op":
            name = f"added_op_{seed % 991}"
            self.touched.append(name)
            entry = f"\n- func: {name}(Tensor self) -> Tensor\n  dispatch:\n    CPU: {name}_cpu\n"
            self._write(NF, (self.tree / NF).read_bytes() + entry.encode())
            return f"add op {name}"
        if kind == "yaml_kernel":
            text = (self.tree / NF).read_text()
            lines = [m for m in re.finditer(r"^    (CPU[\w, ]*): (\w+)$", text, re.M)]
            if not lines:
                return "no dispatch line"
            m = rng.choice(lines)
            new = f"{m.group(2)}_k{seed % 97}"
            self.touched += [m.group(2), new]
            self._write(NF, (text[:m.start(2)] + new + text[m.end(2):]).encode())
            return f"kernel {m.group(2)} -> {new}"
        if kind == "derivative":
            text = (self.tree / DERIVATIVES).read_text()
            self._write(DERIVATIVES, (text + f"\n- name: added_op_{seed % 991}(Tensor self) -> Tensor\n"
                                              "  self: grad * 2\n").encode())
            return "derivative added"
        if kind == "py_rename":
            f = self._pick(rng, lambda f: f.startswith("torch/") and f.endswith(".py"))
            text = (self.tree / f).read_text() if f else ""
            defs = re.findall(r"^\s*def (\w+)\(", text, re.M)
            if not defs:
                return "no def"
            old = rng.choice(defs)
            self.touched += [old, old + "_p"]
            self._write(f, re.sub(rf"\b{old}\b", old + "_p", text).encode())
            return f"py rename {old} in {f}"
        if kind == "test_add":
            f = self._pick(rng, lambda f: f.startswith("test/"))
            if f is None:
                return "no test file"
            n = seed % 83
            add = (f"\n\nclass TestAdded{n}(TestCase):\n    def test_relu_added_{n}(self):\n"
                   f"        torch.relu(torch.ones(1))\n")
            self._write(f, (self.tree / f).read_bytes() + add.encode())
            return f"test added to {f}"
        if kind == "touch":
            f = self._pick(rng, lambda f: True)
            self._bump(f)
            return f"touch {f}"
        if kind == "bad_byte":
            f = self._pick(rng, lambda f: f.endswith(".cpp"))
            self._write(f, b"// caf\xe9 \xff\n" + (self.tree / f).read_bytes())
            return f"bad byte in {f}"
        raise AssertionError(kind)


def _build(tree: Path, cache: Path, **kw) -> tuple[Index, object]:
    """(an Index over the built index, the report), the index built under ``cache``."""
    old = os.environ.get("TORCHTALK_CACHE_DIR")
    os.environ["TORCHTALK_CACHE_DIR"] = str(cache)
    try:
        stree = find_source(tree)
        report = refresh(stree, **kw)
        return Index(stree.index_path, stree.root), report
    finally:
        if old is None:
            os.environ.pop("TORCHTALK_CACHE_DIR", None)
        else:
            os.environ["TORCHTALK_CACHE_DIR"] = old


QUESTIONS = [("trace", {"function_name": "relu"}), ("trace", {"function_name": "atan2", "focus": "dispatch"}),
             ("search", {"query": "index"}), ("search", {"query": "relu"}),
             ("called_by", {"function_name": "index_select_out_cpu_"}), ("impact", {"function_name": "relu"}),
             ("cuda_kernels", {}), ("find_similar_tests", {"query": "relu"}), ("list_test_utils", {}),
             ("list_modules", {"category": "all"})]


def _answers(ix: Index, names: list[str]) -> dict[str, str]:
    try:
        out = {}
        asked = QUESTIONS + [(t, {"function_name": n}) for n in names for t in ("called_by", "impact")]
        asked += [("search", {"query": n}) for n in names]
        for tool, kw in asked:
            _r, text = run(get_tool(tool), ix, **kw)
            out[f"{tool}({kw})"] = text
        return out
    finally:
        ix.close()


def _compare(tree: Path, cache: Path, other: Path, touched: list[str], what: str) -> None:
    refreshed, rep = _build(tree, cache, workers=1)
    shutil.rmtree(other, ignore_errors=True)
    scratch, _ = _build(tree, other, workers=2, force=True)
    a, b = dump(refreshed.path), dump(scratch.path)
    diff = differences(a, b)
    assert not diff, f"after {what} ({rep.summary()}), the refreshed index differs from a full build:\n" + \
        "\n".join(diff)
    assert fts_whole(refreshed.path)
    names = sorted(set(touched))[-6:]
    x, y = _answers(refreshed, names), _answers(scratch, names)
    for key in x:
        assert x[key] == y[key], f"after {what}, {key} answers differently after a refresh than after a full build"


# Each example builds twice (seconds): no shrinking; the failure names the edits it made.
@settings(max_examples=EXAMPLES, deadline=None, derandomize=True, database=None,
          phases=[Phase.explicit, Phase.generate],
          suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(edits=st.lists(st.tuples(st.sampled_from(EDITS), st.integers(0, 10**6)), min_size=1, max_size=4))
def test_a_refresh_equals_a_full_build(tmp_path_factory, edits):
    base = tmp_path_factory.mktemp("prop")
    tree = base / "pytorch"
    shutil.copytree(FIXTURE_TREE, tree)
    shutil.copytree(FIXTURE_TREE.parent / "tree_py", tree, dirs_exist_ok=True)
    _add_generators(tree)
    _build(tree, base / "cache", workers=1)[0].close()
    ed = Editor(tree)
    done = [ed.apply(kind, seed) for kind, seed in edits]
    _compare(tree, base / "cache", base / "scratch", ed.touched, "; ".join(done))


def test_a_rename_across_files_leaves_no_old_name_and_the_same_ranking(tmp_path):
    """The issue's case, on the fixture: a function renamed in every file that names it."""
    tree = tmp_path / "pytorch"
    shutil.copytree(FIXTURE_TREE, tree)
    _build(tree, tmp_path / "cache", workers=1, codegen=False)[0].close()
    ed = Editor(tree)
    for f in _indexable(tree):
        data = (tree / f).read_bytes()
        if b"index_select_out_cpu_" in data:
            ed._write(f, data.replace(b"index_select_out_cpu_", b"index_select_out_cpu_v2"))
    ix, _ = _build(tree, tmp_path / "cache", workers=1, codegen=False)
    try:
        assert ix.one("SELECT count(*) FROM names WHERE name = 'index_select_out_cpu_'")[0] == 0
        _r, text = run(get_tool("called_by"), ix, function_name="index_select_out_cpu_")
        assert "index_select_out_cpu_v2" in text  # the close match is the new name, not the deleted one
    finally:
        ix.close()
    _compare(tree, tmp_path / "cache", tmp_path / "scratch", ["index_select_out_cpu_", "index_select_out_cpu_v2"],
             "a rename across files")


def test_a_file_that_outgrows_the_room_behind_its_rows_is_renumbered_in_place(tmp_path, monkeypatch):
    """A full build leaves room behind each file's rows; a file that grows past it makes the refresh renumber
    the table (and the columns that refer to it), and the result still equals a full build."""
    tree = tmp_path / "pytorch"
    shutil.copytree(FIXTURE_TREE, tree)
    _build(tree, tmp_path / "cache", workers=1, codegen=False)[0].close()
    ed = Editor(tree)
    rel = f"{NF.rsplit('/', 1)[0]}/Activation.cpp"
    more = "".join(f"\nnamespace at {{ namespace native {{\nTensor grown_{i}(const Tensor& self) {{\n"
                   f"  return at::relu(at::relu(self));\n}}\n}} }}\n" for i in range(60))
    ed._write(rel, (tree / rel).read_bytes() + more.encode())
    from torchtalk.store import keys
    respaced: list[str] = []
    real = keys.FactIds.respace
    monkeypatch.setattr(keys.FactIds, "respace", lambda self, t, f, n: (respaced.append(t), real(self, t, f, n)))
    _compare(tree, tmp_path / "cache", tmp_path / "scratch", ["grown_7", "relu"], "60 functions added to one file")
    assert {"cpp_symbol", "cpp_call"} <= set(respaced), respaced


def test_a_full_build_that_reuses_the_generated_code_equals_one_that_runs_the_generators(tmp_path):
    """`index --force` with the generators' output already there indexes both layers in one pass."""
    tree = tmp_path / "pytorch"
    shutil.copytree(FIXTURE_TREE, tree)
    _add_generators(tree)
    _build(tree, tmp_path / "cache", workers=1)[0].close()
    again, _r = _build(tree, tmp_path / "cache", workers=2, force=True)  # reuses <generated>/
    scratch, _r = _build(tree, tmp_path / "scratch", workers=1)
    try:
        assert not differences(dump(again.path), dump(scratch.path))
    finally:
        again.close()
        scratch.close()


def test_names_without_room_between_them_are_numbered_again(tmp_path, monkeypatch):
    """Name ids are spread with room for names a refresh adds; when a gap is used up, the names table is
    numbered again (and its trigram index rebuilt), still equal to a full build."""
    from torchtalk.store import keys
    tree = tmp_path / "pytorch"
    shutil.copytree(FIXTURE_TREE, tree)
    ix, _r = _build(tree, tmp_path / "cache", workers=1, codegen=False)
    n = ix.one("SELECT count(*) FROM names")[0]
    ix.close()
    with monkeypatch.context() as m:  # a full build with no room at all between names
        m.setattr(keys, "NAME_ID_LIMIT", n + 1)
        _build(tree, tmp_path / "cache", workers=1, codegen=False, force=True)[0].close()
    ed = Editor(tree)
    for seed in range(3):
        ed.apply("add_cpp_fn", seed)
        ed.apply("yaml_op", seed)
    spread_calls: list[int] = []
    real = keys.spread
    with monkeypatch.context() as m:
        m.setattr(keys, "spread", lambda lo, hi, k: (spread_calls.append(k), real(lo, hi, k))[1])
        _build(tree, tmp_path / "cache", workers=1, codegen=False)[0].close()  # the refresh
    assert any(k > n for k in spread_calls), spread_calls  # it numbered every name again
    _compare(tree, tmp_path / "cache", tmp_path / "scratch", ed.touched, "names added into used-up gaps")


def test_python_classes_are_linked_again_only_when_their_facts_change(tmp_path, monkeypatch):
    """py_class_fq is kept by a refresh that changes none of its input tables (a YAML edit): class_rows is not
    called; an edit of a Python class calls it. That both give a full build's tables is the property test's."""
    from torchtalk.link import build, pyclasses
    read = set(re.findall(r"\bFROM (\w+)", Path(pyclasses.__file__).read_text(encoding="utf-8")))
    assert read - {"files"} == pyclasses.INPUT_TABLES  # the tables it reads are the ones said to be its inputs
    tree = tmp_path / "pytorch"
    shutil.copytree(FIXTURE_TREE, tree)
    shutil.copytree(FIXTURE_TREE.parent / "tree_py", tree, dirs_exist_ok=True)
    _build(tree, tmp_path / "cache", workers=1, codegen=False)[0].close()
    calls: list[int] = []
    real = build.class_rows
    monkeypatch.setattr(build, "class_rows", lambda conn: calls.append(1) or real(conn))
    ed = Editor(tree)
    ed.apply("yaml_kernel", 1)
    ix, rep = _build(tree, tmp_path / "cache", workers=1, codegen=False)
    n = ix.one("SELECT COUNT(*) FROM py_class_fq")[0]
    ix.close()
    assert rep.mode == "incremental" and calls == [] and n > 0
    py = next(p for p in sorted(tree.rglob("*.py")) if "\nclass " in p.read_text(encoding="utf-8"))
    py.write_text(py.read_text(encoding="utf-8") + "\n\nclass AddedByTheTest:\n    pass\n", encoding="utf-8")
    ix, rep = _build(tree, tmp_path / "cache", workers=1, codegen=False)
    assert calls == [1] and ix.one("SELECT COUNT(*) FROM py_class_fq WHERE name = 'AddedByTheTest'")[0] == 1
    ix.close()
