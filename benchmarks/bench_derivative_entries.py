#!/usr/bin/env python3
"""Autograd entries against torchgen: does ``trace`` give every op the derivatives.yaml entry the build gives it?

The reference is the tree's own torchgen, run on the tree in a child process: ``load_derivatives`` and
``match_differentiability_info`` (torchgen/api/autograd.py), which decide, for every native function, whose
entry its generated autograd kernel uses (its own; an in-place op its functional op's; a generated functional
variant its mutable op's; a foreach op the op it applies to each tensor). Every op that is not an out= variant
(their kernels refuse to differentiate) is asked over MCP stdio as ``trace(op, focus="yaml")``, and the entry its
structured answer names is compared with torchgen's. A foreach op torchgen makes a new formula for (node
``ForeachAddBackward0List``) counts as right when the entry named is the one whose node it was made from
(``AddBackward0``). Printed: the fraction right, the misses by reason, and the ops answered without an entry by
what the answer says autograd does with them (composite, not implemented, a hand-written kernel, ...).

    python benchmarks/bench_derivative_entries.py --source /path/to/pytorch-2.6.0
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import tt_adapter as tt  # noqa: E402

# Run in a child with the tree first on sys.path: its torchgen and tools/autograd, never an installed torch.
REFERENCE = r'''
import json, os, sys
tree, out_path = sys.argv[1], sys.argv[2]
sys.path.insert(0, tree)
os.chdir(tree)
from torchgen.gen import parse_native_yaml
from tools.autograd.load_derivatives import load_derivatives
from torchgen.api.autograd import match_differentiability_info
nf, tags = "aten/src/ATen/native/native_functions.yaml", "aten/src/ATen/native/tags.yaml"
fns = parse_native_yaml(nf, tags).native_functions
infos = load_derivatives("tools/autograd/derivatives.yaml", nf, tags)
if isinstance(infos, tuple):
    infos = infos[0]
out = {}
for f in match_differentiability_info(fns, infos):
    entry = None
    if f.info:
        d = f.info.get("Default") or next(iter(f.info.values()))
        entry = [str(d.func.func.name) if d.func is not None else d.name, d.op]
    out[str(f.func.func.name)] = {"out": f.func.func.kind().name == "out", "entry": entry}
json.dump(out, open(out_path, "w"))
'''


def reference(tree: Path) -> dict:
    with tempfile.TemporaryDirectory(prefix="tt-deriv-") as tmp:
        script, out = Path(tmp) / "ref.py", Path(tmp) / "ref.json"
        script.write_text(REFERENCE)
        r = subprocess.run([sys.executable, str(script), str(tree), str(out)], capture_output=True, text=True,
                           env={**os.environ, "PYTHONDONTWRITEBYTECODE": "1"})
        if r.returncode != 0:
            raise SystemExit(f"torchgen could not be run on {tree}:\n{r.stderr[-2000:]}")
        return json.loads(out.read_text())


def answered_entry(structured: dict, name: str) -> tuple[str | None, str]:
    """(the op whose entry the answer gives the overload ``name``, how it was given), or (None, "") when it gives
    none. A name without overload is answered with all its overloads: the one asked about is picked by name."""
    ops = [o for o in structured.get("result", {}).get("ops", []) if o["op"]["full_name"] == name]
    derivs = ops[0].get("derivatives", []) if ops else []
    if not derivs:
        return None, ""
    return derivs[0].get("entry_of") or derivs[0]["derivative"]["op_full_name"], derivs[0].get("match", "")


def main() -> int:
    args = tt.bench_args(__doc__, None)
    tree = Path(args.source).resolve()
    t0 = time.monotonic()
    ref = reference(tree)
    print(f"torchgen on {tree}: {len(ref)} native functions, {sum(1 for v in ref.values() if v['entry'])} with an "
          f"entry ({time.monotonic() - t0:.1f} s)", file=sys.stderr)
    node_of = {name: v["entry"][1] for name, v in ref.items() if v["entry"] and v["entry"][0] == name}
    right, misses, without = Counter(), [], Counter()
    asked = 0
    with tt.McpStdio(tree, {**os.environ}) as server:
        for name, v in sorted(ref.items()):
            if v["out"]:
                continue
            asked += 1
            structured, _text = server.tool("trace", function_name=name, focus="yaml")
            ours, how = answered_entry(structured, name)
            if ours is None:
                ops = [o for o in structured.get("result", {}).get("ops", []) if o["op"]["full_name"] == name]
                without[((ops[0].get("no_entry") or {}).get("kind") or "not said") if ops else "op not answered"] += 1
            want = v["entry"][0] if v["entry"] else None
            node = v["entry"][1] if v["entry"] else None
            if ours == want:
                right["the same entry" if want else "no entry, as torchgen"] += 1
            elif want == name and how == "view_copy" and ours:
                right["a view_copy op: its view op's entry, which torchgen copies under its name"] += 1
            elif want == name and ours and node and node_of.get(ours) and node.startswith("Foreach" + node_of[ours]):
                right["a foreach op: the entry torchgen made its formula from"] += 1
            else:
                misses.append((name, want, ours))
    total = sum(right.values())
    print(f"\nnon-out ops asked: {asked}; answered with torchgen's entry: {total}/{asked} = {total / asked:.4f}")
    for reason, n in right.most_common():
        print(f"  {reason}: {n}")
    reasons = Counter("torchgen gives one, trace none" if ours is None else
                      "trace gives one, torchgen none" if want is None else "another entry"
                      for _n, want, ours in misses)
    for reason, n in reasons.most_common():
        print(f"miss: {reason}: {n}")
    for name, want, ours in misses[:30]:
        print(f"  {name}: torchgen {want}, trace {ours}")
    print("ops answered without an entry, by what autograd does with them (the op's Autograd registration): "
          + ", ".join(f"{kind} {n}" for kind, n in without.most_common()))
    print(f"({time.monotonic() - t0:.0f} s)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
