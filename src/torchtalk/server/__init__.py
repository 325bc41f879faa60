"""The MCP server: every tool of ``tools.py``, read-only, over stdio or streamable HTTP.

- ``app.py``: the server object (the SDK's low-level ``Server``) and the tool calls;
- ``schema.py`` / ``arguments.py``: the tools as published (input and output schemas) and the calls
  held to them;
- ``backend.py``: the tree and index the answers come from, found and built on demand;
- ``builds.py``: background ``torchtalk index`` runs;
- ``freshness.py``: which files differ from the index, known before each answer (Note [Freshness]);
- ``stdio.py`` / ``jsonrpc.py``: the stdio transport, which answers every line;
- ``http.py`` / ``http_guard.py``: streamable HTTP with a worker process per core; time limits on
  connections, 405 for the event stream, calls cut by a shutdown answered with an error;
- ``signals.py`` / ``threads.py``: SIGTERM and SIGINT end the server within about a second (143 / 130),
  blocking work in daemon threads a shutdown does not wait for.

The server starts whatever the state of the setup and answers ``initialize`` at once: without a tree
or an index, the tools say what is missing and how to fix it (see ``backend.py``). Logs go to stderr,
never to stdout (stdout is the protocol).
"""

from __future__ import annotations

import logging
import os
import sys
import threading

import anyio

from ..index.indexer import refresh
from ..index.usable import index_problem
from ..source.tree import SourceTree, find_source
from ..store.reader import Index
from .app import INSTRUCTIONS, build_server
from .backend import Backend, _warm_up
from .builds import Refresher
from .http import serve_http
from .signals import Stopped, said, stop_on_signals
from .stdio import serve_stdio

__all__ = ["INSTRUCTIONS", "Backend", "Refresher", "Stopped", "_warm_up", "build_server", "prepare", "said", "serve",
           "stop_on_signals"]


def prepare(source: str | None, codegen: bool = True) -> tuple[SourceTree, Index]:
    """Find the tree and build its index first if it has no usable one (progress on stderr): for callers
    that would rather wait than be told "indexing" (scripts, tests). The server itself never waits."""
    tree = find_source(source)
    if index_problem(tree) is not None:
        refresh(tree, codegen=codegen, log=lambda m: print(m, file=sys.stderr, flush=True))
    return tree, Index(tree.index_path, tree.root)


def serve(source: str | None, transport: str = "stdio", host: str = "127.0.0.1", port: int = 8765,
          codegen: bool = True, workers: int | None = None) -> int:
    """Run the server until stdin ends (stdio, exit 0) or a signal stops it (143 for SIGTERM, 130 for SIGINT,
    within about a second: calls in flight are answered or cancelled with an error). ``workers``: HTTP worker
    processes (default: $TORCHTALK_HTTP_WORKERS, else one per core, at most 8)."""
    logging.basicConfig(stream=sys.stderr, level=os.environ.get("TORCHTALK_LOG", "WARNING"))
    if transport == "http":
        return said(serve_http(source, codegen, host, port, workers))
    stop_on_signals()
    backend = Backend(source, codegen)
    try:
        backend.start()
        stopping = threading.Thread(target=backend.stop, name="torchtalk-stop", daemon=True)
        code = anyio.run(serve_stdio, build_server(backend), stopping.start)
        stop_on_signals()  # the event loop gave the signals back
    except Stopped as exc:
        code = exc.code
    finally:
        backend.stop()  # a background index run is ended and reaped
    return said(code)
