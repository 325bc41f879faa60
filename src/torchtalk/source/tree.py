"""Find the PyTorch source tree to answer about, and where its index lives.

Order: ``--source``, ``$TORCHTALK_SOURCE``, the user config file, the current
directory. A tree is valid when native_functions.yaml exists: every layer
hangs off the op registry.
"""

from __future__ import annotations

import hashlib
import json
import os
from dataclasses import dataclass
from pathlib import Path

import platformdirs

from ..atomic import write_text_atomic
from ..errors import SourceError
from ..model.paths import NATIVE_FUNCTIONS

MARKER = NATIVE_FUNCTIONS
APP = "torchtalk"
# Written by fetch-source into a tree it fetched: the release it is (version.txt says "2.6.0a0" in the
# 2.6.0 release, as in every commit of its branch).
RELEASE_FILE = ".torchtalk-release"
# The one fix for a missing tree, in every message that reports one (setup, doctor, status, the tools).
FIX_SOURCE = ("`torchtalk setup --source /path/to/pytorch` (a checkout you have) or `torchtalk setup --fetch` "
              "(downloads PyTorch 2.6.0's source, ~160 MB)")


def config_path() -> Path:
    return Path(platformdirs.user_config_dir(APP)) / "config.json"


def cache_root() -> Path:
    env = os.environ.get("TORCHTALK_CACHE_DIR")
    return Path(env).expanduser() if env else Path(platformdirs.user_cache_dir(APP))


def read_config() -> dict:
    try:
        value = json.loads(config_path().read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return value if isinstance(value, dict) else {}


def save_source_in_config(path: Path) -> None:
    cfg = read_config()
    cfg["source"] = str(path)
    write_text_atomic(config_path(), json.dumps(cfg, indent=2) + "\n")


@dataclass(frozen=True)
class SourceTree:
    root: Path  # resolved real path

    @property
    def version(self) -> str:
        """The release a fetched tree came from, else what the tree's version.txt says."""
        for name in (RELEASE_FILE, "version.txt"):
            try:
                text = (self.root / name).read_text(encoding="utf-8", errors="replace").strip()
            except OSError:
                continue
            if text:
                return text.splitlines()[0][:64]
        return "unknown"

    @property
    def cache_dir(self) -> Path:
        # Keyed by the tree's real path: two checkouts never share an index.
        key = hashlib.sha256(str(self.root).encode()).hexdigest()[:16]
        return cache_root() / "trees" / f"{self.root.name[:40]}-{key}"

    @property
    def index_path(self) -> Path:
        return self.cache_dir / "index.db"

    @property
    def generated_dir(self) -> Path:
        return self.cache_dir / "generated"


def validate(path: Path, origin: str) -> SourceTree:
    p = Path(path).expanduser()
    if not p.exists():
        raise SourceError(f"{origin} {p} does not exist. Fix: {FIX_SOURCE}.")
    if not p.is_dir():
        raise SourceError(f"{origin} {p} is not a directory. Fix: {FIX_SOURCE}.")
    if not (p / MARKER).is_file():
        raise SourceError(f"{origin} {p} is not a PyTorch source tree: {MARKER} is missing. Fix: {FIX_SOURCE}.")
    return SourceTree(p.resolve())


def find_source(explicit: str | os.PathLike | None = None) -> SourceTree:
    if explicit:
        return validate(Path(explicit), "--source")
    env = os.environ.get("TORCHTALK_SOURCE")
    if env:
        return validate(Path(env), "$TORCHTALK_SOURCE")
    cfg = read_config().get("source")
    if isinstance(cfg, str) and cfg:
        return validate(Path(cfg), f"source in {config_path()}")
    cwd = Path.cwd()
    if (cwd / MARKER).is_file():
        return SourceTree(cwd.resolve())
    raise SourceError(
        "No PyTorch source tree configured (no --source, $TORCHTALK_SOURCE or config file, and the current "
        f"directory is not a checkout). Fix: {FIX_SOURCE}."
    )
