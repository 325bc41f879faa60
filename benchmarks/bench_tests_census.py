#!/usr/bin/env python3
"""find_similar_tests over every op of the tree: which tests run it, complete by construction.

Every op base name of aten/src/ATen/native/native_functions.yaml (read with PyYAML from the tree itself, not from
the index) is asked over MCP stdio (``torchtalk serve``, as an agent would: tt_adapter.McpStdio), and each answer is
put in one class by how it was found:

- tests: test names or test bodies name it (and maybe OpInfo entries);
- OpInfo only: no test names it, an OpInfo entry (op_db and kin) does;
- through another name: no test names it, the answer says whose tests run it (the op whose derivatives.yaml formula
  calls a backward op, or the public Python function that calls the op) and lists them;
- no tests: the answer says no test names or calls it;
- not found: the tool did not know the name (a miss of the tool, always).

Against the tree: an answer of "no tests" whose name the test files do spell as a word (``\\bname\\b`` in any
``test/**/*.py``) is listed as "spelled in a test file" with the first such file, for a reader to check: the text
may be a string, a comment or another name's part. Prints the fractions and the misses by reason.

    python benchmarks/bench_tests_census.py --source /path/to/pytorch [--json out.json] [--limit N]
"""

from __future__ import annotations

import argparse
import json
import os
import re
import sys
import time
from collections import Counter
from pathlib import Path

import yaml

sys.path.insert(0, str(Path(__file__).resolve().parent))
import tt_adapter as tt  # noqa: E402

CLASSES = ("tests", "OpInfo only", "through another name", "no tests", "not found")


def op_names(root: Path) -> list[str]:
    """The op base names of native_functions.yaml, in the file's order."""
    loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
    entries = yaml.load((root / "aten/src/ATen/native/native_functions.yaml").read_text(), Loader=loader)
    names = [str(e["func"]).split("(", 1)[0].split(".", 1)[0] for e in entries if isinstance(e, dict) and "func" in e]
    return list(dict.fromkeys(names))


def test_words(root: Path) -> dict[str, str]:
    """Every identifier the test files spell -> the first file (relative) spelling it."""
    words: dict[str, str] = {}
    for p in sorted((root / "test").rglob("*.py")):
        try:
            text = p.read_text(errors="replace")
        except OSError:
            continue
        rel = str(p.relative_to(root))
        for w in set(re.findall(r"[A-Za-z_][A-Za-z0-9_]*", text)):
            words.setdefault(w, rel)
    return words


def classify(structured: dict) -> str:
    if structured.get("kind") != "result":
        return "not found"
    r = structured["result"]
    if r.get("note", "").startswith("No test names") and r.get("total"):
        return "through another name"
    if r.get("total"):
        return "tests"
    if r.get("opinfos") or r.get("generic"):
        return "OpInfo only"
    return "no tests"


def census(server: tt.McpStdio, root: Path, limit: int | None) -> dict:
    names = op_names(root)[:limit] if limit else op_names(root)
    words = test_words(root)
    by_class: Counter[str] = Counter()
    rows, spelled, not_found, seconds = [], [], [], []
    for name in names:
        t0 = time.perf_counter()
        result, _dt = server.call("find_similar_tests", {"query": name, "limit": 5})
        seconds.append(time.perf_counter() - t0)
        cls = classify(result.get("structuredContent") or {"kind": "error"})
        by_class[cls] += 1
        rows.append((name, cls))
        if cls == "no tests" and name.strip("_") in words:
            spelled.append((name, words[name.strip("_")]))
        if cls == "not found":
            not_found.append(name)
    seconds.sort()
    return {"asked": len(names), "by_class": dict(by_class), "rows": rows, "spelled": spelled,
            "not_found": not_found,
            "p50_ms": round(1000 * seconds[len(seconds) // 2]) if seconds else 0,
            "p95_ms": round(1000 * seconds[int(len(seconds) * 0.95)]) if seconds else 0}


def main(argv: list[str] | None = None) -> int:
    def flags(ap: argparse.ArgumentParser) -> None:
        ap.add_argument("--limit", type=int, help="ask only the first N op names (default: all)")

    args = tt.bench_args(__doc__, argv, flags)
    t0 = time.monotonic()
    try:
        h = tt.open_index(args.source)  # the index must exist: the server would otherwise build it first
        with tt.McpStdio(h.root, dict(os.environ)) as server:
            res = census(server, h.root, args.limit)
    except tt.AdapterError as exc:
        print(f"bench_tests_census: {exc}", file=sys.stderr)
        return 2
    n = res["asked"]
    answered = n - res["by_class"].get("no tests", 0) - res["by_class"].get("not found", 0)
    print(f"find_similar_tests census over MCP stdio  ({tt.status_line(h)})")
    print(f"op names asked: {n}; answered with tests or OpInfo entries: {answered}/{n} ({answered / max(n, 1):.3f})")
    for cls in CLASSES:
        print(f"  {cls}: {res['by_class'].get(cls, 0)}")
    print(f"  'no tests' answers whose name a test file spells as a word (to check): {len(res['spelled'])}")
    for name, path in res["spelled"][:25]:
        print(f"    {name}  ({path})")
    if res["not_found"]:
        print(f"  not found (misses of the tool): {', '.join(res['not_found'][:25])}")
    print(f"latency p50 / p95: {res['p50_ms']} / {res['p95_ms']} ms")
    seconds = round(time.monotonic() - t0, 1)
    print(f"time: {seconds} s")
    if args.json:
        Path(args.json).write_text(json.dumps({**res, "seconds": seconds}, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
