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
import re
import subprocess
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
from run_all import pct

# (tool, arguments): the questions a contributor asks first.
QUESTIONS: list[tuple[str, dict]] = [
    # issue 25's longest and slowest first answers
    ("trace", {"function_name": "torch.nn.functional.interpolate"}),
    ("impact", {"function_name": "at::native::add", "depth": 3}),
    ("impact", {"function_name": "at::native::resize_output", "depth": 3}),
    ("impact", {"function_name": "at::native::matmul", "depth": 3}),
    ("cuda_kernels", {"function_name": "scaled_dot_product_attention"}),
    ("trace", {"function_name": "add", "focus": "full"}),
    ("called_by", {"function_name": "at::native::copy_"}),
    ("cuda_kernels", {"function_name": "conv2d"}),
    # the README's and the tools' examples
    ("trace", {"function_name": "softmax"}),
    ("trace", {"function_name": "softmax", "focus": "dispatch"}),
    ("trace", {"function_name": "cumsum"}),
    ("trace", {"function_name": "torch.set_num_threads"}),
    ("search", {"query": "conv", "backend": "CUDA"}),
    ("calls", {"function_name": "index_select_out_cuda"}),
    ("called_by", {"function_name": "at::native::index_select_out_cpu_"}),
    ("impact", {"function_name": "index_select_out_cpu_", "depth": 2}),
    ("cuda_kernels", {"function_name": "softmax"}),
    ("cuda_kernels", {}),
    ("trace_module", {"module_name": "nn.Linear"}),
    ("list_modules", {"category": "optim"}),
    ("find_similar_tests", {"query": "cumsum"}),
    ("list_test_utils", {"category": "decorators"}),
    ("test_file_info", {"file_path": "test_torch"}),
    ("affected", {"names": "aten/src/ATen/native/ReduceOps.cpp:491"}),
    ("get_status", {}),
    # their neighbours
    ("trace", {"function_name": "relu"}),
    ("trace", {"function_name": "conv2d"}),
    ("trace", {"function_name": "torch.matmul"}),
    ("trace", {"function_name": "F.cross_entropy"}),
    ("trace", {"function_name": "layer_norm", "focus": "yaml"}),
    ("trace", {"function_name": "index_select", "focus": "dispatch"}),
    ("trace", {"function_name": "mul"}),
    ("calls", {"function_name": "at::native::matmul"}),
    ("calls", {"function_name": "TORCH_IMPL_FUNC(cumsum_out)"}),
    ("called_by", {"function_name": "GroupNormKernel"}),
    ("called_by", {"function_name": "at::native::resize_output"}),
    ("impact", {"function_name": "at::native::copy_", "depth": 2}),
    ("impact", {"function_name": "impl_func_cum_ops", "depth": 2}),
    ("cuda_kernels", {"function_name": "group_norm"}),
    ("cuda_kernels", {"function_name": "index_select"}),
    ("trace_module", {"module_name": "torch.optim.AdamW"}),
    ("trace_module", {"module_name": "torch.nn.Conv2d"}),
    ("search", {"query": "attention"}),
    ("find_similar_tests", {"query": "index_select"}),
]

CALL = re.compile(r"\b[a-z_]+\(|structured answer|--json")  # a cut line names a call, or the structured answer


class Server:
    """One `torchtalk serve` over stdio, spoken to in plain JSON-RPC lines."""

    def __init__(self, tree: Path):
        self.proc = subprocess.Popen([sys.executable, "-m", "torchtalk", "serve", "--source", str(tree)],
                                     stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                                     text=True)
        self.next_id = 0
        self.request("initialize", {"protocolVersion": "2025-06-18", "capabilities": {},
                                    "clientInfo": {"name": "bench-answer-size", "version": "0"}})
        self.send({"jsonrpc": "2.0", "method": "notifications/initialized"})

    def send(self, msg: dict) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write(json.dumps(msg) + "\n")
        self.proc.stdin.flush()

    def request(self, method: str, params: dict) -> dict:
        self.next_id += 1
        self.send({"jsonrpc": "2.0", "id": self.next_id, "method": method, "params": params})
        assert self.proc.stdout is not None
        while True:
            line = self.proc.stdout.readline()
            if not line:
                raise SystemExit("the server closed its stdout")
            msg = json.loads(line)
            if msg.get("id") == self.next_id:
                if "error" in msg:
                    raise SystemExit(f"{method} failed: {msg['error']}")
                return msg["result"]

    def ask(self, tool: str, args: dict) -> tuple[str, bool]:
        result = self.request("tools/call", {"name": tool, "arguments": args})
        text = "".join(c.get("text", "") for c in result.get("content", []) if c.get("type") == "text")
        return text, bool(result.get("isError"))

    def close(self) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.close()
        try:
            self.proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            self.proc.terminate()
            self.proc.wait(timeout=10)


def call_text(tool: str, args: dict) -> str:
    return f"{tool}({', '.join(f'{k}={v!r}' for k, v in args.items())})"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--source", required=True, help="a PyTorch source tree (indexed in $TORCHTALK_CACHE_DIR)")
    ap.add_argument("--show", help="print the whole answer of the question whose call text contains this")
    ap.add_argument("--json", help="write per question figures to this file")
    args = ap.parse_args()
    subprocess.run([sys.executable, "-m", "torchtalk", "index", "--source", args.source], check=True,
                   stdout=subprocess.DEVNULL)
    server = Server(Path(args.source))
    rows, bad = [], 0
    try:
        for tool, kwargs in QUESTIONS:
            text, error = server.ask(tool, kwargs)
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
