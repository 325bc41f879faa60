"""STUB_CALL edges found in the source text: functions that pass a DispatchStub on without calling it.

Note [Stub uses]: ``impl_func_cum_ops(self, dim, result, cumsum_stub)`` hands the stub to a helper that
calls it: the index records calls, not names passed as arguments, so the graph has
no STUB_CALL edge for it and a walk up from a CPU or CUDA kernel would stop at the
stub. The file that defines the stub (``DEFINE_DISPATCH``) is where its kernels are
called from, so that file's text is searched for the stub's name, and each hit
belongs to the innermost definition around it. graph.py's INTO rule for STUB_CALL uses
this only for a stub no recorded call site reaches; every edge it makes says how it was
found (``EdgeHow.TEXT``). The GPU walk (gpu.py) reads the same edges from the function's side (``uses_in``),
so a walk down from TORCH_IMPL_FUNC(cumsum_out) reaches cumsum_stub and its CUDA kernel as a walk up finds it;
``calls`` lists recorded calls only (a public case keeps cumsum_cuda_kernel out of calls("cumsum_out")).
"""

from __future__ import annotations

import re
from pathlib import Path

from ..model import CppSymbol, Edge, EdgeHow, EdgeKind, Loc, Node, NodeKind, RegistrationKind
from ..store.codec import rows_facts
from ..store.reader import Index
from .cpp_edges import stub_callers
from .nodes import cpp_node, stub_node, symbol_id
from .stubs import stub_declared
from .symbols import SYMBOL_COLS, symbol

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


def uses_in(ix: Index, node: Node) -> list[Edge]:
    """The STUB_CALL edges ``stub_uses`` finds out of ``node``: the stubs its file defines that no recorded call
    reaches and whose name its body writes."""
    sid = symbol_id(node)
    sym = symbol(ix, sid) if sid is not None and node.kind is NodeKind.CPP_FUNCTION else None
    if sym is None:
        return []
    memo: dict[str, dict[str, list[Edge]]] = ix.cached("stub_uses_by_file", dict)
    if sym.path not in memo:  # the text-found uses of the stubs this file defines, by function (once a file)
        by_fn: dict[str, list[Edge]] = {}
        for (name,) in ix.q("SELECT DISTINCT r.name FROM cpp_registration r JOIN files f ON f.id = r.file_id "
                            "WHERE r.kind = ? AND f.path = ? ORDER BY r.name",
                            (RegistrationKind.DEFINE_DISPATCH.value, sym.path)):
            stub = stub_node(name, stub_declared(ix, name))
            if not stub_callers(ix, stub):
                for e in stub_uses(ix, stub):
                    by_fn.setdefault(e.src.key, []).append(e)
        memo[sym.path] = by_fn
    return memo[sym.path].get(node.key, [])
