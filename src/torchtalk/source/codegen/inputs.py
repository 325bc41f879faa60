"""What the generators read, and one hash of it that says when their output is stale.

The hash is taken from (path, stamp) records, the stamp as the index compares a file's
(size, mtime, ctime, inode: Note [File stamps] in ``source/files.py``), without reading any
file's content: a few milliseconds on the 2.6.0 tree, so a no-op refresh stays cheap. An edit
that keeps the mtime still moves the ctime; a stamp that moved with the same content (a chmod)
runs the generators again, and the index keeps what they write that did not change.
"""

from __future__ import annotations

import hashlib
import os
from pathlib import Path

from ...codedigest import code_digest
from ...model.paths import ATEN_TEMPLATES, AUTOGRAD_MAIN, DERIVATIVES, NATIVE_FUNCTIONS, TAGS

__all__ = ["SETTINGS_VERSION", "codegen_inputs_hash"]

#: Changing what the driver generates must invalidate earlier outputs: this string is
#: part of codegen_inputs_hash() and of the manifest; it carries a digest of this package, the driver and what it
#: is asked to run (Note [Written by this code] in codedigest.py).
SETTINGS_VERSION = f"torchtalk-codegen-1-{code_digest('source/codegen')}"

#: Single files the generators read (relative to the tree).
INPUT_FILES: tuple[str, ...] = (
    NATIVE_FUNCTIONS,
    TAGS,
    DERIVATIVES,
    "tools/autograd/deprecated.yaml",
    AUTOGRAD_MAIN,
)

#: Directories the generators read, with a suffix filter (None: every file).
INPUT_DIRS: tuple[tuple[str, str | None], ...] = (
    (ATEN_TEMPLATES.rstrip("/"), None),
    ("tools/autograd/templates", None),
    ("torchgen", ".py"),
    ("tools/autograd", ".py"),
)


def _record(rel: str, st: os.stat_result) -> str:
    return f"{rel}\0{st.st_size}\0{st.st_mtime_ns}\0{st.st_ctime_ns}\0{st.st_ino}"


def _walk_stats(root: Path, rel: str, suffix: str | None, out: list[str]) -> None:
    stack = [root / rel]
    while stack:
        d = stack.pop()
        try:
            it = os.scandir(d)
        except OSError:
            out.append(f"{d.relative_to(root).as_posix()}\0missing-dir")
            continue
        with it:
            for e in it:
                if e.is_dir(follow_symlinks=False):
                    if e.name != "__pycache__":
                        stack.append(Path(e.path))
                    continue
                if suffix is not None and not e.name.endswith(suffix):
                    continue
                try:
                    st = e.stat()
                except OSError:
                    continue
                rp = Path(e.path).relative_to(root).as_posix()
                out.append(_record(rp, st))


def codegen_inputs_hash(tree: Path) -> str:
    """A hash of everything the generators read, and of TorchTalk's generation settings.

    Covers native_functions.yaml, tags.yaml, derivatives.yaml, deprecated.yaml, the
    ATen and autograd template directories, torchgen/**/*.py, tools/autograd/**/*.py
    and tools/setup_helpers/generate_code.py.
    """
    tree = Path(tree)
    records: list[str] = [SETTINGS_VERSION]
    for rel in INPUT_FILES:
        try:
            st = os.stat(tree / rel)
            records.append(_record(rel, st))
        except OSError:
            records.append(f"{rel}\0missing")
    for rel, suffix in INPUT_DIRS:
        found: list[str] = []
        _walk_stats(tree, rel, suffix, found)
        records.extend(sorted(found))
    h = hashlib.sha256()
    for r in records:
        h.update(r.encode("utf-8", "surrogateescape"))
        h.update(b"\n")
    return h.hexdigest()
