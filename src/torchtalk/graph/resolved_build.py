"""The store of resolved calls, built: every call site of one build of the index resolved once, ahead of the
questions (Note [Resolved calls] in store/resolved.py), by worker processes that each resolve whole files."""

from __future__ import annotations

import logging
import multiprocessing
import os
import sqlite3
import time
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, contextmanager, nullcontext
from pathlib import Path
from typing import TypeVar

from ..errors import IndexUnavailable
from ..model import CallSite, CppSymbol, Edge, EdgeKind, Node
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
    WalkRow,
    open_resolved,
    pack,
    resolved_path,
    serving,
)
from .cpp_edges import call_edges
from .cpp_types import all_classes, all_usings, directive_targets, directives, occupied, symbol_qualnames
from .device_reach import skips
from .gpu import HOPS, MAX_DEPTH, NOTHING_DEPTH, NOTHING_HOPS, gpu_edge, gpu_reach, gpu_walk
from .graph import graph
from .nodes import CPP_KINDS, op_node, symbol_id
from .qualifiers import qualifiers
from .registry import registry
from .resolution import UNRESOLVED, Resolution
from .resolve import resolve, stub_names
from .resolved import use_store, without_store
from .symbols import CALL_COLS, pasted_symbols, prefetch_symbols, symbol

log = logging.getLogger(__name__)
T = TypeVar("T")
R = TypeVar("R")
TASK_SITES = 4000  # call sites per task of a build (files grouped up to about this many)
TASK_OPS = 40  # ops per task of the GPU walks (neighbours in name order: they share code the worker has walked)
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


# (items, what is done to them, what they are) -> advance(item) per item done: the files whose calls are resolved,
# then the ops whose GPU code is walked
Progress = Callable[[int, str, str], AbstractContextManager[Callable[[str], None]]]


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
    return (f"resolved {sites:,} call sites ({rows:,} reach a function, an op or a stub) and walked each op's GPU "
            f"code in {time.monotonic() - t0:.1f}s: {resolved_path(index_path)}")


def build(index_path: Path, source_root: Path, workers: int | None = None,
          progress: Progress | None = None) -> tuple[str, int, int] | None:
    """Resolve every call site of the index's current build and publish the store beside it (None when a refresh
    published another build meanwhile: nothing is written). Returns (the build's id, sites resolved, rows
    written). ``progress(items, what, unit)`` gives the function to call as each file (then each op) is done. The caller
    holds the store's lock (store.builds.writer_lock on its path). Some edges read the tree's text (a kernel handed
    to a launching lambda): ``source_root`` is the tree the index was built from."""
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
    try:
        with _pool(writer, workers, len(tasks), _init, (index_path, source_root, None)) as run:
            with _shown(progress, sum(len(files) for _, files in tasks), "resolving calls", "files") as advance:
                for files, sites, rows, edges in run(_run, [t for _, t in tasks]):
                    writer.add(rows, edges)
                    done += sites
                    written += len(rows)
                    for fid in files:
                        advance(paths.get(fid, "?"))
        # Note [Stored GPU walks]: the walks read the calls just stored, from the file not yet in place
        store = (writer.readable(sites=str(done)), build_id)
        ops = sorted(registry(ix).by_full)
        op_tasks = [ops[i:i + TASK_OPS] for i in range(0, len(ops), TASK_OPS)]
        walked: list[WalkRow] = []  # written once no worker reads the file
        with _pool(writer, workers, len(op_tasks), _init, (index_path, source_root, store)) as run:
            with _shown(progress, len(ops), "walking each op's GPU code", "ops") as advance:
                for done_ops, walks in run(_walk_ops, op_tasks):
                    walked += walks
                    for op in done_ops:
                        advance(op)
        unique = {w[:4]: w for w in walked}  # a kernel of ops of two tasks: the same walk twice
        if Index(index_path).meta.get("build_id") != build_id:  # a refresh published another build meanwhile
            writer.abort()
            return None
        writer.add_walks(unique.values())
        writer.commit(walks=str(len(unique)))
    except (sqlite3.Error, OSError) as exc:  # a full disk, a quota, a place that cannot be written
        writer.abort()
        raise _unwritable(index_path, exc) from None
    except BaseException:
        writer.abort()
        raise
    return build_id, done, written


def _shown(progress: Progress | None, items: int, what: str,
           unit: str) -> AbstractContextManager[Callable[[str], None]]:
    return progress(items, what, unit) if progress is not None else nullcontext(_quiet)


@contextmanager
def _pool(writer: ResolvedWriter, workers: int | None, tasks: int, init: Callable[..., None],
          initargs: tuple[object, ...]) -> Iterator[Callable[[Callable[[T], R], list[T]], Iterator[R]]]:
    """Run tasks in this process (one worker) or in a pool of ``workers`` processes (spawned, each initialised
    by ``init(*initargs)``): a function mapping a task function over the tasks, results as they come."""
    n = max(1, min(workers or os.cpu_count() or 1, tasks or 1))
    if n == 1:
        init(*initargs)
        yield lambda fn, items: map(fn, items)
        return
    pool = multiprocessing.get_context("spawn").Pool(n, initializer=init, initargs=initargs, maxtasksperchild=None)
    try:
        yield lambda fn, items: pool.imap_unordered(fn, items)
    except BaseException:
        writer.abort()  # first: a stop signal's grace (server/builds.py) may end before the pool's workers do
        raise
    finally:
        pool.terminate()
        pool.join()


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
_worker_error: Exception | None = None


def _init(index_path: Path, source_root: Path, store: tuple[Path, str] | None) -> None:
    """A worker: its index, resolving calls as asked (``store`` None), or reading those of the store being built
    at ``store`` (its path and build: the GPU walks). What fails here is raised by the worker's first task: a pool
    replaces a worker whose initializer raises with another, forever (an index replaced by one of another schema
    while the store was built kept two processes respawning)."""
    global _worker_ix, _worker_error
    try:
        if _worker_ix is not None:  # the build's first phase, in this process (one worker)
            _worker_ix.close()
        _worker_ix = Index(index_path, source_root)
        if store is None:
            without_store(_worker_ix)
        else:
            use_store(_worker_ix, open_resolved(index_path, store[1], store[0]))
        warm_resolution(_worker_ix)
        _worker_error = None
    except Exception as exc:  # noqa: BLE001 - reported by the tasks, in the parent
        _worker_error = exc


def _ready() -> Index:
    """The worker's index, or what failed when it was opened, raised."""
    if _worker_error is not None:
        raise _worker_error
    assert _worker_ix is not None
    return _worker_ix


def _walk_ops(ops: list[str]) -> tuple[list[str], list[WalkRow]]:
    """These ops, and the rows of the GPU walks the store keeps for them (Note [Stored GPU walks] in
    store/resolved.py): each op's at MAX_DEPTH, and when it found nothing and was cut, the look further cuda_kernels
    takes then; the walk below each of its kernels for a key that runs on a GPU (trace's GPU lines), once."""
    ix = _ready()
    with ix.using():  # Note [A batch holds its connection]
        return _walk_ops_held(ix, ops)


def _walk_ops_held(ix: Index, ops: list[str]) -> tuple[list[str], list[WalkRow]]:
    reg, g = registry(ix), graph(ix)
    out: list[WalkRow] = []
    kernels: dict[tuple[str, str], Node] = {}
    for full in ops:
        op = op_node(reg.by_full[full])
        try:
            first = gpu_walk(ix, op)
            out.append((op.kind.value, op.key, MAX_DEPTH, HOPS, pack(first)))
            if not first.launches and not first.libraries and first.cuts:
                out.append((op.kind.value, op.key, NOTHING_DEPTH, NOTHING_HOPS,
                            pack(gpu_walk(ix, op, NOTHING_DEPTH, NOTHING_HOPS))))
        except Exception:  # a walk that fails here fails when asked too, where it is reported; the store goes on
            log.warning("the GPU walk of op %s failed; it is walked when asked", full, exc_info=True)
        for e in g.out(op, [EdgeKind.KERNEL]):
            if e.dst.kind in CPP_KINDS and gpu_edge(e):
                kernels.setdefault((e.dst.kind.value, e.dst.key), e.dst)
    for (kind, key), node in kernels.items():
        try:
            out.append((kind, key, MAX_DEPTH, HOPS, pack(gpu_reach(ix, node))))
        except Exception:
            log.warning("the GPU walk below kernel %s failed; it is walked when asked", node.label, exc_info=True)
    return ops, out


def _run(file_ids: list[int]) -> tuple[list[int], int, list[Row], list[EdgeRow]]:
    """Resolve the call sites of these files: (the files, sites, rows of those that resolve to something, the edges
    they make: Note [Stored edges])."""
    ix = _ready()
    with ix.using():  # Note [A batch holds its connection]
        return _run_held(ix, file_ids)


def _run_held(ix: Index, file_ids: list[int]) -> tuple[list[int], int, list[Row], list[EdgeRow]]:
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


