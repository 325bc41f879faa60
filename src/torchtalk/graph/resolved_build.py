"""The store of resolved calls, built: every call site of one build of the index resolved once, ahead of the
questions (Note [Resolved calls] in store/resolved.py), by worker processes that each resolve whole files."""

from __future__ import annotations

import multiprocessing
import os
import sqlite3
import time
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, nullcontext
from pathlib import Path

from ..errors import IndexUnavailable
from ..model import CallSite, CppSymbol, Edge
from ..store.builds import writer_lock
from ..store.codec import rows_facts
from ..store.db import open_readonly, read_meta
from ..store.reader import Index
from ..store.resolved import (
    EDGE_QUALIFIED,
    EDGE_SKIPPED_BY_GPU_WALK,
    FLAG_CANDIDATES,
    FLAG_STD,
    EdgeRow,
    ResolvedWriter,
    Row,
    resolved_path,
    serving,
)
from .cpp_edges import call_edges
from .cpp_types import all_classes, all_usings, directive_targets, directives, occupied, symbol_qualnames
from .device_reach import skips
from .nodes import symbol_id
from .qualifiers import qualifiers
from .registry import registry
from .resolution import UNRESOLVED, Resolution
from .resolve import resolve, stub_names
from .resolved import without_store
from .symbols import CALL_COLS, pasted_symbols, prefetch_symbols, symbol

TASK_SITES = 4000  # call sites per task of a build (files grouped up to about this many)
# The memo tables resolving one file's calls fills that no other file's calls read (keyed by their caller):
# dropped after each task of a build, which keeps a worker's memory flat.
_PER_CALLER_MEMOS = ("resolutions", "resolvers", "calls_from", "call_rows_by_file", "symbols_by_id")


def warm_resolution(ix: Index) -> None:
    """Load the tables resolving any C++ call looks up (the server's warm-up; each worker of a build)."""
    registry(ix)
    stub_names(ix)
    symbol_qualnames(ix)
    all_classes(ix)
    all_usings(ix)
    directives(ix)
    pasted_symbols(ix)
    occupied(ix)  # the scopes name lookup tries (the first resolution would build it: 60-70 ms)
    directive_targets(ix)


Progress = Callable[[int], AbstractContextManager[Callable[[str], None]]]  # files -> advance(file) per file done


def store_resolved(index_path: Path, source_root: Path, workers: int | None = None, force: bool = False,
                   progress: Progress | None = None) -> str:
    """Store the resolved calls of the index's current build unless they are stored (or ``force``), or another
    process is storing them; one line saying which."""
    with writer_lock(resolved_path(index_path), wait=False) as mine:
        if not mine:
            return f"nothing to do: another process is storing the resolved calls of {index_path}"
        conn = open_readonly(index_path)
        try:
            build_id = read_meta(conn).get("build_id", "")
        finally:
            conn.close()
        if not force and serving(index_path, build_id) is not None:
            return f"the resolved calls of {index_path} are stored for its current build: {resolved_path(index_path)}"
        t0 = time.monotonic()
        done = build(index_path, source_root, workers, progress)
    if done is None:
        return f"the index {index_path} changed while its calls were resolved; nothing stored (run again)"
    _build, sites, rows = done
    return (f"resolved {sites:,} call sites ({rows:,} reach a function, an op or a stub) in "
            f"{time.monotonic() - t0:.1f}s: {resolved_path(index_path)}")


def build(index_path: Path, source_root: Path, workers: int | None = None,
          progress: Progress | None = None) -> tuple[str, int, int] | None:
    """Resolve every call site of the index's current build and publish the store beside it (None when a refresh
    published another build meanwhile: nothing is written). Returns (the build's id, sites resolved, rows
    written). ``progress(files)`` gives the function to call as each file is done. The caller holds the store's
    lock (store.builds.writer_lock on its path). Some edges read the tree's text (a kernel handed to a launching
    lambda): ``source_root`` is the tree the index was built from."""
    ix = Index(index_path)
    build_id = ix.meta.get("build_id")
    if not build_id:
        raise ValueError(f"index {index_path} has no build id (built by an older TorchTalk): run `torchtalk index`")
    tasks = _tasks(ix)
    paths = ix.paths()
    try:
        writer = ResolvedWriter(index_path, build_id)
    except (sqlite3.Error, OSError) as exc:
        raise _unwritable(index_path, exc) from None
    done = written = 0
    shown = progress(sum(len(files) for _, files in tasks)) if progress is not None else nullcontext(_quiet)
    try:
        n = max(1, min(workers or os.cpu_count() or 1, len(tasks) or 1))
        if n == 1:
            _init(index_path, source_root)
            results: Iterator[tuple[list[int], int, list[Row], list[EdgeRow]]] = map(_run, [t for _, t in tasks])
        else:
            ctx = multiprocessing.get_context("spawn")
            pool = ctx.Pool(n, initializer=_init, initargs=(index_path, source_root), maxtasksperchild=None)
            results = pool.imap_unordered(_run, [t for _, t in tasks])
        try:
            with shown as advance:
                for files, sites, rows, edges in results:
                    writer.add(rows, edges)
                    done += sites
                    written += len(rows)
                    for fid in files:
                        advance(paths.get(fid, "?"))
        except BaseException:
            writer.abort()  # first: a stop signal's grace (server/builds.py) may end before the pool's workers do
            raise
        finally:
            if n > 1:
                pool.terminate()
                pool.join()
        if Index(index_path).meta.get("build_id") != build_id:  # a refresh published another build meanwhile
            writer.abort()
            return None
        writer.commit(sites=str(done))
    except (sqlite3.Error, OSError) as exc:  # a full disk, a quota, a place that cannot be written
        writer.abort()
        raise _unwritable(index_path, exc) from None
    except BaseException:
        writer.abort()
        raise
    return build_id, done, written


def _unwritable(index_path: Path, exc: BaseException) -> IndexUnavailable:
    return IndexUnavailable(f"cannot write the store of resolved calls {resolved_path(index_path)} ({exc}); "
                            "answers resolve calls as asked (the same answers; first ones take longer)")


def _quiet(_file: str) -> None:
    pass


def _tasks(ix: Index) -> list[tuple[int, list[int]]]:
    """The files with C++ call sites, grouped into tasks of about TASK_SITES sites: (sites, file ids)."""
    counts = ix.q("SELECT file_id, count(*) FROM cpp_call GROUP BY file_id ORDER BY file_id")
    tasks: list[tuple[int, list[int]]] = []
    for fid, n in counts:
        if not tasks or tasks[-1][0] >= TASK_SITES:
            tasks.append((0, []))
        size, files = tasks[-1]
        tasks[-1] = (size + n, [*files, fid])
    return tasks


_worker_ix: Index | None = None


def _init(index_path: Path, source_root: Path) -> None:
    global _worker_ix
    _worker_ix = Index(index_path, source_root)
    without_store(_worker_ix)
    warm_resolution(_worker_ix)


def _run(file_ids: list[int]) -> tuple[list[int], int, list[Row], list[EdgeRow]]:
    """Resolve the call sites of these files: (the files, sites, rows of those that resolve to something, the edges
    they make: Note [Stored edges])."""
    ix = _worker_ix
    assert ix is not None
    rows: list[Row] = []
    edges: list[EdgeRow] = []
    sites = 0
    for fid in file_ids:
        calls = rows_facts(CallSite, ix.q(f"SELECT {CALL_COLS} FROM cpp_call WHERE file_id = ? ORDER BY line, id",
                                          (fid,)), ix.paths())
        sites += len(calls)
        prefetch_symbols(ix, [c.caller for c in calls if c.has_caller])
        for call in calls:
            caller = symbol(ix, call.caller) if call.has_caller else None
            res = resolve(ix, call, caller) if caller is not None else UNRESOLVED
            if res != UNRESOLVED:
                rows.append(_encode(call.id, res))
            if caller is not None:
                edges += _edge_rows(ix, fid, call, call_edges(ix, caller, call))
    ix.drop_cached(_PER_CALLER_MEMOS)
    return file_ids, sites, rows, edges


def _edge_rows(ix: Index, fid: int, call: CallSite, edges: list[Edge]) -> list[EdgeRow]:
    """The rows of a site's edges (Note [Stored edges] in store/resolved.py)."""
    out: list[EdgeRow] = []
    skipped = EDGE_SKIPPED_BY_GPU_WALK if skips(ix, call) else 0
    for pos, e in enumerate(edges):
        flags, d = skipped, e.dst
        sid = symbol_id(d)
        if sid is not None:
            dst = symbol(ix, sid)
            if dst is not None and call.qualifier in _qualifiers(ix, dst):
                flags |= EDGE_QUALIFIED
            label, path, line = "", "", 0
        else:
            label, path, line = d.label, d.loc.path if d.loc else "", d.loc.line if d.loc else 0
        out.append((call.id, pos, call.caller, fid, call.line, e.kind.value, e.how.value, e.note, e.written, flags,
                    d.kind.value, d.key, label, path, line))
    return out


def _qualifiers(ix: Index, sym: CppSymbol) -> frozenset[str]:
    return ix.memo("build_qualifiers", sym.id, lambda: qualifiers(ix, sym), frozenset())


def _encode(site: int, res: Resolution) -> Row:
    flags = (FLAG_CANDIDATES if res.candidates else 0) | (FLAG_STD if res.std else 0)
    return (site, res.kind.value, ",".join(str(d.id) for d in res.defs), ",".join(res.ops), res.stub, res.spelling,
            flags)


