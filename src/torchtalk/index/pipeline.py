"""The pipeline of one build: a worker pool that extracts files, and the batches the parent writes.

A build writes two batches, the hand-written files and then the generated ones, through one pool: the generated
files queue behind the hand-written ones as soon as the generators are done, so both cores stay busy.
"""

from __future__ import annotations

import gc
import multiprocessing
import os
import sys
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field

from ..extract.worker import Result, Task, run_task
from ..model import FileStatus, Layer
from ..procs import pool_worker_init, stops_blocked
from ..source.files import FileEntry
from ..store.db import IndexWriter
from . import progress as progress_mod

POOL_START_TIMEOUT_S = 60.0  # for all workers to start; one that takes longer is then waited for by the pool


@dataclass
class IndexReport:
    mode: str  # "full" | "incremental" | "up-to-date"
    reason: str
    seconds: float
    parsed: int = 0
    unchanged: int = 0
    removed: int = 0
    skipped: list[str] = field(default_factory=list)
    layer_seconds: dict[str, float] = field(default_factory=dict)  # wall seconds per stage
    cpu_seconds: dict[str, float] = field(default_factory=dict)  # CPU seconds per stage, of every process

    def add_cpu(self, stage: str, seconds: float) -> None:
        self.cpu_seconds[stage] = self.cpu_seconds.get(stage, 0.0) + seconds

    def summary(self) -> str:
        if self.mode == "up-to-date":
            return f"index is up to date ({self.seconds:.2f}s)"
        extra = f", {len(self.skipped)} skipped" if self.skipped else ""
        return (f"{self.mode} index: {self.parsed} files parsed, {self.removed} removed{extra} "
                f"in {self.seconds:.1f}s ({self.reason})")


class Workers:
    """The worker pool of one build, started when a batch first needs it and shared by every batch after:
    the generated code queues behind the hand-written files in the same pool, so no core waits for a
    second pool to start while the last hand-written files finish."""

    def __init__(self, workers: int):
        self.workers = workers
        self.pool = None

    def map(self, tasks: list[Task]) -> Iterator[Result]:
        """Results in the order of ``tasks``; the tasks are queued at once (behind those queued before)."""
        if self.pool is None and (self.workers <= 1 or len(tasks) < 8):
            return map(run_task, tasks)
        if self.pool is None:
            self._start()
        # In order: the writer gives each file's rows the ids after the previous file's (Note [Canonical ids]).
        return self.pool.imap(run_task, tasks, chunksize=4)

    def _start(self) -> None:
        ctx = multiprocessing.get_context("forkserver" if sys.platform != "win32" else "spawn")
        if ctx.get_start_method() == "forkserver":
            # The forkserver (started once per process) dies with this process: see forkserver_guard.
            ctx.set_forkserver_preload(["__main__", f"{__package__}.forkserver_guard"])
        # Helpers start with SIGINT and SIGTERM held back (a stop is this process's to handle: Note [A stop
        # signal and the pool's threads]); they stay held back until every worker is up: a pool torn down while
        # a worker is still unpickling its state would have that worker print a traceback (its semaphores are
        # gone).
        ready = ctx.Semaphore(0)
        with stops_blocked():
            # Kept at once: a stop while the workers start is cleaned up by __exit__.
            self.pool = ctx.Pool(self.workers, initializer=_worker_init, initargs=(os.getpid(), ready))
            deadline = time.monotonic() + POOL_START_TIMEOUT_S
            for _ in range(self.workers):
                ready.acquire(timeout=max(0.0, deadline - time.monotonic()))

    def __enter__(self) -> Workers:
        return self

    def __exit__(self, *exc: object) -> None:
        if self.pool is not None:
            self.pool.terminate()  # what a `with pool:` block did: every result was read, or the build failed
            self.pool.join()


class Batch:
    """Files to drop and to (re)extract, written by this process only: the hand-written ones, or the generated."""

    def __init__(self, todo: list[FileEntry], removed: list[str], existing: dict, label: str):
        self.todo, self.removed, self.existing, self.label = todo, removed, existing, label
        self.ids: dict[str, int] = {}
        self.known: set[str] = set()
        # In the order of their ids (hand-written files by path, then generated ones: Note [Canonical ids]): a
        # full build then appends every file's rows to the tables.
        self.entries = sorted(todo, key=lambda e: (e.layer is Layer.GENERATED, e.relpath))
        self.tasks = [Task(e.relpath, e.abspath, e.layer, old[1] if (old := existing.get(e.relpath)) else "")
                      for e in self.entries if not e.skip]
        self.results: Iterator[Result] = iter(())

    def prepare(self, writer: IndexWriter, report: IndexReport) -> None:
        """Drop the removed files, give the new ones their ids, record the skipped ones."""
        ids = writer.files()
        for path in self.removed:
            if path in ids:
                writer.remove_file(ids.pop(path))
        report.removed += len(self.removed)
        # A file read again keeps its id; a new one gets an id that sorts like its path (Note [Canonical ids]).
        self.known = set(ids)
        ids.update(writer.file_ids((e.relpath, e.layer is Layer.GENERATED) for e in self.todo
                                   if e.relpath not in self.known))
        self.ids = ids
        for e in self.entries:
            if e.skip:
                if e.relpath in self.known:
                    writer.remove_file(ids[e.relpath])
                writer.add_file(e.relpath, e.layer, e.stamp, "", FileStatus.SKIPPED, e.skip, None,
                                generated=e.layer is Layer.GENERATED, file_id=ids[e.relpath])
                report.skipped.append(f"{e.relpath}: {e.skip}")

    def write(self, writer: IndexWriter, report: IndexReport, results: Iterator[Result],
              show_progress: bool | None, after_each: Callable[[], None] = lambda: None) -> None:
        """Write each file's facts as its result comes (in the order of the tasks)."""
        ids, known, label = self.ids, self.known, self.label
        t_parse = time.perf_counter()
        t_insert = cpu_insert = 0.0
        with progress_mod.bar(len(self.tasks), label, enabled=show_progress) as advance:
            for res in results:
                t_in, c_in = time.perf_counter(), time.process_time()
                advance(res.relpath)
                report.add_cpu(f"extract {res.layer} (workers)", res.cpu)
                if res.status is None:  # same content as the index has
                    writer.touch_file(ids[res.relpath], res.stamp)
                    report.unchanged += 1
                else:
                    if res.relpath in known:
                        writer.remove_file(ids[res.relpath])
                    writer.add_file(res.relpath, res.layer, res.stamp, res.hash, res.status,
                                    res.reason, res.facts, generated=res.layer is Layer.GENERATED,
                                    file_id=ids[res.relpath])
                    report.parsed += 1
                    if res.status is not FileStatus.OK:
                        report.skipped.append(f"{res.relpath}: {res.status}: {res.reason}")
                t_insert += time.perf_counter() - t_in
                cpu_insert += time.process_time() - c_in
                after_each()
        report.layer_seconds[f"extract {label}"] = time.perf_counter() - t_parse
        report.layer_seconds[f"insert {label} (parent, overlapped)"] = t_insert
        report.add_cpu(f"insert {label} (parent)", cpu_insert)


def _worker_init(owner: int, ready) -> None:
    """A pool worker's setup: ``procs.pool_worker_init``, then a collector tuned for extraction. An extractor
    allocates millions of short-lived objects that no cycle holds (``ast`` nodes, rows); with the default
    threshold the collector scans them every 700 allocations, ~7% of the CPU of the Python files."""
    pool_worker_init(owner, ready)
    gc.freeze()  # the modules imported so far live as long as the worker: never scan them
    gc.set_threshold(50_000, 20, 100)

