"""What keeps the HTTP server's connections and its shutdown in bounds (issue 26).

- ``TimedH11``: uvicorn's h11 protocol with deadlines: a connection must send a whole request within
  REQUEST_TIMEOUT_S of opening (or of its previous answer), and a client that stops reading an answer for
  WRITE_TIMEOUT_S is dropped. uvicorn alone closes only connections idle *after* an answer: one that sends
  nothing, or half a request, or never reads, stayed open for ever.
- ``Guard``: an ASGI wrapper. ``GET`` and ``DELETE`` on /mcp are 405 (the server keeps no sessions, so
  there is no event stream to open: the SDK's GET stream never ended). When the server stops, a call still
  running after GRACE_S is answered with a JSON-RPC error (HTTP 503) instead of a 500 and a traceback.
- ``StoppingServer``: uvicorn's server, telling the guard (and the caller) at once when a signal comes.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
from collections.abc import Callable, Iterator
from typing import Any

import h11
import uvicorn
from uvicorn.protocols.http.h11_impl import H11Protocol

from .signals import lost_signal

log = logging.getLogger("torchtalk")

REQUEST_TIMEOUT_S = 10.0
WRITE_TIMEOUT_S = 30.0
GRACE_S = 0.5  # after a signal, calls in flight get this long to answer before they are answered with an error
SHUTTING_DOWN = -32000
MCP_PATH = "/mcp"


class TimedH11(H11Protocol):
    """h11 with a deadline for each request and for a stalled reader."""

    _request_timer: asyncio.TimerHandle | None = None
    _write_timer: asyncio.TimerHandle | None = None

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        super().connection_made(transport)
        self._arm()

    def _arm(self) -> None:
        self._disarm()
        self._request_timer = self.loop.call_later(REQUEST_TIMEOUT_S, self._too_slow, "request")

    def _disarm(self) -> None:
        if self._request_timer is not None:
            self._request_timer.cancel()
            self._request_timer = None

    def _too_slow(self, what: str) -> None:
        if not self.transport.is_closing():
            log.info("closing a connection from %s: no whole %s within the time limit", self.client, what)
            self.transport.close()

    def data_received(self, data: bytes) -> None:
        super().data_received(data)
        if self.transport.is_closing() or self.conn.their_state is h11.DONE:
            self._disarm()  # the whole request is in (or the connection is going)
        elif self._request_timer is None:
            self._arm()  # the first bytes of the next request on a kept-alive connection

    def pause_writing(self) -> None:
        super().pause_writing()
        if self._write_timer is None:
            self._write_timer = self.loop.call_later(WRITE_TIMEOUT_S, self._too_slow, "read of the answer")

    def resume_writing(self) -> None:
        super().resume_writing()
        if self._write_timer is not None:
            self._write_timer.cancel()
            self._write_timer = None

    def connection_lost(self, exc: Exception | None) -> None:
        self._disarm()
        if self._write_timer is not None:
            self._write_timer.cancel()
            self._write_timer = None
        super().connection_lost(exc)


async def _respond(send: Callable, status: int, body: dict[str, Any], headers: list[tuple[bytes, bytes]]) -> None:
    data = json.dumps(body).encode()
    await send({"type": "http.response.start", "status": status,
                "headers": [(b"content-type", b"application/json"), (b"content-length", str(len(data)).encode()),
                            *headers]})
    await send({"type": "http.response.body", "body": data})


def _ids(body: bytes) -> list[Any]:
    """The ids of the JSON-RPC requests in a request body (a message or a batch), as far as they can be read."""
    try:
        obj = json.loads(body)
    except ValueError:
        return [None]
    msgs = obj if isinstance(obj, list) else [obj]
    ids = [m.get("id") for m in msgs if isinstance(m, dict) and "id" in m and "method" in m]
    return ids or [None]


class Guard:
    """ASGI wrapper: 405 for the event stream the server does not keep; an error, not a 500, for calls cut
    short by a shutdown."""

    def __init__(self, app: Callable) -> None:
        self.app = app
        self.loop: asyncio.AbstractEventLoop | None = None
        self._deadline: asyncio.Future | None = None
        self.signame = ""

    def stop(self, signame: str) -> None:
        """Called from the signal handler (the loop's thread): calls still running GRACE_S from now are cut."""
        self.signame = signame
        if self.loop is not None:
            self.loop.call_soon_threadsafe(self._arm)

    def _arm(self) -> None:
        assert self.loop is not None
        if self._deadline is None:
            self._deadline = self.loop.create_future()
        deadline = self._deadline
        self.loop.call_later(GRACE_S, lambda: deadline.done() or deadline.set_result(None))

    def _future(self) -> asyncio.Future:
        if self._deadline is None:
            self._deadline = asyncio.get_running_loop().create_future()
        return self._deadline

    async def __call__(self, scope: dict, receive: Callable, send: Callable) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        if self.loop is None:
            self.loop = asyncio.get_running_loop()
        if scope["path"].rstrip("/") == MCP_PATH and scope["method"] in ("GET", "DELETE"):
            await _respond(send, 405, {"jsonrpc": "2.0", "id": None, "error": {
                "code": -32600, "message": f"{scope['method']} is not supported: this server keeps no sessions, so "
                                           "it has no event stream to open or session to end; POST each message"}},
                           [(b"allow", b"POST")])
            return
        body = bytearray()
        state = {"started": False, "cut": False}

        async def receive_and_keep() -> dict:
            message = await receive()
            if message["type"] == "http.request":
                body.extend(message.get("body", b""))
            return message

        async def send_unless_cut(message: dict) -> None:
            if state["cut"]:
                return
            if message["type"] == "http.response.start":
                state["started"] = True
            await send(message)

        inner = asyncio.ensure_future(self.app(scope, receive_and_keep, send_unless_cut))
        deadline = self._future()
        try:
            await asyncio.wait({inner, deadline}, return_when=asyncio.FIRST_COMPLETED)
        except asyncio.CancelledError:
            inner.cancel()
            raise
        if inner.done():
            inner.result()
            return
        # The server is stopping and the call is still running: cancel it and say so.
        state["cut"] = True
        inner.cancel()
        await asyncio.gather(inner, return_exceptions=True)
        if not state["started"]:
            errors = [{"jsonrpc": "2.0", "id": i, "error": {
                "code": SHUTTING_DOWN, "message": f"the server is shutting down ({self.signame}): the call was "
                                                 "cancelled"}} for i in _ids(bytes(body))]
            await _respond(send, 503, errors[0] if len(errors) == 1 else errors, [(b"connection", b"close")])


class StoppingServer(uvicorn.Server):
    """uvicorn's server; ``on_signal(signum)`` runs at once when SIGTERM or SIGINT comes (uvicorn's own
    handler then starts its graceful shutdown)."""

    def __init__(self, config: uvicorn.Config, on_signal: Callable[[int], None]) -> None:
        super().__init__(config)
        self._on_signal = on_signal
        self.signum = 0

    @contextlib.contextmanager
    def capture_signals(self) -> Iterator[None]:
        with super().capture_signals():
            # uvicorn's handlers are in: a signal whose Stopped was lost before them shuts the server down now
            # (Note [A lost Stopped] in signals.py), as it would have had it come a moment later
            if signum := lost_signal():
                self.handle_exit(signum, None)
            yield

    def handle_exit(self, sig: int, frame: Any) -> None:
        if not self.signum:
            self.signum = sig
            self._on_signal(sig)
        super().handle_exit(sig, frame)
