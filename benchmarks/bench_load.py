#!/usr/bin/env python3
"""The HTTP server under load: N concurrent clients calling a mix of tools on a real tree.

    python benchmarks/bench_load.py --source "$(bash ../shared/get-pytorch-source | tail -n1)"

Starts `torchtalk serve --transport http` on a free loopback port (over the index in
$TORCHTALK_CACHE_DIR, built first when missing), opens --clients MCP sessions, and lets each
make --calls tool calls from the fixed mix of benchmarks/run_all.py, all at once. Prints
calls/s, latency p50/p95/max, errors, and the server's memory after the run: RSS of the whole
process tree, its anonymous part (what the processes really hold; file-backed pages of the
memory-mapped index are shared with the page cache) and how many times index.db is mapped.

The clients speak plain JSON-RPC over HTTP from threads (stdlib http.client): the SDK's own
client re-validates every structuredContent with jsonschema (5-45 ms a call), which on a
2-core machine would measure the client rather than the server. They handle both reply forms
of streamable HTTP (JSON, or an SSE stream) and send the session id when the server gives one.
"""

from __future__ import annotations

import argparse
import contextlib
import http.client
import json
import os
import signal
import socket
import statistics
import subprocess
import sys
import threading
import time
from pathlib import Path

import psutil

sys.path.insert(0, str(Path(__file__).parent))
from run_all import MIX

PROTOCOL = "2025-06-18"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Session:
    """One MCP client over streamable HTTP: initialize once, then tools/call."""

    def __init__(self, port: int):
        self.address = ("127.0.0.1", port)
        self.conn = http.client.HTTPConnection(*self.address, timeout=300)
        self.session_id: str | None = None
        self.next_id = 0
        self.reconnects = 0

    def _send(self, msg: dict) -> http.client.HTTPResponse:
        headers = {"Content-Type": "application/json", "Accept": "application/json, text/event-stream",
                   "MCP-Protocol-Version": PROTOCOL}
        if self.session_id:
            headers["Mcp-Session-Id"] = self.session_id
        self.conn.request("POST", "/mcp", body=json.dumps(msg), headers=headers)
        return self.conn.getresponse()

    def _post(self, msg: dict) -> dict | None:
        try:
            resp = self._send(msg)
        except (ConnectionError, http.client.HTTPException):
            # The server closed an idle keep-alive connection: what every HTTP client does, reconnect once.
            self.reconnects += 1
            self.conn.close()
            self.conn = http.client.HTTPConnection(*self.address, timeout=300)
            resp = self._send(msg)
        self.session_id = resp.getheader("Mcp-Session-Id") or self.session_id
        body = resp.read().decode()
        if resp.status >= 400:
            raise RuntimeError(f"HTTP {resp.status}: {body[:300]}")
        if "id" not in msg or not body.strip():
            return None
        if resp.getheader("Content-Type", "").startswith("text/event-stream"):
            for line in body.splitlines():
                if line.startswith("data:"):
                    data = json.loads(line[5:])
                    if data.get("id") == msg["id"]:
                        return data
            raise RuntimeError(f"no answer to {msg['id']} in the event stream: {body[:300]}")
        return json.loads(body)

    def request(self, method: str, params: dict) -> dict:
        self.next_id += 1
        reply = self._post({"jsonrpc": "2.0", "id": self.next_id, "method": method, "params": params})
        if reply is None or "error" in reply:
            raise RuntimeError(f"{method} failed: {reply}")
        return reply["result"]

    def open(self) -> None:
        self.request("initialize", {"protocolVersion": PROTOCOL, "capabilities": {},
                                    "clientInfo": {"name": "bench_load", "version": "0"}})
        self._post({"jsonrpc": "2.0", "method": "notifications/initialized"})

    def close(self) -> None:
        if self.session_id:  # a stateful server keeps the session until told
            with contextlib.suppress(OSError, http.client.HTTPException):
                self.conn.request("DELETE", "/mcp", headers={"Mcp-Session-Id": self.session_id,
                                                             "MCP-Protocol-Version": PROTOCOL})
                self.conn.getresponse().read()
        self.conn.close()


def tree_memory(pid: int) -> dict[str, float]:
    """Memory of the server's processes (MB), summed: RSS and its anonymous part count a page once per
    process that maps it (worker processes share their parent's pages copy-on-write, and each mapping
    of index.db counts its pages again); PSS divides shared pages among their sharers, so its sum is
    what the server really holds. Also how many times index.db is mapped, and how many processes."""
    out = {"VmRSS": 0.0, "RssAnon": 0.0, "Pss": 0.0, "Pss_Anon": 0.0, "maps": 0, "processes": 0}
    for p in [psutil.Process(pid)] + psutil.Process(pid).children(recursive=True):
        try:
            if "serve" not in " ".join(p.cmdline()):  # not a background `torchtalk index`
                continue
            files = [Path(f"/proc/{p.pid}/{name}").read_text() for name in ("status", "smaps_rollup", "maps")]
        except (psutil.Error, OSError):  # it ended meanwhile
            continue
        out["processes"] += 1
        for line in (files[0] + files[1]).splitlines():
            key, _, rest = line.partition(":")
            if key in out and key not in ("maps", "processes"):
                out[key] += int(rest.split()[0]) / 1024
        out["maps"] += sum(1 for line in files[2].splitlines() if line.endswith("/index.db"))
    return out


def tree_cpu(pid: int) -> float:
    """CPU seconds (user + system) the server's processes have used so far."""
    total = 0.0
    for p in [psutil.Process(pid)] + psutil.Process(pid).children(recursive=True):
        with contextlib.suppress(psutil.Error):
            if "serve" in " ".join(p.cmdline()):
                t = p.cpu_times()
                total += t.user + t.system
    return total


def wait_for_port(port: int, proc: subprocess.Popen, timeout: float) -> float:
    t0 = time.perf_counter()
    while time.perf_counter() - t0 < timeout:
        if proc.poll() is not None:
            raise SystemExit(f"the server exited with {proc.returncode}")
        with contextlib.suppress(OSError), socket.create_connection(("127.0.0.1", port), timeout=1):
            return time.perf_counter() - t0
        time.sleep(0.05)
    raise SystemExit(f"the server did not listen on {port} within {timeout}s")


def pct(values: list[float], p: float) -> float:
    s = sorted(values)
    return s[min(len(s) - 1, round(p / 100 * (len(s) - 1)))]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--source", required=True, help="PyTorch source tree (indexed first when it has no index)")
    ap.add_argument("--clients", type=int, default=30)
    ap.add_argument("--calls", type=int, default=40, help="tool calls per client")
    ap.add_argument("--serve-arg", action="append", default=[],
                    help="extra argument for `torchtalk serve` (repeatable)")
    args = ap.parse_args()

    env = dict(os.environ)
    subprocess.run([sys.executable, "-m", "torchtalk", "index", "--source", args.source, "--progress", "never"],
                   env=env, check=True, stdout=subprocess.DEVNULL)
    port = free_port()
    proc = subprocess.Popen([sys.executable, "-m", "torchtalk", "serve", "--source", args.source, "--transport",
                             "http", "--port", str(port), *args.serve_arg], env=env, stdin=subprocess.DEVNULL,
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, start_new_session=True)
    log: list[str] = []
    threading.Thread(target=lambda: log.extend(proc.stderr), daemon=True).start()
    try:
        listening = wait_for_port(port, proc, 300)
        sessions = [Session(port) for _ in range(args.clients)]
        for s in sessions:
            s.open()
            s.request("tools/call", {"name": "get_status", "arguments": {}})  # warm: one call each
        time.sleep(1.5)  # the server's own warm-up runs a moment after start
        lat: list[float] = []
        per_tool: dict[str, list[float]] = {}
        errors: list[str] = []
        lock = threading.Lock()
        start = threading.Barrier(args.clients + 1)

        def client(i: int) -> None:
            s = sessions[i]
            start.wait()
            for k in range(args.calls):
                name, call_args = MIX[(i * 7 + k) % len(MIX)]  # clients start at different places in the mix
                t0 = time.perf_counter()
                try:
                    result = s.request("tools/call", {"name": name, "arguments": call_args})
                    if result.get("isError"):
                        raise RuntimeError(result["content"][0]["text"][:200])
                except Exception as exc:  # noqa: BLE001 - counted and shown
                    with lock:
                        errors.append(f"{name}: {type(exc).__name__}: {exc}")
                    continue
                dt = time.perf_counter() - t0
                with lock:
                    lat.append(dt)
                    per_tool.setdefault(name, []).append(dt)

        threads = [threading.Thread(target=client, args=(i,)) for i in range(args.clients)]
        for t in threads:
            t.start()
        cpu0 = tree_cpu(proc.pid)
        start.wait()
        t0 = time.perf_counter()
        for t in threads:
            t.join()
        wall = time.perf_counter() - t0
        cpu = tree_cpu(proc.pid) - cpu0
        mem = tree_memory(proc.pid)
        for s in sessions:
            s.close()
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGTERM)
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()

    done = len(lat)
    print(f"server: `torchtalk serve --transport http {' '.join(args.serve_arg)}`, {mem['processes']} process(es), "
          f"listening after {listening:.2f}s; {os.cpu_count()} cores")
    reconnects = sum(s.reconnects for s in sessions)
    print(f"{args.clients} clients x {args.calls} calls: {done} answered, {len(errors)} errors, in {wall:.1f}s"
          f" ({reconnects} reconnects after the server closed an idle connection)")
    print(f"throughput: {done / wall:.1f} calls/s; the server used {cpu:.1f} CPU-s, "
          f"{cpu / max(done, 1) * 1e3:.1f} ms a call, "
          f"{cpu / wall:.2f} cores on average (the machine's load average was {os.getloadavg()[0]:.1f})")
    print(f"latency (ms): p50 {statistics.median(lat) * 1e3:.0f}  p95 {pct(lat, 95) * 1e3:.0f}  "
          f"max {max(lat) * 1e3:.0f}")
    print(f"server memory after the run: RSS {mem['VmRSS']:.0f} MB (anonymous {mem['RssAnon']:.0f} MB), "
          f"PSS {mem['Pss']:.0f} MB (anonymous {mem['Pss_Anon']:.0f} MB), index.db mapped {mem['maps']} times")
    for name in sorted(per_tool):
        v = per_tool[name]
        print(f"  {name:20s} n={len(v):4d}  p50 {statistics.median(v) * 1e3:6.0f} ms  p95 {pct(v, 95) * 1e3:6.0f} ms")
    for e in errors[:5]:
        print(f"  error: {e}")
    tracebacks = [line for line in log if "Traceback" in line]
    if tracebacks:
        print(f"server log: {len(tracebacks)} traceback(s); first lines:\n" + "".join(log[:20]))
    return 1 if errors or tracebacks else 0


if __name__ == "__main__":
    sys.exit(main())
