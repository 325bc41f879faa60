"""Objective-C++ (the MPS backend's ``.mm`` files) made to look enough like C++ for tree-sitter-cpp.

A line-preserving rewrite: ``@autoreleasepool`` blanked, blocks ``^(args){`` turned into lambdas, fast enumeration
into a range-for, message sends into comma expressions, so the C++ around them parses. ``prepare_objc`` runs on the
bytes before same-file macros are expanded, ``finish_objc`` on the text after; lines are kept, columns may shift.
"""

from __future__ import annotations

import re

from .cpp_prep import _ARGS, _NL
from .cpp_text import match_close, skip_quoted

# Objective-C++ only.
_OBJC = re.compile(rb"@autoreleasepool\b|@available" + _ARGS.encode() + rb"|@(?=[\"{(0-9])")
# A block literal "^{", "^(args) {", "^RetType*(args) {" (return type often from a macro).
_BLOCK = re.compile(rb"\^(?=\s*(?:[A-Za-z_][\w:]*\s*\**\s*)?(?:\([^()]*\)\s*)?\{)")
_BLOCK_TYPE = re.compile(rb"\(\s*\^(?=\s*\w+\s*\))")  # typedef R (^Name)(args)
_BLOCK_RET = re.compile(r"\[&\](\s*[A-Za-z_][\w:]*\s*\**\s*)(?=\()")


def _objc_repl(m: re.Match) -> bytes:
    text = m.group(0)
    if text.startswith(b"@available"):  # "if (@available(macOS 13, *))" -> "if (1 ...)"
        return b"1" + _NL.sub(b" ", text[1:])
    return _NL.sub(b" ", text)


def prepare_objc(data: bytes) -> bytes:
    """Make Objective-C++ look enough like C++: lines are kept, columns may shift.

    Blocks become lambdas (``^(args) {`` -> ``[&](args) {``), block typedefs become
    function-pointer typedefs; ``@`` literals and ``@autoreleasepool`` lose the ``@``.
    Message sends (``[obj msg:arg]``) are left alone: tree-sitter recovers locally.
    """
    data = _BLOCK_TYPE.sub(b"(*", _OBJC.sub(_objc_repl, data))
    return _BLOCK.sub(b"[&]", data)


# Fast enumeration, "for (NSNumber* elem in shape)": read as the range-for it is ("in" -> ": ").
_FOR_IN = re.compile(r"(\bfor\s*\([^;(){}]*?[\w*&]\s+)in(?=\s+[^;{}]*\))")


def finish_objc(text: str) -> str:
    """After macro expansion (so macro-made block signatures are visible): drop block
    return types (``[&]RetType*(args)`` -> ``[&](args)``), read fast enumeration as a range-for, and rewrite
    message sends."""
    text = _BLOCK_RET.sub(lambda m: "[&]" + " " * len(m.group(1)), text)
    text = _FOR_IN.sub(r"\1: ", text)
    return _rewrite_messages(_array_literals(text))


def _array_literals(text: str) -> str:
    """``@[a, b]`` -> `` {a, b}``: an initializer list C++ accepts as an argument."""
    if "@[" not in text:
        return text
    chars = list(text)
    i = text.find("@[")
    while i >= 0:
        end = match_close(text, i + 1)
        if text[end - 1 : end] == "]":
            chars[i], chars[i + 1], chars[end - 1] = " ", "{", "}"
        i = text.find("@[", i + 2)
    return "".join(chars)


# "[recv sel" followed by ":" or "]": a message send, not a subscript, lambda or attribute.
_MESSAGE = re.compile(
    r"\[(?=\s*(?:\[\s*[A-Za-z_]\w*\s+[A-Za-z_]\w*\s*[:\]]"  # [[Cls alloc] init]
    r"|[A-Za-z_][\w.]*(?:->\w+)*(?:\([^()]*\))?(?:<[^<>]*>)?"  # receiver: a.b, p->q, f(), T<U*>
    r"\s+[A-Za-z_]\w*\s*[:\]]))"
)
_SELECTOR = re.compile(r"\s[A-Za-z_]\w*\s*:(?!:)|\s[A-Za-z_]\w*\s*$")
# "[[[Cls alloc] initWith:x] autorelease]": a receiver that is itself a message send of a message send, which _MESSAGE
# (one level of lookahead) cannot see; its outer brackets left as they were cost the rest of the function.
_NESTED_RECEIVER = re.compile(r"\[(?=\s*\[)")
_AFTER_RECEIVER = re.compile(r"\s+[A-Za-z_]\w*\s*[:\]]")


def _message_starts(text: str) -> list[int]:
    """Offsets of the '[' that open a message send (C++ attributes ``[[nodiscard]]`` have no selector after)."""
    starts = {m.start() for m in _MESSAGE.finditer(text)}
    for m in _NESTED_RECEIVER.finditer(text):
        inner = text.index("[", m.start() + 1)
        end = match_close(text, inner)
        if end <= len(text) and text[end - 1] == "]" and _AFTER_RECEIVER.match(text, end):
            starts.add(m.start())
    return sorted(starts)


def _rewrite_messages(text: str) -> str:
    """``[obj msg:a with:b]`` -> ``(obj ,   a,     b)``: same length, a C++ comma expression,
    so calls in the arguments stay visible and the statement parses."""
    if "[" not in text:
        return text
    chars = None
    for start in _message_starts(text):
        end = match_close(text, start)
        if end > len(text) or text[end - 1] != "]":
            continue
        if chars is None:
            chars = list(text)
        chars[start] = "("
        chars[end - 1] = ")"
        body = start + 1
        i = body
        ternary = 0  # "?" seen in the current argument: its ":" is not a selector
        receiver_done = False
        while i < end - 1:  # top-level selector keywords become commas
            ch = text[i]
            if ch in "([{":
                i = match_close(text, i)
                continue
            if ch == "?":
                ternary += 1
            elif ch.isspace():
                sel = _SELECTOR.match(text, i, end - 1)
                if sel and ternary and text[sel.end() - 1] == ":":
                    ternary -= 1
                    i = sel.end()
                    continue
                if sel and text[sel.end() - 1] != ":" and receiver_done:
                    sel = None  # a trailing word after arguments is not a unary selector
                if sel and (receiver_done or text[body:i].strip()):
                    receiver_done = True
                    a, b = sel.start() + 1, sel.end()
                    chars[a:b] = ("," if text[b - 1] == ":" else " ") + " " * (b - a - 1)
                    i = b
                    continue
            elif ch == '"':
                i = skip_quoted(text, i)
                continue
            i += 1
    return "".join(chars) if chars is not None else text
