"""What the tools answer from: the tree and its index, as far as they exist yet.

A server starts whatever the state of the setup, so a client (Claude Code) always connects: without
a tree, every call answers what is missing and the one command that fixes it, and the
configuration is looked at again on each call, so the tree `torchtalk setup` records is served
without a restart; without a usable index (none yet, corrupt, another format), a build starts in
the background and calls answer "indexing, try again in N s" meanwhile. Nothing here blocks the
protocol: calls run this on worker threads.
"""

from __future__ import annotations

import gc
import logging
import os
import threading
import time
from dataclasses import dataclass
from pathlib import Path

from ..errors import SourceError
from ..graph.cpp_callers import warm_op_callers
from ..graph.device_reach import defined
from ..graph.gpu_warm import warm_shared as warm_gpu
from ..graph.op_edges import autograd_nodes
from ..graph.op_refs import warm_passing
from ..graph.py_attrs import hand_bound
from ..graph.py_call_index import calls_by_last
from ..graph.py_edges import entry_calls
from ..graph.resolved_build import warm_resolution
from ..index.freshness import Freshness
from ..index.usable import index_problem
from ..query.cuda import cuda_kernels
from ..query.errors import warm as warm_errors
from ..query.handbound import warm as warm_hand_bindings
from ..query.search import warm as warm_search
from ..query.status import changed_files
from ..query.testfiles import util_usage
from ..source.tree import SourceTree, config_path, find_source, read_config
from ..store import integrity
from ..store.builds import failure_summary, reported_failure
from ..store.db import corrupt_marker
from ..store.reader import Index
from ..store.resolved import serving
from ..tools import all_tools
from ..tools.structured import output_model
from .builds import BuildState, Refresher, Resolving
from .freshness import FRESH_WAIT_S, stale_note, watch_in_background

log = logging.getLogger("torchtalk")

SETUP = "run /torchtalk:setup in Claude Code, or `torchtalk setup` in a shell"
WARM_UP_DELAY_S = 1.0
RESOLVE_DELAY_S = 20.0  # after the warm-up, before the store of resolved calls is computed (Note [Resolved calls])


@dataclass(frozen=True)
class Unavailable:
    """Why a call cannot be answered yet; ``building`` when waiting a little may change that."""

    message: str
    building: bool = False


def _warm_up(ix: Index) -> None:
    """Load what first calls would otherwise pay for (the op registry, stub names, the GPU kernel summary that
    counts every launch site), off the request path."""
    try:
        with ix.using():  # one version of the index, and its cached lookups' fast path (Note [A batch holds its
            _warm(ix)  # connection] in store/reader.py)
    except Exception:  # warm-up is an optimisation; the first query reports any real problem
        log.debug("warm-up failed", exc_info=True)


def _warm(ix: Index) -> None:
    """The warm-up's loads, in one ``using()`` block."""
    # What resolving any C++ call looks up (impact, called_by, calls, cuda_kernels all resolve calls).
    warm_resolution(ix)
    entry_calls(ix)  # the public Python functions' calls, which impact's and called_by's walks up read
    calls_by_last(ix)  # and the calls that name a Python function or an op's Python name (their Python callers)
    warm_op_callers(ix)  # the sites every op's callers read (impact, called_by)
    warm_passing(ix)  # and the calls that pass an op's function on (Note [Op references])
    warm_hand_bindings(ix)  # trace's hand-written bindings
    cuda_kernels(ix)
    defined(ix)  # the names a call site can resolve by (the GPU walk's skip, graph/device_reach.py)
    warm_gpu(ix)  # the code most GPU walks pass (Note [The GPU warm-up])
    warm_errors(ix)  # error_origin's raise sites and test names
    warm_search(ix)  # search's tables of ops and Python names
    autograd_nodes(ix)  # trace's autograd nodes
    hand_bound(ix)  # the Python names hand-written C++ binds (trace's walks into C++)
    util_usage(ix)  # which test helpers the test files import (list_test_utils' ranking)
    if ix.source_root is not None:
        changed_files(ix, ix.source_root)
    for tool in all_tools():
        output_model(tool)  # the pydantic models that serialise answers
    # What the warm-up loaded lives as long as its index version: a full collection would scan its millions of
    # objects again and again during a first answer (0.5 s of impact("at::native::resize_output", 3)'s 3 s).
    # Frozen objects are still freed by reference counting when a refresh drops their version.
    gc.freeze()


def _no_tree(source: str | None, error: str) -> str:
    if not (source or os.environ.get("TORCHTALK_SOURCE") or read_config().get("source")):
        what = (f"TorchTalk has no PyTorch source tree yet (none given with --source or $TORCHTALK_SOURCE, none "
                f"recorded in {config_path()}, and the server's directory {Path.cwd()} is not one).")
    else:
        end = error.find(". ")
        what = f"TorchTalk cannot use its PyTorch source tree: {error if end < 0 else error[: end + 1]}"
    return f"{what} To set one up, {SETUP}; this server picks it up without a restart."


class Backend:
    """The index the tools answer from, found (and built) on demand. Thread-safe."""

    def __init__(self, source: str | None, codegen: bool = True, state: BuildState | None = None):
        self.source = source
        self.codegen = codegen
        self.state = state
        self._lock = threading.Lock()
        self._tree: SourceTree | None = None
        self._ix: Index | None = None
        self._refresher: Refresher | None = None
        self._resolving: Resolving | None = None
        self._stopping = False
        self._fresh: Freshness | None = None
        self._stop_watching = threading.Event()

    @classmethod
    def over(cls, ix: Index, refresher: Refresher | None = None) -> Backend:
        """A backend for an index that is already there (in-process servers, tests)."""
        b = cls(None)
        b._ix, b._refresher = ix, refresher
        if refresher is not None:
            b._tree = refresher.tree
            b._watch_tree(refresher.tree, ix)
        return b

    def _watch_tree(self, tree: SourceTree, ix: Index) -> None:
        """Know before each answer which files differ from the index (Note [Freshness])."""
        fresh = self._fresh = Freshness(tree.root, self.codegen)
        ix.changes = lambda: fresh.changed(ix)
        # The watch is set up (and the tree compared once) with the warm-up, a moment after start: not while
        # `initialize` is answered; a call before that sets it up itself.
        watch_in_background(fresh, lambda: self._ix, self._refresh_now, self._stop_watching)

    def _refresh_now(self) -> None:
        if self._refresher is not None and not self._stopping:
            self._refresher.maybe_start()

    def freshness_note(self, ix: Index) -> str | None:
        """None when ``ix`` holds the tree as it is (after waiting up to FRESH_WAIT_S for a refresh that makes
        it so); else the first line of the answer, naming the changed files and what is being done."""
        fresh, refresher = self._fresh, self._refresher
        if fresh is None or refresher is None:
            return None
        changed = fresh.changed(ix)
        if not changed:
            return None
        deadline = time.monotonic() + FRESH_WAIT_S
        refresher.maybe_start()
        while time.monotonic() < deadline and not self._stopping:
            time.sleep(0.05)
            st = refresher.status()
            if st.running:
                continue
            ix.recheck()
            changed = fresh.changed(ix)
            if not changed:
                return None
            if st.exit_code not in (None, 0):
                break  # failing (a full disk): not again at once
            refresher.maybe_start()  # changes made while the last run ran
        st = refresher.status()
        failed = reported_failure(ix.path)
        if st.running:
            doing = "a refresh is running, and answers will include them when it lands"
        elif failed:
            doing = f"refreshing fails ({failure_summary(failed)}); answers come from the index as it is"
        else:
            doing = "a refresh will start shortly"
        built = ix.meta.get("built_at")
        when = time.strftime("%H:%M:%S", time.localtime(float(built))) if built else "?"
        return stale_note(changed, when, doing)

    def start(self) -> None:
        """At server start: find the tree, and start building its index now if it has none (cheap: no
        query runs here, so `initialize` is answered at once)."""
        self.ready()

    def ready(self) -> Index | Unavailable:
        ix = self._ix
        if ix is not None:
            return ix
        if self._stopping:  # the build was ended by the shutdown, not by a failure: a call waiting for it is cut
            return Unavailable("The server is shutting down.", building=True)
        with self._lock:
            if self._ix is not None:
                return self._ix
            tree = self._tree
            if tree is None:
                try:
                    tree = find_source(self.source)
                except SourceError as exc:
                    return Unavailable(_no_tree(self.source, str(exc)))
                self._tree = tree
                self._resolving = Resolving(tree, self._resolve_needed)
                self._refresher = Refresher(tree, self.codegen, self.state, landed=self._resolve_later)
            assert self._refresher is not None
            problem = index_problem(tree)
            if problem is None:
                self._ix = Index(tree.index_path, tree.root)
                self._watch_tree(tree, self._ix)
                # Damage no query reads is found too: one quick_check in the background, a rebuild if it fails.
                refresher = self._refresher
                integrity.watch(self._ix.path, on_damage=lambda: refresher.maybe_start(), log=log.warning)
                # On two cores the warm-up would compete with answering `initialize`: a moment later.
                timer = threading.Timer(WARM_UP_DELAY_S, self._warm_up_then_resolve, args=(self._ix,))
                timer.daemon = True
                timer.start()
                return self._ix
            self._refresher.maybe_start()
            return self._building(tree, problem)

    def _warm_up_then_resolve(self, ix: Index) -> None:
        _warm_up(ix)
        self._resolve_later()

    def _resolve_later(self) -> None:
        """Store the resolved calls of the current build RESOLVE_DELAY_S from now (after the warm-up, after a
        refresh lands): a server that answers for a while has them; one that lives a few seconds (a script, a test)
        starts no work its exit would kill."""
        def later() -> None:
            if self._resolving is not None and not self._stop_watching.wait(RESOLVE_DELAY_S) and not self._stopping:
                self._resolving.maybe_start()
        threading.Thread(target=later, name="torchtalk-resolve-later", daemon=True).start()

    def _resolve_needed(self) -> bool:
        """Whether the index's current build has no store of resolved calls (Note [Resolved calls])."""
        ix = self._ix
        if ix is None or self._stopping:
            return False
        ix.recheck()
        build_id = ix.meta.get("build_id")
        return bool(build_id) and serving(ix.path, build_id) is None

    def _building(self, tree: SourceTree, problem: str) -> Unavailable:
        assert self._refresher is not None
        st = self._refresher.status()
        if not st.running and st.exit_code not in (None, 0):
            error = (st.error.removeprefix("error: ").rstrip(".") or "see the server's log")
            return Unavailable(f"Building the index of {tree.root} failed: {error}. "
                               f"Run `torchtalk index --source {tree.root}` in a shell to see why; this server "
                               "tries again every 30 s.")
        elapsed = max(0, int(time.monotonic() - st.started)) if st.started else 0
        retry = 15 if elapsed < 60 else 30
        return Unavailable(f"TorchTalk is indexing {tree.root} (PyTorch {tree.version}) in the background "
                           f"({problem}); started {elapsed} s ago. A first index of the full PyTorch tree takes "
                           f"a few minutes on {os.cpu_count()} cores. Try again in {retry} s.", building=True)

    def after_error(self, ix: Index) -> None:
        """A query found the index corrupt (it left a marker): rebuild now; answers resume when it lands."""
        if self._refresher is not None and corrupt_marker(ix.path).exists():
            self._refresher.maybe_start()

    def stop(self) -> None:
        self._stopping = True
        self._stop_watching.set()
        if self._refresher is not None:
            self._refresher.stop()
        if self._resolving is not None:
            self._resolving.stop()
        if self._fresh is not None:
            self._fresh.close()  # its inotify instance (128 per user by default)
