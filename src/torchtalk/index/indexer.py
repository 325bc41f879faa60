"""Build or refresh the index of one source tree.

Flow: list files (stat only) -> decide what changed -> extract changed files in
worker processes -> the parent alone writes them into a copy of the index ->
link stage over all files -> rename the copy into place. An unchanged tree
costs one directory walk and no write at all.
"""

from __future__ import annotations

import json
import os
import sqlite3
import time
from collections.abc import Callable

from .. import __version__
from ..codedigest import code_digest
from ..errors import IndexUnavailable, TorchTalkError
from ..source.files import FileEntry, list_files
from ..source.tree import SourceTree
from ..store import integrity
from ..store.builds import clear_failure, record_failure, write_failure, writer_lock
from ..store.builds import holder as lock_holder
from ..store.db import (
    BuildBusy,
    BuildRejected,
    IndexWriter,
    ReadOnlyCache,
    WriteFailed,
    check_file,
    corrupt_marker,
    is_read_only_error,
    mark_corrupt,
    open_readonly,
    probe,
    probe_writable,
    read_meta,
    remove_temps,
)
from ..store.keys import IdsExhausted
from ..store.schema import SCHEMA_VERSION, STAMP_COLUMNS
from . import generated
from .pipeline import Batch, IndexReport, Workers

# Bump when extractors change what they produce: an index from another version is rebuilt.
# x22: every build publishes a build id, which a store of resolved calls is bound to (Note [Resolved calls]);
# x21: a multi-line argument of a same-file macro (a lambda) keeps the lines it was written on (Note [Arguments keep
# their lines]);
# x20: a pasting macro handed to a list macro of the same file (AT_FORALL_OPERATORS(DEFINE_COMPARATOR)) is expanded
# once per entry of the list, with its real names (lt_out_quantized_cpu), not once as a pattern (##at_op##_out...);
# x19: a decltype return type read as a scope is no part of a definition's name;
# x18: ForeachFuncInfo entries named as they name themselves (_foreach_neg);
# x17: a pybind11 class object held in a variable (reduce_op.def) named in its module;
# x16: a conditional group inside a member-call chain no longer splits it (.def chains of the binding files);
# x15: a pybind11 module made only by a cast (py::cast<py::module>(module)) in a file with no other binding text;
# x14: a kernel held in a local variable and launched, a local given &f and called, Functor<T>()(args);
# x13: a temporary functor's call (T{}(x)) and the functor passed to a launch family; x12: Python branch arms;
# x11: raise sites; x10: canonical ids
# and, after the hand-written step, a digest of the code that decides what the index holds (Note [Written by this
# code] in codedigest.py): an index another version of these packages wrote is built again, bumped or not.
INDEXER_VERSION = f"{__version__}+x22-{code_digest('extract', 'model', 'source', 'store', 'index', 'link')}"


def _existing_state(tree: SourceTree) -> tuple[dict[str, tuple] | None, str, dict[str, str]]:
    """Files in the current index (path -> stamp, hash, layer) and its meta, or None and why."""
    path = tree.index_path
    problem = check_file(path)
    if problem == "missing":
        return None, "no index yet", {}
    if problem:
        return None, f"index was {problem}; rebuilding", {}
    try:
        conn = open_readonly(path)
    except IndexUnavailable as exc:
        return None, f"{exc}; rebuilding", {}
    try:
        marker = corrupt_marker(path)
        if marker.exists():
            return None, f"index was found corrupt ({marker.read_text(errors='replace').strip()[:200]}); rebuilding", {}
        probe(conn)
        meta = read_meta(conn)
        if meta.get("indexer_version") != INDEXER_VERSION:
            return None, f"index made by indexer {meta.get('indexer_version')}, now {INDEXER_VERSION}; rebuilding", {}
        if meta.get("source_root") != str(tree.root):
            return None, "index belongs to another tree; rebuilding", {}
        files = {r[0]: (tuple(r[1:5]), r[5], r[6])
                 for r in conn.execute(f"SELECT path, {STAMP_COLUMNS}, hash, layer FROM files")}
        return files, "refresh", meta
    except Exception as exc:  # corrupt pages surface only when read
        return None, f"index unreadable ({exc}); rebuilding", {}
    finally:
        conn.close()


def plan(entries: list[FileEntry], existing: dict | None, keep_prefix: str | None = None
         ) -> tuple[list[FileEntry], list[str]]:
    """(files to (re)read, paths to drop) relative to the existing index.

    Paths starting with ``keep_prefix`` are not dropped even if absent (their set is
    not known yet: the generators are still running).
    """
    if existing is None:
        return entries, []
    current = {e.relpath for e in entries}
    changed = [e for e in entries if (old := existing.get(e.relpath)) is None or old[0] != e.stamp]
    removed = [p for p in existing if p not in current and not (keep_prefix and p.startswith(keep_prefix))]
    return changed, removed


def refresh(tree: SourceTree, *, force: bool = False, workers: int | None = None,
            show_progress: bool | None = None, codegen: bool = True,
            log: Callable[[str], None] | None = None, lock_timeout: float | None = None) -> IndexReport:
    """Bring the index of ``tree`` up to date. Safe to kill at any moment.

    Another build of the same index is waited for, saying so on ``log``; after ``lock_timeout`` seconds
    (None: as long as it runs) BuildBusy is raised. A build that fails is recorded (``store.builds``) until one
    succeeds; every failure to write is a WriteFailed naming the place, and leaves the previous index as it was.
    """
    t0 = time.perf_counter()
    log = log or (lambda msg: None)
    try:
        tree.index_path.parent.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise IndexUnavailable(f"cannot create the index directory {tree.index_path.parent}: "
                               f"{exc.strerror or exc}. Set TORCHTALK_CACHE_DIR to a writable directory.") from None
    try:
        report = _attempt(tree, force, workers, show_progress, codegen, log, t0, lock_timeout)
    except (BuildBusy, ReadOnlyCache):
        raise  # nothing was tried: not a failed build
    except TorchTalkError as exc:
        record_failure(tree.index_path, str(exc))
        raise
    except Exception as exc:
        record_failure(tree.index_path, f"internal error: {type(exc).__name__}: {exc}")
        raise
    clear_failure(tree.index_path)
    return report


def _attempt(tree: SourceTree, force: bool, workers: int | None, show_progress: bool | None, codegen: bool,
             log: Callable[[str], None], t0: float, lock_timeout: float | None) -> IndexReport:
    try:
        try:
            return _refresh(tree, force, workers, show_progress, codegen, log, t0, lock_timeout)
        except _DamagedBase as exc:
            # Latent damage in the published index, found by the incremental build that copied it.
            mark_corrupt(tree.index_path, f"a refresh found it damaged: {exc}")
            log(f"torchtalk: the index is damaged ({exc}); rebuilding it from scratch")
            report = _refresh(tree, True, workers, show_progress, codegen, log, t0, lock_timeout)
            report.reason = "the index was damaged"
            return report
        except IdsExhausted:
            log("torchtalk: no id is left between two neighbouring files; rebuilding the index from scratch")
            report = _refresh(tree, True, workers, show_progress, codegen, log, t0, lock_timeout)
            report.reason = "ids were used up"
            return report
    except OSError as exc:
        raise _write_failed(tree, exc) from None


def _write_failed(tree: SourceTree, exc: OSError | sqlite3.Error, what: str = "") -> WriteFailed:
    """The error of a build that could not write: where, why, what was kept, what to do."""
    why = write_failure(exc) or (exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc))
    where = what or (f"{exc.filename}" if isinstance(exc, OSError) and exc.filename else
                     f"the index under {tree.index_path.parent}")
    kept = ("the previous index is unchanged" if tree.index_path.exists() else "there is no index yet")
    return WriteFailed(f"could not write {where} ({why}); everything it had written was removed and {kept}. "
                       f"Free space under {tree.index_path.parent} (or set TORCHTALK_CACHE_DIR to a directory with "
                       "room), then run `torchtalk index`")


def _refresh(tree: SourceTree, force: bool, workers: int | None, show_progress: bool | None, codegen: bool,
             log: Callable[[str], None], t0: float, lock_timeout: float | None = None) -> IndexReport:
    with writer_lock(tree.index_path, timeout=lock_timeout, on_wait=lambda m: log(f"torchtalk: {m}")) as got:
        if not got:
            raise BuildBusy(f"another build of {tree.index_path} is running ({lock_holder(tree.index_path)})")
        remove_temps(tree.index_path)  # of builds that were killed; none can be running now
        existing, reason, meta = (None, "--force", {}) if force else _existing_state(tree)
        gen = generated.begin(tree, codegen, meta)
        try:
            entries = list_files(tree.root)
            if gen.state == "reuse":
                entries += generated.finish(tree, gen)
            todo, removed = plan(entries, existing, generated.PREFIX if gen.state == "running" else None)
            if (existing is not None and not todo and not removed and gen.state != "running"
                    and meta.get("codegen_status") == gen.status):
                return IndexReport("up-to-date", reason, time.perf_counter() - t0)
            mode = "incremental" if existing is not None else "full"
            work = (f"{len(todo)} changed and {len(removed)} removed files" if existing is not None else reason)
            try:
                probe_writable(tree.index_path)
            except OSError as exc:
                if not is_read_only_error(exc):
                    raise
                raise ReadOnlyCache(
                    f"the index of {tree.root} needs an update ({work}), but its cache directory "
                    f"{tree.index_path.parent} cannot be written ({exc.strerror or exc}). The index there was left "
                    "as it is; make the directory writable, or set TORCHTALK_CACHE_DIR to a writable one") from None
            log(f"torchtalk: {mode} index of {tree.root} ({reason})")
            report = IndexReport(mode, reason, 0.0)
            if gen.state == "running" and existing is not None:
                # The generators take seconds: publish the hand-written changes first (answers about
                # the edited file are right at once), then the regenerated code in a second version.
                pending = generated.GeneratedPlan("pending", gen.inputs_hash,
                                                  status="updating: the generators are re-running for changed inputs")
                _publish(tree, report, todo, removed, existing, workers, show_progress, "indexing", pending, t0)
                report.layer_seconds["first version published"] = time.perf_counter() - t0
                existing, _reason, _meta = _existing_state(tree)
                todo, removed = [], []
            gen_plan = None
            if gen.state == "running":
                def gen_plan(existing=existing):
                    # Called once the hand-written files are parsed: the generators ran meanwhile.
                    old = {p: v for p, v in (existing or {}).items() if p.startswith(generated.PREFIX)}
                    return plan(generated.finish(tree, gen), old if existing is not None else None)
            _publish(tree, report, todo, removed, existing, workers, show_progress, "indexing", gen, t0, gen_plan)
        finally:
            if gen.job is not None:
                gen.job.cancel()  # a no-op when it finished; never leave generators running
        report.seconds = time.perf_counter() - t0
        return report


def _publish(tree: SourceTree, report: IndexReport, todo: list[FileEntry], removed: list[str],
             existing: dict | None, workers: int | None, show_progress: bool | None, label: str,
             gen: generated.GeneratedPlan, t0: float,
             gen_plan: Callable[[], tuple[list[FileEntry], list[str]]] | None = None) -> None:
    """Write one new version of the index (a copy of the current one, or a new file) and rename it in.

    ``gen_plan`` gives the generated files to (re)index; it is asked only after the
    hand-written files are done, so the generators run while those are parsed.
    """
    incremental = existing is not None
    try:
        writer = IndexWriter(tree.index_path, base_ok=incremental)
    except sqlite3.DatabaseError as exc:
        if write_failure(exc):
            raise _write_failed(tree, exc, f"a new version of the index beside {tree.index_path}") from None
        if incremental:
            raise _DamagedBase(str(exc)) from None
        raise
    try:
        with Workers(workers or os.cpu_count() or 1) as pool:
            hand = Batch(todo, removed, existing or {}, label)
            hand.prepare(writer, report)
            results = pool.map(hand.tasks)
            gen_batch: Batch | None = None

            def queue_generated(wait: bool) -> None:
                # Once the generators are done, their files queue behind the hand-written ones.
                nonlocal gen_batch
                if gen_plan is None or gen_batch is not None or not (wait or gen.job is None or gen.job.done()):
                    return
                gen_todo, gen_removed = gen_plan()
                old = {p: v for p, v in (existing or {}).items() if p.startswith(generated.PREFIX)}
                gen_batch = Batch(gen_todo, gen_removed, old, "generated code")
                gen_batch.results = pool.map(gen_batch.tasks)

            hand.write(writer, report, results, show_progress, lambda: queue_generated(False))
            queue_generated(True)
            if gen_batch is not None:
                # Its ids are given only now, after every hand-written file's (Note [Canonical ids]).
                gen_batch.prepare(writer, report)
                gen_batch.write(writer, report, gen_batch.results, show_progress)
        _link(writer, tree, report, gen, t0)
        t = time.perf_counter()
        writer.commit(verify=_integrity_problem)
        report.layer_seconds["integrity check"] = time.perf_counter() - t
    except (sqlite3.DatabaseError, BuildRejected) as exc:
        writer.abort()
        if isinstance(exc, sqlite3.DatabaseError) and write_failure(exc):  # a full disk is not a damaged index
            raise _write_failed(tree, exc, f"the new version of the index {writer.tmp_path}") from None
        if incremental:  # the damage came with the copy of the published index: start from nothing
            raise _DamagedBase(str(exc)) from None
        raise
    except BaseException:
        writer.abort()
        raise


class _DamagedBase(Exception):
    """An incremental build read damaged pages of the published index, or its result failed the check."""


def _integrity_problem(conn) -> str | None:
    """What SQLite's quick_check finds wrong with a finished build (on its open connection: the pages are
    still in its cache), or None. Never publish a damaged file."""
    conn.execute("PRAGMA mmap_size = 1073741824")  # reads the file in place: ~2x faster than through the cache
    result = integrity.check(None, conn=conn)
    return result.detail if result.ok is False else None


def _link(writer: IndexWriter, tree: SourceTree, report: IndexReport, gen: generated.GeneratedPlan,
          t0: float) -> None:
    t, c = time.perf_counter(), time.process_time()
    writer.finish_facts()
    report.layer_seconds["indexes"] = time.perf_counter() - t
    report.add_cpu("indexes (parent)", time.process_time() - c)
    t, c = time.perf_counter(), time.process_time()
    from ..link.build import build_links
    build_links(writer)
    writer.flush_names()
    report.layer_seconds["link"] = time.perf_counter() - t
    report.add_cpu("link (parent)", time.process_time() - c)
    if gen.state == "running":
        report.layer_seconds["codegen (child, overlapped)"] = gen.seconds
        report.add_cpu("codegen (child)", gen.cpu_seconds)
    report.add_cpu("parent, in all", time.process_time())
    report.seconds = time.perf_counter() - t0
    from ..link.counts import layer_counts
    counts = layer_counts(writer.conn)
    skipped = [r[0] for r in writer.conn.execute(
        "SELECT path || ': ' || status || ': ' || reason FROM files WHERE status != 'ok'")]
    writer.set_meta(
        schema_version=str(SCHEMA_VERSION),
        indexer_version=INDEXER_VERSION,
        source_root=str(tree.root),
        pytorch_version=tree.version,
        last_mode=report.mode,
        last_seconds=f"{report.seconds:.2f}",
        counts=json.dumps(counts),
        skipped=json.dumps(skipped[:200]),
        skipped_count=str(len(skipped)),
        layer_seconds=json.dumps({k: round(v, 2) for k, v in report.layer_seconds.items()}),
        stage_cpu_seconds=json.dumps({k: round(v, 2) for k, v in report.cpu_seconds.items()}),
        codegen_status=gen.status,
        codegen_hash=gen.inputs_hash,
        codegen_cpu_seconds=f"{gen.cpu_seconds:.1f}",
    )
