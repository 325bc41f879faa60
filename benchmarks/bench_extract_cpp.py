"""Run extract_cpp over the C/C++/CUDA/ObjC++ sources of a PyTorch tree and report speed.

    python benchmarks/bench_extract_cpp.py [/path/to/pytorch] [--procs 2] [--chunksize 4]

Largest files go first so the pool does not end waiting on one big file.

Also counts the definitions read inside another function's body, directly (``f::if``, ``f::g``): C++ has no nested
functions, so each is a misread (a statement macro, an argument tree-sitter took for a parameter, a function that
swallowed the ones after it); methods of a local class (``f::CachedGraph::CachedGraph``) are not counted.
"""

from __future__ import annotations

import argparse
import os
import resource
import sys
import time
from collections import Counter
from multiprocessing import Pool

from torchtalk.model import CppSymbol

EXTS = (".cpp", ".cc", ".c", ".h", ".hpp", ".cu", ".cuh", ".mm")
DIRS = ("aten", "c10", "torch/csrc", "functorch")
DEFAULT_ROOT = os.environ.get("TORCHTALK_TEST_SOURCE", "/root/.cache/pytorch-source/pytorch-2.6.0")


def _files(root: str) -> list[tuple[int, str]]:
    out = []
    for d in DIRS:
        for dirpath, _dirs, names in os.walk(os.path.join(root, d)):
            for n in names:
                if n.endswith(EXTS):
                    p = os.path.join(dirpath, n)
                    out.append((os.path.getsize(p), os.path.relpath(p, root)))
    out.sort(reverse=True)
    return out


def _work(args: tuple[str, str]) -> tuple[str, dict[str, int], str]:
    from torchtalk.extract.cpp import extract_cpp

    root, rel = args
    with open(os.path.join(root, rel), "rb") as f:
        data = f.read()
    try:
        facts = extract_cpp(rel, data)
    except Exception as e:  # extract_cpp promises not to raise; count it if it does
        return rel, {}, repr(e)
    empty = len(data) > 2000 and not any(facts.values())
    counts: dict = {k: len(v) for k, v in facts.items()}
    counts["defined in a function body"] = _nested(facts.get(CppSymbol, []))
    return rel, counts, "no facts" if empty else ""


def _nested(symbols: list) -> int:
    """Definitions whose enclosing definition (by lines) is a function of which they are a direct member."""
    defs = sorted((s for s in symbols if s.is_definition), key=lambda s: (s.line, -s.end_line))
    stack: list = []
    n = 0
    for s in defs:
        while stack and stack[-1].end_line < s.line:
            stack.pop()
        if stack and stack[-1].line < s.line and s.qualname.rsplit("::", 1)[0] == stack[-1].qualname:
            n += 1
        stack.append(s)
    return n


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("root", nargs="?", default=DEFAULT_ROOT)
    ap.add_argument("--procs", type=int, default=2)
    ap.add_argument("--chunksize", type=int, default=4)
    a = ap.parse_args()
    files = _files(a.root)
    total = sum(s for s, _ in files)
    t0 = time.perf_counter()
    rows: Counter[str] = Counter()
    errors = []
    factless = 0
    pool = Pool(a.procs)
    per_file: dict[str, int] = {}
    for rel, counts, err in pool.imap_unordered(_work, [(a.root, r) for _, r in files], a.chunksize):
        per_file[rel] = counts.pop("defined in a function body", 0)
        rows.update(counts)
        if err == "no facts":
            factless += 1
        elif err:
            errors.append((rel, err))
    pool.close()
    pool.join()
    wall = time.perf_counter() - t0
    ru = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = ru.ru_utime + ru.ru_stime
    mb = total / 1e6
    print(f"files {len(files)}  MB {mb:.1f}  wall {wall:.2f}s  MB/s {mb / wall:.2f}  procs {a.procs}"
          f"  worker CPU {cpu:.1f}s  load avg {os.getloadavg()[0]:.2f}")
    for k, v in sorted(rows.items(), key=lambda kv: getattr(kv[0], "__name__", str(kv[0]))):
        print(f"  {getattr(k, '__name__', str(k)):16s} {v}")  # counts by fact type
    print(f"files with errors: {len(errors)}   (files over 2 kB with no facts: {factless})")
    nested = [(n, rel) for rel, n in per_file.items() if n]
    print(f"definitions read inside a function body (misreads): {sum(n for n, _ in nested)} in {len(nested)} files")
    for n, rel in sorted(nested, reverse=True)[:10]:
        print(f"  {n:4d} {rel}")
    for rel, err in errors[:20]:
        print("  ", rel, err)
    sys.exit(0)


if __name__ == "__main__":
    main()
