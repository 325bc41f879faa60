"""Real `torchtalk serve` processes for tests: over stdio, spoken to in raw JSON-RPC lines (``RawServer``), and
over HTTP (``HttpServer``). Every read has a timeout: a hang fails the test instead of hanging it."""

from __future__ import annotations

import contextlib
import json
import os
import queue
import signal
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path

import psutil
import pytest

TIMEOUT_S = 30.0


class RawServer:
    """`torchtalk serve` over stdio, spoken to in raw lines."""

    def __init__(self, args: list[str], env: dict | None = None, cwd=None):
        self.proc = subprocess.Popen([sys.executable, "-m", "torchtalk", "serve", *args], stdin=subprocess.PIPE,
                                     stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env or dict(os.environ),
                                     cwd=cwd)
        self.lines: queue.Queue[bytes | None] = queue.Queue()
        self.stderr: list[str] = []
        threading.Thread(target=self._pump, daemon=True).start()
        threading.Thread(target=lambda: self.stderr.extend(ln.decode(errors="replace") for ln in self.proc.stderr),
                         daemon=True).start()

    def _pump(self) -> None:
        for line in self.proc.stdout:
            self.lines.put(line)
        self.lines.put(None)

    def send(self, raw: bytes | str) -> None:
        if isinstance(raw, str):
            raw = raw.encode()
        self.proc.stdin.write(raw + b"\n")
        self.proc.stdin.flush()

    def send_json(self, msg: dict) -> None:
        self.send(json.dumps(msg))

    def receive(self, timeout: float = TIMEOUT_S) -> dict:
        try:
            line = self.lines.get(timeout=timeout)
        except queue.Empty:
            pytest.fail(f"no answer within {timeout}s; server log:\n{''.join(self.stderr)[-2000:]}")
        if line is None:
            pytest.fail(f"the server closed stdout; log:\n{''.join(self.stderr)[-2000:]}")
        return json.loads(line)  # every line the server writes is JSON

    def nothing_pending(self) -> bool:
        return self.lines.empty()

    def initialize(self) -> dict:
        self.send_json({"jsonrpc": "2.0", "id": "init", "method": "initialize",
                        "params": {"protocolVersion": "2025-06-18", "capabilities": {},
                                   "clientInfo": {"name": "raw-test", "version": "0"}}})
        reply = self.receive(120)
        self.send_json({"jsonrpc": "2.0", "method": "notifications/initialized"})
        return reply

    def call(self, msg_id, name: str, arguments) -> dict:
        self.send_json({"jsonrpc": "2.0", "id": msg_id, "method": "tools/call",
                        "params": {"name": name, "arguments": arguments}})
        return self.receive()

    def close(self) -> int:
        if self.proc.stdin and not self.proc.stdin.closed:
            self.proc.stdin.close()
        try:
            return self.proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
            pytest.fail("the server did not exit within 30 s after stdin closed")


def reply_text(reply: dict) -> str:
    """The text of a tools/call reply."""
    return "\n".join(c.get("text", "") for c in reply["result"]["content"])


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class HttpServer:
    def __init__(self, tree: Path, log: Path, workers: int = 2):
        self.port = free_port()
        self.log_path = log
        self._log = open(log, "w+")  # noqa: SIM115 - the server writes it until stop()
        env = dict(os.environ, TORCHTALK_HTTP_WORKERS=str(workers))
        self.proc = subprocess.Popen([sys.executable, "-m", "torchtalk", "serve", "--source", str(tree), "--transport",
                                      "http", "--port", str(self.port), "--no-codegen"], stdin=subprocess.DEVNULL,
                                     stdout=self._log, stderr=subprocess.STDOUT, env=env, start_new_session=True)
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline:
            assert self.proc.poll() is None, f"the server exited: {self.log()}"
            with contextlib.suppress(OSError), socket.create_connection(("127.0.0.1", self.port), timeout=1):
                return
            time.sleep(0.1)
        pytest.fail(f"not listening after 120 s: {self.log()}")

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}/mcp"

    def log(self) -> str:
        if not self._log.closed:
            self._log.flush()
        return self.log_path.read_text(errors="replace")

    def descendants(self) -> list[psutil.Process]:
        return psutil.Process(self.proc.pid).children(recursive=True)

    def post(self, msg: dict, headers: dict | None = None) -> tuple[int, dict, str]:
        import http.client
        conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=60)
        h = {"Content-Type": "application/json", "Accept": "application/json, text/event-stream",
             "MCP-Protocol-Version": "2025-06-18", **(headers or {})}
        conn.request("POST", "/mcp", body=json.dumps(msg), headers=h)
        r = conn.getresponse()
        out = r.status, dict(r.getheaders()), r.read().decode()
        conn.close()
        return out

    def stop(self) -> int:
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
        try:
            return self.proc.wait(timeout=60)
        finally:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(self.proc.pid, signal.SIGKILL)
            self._log.close()
