"""Expectations written in the fixture sources, next to the code they are about (tests as data).

Like GitHub stack-graphs' ``languages/*/test/*.py`` (``# ^ defined: 3``) and jedi's ``#?``, a comment line
whose caret points at a name on the nearest code line above it says what that name is::

    static int64_t combine(const Tensor& t, int64_t b) {
    //             ^ defines: at::native::combine #tensor
    ...
      int64_t undecided = combine(mystery_value(), k);
      //                  ^ calls: at::native::combine #tensor (candidate)
      //                          ^ unresolved: mystery_value

``//`` in C, C++ and CUDA files, ``#`` in Python files. Each line is ``^ KIND: TARGET [#TAG] [(HOW)]``:

- ``defines: LABEL [#TAG]`` -- the definition of ``LABEL`` is on that line; ``#TAG`` tells overloads apart.
- ``calls: LABEL [#TAG] [(HOW)]`` -- the call resolves to that definition (a ``defines`` annotation must
  name it, so a test never writes its line), made as ``HOW`` (an ``EdgeHow`` value; none: direct).
- ``op: KEY [(HOW)]`` -- the call is a call of the op ``KEY`` through the dispatcher.
- ``unresolved: NAME`` -- the call stays unresolved, under ``NAME``.

The caret must stand at the first character of the name, and the name must be the target's last
identifier: a misplaced annotation fails when it is read, not by silently asserting something else.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path

SOURCES = (".cpp", ".h", ".cu", ".cuh", ".mm", ".py")
KINDS = ("defines", "calls", "op", "unresolved")
_LINE = re.compile(r"^\s*(?://|#)\s*\^\s*(?P<kind>\w+):\s*(?P<target>\S+)"
                   r"(?:\s+#(?P<tag>\w+))?(?:\s+\((?P<how>\w+)\))?\s*$")


class AnnotationError(ValueError):
    """A malformed or misplaced annotation, named by file and line."""


@dataclass(frozen=True)
class Annotation:
    path: str  # relative to the tree's root
    line: int  # the code line the caret points into (1-based)
    column: int  # where the caret points (0-based)
    word: str  # the name at the caret
    kind: str  # one of KINDS
    target: str
    tag: str = ""
    how: str = ""  # "" for the plain case
    at: int = 0  # the annotation's own line

    @property
    def where(self) -> str:
        return f"{self.path}:{self.line}"


def last_name(text: str) -> str:
    """The last identifier of a label or of a call as written: ``at::native::(anonymous)::f`` -> f,
    ``tensors[1].unsqueeze`` -> unsqueeze."""
    names = re.findall(r"\w+", text)
    return names[-1] if names else ""


def read_file(root: Path, rel: str) -> list[Annotation]:
    out = []
    code_line, code = 0, ""
    for n, text in enumerate((root / rel).read_text(encoding="utf-8").splitlines(), start=1):
        m = _LINE.match(text)
        if m is None:
            if re.match(r"^\s*(//|#)\s*\^", text):
                raise AnnotationError(f"{rel}:{n}: not an annotation: {text.strip()!r} "
                                      f"(write '^ KIND: TARGET [#TAG] [(HOW)]', KIND one of {', '.join(KINDS)})")
            code_line, code = n, text
            continue
        kind, target = m["kind"], m["target"]
        if kind not in KINDS:
            raise AnnotationError(f"{rel}:{n}: unknown kind {kind!r}; kinds: {', '.join(KINDS)}")
        if not code_line:
            raise AnnotationError(f"{rel}:{n}: an annotation needs a code line above it")
        col = text.index("^")
        word = re.match(r"\w*", code[col:]).group(0)
        if not word or (col and re.match(r"\w", code[col - 1])):
            raise AnnotationError(f"{rel}:{n}: the caret (column {col}) points at no name's start on line {code_line}")
        if word != last_name(target):
            raise AnnotationError(f"{rel}:{n}: the caret points at {word!r}, but the annotation is about {target!r}")
        out.append(Annotation(rel, code_line, col, word, kind, target, m["tag"] or "", m["how"] or "", n))
    return out


def read_tree(root: Path) -> list[Annotation]:
    """Every annotation under ``root``, in path and line order."""
    out: list[Annotation] = []
    for p in sorted(root.rglob("*")):
        if p.suffix in SOURCES and p.is_file():
            out += read_file(root, p.relative_to(root).as_posix())
    return out


class Expectations:
    """A tree's annotations: the definitions they name, and the calls they expect, per code line."""

    def __init__(self, annotations: Iterable[Annotation]):
        self.all = list(annotations)
        self._defs: dict[tuple[str, str], Annotation] = {}
        for a in self.all:
            if a.kind == "defines":
                if (a.target, a.tag) in self._defs:
                    raise AnnotationError(f"{a.path}:{a.at}: {a.target} #{a.tag} is already defined at "
                                          f"{self._defs[a.target, a.tag].where}; tell them apart with #TAG")
                self._defs[a.target, a.tag] = a
        for a in self.uses():
            if a.kind == "calls":
                self.where(a.target, a.tag, used_at=a)  # every callee's definition is annotated

    def where(self, target: str, tag: str = "", used_at: Annotation | None = None) -> str:
        """``path:line`` of the definition annotated ``defines: target [#tag]``."""
        d = self._defs.get((target, tag))
        if d is None:
            tags = sorted(f"#{t}" for name, t in self._defs if name == target and t)
            at = f"{used_at.path}:{used_at.at}: " if used_at else ""
            raise AnnotationError(f"{at}no 'defines: {target}{' #' + tag if tag else ''}' annotation"
                                  + (f"; its tags: {', '.join(tags)}" if tags else ""))
        return d.where

    def uses(self) -> Iterator[Annotation]:
        """The annotations about calls (all but ``defines``)."""
        return (a for a in self.all if a.kind != "defines")

    def expected(self, a: Annotation) -> tuple[str, int, str, str, str, str, str]:
        """What an edge must be for annotation ``a``: (path, line, name, kind, target, where defined, how)."""
        defined = self.where(a.target, a.tag) if a.kind == "calls" else ""
        return a.path, a.line, a.word, a.kind, a.target, defined, a.how
