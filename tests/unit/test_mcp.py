"""The MCP server through real clients: the SDK's in-process client and a stdio subprocess."""

import asyncio
import json
import os
import re
import sys
import time

from mcp import Client, StdioServerParameters

from torchtalk.server import build_server
from torchtalk.source.tree import find_source
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
                ("test_file_info", {"file_path": "test_nn"}),
                ("affected", {"names": "aten/src/ATen/native/ReduceOps.cpp:26, torch.nn.Linear", "limit": 3}),
                ("error_origin", {"message": "RuntimeError: mat1 and mat2 shapes cannot be multiplied (2x3 and 4x5)"})]


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


# ------------------------------------------------------------------ the tools as published, and calls held to them


def test_input_schemas_are_built_from_the_tool_table(indexed):
    from torchtalk.tools.structured import output_schemas
    _, ix = indexed

    async def go():
        async with Client(build_server(ix)) as c:
            return (await c.list_tools()).tools

    listed = {t.name: t for t in asyncio.run(go())}
    cached = output_schemas(all_tools())
    for tool in all_tools():
        t = listed[tool.name]
        schema = t.input_schema
        assert schema["type"] == "object" and schema["additionalProperties"] is False, tool.name
        assert list(schema["properties"]) == [p.name for p in tool.params]
        assert schema.get("required", []) == [p.name for p in tool.params if p.required]
        for p in tool.params:
            prop = schema["properties"][p.name]
            json_type = {str: "string", int: "integer"}[p.type]
            assert prop["type"] == (json_type if p.required or p.default is not None else [json_type, "null"])
            assert prop["description"] == p.help
            assert prop.get("default", "absent") == ("absent" if p.required else p.default)
            assert f"- {p.name}: {p.help}" in t.description
        assert t.description.startswith(tool.description)
        assert t.annotations.read_only_hint and t.annotations.idempotent_hint and not t.annotations.open_world_hint
        assert t.output_schema == cached[tool.name]


def test_arguments_are_held_to_the_schema_through_the_sdk_client(indexed):
    _, ix = indexed
    calls = [
        ("impact", {"function_name": "index_select_out_cpu_", "depth": "3"},
         "depth must be an integer, not the string '3'"),
        ("search", {"query": "relu", "limit": "5"}, "limit must be an integer, not the string '5'"),
        ("search", {"query": 5}, "query must be a string, not the number 5"),
        ("impact", {"function_name": "index_select_out_cpu_", "depth": None}, "depth must be an integer, not null"),
        ("trace", {"function_name": "relu", "depht": 3},
         ("trace has no argument 'depht'; its arguments are: function_name (string, required), "
          "focus (string, default 'full')")),
        ("cuda_kernels", {"name": "relu"},
         "cuda_kernels has no argument 'name'; its arguments are: function_name (string or null, default None)"),
        ("get_status", {"a": 1, "b": 2}, "get_status takes no arguments; got 'a', 'b'"),
        ("trace", {}, "trace needs function_name"),
    ]

    async def go():
        async with Client(build_server(ix)) as c:
            for name, args, expected in calls:
                r = await c.call_tool(name, args)
                assert r.is_error and r.structured_content is None, (name, args)
                assert _text(r).startswith(expected), (name, args, _text(r))
            # What the schema allows still answers: null where the default is None, an integral number.
            r = await c.call_tool("cuda_kernels", {"function_name": None})
            assert not r.is_error, _text(r)
            r = await c.call_tool("impact", {"function_name": "index_select_out_cpu_", "depth": 2.0})
            assert not r.is_error and r.structured_content["kind"] == "result", _text(r)

    asyncio.run(go())


# ------------------------------------------------------------------ before there is an index


def test_the_protocol_answers_while_the_first_index_is_built(tree):
    """The index is built in a background process: a call waits for it, other requests do not."""
    from torchtalk.server import Backend

    backend = Backend(str(tree), codegen=False)
    backend.start()
    assert not find_source(tree).index_path.exists()

    async def go():
        async with Client(build_server(backend)) as c:
            call = asyncio.create_task(c.call_tool("trace", {"function_name": "relu", "focus": "yaml"}))
            await asyncio.sleep(0.2)
            t0 = time.perf_counter()
            tools = (await c.list_tools()).tools
            other = await c.call_tool("trace", {"function_name": 5})  # refused before it needs the index
            quick = time.perf_counter() - t0
            assert not call.done(), "the call should still be waiting for the index"
            assert other.is_error and "function_name must be a string" in _text(other)
            r = await asyncio.wait_for(call, 120)
            return quick, len(tools), r

    try:
        quick, n, r = asyncio.run(go())
    finally:
        backend.stop()
    assert n == len(all_tools()) and quick < 2.0, quick
    assert not r.is_error and "## relu" in _text(r), _text(r)


def test_while_indexing_a_call_says_so_and_when_to_try_again(tree):
    from torchtalk.server import Backend
    from torchtalk.server.backend import Unavailable

    backend = Backend(str(tree), codegen=False)
    try:
        state = backend.ready()  # starts the build; a child process cannot have finished it yet
        assert isinstance(state, Unavailable) and state.building, state
        assert f"indexing {find_source(tree).root}" in state.message and "no index yet" in state.message
        assert re.search(r"Try again in \d+ s\.$", state.message), state.message
        deadline = time.monotonic() + 120
        while isinstance(state, Unavailable) and time.monotonic() < deadline:
            time.sleep(0.5)
            state = backend.ready()
        assert not isinstance(state, Unavailable), state
        assert state.one("SELECT count(*) FROM op")[0] > 10
    finally:
        backend.stop()


def test_a_build_that_fails_is_reported_with_its_error(tree, tmp_path, monkeypatch):
    from torchtalk.server import Backend
    from torchtalk.server.backend import Unavailable

    blocker = tmp_path / "not-a-dir"
    blocker.write_text("a file where the cache directory should be")
    monkeypatch.setenv("TORCHTALK_CACHE_DIR", str(blocker / "cache"))
    backend = Backend(str(tree), codegen=False)
    try:
        state = backend.ready()
        deadline = time.monotonic() + 120
        while isinstance(state, Unavailable) and state.building and time.monotonic() < deadline:
            time.sleep(0.5)
            state = backend.ready()
        assert isinstance(state, Unavailable) and not state.building, state
        assert state.message.startswith(f"Building the index of {find_source(tree).root} failed: cannot create "
                                        "the index directory"), state
        assert f"torchtalk index --source {find_source(tree).root}" in state.message
    finally:
        backend.stop()
