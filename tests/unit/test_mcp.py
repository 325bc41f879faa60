"""The MCP server through real clients: the SDK's in-process client and a stdio subprocess."""

import asyncio
import json
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


# One call per tool on the fixture tree (py_indexed holds ops, C++, nn modules and tests).
SAMPLE_CALLS = [("get_status", {}), ("trace", {"function_name": "cumsum"}), ("trace", {"function_name": "cumsun"}),
                ("search", {"query": "index", "limit": 1}), ("calls", {"function_name": "index_select_out_cpu_"}),
                ("called_by", {"function_name": "index_select_out_cpu_"}),
                ("impact", {"function_name": "index_select_out_cpu_", "depth": 2}),
                ("cuda_kernels", {"function_name": "index_select"}), ("cuda_kernels", {}),
                ("trace_module", {"module_name": "nn.Linear"}), ("list_modules", {"category": "all"}),
                ("find_similar_tests", {"query": "cumsum", "limit": 1}), ("list_test_utils", {"limit": 1}),
                ("test_file_info", {"file_path": "test_nn"})]


def _parse_call(text: str) -> tuple[str, dict]:
    """'trace("x", focus="dispatch")' -> ("trace", {...}), positional arguments in the tool's order."""
    import ast

    from torchtalk.tools import get_tool
    node = ast.parse(text, mode="eval").body
    assert isinstance(node, ast.Call) and isinstance(node.func, ast.Name), text
    names = [p.name for p in get_tool(node.func.id).params]
    args = {names[i]: ast.literal_eval(a) for i, a in enumerate(node.args)}
    args.update({k.arg: ast.literal_eval(k.value) for k in node.keywords})
    return node.func.id, args


def test_every_tool_gives_structured_content_that_matches_its_output_schema(py_indexed):
    import jsonschema
    _, ix = py_indexed

    async def go():
        async with Client(build_server(ix)) as c:
            schemas = {t.name: t.output_schema for t in (await c.list_tools()).tools}
            assert set(schemas) == {name for name, _ in SAMPLE_CALLS}
            followed = 0
            for name, args in SAMPLE_CALLS:
                schema = schemas[name]
                assert schema["type"] == "object" and set(schema["required"]) == {"kind", "result", "next"}, name
                r = await c.call_tool(name, args)
                assert not r.is_error, (name, _text(r))
                data = r.structured_content
                jsonschema.validate(data, schema)
                assert data["kind"] == ("not_found" if args.get("function_name") == "cumsun" else "result"), name
                if data["next"]:  # the text ends with the same calls
                    assert _text(r).rstrip().endswith("next: " + " · ".join(data["next"])), name
                # Every suggested call names a real tool, parses, and answers (no guessed names).
                for suggestion in data["next"]:
                    tool, call_args = _parse_call(suggestion)
                    follow = await c.call_tool(tool, call_args)
                    assert not follow.is_error, (suggestion, _text(follow))
                    assert follow.structured_content["kind"] == "result", (suggestion, _text(follow)[:300])
                    followed += 1
            assert followed >= 10

    asyncio.run(go())


def test_descriptions_say_the_question_and_give_an_example_that_runs(py_indexed):
    from torchtalk.server import INSTRUCTIONS
    _, ix = py_indexed
    assert len(INSTRUCTIONS.splitlines()) <= 5

    async def go():
        async with Client(build_server(ix)) as c:
            init_tools = (await c.list_tools()).tools
            for t in init_tools:
                question = t.description.split("? ")[0]
                assert "\n" not in question and len(question) < 90, (t.name, question)
                example = t.description.split("Example: ")[1].split("\n")[0]
                tool, args = _parse_call(example)
                assert tool == t.name
                r = await c.call_tool(tool, args)
                assert not r.is_error, (example, _text(r))

    asyncio.run(go())


def test_output_schemas_are_cached_on_disk_and_a_bad_cache_is_recomputed(tmp_path):
    from torchtalk.tools.structured import output_schema, output_schemas
    tools = all_tools()
    fresh = output_schemas(tools)
    assert fresh == {t.name: output_schema(t) for t in tools}
    (cached,) = (tmp_path / "cache" / "schemas").glob("output-*.json")  # TORCHTALK_CACHE_DIR is per test
    # The file is what a server start reads: change it and the change is served.
    marked = {**fresh, "trace": {"type": "object", "marker": True}}
    cached.write_text(json.dumps(marked))
    assert output_schemas(tools)["trace"] == {"type": "object", "marker": True}
    for bad in ("{not json", json.dumps({"trace": {}})):  # garbage, or another tool set
        cached.write_text(bad)
        assert output_schemas(tools) == fresh
        assert json.loads(cached.read_text()) == fresh
