"""C++ text at query time: brackets matched and argument lists split, on text the index keeps (parameter lists, call
arguments, derivative formulas), without parsing it again; code blanked of comments and literals, a line's comment
found (also a Python line's, for the tools that read changed or test lines)."""

from __future__ import annotations

import re

_BLANK = re.compile(r'"(?:\\.|[^"\\\n])*"|\'(?:\\.|[^\'\\\n])*\'|//[^\n]*|/\*.*?\*/|^[ \t]*#[^\n]*', re.S | re.M)


def blank_code(text: str) -> str:
    """``text`` with its comments, string and character literals and preprocessor lines blanked (spaces, newlines
    kept): brackets and keywords read as code, at the same offsets and lines."""
    return _BLANK.sub(lambda m: re.sub(r"[^\n]", " ", m.group()), text)


def comment_at(line: str, mark: str) -> int:
    """Where a line's comment starts (``mark``: ``//`` in C++, ``#`` in Python), outside quotes; -1 when it has none
    (``s = 'a # b'`` has none)."""
    quote = ""
    for i, ch in enumerate(line):
        if quote:
            quote = "" if ch == quote else quote
        elif ch in "'\"":
            quote = ch
        elif line.startswith(mark, i):
            return i
    return -1


def close_bracket(text: str, open_at: int, pairs: tuple[str, str] = ("([{", ")]}"), limit: int = 4000) -> int:
    """Offset of the bracket closing the one at ``open_at`` (brackets of ``pairs``: openers, closers; within
    ``limit`` characters), or -1. Strings and comments are not skipped (extract/cpp_text.match_close does that)."""
    opens, closes = pairs
    depth = 0
    for i in range(open_at, min(len(text), open_at + limit)):
        ch = text[i]
        if ch in opens:
            depth += 1
        elif ch in closes:
            depth -= 1
            if depth == 0:
                return i
    return -1


def template_brackets(text: str) -> set[int]:
    """Offsets of the ``<``/``>`` pairs that are template brackets: a ``<`` right after a name (``vector<int>``,
    never ``self <= max``, ``a < b``, ``x << 2``) closed by a ``>`` in the same brackets (``p->x``, ``a > b`` and a
    ``<`` left open are operators)."""
    out: set[int] = set()
    stack: list[tuple[str, int]] = []
    for i, ch in enumerate(text):
        if ch in "([" or ch == "<" and i and (text[i - 1].isalnum() or text[i - 1] in "_:") and \
                text[i + 1:i + 2] not in ("=", "<"):
            stack.append((ch, i))
        elif ch == ">" and stack and stack[-1][0] == "<":
            out.update((stack.pop()[1], i))
        elif ch in ")]":
            while stack and stack.pop()[0] == "<":
                pass
    return out


def split_args(text: str) -> list[str]:
    """Top-level comma split, brackets, braced lists (``{grad.size(-2), grad.size(-1)}``) and template arguments
    (``template_brackets``) kept together."""
    out, depth, start = [], 0, 0
    angles = template_brackets(text) if "<" in text else set()
    for i, ch in enumerate(text):
        if ch in "([{" or i in angles and ch == "<":
            depth += 1
        elif ch in ")]}" or i in angles and ch == ">":
            depth -= 1
        elif ch == "," and depth == 0:
            out.append(text[start:i].strip())
            start = i + 1
    out.append(text[start:].strip())
    return [a for a in out if a]
