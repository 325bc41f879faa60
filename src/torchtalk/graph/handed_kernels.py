"""Kernels a launch reaches through a parameter of a lambda: read from the source text at query time.

Note [Kernels handed to a launching lambda]
~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
Memory-efficient attention launches its kernel through a parameter: ``auto launchKernel = [&](auto _k, auto
kernel_fn) { ... kernel_fn<<<blocks, threads, smem, stream>>>(p); }`` is handed to ``dispatch_cutlassF<scalar_t>(
launchKernel, computeCapability)``, whose helpers call it with each CUTLASS kernel (``cb(AttentionKernel<...>(),
fmha_cutlassF_f16_aligned_64x64_rf_sm80)``). The launch names no kernel, so it is followed as C++ would: the
lambda's variable is found among the launching function's text, then the calls it is handed to, down through the
functions that pass that parameter on (``dispatch_cutlassF_f16_sm80(cb, cc)``), to the calls of the parameter;
their argument at the kernel parameter's position names ``__global__`` kernels. The call facts keep argument types,
not the text written, so the text of the functions on the way is read (Note [Source lines]); a launch that does
not resolve so stays an unresolved call, as before.
"""

from __future__ import annotations

import re

from ..model import CallSite, CppSymbol
from ..store.reader import Index
from .cpp_text import close_bracket, split_args
from .source_lines import file_lines
from .symbols import defs_by_name, gpu_kernels_named

MAX_DEPTH = 3  # functions the lambda is handed through before it is called
_LAMBDA = re.compile(r"\b([A-Za-z_]\w*)\s*=\s*\[[^\]]*\]\s*\(([^()]*)\)")
_CALL = re.compile(r"([A-Za-z_][\w:]*)\s*(?:<[^;{}()]*>)?\s*\(")
_NAME = re.compile(r"[A-Za-z_]\w*")


def handed_kernels(ix: Index, sym: CppSymbol, call: CallSite) -> list[CppSymbol]:
    """The ``__global__`` definitions a launch of ``call.callee``, a parameter of a lambda in ``sym``, runs."""
    text = _text(ix, sym)
    for m in _LAMBDA.finditer(text):
        names = _param_names(m.group(2))
        if call.callee in names:
            found = _through(ix, text, m.group(1), names.index(call.callee), MAX_DEPTH, set())
            return list({k.id: k for k in found}.values())
    return []


def _through(ix: Index, text: str, var: str, at: int, depth: int, seen: set[int]) -> list[CppSymbol]:
    """Kernels passed at position ``at`` of the calls of ``var`` in ``text``, and in the functions ``var`` is
    handed to from ``text`` (their parameter in its place, ``depth`` functions down)."""
    out: list[CppSymbol] = []
    for name, args in _calls(text):
        if name == var:
            if at < len(args):
                kernel = _NAME.search(args[at].replace("&", " "))
                named = gpu_kernels_named(ix, kernel.group()) if kernel else []
                out += [k for k in named if k.is_definition] or named
            continue
        if depth == 0 or var not in args:  # split_args strips each argument
            continue
        pos = args.index(var)
        for d in defs_by_name(ix, name.rsplit("::", 1)[-1]):
            params = _param_names(d.params[1:-1])
            if d.id in seen or pos >= len(params):
                continue
            seen.add(d.id)
            out += _through(ix, _text(ix, d), params[pos], at, depth - 1, seen)
    return out


def _text(ix: Index, sym: CppSymbol) -> str:
    return "\n".join(file_lines(ix, sym.path)[sym.line - 1:sym.end_line])


def _param_names(params: str) -> list[str]:
    """``auto _k, auto kernel_fn`` -> ``["_k", "kernel_fn"]`` (a default value is not the name)."""
    names = []
    for part in split_args(params):
        found = _NAME.findall(part.split("=", 1)[0])
        names.append(found[-1] if found else "")
    return names


def _calls(text: str) -> list[tuple[str, list[str]]]:
    """Each call written in ``text``: the name called and its arguments as written."""
    out = []
    for m in _CALL.finditer(text):
        close = close_bracket(text, m.end() - 1)
        if close > 0:
            out.append((m.group(1), split_args(text[m.end():close])))
    return out
