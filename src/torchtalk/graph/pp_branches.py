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

from ..model import CppSymbol
from ..store.reader import Index
from .overloads import signature
from .source_lines import file_lines

_DIRECTIVE = re.compile(r"^\s*#\s*(if|ifdef|ifndef|elif|else|endif)\b(.*)$")
_COMMENT = re.compile(r"\s*(//.*|/\*.*)$")


def branch_at(ix: Index, path: str, line: int) -> str:
    """The innermost preprocessor branch around ``line`` as written ("" when none, or the file is unreadable)."""
    lines = file_lines(ix, path)
    stack: list[str] = []  # the branch each open #if is in
    for n, text in enumerate(lines[: max(0, line - 1)], 1):
        m = _DIRECTIVE.match(text)
        if m is None:
            continue
        word, rest = m.group(1), _COMMENT.sub("", m.group(2)).strip()
        if word in ("if", "ifdef", "ifndef"):
            guard = word == "ifndef" and n < len(lines) and re.match(rf"^\s*#\s*define\s+{re.escape(rest)}\b",
                                                                     lines[n])
            stack.append("" if guard else f"#{word} {rest}")
        elif word == "elif" and stack:
            stack[-1] = f"#elif {rest}"
        elif word == "else" and stack:
            opened = stack[-1]
            stack[-1] = opened if not opened or opened.startswith("#else") else f"#else of {opened}"
        elif word == "endif" and stack:
            stack.pop()
    return next((b for b in reversed(stack) if b), "")


_ROCM = re.compile(r"USE_ROCM|__HIP_PLATFORM_(AMD|HCC)__|__HIPCC__|TORCH_HIP_VERSION|HIP_VERSION|ROCM_VERSION")
_NOT_ROCM = re.compile(r"!\s*(defined\s*\(?\s*)?(USE_ROCM|__HIP_PLATFORM_(AMD|HCC)__|__HIPCC__)")


def rocm_only(ix: Index, path: str, line: int) -> bool:
    """Whether ``line`` of ``path`` is compiled only in a ROCm build (Note [ROCm-only code])."""
    for branch in branches_at(ix, path, line):
        if branch.startswith("#else of "):
            opened = branch.removeprefix("#else of ")
            if opened.startswith("#ifndef ") and _ROCM.search(opened) or _NOT_ROCM.search(opened) and \
                    " || " not in opened and " && " not in opened:
                return True
        elif branch.startswith(("#ifdef ", "#if ", "#elif ")) and _ROCM.search(branch) and \
                not _NOT_ROCM.search(branch) and " || " not in branch:
            return True
    return False


def branches_at(ix: Index, path: str, line: int) -> list[str]:
    """Every preprocessor branch open at ``line``, outermost first, as ``branch_at`` writes them."""
    memo: dict[str, list[tuple[int, str, str, bool]]] = ix.cached("pp_directives", dict)
    if path not in memo:
        lines = file_lines(ix, path)
        found = []
        for n, text in enumerate(lines, 1):
            if "#" in text and (m := _DIRECTIVE.match(text)) is not None:
                word, rest = m.group(1), _COMMENT.sub("", m.group(2)).strip()
                guard = word == "ifndef" and n < len(lines) and bool(
                    re.match(rf"^\s*#\s*define\s+{re.escape(rest)}\b", lines[n]))
                found.append((n, word, rest, guard))
        memo[path] = found
    stack: list[str] = []
    for n, word, rest, guard in memo[path]:
        if n >= line:
            break
        if word in ("if", "ifdef", "ifndef"):
            stack.append("" if guard else f"#{word} {rest}")
        elif word == "elif" and stack:
            stack[-1] = f"#elif {rest}"
        elif word == "else" and stack:
            opened = stack[-1]
            stack[-1] = opened if not opened or opened.startswith("#else") else f"#else of {opened}"
        elif word == "endif" and stack:
            stack.pop()
    return [b for b in stack if b]


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
