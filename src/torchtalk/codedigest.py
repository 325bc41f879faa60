"""A digest of TorchTalk's own source, per package: what a file TorchTalk wrote must have been written by to be read.

Note [Written by this code]
~~~~~~~~~~~~~~~~~~~~~~~~~~~
Three things TorchTalk keeps on disk hold the output of its own code, not only the tree's: the index (the facts the
extractors read from each file), the store of resolved calls (what the graph's rules make of them) and the
generated layer (what the generators were asked to write). Each records the code that wrote it as a digest of the
packages that decide its content, and is rebuilt, never read, when this code's digest differs: an upgrade, or an
edited checkout, that changes an extractor without bumping a version by hand cannot serve facts the code would
no longer extract as fresh. The digest reads the packages' ``.py`` files (a few milliseconds, once per process).
"""

from __future__ import annotations

import functools
import hashlib
from pathlib import Path

_ROOT = Path(__file__).resolve().parent


@functools.cache
def code_digest(*packages: str) -> str:
    """16 hex digits of sha256 over the ``.py`` files (name and content) of the given packages of ``torchtalk``
    (their subpackages too): ``code_digest("graph", "model")``."""
    digest = hashlib.sha256()
    for package in packages:
        base = _ROOT / package
        if not base.is_dir():
            raise ValueError(f"{package!r} is not a package of torchtalk ({base} is not a directory)")
        for f in sorted(base.rglob("*.py")):
            digest.update(f.relative_to(_ROOT).as_posix().encode() + b"\0" + f.read_bytes())
    return digest.hexdigest()[:16]
