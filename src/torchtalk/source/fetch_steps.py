"""Pieces every route of fetching a source tree shares: running a command with a timeout, one-line
errors, progress messages, finding the tree in what a route unpacked."""

from __future__ import annotations

import subprocess
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path

from ..errors import SourceError
from ..model.paths import NATIVE_FUNCTIONS

MARKER = NATIVE_FUNCTIONS


class FetchError(SourceError):
    """A PyTorch source tree could not be obtained; the message says what was tried.

    A SourceError (hence a TorchTalkError): the CLI shows its message, no traceback.
    """


Progress = Callable[[str], None]


def norm_version(version: str) -> str:
    v = str(version).strip()
    if v[:1] in ("v", "V") and v[1:2].isdigit():
        v = v[1:]
    return v


def say(progress: Progress | None, msg: str) -> None:
    if progress is not None:
        try:
            progress(msg)
        except Exception:
            pass


def one_line(s: str, limit: int = 300) -> str:
    s = " ".join(str(s).split())
    return s if len(s) <= limit else s[: limit - 3] + "..."


def tail(s: bytes | str | None) -> str:
    if not s:
        return ""
    if isinstance(s, bytes):
        s = s.decode("utf-8", "replace")
    lines = [ln.strip() for ln in s.splitlines() if ln.strip()]
    # apt prints "W:" warnings after errors; prefer the last error line
    errs = [ln for ln in lines if ln.startswith(("E:", "fatal:", "error:"))]
    return one_line((errs or lines or [""])[-1])


class AttemptFailed(Exception):
    pass


def run(cmd: Sequence[str], *, timeout: float, cwd: Path | None = None,
         env: Mapping[str, str] | None = None, what: str) -> subprocess.CompletedProcess:
    try:
        cp = subprocess.run(
            list(cmd), cwd=cwd, env=dict(env) if env is not None else None,
            stdin=subprocess.DEVNULL, capture_output=True,
            timeout=timeout, check=False,
        )
    except FileNotFoundError:
        raise AttemptFailed(f"{cmd[0]} not found") from None
    except subprocess.TimeoutExpired:
        raise AttemptFailed(f"{what} timed out after {timeout:g} s") from None
    except OSError as e:
        raise AttemptFailed(f"{what}: {e}") from None
    return cp


def find_tree(root: Path, hint: str = "") -> Path | None:
    """The directory under root (itself, hint, or one level down) that is a tree."""
    cands = ([root / hint] if hint else []) + [root]
    try:
        cands += sorted(p for p in root.iterdir() if p.is_dir())
    except OSError:
        pass
    for c in cands:
        if is_valid_tree(c):
            return c
    return None

def is_valid_tree(path: Path) -> bool:
    return (Path(path) / MARKER).is_file()
