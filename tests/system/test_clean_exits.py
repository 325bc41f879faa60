"""Clean exits of `torchtalk index`: Ctrl-C, SIGTERM and SIGKILL at any moment, on a real subprocess.

A Ctrl-C (SIGINT to the whole foreground process group, as a terminal sends it) prints one line and exits
130 without a worker traceback; after a kill, no helper (multiprocessing's resource tracker and forkserver,
the pool workers, the codegen driver) outlives the indexer for more than a few seconds, and no temp file
of the killed build survives the next run.
"""

from __future__ import annotations

import os
import random
import signal
import subprocess
import sys
import time
import uuid
from pathlib import Path

import psutil
import pytest

from torchtalk.source.tree import find_source

NATIVE = "aten/src/ATen/native"
SEED = int(os.environ.get("TT_FAULTS_SEED", "20240611"))


def _enlarge(tree: Path, copies: int = 60, repeat: int = 4) -> None:
    """Copies of the fixture's C++ files, so that a build keeps its pool busy for a few seconds."""
    native = tree / NATIVE
    srcs = [p for p in native.rglob("*") if p.is_file() and p.suffix in (".cpp", ".cu", ".mm", ".h")]
    for i in range(copies):
        d = native / "gen_copies" / f"c{i:03d}"
        d.mkdir(parents=True)
        for p in srcs:
            (d / f"{p.stem}_{i}{p.suffix}").write_text(p.read_text() * repeat)


def _add_big_files(tree: Path, n: int = 2, size: int = 7 * 1024 * 1024) -> None:
    """Files that take each worker seconds to parse (the largest go first), so that a kill lands while the
    workers are busy in the parser, not idle between tasks."""
    native = tree / NATIVE
    unit = (native / "BinaryOps.cpp").read_text() + (native / "cpu" / "BinaryOpsKernel.cpp").read_text()
    for i in range(n):
        (native / f"Big{i}.cpp").write_text((unit * (size // len(unit) + 1))[:size])


def _start(tree: Path, *extra: str) -> tuple[subprocess.Popen, str]:
    """`torchtalk index --force` in a new session; every descendant inherits TT_EXIT_TAG (psutil finds them
    even after they are re-parented, or in another session like the codegen driver). Its stderr goes to a
    file, not a pipe: waiting for a pipe's end would wait for every helper that holds it."""
    tag = uuid.uuid4().hex
    env = {**os.environ, "TT_EXIT_TAG": tag}
    err = open(tree.parent / f"stderr-{tag}.txt", "wb")
    try:
        proc = subprocess.Popen([sys.executable, "-m", "torchtalk", "index", "--source", str(tree), "--force",
                                 *extra], stdout=subprocess.DEVNULL, stderr=err, env=env, start_new_session=True)
    finally:
        err.close()
    return proc, tag


def _stderr(tree: Path, tag: str) -> str:
    return (tree.parent / f"stderr-{tag}.txt").read_text(errors="replace")


def _tagged(tag: str) -> list[psutil.Process]:
    found = []
    for p in psutil.process_iter():
        try:
            if p.status() != psutil.STATUS_ZOMBIE and p.environ().get("TT_EXIT_TAG") == tag:
                found.append(p)
        except psutil.Error:
            continue
    return found


def _describe(procs: list[psutil.Process]) -> list[str]:
    out = []
    for p in procs:
        try:
            out.append(f"{p.pid} {' '.join(p.cmdline())[:90]}")
        except psutil.Error:
            pass
    return out


def _wait_for(predicate, timeout: float, step: float = 0.05) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(step)
    return predicate()


def _forkserver_processes(tag: str) -> int:
    return sum("forkserver" in cmd for cmd in _describe(_tagged(tag)))  # _describe skips those gone meanwhile


def _workers_running(tag: str) -> bool:
    return _forkserver_processes(tag) >= 3  # the server and 2 workers


def _survivors_after(tag: str, seconds: float) -> list[str]:
    _wait_for(lambda: not _tagged(tag), seconds)
    left = _tagged(tag)
    for p in left:  # do not leak them into the rest of the suite
        try:
            p.kill()
        except psutil.Error:
            pass
    return _describe(left)


def _temps(tree: Path) -> list[str]:
    return sorted(p.name for p in find_source(tree).index_path.parent.glob(".index.db.tmp-*"))


@pytest.mark.timeout(300)
def test_ctrl_c_prints_one_line_and_exits_130(tree):
    _enlarge(tree)
    proc, tag = _start(tree, "--no-codegen", "--workers", "2")
    assert _wait_for(lambda: _workers_running(tag) or proc.poll() is not None, 120), "the pool never started"
    assert proc.poll() is None, "the build finished before the pool could be interrupted"
    os.killpg(proc.pid, signal.SIGINT)  # what a terminal's Ctrl-C does: the whole foreground group
    proc.wait(timeout=60)
    survivors = _survivors_after(tag, 3.0)
    err = _stderr(tree, tag)
    assert proc.returncode == 130, err
    assert "Traceback" not in err and "KeyboardInterrupt" not in err and "ForkServerPoolWorker" not in err, err
    lines = err.strip().splitlines()
    assert lines[-1] == "torchtalk: interrupted", err
    assert all(line.startswith("torchtalk: ") for line in lines), err  # the start line, then the one line
    assert survivors == []
    assert _temps(tree) == []  # the build's temp file went with it


@pytest.mark.timeout(300)
def test_ctrl_c_while_the_pool_starts(tree):
    """A Ctrl-C at the moment the forkserver or a worker has just started: a worker torn down while it was
    still unpickling its state would print a traceback (its semaphores already gone)."""
    _enlarge(tree)
    for n in (1, 2, 3, 1, 2, 3):
        proc, tag = _start(tree, "--no-codegen", "--workers", "2")
        _wait_for(lambda tag=tag, n=n, proc=proc: _forkserver_processes(tag) >= n or proc.poll() is not None, 120,
                  step=0.002)
        os.killpg(proc.pid, signal.SIGINT)
        proc.wait(timeout=60)
        survivors = _survivors_after(tag, 3.0)
        err = _stderr(tree, tag)
        assert proc.returncode == 130 and "Traceback" not in err, (n, proc.returncode, err)
        assert err.strip().splitlines()[-1] == "torchtalk: interrupted" and survivors == [], (n, err, survivors)
    assert _temps(tree) == []


@pytest.mark.timeout(300)
def test_sigterm_cleans_up_like_ctrl_c(tree):
    _enlarge(tree)
    proc, tag = _start(tree, "--no-codegen", "--workers", "2")
    assert _wait_for(lambda: _workers_running(tag) or proc.poll() is not None, 120)
    proc.send_signal(signal.SIGTERM)  # to the indexer alone, as `kill PID` or a parent's terminate() does
    proc.wait(timeout=60)
    survivors = _survivors_after(tag, 3.0)
    err = _stderr(tree, tag)
    assert proc.returncode == 143 and err.strip().splitlines()[-1] == "torchtalk: terminated", err
    assert "Traceback" not in err, err
    assert survivors == []
    assert _temps(tree) == []


@pytest.mark.timeout(300)
def test_sigterm_to_the_whole_group_prints_no_traceback(tree):
    """SIGTERM to the indexer's process group (`kill -- -PGID`, a supervisor stopping a session): the workers
    and the forkserver die of it while the indexer unwinds, and the pool's own thread, seeing its workers
    gone, tries to start new ones through the dead forkserver. That must not print a traceback (CI saw one,
    ConnectionRefusedError in multiprocessing's _handle_workers, passed on by a server's background build)."""
    _enlarge(tree)
    for _ in range(4):
        proc, tag = _start(tree, "--no-codegen", "--workers", "2")
        assert _wait_for(lambda tag=tag, proc=proc: _workers_running(tag) or proc.poll() is not None, 120)
        os.killpg(proc.pid, signal.SIGTERM)
        proc.wait(timeout=60)
        survivors = _survivors_after(tag, 3.0)
        err = _stderr(tree, tag)
        assert proc.returncode == 143 and err.strip().splitlines()[-1] == "torchtalk: terminated", err
        assert "Traceback" not in err and "Error" not in err, err
        assert survivors == []
    assert _temps(tree) == []


@pytest.mark.timeout(600)
def test_sigkill_at_any_moment_leaves_no_helper_and_no_temp_file(tree):
    """SIGKILL (no clean-up can run) within the first second, and once the pool works: every helper dies
    with the indexer within 3 s, and the next run removes the killed build's temp file."""
    _enlarge(tree)
    _add_big_files(tree)
    first = subprocess.run([sys.executable, "-m", "torchtalk", "index", "--source", str(tree), "--no-codegen"],
                           capture_output=True, text=True, timeout=300)
    assert first.returncode == 0, first.stderr
    rng = random.Random(SEED)
    moments = sorted(rng.uniform(0.05, 1.0) for _ in range(6))
    log = []
    for moment in [*moments, "pool"]:
        proc, tag = _start(tree)  # the codegen driver too (on this tree the generators fail quickly)
        if moment == "pool":
            assert _wait_for(lambda tag=tag, proc=proc: _workers_running(tag) or proc.poll() is not None, 120)
        else:
            time.sleep(moment)
        running = _describe(_tagged(tag))
        proc.kill()
        proc.wait(timeout=60)
        survivors = _survivors_after(tag, 3.0)
        log.append(f"killed at {moment}: {len(running)} processes")
        assert survivors == [], f"killed at {moment} (seed {SEED}); running then: {running}; still alive: {survivors}"
    assert any(n.endswith(f": {k} processes") for n in log for k in range(3, 10)), log  # some kills hit the pool

    assert _temps(tree), "no kill left a temp file: the test did not test the clean-up"
    # The next run has nothing to build (the killed builds published nothing), and still cleans up.
    r = subprocess.run([sys.executable, "-m", "torchtalk", "index", "--source", str(tree), "--no-codegen"],
                       capture_output=True, text=True, timeout=300)
    assert r.returncode == 0 and r.stdout.startswith("index is up to date"), r.stdout + r.stderr
    assert _temps(tree) == [], log
