"""A full disk loses nothing and says so (issue 26.4-6), on a real full disk: a tmpfs in a private mount
namespace (tests/fulldisk.py), and on a file-size limit (RLIMIT_FSIZE: EFBIG, which SQLite calls a disk I/O
error).

How each failed on main before issue 26:
- generators out of space: `index` exited 0 ("2 files parsed, 39 removed"), the generated layer was emptied
  (bindings 8,472 -> 0), `doctor` said "All checks passed", and once space was back `index` said "up to date";
- a refresh out of space: the temp file stayed (the disk stayed full), `trace` printed nothing and exited 2, and
  the intact index was marked corrupt; `get_status` never said that refreshing kept failing;
- a first build out of space: exit 1, "internal error: OperationalError: database or disk is full", no path.
"""

from __future__ import annotations

import os
import shutil
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

from torchtalk.source.tree import find_source

from ..conftest import build_index
from ..fulldisk import du, fsize_limit, namespace_problem, run_full
from ..unit.test_generated_layer import AUTOGRAD, _add_generators

NATIVE = "aten/src/ATen/native"
NO_NAMESPACE = namespace_problem()
needs_namespace = pytest.mark.skipif(NO_NAMESPACE is not None, reason=NO_NAMESPACE or "")

# A stand-in torchgen whose output is large (3 MB): out of space while it writes. It runs beside the refresh that
# publishes the hand-written files first; it waits before writing so that this publish has the room it needs (on a
# loaded machine the generators could otherwise fill the disk first, and the index's own write would fail instead:
# a clear error too, but not the one this test is about).
BIG_TORCHGEN = '''
import os, re, sys, time
def main():
    time.sleep(3)
    out = sys.argv[sys.argv.index("-d") + 1]
    os.makedirs(out, exist_ok=True)
    text = open("aten/src/ATen/native/native_functions.yaml").read()
    body = []
    for name, kernel in re.findall(r"- func: (\\w+)\\(.*\\n(?:  .*\\n)*?    CPU(?:, CUDA)?: (\\w+)", text):
        body.append("at::Tensor wrapper_CPU_%s(const at::Tensor & self) {\\n  return at::native::%s(self);\\n}\\n"
                    % (name, kernel))
    pad = "// " + "x" * 1000 + "\\n"
    with open(os.path.join(out, "RegisterCPU.cpp"), "w") as f:
        f.write("namespace at {\\n" + "".join(body) + pad * 3000 + "} // namespace at\\n")
'''


def _index(tree: Path, *extra: str) -> list:
    return ["run", ["index", "--source", str(tree), "--progress", "never", *extra]]


def _no_temps(listing: dict) -> None:
    temps = [f for f in listing["files"] if ".tmp-" in f or ".tmp." in f]
    assert not temps, f"temp files left behind: {temps}"


def _whole(index_path: Path) -> str:
    conn = sqlite3.connect(f"file:{index_path}?mode=ro", uri=True)
    try:
        assert conn.execute("PRAGMA quick_check").fetchone()[0] == "ok"
        return dict(conn.execute("SELECT key, value FROM meta"))["built_at"]
    finally:
        conn.close()


def _edit(tree: Path) -> None:
    p = tree / NATIVE / "Activation.cpp"
    p.write_text(p.read_text() + "\nint added_after_the_build(int x) { return x; }\n")


@needs_namespace
def test_a_refresh_on_a_full_disk_keeps_the_index_says_why_and_recovers(tree, tmp_path):
    seed = tmp_path / "seed"
    _st, ix, _r = build_index(tree, seed, workers=1, codegen=False)
    index_bytes = ix.path.stat().st_size
    ix.close()
    _edit(tree)
    cache = tmp_path / "cache"
    t = str(tree)
    steps = [_index(tree, "--no-codegen"), ["ls"],
             ["run", ["trace", "relu", "--focus", "yaml", "--source", t]],
             ["run", ["status", "--source", t]], ["run", ["doctor", "--source", t]],
             ["resize", "256m"], _index(tree, "--no-codegen"), ["ls"], ["run", ["status", "--source", t]]]
    (build, ls, trace, status, doctor, _r, again, ls2, status2) = run_full(
        cache, du(seed) + index_bytes // 3, steps, seed=seed)
    _no_temps(ls)  # main: the 27 MB temp file stayed, so the disk stayed full
    assert not any(f.endswith(".corrupt") for f in ls["files"]), ls  # a full disk is not a damaged index
    assert trace["code"] == 0 and "## relu" in trace["stdout"], trace  # main: exit 2, nothing printed
    assert "warning: answering from the index as it is" in trace["stderr"], trace["stderr"]
    assert "Refreshing the index fails: the last 2 builds failed" in status["stdout"], status["stdout"]
    assert build["code"] == 2, build
    assert "error: could not write" in build["stderr"] and str(cache) in build["stderr"], build["stderr"]
    assert "no space left" in build["stderr"] and "the previous index is unchanged" in build["stderr"]
    assert "Traceback" not in build["stderr"] and "internal error" not in build["stderr"]
    assert doctor["code"] == 1 and "problem: refreshing the index fails" in doctor["stdout"], doctor["stdout"]
    assert again["code"] == 0 and "incremental index" in again["stdout"], again
    _no_temps(ls2)
    assert not any(f.endswith(".failed") for f in ls2["files"]), ls2
    assert "Refreshing the index fails" not in status2["stdout"]


@needs_namespace
def test_a_first_build_on_a_full_disk_is_an_error_with_the_path(tree, tmp_path):
    cache = tmp_path / "cache"
    (build, ls, _r, again) = run_full(cache, 300 * 1024, [_index(tree, "--no-codegen"), ["ls"], ["resize", "256m"],
                                                          _index(tree, "--no-codegen")])
    assert build["code"] == 2, build  # the help: an index that cannot be built is exit 2
    err = build["stderr"]
    assert "error: could not write" in err and str(cache) in err and "there is no index yet" in err, err
    assert "internal error" not in err and "Traceback" not in err
    _no_temps(ls)
    assert again["code"] == 0 and "full index" in again["stdout"], again


@needs_namespace
def test_generators_out_of_space_fail_the_build_and_empty_nothing(tree, tmp_path):
    _add_generators(tree, torchgen=BIG_TORCHGEN, autograd=AUTOGRAD)
    seed = tmp_path / "seed"
    _st, ix, _r = build_index(tree, seed, workers=1)
    bindings = ix.one("SELECT count(*) FROM cpp_symbol s JOIN files f ON f.id = s.file_id WHERE f.generated = 1")[0]
    index_bytes = ix.path.stat().st_size
    ix.close()
    assert bindings > 0
    nf = tree / NATIVE / "native_functions.yaml"
    nf.write_text(nf.read_text().replace("CPU, CUDA: relu\n", "CPU, CUDA: relu_v2\n"))  # the generators re-run
    cache = tmp_path / "cache"
    t = str(tree)
    steps = [_index(tree), ["ls"], ["run", ["status", "--source", t]], ["run", ["doctor", "--source", t]],
             ["resize", "256m"], _index(tree), ["run", ["status", "--source", t]], _index(tree)]
    (build, ls, status, doctor, _r, again, status2, third) = run_full(
        cache, du(seed) + 2 * index_bytes + 1024 * 1024, steps, seed=seed)
    assert build["code"] == 2, build
    err = build["stderr"]
    assert "the tree's generators could not write their output under" in err and str(cache) in err, err
    assert "no space left" in err and "Traceback" not in err
    _no_temps(ls)
    st = status["stdout"]
    assert "generated functions: 0" not in st and "Refreshing the index fails" in st, st
    assert "## generated code: incomplete" in st, st  # not "updating" while nothing runs
    assert doctor["code"] == 1 and "problem: refreshing the index fails" in doctor["stdout"], doctor["stdout"]
    # Space is back: the next `index` runs the generators again (not "up to date").
    assert again["code"] == 0 and "up to date" not in again["stdout"], again
    assert "## generated code: ready" in status2["stdout"], status2["stdout"]
    assert "up to date" in third["stdout"], third


def test_a_refresh_over_a_file_size_limit_keeps_the_index_and_recovers(tree, tmp_path, monkeypatch):
    """The same without namespaces: RLIMIT_FSIZE in the child (EFBIG; SQLite says "disk I/O error")."""
    monkeypatch.setenv("TORCHTALK_CACHE_DIR", str(tmp_path / "cache"))
    _st, ix, _r = build_index(tree, tmp_path / "cache", workers=1, codegen=False)
    path, built = ix.path, _whole(ix.path)
    ix.close()
    _edit(tree)
    cmd = [sys.executable, "-m", "torchtalk", "index", "--source", str(tree), "--no-codegen", "--progress", "never"]
    limited = subprocess.run(cmd, capture_output=True, text=True, preexec_fn=fsize_limit(path.stat().st_size // 2),
                             timeout=300)
    assert limited.returncode == 2, limited
    assert "error: could not write" in limited.stderr and str(path.parent) in limited.stderr, limited.stderr
    assert "Traceback" not in limited.stderr and "internal error" not in limited.stderr
    assert not list(path.parent.glob(".index.db.tmp-*")) and not path.with_name("index.db.corrupt").exists()
    assert _whole(path) == built  # the published index was not touched
    trace = subprocess.run([sys.executable, "-m", "torchtalk", "trace", "relu", "--focus", "yaml", "--source",
                            str(tree)], capture_output=True, text=True, timeout=300,
                           preexec_fn=fsize_limit(path.stat().st_size // 2))
    assert trace.returncode == 0 and "## relu" in trace.stdout, trace
    assert "warning: answering from the index as it is" in trace.stderr
    ok = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
    assert ok.returncode == 0 and "incremental index" in ok.stdout, ok
    assert not path.with_name("index.db.failed").exists()
    assert find_source(tree).index_path == path
    shutil.rmtree(tmp_path / "cache", ignore_errors=True)
    os.sync()
