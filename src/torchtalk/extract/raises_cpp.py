"""Raise sites of a C++/CUDA buffer, read off the call expressions the walker already visits.

``cpp_calls.Calls._call`` hands every call whose callee is a raising macro or function
(``TORCH_CHECK*``, ``TORCH_INTERNAL_ASSERT``, ``AT_ERROR``, ``TORCH_WARN*``,
``C10_THROW_ERROR``, ``PyErr_Format``, ``throw X(...)``) to ``record_raise``, which
flattens the message arguments into literal pieces and values (Note [Raise messages] in
model/raises.py): string literals and their concatenations, ``c10::str(...)``,
``std::string(...) + ...``, printf and ``fmt::format`` fields; anything else is a value.
Checks inside a same-file macro (``ADDMM_META()``) are seen where the macro is used, since
the walker parses the expansion in place. ``string_constants`` records the file's string
constants (``const char* ERR_BACKWARD_TWICE = "..."``) so that a message naming one can be
matched wherever the constant is defined.
"""

from __future__ import annotations

import re

from ..model import RaiseSite
from ..model.facts import NO_REF
from ..model.raises import (
    ASSERT_MACROS,
    ASSERT_PREFIX,
    BRACE_FIELD,
    CHECK_ARGS_FROM,
    CHECK_DEFAULT,
    CHECK_MACROS,
    DISPATCH_MESSAGE,
    DISPATCH_PREFIX,
    ERROR_MACROS,
    FUNCTION_NAME_VALUES,
    LAMBDA_FUNCTION_NAME,
    MAX_TEXT,
    PRINTF_FIELD,
    PY_ERROR_SETTERS,
    THROWN,
    WARN_MACROS,
    Parts,
    RaiseKind,
    fill_values,
    split_format,
)
from .cpp_bindings import u
from .cpp_text import split_scope

RAISE_CALLEES = frozenset(CHECK_MACROS) | ASSERT_MACROS | frozenset(WARN_MACROS) | ERROR_MACROS | \
    PY_ERROR_SETTERS | frozenset(THROWN)
_STR_CALLS = frozenset({"str", "string", "string_view", "basic_string", "c10::str", "::c10::str", "std::string",
                        "c10::string_view", "std::string_view"})
_FORMAT_CALLS = frozenset({"format", "fmt::format", "std::format", "c10::printf"})
_TORCH_PRINTF = frozenset({"TypeError", "ValueError", "IndexError", "AttributeError", "NotImplementedError",
                           "LinAlgError"})  # torch::X(const char* format, ...) of torch/csrc/Exceptions.h
_ESCAPE = re.compile(r"\\(x[0-9A-Fa-f]+|[0-7]{1,3}|u[0-9A-Fa-f]{4}|.)", re.S)
_SIMPLE = {"n": "\n", "t": "\t", "r": "\r", "0": "\0", "a": "\a", "b": "\b", "f": "\f", "v": "\v", "e": "\x1b"}
_LITERALS = ("string_literal", "concatenated_string", "raw_string_literal", "char_literal")
_MAX_DEPTH = 6
# Declarators that name a function as written (Note [The function's own name] in model/raises.py).
_NAMED = frozenset({"identifier", "qualified_identifier", "field_identifier", "destructor_name", "operator_name",
                    "template_function"})
# A value that may name a string constant (ERR_BACKWARD_TWICE, kMsg): a site with only such a value is kept.
CONSTANT_NAME = re.compile(r"^(?:\w+::)*(?:[A-Z][A-Z0-9_]{3,}|k[A-Z]\w+)$")


def _unescape_one(m: re.Match[str]) -> str:
    s = m.group(1)
    if s in _SIMPLE:
        return _SIMPLE[s]
    try:
        if s[0] == "x" and len(s) > 1:
            return chr(int(s[1:], 16) & 0xFF)
        if s[0] == "u" and len(s) == 5:
            return chr(int(s[1:], 16))
        if s[0] in "01234567":
            return chr(int(s, 8) & 0xFF)
    except ValueError:
        pass
    return s


def literal_text(w, n) -> str:
    """The characters a string or char literal (or a concatenation of them) stands for; identifiers inside a
    concatenation (``"%" PRId64``) read as a printf length (``ld``)."""
    ty = n.type
    if ty == "concatenated_string":
        return "".join(literal_text(w, c) if c.type in _LITERALS else "ld" if w.t(c).startswith("PRI") else ""
                       for c in n.named_children)
    text = u(w.t(n))
    if ty == "raw_string_literal":
        m = re.match(r'[uUL8]*R"([^(]*)\((.*)\)\1"$', text, re.S)
        return m.group(2) if m else ""
    quote = "'" if ty == "char_literal" else '"'
    start, end = text.find(quote), text.rfind(quote)
    return _ESCAPE.sub(_unescape_one, text[start + 1:end]) if 0 <= start < end else ""


def _flatten(w, n, parts: Parts, depth: int = 0) -> None:
    """Add what ``n`` prints when streamed by c10::str (operator<<) to ``parts``."""
    ty = n.type
    if ty in _LITERALS:
        parts.lit(literal_text(w, n))
        return
    if depth < _MAX_DEPTH:
        if ty == "parenthesized_expression" and n.named_child_count == 1:
            _flatten(w, n.named_children[0], parts, depth + 1)
            return
        if ty == "binary_expression" and _op(w, n) == "+" and _stringish(w, n):
            for x in _chain(w, n, "+"):  # a + b + c + ...: one level, however long
                _flatten(w, x, parts, depth + 1)
            return
        if ty == "call_expression":
            name = _callee(w, n)
            args = _args(n)
            stream = _stream(w, n) if not args and name.endswith(".str") else None
            if stream is not None:  # oss.str(): what was streamed into oss in this function
                for x in stream:
                    _flatten(w, x, parts, depth + 1)
                return
            if name in _STR_CALLS and (name != "string" or len(args) == 1):
                for a in args:
                    _flatten(w, a, parts, depth + 1)
                return
            if name in _FORMAT_CALLS and args and args[0].type in _LITERALS:
                split_format(literal_text(w, args[0]), parts, BRACE_FIELD, [w.t(a) for a in args[1:]])
                return
    parts.val(u(w.t(n)))


def _op(w, n) -> str:
    op = n.child_by_field_name("operator")
    return w.t(op) if op is not None else ""


def _chain(w, n, op: str) -> list:
    """The operands of a left-nested chain ``a op b op c`` in order."""
    out = []
    while n is not None and n.type == "binary_expression" and _op(w, n) == op:
        out.append(n.child_by_field_name("right"))
        n = n.child_by_field_name("left")
    out.append(n)
    return [x for x in reversed(out) if x is not None]


def _stream(w, n) -> list | None:
    """For ``oss.str()``: the operands streamed into ``oss`` (``oss << "a" << x;``) in the enclosing function,
    in source order; None when ``oss`` is not a plain name or nothing is streamed into it."""
    f = n.child_by_field_name("function")
    obj = f.child_by_field_name("argument") if f is not None else None
    if obj is None or obj.type != "identifier":
        return None
    name = w.t(obj)
    body = n.parent
    while body is not None and body.type not in ("function_definition", "lambda_expression"):
        body = body.parent
    if body is None:
        return None
    out: list = []
    stack = [body]
    while stack:
        x = stack.pop()
        if x.type == "binary_expression" and _op(w, x) == "<<":
            ops = _chain(w, x, "<<")
            if ops and ops[0].type == "identifier" and w.t(ops[0]) == name:
                out.append((x.start_byte, ops[1:]))
                continue
        stack.extend(x.named_children)
    out.sort(key=lambda t: t[0])
    return [o for _at, ops in out for o in ops] or None


def _stringish(w, n) -> bool:
    """A ``+`` whose operands include a string: a concatenation, not arithmetic."""
    stack = [n]
    while stack:
        x = stack.pop()
        if x.type in _LITERALS:
            return True
        if x.type in ("binary_expression", "parenthesized_expression"):
            stack.extend(x.named_children)
        elif x.type == "call_expression" and _callee(w, x).split("::")[-1] in ("string", "to_string", "str"):
            return True
    return False


def _callee(w, n) -> str:
    f = n.child_by_field_name("function")
    if f is None:
        return ""
    text = w.t(f).replace(" ", "")
    return text.split("<")[0]


def _args(n) -> list:
    a = n.child_by_field_name("arguments")
    return [c for c in a.named_children if c.type != "comment"] if a is not None else []


def _message(w, args: list, printf: bool = False) -> Parts:
    parts = Parts()
    if printf and args and args[0].type in _LITERALS:
        split_format(literal_text(w, args[0]), parts, PRINTF_FIELD, [u(w.t(a)) for a in args[1:]])
        return parts
    for a in args:
        _flatten(w, a, parts)
    return parts


def _squash(text: str) -> str:
    """A condition as the preprocessor's ``#cond`` prints it: whitespace runs as one space."""
    return " ".join(text.split())


def record_raise(w, n, callee: str, qual: str, caller: int) -> None:
    """Record the raise site of call ``n`` (a call of ``callee``, qualified by ``qual``) if it is one."""
    args = _args(n)
    cond = ""
    exc = ""
    printf = False
    if callee in CHECK_MACROS:
        kind = RaiseKind.CHECK
        start = CHECK_ARGS_FROM.get(callee, 1)
        if len(args) < start:
            return
        cond = _squash(u(w.t(args[start - 1])))
        exc = CHECK_MACROS[callee] or THROWN.get(w.t(args[0]).split("::")[-1], "RuntimeError")
        msg = args[start:]
        if callee == "TORCH_CHECK_ARG" and len(args) > 1:
            parts = Parts()
            parts.lit("invalid argument ")
            _flatten(w, args[1], parts)
            parts.lit(": ")
            for a in args[2:]:
                _flatten(w, a, parts)
        elif msg:
            parts = _message(w, msg)
        else:
            parts = Parts()
            parts.lit(CHECK_DEFAULT[0] + cond + CHECK_DEFAULT[1])
    elif callee.startswith(DISPATCH_PREFIX):
        # AT_DISPATCH_*(TYPE, NAME, ...): AT_DISPATCH_SWITCH (Dispatch.h) fails for a type it has no case for.
        if callee.startswith("AT_DISPATCH_CASE") or len(args) < 2:
            return
        kind, exc = RaiseKind.CHECK, "RuntimeError"
        name = next((a for a in args if a.type in _LITERALS), args[1])
        cond = f"{_squash(u(w.t(args[0])))}: a type {callee} has a case for"
        parts = Parts()
        parts.lit('"')
        _flatten(w, name, parts)
        parts.lit(DISPATCH_MESSAGE[0])
        parts.val("toString(_st)")
        parts.lit(DISPATCH_MESSAGE[1])
    elif callee in ASSERT_MACROS:
        kind, exc = RaiseKind.ASSERT, "RuntimeError"
        if not args:
            return
        cond = _squash(u(w.t(args[0])))
        parts = Parts()
        parts.lit(cond + ASSERT_PREFIX[0])
        parts.val("__FILE__")
        parts.lit(ASSERT_PREFIX[1])
        parts.val("__LINE__")
        parts.lit(ASSERT_PREFIX[2])
        for a in args[1:]:
            _flatten(w, a, parts)
    elif callee in WARN_MACROS:
        kind, exc = RaiseKind.WARN, WARN_MACROS[callee]
        parts = _message(w, args)
    elif callee in ERROR_MACROS:
        kind, exc = RaiseKind.ERROR, "RuntimeError"
        if callee == "C10_THROW_ERROR":
            if len(args) < 2:
                return
            exc = THROWN.get(w.t(args[0]).split("::")[-1], "RuntimeError")
            args = args[1:]
        parts = _message(w, args)
    elif callee in PY_ERROR_SETTERS:
        kind = RaiseKind.ERROR
        if callee == "THPUtils_setError":
            exc = "RuntimeError"
        elif args:
            exc = w.t(args[0]).removeprefix("PyExc_")
            args = args[1:]
        printf = callee != "PyErr_SetString"
        parts = _message(w, args, printf)
    else:  # an exception class: only when thrown here
        p = n.parent
        if p is None or p.type != "throw_statement" or qual not in ("", "std", "c10", "::c10", "torch", "at"):
            return
        kind, exc = RaiseKind.ERROR, THROWN[callee]
        args = [a for a in args if a.type != "initializer_list"]  # c10 errors take a SourceLocation {...}
        printf = callee in _TORCH_PRINTF and qual in ("", "torch")
        parts = _message(w, args, printf)
        callee = f"throw {qual}::{callee}" if qual else f"throw {callee}"
    if not parts.has_text and not any(CONSTANT_NAME.match(g) for g in parts.gaps):
        return
    pieces, gaps = parts.done()
    if FUNCTION_NAME_VALUES.intersection(gaps):
        name = _function_name(w, n)
        if name:
            pieces, gaps = fill_values(pieces, gaps, dict.fromkeys(FUNCTION_NAME_VALUES, name))
    span = w.span_at(n.start_byte)
    line = w.line(n)
    w.raises.append(RaiseSite(caller if caller >= 0 else NO_REF, NO_REF, kind, callee, exc, pieces, gaps,
                              cond[:MAX_TEXT], line, max(line, n.end_point[0] + 1 + w.line_base),
                              span.macro if span is not None else ""))


def _function_name(w, n) -> str:
    """What ``__func__`` prints at ``n`` (Note [The function's own name] in model/raises.py): the unqualified name of
    the function definition around it, ``operator()`` in a lambda, "" when not known."""
    p = n.parent
    while p is not None and p.type not in ("function_definition", "lambda_expression"):
        p = p.parent
    if p is None:
        return ""
    if p.type == "lambda_expression":
        return LAMBDA_FUNCTION_NAME
    d = p.child_by_field_name("declarator")
    while d is not None and d.type != "function_declarator":  # Tensor& f(...), T* f(...)
        d = d.child_by_field_name("declarator") or next(
            (c for c in d.named_children if c.type.endswith("declarator")), None)
    name = d.child_by_field_name("declarator") if d is not None else None
    if name is None or name.type not in _NAMED:
        return ""
    return split_scope(u(w.t(name)).replace("template ", ""))[1].strip()


# A string constant: ``const char* ERR_X = "..." "...";``, ``constexpr auto kMsg = "...";``,
# ``static const std::string MSG = "...";``, ``const char kMsg[] = "...";``. Found from its ``= "`` (rare, and a
# literal the regex engine looks for quickly), then read backwards for the declaration and forwards for the
# strings up to the ``;``.
_ASSIGN_STRING = re.compile(r'=[ \t]*\r?\n?[ \t]*(?:u8|L|u|U)?"')
_DECLARED = re.compile(r'\b(?:char|string|string_view|auto)\b\s*(?:const\s*)?\*?\s*(?:const\s+)?([A-Za-z_]\w*)\s*'
                       r'(?:\[\s*\w*\s*\])?\s*$')
_STRINGS = re.compile(r'\s*((?:(?:u8|L|u|U)?"(?:\\.|[^"\\\n])*"\s*)+);')
_STRING = re.compile(r'"((?:\\.|[^"\\\n])*)"')


def string_constants(text: str) -> list[RaiseSite]:
    """The file's named string constants, as CONSTANT sites (matched where a message names them)."""
    out = []
    line, pos = 1, 0
    for m in _ASSIGN_STRING.finditer(text):
        d = _DECLARED.search(text, max(0, m.start() - 120), m.start())
        if d is None:
            continue
        strings = _STRINGS.match(text, m.end() - 1)
        if strings is None:
            continue
        value = "".join(_ESCAPE.sub(_unescape_one, u(x)) for x in _STRING.findall(strings.group(1)))
        if len(value.strip()) < 8:  # names for short strings ("cpu", ", ") are no messages
            continue
        line += text.count("\n", pos, d.start(1))
        pos = d.start(1)
        parts = Parts()
        parts.lit(value)
        pieces, gaps = parts.done()
        out.append(RaiseSite(NO_REF, NO_REF, RaiseKind.CONSTANT, d.group(1), "", pieces, gaps, "", line,
                             line + text.count("\n", d.start(1), strings.end())))
    return out
