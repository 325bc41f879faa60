"""A change taken from git, when the source tree is a checkout: the working tree against HEAD, or a revision.

Read-only: git runs with ``--no-optional-locks`` (a plain ``git diff`` may otherwise
refresh the checkout's index file), without external diff drivers or text
conversion, with a timeout. A revision is checked against a strict pattern and
passed after ``--end-of-options``, so no text of the caller's becomes a git option.
"""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

from ..errors import BadArgument, shown

GIT_TIMEOUT_S = 30
MAX_REV = 200
_REV_PART = r"[A-Za-z0-9_][A-Za-z0-9_./~^@{}:+-]*"
_REV = re.compile(rf"^(?:{_REV_PART})?(?:\.\.\.?(?:{_REV_PART})?)?$")
REV_HELP = ("a revision means the working tree against it (`git diff R`: HEAD~1, main); a range A..B or A...B "
            "means `git diff A..B` (main...HEAD: what this branch changed)")


def _git() -> str:
    exe = shutil.which("git")
    if exe is None:
        raise BadArgument("rev needs git, which is not on PATH here; give the change as diff text or names instead")
    return exe


def _run(root: Path, args: list[str]) -> subprocess.CompletedProcess[str]:
    try:
        return subprocess.run([_git(), "--no-optional-locks", "-C", str(root), *args], capture_output=True,
                              text=True, errors="replace", timeout=GIT_TIMEOUT_S, stdin=subprocess.DEVNULL)
    except subprocess.TimeoutExpired:
        raise BadArgument(f"rev: git took more than {GIT_TIMEOUT_S}s in {root}; give the change as diff text "
                          "instead") from None
    except OSError as exc:
        raise BadArgument(f"rev: git could not run ({exc}); give the change as diff text instead") from None


def is_checkout(root: Path | None) -> bool:
    """Whether the tree is (inside) a git work tree; False when git is missing."""
    if root is None or shutil.which("git") is None:
        return False
    return (root / ".git").exists() or _inside(root)


def _inside(root: Path) -> bool:
    """The tree is a subdirectory of a checkout (its .git is higher up)."""
    for parent in root.parents:
        if (parent / ".git").exists():
            return _run(root, ["rev-parse", "--is-inside-work-tree"]).stdout.strip() == "true"
    return False


def check_rev(rev: object) -> str:
    if not isinstance(rev, str):
        raise BadArgument(f"rev must be a string such as 'HEAD~1' or 'main...HEAD', not {type(rev).__name__}")
    r = rev.strip()
    if not r:
        raise BadArgument("rev is empty; give a revision such as 'HEAD~1' or a range such as 'main...HEAD'")
    if len(r) > MAX_REV or not _REV.match(r) or r.startswith(".") and not r.startswith(".."):
        raise BadArgument(f"rev {shown(r)} is not a git revision or range; give one such as 'HEAD~1', 'main', "
                          "'v2.6.0..HEAD' or 'main...HEAD'")
    return r


def git_diff(root: Path | None, rev: str | None) -> tuple[str, str]:
    """(unified diff text, what it is) for ``rev``, or for the working tree against HEAD when ``rev`` is None."""
    if root is None or not is_checkout(root):
        where = f"the source tree {root}" if root else "the source tree"
        raise BadArgument(f"rev needs a git checkout, and {where} is not one; give the change as diff text "
                          "(`git diff` output) or as names instead")
    spec = check_rev(rev) if rev is not None else "HEAD"
    sides = re.split(r"\.\.\.?", spec) if ".." in spec else [spec]
    for side in sides:
        if not side:
            continue  # A.. means A..HEAD
        ok = _run(root, ["rev-parse", "--verify", "--quiet", "--end-of-options", f"{side}^{{commit}}"])
        if ok.returncode != 0:
            what = f"rev {shown(spec)}" if rev is not None else "the working tree"
            hint = "" if rev is not None else " (the checkout has no commit yet)"
            raise BadArgument(f"{what}: {shown(side)} is not a commit of the checkout at {root}{hint}; give a "
                              "revision such as 'HEAD~1' or a range such as 'main...HEAD'")
    res = _run(root, ["diff", "--no-color", "--no-ext-diff", "--no-textconv", "--relative", "-M", "--unified=3",
                      "--end-of-options", spec, "--"])
    if res.returncode != 0:
        msg = (res.stderr.strip().splitlines() or ["no message"])[0][:200]
        raise BadArgument(f"rev {shown(spec)}: git diff failed: {msg}")
    label = (f"git diff {spec}" if rev is not None
             else "the working tree against HEAD (`git diff HEAD`; untracked files are not in it)")
    return res.stdout, label
