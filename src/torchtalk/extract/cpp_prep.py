"""Source clean-up before parsing: blank macros that tree-sitter cannot parse.

Export/attribute macros (``TORCH_API``, ``C10_HOST_DEVICE``, ``C10_LAUNCH_BOUNDS_1(128)``)
make tree-sitter produce ERROR nodes that can swallow a definition's name. They are
replaced by spaces of the same length, so byte offsets and line numbers stay valid.
The CUDA qualifiers among them are remembered by position, since they decide whether a
definition is a ``__global__`` kernel or a device function.

Objective-C++ gets a line-preserving rewrite of its own (cpp_objc). ``resolve_conditionals``
keeps one branch of ``#if`` groups that split a brace pair, for files that tree-sitter
otherwise loses.
"""

from __future__ import annotations

import re

# one level of nested parentheses; string literals may hold any: C10_DEPRECATED_MESSAGE("... f(g()) ...")
_ARGS = r'\s*\((?:"(?:\\.|[^"\\\n])*"|[^()"]|\([^()]*\))*\)'
_BLANK = re.compile(
    rb"\b(?=[A-Z_])(?:"  # the lookahead only makes the scan faster
    rb"(?P<glob>__global__)"
    rb"|(?P<dev>__device__|C10_DEVICE|C10_HOST_DEVICE)"
    rb"|[A-Z][A-Z0-9_]*_API|[A-Z][A-Z0-9]*_(?:EXPORT|IMPORT|HIDDEN)"
    rb"|C10_HOST|__host__|__forceinline__|__inline__|__noinline__"
    rb"|C10_ALWAYS_INLINE(?:_ATTRIBUTE)?|C10_NOINLINE|C10_UNUSED|C10_NODISCARD|C10_DEPRECATED"
    rb"|C10_HOST_CONSTEXPR(?:_EXCEPT_WIN_CUDA)?|C10_CONSTEXPR_EXCEPT_WIN_CUDA|GPU_LAMBDA"
    rb"|C10_LAUNCH_BOUNDS_0|__ubsan_ignore_\w+__|C10_NOSANITIZE\w*|C10_EXPORT"
    rb"|(?:C10_LAUNCH_BOUNDS_[12]|__launch_bounds__|C10_DEPRECATED_MESSAGE|C10_ALIGN"
    rb"|C10_(?:CLANG|GCC)?_?DIAGNOSTIC_\w+)" + _ARGS.encode() +
    rb"|C10_(?:CLANG|GCC)?_?DIAGNOSTIC_\w+"
    rb")(?![\w])"
)
_NL = re.compile(rb"[^\n]")

_PLACEHOLDER = re.compile(rb"\$\{\w+\}")
_CLOSE_BRACE = re.compile(rb"\)([ \t\r\n]+)\}")
_MACRO_BEFORE = re.compile(rb"(?:^|[;{}:)]|\belse)\s*[A-Z][A-Z0-9_]*\s*$")


# Note [Statement macros]
# ~~~~~~~~~~~~~~~~~~~~~~~
# A macro written alone on its line as a statement (``HANDLE_TH_ERRORS`` / ``END_HANDLE_TH_ERRORS`` in every Python
# binding, functorch's ``PY_BEGIN``) expands, in another file, to the scaffolding of a try block. Unexpanded,
# tree-sitter reads it as the type of what follows: ``HANDLE_TH_ERRORS if (check_has_torch_function(self)) {...}``
# becomes a function ``if`` defined inside the binding, which then loses the calls of that block; the pair inside a
# block cost the functions after it (``THPVariable___eq__`` read as nested in ``THPVariable_bool_scalar``).
# Such a line is blanked: a name in capitals with an underscore, alone on its line, between two statements (after
# ``{``, ``}``, ``;`` or ``:``, before a name, a brace, a directive or a comment). The braces of the try block the
# pair stands for open and close together, so blanking both keeps the code balanced. Enumerators (after a ``,``) and
# a macro call whose ``(`` is on the next line are left alone.
_STATEMENT_MACRO = re.compile(rb"(?m)^[ \t]*[A-Z][A-Z0-9]*(?:_[A-Z0-9]+)+[ \t]*\r?$")
_STATEMENT_NEXT = frozenset(b"abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ_{}#/")


# "if C10_LIKELY (x) {": a macro that writes the condition's parentheses itself; without its name the if parses.
_IF_MACRO = re.compile(rb"\bif[ \t]+([A-Z][A-Z0-9]*(?:_[A-Z0-9]+)+)[ \t]*\(")


def blank_statement_macros(data: bytes) -> bytes:
    """Blank the statement macros of Note [Statement macros], and a macro that stands for an ``if``'s parentheses
    (same length: offsets and lines stay)."""
    ifs = [m.span(1) for m in _IF_MACRO.finditer(data)  # not a directive's condition: "#if AT_MKL_ENABLED()"
           if not data[data.rfind(b"\n", 0, m.start()) + 1:m.start()].strip().startswith(b"#")]
    return _blank(data, ifs + [m.span() for m in _STATEMENT_MACRO.finditer(data) if _between_statements(data, m)])


def _between_statements(data: bytes, m: re.Match) -> bool:
    """The line ``m`` matched follows ``{ } ; :`` (or the file's start) and comes before a name, a brace, a
    directive or a comment."""
    i = m.start() - 1
    while i >= 0 and data[i] in b" \t\r\n":
        i -= 1
    j = m.end()
    while j < len(data) and data[j] in b" \t\r\n":
        j += 1
    return (i < 0 or data[i] in b"{};:") and j < len(data) and data[j] in _STATEMENT_NEXT


def _blank(data: bytes, spans: list[tuple[int, int]]) -> bytes:
    """``data`` with every byte of each span but its line ends made a space (offsets and lines stay); ``data``
    itself when there is no span."""
    if not spans:
        return data
    out = bytearray(data)
    for s, e in spans:
        out[s:e] = _NL.sub(b" ", data[s:e])
    return bytes(out)


# A temporary of a dependent type passed as an argument, ``gpu_reduce_kernel<scalar_t, out_t, 2>(iter, ops,
# typename ops_t::acc_t{});``, makes tree-sitter read the statement as a function definition nested in the one that
# holds it (``acc_t`` a parameter, ``{}`` its body), and the call is lost: std/var's CUDA kernel reached no reduction.
# Without the keyword (``ops_t::acc_t{}``) the call parses; the keyword says nothing a fact keeps.
_TYPENAME_TEMPORARY = re.compile(rb"[(,]\s*(typename)\s+[A-Za-z_]\w*(?:<[^<>;{}()]*>)?(?:::\w+(?:<[^<>;{}()]*>)?)+"
                                 rb"\s*[{(]")


def blank_typename_temporaries(data: bytes) -> bytes:
    """Blank ``typename`` before an argument that constructs a dependent type's temporary (offsets stay)."""
    return _blank(data, [m.span(1) for m in _TYPENAME_TEMPORARY.finditer(data)]) if b"typename" in data else data


# An empty last argument of a macro call, ``PYBIND11_OVERRIDE(int, ProcessGroup, getRank, /* name */\n);``, is no
# C++ tree-sitter can read: it lost the class around it (PyProcessGroup's methods read as defined in getGroupDesc).
# Its comma is blanked (strings, raw strings and comments are skipped: a message or docstring keeps its text).
_EMPTY_LAST_ARG = re.compile(rb'R"([^()\\\s"]{0,16})\((?s:.*?)\)\1"|"(?:\\.|[^"\\\n])*+"|//[^\n]*+|/\*(?s:.*?)\*/'
                             rb'|,(?=(?:\s|/\*(?:[^*]|\*(?!/))*+\*/|//[^\n]*+)*+\))')


def blank_empty_last_arguments(data: bytes) -> bytes:
    """Blank the comma before an empty last argument (offsets stay)."""
    return _blank(data, [m.span() for m in _EMPTY_LAST_ARG.finditer(data) if data[m.start()] == 0x2C])


def terminate_macro_statements(data: bytes) -> bytes:
    """``{ ...; TORCH_CHECK(x, "...")\n}``: a macro statement written without its ';' before a block's end
    makes tree-sitter read the whole function as a declaration and lose it. Such a ')' gets its ';' (in
    place of the first blank after it, so offsets stay)."""
    if b")" not in data:
        return data
    out = None
    for m in _CLOSE_BRACE.finditer(data):
        close = m.start()
        open_at = _open_paren(data, close)
        if open_at < 0 or not _MACRO_BEFORE.search(data, max(0, open_at - 120), open_at):
            continue
        if out is None:
            out = bytearray(data)
        name = open_at
        while name > 0 and data[name - 1] in b" \t\r\n":
            name -= 1
        while name > 0 and (chr(data[name - 1]).isalnum() or data[name - 1] == 0x5F):
            name -= 1
        _terminate(out, name, close, m.start(1), m.end(1))
    return bytes(out) if out is not None else data


def _terminate(out: bytearray, name: int, close: int, blank: int, brace: int) -> None:
    """Put a ';' after the ')' at ``close`` of the macro statement whose name starts at ``name``, keeping
    every line break on its line (lines are counted from the text): the blanks from ``blank`` to the block's
    '}' at ``brace`` give up one space or tab for it; else the ')' moves one byte left over a blank or the
    last character of a string literal before it; else the statement moves one byte left over the
    indentation before it. A statement at column 0 with none of these (a registration at namespace scope,
    where tree-sitter loses nothing) is left as it is."""
    run = bytes(out[blank:brace])
    k = next((i for i, ch in enumerate(run) if ch in b" \t"), -1)
    j = close - 1
    if k >= 0:
        out[blank:brace] = b";" + run[:k] + run[k + 1:]
    elif out[j] in b" \t":
        out[j], out[close] = ord(")"), ord(";")
    elif out[j] == 0x22 and j >= 2 and out[j - 1] not in b'"\\\n' and out[j - 2] != 0x5C:
        out[j - 1], out[j], out[close] = 0x22, ord(")"), ord(";")
    elif name > 0 and out[name - 1] in b" \t":
        out[name - 1:close + 1] = out[name:close + 1] + b";"


def _open_paren(data: bytes, close: int, limit: int = 3000) -> int:
    """Offset of the '(' matching the ')' at ``close`` (strings on the way skipped), or -1."""
    depth = 0
    i = close
    lo = max(0, close - limit)
    while i >= lo:
        ch = data[i]
        if ch == 0x29:  # )
            depth += 1
        elif ch == 0x28:  # (
            depth -= 1
            if depth == 0:
                return i
        elif ch == 0x22:  # a string: back to its opening quote
            j = data.rfind(b'"', lo, i)
            while j > 0 and data[j - 1] == 0x5C:
                j = data.rfind(b'"', lo, j - 1)
            if j < 0:
                return -1
            i = j
        elif ch in (0x3B, 0x7B, 0x7D) and depth <= 1 and i != close:  # ; { } outside parentheses: too far
            if depth == 0:
                return -1
        i -= 1
    return -1


# A directive continued over lines, and the strings and block comments in it.
_CONTINUED = re.compile(rb"^[ \t]*#[^\n]*\\\r?\n(?:[^\n]*\\\r?\n)*[^\n]*", re.M)
_STRING_OR_COMMENT = re.compile(rb'"(?:\\.|[^"\\\n])*"|/\*.*?\*/', re.S)
_KEEP_CONT = re.compile(rb"(?!\\\r?\n)[^\n\r]")  # what a blanked comment loses: not a line end or its backslash


def blank_directive_comments(data: bytes) -> bytes:
    """``#define RUN_K(...) f(a, \\`` ``/* a note */ \\`` ``b)``: a block comment in a directive's continued
    lines ends tree-sitter's reading of the directive there, so the rest of the body parses as code and can
    close the enclosing function early (TensorTopK.cu lost every call after its in-function macros). The
    preprocessor reads such a comment as one blank, so it is blanked (newlines kept, offsets unchanged)."""
    if b"/*" not in data or b"\\\n" not in data and b"\\\r\n" not in data:
        return data
    out = None
    for m in _CONTINUED.finditer(data):
        if b"/*" not in m.group(0):
            continue
        for c in _STRING_OR_COMMENT.finditer(data, m.start(), m.end()):
            if c.group(0)[:1] == b"/":
                if out is None:
                    out = bytearray(data)
                out[c.start():c.end()] = _KEEP_CONT.sub(b" ", c.group(0))
    return bytes(out) if out is not None else data


def blank_placeholders(data: bytes) -> bytes:
    """Codegen templates (aten/src/ATen/templates/*) hold ``${name}`` where torchgen writes code: blanked,
    so the hand-written code around them (class Tensor's own methods) parses as the generated file will."""
    return _PLACEHOLDER.sub(lambda m: b" " * len(m.group(0)), data) if b"${" in data else data


def blank_macros(data: bytes) -> tuple[bytes, list[int], list[int]]:
    """Return (blanked source, positions of ``__global__``, positions of device qualifiers)."""
    glob: list[int] = []
    dev: list[int] = []

    def repl(m: re.Match) -> bytes:
        line_start = data.rfind(b"\n", 0, m.start()) + 1
        if data[line_start:m.start()].lstrip()[:1] == b"#":  # "#ifdef USE_VULKAN_API", "#define X_API"
            return m.group(0)
        if m.lastgroup == "glob":
            glob.append(m.start())
        elif m.lastgroup == "dev":
            dev.append(m.start())
        return _NL.sub(b" ", m.group(0))

    return _BLANK.sub(repl, data), glob, dev


_COND = re.compile(rb"^[ \t]*#[ \t]*(if|ifdef|ifndef|elif|else|endif)\b(?:[^\n]*\\\r?\n)*[^\n]*", re.M)
_IF0 = re.compile(rb"#[ \t]*if[ \t]+0\b")


# A conditional group inside a chain of member calls: a branch that goes on with ``.def(`` or ``->f(``.
_CHAIN = re.compile(rb"[ \t]*\r?\n[ \t]*(?:\.|->)[ \t]*[A-Za-z_]")
_CHAIN_COND = re.compile(rb"^[ \t]*#[ \t]*(?:if|ifdef|ifndef|elif|else)\b[^\n]*" + _CHAIN.pattern, re.M)


def resolve_chain_conditionals(data: bytes) -> bytes:
    """Join each conditional group inside a chain of member calls into the chain: its directives are blanked.

    pybind11 bindings are long ``.def(...)`` chains, and a group in the middle of one (``#if
    defined(BUILDING_TESTS)`` ``.def("_jit_run_cpp_tests", ...)`` ``#else`` ... ``#endif`` in
    torch/csrc/jit/python/init.cpp) is not a statement, so tree-sitter splits the chain there and the calls
    after it lose their receiver (the module the bindings are made on). Of such a group only the directives
    are blanked (and ``#if 0`` branches): the branches, each a run of member calls, then read as one chain,
    and the calls of every branch are kept."""
    return resolve_conditionals(data, chains=True) if _CHAIN_COND.search(data) else data


def resolve_conditionals(data: bytes, chains: bool = False) -> bytes:
    """Keep one branch of each ``#if``/``#elif``/``#else`` group whose branches are not
    balanced, and blank the rest (with ``chains``: see ``resolve_chain_conditionals``).

    Used when tree-sitter loses much of a file to conditionals that split a statement
    or a brace pair (``#if A`` ``void f(int a) {`` ``#else`` ``void f() {`` ``#endif``).
    Groups whose branches each balance their braces and parentheses parse well as they
    are and are left alone, so alternative definitions survive. Of an unbalanced group
    the longest branch is kept (real code tends to be longer than the stub in the other
    branch); ``#if 0`` branches never are. Newlines stay, so line numbers do not move.
    """
    groups: list[list] = []  # open groups: [branches [(start, end, is_if0)], branch start, if0, directives]
    spans: list[tuple[int, int]] = []  # byte ranges to blank
    for m in _COND.finditer(data):
        kind = m.group(1)
        if kind in (b"if", b"ifdef", b"ifndef"):
            groups.append([[], m.end(), bool(_IF0.match(m.group(0).lstrip())), [(m.start(), m.end())]])
            continue
        if not groups:
            continue
        g = groups[-1]
        g[0].append((g[1], m.start(), g[2]))
        g[1], g[2] = m.end(), False
        g[3].append((m.start(), m.end()))
        if kind != b"endif":
            continue
        groups.pop()
        branches = g[0]
        if chains:  # the directives go and every branch stays (but #if 0's): one chain of all the calls
            if any(_CHAIN.match(data, s) for s, _e, _ in branches):
                spans.extend(g[3])
                spans.extend((s, e) for s, e, if0 in branches if if0)
            continue
        if all(_balanced(data[s:e]) for s, e, _ in branches):
            continue
        keep = max((b for b in branches if not b[2]), key=lambda b: b[1] - b[0], default=None)
        spans.extend(g[3])
        spans.extend((s, e) for s, e, if0 in branches if (s, e, if0) != keep)
    return _blank(data, spans)


def _balanced(branch: bytes) -> bool:
    return branch.count(b"{") == branch.count(b"}") and branch.count(b"(") == branch.count(b")")
