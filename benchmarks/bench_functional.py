#!/usr/bin/env python3
"""Every torch.nn.functional function, asked as trace("torch.nn.functional.X"): does it reach an op?

The names are those torch/nn/functional.py binds at module level, read with ``ast`` from the tree
itself: public ``def``s and public names assigned a call (``linear = _add_docstr(torch._C._nn.linear,
...)``, ``max_pool2d = boolean_dispatch(...)``); constants (dicts, plain names) are left out. A name
resolves when trace answers with at least one op; the answer's Python entry is checked to be the
name's own line in functional.py (``def`` line, or the assignment line). Failures are listed with
what trace said. TorchTalk is reached only through tt_adapter.py.

    python benchmarks/bench_functional.py --source /path/to/pytorch [--json out.json]
"""

from __future__ import annotations

import ast
import json
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import tt_adapter as tt  # noqa: I001

FUNCTIONAL = "torch/nn/functional.py"


def functional_names(root: Path) -> dict[str, tuple[str, int]]:
    """name -> (def | assign, line) for the public functions functional.py binds at module level."""
    tree = ast.parse((root / FUNCTIONAL).read_text(encoding="utf-8"))
    out: dict[str, tuple[str, int]] = {}
    for n in tree.body:
        if isinstance(n, ast.FunctionDef):
            out[n.name] = ("def", n.lineno)
        elif isinstance(n, ast.Assign) and isinstance(n.value, ast.Call):
            for t in n.targets:
                if isinstance(t, ast.Name):
                    out[t.id] = ("assign", n.lineno)
    return {k: v for k, v in out.items() if not k.startswith("_")}


def run(source: str) -> dict:
    t0 = time.monotonic()
    h = tt.open_index(source)
    names = functional_names(h.root)
    ok, no_op, wrong_entry, failed = [], [], [], []
    for name, (how, line) in sorted(names.items()):
        r = tt.trace_python(h, f"torch.nn.functional.{name}")
        if r.kind != "result":
            failed.append(f"{name} ({how} at :{line}): {r.kind}")
        elif not r.ops:
            no_op.append(f"{name} ({how} at :{line}): bound to {', '.join(r.bindings) or '?'}")
        elif r.entry is not None and r.entry != (FUNCTIONAL, line):
            wrong_entry.append(f"{name}: entry {r.entry[0]}:{r.entry[1]}, defined at :{line}")
            ok.append(name)
        else:
            ok.append(name)
    return {"index": tt.status_line(h), "names": len(names), "resolved": len(ok),
            "defs": sum(1 for v in names.values() if v[0] == "def"),
            "assigns": sum(1 for v in names.values() if v[0] == "assign"),
            "not_found": failed, "no_op": no_op, "entry_elsewhere": wrong_entry,
            "seconds": round(time.monotonic() - t0, 1)}


def main(argv: list[str] | None = None) -> int:
    args = tt.bench_args(__doc__, argv)
    try:
        r = run(args.source)
    except tt.AdapterError as exc:
        print(f"bench_functional: {exc}", file=sys.stderr)
        return 2
    print(f"torch.nn.functional names -> ops  ({r['index']})")
    print(f"  names ({r['defs']} defs, {r['assigns']} assigned calls)   {r['resolved']}/{r['names']}  "
          f"{100.0 * r['resolved'] / max(r['names'], 1):5.1f}%")
    for label, key in (("not found", "not_found"), ("answered without an op", "no_op"),
                       ("entry not at the name's own line", "entry_elsewhere")):
        if r[key]:
            print(f"  {label} ({len(r[key])}):")
            for x in r[key]:
                print(f"    {x}")
    print(f"time: {r['seconds']} s")
    if args.json:
        Path(args.json).write_text(json.dumps(r, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
