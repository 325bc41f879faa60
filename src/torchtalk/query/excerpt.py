"""The source lines around a ``path:line`` an answer cites, read from the tree (or the generated layer).

Only files the index holds can be read, and only where they really are: a path that
is not in the index, that climbs out with ``..``, that is absolute, or whose real
location (after symlinks) is outside the tree or the generated directory is refused
with a message saying so. So a page that shows source can never be made to show
anything else.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from pathlib import Path, PurePosixPath

from ..errors import BadArgument
from ..model import GENERATED_PREFIX
from ..store.reader import Index
from .args import clean_text, shown

CONTEXT = 12  # lines shown on each side
MAX_CONTEXT = 60
MAX_LINE_CHARS = 400
MAX_FILE_BYTES = 32 << 20
_WHERE = re.compile(r"^(?P<path>.+):(?P<line>\d{1,9})$")


@dataclass
class Excerpt:
    path: str
    line: int
    first: int  # line number of lines[0]
    lines: list[str]
    total_lines: int


def generated_dir(ix: Index) -> Path:
    """Where the generated layer's files are (source.tree.SourceTree.generated_dir: next to the index)."""
    return ix.path.parent / "generated"


def _inside(real: str, root: Path) -> bool:
    base = os.path.realpath(root)
    return real == base or real.startswith(base + os.sep)


def resolve(ix: Index, path: str) -> Path:
    """The file an indexed ``path`` names, or BadArgument saying why it cannot be read."""
    p = PurePosixPath(path)
    if p.is_absolute() or path.startswith("~") or ".." in p.parts or "\\" in path:
        raise BadArgument(f"path {shown(path)} is not a path inside the source tree; give one as answers cite "
                          "it, e.g. 'aten/src/ATen/native/SoftMax.cpp'")
    indexed: set[str] = ix.cached("indexed_paths", lambda: set(ix.paths().values()))
    if path not in indexed:
        raise BadArgument(f"path {shown(path)} is not a file of the index; only indexed files are shown "
                          "(paths as answers cite them, relative to the source tree)")
    if path.startswith(GENERATED_PREFIX):
        root = generated_dir(ix)
        full = root / path[len(GENERATED_PREFIX):]
    elif ix.source_root is not None:
        root = Path(ix.source_root)
        full = root / path
    else:
        raise BadArgument("this index has no source tree to read lines from")
    if not _inside(os.path.realpath(full), root):
        raise BadArgument(f"path {shown(path)} leads outside the source tree (a symbolic link); refused")
    return full


def excerpt(ix: Index, where: object, context: int = CONTEXT) -> Excerpt:
    """The lines around ``where`` ("path:line")."""
    text = clean_text(where, "where", "aten/src/ATen/native/SoftMax.cpp:443", max_len=1000)
    m = _WHERE.match(text)
    if not m:
        raise BadArgument(f"where {shown(text)} is not path:line, e.g. 'aten/src/ATen/native/SoftMax.cpp:443'")
    path, line = m.group("path"), int(m.group("line"))
    context = max(0, min(int(context), MAX_CONTEXT))
    full = resolve(ix, path)
    try:
        if full.stat().st_size > MAX_FILE_BYTES:
            raise BadArgument(f"{path} is larger than {MAX_FILE_BYTES >> 20} MiB; open it in an editor")
        lines = full.read_bytes().decode("utf-8", errors="replace").splitlines()
    except OSError as exc:
        raise BadArgument(f"{path} cannot be read now ({exc.strerror}); the index may be older than the tree") from exc
    if not 1 <= line <= max(len(lines), 1):
        raise BadArgument(f"{path} has {len(lines)} lines, not {line}; the index may be older than the tree")
    first = max(1, line - context)
    last = min(len(lines), line + context)
    cut = [s if len(s) <= MAX_LINE_CHARS else s[:MAX_LINE_CHARS] + " …" for s in lines[first - 1:last]]
    return Excerpt(path, line, first, cut, len(lines))
