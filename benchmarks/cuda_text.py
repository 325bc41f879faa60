"""What a PyTorch tree says about its GPU code, read from the text alone (no TorchTalk, no parser).

bench_cuda_census.py measures TorchTalk's ``cuda_kernels`` against this, so nothing here may
come from TorchTalk's extractor: it is a deliberately plain scan, written to be checked by eye.

- ``strip``: comments and the inside of string literals (raw strings too) blanked, newlines kept,
  so offsets and line numbers stay those of the file.
- ``scan_file``: in stripped text, the ``#define``s (then blanked), every function body found by
  brace matching (namespaces and class bodies are containers; a TORCH_IMPL_FUNC(x) body is named
  x), every ``__global__`` definition (over lines, after ``template <...>``, through
  ``__launch_bounds__``/``C10_LAUNCH_BOUNDS_*``; declarations and kernels inside code strings are
  not definitions), every ``<<<`` launch with the name before it, and DispatchStub registrations.
- ``Tree``: all scanned files of a subtree, and a crude call graph by name: a body reaches every
  function whose short name it mentions, the bodies of same-file macros it invokes, and the CUDA
  registrations of the stubs it names. It over-approximates on purpose (it is used to say who may
  launch a kernel, and what an op's CUDA kernel may lead to), never to count hits.
"""

from __future__ import annotations

import os
import re
from bisect import bisect_right
from collections import defaultdict
from dataclasses import dataclass, field

IDENT = re.compile(r"[A-Za-z_]\w*")
_LEX = re.compile(
    r'(?P<raw>\b(?:u8|[uUL])?R"(?P<delim>[^()\\\s"]{0,16})\()'
    r"|(?P<line>//[^\n]*)"
    r"|(?P<block>/\*.*?\*/)"
    r'|(?P<str>"(?:\\.|[^"\\\n])*")'
    r"|(?P<chr>(?<![\w'])'(?:\\.|[^'\\\n]){1,8}')",
    re.S,
)
_NONNL = re.compile(r"[^\n]")
_DIRECTIVE = re.compile(r"^[ \t]*#[ \t]*(\w*)(?:[^\n]*\\\n)*[^\n]*", re.M)
_CONDITIONAL = re.compile(r"^[ \t]*#[ \t]*(?:if|ifdef|ifndef|elif|else|endif)\b[^\n]*", re.M)
_DEFINE = re.compile(r"#[ \t]*define[ \t]+(\w+)(\([^)]*\))?(.*)", re.S)
_CONTAINER = re.compile(r"\b(namespace|class|struct|union|enum|extern)\b")
_ATTR_CALL = re.compile(r"^(?:__\w+__|[A-Z][A-Z0-9_]*)$")  # __launch_bounds__(..), C10_LAUNCH_BOUNDS_1(..), MACRO(..)
_GLOBAL = re.compile(r"\b__global__\b")
_CALL = re.compile(r"(\.|->|\b(\w+)\s*::)?\s*\b([A-Za-z_]\w*)\s*(?:<(?:[^;{}()]|\([^()]*\)){0,200}?>\s*)?\(")
_ADDRESS = re.compile(r"(?<![&\w)\]])&\s*(?:\w+\s*::\s*)*([A-Za-z_]\w*)\s*[;,)]")
_FOREIGN = frozenset({"std", "thrust", "cub", "c10", "cutlass", "cute", "fmt"})


def calls_in(code: str) -> tuple[set[str], set[str]]:
    """(plain or qualified calls, member calls) in a piece of stripped code; calls into the standard library
    and other libraries (std::get, thrust::sort) are not calls of the tree's functions of that name."""
    plain: set[str] = set()
    member: set[str] = set()
    for m in _CALL.finditer(code):
        if m.group(2) in _FOREIGN:
            continue
        (member if m.group(1) in (".", "->") else plain).add(m.group(3))
    plain.update(m.group(1) for m in _ADDRESS.finditer(code))  # auto launch = &run_mha_bwd; launch(...)
    return plain, member
_LAUNCH = re.compile(r"<<<")
_IMPL = re.compile(r'\bm\.impl\(\s*(?:TORCH_SELECTIVE_NAME\()?\s*"([\w:.]+)"\s*\)?\s*,\s*'
                   r'(?:TORCH_FN\(|c10::DispatchKey::\w+\s*,\s*)?\s*(?:TORCH_FN\()?\s*&?\s*([\w:]+)')
_REG = re.compile(r"\b(REGISTER_\w*DISPATCH)\s*\(\s*(\w+)\s*,\s*&?\s*([\w:]+)")
_TRAILER = re.compile(r"^(?:\s|const\b|volatile\b|override\b|final\b|mutable\b|noexcept\b(?:\s*\([^)]*\))?|&&?|"
                      r"->[^{;=]*|throw\s*\(\s*\)|:(?!:)[^;]*|[A-Z][A-Z0-9_]+\b)*$", re.S)


def strip(text: str) -> str:
    """Comments and string/char literal contents as blanks; newlines and offsets kept."""
    out: list[str] = []
    pos = 0
    while True:
        m = _LEX.search(text, pos)
        if m is None:
            out.append(text[pos:])
            return "".join(out)
        out.append(text[pos:m.start()])
        if m.lastgroup == "raw" or m.group("raw"):
            close = text.find(")" + (m.group("delim") or "") + '"', m.end())
            end = len(text) if close < 0 else close + len(m.group("delim") or "") + 2
            out.append('""' + _NONNL.sub(" ", text[m.start() + 2:end]))
            pos = end
            continue
        tok = m.group(0)
        if m.lastgroup in ("str", "chr"):
            out.append(tok[0] + _NONNL.sub(" ", tok[1:-1]) + tok[-1])
        else:
            out.append(_NONNL.sub(" ", tok))
        pos = m.end()


def match(text: str, i: int, open_ch: str, close_ch: str) -> int:
    """Offset just past the bracket closing the one at ``i`` (or len(text))."""
    depth = 0
    for j in range(i, len(text)):
        c = text[j]
        if c == open_ch:
            depth += 1
        elif c == close_ch:
            depth -= 1
            if depth == 0:
                return j + 1
    return len(text)


@dataclass
class Macro:
    name: str
    line: int
    body: str
    path: str
    params: tuple[str, ...] = ()


@dataclass
class Func:
    name: str  # short name; "x" for TORCH_IMPL_FUNC(x)
    qual: str  # with enclosing namespaces/classes
    path: str
    line: int
    start: int  # body offsets in the file
    end: int
    member: bool = False  # defined in a class body
    ids: set[str] = field(default_factory=set)  # every identifier of the body
    calls: set[str] = field(default_factory=set)  # names called as f(..), ns::f(..), f<T>(..)
    mcalls: set[str] = field(default_factory=set)  # names called as x.f(..), x->f(..)
    launches: list[tuple[str, int]] = field(default_factory=list)  # (kernel name, line) of "<<<" in the body
    libs: set[str] = field(default_factory=set)  # libraries the body calls (LIBRARY)


@dataclass
class Kernel:
    name: str
    qual: str
    path: str
    line: int  # of the name
    in_macro: str = ""  # the #define it is written in ("" when in plain code)

    @property
    def key(self) -> tuple[str, str]:
        return self.path, self.name


@dataclass
class FileScan:
    path: str
    funcs: list[Func]
    kernels: list[Kernel]
    macros: dict[str, Macro]
    launches_in_macros: list[tuple[str, str, int]]  # (kernel name, macro, line)
    regs: list[tuple[str, str, str, int]]  # (macro, stub, function short name, line)
    code: str = ""  # stripped, directives blanked
    impls: list[tuple[str, str]] = field(default_factory=list)  # (op, function short name) of m.impl("op", fn)
    includes: list[str] = field(default_factory=list)  # as written: "ATen/native/cuda/Loops.cuh"


def _line(text: str, pos: int) -> int:
    return text.count("\n", 0, pos) + 1


def launch_names(code: str, start: int = 0, end: int | None = None) -> list[tuple[str, int]]:
    """(name, offset) of the callee before each ``<<<`` in code[start:end]: ``k<<<``, ``ns::k<T, 4><<<``."""
    out = []
    for m in _LAUNCH.finditer(code, start, len(code) if end is None else end):
        j = m.start() - 1
        while j >= 0 and (code[j].isspace() or code[j] == "\\"):  # a macro body's line continuations too
            j -= 1
        if j >= 0 and code[j] == ">":  # template arguments
            depth = 0
            while j >= 0:
                if code[j] == ">":
                    depth += 1
                elif code[j] == "<":
                    depth -= 1
                    if depth == 0:
                        break
                j -= 1
            j -= 1
            while j >= 0 and (code[j].isspace() or code[j] == "\\"):
                j -= 1
        k = j
        while k >= 0 and (code[k].isalnum() or code[k] == "_"):
            k -= 1
        name = code[k + 1:j + 1]
        if name:
            out.append((name, m.start()))
    return out


def _defines(code: str, path: str) -> tuple[str, dict[str, Macro], list[tuple[int, int, str]]]:
    """Blank every directive; return the function-like macros and the spans of #define bodies."""
    macros: dict[str, Macro] = {}
    spans: list[tuple[int, int, str]] = []
    pieces: list[str] = []
    pos = 0
    for m in _DIRECTIVE.finditer(code):
        if m.group(1) == "define":
            d = _DEFINE.match(m.group(0).lstrip())
            if d:
                params = tuple(p.strip() for p in (d.group(2) or "()")[1:-1].split(","))
                macros[d.group(1)] = Macro(d.group(1), _line(code, m.start()), d.group(3).replace("\\\n", " \n"),
                                           path, params)
                spans.append((m.start(), m.end(), d.group(1)))
        pieces += [code[pos:m.start()], _NONNL.sub(" ", m.group(0))]
        pos = m.end()
    pieces.append(code[pos:])
    return "".join(pieces), macros, spans


def _header_start(code: str, brace: int, floor: int) -> int:
    """Start of the declaration that ends at the ``{`` at ``brace``: after the last ; { } at depth 0."""
    depth = 0
    j = brace - 1
    while j >= floor:
        c = code[j]
        if c in ")]":
            depth += 1
        elif c in "([":
            depth -= 1
        elif depth == 0 and c in ";{}":
            return j + 1
        j -= 1
    return floor


def _skip_template(h: str) -> str:
    while True:
        h = h.lstrip()
        m = re.match(r"template\s*<", h)
        if not m:
            return h
        h = h[match(h, m.end() - 1, "<", ">"):]


def _name_of(header: str) -> tuple[str, str] | None:
    """(short name, written name) of a function definition's header, or None when it is not one."""
    h = _skip_template(re.sub(r"^\s*(?:public|private|protected)\s*:(?!:)", "", header))
    pos = 0
    while True:
        p = h.find("(", pos)
        if p < 0:
            return None
        if re.search(r"\boperator\s*$", h[:p]) and re.match(r"\(\s*\)\s*\(", h[p:]):
            p = h.find("(", h.find(")", p) + 1)  # operator() (params)
        if "=" in h[pos:p].replace("operator=", "").replace("==", ""):
            return None  # an initializer: auto f = [](...) {
        m = re.search(r"((?:[A-Za-z_]\w*\s*(?:<[^()]*>)?\s*::\s*)*(?:~?[A-Za-z_]\w*|operator\s*(?:\(\s*\)|[^\w\s(]+)))"
                      r"\s*(?:<[^(){};]*>)?\s*$", h[:p])  # f, ns::C<T>::f, operator(), f<float> (a specialization)
        if m is None:
            return None
        close = match(h, p, "(", ")")
        name = re.sub(r"\s+", "", m.group(1))
        short = name.split("::")[-1]
        rest = h[close:]
        nxt = rest.lstrip()[:1]
        if _ATTR_CALL.match(short) and nxt and nxt != "{" and not _TRAILER.match(rest):
            if nxt == "(":  # TORCH_IMPL_FUNC(x)(params): a function named by a macro
                arg = h[p + 1:close - 1].strip()
                inner_close = match(h, close + len(rest) - len(rest.lstrip()), "(", ")")
                if not _TRAILER.match(h[inner_close:]):
                    return None
                return (arg if short == "TORCH_IMPL_FUNC" else f"{short}({arg})"), name
            pos = close  # an attribute: __launch_bounds__(256) void k(...)
            continue
        if not _TRAILER.match(rest):
            return None
        return short, name


def scan_file(path: str, text: str) -> FileScan:
    code = strip(text)
    kernels: list[Kernel] = []
    code_nd, macros, dspans = _defines(code, path)
    launches_in_macros = []
    for start, end, mname in dspans:
        for name, off in launch_names(code, start, end):
            launches_in_macros.append((name, mname, _line(code, off)))
    for m in _GLOBAL.finditer(code):
        k = _kernel_at(code, m.end(), path)
        if k is not None:
            k.in_macro = next((n for s, e, n in dspans if s <= m.start() < e), "")
            kernels.append(k)
    kernels = _macro_made(kernels, macros, code_nd, path)
    funcs: list[Func] = []
    _scan_scope(code_nd, 0, len(code_nd), (), path, funcs)
    made = {k.line: k.name for k in kernels}
    for f in funcs:  # DEFINE_FLASH_FORWARD_KERNEL(flash_fwd_kernel, ...) { ... }: the kernel it makes
        if f.name in macros and f.line in made:
            f.name = made[f.line]
    made_lines: dict[int, int] = {}  # id(Func) -> the line of the macro invocation that made it
    code_all = _macro_functions(code_nd, macros, funcs, path, made_lines)
    for f in funcs:
        body = code_all[f.start:f.end]
        f.ids = set(IDENT.findall(body))
        f.calls, f.mcalls = calls_in(body)
        f.launches = [(n, made_lines.get(id(f)) or _line(code_all, off))
                      for n, off in launch_names(code_all, f.start, f.end)]
        f.libs = {_LIB_NAMES[m.group(1).lower()] for m in LIBRARY.finditer(body)}
    regs = [(m.group(1), m.group(2), m.group(3).split("::")[-1], _line(code_nd, m.start()))
            for m in _REG.finditer(code_nd)]
    impls = [(m.group(1), m.group(2).split("::")[-1]) for m in _IMPL.finditer(text)]
    return FileScan(path, funcs, kernels, macros, launches_in_macros, regs, code_all, impls,
                    _INCLUDE.findall(text))


_MACRO_TOKEN = re.compile(r"##|#\s*\w+|\w+|\s+|.", re.S)


def substitute(mac: Macro, args: list[str]) -> str:
    """A function-like macro's body with its arguments put in (``#x`` as an empty string, ``a ## b`` pasted)."""
    bind: dict[str, str] = {}
    for i, p in enumerate(mac.params):
        if p.endswith("..."):
            bind[p[:-3].strip() or "__VA_ARGS__"] = ", ".join(a.strip() for a in args[i:])
        elif p:
            bind[p] = args[i].strip() if i < len(args) else ""
    out: list[str] = []
    paste = False
    for t in _MACRO_TOKEN.finditer(mac.body):
        tok = t.group(0)
        if tok == "##":
            while out and out[-1].isspace():
                out.pop()
            paste = True
            continue
        if paste and tok.isspace():
            continue
        paste = False
        if tok.startswith("#") and tok[1:].strip() in bind:
            out.append('""')
        else:
            out.append(bind.get(tok, tok))
    return "".join(out)


def _macro_functions(code: str, macros: dict[str, Macro], funcs: list[Func], path: str,
                     made_lines: dict[int, int]) -> str:
    """Functions that same-file macros define where they are invoked outside any function
    (``CREATE_UNARY_TORCH_IMPL_FUNC(acos_out, acos_stub)``): the expansions are appended to the code (so
    bodies keep offsets into it) and their functions added, at the invocation's line."""
    makers = [m for m in macros.values() if "{" in m.body and m.params]
    if not makers:
        return code
    spans = sorted((f.start, f.end) for f in funcs)
    starts = [s for s, _e in spans]
    pat = re.compile(r"\b(" + "|".join(re.escape(m.name) for m in makers) + r")\s*\(")
    pieces = [code]
    size = len(code)
    for m in pat.finditer(code):
        i = bisect_right(starts, m.start()) - 1
        if i >= 0 and m.start() < spans[i][1]:
            continue  # inside a function: its calls are followed through the macro's body instead
        close = match(code, m.end() - 1, "(", ")")
        args = split_args(code[m.end():close - 1])
        exp = "\n" + substitute(macros[m.group(1)], args) + "\n"
        made: list[Func] = []
        _scan_scope(exp, 0, len(exp), (), path, made)
        line = _line(code, m.start())
        for f in made:
            f.start += size
            f.end += size
            f.line = line
            made_lines[id(f)] = line
        funcs += made
        pieces.append(exp)
        size += len(exp)
    return "".join(pieces)


def split_args(text: str) -> list[str]:
    """Top-level comma-separated arguments."""
    out, depth, cur = [], 0, []
    for ch in text:
        if ch in "([{":
            depth += 1
        elif ch in ")]}":
            depth -= 1
        if ch == "," and depth == 0:
            out.append("".join(cur))
            cur = []
        else:
            cur.append(ch)
    out.append("".join(cur))
    return out


def _macro_made(kernels: list[Kernel], macros: dict[str, Macro], code: str, path: str) -> list[Kernel]:
    """A kernel a same-file macro defines under one of its parameters (``#define DEF(kernelName, ...)
    __global__ void kernelName(...)``) is one kernel per invocation, named by that argument."""
    out = []
    for k in kernels:
        mac = macros.get(k.in_macro)
        if mac is None or k.name not in mac.params:
            out.append(k)
            continue
        at = mac.params.index(k.name)
        for m in re.finditer(r"\b" + re.escape(mac.name) + r"\s*\(", code):
            args = code[m.end():match(code, m.end() - 1, "(", ")") - 1].split(",")
            if len(args) > at and IDENT.fullmatch(args[at].strip()):
                out.append(Kernel(args[at].strip(), args[at].strip(), path, _line(code, m.start()), mac.name))
    return out


def _kernel_at(code: str, pos: int, path: str) -> Kernel | None:
    """The kernel a ``__global__`` at ``pos`` defines: its name before the parameter list, then ``{``."""
    end = min(len(code), pos + 2000)
    # conditionals between __global__ and the name (#if !defined(USE_ROCM) C10_LAUNCH_BOUNDS_1(..) #endif)
    h = _CONDITIONAL.sub(lambda d: _NONNL.sub(" ", d.group(0)), code[pos:end])
    at = 0
    while True:
        m = re.compile(r"([A-Za-z_]\w*(?:\s*::\s*[A-Za-z_]\w*)*)\s*(?:<[^(){};]*>)?\s*\(").search(h, at)
        if m is None or re.search(r"[;{}]", h[at:m.start()]):
            return None
        short = re.sub(r"\s+", "", m.group(1)).split("::")[-1]
        close = match(h, m.end() - 1, "(", ")")
        if _ATTR_CALL.match(short) and short not in ("TORCH_IMPL_FUNC",):
            at = close
            continue
        tail = re.match(r"[^;{]*", h[close:]).group(0)
        after = h[close + len(tail):close + len(tail) + 1]
        if after != "{":
            return None  # a declaration
        start = pos + m.start()
        return Kernel(short, re.sub(r"\s+", "", m.group(1)), path, _line(code, start))


def _scan_scope(code: str, lo: int, hi: int, scope: tuple[str, ...], path: str, out: list[Func],
                in_class: bool = False) -> None:
    i = lo
    while True:
        b = code.find("{", i, hi)
        if b < 0:
            return
        hstart = _header_start(code, b, lo)
        header = code[hstart:b]
        end = match(code, b, "{", "}")
        c = _CONTAINER.search(header)
        paren = header.find("(")
        if c and (paren < 0 or c.start() < paren) and not header.rstrip().endswith(")"):
            words = IDENT.findall(header[c.end():].split(":")[0] if c.group(1) != "namespace" else header[c.end():])
            name = next((w for w in words if w not in ("final", "alignas", "public", "private", "protected")), "")
            if c.group(1) == "namespace":
                name = "::".join(words)
            inner = scope + ((name,) if name and c.group(1) != "extern" else ())
            _scan_scope(code, b + 1, end - 1, inner, path, out, c.group(1) in ("class", "struct", "union"))
        else:
            named = _name_of(header)
            if named is not None:
                short, written = named
                qual = "::".join((*scope, written)) if scope else written
                out.append(Func(short, qual, path, _line(code, hstart + len(header) - len(header.lstrip())),
                                b, end, in_class or "::" in written))
        i = end


# ---------------------------------------------------------------------------------------------- the tree

#: How library calls are spelled (cublasSgemm, at::cuda::blas::gemm, cusolverDnXgeqrf, magma_dgetrf_gpu,
#: cufftExecC2C, cudnnConvolutionForward, cusparseSpMM, cub::DeviceScan, thrust::sort, cutlass::gemm).
LIBRARY = re.compile(r"\b(cublas|cusolver|magma|cufft|cudnn|cusparse|blas(?=\s*::)|cub(?=\s*::)|"
                     r"thrust(?=\s*::)|cutlass(?=\s*::))", re.I)
_LIB_NAMES = {"cublas": "cuBLAS", "cusolver": "cuSOLVER", "magma": "MAGMA", "cufft": "cuFFT", "cudnn": "cuDNN",
              "cusparse": "cuSPARSE", "blas": "at::cuda::blas", "cub": "CUB", "thrust": "Thrust",
              "cutlass": "cutlass"}


#: A name defined in more files than this is followed only into the definitions the calling file can see
#: (itself and the headers it includes, transitively): a function defined in one file only is found anywhere.
RARE = 1
_INCLUDE = re.compile(r'^[ \t]*#[ \t]*include[ \t]*[<"]([^>"]+)[>"]', re.M)


class Tree:
    """Scanned files of a tree, with lookups by short name for the crude call graph."""

    def __init__(self, root: str, subdirs: tuple[str, ...], exclude: tuple[str, ...] = (),
                 exts: tuple[str, ...] = (".cu", ".cuh", ".h", ".hpp", ".cpp", ".cc")) -> None:
        self.root = root
        self.files: dict[str, FileScan] = {}
        for sub in subdirs:
            for dirpath, _dirs, names in os.walk(os.path.join(root, sub)):
                for n in sorted(names):
                    rel = os.path.relpath(os.path.join(dirpath, n), root).replace(os.sep, "/")
                    if not n.endswith(exts) or any(rel.startswith(x) for x in exclude):
                        continue
                    with open(os.path.join(root, rel), encoding="latin-1") as f:
                        self.files[rel] = scan_file(rel, f.read())
        self.funcs: dict[str, list[Func]] = defaultdict(list)
        for fs in self.files.values():
            for fn in fs.funcs:
                self.funcs[fn.name].append(fn)
        self._callees: dict[int, list[tuple[str, Func]]] = {}
        self._callers: dict[int, list[Func]] | None = None
        self._visible: dict[str, set[str]] = {}
        self.cuda_regs: dict[str, list[Func]] = defaultdict(list)  # stub -> its CUDA kernels
        for fs in self.files.values():
            cuda_file = fs.path.endswith((".cu", ".cuh")) or "/cuda/" in fs.path
            for macro, stub, target, _line_no in fs.regs:
                if macro == "REGISTER_CUDA_DISPATCH" or (macro == "REGISTER_DISPATCH" and cuda_file):
                    self.cuda_regs[stub] += [f for f in self.funcs.get(target, []) if f.path == fs.path] or \
                        self.funcs.get(target, [])

    def visible(self, path: str) -> set[str]:
        """The scanned files ``path`` includes, transitively (``<ATen/x.h>`` is aten/src/ATen/x.h)."""
        got = self._visible.get(path)
        if got is None:
            got = self._visible[path] = set()
            todo = [path]
            while todo:
                p = todo.pop()
                for inc in self.files[p].includes if p in self.files else ():
                    for cand in (f"aten/src/{inc}", inc, os.path.normpath(os.path.join(os.path.dirname(p), inc))):
                        if cand in self.files and cand not in got:
                            got.add(cand)
                            todo.append(cand)
                            break
        return got

    def body(self, fn: Func) -> str:
        return self.files[fn.path].code[fn.start:fn.end]

    def kernels(self) -> list[Kernel]:
        return [k for fs in self.files.values() for k in fs.kernels]

    def callees(self, fn: Func) -> list[tuple[str, Func]]:
        got = self._callees.get(id(fn))
        if got is None:
            got = self._callees[id(fn)] = self._find_callees(fn)
        return got

    def callers(self) -> dict[int, list[Func]]:
        """id(function) -> the functions whose callees include it."""
        if self._callers is None:
            self._callers = defaultdict(list)
            by_id: dict[str, list[Func]] = defaultdict(list)
            for fs in self.files.values():
                for f in fs.funcs:
                    for i in f.ids:
                        by_id[i].append(f)
                    for _how, c in self.callees(f):
                        self._callers[id(c)].append(f)
            for fs in self.files.values():  # a functor's or launcher object's methods: whoever names its class
                for f in fs.funcs:
                    cls = f.qual.split("::")[-2] if f.member and "::" in f.qual else ""
                    if cls:
                        self._callers[id(f)] += [c for c in by_id.get(re.sub(r"<.*", "", cls), ()) if c is not f]
        return self._callers

    def _find_callees(self, fn: Func) -> list[tuple[str, Func]]:
        """(how, function) for what ``fn``'s body may call, by name: plain calls find free functions (and members
        of the same file), member calls find members; the calls in same-file macros it invokes count; a stub it
        names leads to the stub's CUDA kernels."""
        calls, mcalls = set(fn.calls), set(fn.mcalls)
        macros = self.files[fn.path].macros
        how: dict[str, str] = {}
        todo = [c for c in calls if c in macros]
        seen: set[str] = set()
        while todo:  # same-file macros the body invokes, and those they invoke
            m = todo.pop()
            if m in seen:
                continue
            seen.add(m)
            p, mm = calls_in(macros[m].body)
            for c in (p | mm) - calls - mcalls:
                how[c] = f"macro {m}"
            calls |= p
            mcalls |= mm
            todo += [c for c in p if c in macros]
        out: list[tuple[str, Func]] = []
        seen_files = self.visible(fn.path)
        for c in calls:
            if c != fn.name:
                found = [f for f in self.funcs.get(c, ()) if not f.member or f.path == fn.path]
                local = [f for f in found if f.path == fn.path]  # a same-file function of the name hides the rest
                near = [f for f in found if f.path in seen_files]  # then those of the headers it includes
                if not (local or near) and len({f.path for f in found}) > RARE:
                    continue  # a common name (get, apply, run) none of whose definitions this file sees
                out += [(how.get(c, "call"), f) for f in (local or near or found)]
        for c in mcalls:  # x.f(): the receiver's type is not known; the members of this file only
            out += [(how.get(c, "call"), f) for f in self.funcs.get(c, ()) if f.member and f.path == fn.path]
        for i in fn.ids:
            out += [(f"stub {i}", f) for f in self.cuda_regs.get(i, ())]
        return out

    def launched_in_macros(self, fn: Func) -> list[tuple[str, str, int]]:
        """(kernel, macro, line) launched by same-file macros that ``fn`` invokes."""
        fs = self.files[fn.path]
        return [t for t in fs.launches_in_macros if t[1] in fn.ids]
