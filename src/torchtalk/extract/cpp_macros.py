"""A light preprocessor for function-like macros defined in the same file.

PyTorch writes many kernels and launches through local helper macros::

    #define CREATE_UNARY_TORCH_IMPL_FUNC(func_out, func_stub) \\
    TORCH_IMPL_FUNC(func_out) (const Tensor& self, const Tensor& result) { ... }
    CREATE_UNARY_TORCH_IMPL_FUNC(tanh_out, tanh_stub)

Without expansion ``tanh_out`` has no definition anywhere, and invocations such as
``SMALL_INDEX(scalar_t, index_t, unsigned int, 1, 1, -2);`` (type arguments) make
tree-sitter lose the whole enclosing function. So every invocation of a same-file
function-like macro is replaced in place by its expansion (``#``, ``##``,
``__VA_ARGS__``, nested same-file macros; ``#define``/``#undef`` order respected,
conditional compilation ignored). The expansion is written on one line and the
invocation's newlines follow it, so every later line keeps its number and facts from
the expansion land on the invocation's line.

A same-file macro that pastes its parameters into names (``Tensor _cast_##n(...)``) is
often handed by name to a macro of another file that calls it once per scalar type
(``AT_FORALL_SCALAR_TYPES_AND3(Bool, Half, BFloat16, DEFINE_CAST_OP)``). That list is not
in this file, so such an invocation is replaced by one expansion with each parameter
standing for itself (``PASTE`` markers): the definition it makes is kept, at the
invocation's line, under the pattern of its names (``_cast_##n``, see ``unpaste``).
"""

from __future__ import annotations

import re
from typing import NamedTuple

from .cpp_text import call_args, strip_comments

_DIRECTIVE = re.compile(r"^[ \t]*#[ \t]*(\w*)(?:[^\n]*\\\r?\n)*[^\n]*", re.M)
_DEFINE = re.compile(r"#[ \t]*define[ \t]+(\w+)(\()?([^)]*\))?(.*)", re.S)
_UNDEF = re.compile(r"#[ \t]*undef[ \t]+(\w+)")
_CONT = re.compile(r"\\\r?\n")
_TOKEN = re.compile(
    r'(?P<str>"(?:\\.|[^"\\\n])*"|\'(?:\\.|[^\'\\\n])*\')'
    r"|(?P<paste>\s*##\s*)|#\s*(?P<hash>[A-Za-z_]\w*)|(?P<id>[A-Za-z_]\w*)|(?P<other>.)",
    re.S,
)
_NEWLINES = re.compile(r"[\r\n]")
_PASTE = "\x00"
_MAX_DEPTH = 8
_MAX_SIZE = 100_000  # one expansion
_MAX_TOTAL = 1_000_000  # all expansions of a file (PyTorch's largest: 160 kB): stops exponential macros
_BUDGET = "\x00budget"
PASTE = "__PASTE_"  # a macro parameter standing for itself: "__PASTE_n__" (see unpaste)
_PASTED = re.compile(r"__PASTE_(\w+?)__")
_FOREIGN_CALL = re.compile(r"([A-Za-z_]\w*)\s*$")


def unpaste(name: str) -> str:
    """``_cast___PASTE_n__`` -> ``_cast_##n##``, ``__PASTE_op___out`` -> ``##op##_out``: the names a pasting
    macro makes, each parameter between two ``##`` so that a pattern says which parts are parameters
    (``_cast_##n`` alone would not: graph/symbols.py pasted_match matches names against them)."""
    return _PASTED.sub(r"##\1##", name)


class Macro(NamedTuple):
    params: tuple[str, ...]
    variadic: str  # "" or the name standing for the variadic tail ("__VA_ARGS__")
    body: str
    plain: bool = False  # object-like ("#define NAME body"): used without parentheses


class ArgLines(NamedTuple):
    """Where a multi-line argument of an invocation sits in its one-line expansion, and the lines it was written on
    (Note [Arguments keep their lines])."""

    start: int  # in the expanded text
    end: int
    line: int  # the line its first character was written on
    breaks: tuple[int, ...]  # offsets (from start) just past each of its newlines


class Span(NamedTuple):
    start: int  # in the expanded text
    end: int
    macro: str
    lines: int  # newlines the invocation spanned (they follow the expansion)
    args: tuple[ArgLines, ...] = ()  # its multi-line arguments' copies in the expansion, with their lines


# Note [Arguments keep their lines]
# An expansion is written on one line so that the lines after it keep their numbers, but an argument can be code of
# many lines: the lambda a local dispatch macro runs (ForeachReduceOp.cu's AT_DISPATCH_OUT_DTYPES(..., [&]() {...}),
# TriangularOps.cu's BOOL_SWITCH(..., [&] { kernel<<<...>>>(...); })). Each copy of such an argument found verbatim
# in the expansion is recorded with the lines it was written on, and a fact inside it takes the line its text was
# written on (the walker's line()), not the invocation's: the launches at ForeachReduceOp.cu:520/528/536, not three
# times :475. A copy a nested macro rewrote keeps the invocation's line, as before.


def _arg_lines(text: str, open_idx: int, close_idx: int, args: list[str], expansion: str,
               at: int) -> tuple[ArgLines, ...]:
    """The multi-line arguments of the invocation whose ``(`` and ``)`` are at ``open_idx`` / ``close_idx`` of
    ``text``, as copies in its flattened ``expansion`` (written at ``at`` of the expanded text)."""
    out: list[ArgLines] = []
    cursor = open_idx + 1
    for stripped in args:  # as split_args returns them: whitespace around each taken off
        raw_at = text.find(stripped[:40], cursor, close_idx) if "\n" in stripped else -1
        if raw_at < 0:
            continue
        cursor = raw_at + len(stripped)
        clean = strip_comments(stripped)
        if clean.count("\n") != stripped.count("\n"):
            continue  # a comment took newlines with it: the lines inside would shift
        flat = _NEWLINES.sub(" ", clean)
        line = text.count("\n", 0, raw_at) + 1
        breaks = tuple(i + 1 for i, ch in enumerate(clean) if ch == "\n")
        pos = expansion.find(flat)
        while pos >= 0:
            out.append(ArgLines(at + pos, at + pos + len(flat), line, breaks))
            pos = expansion.find(flat, pos + len(flat))
    return tuple(sorted(out))


def expand_same_file(text: str) -> tuple[str, list[Span]]:
    """Text with same-file macro invocations expanded, and where the expansions sit."""
    events: list[tuple[int, int, str, Macro | None]] = []  # (start, end, name, macro|None=undef)
    names: set[str] = set()
    for m in _DIRECTIVE.finditer(text):
        kind = m.group(1)
        if kind == "define":
            d = _DEFINE.match(m.group(0).lstrip())
            if d:
                mac = _parse_define(d) if d.group(2) else _statement_macro(d)  # other object-like ones shadow
                events.append((m.start(), m.end(), d.group(1), mac))
                if mac is not None:
                    names.add(d.group(1))
                continue
        elif kind == "undef":
            d = _UNDEF.match(m.group(0).lstrip())
            if d:
                events.append((m.start(), m.end(), d.group(1), None))
                continue
        events.append((m.start(), m.end(), "", None))  # other directive: never expand in it
    if not names:
        return text, []
    pasters = {name: mac for _, _, name, mac in events if mac is not None and not mac.plain and "##" in mac.body}
    if pasters:
        text, events = _x_macro_uses(text, pasters, events, names)
    plain = {n for _, _, n, mac in events if mac is not None and mac.plain}
    pat = _names_re({n for _, _, n, mac in events if mac is not None and not mac.plain}, plain)
    memo: dict = {_BUDGET: _MAX_TOTAL}  # body tokens by body, and the characters left to expand
    active: dict[str, Macro] = {}
    out: list[str] = []
    spans: list[Span] = []
    out_len = 0
    pos = 0
    ei = 0
    for m in pat.finditer(text):
        start = m.start()
        if start < pos:
            continue
        while ei < len(events) and events[ei][1] <= start:
            _, _, name, mac = events[ei]
            if name:
                if mac is None:
                    active.pop(name, None)
                else:
                    active[name] = mac
            ei += 1
        if ei < len(events) and events[ei][0] <= start:
            continue  # inside a directive
        name = m.group(1) or m.group(2)
        if name not in active or _in_comment_or_string(text, start) or active[name].plain != bool(m.group(2)):
            continue
        if memo[_BUDGET] < 0:
            break
        raw, end = call_args(text, m.end() - 1) if m.group(1) else ([], m.end())
        args = [strip_comments(a) for a in raw]  # the expansion goes on one line
        try:
            expansion = _expand(name, args, active, pat, memo, frozenset(), 0)
        except RecursionError:
            continue
        expansion = _NEWLINES.sub(" ", expansion)
        piece = text[pos:start]
        out.append(piece)
        out_len += len(piece)
        out.append(expansion)
        nl = "\n" * text.count("\n", start, end)
        copies = _arg_lines(text, m.end() - 1, end - 1, raw, expansion, out_len) if nl and m.group(1) else ()
        spans.append(Span(out_len, out_len + len(expansion), name, len(nl), copies))
        out_len += len(expansion)
        out.append(nl)
        out_len += len(nl)
        pos = end
    if not spans:
        return text, []
    out.append(text[pos:])
    return "".join(out), spans


def _x_macro_uses(text: str, pasters: dict[str, Macro], events: list, local: set[str]) -> tuple[str, list]:
    """Rewrite ``OTHER(..., PASTER)`` (OTHER not of this file) as ``PASTER(__PASTE_a__, ...)``, newlines kept,
    so the main pass expands it once with each parameter standing for itself. Directive lines are kept. An OTHER
    of this file (``local``: TensorOperators.cpp's ``AT_FORALL_OPERATORS(DEFINE_COMPARATOR)``, a list of ``_(ne)``
    lines) is left to the main pass, which expands the list and each of its uses with its real arguments."""
    hits = re.compile(r"\b(" + "|".join(map(re.escape, pasters)) + r")\b(?!\s*\()")
    edits: list[tuple[int, int, str]] = []
    ei = 0
    for m in hits.finditer(text):
        while ei < len(events) and events[ei][1] <= m.start():
            ei += 1
        if ei < len(events) and events[ei][0] <= m.start():
            continue  # inside a directive
        if edits and m.start() < edits[-1][1]:
            continue
        open_at = _enclosing_paren(text, m.start())
        if open_at < 0:
            continue
        callee = _FOREIGN_CALL.search(text, max(0, open_at - 80), open_at)
        if callee is None or callee.group(1) in pasters or callee.group(1) in local or not callee.group(1).isupper():
            continue
        args, end = call_args(text, open_at)
        if m.group(1) not in (a.strip() for a in args):
            continue
        mac = pasters[m.group(1)]
        params = [*mac.params, *([mac.variadic] if mac.variadic else [])]
        call = f"{m.group(1)}({', '.join(f'{PASTE}{p}__' for p in params)})"
        edits.append((callee.start(), end, call + "\n" * text.count("\n", callee.start(), end)))
    if not edits:
        return text, events
    out, pos = [], 0
    for start, end, new in edits:
        out += [text[pos:start], new]
        pos = end
    out.append(text[pos:])
    new_text = "".join(out)
    # directive offsets after an edit move by the edits before them
    shifted = []
    for start, end, name, mac in events:
        delta = sum(len(new) - (e - s) for s, e, new in edits if e <= start)
        shifted.append((start + delta, end + delta, name, mac))
    return new_text, shifted


def _enclosing_paren(text: str, pos: int, limit: int = 4000) -> int:
    """Offset of the unmatched ``(`` that encloses ``pos`` (within ``limit`` characters), or -1."""
    depth = 0
    lo = max(0, pos - limit)
    for i in range(pos - 1, lo - 1, -1):
        ch = text[i]
        if ch == ")":
            depth += 1
        elif ch == "(":
            if depth == 0:
                return i
            depth -= 1
        elif ch in ";{}":
            return -1
    return -1


def _parse_define(d: re.Match) -> Macro:
    lines = [strip_comments(ln) for ln in _CONT.split(d.group(4))]  # "//" ends at the physical line
    body = strip_comments(" ".join(lines)).strip()
    # the parameter list may be continued over lines too: "#define M(  \\" "    a, b)  \\"
    params = [p.strip() for p in _CONT.sub(" ", (d.group(3) or ")")[:-1]).split(",") if p.strip()]
    variadic = ""
    if params and params[-1].endswith("..."):
        last = params.pop()[:-3].strip()
        variadic = last or "__VA_ARGS__"
    return Macro(tuple(params), variadic, body)


def _in_comment_or_string(text: str, pos: int) -> bool:
    line_start = text.rfind("\n", 0, pos) + 1
    prefix = text[line_start:pos]
    return "//" in prefix or prefix.count('"') % 2 == 1 or prefix.lstrip().startswith("*")


def _names_re(names: set[str], plain: set[str]) -> re.Pattern:
    """Group 1: a function-like macro's name before its "("; group 2: an object-like one's name."""
    def alts(ns: set[str]) -> str:
        return "|".join(sorted((re.escape(n) for n in ns), key=len, reverse=True)) or r"(?!x)x"
    return re.compile(r"\b(?:(" + alts(names) + r")\s*\(|(" + alts(plain) + r")\b(?!\s*\())")


_CALLISH = re.compile(r"\w\s*\(")


def _statement_macro(d: re.Match) -> Macro | None:
    """An object-like macro that stands for statements with calls or a launch (DepthwiseConv3d.cu's
    ``DWCONV3D_FORWARD_DISPATCH_OTHERS``, a ``<<<>>>`` launch in braces) is expanded like a function-like one;
    constants and other object-like macros are not (they only shadow a function-like one of the name)."""
    rest = (d.group(3) or "") + (d.group(4) or "")  # no "(" after the name: all of it is the body
    body = strip_comments(" ".join(strip_comments(ln) for ln in _CONT.split(rest))).strip()
    if "<<<" in body or ";" in body and _CALLISH.search(body):
        return Macro((), "", body, True)
    return None


def _tokens(mac: Macro, memo: dict) -> list[tuple[str, str]]:
    """The macro body as (kind, text) tokens, tokenized once per file."""
    toks = memo.get(mac.body)
    if toks is None:
        toks = []
        for t in _TOKEN.finditer(mac.body):
            kind = t.lastgroup
            toks.append((kind, t.group("hash") if kind == "hash" else t.group(0)))
        memo[mac.body] = toks
    return toks


def _expand(name: str, args: list[str], macros: dict[str, Macro], pat: re.Pattern, memo: dict,
            active: frozenset, depth: int) -> str:
    mac = macros[name]
    if len(args) == 1 and not args[0] and not mac.params:
        args = []
    binding = dict(zip(mac.params, args, strict=False))  # fewer args: the rest are empty; more: variadic
    for p in mac.params[len(args):]:
        binding[p] = ""
    if mac.variadic:
        binding[mac.variadic] = ", ".join(args[len(mac.params):])
    pieces: list[str] = []
    for kind, tok in _tokens(mac, memo):
        if kind == "id":
            pieces.append(binding.get(tok, tok))
        elif kind == "hash":
            if tok in binding:
                pieces.append('"' + binding[tok].replace("\\", "\\\\").replace('"', '\\"') + '"')
            else:
                pieces.append("#" + tok)
        elif kind == "paste":
            pieces.append(_PASTE)
        else:
            pieces.append(tok)
    out = "".join(pieces)
    if _PASTE in out:
        out = re.sub(r"\s*\x00\s*", "", out)
    memo[_BUDGET] -= len(out)
    if memo[_BUDGET] < 0:
        return out
    return _rescan(out, macros, pat, memo, active | {name}, depth + 1)


def _rescan(text: str, macros: dict[str, Macro], pat: re.Pattern, memo: dict, active: frozenset,
            depth: int) -> str:
    """Expand the macros an expansion invokes (not those being expanded: no recursion)."""
    if depth > _MAX_DEPTH or len(text) > _MAX_SIZE:
        return text
    parts: list[str] = []
    pos = 0
    for m in pat.finditer(text):
        name = m.group(1) or m.group(2)
        if m.start() < pos or name in active or name not in macros or macros[name].plain != bool(m.group(2)):
            continue
        args, end = call_args(text, m.end() - 1) if m.group(1) else ([], m.end())
        parts.append(text[pos : m.start()])
        parts.append(" " + _expand(name, args, macros, pat, memo, active, depth) + " ")
        pos = end
    if not parts:
        return text
    parts.append(text[pos:])
    return "".join(parts)
