#!/usr/bin/env python3
"""The fault campaign of issue 26, as a benchmark: every scenario, several trials, failures counted.

    python benchmarks/bench_faults.py --trials 3 [--source PATH]

Each scenario is a test of tests/system or tests/unit (signals to `serve` over stdio and HTTP and to `view`,
calls in flight, answers right after an edit, a refresh equal to a full build, a full disk while the generators
run / while a refresh is written / on a first build, a file turned FIFO, a build waiting for another,
non-UTF-8 bytes, idle and half-sent HTTP connections, GET /mcp). One pytest process runs them all per trial; a scenario
fails a trial when its test fails. The signal scenarios also record how long the process took to exit
(the limit is 2 s). The full-disk scenarios use a tmpfs in a private mount namespace (tests/fulldisk.py):
a real ENOSPC that no other process sees.

With --source (an indexed PyTorch tree, read-only), it also measures the freshness check the server makes
before each answer (Note [Freshness]): inotify drained and candidates verified, against a walk of the tree.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
import xml.etree.ElementTree as ET
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

SIG = "tests/system/test_signals.py::"
FRESH = "tests/unit/test_freshness.py::"
DISK = "tests/system/test_full_disk.py::"
READ = "tests/unit/test_reading.py::"
SCENARIOS = [
    ("stdio: SIGTERM, stdin open", SIG + "test_stdio_server_ends_on_a_signal_with_stdin_open[SIGTERM]"),
    ("stdio: SIGINT, stdin open", SIG + "test_stdio_server_ends_on_a_signal_with_stdin_open[SIGINT]"),
    ("stdio: call in flight cancelled", SIG + "test_stdio_call_in_flight_is_cancelled_with_a_jsonrpc_error"),
    ("HTTP: SIGTERM/SIGINT, 1 and 2 workers", SIG + "test_http_server_ends_on_a_signal"),
    ("HTTP: call in flight -> JSON-RPC error", SIG + "test_http_call_in_flight_gets_a_jsonrpc_error_not_a_500"),
    ("HTTP: GET /mcp -> 405", SIG + "test_get_on_mcp_is_405_not_a_stream_that_never_ends"),
    ("HTTP: idle / half-sent connections", SIG + "test_idle_and_half_sent_connections_are_closed"),
    ("view: SIGTERM/SIGINT", SIG + "test_view_ends_on_a_signal"),
    ("fresh answer right after an edit", FRESH + "test_an_answer_right_after_an_edit_is_fresh_or_says_it_is_not"),
    ("watch: edits, adds, deletes, new dirs",
     FRESH + "test_the_watch_sees_edits_adds_deletes_and_new_directories_exactly"),
    ("status after a build stopped mid-generation", FRESH + "test_status_does_not_say_updating_when_no_build_runs"),
    ("refresh == full build (property and cases)", "tests/unit/test_refresh_equals_full.py"),
    ("full disk: refresh", DISK + "test_a_refresh_on_a_full_disk_keeps_the_index_says_why_and_recovers"),
    ("full disk: first build", DISK + "test_a_first_build_on_a_full_disk_is_an_error_with_the_path"),
    ("full disk: generators", DISK + "test_generators_out_of_space_fail_the_build_and_empty_nothing"),
    ("file-size limit: refresh", DISK + "test_a_refresh_over_a_file_size_limit_keeps_the_index_and_recovers"),
    ("FIFO after listing", READ + "test_a_file_that_becomes_a_fifo_after_listing_is_skipped_not_waited_for"),
    ("FIFO in the tree listed", READ + "test_a_fifo_in_the_tree_is_listed_as_skipped"),
    ("non-UTF-8 byte", READ + "test_a_byte_that_is_not_utf8_costs_one_character_not_the_file"),
    ("build waiting for another says so", READ + "test_a_build_that_waits_for_another_says_so_and_for_how_long"),
    ("query waiting for a build", READ + "test_a_query_waits_a_while_then_answers_from_the_index_it_has"),
]


def _trial(n: int, work: Path) -> tuple[dict[str, list[bool]], list[dict]]:
    """One pytest run of every scenario: per scenario, the outcome of each of its test cases."""
    junit = work / f"trial-{n}.xml"
    record = work / f"trial-{n}.jsonl"
    env = {**os.environ, "TT_FAULT_RECORD": str(record), "TT_PROPERTY_EXAMPLES": os.environ.get(
        "TT_PROPERTY_EXAMPLES", "6")}
    subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", f"--junitxml={junit}",
                    *[node for _name, node in SCENARIOS]], cwd=ROOT, env=env, stdout=subprocess.DEVNULL,
                   stderr=subprocess.DEVNULL)
    outcomes: dict[str, list[bool]] = {}
    for case in ET.parse(junit).getroot().iter("testcase"):
        file = case.get("classname", "").replace(".", "/") + ".py"
        node = f"{file}::{case.get('name')}"
        ok = not any(child.tag in ("failure", "error") for child in case)
        skipped = any(child.tag == "skipped" for child in case)
        for name, prefix in SCENARIOS:
            if node.startswith(prefix.split("[")[0]) and (("[" not in prefix) or node == prefix):
                if not skipped:
                    outcomes.setdefault(name, []).append(ok)
    timings = [json.loads(line) for line in record.read_text().splitlines()] if record.exists() else []
    return outcomes, timings


def freshness_cost(source: Path, calls: int = 2000) -> dict[str, float]:
    from torchtalk.index.freshness import Freshness, walk_changes
    from torchtalk.source.tree import find_source
    from torchtalk.store.reader import Index

    tree = find_source(source)
    ix = Index(tree.index_path, tree.root)
    fresh = Freshness(tree.root)
    t0 = time.perf_counter()
    fresh.start()
    setup = time.perf_counter() - t0
    fresh.changed(ix)  # the first check compares the whole tree (a walk)
    times = []
    for _ in range(calls):
        t = time.perf_counter()
        fresh.changed(ix)
        times.append(time.perf_counter() - t)
    walks = []
    for _ in range(3):
        t = time.perf_counter()
        walk_changes(ix, tree.root)
        walks.append(time.perf_counter() - t)
    fresh.close()
    ix.close()
    times.sort()
    return {"watch setup s": setup, "check p50 us": times[len(times) // 2] * 1e6,
            "check p95 us": times[int(len(times) * 0.95)] * 1e6, "walk s": statistics.median(walks)}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--trials", type=int, default=3)
    ap.add_argument("--source", type=Path, help="an indexed PyTorch tree (read-only): measure the freshness check")
    args = ap.parse_args()
    outcomes: dict[str, list[bool]] = {}
    timings: list[dict] = []
    with tempfile.TemporaryDirectory(prefix="tt-faults-") as tmp:
        for n in range(args.trials):
            t0 = time.monotonic()
            got, times = _trial(n, Path(tmp))
            for name, oks in got.items():
                outcomes.setdefault(name, []).extend(oks)
            timings += times
            print(f"trial {n + 1}/{args.trials}: {time.monotonic() - t0:.0f} s", file=sys.stderr, flush=True)
    print(f"{'scenario':46} {'trials':>6} {'failures':>8}")
    total = failures = 0
    for name, _node in SCENARIOS:
        oks = outcomes.get(name, [])
        total += len(oks)
        failures += oks.count(False)
        print(f"{name:46} {len(oks):6d} {oks.count(False):8d}")
    print(f"{'all':46} {total:6d} {failures:8d}")
    by_kind: dict[str, list[float]] = {}
    for t in timings:
        by_kind.setdefault(t["what"], []).append(t["seconds"])
    for what, secs in sorted(by_kind.items()):
        print(f"exit after the signal, {what}: median {statistics.median(secs):.2f} s, max {max(secs):.2f} s "
              f"({len(secs)} runs; limit 2 s)")
    if args.source:
        cost = freshness_cost(args.source)
        print(f"freshness check before an answer (no change): p50 {cost['check p50 us']:.0f} us, p95 "
              f"{cost['check p95 us']:.0f} us; watch set up in {cost['watch setup s']:.2f} s; a walk of the tree "
              f"(without inotify) {cost['walk s']:.2f} s")
    return 1 if failures or not total else 0


if __name__ == "__main__":
    sys.exit(main())
