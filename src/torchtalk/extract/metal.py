"""Metal shader kernels (``native/mps/kernels/*.metal``): names and lines only.

MPS ops launch these by name from Objective-C++; knowing where each kernel is
defined is what a contributor needs. A regex suffices: kernels are
``kernel void name(`` at top level, sometimes templated.
"""

from __future__ import annotations

import re

from ..model import CppSymbol, FileFacts, SymbolKind

_KERNEL = re.compile(rb"^[ \t]*(?:template\s*<[^>]*>\s*)?kernel\s+void\s+([A-Za-z_]\w*)\s*\(", re.M)


def extract_metal(relpath: str, data: bytes) -> FileFacts:
    rows = []
    for m in _KERNEL.finditer(data):
        line = data.count(b"\n", 0, m.start(1)) + 1
        name = m.group(1).decode()
        rows.append(CppSymbol(name, name, "", SymbolKind.METAL_KERNEL, line, line, True, ""))
    return {CppSymbol: rows}
