"""The MCP server object: every tool of the tool table, read-only, on the SDK's low-level ``Server``.

The low-level server is the SDK's documented way to publish exact, hand-built tool definitions
(input and output schemas) and to return ``CallToolResult(content=..., structured_content=...)``
itself. It validates nothing, so the calls are held to the input schema here (``arguments.py``),
and every failure is a tool result with ``is_error`` that the model can read, never a protocol error.
"""

from __future__ import annotations

import functools
import logging
from typing import Any

import anyio
from mcp.server.context import ServerRequestContext
from mcp.server.lowlevel import Server
from mcp.types import (
    CallToolRequestParams,
    CallToolResult,
    ListToolsResult,
    PaginatedRequestParams,
    TextContent,
)

from .. import __version__
from ..errors import BadArgument, TorchTalkError
from ..query.args import shown
from ..store.reader import Index
from ..tools import Tool, all_tools, answer
from ..tools.structured import output_schemas, structured
from .arguments import check_arguments
from .backend import Backend, Unavailable
from .builds import Refresher
from .schema import input_schema, published
from .threads import in_thread

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
# Queries run on threads; more at once than this per process only adds GIL contention (more cores:
# more processes, see http.py).
QUERY_THREADS = 4
# A call made while the first index is being built waits this long for it before answering "indexing".
BUILD_WAIT_S = 10.0
BUILD_POLL_S = 0.25


def _error(text: str) -> CallToolResult:
    return CallToolResult(content=[TextContent(type="text", text=text)], is_error=True)


def _run(backend: Backend, tool: Tool, ix: Index, kwargs: dict[str, Any]) -> CallToolResult:
    try:
        with ix.using():  # one version of the index for the whole answer
            a = answer(tool, ix, **kwargs)
            payload = structured(tool, a.result, a.next)
    except TorchTalkError as exc:
        backend.after_error(ix)
        return _error(str(exc))
    except Exception as exc:  # a bug must still give the client a message it can read
        log.exception("tool %s failed", tool.name)
        return _error(f"internal error in {tool.name}: {type(exc).__name__}: {exc}")
    # The Markdown is what a model reads; the same answer as typed data is for programs.
    return CallToolResult(content=[TextContent(type="text", text=a.text)], structured_content=payload)


def _ready_then_run(backend: Backend, tool: Tool, kwargs: dict[str, Any]) -> CallToolResult | Unavailable:
    ix = backend.ready()
    if isinstance(ix, Unavailable):
        return ix
    # Changed files are indexed first when that fits in ~2 s; else the answer's first line says what it misses
    # (get_status says so in its own words).
    note = backend.freshness_note(ix) if tool.name != "get_status" else None
    result = _run(backend, tool, ix, kwargs)
    if note and result.content and isinstance(result.content[0], TextContent):
        result.content[0] = TextContent(type="text", text=f"{note}\n\n{result.content[0].text}")
    if note and result.structured_content is not None:  # programs see it too, not only the text's reader
        result.structured_content = {**result.structured_content, "stale": note}
    return result


class _Calls:
    def __init__(self, backend: Backend, tools: list[Tool]):
        self.backend = backend
        self.tools = {t.name: t for t in tools}
        self._limiter: anyio.CapacityLimiter | None = None

    @property
    def limiter(self) -> anyio.CapacityLimiter:
        if self._limiter is None:  # made inside the event loop, per server
            self._limiter = anyio.CapacityLimiter(QUERY_THREADS)
        return self._limiter

    async def __call__(self, ctx: ServerRequestContext, params: CallToolRequestParams) -> CallToolResult:
        tool = self.tools.get(params.name)
        if tool is None:
            return _error(f"Unknown tool {shown(params.name)}; the tools are: {', '.join(self.tools)}")
        try:
            kwargs = check_arguments(tool, params.arguments)
        except BadArgument as exc:
            return _error(str(exc))
        answer_now = functools.partial(_ready_then_run, self.backend, tool, kwargs)
        waited = 0.0
        while True:
            async with self.limiter:  # a daemon thread: a shutdown never waits for a query (threads.py)
                result = await in_thread(answer_now)
            if not isinstance(result, Unavailable):
                return result
            if not result.building or waited >= BUILD_WAIT_S:
                return _error(result.message)
            await anyio.sleep(BUILD_POLL_S)  # the first index is being built: wait a little, off the thread
            waited += BUILD_POLL_S


def build_server(target: Index | Backend, refresher: Refresher | None = None) -> Server:
    """A server answering from ``target``: an index that is there, or a Backend that finds one."""
    backend = target if isinstance(target, Backend) else Backend.over(target, refresher)
    tools = all_tools()
    listed = ListToolsResult(tools=published(tools, output_schemas(tools)))
    schemas = {t.name: input_schema(t) for t in tools}

    async def list_tools(ctx: ServerRequestContext, params: PaginatedRequestParams | None) -> ListToolsResult:
        return listed

    return Server("torchtalk", version=__version__, instructions=INSTRUCTIONS, on_list_tools=list_tools,
                  on_call_tool=_Calls(backend, tools), get_tool_input_schema=schemas.get)
