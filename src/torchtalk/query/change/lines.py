"""A change as files and lines of the indexed tree: from diff text, from git, or from a list of names.

The index reflects the tree as it is on disk, which may hold either side of a diff:
the new side after the change was made (``git diff`` of the working tree), or the
old side when the diff is a patch not applied yet. Each file's hunks are compared
with the file to find out which, so changed lines are always numbered as the index
numbers them. Definitions that only the other side has (a function the change
deletes or renames, or one it adds) are read from the diff's own lines.

Note [Diff sides]: each file's hunks are compared with the tree's copy: when every hunk's new side
matches, the tree holds the new side (``DiffSide.NEW``); when every old side does, the old one; else
neither (edited since, or another version), and lines are read as numbered on the new side.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass, field
from pathlib import Path

from ...errors import BadArgument
from ...graph.cpp_text import comment_at
from ...model import FileStatus, Layer
from ...model.change import ChangeStatus, DiffSide, FileKind, Language
from ...model.paths import file_kind
from ...store.reader import Index
from ..args import shown
from .diff import FileDiff, defined_names, parse_diff, tree_path

MAX_NAMES = 50
MAX_NAMES_CHARS = 20_000
MAX_RANGE = 5_000  # lines one path:A-B entry may span
_LINES = re.compile(r"^(?P<path>[^\s:]+?):(?P<a>\d+)(?:-(?P<b>\d+))?$")
_LINE_WRITTEN = re.compile(r"^(?P<path>[^\s:]+?):(?P<rest>[^:].*)$")  # path:-5, path:abc


EDIT_SHOWN = 160  # characters of a changed line's two sides that an answer shows


@dataclass
class FileChange:
    written: str  # the path as the input wrote it
    path: str  # relative to the tree; "" when it names nothing here
    status: ChangeStatus
    kind: FileKind = FileKind.OTHER  # what the file is (model.paths.file_kind); OTHER when it names nothing here
    lines: set[int] = field(default_factory=set)  # changed lines, numbered as in the tree's copy
    gaps: set[tuple[int, int]] = field(default_factory=set)  # (before, after): lines only the other side has
    side: DiffSide | None = None  # which side of the diff the tree holds (None for names)
    whole: bool = False  # every definition in the file (an added or deleted file, a path given alone)
    removed: list[str] = field(default_factory=list)  # definitions the change deletes, from the diff's lines
    added: list[str] = field(default_factory=list)  # definitions only the patch has (not in the tree yet)
    problem: str = ""
    # a replaced line (numbered as in the tree's copy) -> its removed and added text (Hunk.pairs)
    edits: dict[int, tuple[str, str]] = field(default_factory=dict)

    def edit(self, line: int) -> str:
        """What the diff makes of a replaced line, both sides as written ("CPU, CUDA: lerp_Scalar -> CPU, CUDA, Meta:
        lerp_Scalar", at most EDIT_SHOWN characters); "" when only one side has it."""
        if line not in self.edits:
            return ""
        before, after = self.edits[line]
        text = f"{before.strip()} -> {after.strip()}"
        return text if len(text) <= EDIT_SHOWN else text[:EDIT_SHOWN] + " ..."


class TreeFiles:
    """Which relative paths name files of the tree: indexed (with their id and layer), or on disk inside it."""

    def __init__(self, ix: Index) -> None:
        self.ix = ix
        self.root = ix.source_root
        self.indexed: dict[str, tuple[int, Layer]] = ix.cached("change_files", lambda: {
            p: (fid, Layer(layer)) for fid, p, layer in ix.q("SELECT id, path, layer FROM files")})
        # Files the index lists but never read (too large, NUL bytes, unreadable, a symlink out of the tree): why.
        self.skipped: dict[str, str] = ix.cached("change_skipped", lambda: dict(ix.q(
            "SELECT path, reason FROM files WHERE status = ?", (FileStatus.SKIPPED.value,))))

    def not_read(self, rel: str) -> str:
        """The problem of a changed file the index skipped ("" when it read it): nothing of it is indexed, so
        none of its lines is "outside any definition"; and it is not read here either (it may lead out of the
        tree)."""
        why = self.skipped.get(rel)
        return "" if why is None else f"skipped by the index ({why or 'not read'}): nothing of it is indexed"

    def ending_with(self, written: str) -> list[str]:
        """Indexed files whose path ends with ``written`` as whole components (ReduceOps.cpp, native/X.cpp: a
        diff made inside a directory of the tree names its files from there)."""
        tail = "/" + written.strip("/")
        return sorted(p for p in self.indexed if p.endswith(tail))

    def kind(self, rel: str) -> FileKind:
        got = self.indexed.get(rel)
        return file_kind(rel, got[1] if got else None)

    def exists(self, rel: str) -> bool:
        if rel in self.indexed:
            return True
        if self.root is None:
            return False
        full = os.path.join(self.root, rel)
        inside = (os.path.realpath(full) + os.sep).startswith(os.path.realpath(self.root) + os.sep)
        return os.path.isfile(full) and inside

    def lines(self, rel: str) -> list[str] | None:
        """The file's lines as on disk (None when it is not there or not text)."""
        if self.root is None or not self.exists(rel):
            return None
        try:
            data = (Path(self.root) / rel).read_bytes()
        except OSError:
            return None
        if b"\0" in data[:8192]:
            return None
        return data.decode("utf-8", errors="replace").replace("\r\n", "\n").split("\n")


# ------------------------------------------------------------------ from a diff

def _matches(text: list[str], numbered: list[tuple[int, str]]) -> bool:
    return all(0 < n <= len(text) and text[n - 1].rstrip() == t.rstrip() for n, t in numbered)


def _side(text: list[str] | None, fd: FileDiff) -> DiffSide:
    """Note [Diff sides]."""
    if text is None:
        return (DiffSide.OLD if fd.status is ChangeStatus.ADDED else DiffSide.NEW if fd.status is ChangeStatus.DELETED
                else DiffSide.NEITHER)
    if all(_matches(text, h.side(old=False)) for h in fd.hunks):
        return DiffSide.NEW
    if all(_matches(text, h.side(old=True)) for h in fd.hunks):
        return DiffSide.OLD
    return DiffSide.NEITHER


def _from_diff(fd: FileDiff, files: TreeFiles) -> FileChange:
    root = str(files.root) if files.root else None
    path, problem = "", ""
    names = list(dict.fromkeys(p for p in (fd.new_path, fd.old_path) if p))
    for written in names:
        path, problem = tree_path(written, files.exists, root)
        if problem or files.exists(path):
            break
    else:  # named from a directory of the tree (diff -u run in aten/src/ATen/native): the one file ending so
        ends = next((got for w in names if not w.startswith("/") if (got := files.ending_with(w))), [])
        if len(ends) > 1 and fd.hunks:  # the one whose text the hunks match (Note [Diff sides])
            ends = [p for p in ends if _side(files.lines(p), fd) is not DiffSide.NEITHER] or ends
        if len(ends) == 1:
            path = ends[0]
        elif ends:
            path, problem = "", (f"{names[0]} is not a path of the tree, and {len(ends)} files end so: "
                                 f"{', '.join(ends[:4])}{', ...' if len(ends) > 4 else ''}; give the path from the "
                                 "tree's root")
    fc = FileChange(fd.path, path, fd.status, problem=problem or fd.problem)
    if problem or not fd.status.has_lines:
        return fc
    fc.kind = files.kind(path)
    if skipped := files.not_read(path):
        fc.problem = skipped
        return fc
    text = files.lines(path)
    if text is None and fd.status not in (ChangeStatus.ADDED, ChangeStatus.DELETED):
        fc.problem = f"{path} is not in the source tree: nothing of it is indexed"
        return fc
    if fd.status is ChangeStatus.RENAMED and all(tree_path(p, files.exists, root)[0] == path for p in names):
        fc.status = ChangeStatus.MODIFIED  # two copies of one file (git diff --no-index old/ new/)
    if fc.status is ChangeStatus.RENAMED and not fd.hunks:
        fc.problem = (f"renamed from {fd.old_path} to {fd.new_path}, no line changed: its definitions are the same; "
                      "what names its path (build files, includes) changes with it")
        return fc
    fc.side = _side(text, fd)
    lang = fc.kind.language
    minus = [t for h in fd.hunks for _n, t in h.removed()]
    plus = [t for h in fd.hunks for _n, t in h.added()]
    gone = [n for n in defined_names(minus, lang) if n not in set(defined_names(plus, lang))]
    new = [n for n in defined_names(plus, lang) if n not in set(defined_names(minus, lang))]
    if fd.status is ChangeStatus.ADDED:
        if fc.side is DiffSide.OLD:
            fc.problem, fc.added = "new in the diff and not in the tree yet: nothing of it is indexed", new
        else:
            fc.whole = True
        return fc
    if fd.status is ChangeStatus.DELETED:
        if text is None:
            fc.removed = gone
            fc.problem = "deleted by the diff and gone from the tree"
        else:
            fc.whole, fc.removed = True, gone
        return fc
    if lang is not None and (minus or plus) and _comments_only(minus, plus, lang):
        fc.problem = "only comments, blank lines and spacing change: no code runs differently"
        return fc
    old = fc.side is DiffSide.OLD
    for h in fd.hunks:
        lines, gaps = h.changed(old=old)
        fc.lines |= lines
        fc.gaps |= gaps
        fc.edits.update((n, (a, b)) for n, a, b in h.pairs(old))
    fc.removed, fc.added = gone, new if old else []
    if fc.side is DiffSide.NEITHER:
        fc.problem = ("the tree's copy matches neither side of the diff (edited since, or another version): "
                      "lines are mapped as numbered on the diff's new side")
    return fc


def _code(line: str, lang: Language) -> str:
    """A changed line's code, its comment and spacing dropped (``_pair(0),  # padding`` -> ``_pair(0),``; a line of
    a ``/* */`` block's -> ""), a Python line's indentation kept."""
    t = line.strip()
    if lang is Language.CPP and (t.startswith(("/*", "*/", "* ")) or t == "*"):
        return ""
    at = comment_at(t, "#" if lang is Language.PYTHON else "//")
    code = " ".join((t[:at] if at >= 0 else t).split())
    # Python's indentation is code (a line moved out of its block); C++'s is not
    return f"{len(line) - len(line.lstrip())}:{code}" if code and lang is Language.PYTHON else code


def _comments_only(minus: list[str], plus: list[str], lang: Language) -> bool:
    """Whether a change touches only comments and spacing: its lines' code reads the same on both sides."""
    return [c for t in minus if (c := _code(t, lang))] == [c for t in plus if (c := _code(t, lang))]


def from_diff(files: TreeFiles, text: str) -> list[FileChange]:
    return [_from_diff(fd, files) for fd in parse_diff(text)]


# ------------------------------------------------------------------ from names

def split_names(text: object) -> list[str]:
    if not isinstance(text, str):
        raise BadArgument(f"names must be a string such as 'aten/src/ATen/native/ReduceOps.cpp:491, cumsum', not "
                          f"{type(text).__name__}")
    if len(text) > MAX_NAMES_CHARS:
        raise BadArgument(f"names is {len(text):,} characters long; the limit is {MAX_NAMES_CHARS:,} "
                          f"(at most {MAX_NAMES} names); give a diff for large changes")
    if any(ord(c) < 32 and c not in "\t\n\r" or c == "\x7f" for c in text):
        raise BadArgument("names contains control characters; give names such as 'cumsum, index_select_out_cpu_' "
                          "or 'path:line'")
    if any("\ud800" <= c <= "\udfff" for c in text):
        raise BadArgument("names is not valid Unicode text (it holds a lone surrogate)")
    # Commas and line breaks separate names; spaces do too, except inside parentheses ("f(int a)").
    out: list[str] = []
    cur: list[str] = []
    depth = 0
    for ch in text:
        depth += (ch == "(") - (ch == ")")
        if ch in ",\n\r" or ch in " \t" and depth <= 0:
            out.append("".join(cur).strip())
            cur = []
        else:
            cur.append(ch)
    out.append("".join(cur).strip())
    names = list(dict.fromkeys(n for n in out if n))
    if not names:
        raise BadArgument("names is empty; give 'path:line', 'path:start-end', a file path, an op, a C++ function "
                          "or a Python name, separated by commas")
    if len(names) > MAX_NAMES:
        raise BadArgument(f"names lists {len(names)} names; the limit is {MAX_NAMES}. Give a diff for large changes")
    for n in names:
        if len(n) > 500:
            raise BadArgument(f"names: an entry is {len(n):,} characters long; the limit is 500")
    return names


def from_path_name(files: TreeFiles, name: str) -> FileChange | None:
    """``path:line``, ``path:start-end`` or a path alone, as a change of the tree; None when ``name`` is no path."""
    m = _LINES.match(name)
    written = m.group("path") if m else name
    if not m and (bad := _LINE_WRITTEN.match(name)) is not None and "/" in bad.group("path") and \
            files.exists(bad.group("path")):
        raise BadArgument(f"names: {shown(name)}: the line must be a number from 1 (path:line or path:start-end)")
    if not m and "/" not in name:
        return None
    path, problem = tree_path(written, files.exists, str(files.root) if files.root else None)
    if problem:
        return FileChange(name, "", ChangeStatus.LINES, problem=problem)
    if not files.exists(path):
        if not m and "." not in path.rsplit("/", 1)[-1]:
            return None  # torch.nn/whatever: a dotted or qualified name, not a path
        return FileChange(name, "", ChangeStatus.LINES, problem=f"{shown(written)} is not a file of the source tree")
    if skipped := files.not_read(path):
        return FileChange(name, path, ChangeStatus.LINES, files.kind(path), problem=skipped)
    if not m:
        return FileChange(name, path, ChangeStatus.LINES, files.kind(path), whole=True)
    a = int(m.group("a"))
    b = int(m.group("b") or a)
    if not 1 <= a <= b or b - a > MAX_RANGE:
        raise BadArgument(f"names: {shown(name)} is not a line range of 1 to {MAX_RANGE} lines (path:line or "
                          "path:start-end, start <= end)")
    text = files.lines(path)
    count = len(text) - (text[-1] == "") if text else 0
    if text is not None and a > count:
        return FileChange(name, "", ChangeStatus.LINES, problem=f"line {a} is past the end of {path} ({count:,} "
                          "lines)")
    return FileChange(name, path, ChangeStatus.LINES, files.kind(path), lines=set(range(a, b + 1)))
