"""The MCP server through real clients: the SDK's in-process client and a stdio subprocess."""

import asyncio
import os
import sys

from mcp import Client, StdioServerParameters

from torchtalk.server import build_server
from torchtalk.tools import all_tools


def _text(result) -> str:
    return "\n".join(getattr(c, "text", "") for c in result.content)


def test_in_process_tools_are_read_only_and_answer(indexed):
    _, ix = indexed

    async def go():
        async with Client(build_server(ix)) as c:
            tools = (await c.list_tools()).tools
            assert {t.name for t in tools} == {t.name for t in all_tools()}
            assert all(t.annotations.read_only_hint for t in tools)
            trace = next(t for t in tools if t.name == "trace")
            assert trace.input_schema["required"] == ["function_name"]
            r = await c.call_tool("trace", {"function_name": "relu", "focus": "dispatch"})
            assert not r.is_error and "MPS: relu_mps" in _text(r)
            bad = await c.call_tool("trace", {"function_name": "relu", "focus": "nope"})
            assert bad.is_error and "choose one of: yaml, dispatch, full" in _text(bad)
            wrong_type = await c.call_tool("search", {"query": "relu", "limit": "many"})
            assert wrong_type.is_error
            # The server is still fine after errors.
            ok = await c.call_tool("search", {"query": "relu", "limit": 2})
            assert not ok.is_error and "showing 2 of" in _text(ok)
            missing = await c.call_tool("trace", {"function_name": "sofmax"})
            assert not missing.is_error and "No op named 'sofmax'" in _text(missing)

    asyncio.run(go())


def test_stdio_server_builds_index_then_answers(tree, tmp_path):
    env = dict(os.environ)
    params = StdioServerParameters(command=sys.executable, args=["-m", "torchtalk", "serve", "--source", str(tree),
                                                                 "--no-codegen"], env=env)

    async def go():
        async with Client(params, read_timeout_seconds=120) as c:
            r = await c.call_tool("get_status", {})
            assert not r.is_error and "PyTorch version: 9.9.0a0" in _text(r)
            r = await c.call_tool("trace", {"function_name": "cumsum", "focus": "yaml"})
            assert "cumsum.out" in _text(r)

    asyncio.run(asyncio.wait_for(go(), 180))
