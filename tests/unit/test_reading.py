"""Reading the tree's files (issue 26.7): only regular files, within a size and a time limit; a build that waits
for another says so; a byte that is not UTF-8 costs one character, not the whole file.

Each test states how it failed on main before issue 26.
"""

from __future__ import annotations

import fcntl
import os
import re
import subprocess
import sys
import textwrap
import threading
import time
from pathlib import Path

import pytest

from torchtalk.index.indexer import refresh
from torchtalk.source.files import list_files
from torchtalk.source.tree import find_source
from torchtalk.store.reader import Index
from torchtalk.tools import get_tool, run

NATIVE = "aten/src/ATen/native"


def _child(code: str, timeout: float) -> tuple[int | None, str, str]:
    """Python ``code`` in a child process of its own session; None as the code when it had to be killed."""
    proc = subprocess.Popen([sys.executable, "-c", textwrap.dedent(code)], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, env=dict(os.environ), start_new_session=True)
    try:
        out, err = proc.communicate(timeout=timeout)
        return proc.returncode, out, err
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, 9)
        out, err = proc.communicate(timeout=30)
        return None, out, err


def test_a_file_that_becomes_a_fifo_after_listing_is_skipped_not_waited_for(tree):
    """On main, the worker open()ed it and blocked forever while holding the index lock (the child below was
    killed after 60 s). Now it is opened without blocking, seen not to be a regular file, and skipped."""
    victim = tree / NATIVE / "SoftMax.cpp"
    code = f"""
        import os, sys
        import torchtalk.index.indexer as indexer
        real = indexer.list_files
        def racing(root):  # the file turns into a FIFO between the listing and the read
            entries = real(root)
            os.unlink({str(victim)!r})
            os.mkfifo({str(victim)!r})
            return entries
        indexer.list_files = racing
        from torchtalk.cli import main
        sys.exit(main(["index", "--source", {str(tree)!r}, "--no-codegen", "--progress", "never"]))
    """
    rc, out, err = _child(code, timeout=60)
    assert rc is not None, f"the build was still blocked on the FIFO after 60 s: {err[-2000:]}"
    assert rc == 0, err
    assert f"{NATIVE}/SoftMax.cpp: skipped: not a regular file (a FIFO)" in out, out
    ix = Index(find_source(tree).index_path, tree.resolve())
    try:
        _r, text = run(get_tool("trace"), ix, function_name="relu", focus="dispatch")
        assert "relu" in text  # the rest is indexed
    finally:
        ix.close()


def test_a_fifo_in_the_tree_is_listed_as_skipped(tree):
    """On main a FIFO named like a source file was dropped without a word; now get_status lists it."""
    os.mkfifo(tree / NATIVE / "Pipe.cpp")
    entries = {e.relpath: e for e in list_files(tree.resolve())}
    assert entries[f"{NATIVE}/Pipe.cpp"].skip == "not a regular file (a FIFO)"
    st = find_source(tree)
    rep = refresh(st, workers=1, codegen=False)
    assert f"{NATIVE}/Pipe.cpp: not a regular file (a FIFO)" in rep.skipped


def test_read_limited_refuses_what_is_not_a_regular_file_and_what_grows(tmp_path):
    """New in issue 26 (main opened files with open() and read them whole)."""
    from torchtalk.source.files import Unreadable, read_limited
    fifo = tmp_path / "f.cpp"
    os.mkfifo(fifo)
    t0 = time.monotonic()
    with pytest.raises(Unreadable, match="a FIFO"):
        read_limited(str(fifo))
    assert time.monotonic() - t0 < 1
    big = tmp_path / "big.cpp"
    big.write_bytes(b"x" * 3000)
    with pytest.raises(Unreadable, match="larger than"):
        read_limited(str(big), max_bytes=2000)
    st, data = read_limited(str(big))
    assert len(data) == 3000 == st.st_size


def test_a_byte_that_is_not_utf8_costs_one_character_not_the_file(tree):
    """On main the whole file was skipped ("not UTF-8 (byte N)") with all its functions."""
    cpp = tree / NATIVE / "Activation.cpp"
    cpp.write_bytes(b"// caf\xe9: a Latin-1 comment\n" + cpp.read_bytes())
    py = tree / "torch" / "nn" / "odd.py"
    py.parent.mkdir(parents=True, exist_ok=True)
    py.write_bytes(b"# \xff\ndef odd_function(x):\n    return x\n")
    st = find_source(tree)
    rep = refresh(st, workers=1, codegen=False)
    assert not [s for s in rep.skipped if "Activation.cpp" in s or "odd.py" in s], rep.skipped
    ix = Index(st.index_path, st.root)
    try:
        status, reason = ix.one("SELECT status, reason FROM files WHERE path = ?", (f"{NATIVE}/Activation.cpp",))
        assert status == "ok" and "U+FFFD" in reason, (status, reason)
        lines = [r[0] for r in ix.q("SELECT s.line FROM cpp_symbol s JOIN files f ON f.id = s.file_id "
                                    "WHERE f.path = ? AND s.name = 'relu'", (f"{NATIVE}/Activation.cpp",))]
        original = [i + 1 for i, ln in enumerate((tree / NATIVE / "Activation.cpp").read_bytes().splitlines())
                    if b"Tensor relu(" in ln]
        assert lines and lines[0] in original, (lines, original)  # line numbers unchanged by the replacement
        assert ix.one("SELECT count(*) FROM py_function WHERE name = 'odd_function'")[0] == 1
    finally:
        ix.close()


def _hold_lock(index_path: Path) -> int:
    """Hold the index's writer lock as a stuck build would (raw flock: the same on main and now)."""
    index_path.parent.mkdir(parents=True, exist_ok=True)
    lock = index_path.with_name(index_path.name + ".lock")
    fd = os.open(lock, os.O_RDWR | os.O_CREAT, 0o644)
    fcntl.flock(fd, fcntl.LOCK_EX)
    os.ftruncate(fd, 0)
    os.pwrite(fd, f"{os.getpid()} {time.time() - 42:.3f}\n".encode(), 0)
    return fd


def test_a_build_that_waits_for_another_says_so_and_for_how_long(indexed):
    """On main `torchtalk index` waited on the lock without a word (and `trace` with it): a user saw nothing."""
    tree, ix = indexed
    st = find_source(tree)
    fd = _hold_lock(st.index_path)
    lines: list[str] = []
    try:
        proc = subprocess.Popen([sys.executable, "-m", "torchtalk", "index", "--source", str(tree), "--no-codegen",
                                 "--progress", "never"], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        reader = threading.Thread(target=lambda: lines.extend(proc.stderr), daemon=True)
        reader.start()
        deadline = time.monotonic() + 60
        while not any("waiting for another build" in ln for ln in lines) and time.monotonic() < deadline:
            assert proc.poll() is None, "".join(lines)
            time.sleep(0.2)
    finally:
        os.close(fd)  # the other build ends
    proc.wait(timeout=120)
    reader.join(timeout=10)
    err = "".join(lines)
    assert proc.returncode == 0, err
    said = re.search(rf"waiting for another build of {re.escape(str(st.index_path))} \(pid {os.getpid()}, running "
                     r"for (\d+) s\)", err)
    assert said and int(said.group(1)) >= 42, err  # the holder started 42 s before it took the lock
    assert "the other build ended; waited" in err, err


def test_a_query_waits_a_while_then_answers_from_the_index_it_has(indexed):
    """On main `torchtalk trace` hung silently as long as another build held the lock."""
    tree, ix = indexed
    st = find_source(tree)
    fd = _hold_lock(st.index_path)
    try:
        t0 = time.monotonic()
        r = subprocess.run([sys.executable, "-m", "torchtalk", "trace", "relu", "--focus", "yaml", "--source",
                            str(tree)], capture_output=True, text=True, timeout=90)
        took = time.monotonic() - t0
    finally:
        os.close(fd)
    assert r.returncode == 0, r.stderr
    assert "## relu" in r.stdout
    assert "waiting for another build" in r.stderr and "answering from the index as it is" in r.stderr, r.stderr
    assert took < 60
