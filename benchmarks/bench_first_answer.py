#!/usr/bin/env python3
"""First answers: how long a question new to the server takes, and how long its answer is.

    python benchmarks/bench_first_answer.py --source PATH [--one-server] [--runs N]

An agent asks most questions once, so the latency that matters is the first one. Each
question in QUESTIONS (the README's and the tools' examples, the questions of issue 25 and
their neighbours) goes to a fresh `torchtalk serve` over stdio as plain JSON-RPC lines: the
server starts, answers `initialize`, runs its background warm-up (the benchmark waits until
the server's CPU time stops growing, as a user who types a first question would), and then
gets the one question. With --one-server, one warmed-up server gets every question once in
turn (each still new to it; what an earlier question memoised may help a later one).

Prints per question the latency, the server's CPU time for it and the answer's characters (the
Markdown text an agent reads), then p50 / p95 / max of each, with the load average: on a shared
machine the wall time grows with the load, the CPU time much less. Uses the
index of the tree in $TORCHTALK_CACHE_DIR (built first if missing) and its store of resolved calls (made first if
missing, as a server makes it in the background: `torchtalk resolve`; Note [Resolved calls]).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

import psutil

sys.path.insert(0, str(Path(__file__).parent))
from run_all import pct

# The questions a contributor asks first: (tool, arguments).
QUESTIONS: list[tuple[str, dict]] = [
    # issue 25's slowest and longest first answers
    ("impact", {"function_name": "at::native::resize_output", "depth": 3}),
    ("called_by", {"function_name": "at::native::copy_"}),
    ("trace", {"function_name": "add", "focus": "full"}),
    ("cuda_kernels", {"function_name": "conv2d"}),
    ("cuda_kernels", {"function_name": "scaled_dot_product_attention"}),
    ("trace", {"function_name": "torch.nn.functional.interpolate"}),
    ("impact", {"function_name": "at::native::add", "depth": 3}),
    ("impact", {"function_name": "at::native::matmul", "depth": 3}),
    # the tools' examples
    ("trace", {"function_name": "softmax", "focus": "dispatch"}),
    ("search", {"query": "conv", "backend": "CUDA"}),
    ("calls", {"function_name": "index_select_out_cuda"}),
    ("called_by", {"function_name": "at::native::index_select_out_cpu_"}),
    ("impact", {"function_name": "index_select_out_cpu_", "depth": 2}),
    ("cuda_kernels", {"function_name": "softmax"}),
    ("trace_module", {"module_name": "Linear"}),
    ("list_modules", {"category": "nn"}),
    ("find_similar_tests", {"query": "cumsum"}),
    ("list_test_utils", {"category": "decorators"}),
    ("test_file_info", {"file_path": "test_torch"}),
    ("get_status", {}),
    # their neighbours
    ("trace", {"function_name": "relu"}),
    ("trace", {"function_name": "conv2d"}),
    ("trace", {"function_name": "torch.matmul"}),
    ("trace", {"function_name": "F.relu"}),
    ("trace", {"function_name": "layer_norm", "focus": "yaml"}),
    ("trace", {"function_name": "torch.set_num_threads"}),
    ("calls", {"function_name": "at::native::matmul"}),
    ("calls", {"function_name": "TORCH_IMPL_FUNC(cumsum_out)"}),
    ("called_by", {"function_name": "GroupNormKernel"}),
    ("called_by", {"function_name": "impl_func_cum_ops"}),
    ("impact", {"function_name": "at::native::copy_", "depth": 2}),
    ("cuda_kernels", {"function_name": "group_norm"}),
    ("cuda_kernels", {"function_name": "index_select"}),
    ("trace_module", {"module_name": "torch.optim.AdamW"}),
    ("trace_module", {"module_name": "torch.nn.Conv2d"}),
    ("search", {"query": "attention"}),
    ("find_similar_tests", {"query": "index_select"}),
]


class Server:
    """One `torchtalk serve` over stdio, spoken to in plain JSON-RPC lines."""

    def __init__(self, tree: Path, env: dict):
        self.proc = subprocess.Popen([sys.executable, "-m", "torchtalk", "serve", "--source", str(tree)], env=env,
                                     stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                                     text=True)
        self.next_id = 0
        self.request("initialize", {"protocolVersion": "2025-06-18", "capabilities": {},
                                    "clientInfo": {"name": "bench-first-answer", "version": "0"}})
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

    def settle(self, quiet_s: float = 1.0, limit_s: float = 120.0) -> float:
        """Wait until the server's CPU time stops growing (its background warm-up is done); seconds waited."""
        p = psutil.Process(self.proc.pid)
        t0 = time.perf_counter()
        time.sleep(0.5)  # the warm-up starts a moment after `initialize`
        last, still = p.cpu_times(), 0.0
        while time.perf_counter() - t0 < limit_s and still < quiet_s:
            time.sleep(0.25)
            now = p.cpu_times()
            busy = (now.user + now.system) - (last.user + last.system)
            still = still + 0.25 if busy < 0.02 else 0.0
            last = now
        return time.perf_counter() - t0

    def ask(self, tool: str, args: dict) -> tuple[float, float, int, bool]:
        """(wall seconds, server CPU seconds, characters of text, is an error) of one call."""
        p = psutil.Process(self.proc.pid)
        c0 = p.cpu_times()
        t0 = time.perf_counter()
        result = self.request("tools/call", {"name": tool, "arguments": args})
        dt = time.perf_counter() - t0
        c1 = p.cpu_times()
        text = "".join(c.get("text", "") for c in result.get("content", []) if c.get("type") == "text")
        return dt, (c1.user + c1.system) - (c0.user + c0.system), len(text), bool(result.get("isError"))

    def close(self) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.close()
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.proc.terminate()
            self.proc.wait(timeout=10)


def call_text(tool: str, args: dict) -> str:
    return f"{tool}({', '.join(f'{k}={v!r}' for k, v in args.items())})"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--source", required=True, help="a PyTorch source tree (indexed in $TORCHTALK_CACHE_DIR)")
    ap.add_argument("--one-server", action="store_true", help="one warmed-up server gets every question once")
    ap.add_argument("--runs", type=int, default=1, help="repeat the whole list N times (fresh servers each time)")
    args = ap.parse_args()
    tree = Path(args.source).resolve()
    env = dict(os.environ)
    subprocess.run([sys.executable, "-m", "torchtalk", "index", "--source", str(tree), "--progress", "never"],
                   env=env, check=True, stdout=subprocess.DEVNULL)
    # The store of resolved calls of this build (Note [Resolved calls]), as a server that has run for a minute has
    # it: made here if missing, and timed.
    t0 = time.perf_counter()
    said = subprocess.run([sys.executable, "-m", "torchtalk", "resolve", "--source", str(tree), "--progress", "never"],
                          env=env, check=True, stdout=subprocess.PIPE, text=True).stdout.strip()
    print(f"store of resolved calls: {said} ({time.perf_counter() - t0:.1f} s)", file=sys.stderr, flush=True)

    load0 = os.getloadavg()[0]
    rows: list[tuple[str, float, float, int, bool]] = []
    for _ in range(args.runs):
        shared = Server(tree, env) if args.one_server else None
        if shared is not None:
            shared.settle()
        for tool, targs in QUESTIONS:
            server = shared or Server(tree, env)
            if shared is None:
                server.settle()
            dt, cpu, chars, err = server.ask(tool, targs)
            if shared is None:
                server.close()
            rows.append((call_text(tool, targs), dt, cpu, chars, err))
            print(f"  {dt * 1e3:7.0f} ms {cpu * 1e3:7.0f} ms CPU {chars:7d} chars  {call_text(tool, targs)}"
                  f"{'  ERROR' if err else ''}", file=sys.stderr, flush=True)
        if shared is not None:
            shared.close()
    load1 = os.getloadavg()[0]

    lat = [r[1] * 1e3 for r in rows]
    cpu = [r[2] * 1e3 for r in rows]
    chars = [r[3] for r in rows]
    mode = "one warmed-up server" if args.one_server else "a fresh warmed-up server per question"
    print(f"first answers: {len(rows)} questions ({len(QUESTIONS)} distinct), {mode}; "
          f"load average {load0:.1f} -> {load1:.1f}")
    print(f"latency (ms):  p50 {statistics.median(lat):.0f}  p95 {pct(lat, 95):.0f}  max {max(lat):.0f}")
    print(f"server CPU (ms): p50 {statistics.median(cpu):.0f}  p95 {pct(cpu, 95):.0f}  max {max(cpu):.0f}  "
          "(what the answer costs, whatever else runs on the machine)")
    print(f"answer chars:  p50 {statistics.median(chars):.0f}  p95 {pct(chars, 95):.0f}  max {max(chars)}")
    print("slowest:", "; ".join(f"{r[0]} {r[1] * 1e3:.0f} ms ({r[2] * 1e3:.0f} ms CPU)"
                                for r in sorted(rows, key=lambda r: -r[1])[:5]))
    print("longest:", "; ".join(f"{r[0]} {r[3]} chars" for r in sorted(rows, key=lambda r: -r[3])[:5]))
    errors = [r[0] for r in rows if r[4]]
    if errors:
        print("errors:", "; ".join(errors))
    return 1 if errors else 0


if __name__ == "__main__":
    sys.exit(main())
