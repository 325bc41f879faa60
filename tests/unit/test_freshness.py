"""Answers are fresh right after an edit, or say they are not (issue 26.2).

On main before issue 26: the next `called_by` after a rename answered from the old index without a word
("No C++ function named ..."), for up to 30 s when the edit came within 30 s of the last refresh (refreshes
were throttled); `get_status` said "fresh (checked 5s ago)" right after the edit; and after a build stopped
while the generators re-ran, `status` said "generated code: updating" with nothing running.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from torchtalk.index.indexer import refresh
from torchtalk.source.tree import find_source
from torchtalk.store.reader import Index

from ..servers import RawServer, reply_text
from .test_generated_layer import _add_generators

NATIVE = "aten/src/ATen/native"
NOTE = "Note: this answer is from the index built at"


def _rename(tree: Path, rel: str, old: str, new: str) -> None:
    path = tree / rel
    data = path.read_text().replace(old, new)
    tmp = path.with_name(path.name + ".new")
    tmp.write_text(data)
    os.replace(tmp, path)  # as editors save


def _fresh_or_noted(text: str, rel: str, fresh_marker: str) -> str:
    """'fresh' when the answer shows the edit, 'noted' when its first line says it misses the edited file."""
    if fresh_marker in text and not text.startswith(NOTE):
        return "fresh"
    first = text.splitlines()[0]
    assert first.startswith(NOTE) and rel in first and "refresh" in first, text[:600]
    return "noted"


def test_an_answer_right_after_an_edit_is_fresh_or_says_it_is_not(indexed):
    tree, _ix = indexed
    s = RawServer(["--source", str(tree), "--no-codegen"])
    try:
        s.initialize()
        assert "index_select_out_cpu_" in reply_text(s.call(1, "called_by", {"function_name": "index_select_out_cpu_"}))
        rel = f"{NATIVE}/TensorAdvancedIndexing.cpp"
        for round_, new in enumerate(["index_select_renamed_a", "index_select_renamed_b"]):
            # The second edit comes within seconds of the first refresh: no 30 s throttle any more.
            old = "index_select_out_cpu_" if round_ == 0 else "index_select_renamed_a"
            _rename(tree, rel, old, new)
            status = reply_text(s.call(f"s{round_}", "get_status", {}))
            text = reply_text(s.call(f"c{round_}", "called_by", {"function_name": new}))
            how = _fresh_or_noted(text, rel, f"callers of at::native::{new}")
            if "; fresh" in status:  # get_status may say fresh only when the index holds the edit
                assert how == "fresh", (status, text)
            else:
                assert rel in status, status
            deadline = time.monotonic() + 20
            while how == "noted" and time.monotonic() < deadline:
                time.sleep(0.5)
                text = reply_text(s.call(f"r{round_}", "called_by", {"function_name": new}))
                how = _fresh_or_noted(text, rel, f"callers of at::native::{new}")
            assert how == "fresh", text[:600]
    finally:
        s.close()
    assert not any("Traceback" in line for line in s.stderr), "".join(s.stderr)


def test_the_watch_sees_edits_adds_deletes_and_new_directories_exactly(indexed):
    from torchtalk.index.freshness import Freshness  # new in issue 26
    tree, ix = indexed
    fresh = Freshness(find_source(tree).root, codegen=False)
    try:
        fresh.start()
        assert fresh.watching, "inotify is available on Linux"
        assert fresh.changed(ix) == []
        rel = f"{NATIVE}/Activation.cpp"
        _rename(tree, rel, "relu", "relu")  # rewritten with the same content: the mtime moved
        (tree / NATIVE / "New.cpp").write_text("int new_fn() { return 1; }\n")
        (tree / NATIVE / "SoftMax.cpp").unlink()
        (tree / NATIVE / "newdir").mkdir()
        (tree / NATIVE / "newdir" / "Inner.cu").write_text("__global__ void k() {}\n")
        (tree / NATIVE / "notes.txt").write_text("not indexed")
        assert fresh.changed(ix) == sorted([rel, f"{NATIVE}/New.cpp", f"{NATIVE}/SoftMax.cpp",
                                            f"{NATIVE}/newdir/Inner.cu"])
        refresh(find_source(tree), workers=1, codegen=False)
        ix.recheck()
        assert fresh.changed(ix) == []  # the refreshed index holds them all
    finally:
        fresh.close()


def test_status_does_not_say_updating_when_no_build_runs(tree, tmp_path):
    """A build killed while the generators re-ran left "generated code: updating" in the index for good."""
    slow = ("import os, sys, time\n"
            "def main():\n"
            "    out = sys.argv[sys.argv.index('-d') + 1]\n"
            "    os.makedirs(out, exist_ok=True)\n"
            "    if 'relu_v2' in open('aten/src/ATen/native/native_functions.yaml').read():\n"
            "        time.sleep(60)\n"
            "    open(os.path.join(out, 'RegisterCPU.cpp'), 'w').write('int wrapper_CPU_relu() { return 0; }\\n')\n")
    _add_generators(tree, torchgen=slow)
    st = find_source(tree)
    refresh(st, workers=1)
    nf = tree / NATIVE / "native_functions.yaml"
    nf.write_text(nf.read_text().replace("CPU, CUDA: relu\n", "CPU, CUDA: relu_v2\n"))
    proc = subprocess.Popen([sys.executable, "-m", "torchtalk", "index", "--source", str(tree), "--progress",
                             "never"], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            start_new_session=True)
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:  # the first version (hand-written files) lands, the generators run
        ix = Index(st.index_path, st.root)
        try:
            if ix.meta.get("codegen_status", "").startswith("updating"):
                break
        finally:
            ix.close()
        assert proc.poll() is None, proc.communicate()
        time.sleep(0.2)
    else:
        pytest.fail("the first version was not published")
    os.killpg(proc.pid, signal.SIGKILL)  # the machine went down, the editor was closed
    proc.wait()
    time.sleep(1.5)  # the generators notice their parent is gone
    r = subprocess.run([sys.executable, "-m", "torchtalk", "status", "--source", str(tree)], capture_output=True,
                       text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    line = next(ln for ln in r.stdout.splitlines() if ln.startswith("## generated code"))
    assert "updating" not in line and "incomplete" in line, r.stdout
    assert "fresh" not in r.stdout.split("- built:")[1].splitlines()[0], r.stdout
