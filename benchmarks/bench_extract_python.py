"""Run the Python extractors over torch/**/*.py and test/**/*.py of a real PyTorch tree.

    python benchmarks/bench_extract_python.py [PYTORCH_ROOT] [--procs 2] [--chunksize 8]

PYTORCH_ROOT defaults to $TORCHTALK_TEST_SOURCE. Files are parsed once in the worker;
torch/** goes to extract_python, test/** and torch/testing/_internal/** to
extract_tests (the latter get both, sharing the tree). Largest files are sent first
so that no big file is left for the end.
"""

from __future__ import annotations

import argparse
import os
import resource
import sys
import time
from collections import Counter
from multiprocessing import Pool
from pathlib import Path

from torchtalk.extract.pyast import parse
from torchtalk.extract.pymodules import extract_python
from torchtalk.extract.pytests import extract_tests


def _one(args: tuple[str, str, bool]) -> tuple[str, list[dict]]:
    """Parse once, run the extractors that apply; the facts go back to the parent
    (pickled, as they would be for the indexer's single writer)."""
    root, rel, parse_only = args
    data = Path(root, rel).read_bytes()
    tree, err = parse(data)
    if tree is None:
        return rel, [{"errors": [err]}]
    if parse_only:
        return rel, []
    facts = []
    if rel.startswith("torch/"):
        facts.append(extract_python(rel, data, tree))
    if rel.startswith(("test/", "torch/testing/_internal/")):
        facts.append(extract_tests(rel, data, tree))
    return rel, facts


def python_files(root: Path) -> list[tuple[str, int]]:
    out = []
    for top in ("torch", "test"):
        for dirpath, _, names in os.walk(root / top):
            for n in names:
                if n.endswith(".py"):
                    p = Path(dirpath, n)
                    out.append((p.relative_to(root).as_posix(), p.stat().st_size))
    out.sort(key=lambda x: -x[1])
    return out


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("root", nargs="?", default=os.environ.get("TORCHTALK_TEST_SOURCE"))
    ap.add_argument("--procs", type=int, default=2)
    ap.add_argument("--chunksize", type=int, default=16)
    ap.add_argument("--parse-only", action="store_true", help="baseline: ast.parse, no extraction")
    a = ap.parse_args()
    if not a.root:
        print("give PYTORCH_ROOT or set TORCHTALK_TEST_SOURCE", file=sys.stderr)
        return 2
    root = Path(a.root)
    files = python_files(root)
    total = sum(s for _, s in files)
    t0 = time.perf_counter()
    rows: Counter = Counter()
    bad: list[tuple[str, list[str]]] = []
    with Pool(a.procs) as pool:
        for rel, facts in pool.imap_unordered(_one, [(str(root), r, a.parse_only) for r, _ in files], a.chunksize):
            errors = []
            for f in facts:
                errors += f.pop("errors", [])
                for k, v in f.items():
                    rows[k] += len(v)
            if errors:
                bad.append((rel, errors))
    wall = time.perf_counter() - t0
    ru = resource.getrusage(resource.RUSAGE_CHILDREN)  # workers' CPU: steady even on a busy machine
    print(f"files {len(files)}  MB {total / 1e6:.1f}  wall {wall:.2f} s  worker cpu {ru.ru_utime + ru.ru_stime:.2f} s"
          f"  procs {a.procs}  chunksize {a.chunksize}{'  (parse only)' if a.parse_only else ''}")
    for k in sorted(rows):
        print(f"  {k:18} {rows[k]:>9}")
    print(f"files with errors: {len(bad)}")
    for rel, errors in bad[:20]:
        print(f"  {rel}: {errors}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
