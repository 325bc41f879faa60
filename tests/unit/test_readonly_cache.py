"""A fresh index in a cache that cannot be written answers every read-only command; only work that must
write fails, with its message.

The cache is made immutable for real: `chattr +i` on every file and directory when running as root (root
ignores permission bits, not the immutable attribute), `chmod a-w` otherwise.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest


def tt(*args, cwd=None):
    return subprocess.run([sys.executable, "-m", "torchtalk", *args], capture_output=True, text=True,
                          env=dict(os.environ), cwd=cwd, timeout=300)


def _all_paths(root: Path) -> list[Path]:
    return [root, *sorted(root.rglob("*"))]


def _freeze(root: Path):
    """Make ``root`` unwritable; returns the undo. Skips when this machine cannot do it for real."""
    if os.geteuid() == 0:
        chattr = shutil.which("chattr")
        if chattr is None:
            pytest.skip("running as root (which ignores permissions) and chattr is missing: no immutable cache")
        r = subprocess.run([chattr, "-R", "+i", str(root)], capture_output=True, text=True)
        undo = lambda: subprocess.run([chattr, "-R", "-i", str(root)], capture_output=True)  # noqa: E731
        if r.returncode != 0:
            undo()
            pytest.skip(f"running as root and `chattr +i` is not supported here ({r.stderr.strip()})")
    else:
        modes = {p: p.stat().st_mode for p in _all_paths(root)}
        for p in reversed(list(modes)):
            p.chmod(modes[p] & ~0o222)

        def undo():
            for p, mode in modes.items():
                p.chmod(mode)
    try:
        (root / "probe").write_text("x")
    except OSError:
        return undo
    undo()
    pytest.skip(f"{root} stays writable after freezing it")


@pytest.fixture
def frozen_cache(tree):
    """(tree, cache dir): the tree indexed (codegen on, as every tool command runs it), then the cache frozen."""
    r = tt("index", "--source", str(tree))
    assert r.returncode == 0, r.stderr
    r = tt("trace", "relu", "--source", str(tree))  # everything a read-only command could want is there
    assert r.returncode == 0, r.stderr
    cache = Path(os.environ["TORCHTALK_CACHE_DIR"])
    undo = _freeze(cache)
    try:
        yield tree, cache
    finally:
        undo()


def test_a_fresh_index_in_an_immutable_cache_answers_every_read_only_command(frozen_cache):
    tree, cache = frozen_cache
    before = sorted((str(p), p.stat().st_mtime_ns) for p in _all_paths(cache))
    for args in (["trace", "relu", "--focus", "yaml"], ["search", "cumsum"], ["get-status"], ["status"],
                 ["calls", "atan2_kernel"], ["list-modules"]):
        r = tt(*args, "--source", str(tree))
        assert r.returncode == 0, (args, r.stderr)
        assert r.stdout.strip() and "Operation not permitted" not in r.stderr + r.stdout, (args, r.stderr)
    r = tt("trace", "rleu", "--source", str(tree))
    assert r.returncode == 3 and "No op named 'rleu'" in r.stdout, r.stderr  # not found: still an answer
    r = tt("index", "--source", str(tree))
    assert r.returncode == 0 and r.stdout.startswith("index is up to date"), r.stdout + r.stderr
    r = tt("doctor", "--source", str(tree))
    assert "ok: SQLite's integrity check passed" in r.stdout and "is usable" in r.stdout, r.stdout
    assert sorted((str(p), p.stat().st_mtime_ns) for p in _all_paths(cache)) == before  # nothing was written


def test_work_that_must_write_fails_with_its_message_and_queries_still_answer(frozen_cache):
    tree, cache = frozen_cache
    native = tree / "aten/src/ATen/native/Activation.cpp"
    native.write_text(native.read_text() + "\n// edited\n")
    r = tt("index", "--source", str(tree))
    assert r.returncode == 2 and "Traceback" not in r.stderr
    assert "needs an update (1 changed and 0 removed files), but its cache directory" in r.stderr, r.stderr
    assert "cannot be written (Operation not permitted)" in r.stderr or "(Permission denied)" in r.stderr
    assert "TORCHTALK_CACHE_DIR" in r.stderr
    # A query answers from the index as it is, and says why it could not refresh it.
    r = tt("trace", "relu", "--focus", "yaml", "--source", str(tree))
    assert r.returncode == 0 and "## relu" in r.stdout, r.stderr
    assert "answering from the index as it is" in r.stderr and "needs an update" in r.stderr
    # the structured answer says so too, not only stderr (a JSON consumer could not tell)
    r = tt("trace", "relu", "--focus", "yaml", "--json", "--source", str(tree))
    stale = json.loads(r.stdout)["stale"]
    assert r.returncode == 0 and stale.startswith("answering from the index as it is") and "needs an update" in stale
    r = tt("status", "--source", str(tree))
    assert r.returncode == 0 and "stale (1 files changed since the build)" in r.stdout, r.stdout
