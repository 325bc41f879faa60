"""Streamable HTTP: worker processes over one socket, clean shutdown, clients that hang up mid-answer."""

from __future__ import annotations

import asyncio
import contextlib
import json
import random
import socket
import subprocess
import sys
import time

import psutil
import pytest
from mcp import Client

from torchtalk.tools import all_tools

from ..servers import HttpServer

LOG_PROBLEMS = ("Traceback", "ClosedResourceError", "Unexpected ASGI message", "Exception in ASGI application")


@pytest.fixture
def http_server(indexed, tmp_path):
    tree, _ix = indexed
    s = HttpServer(tree, tmp_path / "server.log")
    yield s
    s.stop()


async def _call(url: str, name: str, args: dict):
    async with Client(url, read_timeout_seconds=60) as c:
        return await c.call_tool(name, args)


def _text(result) -> str:
    return "\n".join(getattr(c, "text", "") for c in result.content)


def test_workers_answer_statelessly_and_a_sigterm_ends_every_process(http_server):
    s = http_server
    deadline = time.monotonic() + 30  # the socket listens before the workers are forked
    while len(workers := [p for p in s.descendants() if "serve" in " ".join(p.cmdline())]) < 2:
        assert time.monotonic() < deadline, workers
        time.sleep(0.1)
    assert len(workers) == 2, workers

    async def go():
        async with Client(s.url, read_timeout_seconds=60) as c:
            tools = (await c.list_tools()).tools
            assert {t.name for t in tools} == {t.name for t in all_tools()}
            out = await asyncio.gather(*(c.call_tool("trace", {"function_name": "relu", "focus": "dispatch"})
                                         for _ in range(8)))
            assert all(not r.is_error and "MPS: relu_mps" in _text(r) for r in out)
            r = await c.call_tool("impact", {"function_name": "index_select_out_cpu_", "depth": "2"})
            assert r.is_error and "depth must be an integer" in _text(r)
            # Calls start a background `torchtalk index` freshness run in a worker: shut down while it runs.
            return await c.call_tool("get_status", {})

    assert not asyncio.run(go()).is_error
    status, headers, body = s.post({"jsonrpc": "2.0", "id": 1, "method": "tools/list"})
    assert status == 200 and "mcp-session-id" not in {k.lower() for k in headers}, headers  # stateless
    assert len(json.loads(body)["result"]["tools"]) == len(all_tools())
    family = s.descendants()
    assert s.stop() == 143  # 128 + SIGTERM
    time.sleep(0.5)
    left = []
    for p in family:
        with contextlib.suppress(psutil.NoSuchProcess):
            left.append((p.pid, p.status(), " ".join(p.cmdline())[:100]))
    assert not left, f"processes left after the server exited (running or unreaped): {left}"
    log = s.log()
    assert not any(m in log for m in LOG_PROBLEMS), log[-3000:]


def test_loopback_only_and_foreign_origin_or_host_is_refused(http_server):
    s = http_server
    addrs = {c.laddr.ip for p in [psutil.Process(s.proc.pid), *s.descendants()]
             for c in p.net_connections(kind="tcp") if c.status == psutil.CONN_LISTEN}
    assert addrs == {"127.0.0.1"}, addrs
    init = {"jsonrpc": "2.0", "id": 1, "method": "initialize",
            "params": {"protocolVersion": "2025-06-18", "capabilities": {},
                       "clientInfo": {"name": "t", "version": "0"}}}
    assert s.post(init, {"Origin": "http://evil.example"})[0] == 403
    assert s.post(init, {"Host": "evil.example"})[0] == 421
    assert s.post(init, {"Origin": f"http://127.0.0.1:{s.port}"})[0] == 200


def _hang_up(port: int, msg: dict, read_bytes: int, reset: bool) -> None:
    body = json.dumps(msg).encode()
    head = (f"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nContent-Type: application/json\r\n"
            f"Accept: application/json, text/event-stream\r\nMCP-Protocol-Version: 2025-06-18\r\n"
            f"Content-Length: {len(body)}\r\n\r\n").encode()
    c = socket.create_connection(("127.0.0.1", port))
    c.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
    c.sendall(head + body)
    got = 0
    with contextlib.suppress(OSError):
        while got < read_bytes:
            data = c.recv(min(4096, read_bytes - got))
            if not data:
                break
            got += len(data)
    if reset:  # an abortive close (RST), as a killed client leaves it
        c.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, (1).to_bytes(4, "little") + (0).to_bytes(4, "little"))
    c.close()


@pytest.mark.timeout(300)
def test_clients_that_hang_up_mid_answer_leave_no_traceback(http_server):
    s = http_server
    big = [("list_modules", {"category": "all"}), ("search", {"query": "e", "limit": 500}),
           ("find_similar_tests", {"query": "index", "limit": 500}), ("trace", {"function_name": "cumsum"})]
    for read_bytes in (0, 1, 100, 2000):
        for reset in (False, True):
            for name, args in big:
                _hang_up(s.port, {"jsonrpc": "2.0", "id": 7, "method": "tools/call",
                                  "params": {"name": name, "arguments": args}}, read_bytes, reset)
    rnd = random.Random(20240611)

    async def impatient(i: int) -> None:
        name, args = big[i % len(big)]
        with contextlib.suppress(BaseException):
            await asyncio.wait_for(_call(s.url, name, args), rnd.uniform(0.01, 0.5))

    async def crowd():
        await asyncio.gather(*(impatient(i) for i in range(40)))

    asyncio.run(crowd())
    time.sleep(2)
    r = asyncio.run(_call(s.url, "trace", {"function_name": "relu", "focus": "yaml"}))
    assert not r.is_error and "## relu" in _text(r)
    assert s.stop() == 143  # SIGTERM
    log = s.log()
    assert not any(m in log for m in LOG_PROBLEMS), log[-3000:]


def test_a_port_in_use_is_a_clear_error(tree):
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        r = subprocess.run([sys.executable, "-m", "torchtalk", "serve", "--source", str(tree), "--transport", "http",
                            "--port", str(port)], check=False, capture_output=True, text=True, timeout=120)
    assert r.returncode == 2 and "Traceback" not in r.stderr
    assert f"error: cannot listen on 127.0.0.1:{port}: Address already in use" in r.stderr, r.stderr
