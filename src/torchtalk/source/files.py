"""List the files of a tree that TorchTalk indexes, by layer, with their stat.

A refresh starts here: comparing (size, mtime_ns) with what the index holds
tells which files may have changed without reading any of them. Symlinks are
followed only when they stay inside the tree.
"""

from __future__ import annotations

import os
import stat
from dataclasses import dataclass
from pathlib import Path

OPS_FILES = (
    "aten/src/ATen/native/native_functions.yaml",
    "aten/src/ATen/native/tags.yaml",
    "tools/autograd/derivatives.yaml",
)
CPP_ROOTS = ("aten", "c10", "torch/csrc", "functorch")
CPP_EXTS = frozenset((".cpp", ".cc", ".c", ".h", ".hpp", ".cu", ".cuh", ".mm", ".metal"))
PY_ROOTS = ("torch", "test")
# Files beyond this are generated blobs, not code anyone reads; they are listed as skipped.
MAX_FILE_BYTES = 8 * 1024 * 1024


@dataclass(frozen=True)
class FileEntry:
    relpath: str
    abspath: str
    layer: str  # ops | cpp | python | tests
    size: int
    mtime_ns: int
    skip: str = ""  # why it is not parsed ("" = parse it)


def layer_of(relpath: str) -> str | None:
    if relpath in OPS_FILES:
        return "ops"
    ext = os.path.splitext(relpath)[1]
    if ext in CPP_EXTS:
        if relpath.startswith(("aten/", "c10/", "torch/csrc/", "functorch/")):
            return "cpp"
        return None
    if ext == ".py":
        if relpath.startswith("test/") or relpath.startswith("torch/testing/_internal/"):
            return "tests" if relpath.startswith("test/") else "python"
        if relpath.startswith("torch/"):
            return "python"
    return None


def _walk(root: Path, top: str, out: list[FileEntry], real_root: str) -> None:
    stack = [top]
    while stack:
        rel_dir = stack.pop()
        try:
            it = os.scandir(root / rel_dir)
        except OSError:
            continue
        with it:
            for entry in it:
                rel = f"{rel_dir}/{entry.name}"
                try:
                    if entry.is_symlink():
                        target = os.path.realpath(entry.path)
                        if not (target == real_root or target.startswith(real_root + os.sep)):
                            if layer_of(rel):
                                out.append(FileEntry(rel, entry.path, layer_of(rel), 0, 0, "symlink leads outside the tree"))
                            continue
                        if not os.path.exists(target):
                            if layer_of(rel):
                                out.append(FileEntry(rel, entry.path, layer_of(rel), 0, 0, "broken symlink"))
                            continue
                        if os.path.isdir(target):
                            continue  # never walk linked directories: cycles, duplicates
                    if entry.is_dir(follow_symlinks=False):
                        stack.append(rel)
                        continue
                    layer = layer_of(rel)
                    if layer is None:
                        continue
                    st = entry.stat()
                    if not stat.S_ISREG(st.st_mode):
                        continue
                    skip = ""
                    if st.st_size > MAX_FILE_BYTES:
                        skip = f"larger than {MAX_FILE_BYTES // (1024 * 1024)} MB"
                    elif not os.access(entry.path, os.R_OK):
                        skip = "unreadable (permission denied)"
                    out.append(FileEntry(rel, entry.path, layer, st.st_size, st.st_mtime_ns, skip))
                except OSError as exc:
                    if layer_of(rel):
                        out.append(FileEntry(rel, entry.path, layer_of(rel), 0, 0, f"unreadable ({exc.strerror})"))


def list_files(root: Path) -> list[FileEntry]:
    """Every indexable file under ``root`` (a resolved path), sorted by path."""
    out: list[FileEntry] = []
    real_root = os.path.realpath(root)
    for rel in OPS_FILES:
        p = root / rel
        try:
            st = p.stat()
        except OSError:
            continue
        out.append(FileEntry(rel, str(p), "ops", st.st_size, st.st_mtime_ns))
    for top in CPP_ROOTS + PY_ROOTS:
        if (root / top).is_dir():
            _walk(root, top, out, real_root)
    # torch/csrc is under both roots' reach: keep one entry per path.
    seen: dict[str, FileEntry] = {}
    for e in out:
        seen.setdefault(e.relpath, e)
    return sorted(seen.values(), key=lambda e: e.relpath)
