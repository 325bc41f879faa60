"""The m.impl registrations of TORCH_LIBRARY_IMPL blocks outside aten, read once per index version.

Note [Library ops] (query/library_ops.py) says how the index holds them. Python calls such an op as
``torch.ops.ns.op(...)`` (an ao module's forward: ``torch.ops.quantized.conv_transpose1d_dynamic``); the graph
reaches the registered functions from that name (graph/py_edges.py) and finds the name as a call (py_calls.py).
"""

from __future__ import annotations

import re

from ..model import RegistrationKind
from ..model.cpp import TEMPLATE_ARGS
from ..store.reader import Index

# (namespace, op as registered, dispatch key, function as written without template arguments, file id, line)
Impl = tuple[str, str, str, str, int, int]

_LIBRARY_BLOCK = re.compile(r"^TORCH_LIBRARY(?:_IMPL|_FRAGMENT)?\(\s*(\w+)")


def library_impls(ix: Index) -> list[Impl]:
    """Every m.impl of a TORCH_LIBRARY_IMPL block outside aten, in the index's order."""
    def build() -> list[Impl]:
        out = []
        for op, key, target, file_id, line, block in ix.q(
                "SELECT r.name, r.key, r.target, r.file_id, r.line, s.name FROM cpp_registration r JOIN cpp_symbol s "
                "ON s.id = r.scope JOIN files f ON f.id = r.file_id WHERE r.kind = ? AND f.generated = 0",
                (RegistrationKind.LIBRARY_IMPL.value,)):
            m = _LIBRARY_BLOCK.match(block)
            if m and m.group(1) not in ("aten", "_"):
                plain = TEMPLATE_ARGS.sub("", target).replace(" ", "").lstrip(":")
                out.append((m.group(1), op, key, plain, file_id, line))
        return out
    impls: list[Impl] = ix.cached("library_impls", build)
    return impls


def library_python(ix: Index) -> dict[str, list[Impl]]:
    """The m.impl registrations by the name Python calls the op: ``torch.ops.ns.op`` (its overloads together)."""
    def build() -> dict[str, list[Impl]]:
        out: dict[str, list[Impl]] = {}
        for impl in library_impls(ix):
            out.setdefault(f"torch.ops.{impl[0]}.{impl[1].split('.')[0]}", []).append(impl)
        return out
    table: dict[str, list[Impl]] = ix.cached("library_impls_by_python", build)
    return table


def library_op_name(python: str) -> str:
    """``torch.ops.quantized.linear_dynamic`` as the op's own name, ``quantized::linear_dynamic``."""
    ns, _, op = python.removeprefix("torch.ops.").partition(".")
    return f"{ns}::{op}"
