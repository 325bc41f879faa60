#!/usr/bin/env python3
"""How long first answers are, and whether what they cut is named (Note [Answer budget] in render/budget.py).

    python benchmarks/bench_answer_size.py --source PATH [--show CALL] [--json OUT]

An agent reads every character a tool returns. One `torchtalk serve` over stdio (plain
JSON-RPC lines) gets each question of QUESTIONS once: the README's and the tools' examples, the
longest answers of issue 25 and their neighbours. Prints per question the characters of the
answer's text (what an agent reads), its `Cut:` lines and whether each names the call that shows
what it cut, then p50 / p95 / max. Exits 1 when a cut line names no call (a silent cut) or a
question fails. Uses the index of the tree in $TORCHTALK_CACHE_DIR (built first if missing).
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
from bench_first_answer import QUESTIONS as FIRST_QUESTIONS
from bench_first_answer import Server, call_text
from run_all import pct

# bench_first_answer's questions (issue 25's, the tools' examples, their neighbours), and more of the README's
# examples and their neighbours: (tool, arguments).
QUESTIONS: list[tuple[str, dict]] = FIRST_QUESTIONS + [
    ("trace", {"function_name": "softmax"}),
    ("trace", {"function_name": "cumsum"}),
    ("cuda_kernels", {}),
    ("trace_module", {"module_name": "nn.Linear"}),
    ("list_modules", {"category": "optim"}),
    ("affected", {"names": "aten/src/ATen/native/ReduceOps.cpp:491"}),
    ("trace", {"function_name": "F.cross_entropy"}),
    ("trace", {"function_name": "index_select", "focus": "dispatch"}),
    ("trace", {"function_name": "mul"}),
    ("called_by", {"function_name": "at::native::resize_output"}),
    ("impact", {"function_name": "impl_func_cum_ops", "depth": 2}),
]

CALL = re.compile(r"\b[a-z_]+\(|structured answer|--json")  # a cut line names a call, or the structured answer


def answer_text(server: Server, tool: str, args: dict) -> tuple[str, bool]:
    """The Markdown text of one tool call's answer, and whether it was an error."""
    result = server.request("tools/call", {"name": tool, "arguments": args})
    text = "".join(c.get("text", "") for c in result.get("content", []) if c.get("type") == "text")
    return text, bool(result.get("isError"))


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--source", required=True, help="a PyTorch source tree (indexed in $TORCHTALK_CACHE_DIR)")
    ap.add_argument("--show", help="print the whole answer of the question whose call text contains this")
    ap.add_argument("--json", help="write per question figures to this file")
    args = ap.parse_args()
    subprocess.run([sys.executable, "-m", "torchtalk", "index", "--source", args.source], check=True,
                   stdout=subprocess.DEVNULL)
    server = Server(Path(args.source), dict(os.environ))
    rows, bad = [], 0
    try:
        for tool, kwargs in QUESTIONS:
            text, error = answer_text(server, tool, kwargs)
            cuts = [line for line in text.splitlines() if line.startswith("Cut:")]
            silent = [c for c in cuts if not CALL.search(c)]
            bad += bool(silent) + error
            call = call_text(tool, kwargs)
            rows.append({"call": call, "chars": len(text), "cuts": len(cuts), "silent": silent, "error": error})
            flag = " ERROR" if error else (f" SILENT CUT: {silent[0]}" if silent else "")
            print(f"{len(text):>8,}  {len(cuts):>3} cut  {call}{flag}", flush=True)
            if args.show and args.show in call:
                print(text)
    finally:
        server.close()
    sizes = sorted(r["chars"] for r in rows)
    print(f"\n{len(rows)} questions; characters p50 {pct(sizes, 50):,.0f} / p95 {pct(sizes, 95):,.0f} / "
          f"max {sizes[-1]:,}; answers with cut lines: {sum(1 for r in rows if r['cuts'])}; silent cuts or errors: "
          f"{bad}")
    if args.json:
        Path(args.json).write_text(json.dumps(rows, indent=2), encoding="utf-8")
    return 1 if bad else 0


if __name__ == "__main__":
    raise SystemExit(main())
