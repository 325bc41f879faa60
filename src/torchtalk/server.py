"""The MCP server: every tool of ``tools.py``, read-only, over stdio or streamable HTTP.

Start-up builds an index only when there is none (the client waits for that
in ``initialize``); with an index it answers at once, and a background
``torchtalk index`` run keeps it fresh, the queries switching to the new file
when it lands. Logs go to stderr, never to stdout (stdout is the protocol).
"""

from __future__ import annotations

import inspect
import logging
import os
import subprocess
import sys
import threading
import time
from typing import Any

from .errors import TorchTalkError
from .query.index import Index
from .source.tree import SourceTree, find_source
from .store import integrity
from .store.db import corrupt_marker
from .tools import Tool, all_tools, answer

log = logging.getLogger("torchtalk")

INSTRUCTIONS = (
    "TorchTalk answers questions about PyTorch's internals from its source tree, every location as path:line "
    "relative to the tree (<generated>/ paths: code a build would generate).\n"
    "Layers: Python API -> native_functions.yaml op -> C++ kernel per dispatch key -> DispatchStub -> CUDA kernel "
    "-> autograd formula (derivatives.yaml) -> tests.\n"
    "Start with trace(op) for an op, search(text) when unsure of a name, trace_module for nn.Modules and "
    "optimizers, calls/called_by/impact for C++ functions, find_similar_tests for what to run.\n"
    "A 'No ... named X. Close matches: ...' answer means the name is wrong: retry with a match, never assume.\n"
    "Each answer ends with 'next:' calls built from its own names; get_status tells what is indexed and how fresh."
)
REFRESH_EVERY_S = 30.0
WARM_UP_DELAY_S = 1.0


class Refresher:
    """Keeps the index fresh by running ``torchtalk index`` in a child process, at most one at a time."""

    def __init__(self, tree: SourceTree, codegen: bool):
        self.tree = tree
        self.codegen = codegen
        self._proc: subprocess.Popen | None = None
        self._last = 0.0
        self._lock = threading.Lock()

    def maybe_start(self, urgent: bool = False) -> None:
        with self._lock:
            now = time.monotonic()
            if self._proc is not None and self._proc.poll() is None:
                return
            if now - self._last < REFRESH_EVERY_S and not urgent:
                return
            self._last = now
            cmd = [sys.executable, "-m", "torchtalk", "index", "--source", str(self.tree.root), "--progress", "never"]
            if not self.codegen:
                cmd.append("--no-codegen")
            try:
                self._proc = subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                                              stderr=sys.stderr, start_new_session=True)
            except OSError as exc:
                log.warning("could not start a background refresh: %s", exc)

    def stop(self) -> None:
        if self._proc is not None and self._proc.poll() is None:
            self._proc.terminate()


def _handler(tool: Tool, ix: Index, refresher: Refresher | None):
    from mcp.server.mcpserver.exceptions import ToolError
    from mcp.types import CallToolResult, TextContent

    from .structured import structured

    def handler(**kwargs: Any) -> CallToolResult:
        if refresher is not None:
            refresher.maybe_start()
        try:
            a = answer(tool, ix, **kwargs)
            payload = structured(tool, a.result, a.next)
        except TorchTalkError as exc:
            if refresher is not None and corrupt_marker(ix.path).exists():
                refresher.maybe_start(urgent=True)  # rebuild now; answers resume when it lands
            raise ToolError(str(exc)) from None
        except Exception as exc:  # a bug must still give the client a message it can read
            log.exception("tool %s failed", tool.name)
            raise ToolError(f"internal error in {tool.name}: {type(exc).__name__}: {exc}") from None
        # The Markdown is what a model reads; the same answer as typed data is for programs.
        return CallToolResult(content=[TextContent(type="text", text=a.text)], structured_content=payload)

    params = []
    for p in tool.params:
        annotation = p.type if p.required or p.default is not None else p.type | None
        default = inspect.Parameter.empty if p.required else p.default
        params.append(inspect.Parameter(p.name, inspect.Parameter.KEYWORD_ONLY, default=default, annotation=annotation))
    handler.__signature__ = inspect.Signature(params, return_annotation=CallToolResult)
    handler.__annotations__ = {p.name: prm.annotation for p, prm in zip(tool.params, params)} | {"return": CallToolResult}
    handler.__name__ = tool.name
    handler.__doc__ = tool.description
    return handler


def build_server(ix: Index, refresher: Refresher | None = None):
    from mcp.server.mcpserver import MCPServer
    from mcp.server.mcpserver.tools.base import Tool as MCPTool
    from mcp.server.mcpserver.utilities.func_metadata import FuncMetadata
    from mcp.types import ToolAnnotations

    from . import __version__
    from .structured import output_schemas

    tools = all_tools()
    schemas = output_schemas(tools)
    registered = []
    for tool in tools:
        desc = tool.description
        if tool.params:
            desc += "\n\nArguments:\n" + "\n".join(f"- {p.name}: {p.help}" + ("" if p.required else f" (default {p.default!r})")
                                                  for p in tool.params)
        t = MCPTool.from_function(_handler(tool, ix, refresher), name=tool.name, description=desc,
                                  annotations=ToolAnnotations(readOnlyHint=True, idempotentHint=True,
                                                              openWorldHint=False))
        # The handler returns CallToolResult with structuredContent; the schema it follows is published as
        # outputSchema (hand-built metadata: the SDK advertises it; tests check answers against it).
        t.fn_metadata = FuncMetadata(arg_model=t.fn_metadata.arg_model, output_schema=schemas[tool.name])
        registered.append(t)
    return MCPServer(name="torchtalk", instructions=INSTRUCTIONS, version=__version__, log_level="WARNING",
                     tools=registered)


def _warm_up(ix: Index) -> None:
    """Load what first calls would otherwise pay for (the op registry, stub names), off the request path."""
    try:
        from .query.ops import registry
        from .query.resolve import stub_names
        from .query.status import changed_files
        from .structured import output_model
        registry(ix)
        stub_names(ix)
        changed_files(ix)
        for tool in all_tools():
            output_model(tool)  # the pydantic models that serialise answers
    except Exception:  # warm-up is an optimisation; the first query reports any real problem
        log.debug("warm-up failed", exc_info=True)


def prepare(source: str | None, codegen: bool = True) -> tuple[SourceTree, Index]:
    """Find the tree; build an index first if there is no usable one (progress on stderr)."""
    from .index.indexer import refresh
    from .index.usable import index_problem

    tree = find_source(source)
    if index_problem(tree) is not None:
        # Answers from a missing, corrupt or other-format index could be wrong: build before serving.
        refresh(tree, codegen=codegen, log=lambda m: print(m, file=sys.stderr, flush=True))
    return tree, Index(tree.index_path, tree.root)


def serve(source: str | None, transport: str = "stdio", host: str = "127.0.0.1", port: int = 8765,
          codegen: bool = True) -> int:
    logging.basicConfig(stream=sys.stderr, level=os.environ.get("TORCHTALK_LOG", "WARNING"))
    tree, ix = prepare(source, codegen)
    # The first freshness check runs with the first tool call, and the warm-up a moment after start:
    # on two cores, either would otherwise compete with answering `initialize`.
    refresher = Refresher(tree, codegen)
    integrity.watch(ix.path, on_damage=lambda: refresher.maybe_start(urgent=True), log=log.warning)
    warm = threading.Timer(WARM_UP_DELAY_S, _warm_up, args=(ix,))
    warm.daemon = True
    warm.start()
    server = build_server(ix, refresher)
    try:
        if transport == "http":
            server.run("streamable-http", host=host, port=port)
        else:
            server.run("stdio")
    finally:
        refresher.stop()
    return 0
