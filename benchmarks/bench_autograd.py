#!/usr/bin/env python3
"""Autograd nodes against the official wheel: is every node struct linked to its op, and found by search?

The wheel's ``torch/include/torch/csrc/autograd/generated/Functions.h`` declares every autograd
node struct the build generates (``struct TORCH_API AddBackward0 : public TraceableFunction``):
696 in 2.6.0, 82 of them with something after the digit (``ForeachAddBackward0List``,
``AliasBackward0_copy``, ``SelectBackwardAutogradNestedTensor0``). For each struct:

- linked: some op's generated Autograd kernel creates it, as TorchTalk's AUTOGRAD edges say
  (what trace shows as ``grad_fn`` lines and what search names as the node's op);
- search: ``search(name)`` returns the node itself (kind "autograd node", exact) with a
  Functions.h / Functions.cpp location.

Structs that no op links are listed by cause. TorchTalk is reached only through tt_adapter.py.

    python benchmarks/bench_autograd.py --source /path/to/pytorch-2.6.0 [--version 2.6.0]
"""

from __future__ import annotations

import argparse
import os
import re
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import tt_adapter as tt  # noqa: I001
from wheel import BenchError, open_wheel, read_text

FUNCTIONS_H = "torch/include/torch/csrc/autograd/generated/Functions.h"
STRUCT = re.compile(r"^struct TORCH_API (\w+) : public (\w+)", re.M)
PLAIN = re.compile(r"^\w+Backward\d+$")


def run(source: str, version: str) -> dict:
    t0 = time.monotonic()
    h = tt.open_index(source)
    with open_wheel(version) as z:
        structs = sorted(set(STRUCT.findall(read_text(z, FUNCTIONS_H))))
    names = [s for s, _base in structs]
    links = tt.autograd_links(h)
    linked = [n for n in names if n in links]
    suffixed = [n for n in names if not PLAIN.match(n)]
    found = {n: tt.autograd_search_hit(h, n) for n in names}
    in_functions = [n for n, loc in found.items() if loc and re.search(r"Functions\.(h|cpp)$", loc[0])]
    return {
        "index": tt.status_line(h), "structs": len(names), "suffixed": len(suffixed),
        "linked": len(linked), "linked_suffixed": len([n for n in suffixed if n in links]),
        "search_hits": len(in_functions),
        "not_linked": [n for n in names if n not in links],
        "not_found_by_search": [n for n in names if n not in in_functions],
        "extra_nodes": sorted(set(links) - set(names)),
        "seconds": round(time.monotonic() - t0, 1),
    }


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--source", default=os.environ.get("TORCHTALK_SOURCE"))
    ap.add_argument("--version", default="2.6.0")
    args = ap.parse_args(argv)
    if not args.source:
        print("bench_autograd: give --source /path/to/pytorch (or set TORCHTALK_SOURCE)", file=sys.stderr)
        return 2
    try:
        r = run(args.source, args.version)
    except (BenchError, tt.AdapterError) as exc:
        print(f"bench_autograd: {exc}", file=sys.stderr)
        return 2
    def pct(a: int, b: int) -> str:
        return f"{100.0 * a / b:5.1f}%" if b else "n/a"

    print(f"autograd nodes vs the torch {args.version} wheel's Functions.h  ({r['index']})")
    print(f"  node structs                          {r['structs']}  ({r['suffixed']} with a suffix after the digit)")
    print(f"  linked to an op (AUTOGRAD edges)      {r['linked']}/{r['structs']}  {pct(r['linked'], r['structs'])}")
    print(f"    of the suffixed ones                {r['linked_suffixed']}/{r['suffixed']}")
    print(f"  search returns the node (Functions.*) {r['search_hits']}/{r['structs']}  "
          f"{pct(r['search_hits'], r['structs'])}")
    for label, key in (("not linked", "not_linked"), ("not found by search", "not_found_by_search"),
                       ("linked nodes that are not Functions.h structs", "extra_nodes")):
        if r[key]:
            print(f"  {label} ({len(r[key])}): {', '.join(r[key][:40])}{' ...' if len(r[key]) > 40 else ''}")
    print(f"time: {r['seconds']} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
