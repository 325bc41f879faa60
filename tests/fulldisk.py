"""A full disk for one test, and for nobody else.

The cache directory of the test is a small tmpfs mounted in a *private mount namespace* (``unshare --mount
--map-root-user``, which needs no privilege where user namespaces are enabled): the processes of the
scenario get a real ENOSPC, exactly as on a laptop whose disk filled up, while the mount is invisible to
every other process and disappears with the scenario. No loop device, no shared path, nothing to clean up.

A scenario is a list of steps run inside the namespace by ``_driver`` (a script given to ``python -c``):
``run`` (a torchtalk command: exit code, stdout, stderr), ``ls`` (the cache directory's files), ``resize``
(make room: remount the tmpfs with another size), ``fill`` (leave only so many bytes free). The result is
one JSON object per step.

Where namespaces are not available, ``fsize_limit`` gives the other realistic way a write fails: a
file-size limit (RLIMIT_FSIZE) in the child, so writes past it fail with EFBIG (SQLite: "disk I/O error").
"""

from __future__ import annotations

import json
import os
import resource
import shutil
import subprocess
import sys
from pathlib import Path

_DRIVER = r'''
import json, os, shutil, subprocess, sys
spec = json.loads(sys.argv[1])
cache = spec["cache"]
out = []
def mount(size):
    subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={size}", "tmpfs", cache], check=True)
mount(spec["size"])
if spec.get("seed"):  # the cache as it was before the disk filled up
    for name in os.listdir(spec["seed"]):
        src, dst = os.path.join(spec["seed"], name), os.path.join(cache, name)
        (shutil.copytree if os.path.isdir(src) else shutil.copy2)(src, dst)
for step in spec["steps"]:
    kind = step[0]
    if kind == "run":
        r = subprocess.run([sys.executable, "-m", "torchtalk", *step[1]], capture_output=True, text=True,
                           timeout=600)
        out.append({"code": r.returncode, "stdout": r.stdout, "stderr": r.stderr})
    elif kind == "ls":
        out.append({"files": sorted(os.path.relpath(os.path.join(d, f), cache)
                                    for d, _ds, fs in os.walk(cache) for f in fs)})
    elif kind == "resize":
        subprocess.run(["mount", "-o", f"remount,size={step[1]}", cache], check=True)
        out.append({})
    elif kind == "fill":  # leave step[1] bytes free
        st = os.statvfs(cache)
        free = st.f_bavail * st.f_frsize - step[1]
        if free > 0:
            with open(os.path.join(cache, "filler"), "wb") as f:
                f.write(b"\0" * free)
        out.append({})
    elif kind == "unfill":
        os.unlink(os.path.join(cache, "filler"))
        out.append({})
print(json.dumps(out))
'''


def namespace_problem() -> str | None:
    """Why a private tmpfs cannot be mounted here (None: it can)."""
    if shutil.which("unshare") is None or shutil.which("mount") is None:
        return "no unshare/mount command"
    r = subprocess.run(["unshare", "--mount", "--map-root-user", "sh", "-c",
                        "mount -t tmpfs -o size=64k tmpfs /tmp && echo ok"], capture_output=True, text=True)
    return None if r.stdout.strip() == "ok" else f"no private mount namespace: {r.stderr.strip()[:200]}"


def run_full(cache: Path, size: int | str, steps: list, seed: Path | None = None,
             env: dict | None = None) -> list[dict]:
    """Run ``steps`` with ``cache`` a tmpfs of ``size`` bytes (filled first with a copy of ``seed``)."""
    cache.mkdir(parents=True, exist_ok=True)
    spec = {"cache": str(cache), "size": str(size), "steps": steps, "seed": str(seed) if seed else ""}
    env = {**(env or os.environ), "TORCHTALK_CACHE_DIR": str(cache)}
    r = subprocess.run(["unshare", "--mount", "--map-root-user", sys.executable, "-c", _DRIVER, json.dumps(spec)],
                       capture_output=True, text=True, env=env, timeout=1800)
    assert r.returncode == 0, f"the scenario itself failed: {r.stderr[-3000:]}"
    return json.loads(r.stdout.splitlines()[-1])


def fsize_limit(limit: int):
    """A preexec_fn: files this process (and its children) write may not grow past ``limit`` bytes."""
    def apply() -> None:
        resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit))
    return apply


def du(path: Path) -> int:
    return sum(f.stat().st_size for f in Path(path).rglob("*") if f.is_file())
