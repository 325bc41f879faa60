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
identifier (for ``op``, the name must start with the op's base name: ``at::cumsum_out`` calls ``cumsum.out``):
a misplaced annotation fails when it is read, not by silently asserting something else.

``facts`` puts a tool's edges in the shape of ``Expectations.expected``, so a test compares the two sets
for every function that holds an annotation: a call the tool finds and no annotation names fails too.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path

from torchtalk.model import Edge, EdgeHow, NodeKind

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
        if word != last_name(target) and not (kind == "op" and word.startswith(target.split(".")[0])):
            raise AnnotationError(f"{rel}:{n}: the caret points at {word!r}, but the annotation is about {target!r}")
        if m["how"] and m["how"] not in {h.value for h in EdgeHow}:
            raise AnnotationError(f"{rel}:{n}: ({m['how']}) is no EdgeHow; "
                                  f"one of {', '.join(h.value for h in EdgeHow)}")
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

    def site(self, kind: str, target: str) -> str:
        """``path:line`` of the one call annotated ``kind: target``."""
        found = [a.where for a in self.uses() if (a.kind, a.target) == (kind, target)]
        if len(found) != 1:
            raise AnnotationError(f"{len(found)} '{kind}: {target}' annotations, where one was expected: {found}")
        return found[0]

    def uses(self) -> Iterator[Annotation]:
        """The annotations about calls (all but ``defines``)."""
        return (a for a in self.all if a.kind != "defines")

    def expected(self, a: Annotation) -> tuple[str, int, str, str, str, str, str]:
        """What an edge must be for annotation ``a``: (path, line, name, kind, target, where defined, how)."""
        defined = self.where(a.target, a.tag) if a.kind == "calls" else ""
        return a.path, a.line, a.word, a.kind, a.target, defined, a.how


Fact = tuple[str, int, str, str, str, str, str]


def facts(edges: Iterable[Edge]) -> set[Fact]:
    """Edges out of one function as (path, line, name called, kind, target, where defined, how): the shape
    of ``Expectations.expected``. The kind is the callee's: an op, an unresolved name, or a definition."""
    out = set()
    for e in edges:
        assert e.site is not None, e
        kind = {NodeKind.OP: "op", NodeKind.UNRESOLVED: "unresolved"}.get(e.dst.kind, "calls")
        target = e.dst.key if kind == "op" else e.dst.label
        defined = f"{e.dst.loc}" if kind == "calls" else ""
        how = "" if e.how is EdgeHow.DIRECT else e.how.value
        out.add((e.site.path, e.site.line, last_name(e.written), kind, target, defined, how))
    return out


def python_function_at(root: Path, rel: str, line: int) -> str:
    """The dotted name of the innermost Python function whose body holds ``line`` of ``rel``."""
    module = rel.removesuffix(".py").removesuffix("/__init__").replace("/", ".")
    best = ""

    def visit(node: ast.AST, prefix: str) -> None:
        nonlocal best
        for child in ast.iter_child_nodes(node):
            if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                name = f"{prefix}.{child.name}"
                if isinstance(child, ast.ClassDef) or not child.lineno <= line <= (child.end_lineno or 0):
                    visit(child, name)
                else:
                    best = name
                    visit(child, name)

    visit(ast.parse((root / rel).read_text(encoding="utf-8")), module)
    if not best:
        raise AnnotationError(f"{rel}:{line}: no function holds this line")
    return best
