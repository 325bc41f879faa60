"""The arms of C++ ``if`` statements taken only for a sparse, nested, quantized or MKLDNN tensor, read from a
file's text.

Note [Layout arms]: a kernel for dense tensors often hands other layouts on at its start: ``select``'s composite
kernel runs ``if (self.is_sparse()) { return select_sparse(self, dim, index); }`` and only then makes its view;
``item`` checks ``self.is_sparse()`` before ``_local_scalar_dense``. The calls in such an arm run only for that
layout: for a dense tensor the op never reaches ``index_select``'s CUDA kernels. So the GPU walk marks an edge made
in such an arm (``Edge.branch``, ``Branch.layout``), and an answer ranks what it reaches with the layout-specific
kernels of the op (Note [Nearest first] in gpu_rank.py: after the dense path, tagged "sparse/nested/quantized
path"). An arm is a layout arm when its condition is a layout test (``x.is_sparse()``, ``is_sparse_csr``,
``is_nested``, ``is_quantized``, ``is_mkldnn``, ``x.layout() == kSparse...``, ``x.layout() != kStrided``), alone,
in a ``&&`` with other tests or in a ``||`` of layout tests only; and the ``else`` of an ``if`` whose condition is
the negation of such tests only (``if (!self.is_nested()) {...} else {...}``). An arm's lines are from its ``if``
(a one-line ``if (x.is_sparse()) return f(x);`` holds its call) to its closing brace or semicolon. Comments,
strings and preprocessor lines are blanked first; a file without a layout test is not scanned.
"""

from __future__ import annotations

import re
from typing import NamedTuple

from ..model import Branch, Loc
from ..store.reader import Index
from .cpp_text import blank_code, close_bracket
from .source_lines import file_lines

_RECV = r"[\w.:\->\[\]()]*?"  # self, inputs[0], grad.values(), self->tensor
_TEST = r"(?:\.|->)\s*(?:is_sparse|is_sparse_csr|is_nested|is_quantized|is_mkldnn)\s*\(\s*\)"
_FREE = r"(?:at::)?(?:sparse_csr::)?is_sparse_compressed\s*\([^()]*\)"
_SPARSE = r"(?:(?:at|c10)::)?(?:kSparse\w*|Layout::Sparse\w*)"
_STRIDED = r"(?:(?:at|c10)::)?(?:kStrided|Layout::Strided)"
_LAYOUT = rf"layout\s*\(\s*\)\s*(?:==\s*{_SPARSE}|!=\s*{_STRIDED})"
_NOT_LAYOUT = rf"layout\s*\(\s*\)\s*(?:!=\s*{_SPARSE}|==\s*{_STRIDED})"
_POSITIVE = re.compile(rf"^(?:{_RECV}(?:{_TEST}|{_LAYOUT})|{_FREE})$")
_NEGATIVE = re.compile(rf"^(?:!\s*(?:{_RECV}{_TEST}|{_FREE})|{_RECV}{_NOT_LAYOUT})$")
_ANY = re.compile(rf"{_TEST}|layout\s*\(\s*\)\s*[!=]=|is_sparse_compressed\s*\(")
_IF = re.compile(r"\bif\s*(?:constexpr\s*)?\(")
_ELSE = re.compile(r"\s*else\b")


class Arm(NamedTuple):
    """A layout arm: its first and last line, and its condition as written ("else of if (!x.is_nested())")."""

    first: int
    last: int
    arm: str
    head: int  # the line of its ``if``


def layout_arm(ix: Index, path: str, line: int) -> Arm | None:
    """The innermost layout arm (Note [Layout arms]) that holds ``line`` of ``path``, or None."""
    found = [a for a in _arms(ix, path) if a.first <= line <= a.last]
    return min(found, key=lambda a: a.last - a.first) if found else None


def layout_branch(ix: Index, site: Loc | None) -> Branch | None:
    """The layout arm a call at ``site`` is made in, as an edge's branch (``Branch.layout``), or None."""
    arm = layout_arm(ix, site.path, site.line) if site is not None and site.path else None
    return Branch(arm.arm, Loc(site.path, arm.head), layout=True) if arm is not None and site is not None else None


def _arms(ix: Index, path: str) -> list[Arm]:
    """A file's layout arms, read once per file and index version."""
    memo: dict[str, list[Arm]] = ix.cached("layout_arms", dict)
    if path not in memo:
        text = "\n".join(file_lines(ix, path))
        memo[path] = arms(text) if _ANY.search(text) else []
    return memo[path]


def arms(source: str) -> list[Arm]:
    """The layout arms of a C++ text (Note [Layout arms])."""
    text = blank_code(source)
    out: list[Arm] = []
    for m in _IF.finditer(text):
        open_at = m.end() - 1
        close = close_bracket(text, open_at, ("(", ")"))
        if close < 0:
            continue
        cond = " ".join(text[open_at + 1:close].split())
        kind = _kind(cond)
        if kind == 0:
            continue
        body_end = _statement_end(text, close + 1)
        if body_end < 0:
            continue
        head = text.count("\n", 0, m.start()) + 1
        if kind > 0:
            out.append(Arm(head, text.count("\n", 0, body_end) + 1, f"if ({cond})", head))
            continue
        after = _ELSE.match(text, body_end + 1)
        if after is None:
            continue
        else_end = _statement_end(text, after.end())
        if else_end >= 0:
            out.append(Arm(text.count("\n", 0, after.end()) + 1, text.count("\n", 0, else_end) + 1,
                           f"else of if ({cond})", head))
    return out


def _kind(cond: str) -> int:
    """1: the condition holds only for a layout (its arm is a layout arm); -1: it holds only for a dense tensor (its
    ``else`` is one); 0: neither, or not known."""
    if not _ANY.search(cond):
        return 0
    cond = _unwrapped(cond)
    ands = [_unwrapped(p) for p in _split(cond, "&&")]
    if len(ands) > 1:
        if any(_POSITIVE.match(p) for p in ands):
            return 1
        return -1 if all(_NEGATIVE.match(p) for p in ands) else 0
    ors = [_unwrapped(p) for p in _split(cond, "||")]
    if all(_POSITIVE.match(p) for p in ors):
        return 1
    return -1 if len(ors) == 1 and _NEGATIVE.match(ors[0]) else 0


def _split(cond: str, op: str) -> list[str]:
    """``cond`` split at ``op`` outside brackets."""
    out, depth, start, i = [], 0, 0, 0
    while i < len(cond):
        ch = cond[i]
        if ch in "([":
            depth += 1
        elif ch in ")]":
            depth -= 1
        elif depth == 0 and cond.startswith(op, i):
            out.append(cond[start:i].strip())
            start = i = i + len(op)
            continue
        i += 1
    out.append(cond[start:].strip())
    return out


def _unwrapped(part: str) -> str:
    """A condition without the parentheses around all of it: ``(a.is_sparse())`` -> ``a.is_sparse()``."""
    while part.startswith("(") and close_bracket(part, 0, ("(", ")")) == len(part) - 1:
        part = part[1:-1].strip()
    return part


def _statement_end(text: str, start: int) -> int:
    """Offset of the end of the statement starting at ``start`` (after spaces): the brace closing a block, or the
    semicolon ending a statement outside brackets; -1 if neither is found."""
    i = start
    while i < len(text) and text[i].isspace():
        i += 1
    if i < len(text) and text[i] == "{":
        return close_bracket(text, i, ("{", "}"), limit=200_000)
    depth = 0
    for j in range(i, min(len(text), i + 20_000)):
        ch = text[j]
        if ch in "([{":
            depth += 1
        elif ch in ")]}":
            depth -= 1
            if depth < 0:
                return -1
        elif ch == ";" and depth == 0:
            return j
    return -1
