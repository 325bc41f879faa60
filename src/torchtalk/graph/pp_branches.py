"""The preprocessor branch a line of a tree's C++ file is compiled in, read from the file's text.

Note [Twin definitions]: a kernel with a stand-in for builds without a library is defined twice, once in
each branch of ``#if AT_MKLDNN_ENABLED()`` (the stand-in raising "not compiled with MKLDNN"), in one file
or in two (cudnn/ConvPlaceholders.cpp), and the index records both. Nothing in either definition says which
build compiles it; the condition around it does, so each twin is shown with its branch as written (``#if
!AT_MKLDNN_ENABLED()``, ``#else of #if AT_CUDNN_ENABLED()``). An include guard (``#ifndef X`` followed by
``#define X``) wraps the whole file and is no branch.

Note [ROCm-only code]: a .cu file is built for CUDA, and hipified for ROCm; what only the ROCm build compiles is
written under ``#ifdef USE_ROCM`` (Indexing.cu's ``indexing_backward_kernel_rocm`` and its launches), ``#if
defined(USE_ROCM)``, a HIP platform or version macro (``#if defined(TORCH_HIP_VERSION) && ...``:
CUDAFunctions.h's ``hipMemcpyWithStream``), or the ``#else`` of ``#ifndef USE_ROCM``. The GPU walk of a CUDA
answer leaves such launches and library calls out (graph/gpu.py): no CUDA build runs them.
"""

from __future__ import annotations

import re
from typing import NamedTuple

from ..model import CppSymbol
from ..store.reader import Index
from .signatures import signature
from .source_lines import file_lines

_DIRECTIVE = re.compile(r"^\s*#\s*(if|ifdef|ifndef|elif|else|endif)\b(.*)$")
_COMMENT = re.compile(r"\s*(//.*|/\*.*)$")


def branch_at(ix: Index, path: str, line: int) -> str:
    """The innermost preprocessor branch around ``line`` as written ("" when none, or the file is unreadable)."""
    return next((b.part for b in reversed(branches_at(ix, path, line)) if b.part), "")


class Branch(NamedTuple):
    """One ``#if`` open at a line: the directive that opened it and the part the line is in, as written (``#if X``,
    ``#elif Y``, ``#else of #if X``); "" for an include guard."""

    opener: str
    part: str


def branches_at(ix: Index, path: str, line: int) -> list[Branch]:
    """Every preprocessor branch open at ``line``, outermost first."""
    stack: list[Branch] = []
    for n, word, rest, guard in _directives(ix, path):
        if n >= line:
            break
        if word in ("if", "ifdef", "ifndef"):
            opened = "" if guard else f"#{word} {rest}"
            stack.append(Branch(opened, opened))
        elif word == "elif" and stack:
            stack[-1] = Branch(stack[-1].opener, f"#elif {rest}")
        elif word == "else" and stack:
            opener = stack[-1].opener
            stack[-1] = Branch(opener, f"#else of {opener}" if opener else "")
        elif word == "endif" and stack:
            stack.pop()
    return stack


def _directives(ix: Index, path: str) -> list[tuple[int, str, str, bool]]:
    """(line, directive, condition with its continued lines joined, is an include guard) of a file's #if family,
    read once per file and index version."""
    memo: dict[str, list[tuple[int, str, str, bool]]] = ix.cached("pp_directives", dict)
    if path not in memo:
        lines = file_lines(ix, path)
        found = []
        for n, text in enumerate(lines, 1):
            if "#" in text and (m := _DIRECTIVE.match(text)) is not None:
                rest, k = m.group(2), n
                while rest.rstrip().endswith("\\") and k < len(lines):  # #if defined(A) \ || defined(B)
                    rest, k = rest.rstrip()[:-1] + " " + lines[k], k + 1
                word, rest = m.group(1), _COMMENT.sub("", rest).strip()
                guard = word == "ifndef" and n < len(lines) and bool(
                    re.match(rf"^\s*#\s*define\s+{re.escape(rest)}\b", lines[n]))
                found.append((n, word, rest, guard))
        memo[path] = found
    return memo[path]


_PLATFORM = r"(USE_ROCM|__HIP_PLATFORM_(AMD|HCC)__|__HIPCC__)"
_ROCM_TEST = re.compile(rf"\b{_PLATFORM}\b|defined\s*\(?\s*(TORCH_HIP_VERSION|HIP_VERSION|ROCM_VERSION)\b")
_NOT_ROCM = re.compile(rf"!\s*(defined\s*\(?\s*)?{_PLATFORM}")


def rocm_only(ix: Index, path: str, line: int) -> bool:
    """Whether ``line`` of ``path`` is compiled only in a ROCm build (Note [ROCm-only code]): it is in the part of
    an ``#if`` whose condition holds only for ROCm, or in an ``#elif``/``#else`` of one that holds for every other
    build (``#ifndef USE_ROCM``). A bare version test (``#if TORCH_HIP_VERSION < 305``) holds in a CUDA build too
    (the macro is 0 there): it decides nothing."""
    for b in branches_at(ix, path, line):
        if b.part == b.opener:
            if _rocm_if(b.part):
                return True
        elif _not_rocm_if(b.opener) or b.part.startswith("#elif ") and _rocm_if(b.part):
            return True
    return False


def _rocm_if(directive: str) -> bool:
    cond = directive.split(" ", 1)[-1]
    return directive.startswith(("#ifdef ", "#if ", "#elif ")) and "||" not in cond and \
        bool(_ROCM_TEST.search(cond)) and not _NOT_ROCM.search(cond)


def _not_rocm_if(directive: str) -> bool:
    cond = directive.split(" ", 1)[-1]
    if directive.startswith("#ifndef "):
        return bool(re.fullmatch(_PLATFORM, cond))
    return directive.startswith("#if ") and bool(_NOT_ROCM.fullmatch(cond.replace(")", "").strip()))


def twin_branches(ix: Index, defs: list[CppSymbol]) -> dict[int, str]:
    """For definitions of one function (name and parameters) in different preprocessor branches, in one file
    or two (ConvPlaceholders.cpp's stand-ins): id -> its branch."""
    out: dict[int, str] = {}
    same: dict[tuple[str, tuple[str, ...]], list[CppSymbol]] = {}
    for d in defs:
        if d.loc is not None:
            same.setdefault((d.qualname, signature(d.params).key), []).append(d)
    for twins in same.values():
        if len(twins) > 1:
            branches = {d.id: branch_at(ix, d.loc.path, d.line) for d in twins if d.loc is not None}
            if len(set(branches.values())) > 1:
                out.update(branches)
    return out
