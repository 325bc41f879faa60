"""C++ symbols read back from the index: by id, name or qualified name, and kernels as the YAML names them.

A YAML kernel name ``relu`` means ``at::native::relu``; for a structured op it means
``TORCH_IMPL_FUNC(relu_out)`` (a ufunc op's ``ufunc_add_CUDA``: the one torchgen writes in
``UfuncCUDA_add.cu``). Other functions of the same short name elsewhere are different
functions and are never returned for a kernel.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from ..model import CallKind, CallSite, CppSymbol, SymbolKind
from ..store.codec import Row, codec, row_fact, rows_facts
from ..store.reader import Index

SYMBOL_COLS = codec(CppSymbol).select()
CALL_COLS = codec(CallSite).select()


def to_symbol(ix: Index, row: Row) -> CppSymbol:
    sym: CppSymbol = row_fact(CppSymbol, row, ix.path_of)
    return sym


def to_call(ix: Index, row: Row) -> CallSite:
    call: CallSite = row_fact(CallSite, row, ix.path_of)
    return call


def has_cpp(ix: Index) -> bool:
    return bool(ix.cached("has_cpp", lambda: bool(ix.one("SELECT 1 FROM cpp_symbol LIMIT 1"))))


def symbol(ix: Index, sid: int) -> CppSymbol | None:
    memo: dict[int, CppSymbol | None] = ix.cached("symbols_by_id", dict)
    if sid not in memo:
        row = ix.one(f"SELECT {SYMBOL_COLS} FROM cpp_symbol WHERE id = ?", (sid,))
        memo[sid] = to_symbol(ix, row) if row else None
    return memo[sid]


def prefetch_symbols(ix: Index, ids: Iterable[int]) -> None:
    """Read the symbols of these ids not yet read, in a few queries (the callers of a name's thousands of call
    sites: one query each would cost more than resolving the calls)."""
    memo: dict[int, CppSymbol | None] = ix.cached("symbols_by_id", dict)
    missing = sorted({i for i in ids if i not in memo})
    for k in range(0, len(missing), 500):
        chunk = missing[k:k + 500]
        rows = ix.q(f"SELECT {SYMBOL_COLS} FROM cpp_symbol WHERE id IN ({','.join('?' * len(chunk))})", chunk)
        for sym in rows_facts(CppSymbol, rows, ix.paths()):
            memo[sym.id] = sym
        for i in chunk:
            memo.setdefault(i, None)


def _symbols(ix: Index, where: str, params: tuple[object, ...], definitions_only: bool) -> list[CppSymbol]:
    sql = f"SELECT {SYMBOL_COLS} FROM cpp_symbol WHERE {where}" + (" AND is_definition" if definitions_only else "")
    return rows_facts(CppSymbol, ix.q(sql + " ORDER BY file_id, line", params), ix.paths())


def defs_by_qualname(ix: Index, qualname: str, definitions_only: bool = True) -> list[CppSymbol]:
    return _symbols(ix, "qualname = ?", (qualname,), definitions_only)


def defs_by_name(ix: Index, name: str, definitions_only: bool = True) -> list[CppSymbol]:
    return _symbols(ix, "name = ?", (name,), definitions_only)


def defs_in_file(ix: Index, file_id: int, name: str) -> list[CppSymbol]:
    return _symbols(ix, "file_id = ? AND name = ?", (file_id, name), True)


_KERNEL_KINDS = (SymbolKind.GLOBAL_KERNEL.value, SymbolKind.METAL_KERNEL.value)


def gpu_kernels_named(ix: Index, name: str) -> list[CppSymbol]:
    return _symbols(ix, "name = ? AND kind IN (?, ?)", (name, *_KERNEL_KINDS), False)


def launched_names_of_no_kernel(ix: Index) -> list[str]:
    """The names ``<<<>>>`` sites launch that no kernel has (``kernel_fn``, a lambda's parameter), in one query
    over the launch sites' partial index (store/schema.py PARTIAL_INDEXES), each name looked up by name: no table
    is scanned (before, every call site and every symbol were: 0.4 s of the first called_by on 2.6.0)."""
    return [n for (n,) in ix.q("SELECT DISTINCT callee FROM cpp_call c WHERE kind = ? AND NOT EXISTS "
                               "(SELECT 1 FROM cpp_symbol s WHERE s.name = c.callee AND s.kind IN (?, ?)) "
                               "ORDER BY callee", (CallKind.LAUNCH.value, *_KERNEL_KINDS))]


def pasted_symbols(ix: Index) -> dict[str, list[tuple[str, CppSymbol]]]:
    """scope -> [(name pattern, symbol)] of the functions name-pasting macros make (extract/cpp_macros.py)."""
    def load() -> dict[str, list[tuple[str, CppSymbol]]]:
        out: dict[str, list[tuple[str, CppSymbol]]] = {}
        rows = ix.q(f"SELECT {SYMBOL_COLS} FROM cpp_symbol WHERE name LIKE '%##%' AND macro != ''")
        for s in rows_facts(CppSymbol, rows, ix.paths()):
            if "(" not in s.name:
                out.setdefault(s.qualname.rsplit("::", 1)[0] if "::" in s.qualname else "", []).append((s.name, s))
        return out
    table: dict[str, list[tuple[str, CppSymbol]]] = ix.cached("pasted_symbols", load)
    return table


def pasted_match(pattern: str, name: str) -> bool:
    """Whether ``name`` is one the pattern makes: its parameters (the parts between ``##`` pairs, see
    extract/cpp_macros.unpaste) any identifier text, the rest as written. ``_cast_##n##`` makes
    ``_cast_Byte`` (not ``mean``); a pattern that is all parameters makes nothing we can tell."""
    parts = pattern.split("##")
    if not any(p for p in parts[::2]):
        return False
    regex = "".join(r"\w+" if i % 2 else re.escape(p) for i, p in enumerate(parts))
    return re.fullmatch(regex, name) is not None


def calls_from(ix: Index, sid: int) -> list[CallSite]:
    """The call sites in function ``sid``'s body, in source order (memoised per index version: do not modify).
    A walk asks for many functions of one file (a kernel file's launchers and helpers): the rows of the file's
    calls are read in one query and decoded function by function."""
    memo: dict[int, list[CallSite]] = ix.cached("calls_from", dict)
    found = memo.get(sid)
    if found is None:
        sym = symbol(ix, sid)
        waiting = _call_rows_of_file(ix, sym.path) if sym is not None else {}
        rows = waiting.get(sid)
        if rows is None:  # none, or another thread decoded them (it memoised the facts before dropping the rows)
            return memo.get(sid, [])
        found = memo[sid] = rows_facts(CallSite, rows, ix.paths())
        waiting.pop(sid, None)  # the rows are dropped once decoded: only the file's other functions' wait
    return found


def _call_rows_of_file(ix: Index, path: str) -> dict[int, list[Row]]:
    """caller -> rows of its calls (ORDER BY line, id), for the functions of one file (calls are in their
    caller's file)."""
    memo: dict[str, dict[int, list[Row]]] = ix.cached("call_rows_by_file", dict)
    found = memo.get(path)
    if found is None:
        ids = ix.file_ids()
        found = {}
        if path in ids:
            for row in ix.q(f"SELECT {CALL_COLS} FROM cpp_call WHERE file_id = ? ORDER BY line, id", (ids[path],)):
                found.setdefault(row[_CALLER], []).append(row)
        memo[path] = found
    return found


_CALLER = 2 + codec(CallSite).columns.index("caller")  # its place in a row selected with CALL_COLS


def calls_named(ix: Index, callee: str, qualifiers: tuple[str, ...] = (), limit: int = 20000) -> list[CallSite]:
    """Call sites naming ``callee`` (with one of ``qualifiers`` as written, when given)."""
    if qualifiers:
        marks = ",".join("?" * len(qualifiers))
        rows = ix.q(f"SELECT {CALL_COLS} FROM cpp_call WHERE callee = ? AND qualifier IN ({marks}) LIMIT ?",
                    (callee, *qualifiers, limit))
    else:
        rows = ix.q(f"SELECT {CALL_COLS} FROM cpp_call WHERE callee = ? LIMIT ?", (callee, limit))
    return rows_facts(CallSite, rows, ix.paths())


def call_count(ix: Index, callee: str) -> int:
    """How many call sites of the index name ``callee`` (memoised per index version): how common a callee is."""
    def count() -> int:
        row = ix.one("SELECT count(*) FROM cpp_call WHERE callee = ?", (callee,))
        return int(row[0]) if row else 0
    return ix.memo("call_count", callee, count, 0)


def kernel_definitions(ix: Index, kernel: str, structured: bool) -> list[CppSymbol]:
    """Where the kernel a dispatch table names is defined (hand-written code first)."""
    if not has_cpp(ix):
        return []
    memo: dict[tuple[str, bool], list[CppSymbol]] = ix.cached("kernel_definitions", dict)
    key = (kernel, structured)
    if key not in memo:
        memo[key] = _kernel_definitions(ix, kernel, structured)
    return list(memo[key])


def _kernel_definitions(ix: Index, kernel: str, structured: bool) -> list[CppSymbol]:
    short = kernel.split("::")[-1]
    found: list[CppSymbol] = []
    if structured:
        found = [d for d in defs_by_name(ix, short) if d.kind is SymbolKind.IMPL_FUNC]
    if not found:
        qual = kernel if kernel.startswith("at::") else f"at::native::{kernel}"
        found = defs_by_qualname(ix, qual)
    if not found:
        # Kernels defined inside an anonymous namespace or a nested one of at::native.
        found = [d for d in defs_by_name(ix, short)
                 if d.qualname.startswith("at::native::") and not d.kind.is_gpu_kernel
                 and d.kind is not SymbolKind.DEVICE_FUNCTION]
    if not found:
        # Kernels a name-pasting macro defines (_cast_##n## makes _cast_Byte): the definition at the macro's use.
        found = [s for scope, entries in pasted_symbols(ix).items() if scope.startswith("at::native")
                 for pattern, s in entries if pasted_match(pattern, short)]
    return sorted(found, key=lambda d: (d.in_generated, d.path, d.line))
