"""The edges out of a function, and the callers of a function or an op, read from the store of resolved calls (Note
[Stored edges] in store/resolved.py), instead of made site by site (graph/cpp_edges.py) or found by resolving every
call site that names the function (graph/cpp_callers.py).

The store holds the edges graph/cpp_edges.py ``call_edges`` made at each site when it was computed, by the code
reading it (its ``version``), for this build of the index: the edges read here are those the sites make, so
``calls`` and ``called_by`` agree by construction, as when the sites are resolved as asked. Every edge into the
function is one, whatever the site names (a call of a function parameter reaching what its callers pass, an
override reached from its base's call), where resolving as asked only looks at the sites naming the function.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TypeVar

from ..model import CppSymbol, Edge, EdgeHow, EdgeKind, Loc, Node, NodeKind, SymbolKind
from ..store.reader import Index
from ..store.resolved import EDGE_QUALIFIED, EDGE_SKIPPED_BY_GPU_WALK, DamagedStore, EdgeRow, ResolvedStore
from .nodes import CPP_KINDS, symbol_node
from .resolved import damaged, stored
from .symbols import defs_by_qualname, prefetch_symbols, symbol

_CPP_KIND_VALUES = frozenset(k.value for k in CPP_KINDS)
# the enums by their stored values (a dict lookup: an Enum call per column of thousands of rows is not free)
_NODE_KINDS = {k.value: k for k in NodeKind}
_EDGE_KINDS = {k.value: k for k in EdgeKind}
_EDGE_HOWS = {h.value: h for h in EdgeHow}


def stored_callers(ix: Index, target: CppSymbol, kind: EdgeKind) -> list[Edge] | None:
    """CALL or LAUNCH edges into ``target`` as cpp_callers.callers gives them, from the store; None without one.

    Of each site, its first edge of ``kind`` into ``target`` or a declaration of it (one with its qualified name,
    unless ``target`` is file-local); a call reaches a function only when written with a qualifier its scope
    allows, a method whatever the receiver (written as allowed first); the objects and functions handed to
    templates that call them (``EdgeHow.HANDED``) after the sites that name it."""
    keys = [str(target.id)]
    if not target.is_file_local:
        keys += [str(d.id) for d in defs_by_qualname(ix, target.qualname, definitions_only=False)
                 if not d.is_definition and d.id != target.id]
    rows = _rows(ix, keys, kind)
    if rows is None:
        return None
    method = target.kind in (SymbolKind.METHOD, SymbolKind.CONSTRUCTOR)
    direct: list[tuple[int, int, Edge]] = []
    handed: list[Edge] = []
    sites: set[int] = set()
    for r in rows:
        if r[10] not in _CPP_KIND_VALUES:
            continue
        if r[6] == EdgeHow.HANDED.value:
            if (e := _edge(ix, r)) is not None and e not in handed:
                handed.append(e)
            continue
        qualified = bool(r[9] & EDGE_QUALIFIED) or kind is EdgeKind.LAUNCH
        if r[0] in sites or not (qualified or method):
            continue  # decoded only when kept: a function's thousands of callers, for a first impact
        if (e := _edge(ix, r)) is None:
            continue
        sites.add(r[0])
        direct.append((0 if qualified else 1, r[0], e))
    direct.sort(key=lambda t: (t[0], t[1]))
    out = [e for _g, _s, e in direct]
    return out + [e for e in handed if e not in out]


def stored_op_callers(ix: Index, op_full: str) -> list[Edge] | None:
    """DISPATCH_CALL edges into an op, one per site (its first), by site; None without a store."""
    rows = _rows(ix, [op_full], EdgeKind.DISPATCH_CALL)
    if rows is None:
        return None
    out: list[Edge] = []
    sites: set[int] = set()
    for r in rows:
        if r[0] not in sites and r[10] == NodeKind.OP.value and (e := _edge(ix, r)) is not None:
            sites.add(r[0])
            out.append(e)
    return out


def stored_out_edges(ix: Index, sym: CppSymbol, gpu_walk: bool = False) -> list[Edge] | None:
    """Every edge out of function ``sym`` (without the sites the GPU walk skips when ``gpu_walk``), in source order,
    as cpp_edges.sites_edges makes them; None without a store."""
    rows = read_stored(ix, lambda store: store.edges_from(sym.id))
    if rows is None:
        return None
    prefetch_symbols(ix, [int(r[11]) for r in rows if r[10] in _CPP_KIND_VALUES and r[11].isdigit()])
    out = []
    for r in rows:
        if not (gpu_walk and r[9] & EDGE_SKIPPED_BY_GPU_WALK) and (e := _edge(ix, r)) is not None:
            out.append(e)
    return out


def _rows(ix: Index, keys: list[str], kind: EdgeKind) -> list[EdgeRow] | None:
    rows = read_stored(ix, lambda store: store.edges_into(keys, [kind.value]))
    if rows is not None:
        prefetch_symbols(ix, [r[2] for r in rows] + ([int(k) for k in keys] if kind is not EdgeKind.DISPATCH_CALL
                                                     else []))
    return rows


T = TypeVar("T")


def read_stored(ix: Index, fetch: Callable[[ResolvedStore], T]) -> T | None:
    """What ``fetch`` reads from the store of this index version; None without one, or when it turns out damaged
    (dropped: the sites are resolved as asked)."""
    store = stored(ix)
    if store is None:
        return None
    try:
        return fetch(store)
    except DamagedStore as exc:
        damaged(ix, store, exc)
        return None


def _edge(ix: Index, r: EdgeRow) -> Edge | None:
    _site, _pos, src_id, file_id, line, kind, how, note, written, _flags, dkind, key, label, path, dline = r
    src = symbol(ix, src_id)
    if src is None:
        return None
    node_kind = _NODE_KINDS[dkind]
    if node_kind in CPP_KINDS and key.isdigit():
        sym = symbol(ix, int(key))
        if sym is None:
            return None
        dst = symbol_node(ix, sym)
    else:
        dst = Node(node_kind, key, label, Loc(path, dline) if dline else None)
    return Edge(symbol_node(ix, src), dst, _EDGE_KINDS[kind], Loc(ix.path_of(file_id), line), note=note,
                how=_EDGE_HOWS[how], written=written)
