"""Resolved calls read back from the store (Note [Resolved calls] in store/resolved.py): a site's ``Resolution``
as graph/resolved_build.py computed it for this build of the index, instead of resolving it again."""

from __future__ import annotations

import time

from ..store.reader import Index
from ..store.resolved import FLAG_CANDIDATES, FLAG_STD, DamagedStore, ResolvedStore, Row, discard, open_resolved
from .resolution import UNRESOLVED, Resolution, TargetKind
from .symbols import prefetch_symbols, symbol

RECHECK_S = 5.0  # how often a server without a store looks whether one has landed


class _Holder:
    """The store of one index version, looked for again every RECHECK_S while there is none (a server builds it
    in the background after it starts, or after a refresh)."""

    def __init__(self) -> None:
        self.store: ResolvedStore | None = None
        self.checked = -RECHECK_S


def stored(ix: Index) -> ResolvedStore | None:
    """The store of resolved calls of this index version, or None (none yet, or another build's)."""
    holder: _Holder = ix.cached("resolved_store", _Holder)
    if holder.store is None:
        now = time.monotonic()
        if now - holder.checked >= RECHECK_S:
            holder.checked = now
            holder.store = open_resolved(ix.path, ix.meta.get("build_id"))
    return holder.store


def without_store(ix: Index) -> None:
    """Resolve every call of this index as asked, whatever store there is (the build of a store)."""
    holder: _Holder = ix.cached("resolved_store", _Holder)
    holder.store, holder.checked = None, float("inf")


def use_store(ix: Index, store: ResolvedStore | None) -> None:
    """Read this store for this index, whatever is in place (the GPU walks of a store being built read its calls:
    Note [Stored GPU walks] in store/resolved.py)."""
    holder: _Holder = ix.cached("resolved_store", _Holder)
    holder.store, holder.checked = store, float("inf")


def stored_resolution(ix: Index, store: ResolvedStore, site: int) -> Resolution | None:
    """The resolution the store holds for a call site (UNRESOLVED when it has no row: the site resolved to
    nothing); None when the store turned out damaged (resolve the site as asked)."""
    memo: dict[int, Resolution] = ix.cached("stored_resolutions", dict)
    found = memo.get(site)
    if found is None:
        try:
            row = store.row(site)
        except DamagedStore as exc:
            damaged(ix, store, exc)
            return None
        found = memo[site] = _decode(ix, row) if row is not None else UNRESOLVED
    return found


def damaged(ix: Index, store: ResolvedStore, exc: DamagedStore) -> None:
    """Go on without a store a read found damaged, and drop it (Note [Resolved calls])."""
    holder: _Holder = ix.cached("resolved_store", _Holder)
    if holder.store is store:  # the first reader to find it
        without_store(ix)
        ix.drop_cached(("stored_resolutions",))
        discard(store, str(exc))


def prefetch_resolutions(ix: Index, sites: list[int]) -> None:
    """Read the stored resolutions of many sites at once (a function's sites before its edges are made, a name's
    thousands of sites before its callers are found): by ranges of consecutive ids, not one query a site."""
    store = stored(ix)
    if store is None:
        return
    memo: dict[int, Resolution] = ix.cached("stored_resolutions", dict)
    wanted = sorted({s for s in sites if s and s not in memo})
    if not wanted:
        return
    try:
        if wanted[-1] - wanted[0] < 4 * len(wanted):  # dense: one range
            keep = set(wanted)
            rows = [r for r in store.between(wanted[0], wanted[-1]) if r[0] in keep]
        else:
            rows = store.rows(wanted)
    except DamagedStore as exc:
        damaged(ix, store, exc)
        return
    prefetch_symbols(ix, [int(i) for r in rows if r[2] for i in r[2].split(",")])
    for r in rows:
        memo[r[0]] = _decode(ix, r)
    for s in wanted:
        memo.setdefault(s, UNRESOLVED)


def _decode(ix: Index, row: Row) -> Resolution:
    _site, kind, defs, ops, stub, spelling, flags = row
    syms = tuple(s for i in defs.split(",") if (s := symbol(ix, int(i))) is not None) if defs else ()
    return Resolution(TargetKind(kind), syms, tuple(ops.split(",")) if ops else (), stub, spelling,
                      bool(flags & FLAG_CANDIDATES), bool(flags & FLAG_STD))
