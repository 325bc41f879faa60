"""List the files of a tree that TorchTalk indexes, by layer, with their stat; read one safely.

A refresh starts here: comparing each file's stamp (Note [File stamps]) with what the index holds
tells which files may have changed without reading any of them. Symlinks are
followed only when they stay inside the tree. Only regular files are read, and
within a size and a time limit (``read_limited``): a file that became a FIFO
after it was listed would otherwise block its reader, and the build, forever.
"""

from __future__ import annotations

import os
import stat
import time
from dataclasses import dataclass
from pathlib import Path

from ..model import Layer
from ..model.paths import OPS_FILES

CPP_ROOTS = ("aten", "c10", "torch/csrc", "functorch")
CPP_EXTS = frozenset((".cpp", ".cc", ".c", ".h", ".hpp", ".cu", ".cuh", ".mm", ".metal"))
PY_ROOTS = ("torch", "test")
# Files beyond this are generated blobs, not code anyone reads; they are listed as skipped.
MAX_FILE_BYTES = 8 * 1024 * 1024
# A read that takes longer is abandoned (a hung network mount, a device): the file is skipped, the build goes on.
READ_TIMEOUT_S = 30.0
_CHUNK = 1 << 20
_KINDS = ((stat.S_ISFIFO, "a FIFO"), (stat.S_ISSOCK, "a socket"), (stat.S_ISCHR, "a character device"),
          (stat.S_ISBLK, "a block device"), (stat.S_ISDIR, "a directory"))


# Note [File stamps]
# ~~~~~~~~~~~~~~~~~~
# A file is read again when its stamp differs from the one the index recorded: (size, mtime_ns, ctime_ns, inode),
# one stat, as cheap as size and mtime alone. Size and mtime miss an edit that keeps both (``touch -r`` after an
# edit, ``cp -p``, ``rsync -t``, tar, a same-length edit within the mtime's granularity); ctime moves with every
# write and cannot be set back, and a rename over the file (what ``sed -i`` and most editors do) gives a new inode.
# A stamp that moved is not a change yet: the worker hashes the content and re-extracts only when the hash
# differs (``touch_file`` records the new stamp otherwise), so a chmod, or a tree restored with ``cp -a`` where
# every ctime and inode is new, costs one read and hash per file, not a re-extraction.
Stamp = tuple[int, int, int, int]  # (size, mtime_ns, ctime_ns, inode)
NO_STAMP: Stamp = (0, 0, 0, 0)  # a file listed but not read (skipped): nothing of it is indexed
_INT64 = 1 << 63


def stamp_of(st: os.stat_result) -> Stamp:
    """The stamp of a stat (Note [File stamps]); the inode folded into SQLite's signed 64 bits."""
    ino = st.st_ino if st.st_ino < _INT64 else st.st_ino - 2 * _INT64
    return st.st_size, st.st_mtime_ns, st.st_ctime_ns, ino


class Unreadable(Exception):
    """Why a file was not read (not a regular file, too large, too slow); the build skips it with this reason."""


def not_regular(mode: int) -> str | None:
    """"not a regular file (a FIFO)" and the like, or None for a regular file."""
    if stat.S_ISREG(mode):
        return None
    kind = next((name for test, name in _KINDS if test(mode)), "a special file")
    return f"not a regular file ({kind})"


def read_limited(path: str, max_bytes: int = MAX_FILE_BYTES, timeout_s: float = READ_TIMEOUT_S
                 ) -> tuple[os.stat_result, bytes]:
    """(stat, content) of the regular file at ``path``. Opened without blocking (a FIFO without a writer
    would block ``open`` itself), refused unless regular, and read in chunks within ``max_bytes`` and
    ``timeout_s``: Unreadable says which limit it met; OSError when it cannot be opened or read."""
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_NOCTTY | os.O_CLOEXEC)
    try:
        st = os.fstat(fd)
        odd = not_regular(st.st_mode)
        if odd:
            raise Unreadable(odd)
        if st.st_size > max_bytes:
            raise Unreadable(f"larger than {max_bytes // (1024 * 1024)} MB")
        chunks, total, t0 = [], 0, time.monotonic()
        while chunk := os.read(fd, _CHUNK):
            total += len(chunk)
            if total > max_bytes:
                raise Unreadable(f"grew beyond {max_bytes // (1024 * 1024)} MB while it was read")
            if time.monotonic() - t0 > timeout_s:
                raise Unreadable(f"reading it took longer than {timeout_s:g} s")
            chunks.append(chunk)
        return st, b"".join(chunks)
    finally:
        os.close(fd)


@dataclass(frozen=True)
class FileEntry:
    relpath: str
    abspath: str
    layer: Layer
    stamp: Stamp  # NO_STAMP for a file not read (Note [File stamps])
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
                        out.append(FileEntry(odd, entry.path, odd_layer, NO_STAMP, "file name is not valid UTF-8"))
                    continue
                try:
                    if entry.is_symlink():
                        target = os.path.realpath(entry.path)
                        if not _inside(entry.path, real_root):
                            if (layer := layer_of(rel)) is not None:
                                out.append(FileEntry(rel, entry.path, layer, NO_STAMP,
                                                     "symlink leads outside the tree"))
                            continue
                        if not os.path.exists(target):
                            if (layer := layer_of(rel)) is not None:
                                out.append(FileEntry(rel, entry.path, layer, NO_STAMP, "broken symlink"))
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
                    odd = not_regular(st.st_mode)
                    if odd:  # a FIFO or a device would block or never end: listed, so the user hears of it
                        out.append(FileEntry(rel, entry.path, layer, NO_STAMP, odd))
                        continue
                    skip = ""
                    if st.st_size > MAX_FILE_BYTES:
                        skip = f"larger than {MAX_FILE_BYTES // (1024 * 1024)} MB"
                    elif not os.access(entry.path, os.R_OK):
                        skip = "unreadable (permission denied)"
                    out.append(FileEntry(rel, entry.path, layer, stamp_of(st), skip))
                except OSError as exc:
                    if (layer := layer_of(rel)) is not None:
                        out.append(FileEntry(rel, entry.path, layer, NO_STAMP, f"unreadable ({exc.strerror})"))


def entry_at(root: Path, rel: str) -> FileEntry | None:
    """The entry ``list_files(root)`` gives for ``rel``, or None when it lists nothing there: what a change
    at one path means for the index, without walking the tree (the server's freshness check)."""
    path = os.path.join(root, rel)
    odd_name = _printable(rel)
    if odd_name is not None:
        odd_layer = layer_of(odd_name)
        return FileEntry(odd_name, path, odd_layer, NO_STAMP, "file name is not valid UTF-8") if odd_layer else None
    layer = layer_of(rel)
    if layer is None:
        return None
    real_root = os.path.realpath(root)
    # The walk never enters a linked directory: below one, nothing is listed.
    parent = os.path.dirname(rel)
    if parent and os.path.realpath(os.path.join(root, parent)) != os.path.join(real_root, parent):
        return None
    try:
        lst = os.lstat(path)
    except FileNotFoundError:
        return None
    except OSError as exc:
        return FileEntry(rel, path, layer, NO_STAMP, f"unreadable ({exc.strerror})")
    if stat.S_ISLNK(lst.st_mode):
        if not _inside(path, real_root):
            return FileEntry(rel, path, layer, NO_STAMP, "symlink leads outside the tree")
        if not os.path.exists(path):
            return None if layer is Layer.OPS else FileEntry(rel, path, layer, NO_STAMP, "broken symlink")
    try:
        st = os.stat(path)
    except OSError as exc:
        return FileEntry(rel, path, layer, NO_STAMP, f"unreadable ({exc.strerror})")
    if stat.S_ISDIR(st.st_mode):
        return None
    odd = not_regular(st.st_mode)
    if odd:
        return FileEntry(rel, path, layer, NO_STAMP, odd)
    if st.st_size > MAX_FILE_BYTES:
        if layer is Layer.OPS:
            return FileEntry(rel, path, layer, NO_STAMP, f"larger than {MAX_FILE_BYTES // (1024 * 1024)} MB")
        return FileEntry(rel, path, layer, stamp_of(st), f"larger than {MAX_FILE_BYTES // (1024 * 1024)} MB")
    if layer is not Layer.OPS and not os.access(path, os.R_OK):
        return FileEntry(rel, path, layer, stamp_of(st), "unreadable (permission denied)")
    return FileEntry(rel, path, layer, stamp_of(st))


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
        elif not_regular(st.st_mode):
            skip = not_regular(st.st_mode) or ""  # a FIFO or device would block or never end
        elif st.st_size > MAX_FILE_BYTES:
            skip = f"larger than {MAX_FILE_BYTES // (1024 * 1024)} MB"
        out.append(FileEntry(rel, str(p), Layer.OPS, NO_STAMP if skip else stamp_of(st), skip))
    for top in CPP_ROOTS + PY_ROOTS:
        # A top-level directory that is a link out of the tree is not part of it.
        if (root / top).is_dir() and _inside(str(root / top), real_root):
            _walk(root, top, out, real_root)
    # torch/csrc is under both roots' reach: keep one entry per path.
    seen: dict[str, FileEntry] = {}
    for e in out:
        seen.setdefault(e.relpath, e)
    return sorted(seen.values(), key=lambda e: e.relpath)
