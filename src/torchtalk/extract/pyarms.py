"""The arms of a function body's choices, as source spans (Note [Branch arms] in model/python.py)."""

from __future__ import annotations

import ast
from ast import AST
from dataclasses import replace
from typing import Any

from ..model import PyCall
from .pyast import text

Pos = tuple[int, int]  # (line, column) of a node's start or end, in source order
_NOT_IN_BODY = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Lambda)


def _returns(n: ast.stmt) -> ast.Return | None:
    """The first ``return`` a statement holds, outside the functions and classes it defines."""
    stack: list[ast.stmt] = [n]
    while stack:
        x = stack.pop()
        if x.__class__ is ast.Return:
            return x  # type: ignore[return-value]
        if not isinstance(x, _NOT_IN_BODY):
            stack += reversed([st for block in _blocks(x) for st in block])
    return None


def _blocks(n: AST) -> list[list[ast.stmt]]:
    """The statement lists a compound statement holds (an if's arms, a loop's body, a try's handlers, ...)."""
    out = [v for f in ("body", "orelse", "finalbody") if isinstance(v := getattr(n, f, None), list) and v]
    for h in getattr(n, "handlers", ()) or getattr(n, "cases", ()):
        out.append(h.body)
    return out


NO_ARM: dict[str, Any] = {"branch": "", "branch_line": 0, "branch_arms": 0, "branch_past": False, "branch_outer": 0}


class BranchArms:
    """The arms of one function body's choices, as source spans (Note [Branch arms] in model/python.py): ``of(pos)``
    is the innermost arm holding a position, as the PyCall fields that say so (``NO_ARM``: none). The
    arms of an ``if``/``elif``/``else`` chain (an ``elif`` is an ``if`` alone in its parent's ``else`` at the parent's
    column; ``else: if`` is not), of a conditional expression (``a if c else b``), and the rest of a block past a
    statement that may return (``if c: return f(x)``, then ``g(x)``: g runs only when the if did not return)."""

    __slots__ = ("spans", "_heads", "_texts", "_arms", "_closed", "_past")

    def __init__(self, body: list[ast.stmt]) -> None:
        # (start, end, chain's head line, node, arm kind): kind "if", "elif", "else", "ternary-if", "ternary-else", or
        # "past N" (the rest of a block past a statement returning at line N)
        self.spans: list[tuple[Pos, Pos, int, AST, str]] = []
        self._heads: dict[int, int] = {}  # id(an elif's If) -> the line of its chain's if
        self._texts: dict[tuple[int, str], str] = {}
        self._arms: dict[int, int] = {}  # a chain's head line -> its arms as written
        self._closed: set[int] = set()  # the heads of chains with an else (or a conditional expression's)
        self._past: dict[int, bool] = {}  # the head of a statement that may return -> whether it is an if
        self._add_returns(body)

    def _span(self, body: list[ast.stmt] | ast.expr, head: int, n: AST, kind: str) -> None:
        first, last = (body[0], body[-1]) if isinstance(body, list) else (body, body)
        self.spans.append(((first.lineno, first.col_offset), (last.end_lineno or last.lineno, last.end_col_offset or 0),
                           head, n, kind))
        if not kind.startswith("past "):
            self._arms[head] = self._arms.get(head, 0) + 1

    def add(self, n: ast.If | ast.IfExp) -> None:
        if n.__class__ is ast.IfExp:
            self._ternary(n)  # type: ignore[arg-type]
            return
        assert isinstance(n, ast.If)
        head = self._heads.get(id(n), n.lineno)
        kind = "elif" if id(n) in self._heads else "if"
        if n.body:
            self._span(n.body, head, n, kind)
        orelse = n.orelse
        if len(orelse) == 1 and orelse[0].__class__ is ast.If and orelse[0].col_offset == n.col_offset:
            self._heads[id(orelse[0])] = head
        elif orelse:
            self._span(orelse, head, n, "else")
            self._closed.add(head)

    def _ternary(self, n: ast.IfExp) -> None:
        self._span(n.body, n.lineno, n, "ternary-if")
        self._span(n.orelse, n.lineno, n, "ternary-else")
        self._closed.add(n.lineno)

    def _add_returns(self, body: list[ast.stmt]) -> None:
        """The rest of each block past a compound statement that may return: an arm of that statement's choice."""
        todo = [body]
        while todo:
            block = todo.pop()
            for i, st in enumerate(block):
                if isinstance(st, _NOT_IN_BODY):
                    continue
                inner = _blocks(st)
                todo += inner
                ret = _returns(st) if inner and i + 1 < len(block) else None
                if ret is not None:
                    self._span(block[i + 1:], st.lineno, st, f"past {ret.lineno}")
                    self._past[st.lineno] = st.__class__ is ast.If

    def paths(self, head: int) -> int:
        """The arms of a chain, counting the way past them when none is taken (an if with no else: the rest of
        the block, which is an arm of its own past a return); a loop's, try's or with's past a return: the return
        and the rest."""
        if head in self._past and not self._past[head]:
            return 2
        return self._arms.get(head, 0) + (0 if head in self._closed and head not in self._past else 1)

    def mark(self, calls: list[PyCall], first: int, func: int, cols: dict[int, int]) -> None:
        """Each call of function ``func`` in ``calls[first:]`` with the arm that holds it (``cols``: a call's column by
        its index; a call not there is taken at its line's start)."""
        for i in range(first, len(calls)):
            c = calls[i]
            if c.func == func and (arm := self.of((c.line, cols.get(i, 0)))) is not None:
                calls[i] = replace(c, **arm)

    def _innermost(self, pos: Pos, other_than: int = 0) -> tuple[Pos, Pos, int, AST, str] | None:
        """The innermost span holding ``pos``, of a choice other than the one at line ``other_than``."""
        best = None
        for span in self.spans:
            if span[0] <= pos <= span[1] and span[2] != other_than and (
                    best is None or (span[0], best[1]) > (best[0], span[1])):
                best = span
        return best

    def of(self, pos: Pos) -> dict[str, Any] | None:
        """The PyCall fields of the innermost arm holding ``pos`` (None when no arm does)."""
        best = self._innermost(pos)
        if best is None:
            return None
        _first, _last, head, n, kind = best
        outer = self._innermost((n.lineno, n.col_offset), head)  # type: ignore[attr-defined]
        key = (id(n), kind)
        if key not in self._texts:
            test = getattr(n, "test", None)
            self._texts[key] = ("else" if kind in ("else", "ternary-else") else
                                f"past the return at line {kind[5:]}" if kind.startswith("past ") else
                                f"{kind.removeprefix('ternary-')} {text(test, 160)}")
        return {"branch": self._texts[key], "branch_line": head, "branch_arms": self.paths(head),
                "branch_past": kind.startswith("past "), "branch_outer": outer[2] if outer is not None else 0}
