"""Build or refresh the index of one source tree.

Flow: list files (stat only) -> decide what changed -> extract changed files in
worker processes -> the parent alone writes them into a copy of the index ->
link stage over all files -> rename the copy into place. An unchanged tree
costs one directory walk and no write at all.
"""

from __future__ import annotations

import json
import multiprocessing
import os
import sys
import time
from collections import Counter
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field

from .. import __version__
from ..errors import IndexUnavailable
from ..extract.worker import Result, Task, run_task
from ..source.files import FileEntry, list_files
from ..source.tree import SourceTree
from ..store.db import IndexWriter, check_file, open_readonly, read_meta, writer_lock
from ..store.schema import SCHEMA_VERSION
from . import progress as progress_mod

# Bump when extractors change what they produce: an index from another version is rebuilt.
INDEXER_VERSION = f"{__version__}+x1"


@dataclass
class IndexReport:
    mode: str  # "full" | "incremental" | "up-to-date"
    reason: str
    seconds: float
    parsed: int = 0
    unchanged: int = 0
    removed: int = 0
    skipped: list[str] = field(default_factory=list)
    layer_seconds: dict[str, float] = field(default_factory=dict)

    def summary(self) -> str:
        if self.mode == "up-to-date":
            return f"index is up to date ({self.seconds:.2f}s)"
        extra = f", {len(self.skipped)} skipped" if self.skipped else ""
        return (f"{self.mode} index: {self.parsed} files parsed, {self.removed} removed{extra} "
                f"in {self.seconds:.1f}s ({self.reason})")


def _existing_state(tree: SourceTree) -> tuple[dict[str, tuple[int, int, str, str]] | None, str]:
    """Files in the current index, or None and why a full build is needed."""
    path = tree.index_path
    problem = check_file(path)
    if problem == "missing":
        return None, "no index yet"
    if problem:
        return None, f"index was {problem}; rebuilding"
    try:
        conn = open_readonly(path)
    except IndexUnavailable as exc:
        return None, f"{exc}; rebuilding"
    try:
        meta = read_meta(conn)
        if meta.get("indexer_version") != INDEXER_VERSION:
            return None, f"index made by indexer {meta.get('indexer_version')}, now {INDEXER_VERSION}; rebuilding"
        if meta.get("source_root") != str(tree.root):
            return None, "index belongs to another tree; rebuilding"
        files = {r[0]: tuple(r[1:]) for r in conn.execute("SELECT path, size, mtime_ns, hash, layer FROM files")}
        return files, "refresh"
    except Exception as exc:  # corrupt pages surface only when read
        return None, f"index unreadable ({exc}); rebuilding"
    finally:
        conn.close()


def plan(tree: SourceTree, entries: list[FileEntry], existing: dict | None) -> tuple[list[FileEntry], list[str]]:
    """(files to (re)read, paths to drop) relative to the existing index."""
    if existing is None:
        return entries, []
    current = {e.relpath for e in entries}
    changed = [e for e in entries
               if (old := existing.get(e.relpath)) is None or old[0] != e.size or old[1] != e.mtime_ns]
    removed = [p for p in existing if p not in current and not p.startswith("<generated>/")]
    return changed, removed


def _pool_map(tasks: list[Task], workers: int) -> Iterator[Result]:
    if workers <= 1 or len(tasks) < 8:
        yield from map(run_task, tasks)
        return
    ctx = multiprocessing.get_context("forkserver" if sys.platform != "win32" else "spawn")
    with ctx.Pool(workers) as pool:
        yield from pool.imap_unordered(run_task, tasks, chunksize=4)


def refresh(tree: SourceTree, *, force: bool = False, workers: int | None = None,
            show_progress: bool | None = None, codegen: bool = True,
            log: Callable[[str], None] | None = None) -> IndexReport:
    """Bring the index of ``tree`` up to date. Safe to kill at any moment."""
    t0 = time.perf_counter()
    log = log or (lambda msg: None)
    with writer_lock(tree.index_path):
        existing, reason = (None, "--force") if force else _existing_state(tree)
        entries = list_files(tree.root)
        todo, removed = plan(tree, entries, existing)
        if existing is not None and not todo and not removed:
            return IndexReport("up-to-date", reason, time.perf_counter() - t0)
        mode = "incremental" if existing is not None else "full"
        log(f"torchtalk: {mode} index of {tree.root} ({reason})")
        writer = IndexWriter(tree.index_path, base_ok=existing is not None)
        try:
            report = _apply(writer, tree, todo, removed, existing or {}, mode, reason, workers, show_progress, t0)
            writer.commit()
        except BaseException:
            writer.abort()
            raise
        report.seconds = time.perf_counter() - t0
        return report


def _apply(writer: IndexWriter, tree: SourceTree, todo: list[FileEntry], removed: list[str],
           existing: dict, mode: str, reason: str, workers: int | None,
           show_progress: bool | None, t0: float) -> IndexReport:
    report = IndexReport(mode, reason, 0.0)
    ids = {p: v[0] for p, v in writer.files().items()}
    for path in removed:
        writer.remove_file(ids[path])
    report.removed = len(removed)

    tasks, skipped_entries = [], []
    # Largest first so that the long files do not end up alone at the tail of the pool.
    for e in sorted(todo, key=lambda e: -e.size):
        if e.skip:
            skipped_entries.append(e)
        else:
            old = existing.get(e.relpath)
            tasks.append(Task(e.relpath, e.abspath, e.layer, old[2] if old else ""))
    for e in skipped_entries:
        if e.relpath in ids:
            writer.remove_file(ids.pop(e.relpath))
        writer.add_file(e.relpath, e.layer, e.size, e.mtime_ns, "", f"skipped: {e.skip}", None)
        report.skipped.append(f"{e.relpath}: {e.skip}")

    layer_bytes = Counter()
    t_parse = time.perf_counter()
    with progress_mod.bar(len(tasks), "indexing", enabled=show_progress) as advance:
        for res in _pool_map(tasks, workers or os.cpu_count() or 1):
            advance(res.relpath)
            if res.status == "unchanged":
                writer.touch_file(ids[res.relpath], res.size, res.mtime_ns)
                report.unchanged += 1
                continue
            if res.relpath in ids:
                writer.remove_file(ids.pop(res.relpath))
            writer.add_file(res.relpath, res.layer, res.size, res.mtime_ns, res.hash, res.status, res.facts)
            report.parsed += 1
            layer_bytes[res.layer] += res.size
            if res.status != "ok":
                report.skipped.append(f"{res.relpath}: {res.status}")
    report.layer_seconds["extract"] = time.perf_counter() - t_parse

    t_link = time.perf_counter()
    writer.finish_facts()
    from ..link.build import build_links
    build_links(writer)
    writer.flush_names()
    report.layer_seconds["link"] = time.perf_counter() - t_link
    report.seconds = time.perf_counter() - t0
    _write_meta(writer, tree, report)
    return report


def _write_meta(writer: IndexWriter, tree: SourceTree, report: IndexReport) -> None:
    from ..link.counts import layer_counts
    counts = layer_counts(writer.conn)
    skipped = [r[0] for r in writer.conn.execute("SELECT path || ': ' || status FROM files WHERE status != 'ok'")]
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
    )


def entries_by_layer(entries: Iterable[FileEntry]) -> Counter:
    return Counter(e.layer for e in entries)
