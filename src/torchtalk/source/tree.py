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

MARKER = "aten/src/ATen/native/native_functions.yaml"
APP = "torchtalk"


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
        try:
            return (self.root / "version.txt").read_text(encoding="utf-8", errors="replace").strip() or "unknown"
        except OSError:
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
        raise SourceError(f"{origin} {p} does not exist. Pass --source /path/to/pytorch, "
                          "or get a tree with `torchtalk fetch-source`.")
    if not p.is_dir():
        raise SourceError(f"{origin} {p} is not a directory.")
    if not (p / MARKER).is_file():
        raise SourceError(f"{origin} {p} is not a PyTorch source tree: {MARKER} is missing. "
                          "Pass --source /path/to/pytorch, or get a tree with `torchtalk fetch-source`.")
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
        "No PyTorch source tree configured. Use --source /path/to/pytorch, set TORCHTALK_SOURCE, "
        "run inside a PyTorch checkout, or get one with `torchtalk fetch-source` "
        f"(it records the tree in {config_path()})."
    )
