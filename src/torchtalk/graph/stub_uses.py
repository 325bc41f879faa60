"""STUB_CALL edges found in the source text: functions that pass a DispatchStub on without calling it.

Note [Stub uses]: ``impl_func_cum_ops(self, dim, result, cumsum_stub)`` hands the stub to a helper that
calls it: the index records calls, not names passed as arguments, so the graph has
no STUB_CALL edge for it and a walk up from a CPU or CUDA kernel would stop at the
stub. The file that defines the stub (``DEFINE_DISPATCH``) is where its kernels are
called from, so that file's text is searched for the stub's name, and each hit
belongs to the innermost definition around it. graph.py's INTO rule for STUB_CALL uses
this only for a stub no recorded call site reaches; every edge it makes says how it was
found (``EdgeHow.TEXT``). Its OUT rule for STUB_CALL reads the same text the other way (``stub_uses_from``):
the stubs a function's body names in the file that defines them, and does not call where a call site is
recorded (``angle_out`` handing ``angle_stub`` to ``unary_op_impl_with_complex_to_float_out``, whose
``stub(iter.device_type(), iter)`` calls a parameter; ``all_all_out`` handing ``and_stub`` to ``allany_impl``),
so every walk down from an op's kernel reaches the stub and its kernels: trace lists it under the kernel, the
GPU walk goes on to its CUDA kernel. ``calls`` keeps to the calls a function makes: the stub is called one level
deeper, by the helper (the public acceptance case for ``calls("cumsum_out")`` says so). A stub named as an
argument in a function's body is now also a REF site (Note [References] in extract/cpp_calls.py), a STUB_CALL
``EdgeHow.PASSED_ON``; the text search remains for what no REF site records (a stub named outside an argument
list or an initializer list).
"""

from __future__ import annotations

import re

from ..model import CppSymbol, Edge, EdgeHow, EdgeKind, Loc, Node, NodeKind, RegistrationKind
from ..store.codec import rows_facts
from ..store.reader import Index
from .nodes import cpp_node, stub_node, symbol_id
from .source_lines import file_lines
from .stubs import stub_declared
from .symbols import SYMBOL_COLS, symbol

NOTE = "passes the stub on (found in the source text: no call site is recorded for it)"
_SKIP = re.compile(r"\b(DEFINE_DISPATCH|DECLARE_DISPATCH|REGISTER_\w*DISPATCH)\b")


def stub_uses(ix: Index, node: Node) -> list[Edge]:
    if node.kind is not NodeKind.STUB or ix.source_root is None:
        return []
    memo: dict[str, list[Edge]] = ix.cached("stub_uses", dict)
    if node.key not in memo:
        memo[node.key] = _uses(ix, node)
    return memo[node.key]


def _uses(ix: Index, node: Node) -> list[Edge]:
    out: list[Edge] = []
    for fid, path in ix.q("SELECT DISTINCT r.file_id, f.path FROM cpp_registration r JOIN files f ON f.id = r.file_id "
                          "WHERE r.kind = ? AND r.name = ?", (RegistrationKind.DEFINE_DISPATCH.value, node.key)):
        out += [Edge(cpp_node(sym), node, EdgeKind.STUB_CALL, Loc(path, n), note=NOTE, how=EdgeHow.TEXT,
                     written=node.key) for sym, _name, n in _named_in(ix, path, fid, [node.key])]
    return out


def _named_in(ix: Index, path: str, fid: int, names: list[str]) -> list[tuple[CppSymbol, str, int]]:
    """Where the text of ``path`` names one of the stubs ``names`` (outside comments and the DEFINE/DECLARE/REGISTER
    lines): (the innermost definition around the hit, the stub's name, the line), once per definition and name,
    in line order."""
    pat = re.compile(r"\b(" + "|".join(re.escape(n) for n in sorted(names, key=len, reverse=True)) + r")\b")
    lines = file_lines(ix, path)
    syms: list[CppSymbol] | None = None  # read once the file names a stub
    out: list[tuple[CppSymbol, str, int]] = []
    seen: set[tuple[int, str]] = set()
    for n, text in enumerate(lines, 1):
        if _SKIP.search(text) or text.lstrip().startswith("//"):
            continue
        for m in pat.finditer(text):
            if syms is None:
                syms = rows_facts(CppSymbol, ix.q(
                    f"SELECT {SYMBOL_COLS} FROM cpp_symbol WHERE file_id = ? AND is_definition", (fid,)), ix.paths())
            around = [s for s in syms if s.line <= n <= s.end_line]
            if not around:
                continue
            sym = min(around, key=lambda s: s.end_line - s.line)
            if (sym.id, m.group(1)) not in seen:
                seen.add((sym.id, m.group(1)))
                out.append((sym, m.group(1), n))
    return out


def stub_uses_from(ix: Index, node: Node) -> list[Edge]:
    """STUB_CALL edges out of a C++ function found in the source text (Note [Stub uses]): the stubs its file
    defines that its body names (the innermost definition around each hit)."""
    sid = symbol_id(node)
    sym = symbol(ix, sid) if sid is not None and ix.source_root is not None else None
    if sym is None or sym.loc is None:
        return []
    memo: dict[str, dict[int, list[Edge]]] = ix.cached("stub_uses_from", dict)
    path = sym.loc.path
    if path not in memo:
        memo[path] = _uses_in_file(ix, path)
    return memo[path].get(sym.id, [])


def _uses_in_file(ix: Index, path: str) -> dict[int, list[Edge]]:
    rows = ix.q("SELECT DISTINCT r.name, r.file_id FROM cpp_registration r JOIN files f ON f.id = r.file_id "
                "WHERE r.kind = ? AND f.path = ?", (RegistrationKind.DEFINE_DISPATCH.value, path))
    if not rows:
        return {}
    out: dict[int, list[Edge]] = {}
    for sym, name, n in _named_in(ix, path, rows[0][1], sorted({name for name, _fid in rows})):
        out.setdefault(sym.id, []).append(Edge(cpp_node(sym), stub_node(name, stub_declared(ix, name)),
                                               EdgeKind.STUB_CALL, Loc(path, n), note=NOTE, how=EdgeHow.TEXT,
                                               written=name))
    return out
