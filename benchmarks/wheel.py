"""The official torch wheel as ground truth: fetched once with pip, read as a zip, never installed.

Shared by bench_coverage.py and bench_resolution.py. The wheel carries what PyTorch's
build generated (ATen/ops/*_native.h, *_ops.h, Functions.h, TensorBody.h, torch/_C/*.pyi),
so it tells what a build of the same release expects, without building anything.

    wheel_path("2.6.0")       -> the cached .whl (downloads ~766 MB with `pip download` on first use)
    open_wheel("2.6.0")       -> zipfile.ZipFile
    include_dir("2.6.0")      -> torch/include extracted once into the cache (~28 MB), for libclang

Cache: $TORCHTALK_BENCH_CACHE or ~/.cache/torchtalk-bench. Failures raise BenchError with a
one-line message (the scripts print it and exit 2).
"""

from __future__ import annotations

import os
import subprocess
import sys
import zipfile
from pathlib import Path


class BenchError(Exception):
    """A precondition of a benchmark is missing; the message says which, in one line."""


def cache_dir() -> Path:
    root = Path(os.environ.get("TORCHTALK_BENCH_CACHE", Path.home() / ".cache" / "torchtalk-bench"))
    root.mkdir(parents=True, exist_ok=True)
    return root


def wheel_path(version: str = "2.6.0") -> Path:
    """The cached torch wheel for `version`; downloaded with `pip download --no-deps` when absent."""
    wdir = cache_dir() / "wheel"
    wdir.mkdir(parents=True, exist_ok=True)
    found = sorted(wdir.glob(f"torch-{version}-*.whl"))
    if found:
        return found[0]
    cmd = [sys.executable, "-m", "pip", "download", "--no-deps", "--quiet", f"torch=={version}", "-d", str(wdir)]
    if version.startswith("1."):
        # old releases have wheels for old Pythons only
        cmd += ["--python-version", "3.10", "--only-binary=:all:"]
    print(f"[wheel] downloading torch=={version} (~766 MB) into {wdir} ...", file=sys.stderr)
    try:
        proc = subprocess.run(cmd, check=False, capture_output=True, text=True)
    except OSError as exc:
        raise BenchError(f"cannot run pip to download the torch {version} wheel: {exc}") from None
    found = sorted(wdir.glob(f"torch-{version}-*.whl"))
    if proc.returncode != 0 or not found:
        last = (proc.stderr.strip().splitlines() or ["no output"])[-1]
        raise BenchError(f"could not download the torch {version} wheel with pip ({last}); "
                         f"put it in {wdir} by hand to run offline")
    return found[0]


def open_wheel(version: str = "2.6.0") -> zipfile.ZipFile:
    path = wheel_path(version)
    try:
        return zipfile.ZipFile(path)
    except (OSError, zipfile.BadZipFile) as exc:
        raise BenchError(f"{path} is not a readable wheel ({exc}); delete it to download it again") from None


def read_text(z: zipfile.ZipFile, name: str) -> str:
    try:
        return z.read(name).decode("utf-8", errors="replace")
    except KeyError:
        raise BenchError(f"the wheel has no {name}") from None


def include_dir(version: str = "2.6.0") -> Path:
    """torch/include from the wheel, extracted once (the build's generated headers, for libclang)."""
    out = cache_dir() / f"include-{version}"
    done = out / ".complete"
    if done.exists():
        return out / "torch" / "include"
    with open_wheel(version) as z:
        members = [m for m in z.namelist() if m.startswith("torch/include/") and not m.endswith("/")]
        if not members:
            raise BenchError(f"the torch {version} wheel has no torch/include")
        z.extractall(out, members)
    done.write_text("ok\n")
    return out / "torch" / "include"
