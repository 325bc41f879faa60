"""Text helpers for the C++ extractor: balanced scanning, name splitting, normalising,
and ``scan_scopes`` (namespaces and top-level items by brace matching).

They work on ``str`` (latin-1 views of the source) and never raise on odd input:
unbalanced text just yields shorter results.
"""

from __future__ import annotations

import functools
import re
from typing import NamedTuple

_WS = re.compile(r"\s+")
_COMMENT = re.compile(r"/\*.*?\*/|//[^\n]*", re.S)
_SPACE_AROUND = re.compile(r"\s*(,)\s*|\s+([)\]>&*])|([(\[<])\s+")
_PTR_NAME = re.compile(r"([&*])(?=[A-Za-z_])")
_OPERATOR = re.compile(r"\boperator\b")
_CLOSE = {"(": ")", "[": "]", "{": "}"}


_CODE_COMMENT = re.compile(r'"(?:\\.|[^"\\\n])*"|\'(?:\\.|[^\'\\\n])*\'|//[^\n]*|/\*.*?\*/', re.S)


def strip_comments(text: str) -> str:
    """Comments replaced by a space; string and character literals kept."""
    if "/" not in text:
        return text
    return _CODE_COMMENT.sub(lambda m: m.group(0) if m.group(0)[0] in "\"'" else " ", text)


def collapse(text: str) -> str:
    """Whitespace runs to one space, ends stripped."""
    if "\n" not in text and "  " not in text and "\t" not in text:
        return text.strip()
    return _WS.sub(" ", text).strip()


@functools.lru_cache(maxsize=1 << 14)
def norm_params(text: str) -> str:
    """``( const Tensor &self, /*x*/ int64_t dim )`` -> ``(const Tensor& self, int64_t dim)``. Memoised (a pure
    function; generated files repeat parameter lists by the thousand)."""
    if "/" in text:
        text = _COMMENT.sub(" ", text)
    text = _WS.sub(" ", text).strip()
    text = _SPACE_AROUND.sub(_space_repl, text)
    if "&" in text or "*" in text:
        text = _PTR_NAME.sub(r"\1 ", text)
    return text


def _space_repl(m: re.Match) -> str:
    return ", " if m.group(1) else (m.group(2) or m.group(3))


def strip_templates(text: str) -> str:
    """Drop balanced ``<...>`` groups: ``Foo<T, std::pair<A,B>>::bar`` -> ``Foo::bar``."""
    if "<" not in text:
        return text
    out = []
    depth = 0
    for ch in text:
        if ch == "<":
            depth += 1
        elif ch == ">" and depth:
            depth -= 1
        elif not depth:
            out.append(ch)
    return "".join(out)


def split_scope(text: str) -> tuple[list[str], str]:
    """``::at::native::Foo<T>::operator()`` -> (["at", "native", "Foo"], "operator()")."""
    if "operator" not in text and "<" not in text and " " not in text and "\n" not in text:
        parts = text.split("::")  # the common case: "at::native::foo", "foo"
        name = parts.pop()
        return [p for p in parts if p], name
    text = _WS.sub(" ", text).strip()
    m = _OPERATOR.search(text)
    if m:
        name = "operator" + text[m.end():].replace(" ", "")
        if text[m.end():].strip()[:1].isalpha():  # conversion operator: "operator bool"
            name = "operator " + text[m.end():].strip()
        head = text[: m.start()]
    else:
        head, name = text, ""
    head = strip_templates(head).replace(" ", "")
    parts = [p for p in head.split("::")]
    if not m:
        name = parts.pop() if parts else ""
    return [p for p in parts if p], name


def match_close(text: str, i: int) -> int:
    """Index just past the bracket matching ``text[i]`` (one of ``([{``), skipping strings
    and comments; ``len(text)`` if unbalanced."""
    depth = 0
    n = len(text)
    while i < n:
        ch = text[i]
        if ch in "([{":
            depth += 1
        elif ch in ")]}":
            depth -= 1
            if depth == 0:
                return i + 1
        elif ch == '"' or ch == "'":
            i = skip_quoted(text, i)
            continue
        elif ch == "/" and i + 1 < n and text[i + 1] in "/*":
            end = text.find("\n" if text[i + 1] == "/" else "*/", i + 2)
            i = n if end < 0 else end + (1 if text[i + 1] == "/" else 2)
            continue
        i += 1
    return n


def skip_quoted(text: str, i: int) -> int:
    """Index just past the string/char literal starting at ``text[i]``."""
    q = text[i]
    if q == '"' and i > 0 and text[i - 1] == "R":  # raw string R"delim( ... )delim"
        p = text.find("(", i)
        if p > 0:
            end = text.find(")" + text[i + 1 : p] + '"', p)
            if end >= 0:
                return end + p - i + 1
    j = i + 1
    n = len(text)
    while j < n:
        c = text[j]
        if c == "\\":
            j += 2
            continue
        if c == q or c == "\n":
            return j + 1
        j += 1
    return n


def split_args(text: str) -> list[str]:
    """Top-level comma split of an argument list body (no outer parens)."""
    args: list[str] = []
    depth = 0
    start = 0
    i = 0
    n = len(text)
    while i < n:
        ch = text[i]
        if ch in "([{":
            depth += 1
        elif ch in ")]}":
            depth -= 1
        elif ch == '"' or ch == "'":
            i = skip_quoted(text, i)
            continue
        elif ch == "," and depth == 0:
            args.append(text[start:i].strip())
            start = i + 1
        i += 1
    last = text[start:].strip()
    if last or args:
        args.append(last)
    return args


def call_args(text: str, open_idx: int) -> tuple[list[str], int]:
    """Arguments of the call whose ``(`` is at ``open_idx``, and the index past ``)``."""
    end = match_close(text, open_idx)
    return split_args(text[open_idx + 1 : end - 1]), end


_STR_PART = re.compile(r'R"([^(\s]*)\((.*?)\)\1"|"((?:\\.|[^"\\])*)"', re.S)


def string_value(text: str) -> str | None:
    """Value of a (possibly concatenated or raw) string literal, or None if not one."""
    text = text.strip()
    if not text or text[0] not in '"uLR8':
        return None
    parts = [m.group(2) if m.group(2) is not None else m.group(3) for m in _STR_PART.finditer(text)]
    return "".join(parts) if parts else None


_WRAPPERS = {
    "TORCH_FN", "TORCH_FN_TYPE", "castPyCFunctionWithKeywords", "castPyCFunctionFast",
    "static_cast", "reinterpret_cast", "const_cast", "overload_cast", "wrap_pybind_function",
    "wrap_pybind_function_no_gil", "TORCH_SELECTIVE_NAME", "TORCH_SELECTIVE_SCHEMA",
    "cpp_function", "makeFromUnboxedFunction",
}
_TEMPLATE_WRAPPERS = ("TypeError_to_NotImplemented_<", "makeFromBoxedFunction<")
_CALLEE = re.compile(r"^([A-Za-z_][\w:]*)\s*(<.*>)?\s*\(", re.S)


def _unwrap(s: str) -> str | None:
    """One layer of cast/wrapper removed from ``s``, or None if there is none."""
    if s[0] == "(":  # C cast "(PyCFunction)f" or parentheses "(f)"
        end = match_close(s, 0)
        rest = s[end:].strip()
        return rest if rest else s[1 : end - 1]
    for pre in _TEMPLATE_WRAPPERS:
        at = s.find(pre)
        if at >= 0 and (at == 0 or s[at - 1] == ":"):
            end = s.rfind(">")
            if end > at + len(pre):
                return s[at + len(pre) : end]
    m = _CALLEE.match(s)
    if m and m.group(1).rsplit("::", 1)[-1] in _WRAPPERS:
        args, end = call_args(s, m.end() - 1)
        if args and end >= len(s):
            return args[0]
    return None


def clean_target(text: str, line: int = 0) -> str:
    """A function reference as written, minus ``&``, casts and known wrappers:
    ``castPyCFunctionWithKeywords(TypeError_to_NotImplemented_<THPVariable_add>)`` ->
    ``THPVariable_add``; lambdas -> ``lambda@LINE``; ``nullptr`` -> ``""``."""
    s = text.strip()
    for _ in range(12):
        s = s.lstrip("&").strip()
        if not s:
            return ""
        if s[0] == "[":
            return f"lambda@{line}"
        new = _unwrap(s)
        if new is None:
            break
        s = new.strip()
    if s in ("nullptr", "NULL", "0"):
        return ""
    return collapse(s)


_SCOPE_SCAN = re.compile(
    r"(?=[/R\"'#{};nie \t])"  # cheap first-character filter before the alternatives
    r'(?://[^\n]*|/\*.*?\*/|R"([^(\s]*)\(.*?\)\1"|"(?:\\.|[^"\\\n])*"|\'(?:\\.|[^\'\\\n])*\''
    r"|^[ \t]*#(?:[^\n]*\\\n)*[^\n]*"
    r"|\b(?:inline\s+)?namespace\b\s*((?:\w+\s*::\s*)*\w+)?\s*(?:\[\[[^\]]*\]\]\s*)?\{"
    r"|\bextern\s*\"C\"\s*\{|[{};])",
    re.S | re.M,
)


class Scopes(NamedTuple):
    """What brace matching the text says, for trees tree-sitter could not parse well."""

    starts: list[int]  # offsets where the namespace chain changes ...
    chains: list[tuple[str, ...]]  # ... and the chain from there on
    chunks: list[tuple[int, int]]  # top-level items (functions, classes, declarations) at namespace scope


def scan_scopes(text: str) -> Scopes:
    """Namespaces and top-level items by brace matching (comments, strings and
    preprocessor lines skipped). One bad statement can make tree-sitter drop the
    ``namespace x {`` around it or swallow the following functions; counting braces
    keeps both the namespace chain and the extent of each item. Of ``#if``/``#else``
    branches only the first counts, as alternatives often each open a brace."""
    starts = [0]
    chains: list[tuple[str, ...]] = [()]
    stack: list[tuple[str, ...] | None] = []  # per open brace: namespace parts, () extern "C", None other
    conds: list[list] = []  # per open #if: [stack at #if, stack at the end of its first branch]
    current: tuple[str, ...] = ()
    chunks: list[tuple[int, int]] = []
    chunk_start = 0

    def depth() -> int:
        return sum(1 for k in stack if k is None)

    for m in _SCOPE_SCAN.finditer(text):
        tok = m.group(0)
        if tok == "{":
            stack.append(None)
        elif tok == "}":
            if not stack:
                continue
            kind = stack.pop()
            if kind is None:
                if depth() == 0:
                    chunks.append((chunk_start, m.end()))
                    chunk_start = m.end()
            else:
                chunks.append((chunk_start, m.start()))
                chunk_start = m.end()
                current = tuple(p for s in stack if s for p in s)
                starts.append(m.end())
                chains.append(current)
        elif tok == ";":
            if depth() == 0:
                chunks.append((chunk_start, m.end()))
                chunk_start = m.end()
        elif tok[0] in " \t#":
            d = _DIRECTIVE_NAME.match(tok)
            kind = d.group(1) if d else ""
            if kind.startswith("if"):
                conds.append([list(stack), None])
            elif conds and kind in ("elif", "else"):
                if conds[-1][1] is None:
                    conds[-1][1] = list(stack)
                stack[:] = conds[-1][0]
            elif conds and kind == "endif":
                first = conds.pop()[1]
                if first is not None:
                    stack[:] = first
        elif tok[0] in "/\"'R":  # comment or string
            continue
        elif depth():  # "namespace x {" inside a function cannot be; count it as a brace
            stack.append(None)
        else:
            chunks.append((chunk_start, m.start()))
            chunk_start = m.end()
            if tok.startswith("extern"):
                stack.append(())
                continue
            name = m.group(2)
            parts = tuple(name.replace(" ", "").replace("\n", "").split("::")) if name else ("(anonymous)",)
            stack.append(parts)
            current = current + parts
            starts.append(m.end())
            chains.append(current)
    chunks.append((chunk_start, len(text)))
    return Scopes(starts, chains, [c for c in chunks if c[1] > c[0]])


_DIRECTIVE_NAME = re.compile(r"[ \t]*#[ \t]*(\w+)")
