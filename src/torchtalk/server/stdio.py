"""The stdio transport: stdin lines into the SDK's session, its messages out as stdout lines.

It replaces the SDK's ``stdio_server`` (which drops lines it cannot validate, see ``jsonrpc.py``) and
feeds the documented ``Server.run(read_stream, write_stream, options)``. Like the SDK's, it claims
the standard descriptors while it serves: the protocol moves to private copies, fd 0 reads
/dev/null and fd 1 writes to stderr, so a stray print or a child process can never corrupt the wire.

SIGTERM and SIGINT end it at any moment, stdin open or not: the calls in flight get GRACE_S to answer,
the others are answered with a JSON-RPC error, and nothing waits for a blocked read of stdin (reads,
writes and tool calls run in daemon threads, ``threads.py``).
"""

from __future__ import annotations

import contextlib
import fcntl
import logging
import os
import signal
import sys
import threading
from collections.abc import Iterator

import anyio
from anyio.streams.memory import MemoryObjectReceiveStream, MemoryObjectSendStream
from mcp.server.lowlevel import Server
from mcp.shared.message import SessionMessage
from mcp.types import ErrorData, JSONRPCError, JSONRPCRequest, JSONRPCResponse

from .jsonrpc import Lines, Oversized, Rejected, decode, encode, oversized, reply
from .threads import in_thread

log = logging.getLogger("torchtalk")

CHUNK = 64 * 1024
GRACE_S = 0.5  # after a signal, calls in flight get this long to answer before they are cancelled
SHUTTING_DOWN = -32000  # JSON-RPC's range for server errors: the call was cancelled by a shutdown


@contextlib.contextmanager
def claimed_stdio() -> Iterator[tuple[int, int]]:
    """(read fd, write fd) of the wire; fd 0 and 1 point elsewhere until the block ends."""
    sys.stdout.flush()
    wire_in = fcntl.fcntl(0, fcntl.F_DUPFD_CLOEXEC, 3)
    wire_out = fcntl.fcntl(1, fcntl.F_DUPFD_CLOEXEC, 3)
    null = os.open(os.devnull, os.O_RDONLY)
    try:
        os.dup2(null, 0)
        os.dup2(2, 1)
    finally:
        os.close(null)
    try:
        yield wire_in, wire_out
    finally:
        sys.stdout.flush()
        os.dup2(wire_out, 1)
        os.dup2(wire_in, 0)
        os.close(wire_out)
        os.close(wire_in)


class _Wire:
    """What the transport knows of the calls in flight: the ids of requests not yet answered."""

    def __init__(self) -> None:
        self.pending: dict[object, None] = {}


async def _read(fd: int, to_session: MemoryObjectSendStream, replies: MemoryObjectSendStream, wire: _Wire) -> None:
    lines = Lines()
    number = 0
    async with to_session, replies:
        while True:
            chunk = await in_thread(os.read, fd, CHUNK)
            items = lines.feed(chunk) if chunk else lines.end()
            for item in items:
                number += 1
                got = oversized(item) if isinstance(item, Oversized) else decode(item)
                if got is None:
                    continue
                if isinstance(got, Rejected):
                    log.warning("stdin line %d refused (%d): %s", number, got.code, got.message)
                    await replies.send(SessionMessage(reply(got)))
                else:
                    if isinstance(got.message, JSONRPCRequest):
                        wire.pending[got.message.id] = None
                    await to_session.send(got)
            if not chunk:
                return


def _writer(fd: int):
    """One line at a time onto the wire, from whichever thread (the writer's, the shutdown's errors)."""
    out = os.fdopen(fd, "wb", closefd=False)
    lock = threading.Lock()

    def write(data: bytes) -> None:
        with lock:
            out.write(data)
            out.flush()

    return write


async def _write(write, from_session: MemoryObjectReceiveStream, wire: _Wire) -> None:
    async with from_session:
        async for message in from_session:
            msg = message.message
            try:
                await in_thread(write, encode(msg))
            except BrokenPipeError:
                log.info("the client closed stdout")
                return
            if isinstance(msg, (JSONRPCResponse, JSONRPCError)):
                wire.pending.pop(msg.id, None)


async def _stop_on_signal(scope: anyio.CancelScope, write, wire: _Wire, stopped: list[int], on_signal) -> None:
    """On SIGTERM or SIGINT: let the calls in flight answer for a moment, cancel the rest with a JSON-RPC error
    each (saying why: the session would only say "Connection closed"), and end the server (the caller exits
    128 + the signal's number)."""
    with anyio.open_signal_receiver(signal.SIGTERM, signal.SIGINT) as signals:
        async for signum in signals:
            stopped.append(signum)
            if on_signal is not None:
                on_signal()  # e.g. end the background build now, while the calls in flight finish
            with anyio.move_on_after(GRACE_S):
                while wire.pending:
                    await anyio.sleep(0.02)
            name = signal.Signals(signum).name
            for msg_id in list(wire.pending):
                error = JSONRPCError(jsonrpc="2.0", id=msg_id, error=ErrorData(
                    code=SHUTTING_DOWN, message=f"the server is shutting down ({name}): the call was cancelled"))
                with contextlib.suppress(OSError):
                    write(encode(error))
            wire.pending.clear()
            scope.cancel()
            return


async def serve_stdio(server: Server, on_signal=None) -> int:
    """Serve one client over stdin/stdout until stdin ends (0) or a signal ends it (128 + its number: 143 for
    SIGTERM, 130 for SIGINT). ``on_signal`` is called at once when a signal comes (to start cleaning up)."""
    with claimed_stdio() as (wire_in, wire_out):
        to_session, session_in = anyio.create_memory_object_stream[SessionMessage | Exception](0)
        session_out, from_session = anyio.create_memory_object_stream[SessionMessage](0)
        replies = session_out.clone()  # the reader's own replies share the writer (one line at a time)
        wire = _Wire()
        write = _writer(wire_out)
        stopped: list[int] = []

        async def watch() -> None:
            with watching:
                await _stop_on_signal(tg.cancel_scope, write, wire, stopped, on_signal)

        watching = anyio.CancelScope()
        async with anyio.create_task_group() as tg:
            tg.start_soon(watch)
            tg.start_soon(_read, wire_in, to_session, replies, wire)
            tg.start_soon(_write, write, from_session, wire)
            await server.run(session_in, session_out, server.create_initialization_options())
            watching.cancel()  # stdin ended: the last answers are written, signals are the default's again
        return 128 + stopped[0] if stopped else 0
