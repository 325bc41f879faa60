"""The arms of a function body's choices, as source spans (Note [Branch arms] in model/python.py)."""

from __future__ import annotations

import ast
from ast import AST
from dataclasses import replace
from typing import Any, NamedTuple

from ..model import ArmKind, PyCall
from .pyast import text

Pos = tuple[int, int]  # (line, column) of a node's start or end, in source order
_NOT_IN_BODY = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Lambda)
_TRIES = (ast.Try, getattr(ast, "TryStar", ast.Try))  # try/except, and try/except* (Python 3.11)
CHOICES = frozenset((ast.If, ast.IfExp, *_TRIES))  # what ``BranchArms.add`` takes: the statements that choose


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


NO_ARM: dict[str, Any] = {"branch": "", "branch_line": 0, "branch_arms": 0, "branch_past": False,
                          "branch_within": ()}


class _Arm(NamedTuple):
    """One arm as a span of the body."""

    start: Pos
    end: Pos
    head: int  # the line of the statement (or expression) that starts its choice
    node: AST  # what its text is read from: the if (an elif's own), the conditional expression, the except handler,
    #            the try (its else), the statement that may return (PAST)
    kind: ArmKind
    ret: int = 0  # PAST: the line of the return


class BranchArms:
    """The arms of one function body's choices, as source spans (Note [Branch arms] in model/python.py): ``of(pos)``
    is the innermost arm holding a position, as the PyCall fields that say so (``NO_ARM``: none), with the arms
    around its choice. The arms of an ``if``/``elif``/``else`` chain (an ``elif`` is an ``if`` alone in its parent's
    ``else`` at the parent's column; ``else: if`` is not), of a conditional expression (``a if c else b``), the
    handlers of a ``try`` (and its ``else``), and the rest of a block past a statement that may return (``if c: return
    f(x)``, then ``g(x)``: g runs only when the if did not return)."""

    __slots__ = ("spans", "_heads", "_texts", "_arms", "_closed", "_past", "_within")

    def __init__(self, body: list[ast.stmt]) -> None:
        self.spans: list[_Arm] = []
        self._heads: dict[int, int] = {}  # id(an elif's If) -> the line of its chain's if
        self._texts: dict[tuple[int, ArmKind], str] = {}
        self._arms: dict[int, int] = {}  # a choice's head line -> its arms as written
        self._closed: set[int] = set()  # the heads of choices with an else (a conditional expression's, a try's)
        self._past: dict[int, bool] = {}  # the head of a statement that may return -> whether it is an if
        self._within: dict[int, tuple[tuple[int, str, int, bool], ...]] = {}  # id(an arm) -> the arms around it
        self._add_returns(body)

    def _span(self, body: list[ast.stmt] | ast.expr, head: int, n: AST, kind: ArmKind, ret: int = 0) -> None:
        first, last = (body[0], body[-1]) if isinstance(body, list) else (body, body)
        self.spans.append(_Arm((first.lineno, first.col_offset),
                               (last.end_lineno or last.lineno, last.end_col_offset or 0), head, n, kind, ret))
        if kind is not ArmKind.PAST:
            self._arms[head] = self._arms.get(head, 0) + 1

    def add(self, n: AST) -> None:
        """The arms of a choice the body holds (a node whose class is in ``CHOICES``)."""
        if n.__class__ is ast.IfExp:
            assert isinstance(n, ast.IfExp)
            self._span(n.body, n.lineno, n, ArmKind.IF)
            self._span(n.orelse, n.lineno, n, ArmKind.ELSE)
            self._closed.add(n.lineno)
        elif isinstance(n, _TRIES):
            self._try(n)
        else:
            assert isinstance(n, ast.If)
            self._if(n)

    def _if(self, n: ast.If) -> None:
        head = self._heads.get(id(n), n.lineno)
        if n.body:
            self._span(n.body, head, n, ArmKind.ELIF if id(n) in self._heads else ArmKind.IF)
        orelse = n.orelse
        if len(orelse) == 1 and orelse[0].__class__ is ast.If and orelse[0].col_offset == n.col_offset:
            self._heads[id(orelse[0])] = head
        elif orelse:
            self._span(orelse, head, n, ArmKind.ELSE)
            self._closed.add(head)

    def _try(self, n: ast.Try) -> None:
        """Each handler of a try is an alternative; its ``else`` (run when the body did not raise) is the way past
        them, counted when not written. The body and ``finally`` run on every path: no arm (nor is a try without
        handlers a choice)."""
        for h in n.handlers:
            self._span(h.body, n.lineno, h, ArmKind.EXCEPT)
        if n.handlers and n.orelse:
            self._span(n.orelse, n.lineno, n, ArmKind.ELSE)
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
                    self._span(block[i + 1:], st.lineno, st, ArmKind.PAST, ret.lineno)
                    self._past[st.lineno] = st.__class__ is ast.If

    def paths(self, head: int) -> int:
        """The arms of a choice, counting the way past them when none is taken (an if with no else, a try with no
        else); past a return: for an if, the rest is that way; for a loop or with, the return and the rest; for a
        try, its arms, the return and the rest."""
        written = self._arms.get(head, 0)
        if head not in self._past:
            return written + (0 if head in self._closed else 1)
        return written + (1 if self._past[head] else 2)

    def mark(self, calls: list[PyCall], first: int, func: int, cols: dict[int, int]) -> None:
        """Each call of function ``func`` in ``calls[first:]`` with the arm that holds it (``cols``: a call's column by
        its index; a call not there is taken at its line's start)."""
        for i in range(first, len(calls)):
            c = calls[i]
            if c.func == func and (arm := self.of((c.line, cols.get(i, 0)))) is not None:
                calls[i] = replace(c, **arm)

    def _innermost(self, pos: Pos, other_than: int = 0) -> _Arm | None:
        """The innermost span holding ``pos``, of a choice other than the one at line ``other_than``."""
        best = None
        for span in self.spans:
            if span.start <= pos <= span.end and span.head != other_than and (
                    best is None or (span.start, best.end) > (best.start, span.end)):
                best = span
        return best

    def _text(self, arm: _Arm) -> str:
        """The arm as written: "if c" / "elif c" (its test), "else", "except E", "past the return at line N"."""
        key = (id(arm.node), arm.kind)
        if key not in self._texts:
            n, kind = arm.node, arm.kind
            caught = getattr(n, "type", None)
            self._texts[key] = (
                f"past the return at line {arm.ret}" if kind is ArmKind.PAST else
                kind.value if kind is ArmKind.ELSE or kind is ArmKind.EXCEPT and caught is None else
                f"{kind.value} {text(caught if kind is ArmKind.EXCEPT else getattr(n, 'test', None), 160)}")
        return self._texts[key]

    def _around(self, arm: _Arm) -> tuple[tuple[int, str, int, bool], ...]:
        """The arms holding ``arm``'s choice, outermost first, each as (head line, text, arms of its choice, past)."""
        if id(arm) not in self._within:
            out: list[tuple[int, str, int, bool]] = []
            heads, at = {arm.head}, arm
            while (up := self._innermost((at.node.lineno, at.node.col_offset), at.head)) is not None \
                    and up.head not in heads:  # type: ignore[attr-defined]
                out.append((up.head, self._text(up), self.paths(up.head), up.kind is ArmKind.PAST))
                heads.add(up.head)
                at = up
            self._within[id(arm)] = tuple(reversed(out))
        return self._within[id(arm)]

    def of(self, pos: Pos) -> dict[str, Any] | None:
        """The PyCall fields of the innermost arm holding ``pos`` (None when no arm does)."""
        best = self._innermost(pos)
        if best is None:
            return None
        return {"branch": self._text(best), "branch_line": best.head, "branch_arms": self.paths(best.head),
                "branch_past": best.kind is ArmKind.PAST, "branch_within": self._around(best)}
