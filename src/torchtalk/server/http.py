"""Streamable HTTP for a team: stateless, JSON replies, one worker process per core over one socket.

Python runs one query at a time per process (the GIL), so answers scale with cores only across
processes. The server is stateless (no session to keep: every call carries what it needs), so any
worker can answer any request, and the kernel spreads connections over the workers that accept on
the shared socket. Each worker reads the same index file (read-only, memory-mapped, so its pages
are shared); background index runs are coordinated through a BuildState in shared memory. The
parent only supervises: it forwards SIGTERM/SIGINT, reaps every worker, and replaces one that dies; it
exits 143 (SIGTERM) or 130 (SIGINT) once they are gone, within about a second (``http_guard.py``).
"""

from __future__ import annotations

import contextlib
import ipaddress
import logging
import os
import signal
import socket
import sys
import threading
import time

from ..errors import BadArgument
from .app import build_server
from .backend import Backend
from .builds import BuildState
from .http_guard import Guard, StoppingServer, TimedH11
from .signals import Stopped, stop_on_signals
from .view.routes import PREFIX as VIEW_PREFIX
from .view.routes import view_routes

log = logging.getLogger("torchtalk")

MAX_WORKERS = 8
GRACEFUL_S = 1.0  # uvicorn's bound on the shutdown; calls still running are cut at http_guard.GRACE_S
RESPAWN_LIMIT = 5  # workers dying within RESPAWN_WINDOW_S of their start before the server gives up
RESPAWN_WINDOW_S = 10.0


def default_workers() -> int:
    env = os.environ.get("TORCHTALK_HTTP_WORKERS", "").strip()
    if env.isdigit() and int(env) > 0:
        return min(int(env), MAX_WORKERS)
    return max(1, min(len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1,
                      MAX_WORKERS))


def is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def bind(host: str, port: int) -> socket.socket:
    try:
        family = socket.AF_INET6 if ipaddress.ip_address(host).version == 6 else socket.AF_INET
    except ValueError:  # a name such as localhost
        family = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)[0][0]
    # proto=IPPROTO_TCP, not 0: asyncio sets TCP_NODELAY only on sockets that say TCP, and without it
    # Nagle's algorithm meets the client's delayed ACK and every reply waits ~40 ms.
    sock = socket.socket(family, socket.SOCK_STREAM, socket.IPPROTO_TCP)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind((host, port))
    except OSError as exc:
        sock.close()
        raise BadArgument(f"cannot listen on {host}:{port}: {exc.strerror}; choose another --port") from None
    sock.listen(2048)
    sock.set_inheritable(True)
    return sock


def serve_uvicorn(app, sock: socket.socket, backend: Backend, lifespan: str) -> int:
    """Serve ``app`` on ``sock`` until SIGTERM or SIGINT; 128 + the signal's number. At the signal, the calls
    in flight get GRACE_S and are then answered with an error (``http_guard.Guard``), and the background
    build is ended at once, beside uvicorn's shutdown: the process is gone within about a second."""
    import uvicorn

    guard = Guard(app)
    stopping = threading.Thread(target=backend.stop, name="torchtalk-stop", daemon=True)

    def on_signal(signum: int) -> None:
        guard.stop(signal.Signals(signum).name)
        stopping.start()

    server = None
    try:
        # Built inside the try: a signal arriving while uvicorn sets up its logging (a worker still starting
        # when its parent stops it) is a stop like any other, not a worker's failure with a traceback.
        config = uvicorn.Config(guard, log_level="warning", access_log=False, lifespan=lifespan, http=TimedH11,
                                timeout_graceful_shutdown=GRACEFUL_S)
        server = StoppingServer(config, on_signal)
        stop_on_signals()  # uvicorn hands a caught signal back to these once it has shut down
        server.run(sockets=[sock])
    except Stopped as exc:
        return exc.code
    finally:
        backend.stop()
    return 128 + server.signum if server is not None and server.signum else 0


def run_worker(sock: socket.socket, source: str | None, codegen: bool, host: str, state: BuildState,
               unblock: set[signal.Signals] | None = None) -> int:
    stop_on_signals()
    if unblock is not None:
        signal.pthread_sigmask(signal.SIG_SETMASK, unblock)
    backend = Backend(source, codegen, state)
    try:
        backend.start()
        app = build_server(backend).streamable_http_app(
            stateless_http=True, json_response=True, host=host,
            custom_starlette_routes=view_routes(backend, is_loopback(host)))
        return serve_uvicorn(app, sock, backend, lifespan="on")
    except Stopped as exc:  # before serve_uvicorn's own try (which stops the backend itself)
        backend.stop()
        return exc.code


def _fork_worker(sock: socket.socket, source: str | None, codegen: bool, host: str, state: BuildState) -> int:
    # Signals wait until the child has its own handlers (the parent's would stop its siblings).
    old = signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGTERM, signal.SIGINT})
    pid = os.fork()
    if pid:
        signal.pthread_sigmask(signal.SIG_SETMASK, old)
        return pid
    code = 1
    try:
        code = run_worker(sock, source, codegen, host, state, unblock=old)
    except Stopped as exc:  # a signal where no handler above caught it: a stop, not a failure
        code = exc.code
    except BaseException:
        log.exception("HTTP worker %d failed", os.getpid())
    finally:
        sys.stderr.flush()
        os._exit(code)


def serve_http(source: str | None, codegen: bool, host: str, port: int, workers: int | None = None) -> int:
    workers = workers or default_workers()
    sock = bind(host, port)
    print(f"torchtalk: serving MCP over HTTP at http://{host}:{port}/mcp ({workers} worker process"
          f"{'es' if workers > 1 else ''}); the web view at http://{host}:{port}{VIEW_PREFIX}/", file=sys.stderr,
          flush=True)
    if workers == 1:
        try:
            return run_worker(sock, source, codegen, host, BuildState())
        finally:
            sock.close()
    # Forked before any thread starts, so each worker begins with a clean copy of this process.
    state = BuildState(shared=True)
    children: dict[int, float] = {}
    stopping = False
    signalled = 0  # the signal that stops the server, if one does

    def stop() -> None:
        nonlocal stopping
        stopping = True
        for pid in list(children):
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGTERM)

    def on_signal(signum, frame) -> None:
        nonlocal signalled
        signalled = signalled or signum
        stop()

    signal.signal(signal.SIGTERM, on_signal)
    signal.signal(signal.SIGINT, on_signal)
    for _ in range(workers):
        children[_fork_worker(sock, source, codegen, host, state)] = time.monotonic()
    early_deaths: list[float] = []
    code = 0
    try:
        while children:
            try:
                pid, status = os.wait()
            except ChildProcessError:
                break
            started = children.pop(pid, None)
            if started is None or stopping:
                continue
            log.warning("HTTP worker %d ended (%s); starting another", pid, _describe(status))
            now = time.monotonic()
            if now - started < RESPAWN_WINDOW_S:
                early_deaths.append(now)
                early_deaths[:] = [t for t in early_deaths if now - t < 60]
                if len(early_deaths) >= RESPAWN_LIMIT:
                    log.error("HTTP workers keep dying at start-up; stopping the server")
                    code = 1
                    stop()
                    continue
            children[_fork_worker(sock, source, codegen, host, state)] = time.monotonic()
    finally:
        sock.close()
    return code or (128 + signalled if signalled else 0)


def _describe(status: int) -> str:
    if os.WIFSIGNALED(status):
        return f"signal {os.WTERMSIG(status)}"
    return f"exit status {os.waitstatus_to_exitcode(status)}"
