"""Generated code (the output of torchgen and tools/autograd): C++ facts plus what lives in strings.

The binding ``THPVariable_atan2`` names its Python signatures only in
``PythonArgParser`` strings and the ops it calls only in ``// aten::atan2.out(...)``
comments; a VariableType kernel names its backward node only as a template
argument (``std::shared_ptr<Atan2Backward0>``), and Functions.h declares the node
structs (``struct TORCH_API Atan2Backward0 : public TraceableFunction``), which the C++
facts do not record. These are regular, so a line scan finds them; each is attached to
the enclosing function.
"""

from __future__ import annotations

import bisect
import re
from collections.abc import Callable

from ..model import CppSymbol, FileFacts, GeneratedFact, GeneratedKind
from .cpp import extract_cpp

_PARSER_START = re.compile(rb"static PythonArgParser parser\(\{")
_STRING = re.compile(rb'"((?:[^"\\]|\\.)*)"')
_BINDS = re.compile(rb"^\s*// aten::([\w.]+)\(", re.M)
# grad_fn = std::shared_ptr<T>(new T(...), deleteNode): whatever T is named (AddBackward0, ForeachAddBackward0List,
# AliasBackward0_copy, SelectBackwardAutogradNestedTensor0, NotImplemented).
_GRAD_FN = re.compile(rb"std::shared_ptr<(\w+)>\(new (\w+)\(")
_NODE_STRUCT = re.compile(rb"^struct TORCH_API (\w+) : public \w+", re.M)


class Enclosing:
    """The innermost definition spanning a line, for many lines of one file: the definitions sorted by first line
    with the greatest last line so far, so that a lookup reads back only as far as a definition could span it
    (a scan of every symbol per fact was quadratic: python_torch_functions has thousands of each)."""

    def __init__(self, symbols) -> None:
        defs = sorted((s.line, i) for i, s in enumerate(symbols) if s.is_definition)
        self._starts = [line for line, _i in defs]
        self._defs = [(symbols[i].line, symbols[i].end_line, i) for _line, i in defs]
        self._reach: list[int] = []  # the greatest end_line among defs[:k + 1]
        top = 0
        for _start, end, _i in self._defs:
            top = max(top, end)
            self._reach.append(top)

    def __call__(self, line: int) -> int:
        """Index of the innermost definition spanning ``line`` (the shortest; the first of equals), or -1."""
        best, best_key = -1, None
        k = bisect.bisect_right(self._starts, line) - 1
        while k >= 0 and self._reach[k] >= line:
            start, end, i = self._defs[k]
            if end >= line and (best_key is None or (end - start, i) < best_key):
                best, best_key = i, (end - start, i)
            k -= 1
        return best


def parser_signatures(data: bytes, symbols: list[CppSymbol], line_at: Callable[[int], int]) -> list[GeneratedFact]:
    """PARSER_SIGNATURE facts: each string of a ``static PythonArgParser parser({...})`` initializer list, attached to
    the function that holds it (generated bindings and hand-written ones: THPVariable_nonzero)."""
    rows: list[GeneratedFact] = []
    inside = Enclosing(symbols)
    for m in _PARSER_START.finditer(data):
        # The initializer list: string literals separated by commas and blanks, then "}".
        pos = m.end()
        while True:
            while pos < len(data) and data[pos] in b" \t\r\n,":
                pos += 1
            s = _STRING.match(data, pos)
            if s is None:
                break
            line = line_at(s.start())
            rows.append(GeneratedFact(GeneratedKind.PARSER_SIGNATURE, s.group(1).decode("utf-8", "replace"), line,
                                      inside(line)))
            pos = s.end()
    return rows


def extract_generated(relpath: str, data: bytes) -> FileFacts:
    facts = extract_cpp(relpath, data)
    symbols = facts.get(CppSymbol, [])
    name = relpath.rsplit("/", 1)[-1]
    starts = [0]
    starts += [m.end() for m in re.finditer(rb"\n", data)]

    def line_at(offset: int) -> int:
        return bisect.bisect_right(starts, offset)

    rows: list[GeneratedFact] = []
    inside = Enclosing(symbols)
    if name.startswith("python_") and b"PythonArgParser" in data:
        rows += parser_signatures(data, symbols, line_at)
        for m in _BINDS.finditer(data):
            line = line_at(m.start(1))
            rows.append(GeneratedFact(GeneratedKind.BINDS_OP, m.group(1).decode(), line, inside(line)))
    if name.startswith("VariableType"):
        seen = set()
        for m in _GRAD_FN.finditer(data):
            if m.group(1) != m.group(2):
                continue
            line = line_at(m.start())
            scope = inside(line)
            if (scope, m.group(1)) not in seen:
                seen.add((scope, m.group(1)))
                rows.append(GeneratedFact(GeneratedKind.GRAD_FN, m.group(1).decode(), line, scope))
    if name == "Functions.h" and "/autograd/generated/" in relpath:
        for m in _NODE_STRUCT.finditer(data):
            rows.append(GeneratedFact(GeneratedKind.NODE_STRUCT, m.group(1).decode(), line_at(m.start()), -1))
    facts[GeneratedFact] = rows
    return facts
