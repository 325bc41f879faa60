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

from ..model import Layer
from ..model.paths import OPS_FILES

CPP_ROOTS = ("aten", "c10", "torch/csrc", "functorch")
CPP_EXTS = frozenset((".cpp", ".cc", ".c", ".h", ".hpp", ".cu", ".cuh", ".mm", ".metal"))
PY_ROOTS = ("torch", "test")
# Files beyond this are generated blobs, not code anyone reads; they are listed as skipped.
MAX_FILE_BYTES = 8 * 1024 * 1024


@dataclass(frozen=True)
class FileEntry:
    relpath: str
    abspath: str
    layer: Layer
    size: int
    mtime_ns: int
    skip: str = ""  # why it is not parsed ("" = parse it)


def layer_of(relpath: str) -> Layer | None:
    if relpath in OPS_FILES:
        return Layer.OPS
    ext = os.path.splitext(relpath)[1]
    if ext in CPP_EXTS:
        if relpath.startswith(("aten/", "c10/", "torch/csrc/", "functorch/")):
            return Layer.CPP
        return None
    if ext == ".py":
        if relpath.startswith("test/"):
            return Layer.TESTS
        if relpath.startswith("torch/"):
            return Layer.PYTHON
    return None


def _inside(path: str, real_root: str) -> bool:
    target = os.path.realpath(path)
    return target == real_root or target.startswith(real_root + os.sep)


def _printable(rel: str) -> str | None:
    """None when the name is valid UTF-8; else a printable stand-in (the file cannot be indexed)."""
    try:
        rel.encode("utf-8")
        return None
    except UnicodeEncodeError:
        return rel.encode("utf-8", "surrogateescape").decode("utf-8", "backslashreplace")


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
                odd = _printable(rel)
                if odd is not None:
                    if (odd_layer := layer_of(odd)) is not None:
                        out.append(FileEntry(odd, entry.path, odd_layer, 0, 0, "file name is not valid UTF-8"))
                    continue
                try:
                    if entry.is_symlink():
                        target = os.path.realpath(entry.path)
                        if not _inside(entry.path, real_root):
                            if (layer := layer_of(rel)) is not None:
                                out.append(FileEntry(rel, entry.path, layer, 0, 0, "symlink leads outside the tree"))
                            continue
                        if not os.path.exists(target):
                            if (layer := layer_of(rel)) is not None:
                                out.append(FileEntry(rel, entry.path, layer, 0, 0, "broken symlink"))
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
                    if (layer := layer_of(rel)) is not None:
                        out.append(FileEntry(rel, entry.path, layer, 0, 0, f"unreadable ({exc.strerror})"))


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
        skip = ""
        if not _inside(str(p), real_root):
            skip = "symlink leads outside the tree"
        elif not stat.S_ISREG(st.st_mode):
            skip = "not a regular file"  # a FIFO or device would block or never end
        elif st.st_size > MAX_FILE_BYTES:
            skip = f"larger than {MAX_FILE_BYTES // (1024 * 1024)} MB"
        out.append(FileEntry(rel, str(p), Layer.OPS, st.st_size if not skip else 0, st.st_mtime_ns if not skip else 0,
                             skip))
    for top in CPP_ROOTS + PY_ROOTS:
        # A top-level directory that is a link out of the tree is not part of it.
        if (root / top).is_dir() and _inside(str(root / top), real_root):
            _walk(root, top, out, real_root)
    # torch/csrc is under both roots' reach: keep one entry per path.
    seen: dict[str, FileEntry] = {}
    for e in out:
        seen.setdefault(e.relpath, e)
    return sorted(seen.values(), key=lambda e: e.relpath)
