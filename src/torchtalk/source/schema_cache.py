"""Where the tools' output schemas are cached in the user cache (tools/structured.py ``output_schemas``): here, not
in tools/, so ``torchtalk index`` can see that they are there without importing the tools (~0.3 s of start-up)."""

from __future__ import annotations

import hashlib
from pathlib import Path

from pydantic.version import VERSION as PYDANTIC_VERSION

from .. import __version__
from .tree import cache_root


def code_key() -> str:
    """A digest of the code the schemas derive from (this package and pydantic): a new version or an edit
    gives a new key, so a cached schema can never describe other code than the running one."""
    h = hashlib.sha256(f"{__version__} {PYDANTIC_VERSION}".encode())
    pkg = Path(__file__).parent.parent
    for path in sorted(pkg.rglob("*.py")):
        h.update(str(path.relative_to(pkg)).encode() + b"\0" + path.read_bytes())
    return h.hexdigest()[:16]


def schema_cache_path() -> Path:
    """The file holding every tool's output schema for the running code."""
    return cache_root() / "schemas" / f"output-{code_key()}.json"
