"""STUB_CALL edges found in the source text: functions that pass a DispatchStub on without calling it.

Note [Stub uses]: ``impl_func_cum_ops(self, dim, result, cumsum_stub)`` hands the stub to a helper that
calls it: the index records calls, not names passed as arguments, so the graph has
no STUB_CALL edge for it and a walk up from a CPU or CUDA kernel would stop at the
stub. The file that defines the stub (``DEFINE_DISPATCH``) is where its kernels are
called from, so that file's text is searched for the stub's name, and each hit
belongs to the innermost definition around it. graph.py's INTO rule for STUB_CALL uses
this only for a stub no recorded call site reaches; every edge it makes says how it was
found (``EdgeHow.TEXT``).
"""

from __future__ import annotations

import re
from pathlib import Path

from ..model import CppSymbol, Edge, EdgeHow, EdgeKind, Loc, Node, NodeKind, RegistrationKind
from ..store.codec import rows_facts
from ..store.reader import Index
from .nodes import cpp_node
from .symbols import SYMBOL_COLS

NOTE = "passes the stub on (found in the source text: no call site is recorded for it)"
_SKIP = re.compile(r"\b(DEFINE_DISPATCH|DECLARE_DISPATCH|REGISTER_\w*DISPATCH)\b")


def stub_uses(ix: Index, node: Node) -> list[Edge]:
    root = ix.source_root
    if node.kind is not NodeKind.STUB or root is None:
        return []
    memo: dict[str, list[Edge]] = ix.cached("stub_uses", dict)
    if node.key not in memo:
        memo[node.key] = _uses(ix, root, node)
    return memo[node.key]


def _uses(ix: Index, root: Path, node: Node) -> list[Edge]:
    out: list[Edge] = []
    pat = re.compile(rf"\b{re.escape(node.key)}\b")
    for fid, path in ix.q("SELECT DISTINCT r.file_id, f.path FROM cpp_registration r JOIN files f ON f.id = r.file_id "
                          "WHERE r.kind = ? AND r.name = ?", (RegistrationKind.DEFINE_DISPATCH.value, node.key)):
        try:
            lines = (root / path).read_text(encoding="utf-8", errors="replace").split("\n")
        except OSError:
            continue
        hits = [n for n, text in enumerate(lines, 1) if pat.search(text) and not _SKIP.search(text)
                and not text.lstrip().startswith("//")]
        if not hits:
            continue
        syms: list[CppSymbol] = rows_facts(CppSymbol, ix.q(
            f"SELECT {SYMBOL_COLS} FROM cpp_symbol WHERE file_id = ? AND is_definition", (fid,)), ix.paths())
        seen: set[int] = set()
        for n in hits:
            around = [s for s in syms if s.line <= n <= s.end_line]
            if not around:
                continue
            sym = min(around, key=lambda s: s.end_line - s.line)
            if sym.id not in seen:
                seen.add(sym.id)
                out.append(Edge(cpp_node(sym), node, EdgeKind.STUB_CALL, Loc(path, n), note=NOTE, how=EdgeHow.TEXT,
                                written=node.key))
    return out
