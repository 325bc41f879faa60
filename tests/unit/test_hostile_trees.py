"""Hostile source trees: bad encodings, empty, huge, unreadable and special files, broken links, broken
YAML, missing directories. Indexing finishes (or fails with one clean line), and get_status says what
was skipped and why.
"""

from __future__ import annotations

import os
import resource
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

from torchtalk.errors import TorchTalkError
from torchtalk.index.indexer import refresh
from torchtalk.source.tree import find_source
from torchtalk.store.reader import Index
from torchtalk.tools import all_tools, get_tool, run

FIXTURE_TREE = Path(__file__).parents[1] / "fixtures" / "tree"
NATIVE = "aten/src/ATen/native"
NF = f"{NATIVE}/native_functions.yaml"
IS_ROOT = hasattr(os, "geteuid") and os.geteuid() == 0

# ------------------------------------------------------------------ watching open()

_WATCH: list[str] = []
_SEEN: list[str] = []


def _audit(event: str, args) -> None:
    if event != "open" or not _WATCH or isinstance(args[0], int):
        return
    try:
        p = os.fsdecode(args[0])
    except Exception:
        return
    if any(p.endswith(w) for w in _WATCH):
        _SEEN.append(p)


sys.addaudithook(_audit)


def tt(*args, cwd=None, timeout=300, **kw):
    return subprocess.run([sys.executable, "-m", "torchtalk", *args], capture_output=True, text=True,
                          env=dict(os.environ), cwd=cwd, timeout=timeout, **kw)


def status_text(ix) -> str:
    _r, text = run(get_tool("get_status"), ix)
    return text


def build(tree: Path, **kw):
    st = find_source(tree)
    rep = refresh(st, workers=1, codegen=False, **kw)
    return st, rep, Index(st.index_path, st.root)


def write_huge_cpp(path: Path, size: int = 50 * 1024 * 1024) -> None:
    """~50 MB of valid-ish C++, written in big chunks (a fraction of a second)."""
    chunk = "".join(f"int generated_fn_{i}(int x) {{ return x + {i}; }}\n" for i in range(20000)).encode()
    with open(path, "wb") as f:
        while f.tell() < size:
            f.write(chunk)


# ------------------------------------------------------------------ one tree with everything at once


@pytest.fixture
def hostile(tree, tmp_path):
    n = tree / NATIVE
    # Not UTF-8 (Latin-1 comments, as old files have).
    (n / "Latin1.cpp").write_bytes(b"// caf\xe9 \xff\nint latin_fn(int x) { return x; }\n")
    (tree / "torch" / "nn").mkdir(parents=True)
    (tree / "torch/nn/latin1_mod.py").write_bytes(b"# caf\xe9\ndef latin_py():\n    return 1\n")
    (tree / "test").mkdir(exist_ok=True)
    (tree / "test/test_latin1.py").write_bytes(b"# \xff\xfe\nclass TestLatin:\n    def test_x(self):\n        pass\n")
    # Empty and blank files.
    for rel in (f"{NATIVE}/Empty.cpp", f"{NATIVE}/Empty.h", f"{NATIVE}/cuda/Empty.cu", "torch/nn/empty_mod.py",
                "test/test_empty.py"):
        (tree / rel).write_bytes(b"")
    (n / "Blank.cpp").write_text("\n\n   \n\t\n")
    # A 50 MB generated file: over the 8 MB cap, skipped by its size without being read.
    write_huge_cpp(n / "Huge.cpp")
    # NUL bytes, a BOM, CRLF, odd names: valid ones are indexed, the binary one skipped.
    (n / "Nul.cpp").write_bytes(b"int nul_fn(int x) { return x; }\n\x00\x00\x01")
    (n / "Bom.cpp").write_bytes(b"\xef\xbb\xbfint bom_fn(int x) { return x; }\n")
    (n / "Crlf.cpp").write_bytes(b"namespace at { namespace native {\r\n"
                                 b"int crlf_fn(int x) {\r\n  return x;\r\n}\r\n}}\r\n")
    (n / "With Space.cpp").write_text("int space_fn(int x) { return x; }\n")
    (n / "Ünïcødé.cpp").write_text("int unicode_fn(int x) { return x; }\n")
    (n / "Dir.cpp").mkdir()
    (n / "Dir.cpp" / "Inner.cpp").write_text("int inner_fn(int x) { return x; }\n")
    # Broken links (inside and outside), a link loop, a directory link back up, a FIFO (never opened).
    (n / "Broken.cpp").symlink_to("DoesNotExist.cpp")
    (n / "BrokenOut.cpp").symlink_to(tmp_path / "nowhere" / "x.cpp")
    (n / "Loop.cpp").symlink_to("Loop.cpp")
    (n / "uplink").symlink_to("..")
    os.mkfifo(n / "Fifo.cpp")
    # Python that does not parse.
    (tree / "torch/nn/broken_syntax.py").write_text("def f(:\n    pass\n")
    # Unreadable (root can still read it: that assertion is made only when not root).
    (n / "Locked.cpp").write_text("int locked_fn(int x) { return x; }\n")
    os.chmod(n / "Locked.cpp", 0)
    yield tree
    os.chmod(n / "Locked.cpp", 0o644)


@pytest.mark.timeout(300)
def test_hostile_tree_indexes_and_status_tells_what_was_skipped(hostile):
    tree = hostile
    _WATCH[:] = ["/Huge.cpp", "/Fifo.cpp"]
    _SEEN.clear()
    t0 = time.monotonic()
    try:
        st, rep, ix = build(tree)
    finally:
        _WATCH.clear()
    secs = time.monotonic() - t0
    assert secs < 60, f"the build took {secs:.1f}s"
    assert _SEEN == [], f"opened files that should only have been stat'ed: {_SEEN}"
    skipped = {s.split(": ", 1)[0]: s.split(": ", 1)[1] for s in rep.skipped}

    def reason(rel):
        assert rel in skipped, f"{rel} is not listed as skipped: {rep.skipped}"
        return skipped[rel]

    assert "larger than 8 MB" in reason(f"{NATIVE}/Huge.cpp")
    # Bytes that are not UTF-8 cost a character (U+FFFD), not the file (issue 26: it used to be skipped).
    for rel in (f"{NATIVE}/Latin1.cpp", "torch/nn/latin1_mod.py", "test/test_latin1.py"):
        assert rel not in skipped
        status, why = ix.one("SELECT status, reason FROM files WHERE path = ?", (rel,))
        assert status == "ok" and "not UTF-8" in why and "U+FFFD" in why, (rel, status, why)
    assert ix.one("SELECT count(*) FROM cpp_symbol WHERE name = 'latin_fn'")[0] == 1
    assert ix.one("SELECT count(*) FROM py_function WHERE name = 'latin_py'")[0] == 1
    assert reason(f"{NATIVE}/Fifo.cpp") == "not a regular file (a FIFO)"  # listed, never opened
    assert "NUL" in reason(f"{NATIVE}/Nul.cpp")
    assert "broken symlink" in reason(f"{NATIVE}/Broken.cpp")
    assert "symlink" in reason(f"{NATIVE}/BrokenOut.cpp")
    assert "symlink" in reason(f"{NATIVE}/Loop.cpp")
    assert "syntax error" in reason("torch/nn/broken_syntax.py") and "broken_syntax.py:1" in reason(
        "torch/nn/broken_syntax.py")
    if not IS_ROOT:  # root reads mode-000 files
        assert "unreadable" in reason(f"{NATIVE}/Locked.cpp")
    # Empty files are indexed (nothing in them), not reported as problems.
    for rel in (f"{NATIVE}/Empty.cpp", f"{NATIVE}/Empty.h", f"{NATIVE}/cuda/Empty.cu", "torch/nn/empty_mod.py",
                "test/test_empty.py", f"{NATIVE}/Blank.cpp"):
        assert rel not in skipped
        assert ix.one("SELECT status FROM files WHERE path = ?", (rel,)) == ("ok",), rel
    assert ix.one("SELECT count(*) FROM files WHERE path LIKE '%uplink%'")[0] == 0

    # get_status, the tool, says the same: each skipped file with its reason.
    text = status_text(ix)
    for rel, why in skipped.items():
        assert f"- {rel}: " in text and why[:40] in text, (rel, why, text)
    assert f"skipped files: {len(skipped)}" in text
    assert "; fresh" in text

    # What was fine is indexed and answers.
    _r, relu = run(get_tool("trace"), ix, function_name="relu", focus="dispatch")
    assert "MPS: relu_mps" in relu
    for fn, where in (("bom_fn", "Bom.cpp:1"), ("crlf_fn", "Crlf.cpp:2"), ("space_fn", "With Space.cpp:1"),
                      ("unicode_fn", "Ünïcødé.cpp:1"), ("inner_fn", "Dir.cpp/Inner.cpp:1")):
        _r, text = run(get_tool("calls"), ix, function_name=fn)
        assert where in text, (fn, text)
    if IS_ROOT:
        assert ix.one("SELECT status FROM files WHERE path = ?", (f"{NATIVE}/Locked.cpp",)) == ("ok",)

    # Nothing changed: the next refresh is a no-op (skipped files do not make it re-read every time).
    again = refresh(st, workers=1, codegen=False)
    assert again.mode == "up-to-date", again.summary()


def test_hostile_tree_through_the_cli(hostile):
    r = tt("index", "--source", str(hostile), "--no-codegen", "--progress", "never")
    assert r.returncode == 0, r.stderr
    assert "Traceback" not in r.stderr + r.stdout
    assert "skipped" in r.stdout and f"{NATIVE}/Huge.cpp: larger than 8 MB" in r.stdout
    r = tt("get-status", "--source", str(hostile))
    # not UTF-8 costs a character, not the file (issue 26): listed among the skipped no longer
    assert r.returncode == 0 and "## skipped files:" in r.stdout, r.stdout + r.stderr
    assert f"{NATIVE}/Huge.cpp" in r.stdout and f"{NATIVE}/Latin1.cpp" not in r.stdout, r.stdout


# ------------------------------------------------------------------ names and permissions


def test_file_name_that_is_not_utf8_is_skipped_not_fatal(tree):
    """A file whose name is not valid UTF-8 (os.scandir gives it surrogate escapes) must cost one file."""
    bad = os.path.join(os.fsencode(tree / NATIVE), b"Bad\xffName.cpp")
    with open(bad, "wb") as f:
        f.write(b"int bad_name_fn(int x) { return x; }\n")
    try:
        st, rep, ix = build(tree)
    except TorchTalkError as exc:  # a clean refusal would be acceptable too, but names the file
        assert "Bad" in str(exc), exc
        return
    except Exception as exc:
        pytest.fail(f"the build died on a non-UTF-8 file name: {type(exc).__name__}: {exc}")
    assert any("Bad" in s for s in rep.skipped), rep.skipped
    assert "relu" in run(get_tool("trace"), ix, function_name="relu")[1]
    r = tt("get-status", "--source", str(tree))
    assert r.returncode == 0 and "Traceback" not in r.stderr and "internal error" not in r.stderr, r.stderr


def test_file_name_that_is_not_utf8_through_the_cli_is_one_clean_line(tree):
    with open(os.path.join(os.fsencode(tree / NATIVE), b"Caf\xe9.cpp"), "wb") as f:
        f.write(b"int cafe_fn(int x) { return x; }\n")
    r = tt("index", "--source", str(tree), "--no-codegen", "--progress", "never")
    assert "internal error" not in r.stderr, f"index failed: {r.stderr.strip()}"
    assert r.returncode == 0


def test_unreadable_file_mode_000(tree):
    locked = tree / NATIVE / "Locked.cpp"
    locked.write_text("int locked_fn(int x) { return x; }\n")
    os.chmod(locked, 0)
    try:
        st, rep, ix = build(tree)
        text = status_text(ix)
        if IS_ROOT:
            # Root reads it regardless of its mode: it is indexed like any file.
            assert ix.one("SELECT status FROM files WHERE path = ?", (f"{NATIVE}/Locked.cpp",)) == ("ok",)
        else:
            assert f"{NATIVE}/Locked.cpp: skipped: unreadable" in text, text
    finally:
        os.chmod(locked, 0o644)


def test_permission_denied_is_listed_as_skipped(tree, monkeypatch):
    """What a non-root user sees for a mode-000 file, simulated for root: os.access says no."""
    import torchtalk.source.files as files_mod

    (tree / NATIVE / "Locked.cpp").write_text("int locked_fn(int x) { return x; }\n")
    real_access = os.access
    def access(p, mode, *a, **k):
        return False if str(p).endswith("Locked.cpp") else real_access(p, mode, *a, **k)

    monkeypatch.setattr(files_mod.os, "access", access)
    st, rep, ix = build(tree)
    assert f"{NATIVE}/Locked.cpp: unreadable (permission denied)" in rep.skipped, rep.skipped
    assert f"- {NATIVE}/Locked.cpp: skipped: unreadable (permission denied)" in status_text(ix)


def test_file_that_becomes_unreadable_during_the_build(tree, monkeypatch):
    """Listed as readable, then open() fails (permissions changed, file replaced): one file skipped."""
    real_open = os.open

    def flaky_open(path, *a, **k):
        if str(path).endswith("BinaryOps.cpp"):
            raise PermissionError(13, "Permission denied", str(path))
        return real_open(path, *a, **k)

    with monkeypatch.context() as m:
        m.setattr(os, "open", flaky_open)  # the build runs in this process (workers=1)
        st, rep, ix = build(tree)
    assert any(s.startswith(f"{NATIVE}/BinaryOps.cpp: ") and "unreadable" in s for s in rep.skipped), rep.skipped
    assert "BinaryOps.cpp" in status_text(ix)
    # Readable again: the next refresh picks it up.
    os.utime(tree / NATIVE / "BinaryOps.cpp", ns=(time.time_ns(), time.time_ns() + 10**9))
    rep2 = refresh(st, workers=1, codegen=False)
    assert not any("BinaryOps.cpp" in s for s in rep2.skipped), rep2.skipped
    fresh = Index(st.index_path, st.root)  # (an open Index notices a new file within a short recheck period)
    assert fresh.one("SELECT status FROM files WHERE path = ?", (f"{NATIVE}/BinaryOps.cpp",)) == ("ok",)
    fresh.close()


# ------------------------------------------------------------------ broken YAML


def test_native_functions_syntax_error_names_the_file_and_line(tree):
    nf = tree / NF
    lines = nf.read_text().splitlines()
    # An unclosed flow sequence in the middle of the file.
    at = next(i for i, ln in enumerate(lines) if ln.startswith("- func:") and i > 20)
    lines.insert(at, "- func: broken(Tensor x) -> Tensor\n  dispatch: [CPU, CUDA")
    nf.write_text("\n".join(lines) + "\n")
    bad_line = at + 2  # 1-based line of "  dispatch: [CPU, CUDA"
    st, rep, ix = build(tree)
    msgs = [s for s in rep.skipped if s.startswith(NF)]
    assert msgs, rep.skipped
    import re
    m = re.search(re.escape(NF) + r":(\d+): YAML syntax error", msgs[0])
    assert m, msgs[0]
    assert bad_line <= int(m.group(1)) <= bad_line + 2, (bad_line, msgs[0])
    text = status_text(ix)
    assert f"{NF}:{m.group(1)}: YAML syntax error" in text, text
    # The other files are indexed; the tools answer (the op registry is empty, and says so).
    assert ix.one("SELECT count(*) FROM derivative")[0] > 0
    _r, t = run(get_tool("trace"), ix, function_name="relu")
    assert "Traceback" not in t
    r = tt("index", "--source", str(tree), "--no-codegen", "--progress", "never", "--force")
    assert r.returncode == 0 and f"{NF}:{m.group(1)}: YAML syntax error" in r.stdout, r.stdout + r.stderr


YAML_CASES = {
    "scalar": (NF, "42\n", "expected a list"),
    "mapping": (NF, "func: relu(Tensor self) -> Tensor\n", "expected a list"),
    "func-not-a-string": (NF, "- func: 42\n- func: relu(Tensor self) -> Tensor\n", ":1: entry without a func"),
    "bad-schema": (NF, "- func: relu(Tensor self) -> Tensor\n- func: bad((x\n", ":2: unbalanced"),
    "tab-indent": (NF, "- func: relu(Tensor self) -> Tensor\n\tdispatch:\n", ":2: YAML syntax error"),
    "python-tag": (NF, "- !!python/object/apply:os.system ['touch PWNED']\n", ":1: YAML syntax error"),
    "deep-nesting": (NF, "[" * 5000 + "]" * 5000 + "\n", "YAML syntax error"),
    "derivatives-scalar": ("tools/autograd/derivatives.yaml", "hello\n", "expected a list"),
    "tags-mapping": (f"{NATIVE}/tags.yaml", "tag: x\n", "expected a list"),
}


def test_yaml_with_bytes_that_are_not_utf8_is_read_with_one_replacement_character(tree):
    (tree / NF).write_bytes(b"- func: relu(Tensor self) -> Tensor # \xff\n")
    _st, rep, ix = build(tree)
    assert not [s for s in rep.skipped if s.startswith(NF + ":")], rep.skipped
    _r, text = run(get_tool("trace"), ix, function_name="relu")
    assert text.startswith("# trace relu") and f"{NF}:1" in text, text


@pytest.mark.parametrize("case", list(YAML_CASES))
def test_broken_yaml_is_reported_with_file_and_line(tree, case):
    rel, content, expect = YAML_CASES[case]
    (tree / rel).write_bytes(content if isinstance(content, bytes) else content.encode())
    st, rep, ix = build(tree)
    msgs = [s for s in rep.skipped if s.startswith(rel + ":")]
    assert msgs and expect in msgs[0], rep.skipped
    assert expect in status_text(ix)
    assert not (tree / "PWNED").exists() and not Path("PWNED").exists()
    for tool in ("trace", "search"):
        kw = {"function_name": "relu"} if tool == "trace" else {"query": "relu"}
        _r, text = run(get_tool(tool), ix, **kw)
        assert "Traceback" not in text


@pytest.mark.timeout(120)
def test_yaml_alias_bomb_is_bounded(tree, tmp_path):
    """A 1 KB native_functions.yaml whose aliases expand to 10**10 scalars (billion laughs): the build must
    finish quickly with the file reported, not spend minutes and gigabytes expanding it. Run in a child
    with a 1 GB address-space limit and a 40 s timeout so a failure cannot hurt the machine."""
    levels = ["- func: relu(Tensor self) -> Tensor\n  l0: &l0 [x, x, x, x, x, x, x, x, x, x]\n"]
    for i in range(1, 10):
        levels.append(f"  l{i}: &l{i} [" + ", ".join([f"*l{i - 1}"] * 10) + "]\n")
    (tree / NF).write_text("".join(levels))
    assert (tree / NF).stat().st_size < 2000

    def limit():
        resource.setrlimit(resource.RLIMIT_AS, (1024 * 1024 * 1024, 1024 * 1024 * 1024))

    t0 = time.monotonic()
    try:
        r = tt("index", "--source", str(tree), "--no-codegen", "--progress", "never", "--workers", "1",
               timeout=40, preexec_fn=limit)
    except subprocess.TimeoutExpired:
        pytest.fail("indexing a 1 KB YAML alias bomb did not finish in 40 s")
    secs = time.monotonic() - t0
    assert r.returncode == 0, r.stderr[-1000:]
    assert "MemoryError" not in r.stdout, f"the extractor ran out of memory ({secs:.0f}s): {r.stdout[-500:]}"
    assert f"skipped {NF}" in r.stdout or "relu" in tt("trace", "relu", "--source", str(tree)).stdout


def _extract_seconds(relpath: str, text: str) -> float:
    from torchtalk.extract.worker import Task, run_task

    p = Path(f"/tmp/tt-hostile-{os.getpid()}.cpp")
    p.write_text(text)
    try:
        t0 = time.perf_counter()
        res = run_task(Task(relpath, str(p), "cpp", ""))
        secs = time.perf_counter() - t0
    finally:
        p.unlink()
    assert res.status in ("ok",) or res.status.startswith(("skipped", "error")), res.status
    return secs


@pytest.mark.timeout(120)
def test_cpp_extraction_is_not_quadratic_on_unclosed_templates(tree):
    """Files under the 8 MB cap are parsed; a hostile one must not stall the build. 'template<' repeated
    (unclosed) is parsed in time quadratic in its length: 8x the input takes ~64x the time, so an 8 MB
    file would take most of an hour."""
    rel = f"{NATIVE}/Templates.cpp"
    small = min(_extract_seconds(rel, "template<" * 2500 + "\n") for _ in range(3))
    large = _extract_seconds(rel, "template<" * 20000 + "\n")
    assert large < 20 * max(small, 0.01), f"2.5k repeats: {small:.3f}s, 20k repeats (8x): {large:.2f}s"


# ------------------------------------------------------------------ missing optional directories


def _only(tree: Path, keep: list[str]) -> None:
    for child in list(tree.iterdir()):
        if child.name in ("aten", "tools", "version.txt"):
            continue
        shutil.rmtree(child) if child.is_dir() else child.unlink()
    for p in sorted(tree.rglob("*"), reverse=True):
        rel = p.relative_to(tree).as_posix()
        if p.is_file() and rel not in keep:
            p.unlink()
        elif p.is_dir() and not any(p.iterdir()):
            p.rmdir()


@pytest.mark.parametrize("keep", [
    [NF, f"{NATIVE}/tags.yaml", "tools/autograd/derivatives.yaml"],
    [NF],
], ids=["only-yaml", "only-native-functions"])
def test_tree_with_only_the_yaml_files(tree, keep):
    _only(tree, keep)
    assert sorted(p.relative_to(tree).as_posix() for p in tree.rglob("*") if p.is_file()) == sorted(keep)
    st, rep, ix = build(tree)
    assert rep.mode == "full" and rep.skipped == []
    text = status_text(ix)
    assert "## op registry: ready" in text
    assert "## C++ call graph: not indexed" in text and "## tests: not indexed" in text, text
    # Every tool answers: a result or a clear message, never an exception.
    args = {"function_name": "relu", "query": "relu", "module_name": "Linear", "file_path": "test_nn",
            "message": "RuntimeError: Boolean inputs not supported for relu"}
    for tool in all_tools():
        kw = {p.name: args[p.name] for p in tool.params if p.required}
        try:
            _r, out = run(tool, ix, **kw)
        except TorchTalkError as exc:
            out = str(exc)
        assert out.strip() and "Traceback" not in out, (tool.name, out)
    assert "relu" in run(get_tool("trace"), ix, function_name="relu", focus="yaml")[1]
    _r, calls = run(get_tool("calls"), ix, function_name="relu")
    assert "not indexed" in calls
    # And the CLI over the same tree.
    r = tt("index", "--source", str(tree), "--no-codegen", "--progress", "never", "--force")
    assert r.returncode == 0 and "Traceback" not in r.stderr, r.stderr


def test_top_level_roots_that_are_files_not_directories(tree):
    """'torch' and 'test' as plain files, 'c10' as a broken link: ignored, the rest indexed."""
    (tree / "torch").rename(tree / "torch_dir")
    (tree / "torch").write_text("not a directory\n")
    (tree / "test").write_text("not a directory\n")
    (tree / "c10").rename(tree / "c10_dir")  # the fixture's c10/ (WrapDimMinimal.h) gives way to the link
    (tree / "c10").symlink_to("missing-c10")
    st, rep, ix = build(tree)
    assert ix.one("SELECT count(*) FROM op")[0] > 10
    assert "Traceback" not in status_text(ix)


# ------------------------------------------------------------------ special files where the YAML belongs


def _index_in_child(tree: Path, timeout: float) -> tuple[int | None, str, str]:
    """`torchtalk index` in its own process group; on timeout the whole group (pool workers too) is killed."""
    import signal

    proc = subprocess.Popen([sys.executable, "-m", "torchtalk", "index", "--source", str(tree), "--no-codegen",
                             "--progress", "never"], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            env=dict(os.environ), start_new_session=True)
    try:
        out, err = proc.communicate(timeout=timeout)
        return proc.returncode, out, err
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        out, err = proc.communicate(timeout=30)
        return None, out, err


def test_fifo_in_place_of_an_ops_yaml_does_not_hang_the_build(tree):
    """The C++/Python walk only indexes regular files; the three YAML paths are stat'ed directly. A FIFO
    there (or a link to /dev/zero) must be skipped, not opened: open() on a FIFO blocks forever."""
    rel = "tools/autograd/derivatives.yaml"
    (tree / rel).unlink()
    os.mkfifo(tree / rel)
    rc, out, err = _index_in_child(tree, timeout=15)
    assert rc is not None, f"`torchtalk index` was still blocked after 15 s with a FIFO at {rel}"
    assert rc == 0 and "Traceback" not in err, err
    assert rel in out, out  # listed as skipped


def test_unusable_cache_dir_is_a_one_line_error(tree, tmp_path, monkeypatch):
    """$TORCHTALK_CACHE_DIR pointing at a regular file: a clear error, not an 'internal error'."""
    bad = tmp_path / "cache-is-a-file"
    bad.write_text("x")
    monkeypatch.setenv("TORCHTALK_CACHE_DIR", str(bad))
    r = tt("index", "--source", str(tree), "--no-codegen", "--progress", "never")
    lines = [ln for ln in r.stderr.splitlines() if ln.strip() and not ln.startswith("torchtalk: ")]
    assert r.returncode != 0 and len(lines) == 1, r.stderr
    assert "Traceback" not in r.stderr, r.stderr
    assert "internal error" not in r.stderr, r.stderr
    assert str(bad) in lines[0], r.stderr
