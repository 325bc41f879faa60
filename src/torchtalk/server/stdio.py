"""The stdio transport: stdin lines into the SDK's session, its messages out as stdout lines.

It replaces the SDK's ``stdio_server`` (which drops lines it cannot validate, see ``jsonrpc.py``) and
feeds the documented ``Server.run(read_stream, write_stream, options)``. Like the SDK's, it claims
the standard descriptors while it serves: the protocol moves to private copies, fd 0 reads
/dev/null and fd 1 writes to stderr, so a stray print or a child process can never corrupt the wire.
"""

from __future__ import annotations

import contextlib
import fcntl
import logging
import os
import sys
from collections.abc import Iterator

import anyio
from anyio.streams.memory import MemoryObjectReceiveStream, MemoryObjectSendStream
from mcp.server.lowlevel import Server
from mcp.shared.message import SessionMessage

from .jsonrpc import Lines, Oversized, Rejected, decode, encode, oversized, reply

log = logging.getLogger("torchtalk")

CHUNK = 64 * 1024


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


async def _read(fd: int, to_session: MemoryObjectSendStream, replies: MemoryObjectSendStream) -> None:
    lines = Lines()
    limiter = anyio.CapacityLimiter(1)  # the blocking read has a thread of its own, not one of the tools'
    number = 0
    async with to_session, replies:
        while True:
            chunk = await anyio.to_thread.run_sync(os.read, fd, CHUNK, limiter=limiter, abandon_on_cancel=True)
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
                    await to_session.send(got)
            if not chunk:
                return


async def _write(fd: int, from_session: MemoryObjectReceiveStream) -> None:
    out = os.fdopen(fd, "wb", closefd=False)

    def write(data: bytes) -> None:
        out.write(data)
        out.flush()

    async with from_session:
        async for message in from_session:
            try:
                await anyio.to_thread.run_sync(write, encode(message.message))
            except BrokenPipeError:
                log.info("the client closed stdout")
                return


async def serve_stdio(server: Server) -> None:
    """Serve one client over stdin/stdout until stdin ends."""
    with claimed_stdio() as (wire_in, wire_out):
        to_session, session_in = anyio.create_memory_object_stream[SessionMessage | Exception](0)
        session_out, from_session = anyio.create_memory_object_stream[SessionMessage](0)
        replies = session_out.clone()  # the reader's own replies share the writer (one line at a time)
        async with anyio.create_task_group() as tg:
            tg.start_soon(_read, wire_in, to_session, replies)
            tg.start_soon(_write, wire_out, from_session)
            await server.run(session_in, session_out, server.create_initialization_options())
