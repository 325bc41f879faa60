"""Unified diffs as data: which lines of which files a change touches, on each side.

Reads what ``git diff``, ``git diff --no-index`` and ``diff -u`` write: file headers
(``diff --git``, ``---``/``+++``, ``/dev/null`` for added and deleted files, renames,
binary markers) and hunks. Nothing here reads the tree: paths are kept as written,
and ``tree_path`` maps one onto the tree (``patch -p`` style) given a test for which
relative paths exist there. Problems in one file (a binary diff, a hunk cut short)
are recorded against that file; only text that holds no diff at all is an error.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import PurePosixPath

from ...errors import BadArgument
from ...model.change import ChangeStatus, HunkLine, Language

MAX_DIFF_CHARS = 2_000_000
SPLIT_HINT = "Split the change (e.g. `git diff -- aten/`) or give names instead"  # for a diff over the limit
MAX_FILES = 100

_HUNK = re.compile(r"^@@ -(\d+)(?:,(\d+))? \+(\d+)(?:,(\d+))? @@")
_BINARY = re.compile(r"^Binary files (.+) and (.+) differ$")
_GIT_HEADER = re.compile(r'^diff --git (?:"?a/(.+?)"? "?b/(.+?)"?|(\S+) (\S+))$')


@dataclass
class Hunk:
    old_start: int
    new_start: int
    lines: list[tuple[HunkLine, str]] = field(default_factory=list)

    def removed(self) -> list[tuple[int, str]]:
        """(old line number, text) of the removed lines."""
        return [(n, t) for n, op, t in self._numbered(old=True) if op is HunkLine.REMOVED]

    def added(self) -> list[tuple[int, str]]:
        """(new line number, text) of the added lines."""
        return [(n, t) for n, op, t in self._numbered(old=False) if op is HunkLine.ADDED]

    def side(self, old: bool) -> list[tuple[int, str]]:
        """The hunk's text as it reads on one side: context plus that side's changed lines, numbered."""
        drop = HunkLine.own(not old)
        return [(n, t) for n, op, t in self._numbered(old) if op is not drop]

    def changed(self, old: bool) -> tuple[set[int], set[tuple[int, int]]]:
        """What the hunk changes on one side: that side's own changed lines, and the gaps ``(before,
        after)`` where only the other side has lines (an insertion, seen from the old side, or a
        deletion, seen from the new side): a gap changes a function only when the function spans both
        neighbours."""
        own = HunkLine.own(old)
        lines: set[int] = set()
        gaps: set[tuple[int, int]] = set()
        block: list[tuple[int, HunkLine]] = []  # a run of changed lines between context lines
        for n, op, _t in self._numbered(old) + [(0, HunkLine.CONTEXT, "")]:
            if op is not HunkLine.CONTEXT:
                block.append((n, op))
                continue
            if any(o is own for _n, o in block):
                lines.update(m for m, o in block if o is own)  # a replacement: this side's lines say it all
            elif block:
                gaps.add((block[0][0] - 1, block[0][0]))  # only the other side has lines here
            block = []
        return lines, gaps

    def pairs(self, old: bool) -> list[tuple[int, str, str]]:
        """Each replaced line: (its number on one side, its removed text, its added text), the i-th removed line of a
        run of changes paired with the run's i-th added line (a line only one side has is in no pair)."""
        out: list[tuple[int, str, str]] = []
        run: list[tuple[int, int, HunkLine, str]] = []
        for (n_old, op, text), (n_new, _op, _t) in zip(self._numbered(True) + [(0, HunkLine.CONTEXT, "")],
                                                       self._numbered(False) + [(0, HunkLine.CONTEXT, "")],
                                                       strict=True):
            if op is not HunkLine.CONTEXT:
                run.append((n_old, n_new, op, text))
                continue
            minus = [(o, t) for o, _n, op_, t in run if op_ is HunkLine.REMOVED]
            plus = [(n, t) for _o, n, op_, t in run if op_ is HunkLine.ADDED]
            out += [(o if old else n, a, b) for (o, a), (n, b) in zip(minus, plus, strict=False)]
            run = []
        return out

    def _numbered(self, old: bool) -> list[tuple[int, HunkLine, str]]:
        n = self.old_start if old else self.new_start
        own = HunkLine.own(old)
        out = []
        for op, text in self.lines:
            out.append((n, op, text))
            if op is HunkLine.CONTEXT or op is own:
                n += 1
        return out


@dataclass
class FileDiff:
    old_path: str  # as written, git's a/ prefix removed; "" for /dev/null
    new_path: str  # "" for /dev/null
    status: ChangeStatus
    hunks: list[Hunk] = field(default_factory=list)
    problem: str = ""  # what could not be read in this file's part of the diff

    @property
    def path(self) -> str:
        return self.new_path or self.old_path


def _next_file_header(lines: list[str], k: int) -> bool:
    return (lines[k].startswith("--- ") and k + 2 < len(lines) and lines[k + 1].startswith("+++ ")
            and lines[k + 2].startswith("@@ "))


def _clean_path(raw: str) -> str:
    """A header path without its timestamp (diff -u), quotes, or git's a/ b/ prefix."""
    p = raw.split("\t")[0].strip()
    if len(p) >= 2 and p[0] == p[-1] == '"':
        p = p[1:-1]
    if p == "/dev/null":
        return ""
    return p


def _strip_git_prefix(p: str, prefix: str) -> str:
    return p[2:] if p.startswith(prefix) else p


def parse_diff(text: object) -> list[FileDiff]:
    """The files of a unified diff, in order. Raises BadArgument (naming ``diff``) for text that holds none."""
    if not isinstance(text, str):
        raise BadArgument(f"diff must be the text of a unified diff, not {type(text).__name__}")
    if len(text) > MAX_DIFF_CHARS:
        raise BadArgument(f"diff is {len(text):,} characters long; the limit is {MAX_DIFF_CHARS:,}. {SPLIT_HINT}")
    if any("\ud800" <= c <= "\udfff" for c in text):
        raise BadArgument("diff is not valid Unicode text (it holds a lone surrogate); send the diff as UTF-8")
    files: list[FileDiff] = []
    cur: FileDiff | None = None
    from_git = False  # cur came from a "diff --git" line and has not had its ---/+++ pair yet
    hunk: Hunk | None = None
    left = (0, 0)  # lines still expected in the current hunk: (old, new)
    lines = text.replace("\r\n", "\n").split("\n")
    i = 0
    while i < len(lines):
        line = lines[i]
        i += 1
        if hunk is not None and cur is not None and left != (0, 0):
            op = line[:1] if line else " "  # some tools drop the space of an empty context line
            if op == "-" and _next_file_header(lines, i - 1):
                op = "cut"  # "--- a/x" "+++ b/x" "@@": the next file's header, not a removed line
            if op in (" ", "-", "+"):
                hunk.lines.append((HunkLine(op), line[1:]))
                left = (left[0] - (op != "+"), left[1] - (op != "-"))
                if min(left) < 0:
                    cur.problem = cur.problem or f"the hunk at old line {hunk.old_start} has more lines than it says"
                    left = (0, 0)
                continue
            if op == "\\":  # "\ No newline at end of file"
                continue
            cur.problem = cur.problem or f"the hunk at old line {hunk.old_start} is cut short"
            hunk, left = None, (0, 0)
        m = _GIT_HEADER.match(line)
        if m:
            a, b = (m.group(1), m.group(2)) if m.group(1) else (m.group(3), m.group(4))
            cur, from_git, hunk = FileDiff(_clean_path(a), _clean_path(b), ChangeStatus.MODIFIED), True, None
            files.append(cur)
            continue
        if line.startswith("--- ") and i < len(lines) and lines[i].startswith("+++ "):
            old, new = _clean_path(line[4:]), _clean_path(lines[i][4:])
            i += 1
            if from_git or (old.startswith("a/") and new.startswith("b/")):
                old, new = _strip_git_prefix(old, "a/"), _strip_git_prefix(new, "b/")
            if cur is None or not from_git:
                cur = FileDiff(old, new, ChangeStatus.MODIFIED)
                files.append(cur)
            cur.old_path, cur.new_path = old, new
            if not old:
                cur.status = ChangeStatus.ADDED
            elif not new:
                cur.status = ChangeStatus.DELETED
            from_git, hunk = False, None
            continue
        if line.startswith("Binary files ") and not from_git:  # diff -u on a binary file
            m = _BINARY.match(line)
            if m:
                files.append(FileDiff(_clean_path(m.group(1)), _clean_path(m.group(2)), ChangeStatus.BINARY,
                                      problem="binary file: no lines to map"))
                cur = None
            continue
        if cur is None:
            continue
        m = _HUNK.match(line)
        if m:
            hunk = Hunk(int(m.group(1)), int(m.group(3)))
            cur.hunks.append(hunk)
            left = (int(m.group(2)) if m.group(2) is not None else 1, int(m.group(4)) if m.group(4) is not None else 1)
            from_git = False
            continue
        if not from_git:
            continue  # text between files (a commit message, "Only in ...")
        if line.startswith("new file mode"):
            cur.status, cur.old_path = ChangeStatus.ADDED, ""
        elif line.startswith("deleted file mode"):
            cur.status, cur.new_path = ChangeStatus.DELETED, ""
        elif line.startswith("rename from "):
            cur.status, cur.old_path = ChangeStatus.RENAMED, line[len("rename from "):].strip()
        elif line.startswith("rename to "):
            cur.status, cur.new_path = ChangeStatus.RENAMED, line[len("rename to "):].strip()
        elif line.startswith("Binary files ") or line.startswith("GIT binary patch"):
            cur.status, cur.problem = ChangeStatus.BINARY, "binary file: no lines to map"
            from_git = False  # no ---/+++ follows for this file
    if hunk is not None and cur is not None and left != (0, 0):
        cur.problem = cur.problem or f"the hunk at old line {hunk.old_start} is cut short"
    if not files:
        raise BadArgument("diff holds no file of a unified diff (no 'diff --git' or '---'/'+++' header); give the "
                          "output of `git diff` or `diff -u`")
    if len(files) > MAX_FILES:
        raise BadArgument(f"diff changes {len(files)} files; the limit is {MAX_FILES}. Give part of it "
                          "(e.g. `git diff -- aten/src/ATen/native`)")
    for f in files:
        # A rename is what git's "rename from/to" says. Two names on ---/+++ alone are two copies of one file
        # compared (diff -u X.orig X, git diff --no-index old/ new/): the file is the new one, modified.
        if f.status.has_lines and not f.hunks and not f.problem:
            f.status = ChangeStatus.MODE if f.status is ChangeStatus.MODIFIED else f.status
    return files


# ------------------------------------------------------------------ paths

def tree_path(written: str, exists: Callable[[str], bool], root: str | None) -> tuple[str, str]:
    """(path relative to the tree, problem) for a path as a diff writes it.

    Absolute paths inside the tree are made relative; other paths lose leading
    components until one names a file of the tree (``patch -p``), so a diff made
    between two copies (``git diff --no-index old/ new/``) maps onto the tree. A path
    with ``..`` or one that names nothing here is reported, never followed."""
    p = written.replace("\\", "/")
    parts = PurePosixPath(p).parts
    if ".." in parts:
        return "", f"path {written!r} leaves the source tree ('..'); not read"
    if root and p.startswith(root.rstrip("/") + "/"):
        p = p[len(root.rstrip("/")) + 1:]
        parts = PurePosixPath(p).parts
    parts = tuple(x for x in parts if x != "/")
    for k in range(len(parts)):
        cand = "/".join(parts[k:])
        if cand and exists(cand):
            return cand, ""
    if p.startswith("/"):
        return "", f"path {written!r} is outside the source tree {root or ''}".rstrip() + "; not read"
    return p, ""


# ------------------------------------------------------------------ definitions named in changed text

_PY_DEF = re.compile(r"^\s*(?:async\s+)?def\s+([A-Za-z_]\w*)\s*\(|^\s*class\s+([A-Za-z_]\w*)\s*[(:]")
_CPP_MACRO_DEF = re.compile(r"\b(TORCH_IMPL_FUNC|TORCH_META_FUNC2?|TORCH_PRECOMPUTE_META_FUNC2?)"
                            r"\s*\(\s*([\w, ]+?)\s*\)")
# A definition's first line: a return type (or qualifier) then a name and "(", not a statement ending in ";".
_CPP_DEF = re.compile(r"^\s*(?:template\s*<[^>]*>\s*)?(?:[\w:<>,*&]+\s+)+[*&]*\s*"
                      r"((?:[A-Za-z_]\w*::)*~?[A-Za-z_]\w*)\s*\(")
_CPP_NOT = frozenset({"if", "for", "while", "switch", "return", "else", "sizeof", "case", "new", "delete", "throw",
                      "co_return", "static_assert", "decltype", "using", "typedef", "AT_DISPATCH_SWITCH"})


def defined_names(lines: list[str], lang: Language | None) -> list[str]:
    """Names the given source lines define (their first lines), as written: for Python ``def``/``class``;
    for C++ function headers and the structured-kernel macros; none for other files (YAML, build files)."""
    out: dict[str, None] = {}
    if lang is None:
        return []
    for k, text in enumerate(lines):
        if lang is Language.PYTHON:
            m = _PY_DEF.match(text)
            if m:
                out.setdefault(m.group(1) or m.group(2))
            continue
        mm = _CPP_MACRO_DEF.search(text)
        if mm:
            out.setdefault(f"{mm.group(1)}({mm.group(2).replace(' ', '')})")
            continue
        m = _CPP_DEF.match(text)
        if not m or text.rstrip().endswith(";") or text.lstrip().startswith(("//", "*", "#", "return")):
            continue
        name = m.group(1)
        if name.split("::")[-1] in _CPP_NOT or name.isupper():
            continue
        # A header is followed by its body: a "{" before any ";" on this line or the next few.
        rest = "\n".join(lines[k:k + 6])
        brace, semi = rest.find("{"), rest.find(";")
        if brace >= 0 and (semi < 0 or brace < semi):
            out.setdefault(name)
    return list(out)
