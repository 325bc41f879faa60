"""DISPATCH_CALL edges found in the source text: an op's C++ API function handed on without being called.

Note [Op references]: ``unary_op_impl_(self, at::abs_out)`` (abs_'s kernel) hands the op-API function
``at::abs_out`` to a helper that calls it through its parameter. The index records calls, not names
passed as arguments, so the graph has no edge from abs_'s kernel to abs.out, and a walk down from it
would find nothing. A function's own lines are searched for ``at::name`` written as an argument
(followed by ``,`` or ``)``); each name that means an op (op_spellings.op_named: X, X_out, X_outf) is a
DISPATCH_CALL edge that says how it was found (``EdgeHow.PASSED_ON``). graph.py's OUT rule adds these
to the recorded calls.
"""

from __future__ import annotations

import re

from ..model import Edge, EdgeHow, EdgeKind, Loc, Node, NodeKind
from ..store.reader import Index
from .nodes import symbol_id
from .op_spellings import op_named
from .registry import registry
from .source_lines import file_lines
from .symbols import symbol

NOTE = "passes the op's function on (found in the source text: no call site is recorded for it)"
_REF = re.compile(r"\bat::(\w+)\s*[,)]")


def op_refs(ix: Index, node: Node) -> list[Edge]:
    root = ix.source_root
    sid = symbol_id(node)
    if sid is None or root is None:
        return []
    memo: dict[int, list[Edge]] = ix.cached("op_refs", dict)
    if sid not in memo:
        memo[sid] = _refs(ix, node, sid)
    return memo[sid]


def _refs(ix: Index, node: Node, sid: int) -> list[Edge]:
    sym = symbol(ix, sid)
    if sym is None or sym.loc is None or not sym.is_definition:
        return []
    path = sym.loc.path
    lines = file_lines(ix, path)
    reg = registry(ix)
    out: list[Edge] = []
    seen: set[str] = set()
    for n in range(sym.line, min(sym.end_line, len(lines)) + 1):
        text = lines[n - 1]
        if "at::" not in text or text.lstrip().startswith("//"):
            continue
        for m in _REF.finditer(text):
            for full in op_named(reg, m.group(1)):
                if full in seen or full not in reg.by_full:
                    continue
                seen.add(full)
                out.append(Edge(node, Node(NodeKind.OP, full, full, reg.by_full[full].loc), EdgeKind.DISPATCH_CALL,
                                Loc(path, n), note=NOTE, how=EdgeHow.PASSED_ON, written=f"at::{m.group(1)}"))
    return out
