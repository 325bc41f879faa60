"""What the registration and binding finders need from the C++ walker, as a protocol.

``cpp_walk.Walker`` satisfies it; ``cpp_regs`` and ``cpp_bindings`` depend on this
instead of on the walker, so the walker can use them without an import cycle.
"""

from __future__ import annotations

from typing import Any, Protocol

from ..model import Registration


class WalkState(Protocol):
    text: str  # the buffer as latin-1 text (offsets are byte offsets)
    root: Any  # tree-sitter root node of the buffer
    relpath: str
    line_base: int  # lines before the buffer (it may be one slice of a file)
    regs: list[Registration]
    pybind_roots: dict[int, tuple[str, str]]  # .def chain call id -> (key, class)
    class_vars: list[tuple[int, str, str]] | None  # (pos, variable, python class)

    def t(self, n: Any) -> str: ...

    def line(self, n: Any) -> int: ...

    def enclosing_def(self, pos: int) -> int: ...

    def namespace_at(self, pos: int) -> str: ...
