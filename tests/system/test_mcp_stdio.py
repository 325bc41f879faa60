"""Raw JSON-RPC lines over a real `torchtalk serve` stdio subprocess: every line gets an answer.

The SDK's own stdio transport dropped lines it could not validate (malformed JSON, a lone surrogate
escape, deep nesting), so the client waited forever; the server's transport answers each one. Every
read here has a timeout: a hang fails the test instead of hanging it.
"""

from __future__ import annotations

import json
import os
import random
import shutil
import signal
import time

import pytest

from torchtalk.server.jsonrpc import MAX_DEPTH, MAX_LINE
from torchtalk.source.tree import find_source
from torchtalk.tools import all_tools

from ..conftest import FIXTURE_TREE, build_index
from ..servers import RawServer, reply_text


def _tool_error(reply: dict, msg_id) -> str:
    assert reply.get("id") == msg_id, reply
    assert "result" in reply and reply["result"]["isError"] is True, reply
    return reply_text(reply)


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    """One server for the module (each start costs seconds): the cases below also check it stays whole."""
    base = tmp_path_factory.mktemp("stdio")
    tree = base / "pytorch"
    shutil.copytree(FIXTURE_TREE, tree)
    build_index(tree, base / "cache", workers=1, codegen=False)
    s = RawServer(["--source", str(tree), "--no-codegen"],
                  env=dict(os.environ, TORCHTALK_CACHE_DIR=str(base / "cache")))
    assert "result" in s.initialize()
    yield s
    assert s.close() == 0
    assert not any("Traceback" in line for line in s.stderr), "".join(s.stderr)


def _call_line(msg_id, name: str, arguments_json: str) -> str:
    return ('{"jsonrpc":"2.0","id":' + json.dumps(msg_id) + ',"method":"tools/call","params":{"name":"' + name
            + '","arguments":' + arguments_json + "}}")


# ------------------------------------------------------------------ arguments that cannot be decoded


@pytest.mark.parametrize("tool,arg,escaped", [("trace", "function_name", r"\ud800softmax"),
                                              ("test_file_info", "file_path", r"test/\udcff.py"),
                                              ("search", "query", r"relu\udfff"),
                                              ("trace", "focus", r"\ud83dfull")])
def test_lone_surrogate_escape_gets_a_tool_error(server, tool, arg, escaped):
    required = {"trace": '"function_name":"relu"', "test_file_info": '"file_path":"test_nn"',
                "search": '"query":"relu"'}[tool]
    pair = f'"{arg}":"{escaped}"'
    args = "{" + (pair if required.startswith(f'"{arg}"') else f'{required},{pair}') + "}"
    server.send(_call_line(11, tool, args))
    text = _tool_error(server.receive(), 11)
    assert arg in text and "lone surrogate" in text and "U+D" in text, text


def test_lone_surrogate_in_the_id_and_the_tool_name_still_gets_a_line_of_json(server):
    server.send('{"jsonrpc":"2.0","id":"\\ud800x","method":"tools/call","params":{"name":"tr\\udcffce","arguments":{}}}')
    reply = server.receive()
    assert reply["id"] == "\ud800x"  # sent back as the same JSON escape
    assert "Unknown tool" in reply_text(reply) and "\\udcff" in reply_text(reply)


def test_nesting_1000_levels_deep_gets_a_tool_error(server):
    deep = "[" * 1000 + "]" * 1000
    server.send(_call_line(12, "trace", '{"function_name":' + deep + "}"))
    text = _tool_error(server.receive(), 12)
    assert "nested 100" in text and f"limit is {MAX_DEPTH}" in text, text


def test_nesting_in_another_method_gets_invalid_request_with_its_id(server):
    nested = '{"a":' * 500 + "1" + "}" * 500
    server.send('{"jsonrpc":"2.0","id":13,"method":"tools/list","params":{"cursor":' + nested + "}}")
    reply = server.receive()
    assert reply["id"] == 13 and reply["error"]["code"] == -32600 and "nested" in reply["error"]["message"]


def test_over_long_line_gets_a_tool_error_and_the_server_stays_whole(server):
    big = "x" * (MAX_LINE + 1000)
    server.send(_call_line(14, "trace", json.dumps({"function_name": big})))
    text = _tool_error(server.receive(), 14)
    assert f"the limit is {MAX_LINE:,}" in text and "bytes long" in text, text
    # The id last, after the long part, is found too; another method gets -32600 with it.
    server.send('{"jsonrpc":"2.0","method":"tools/list","params":{"cursor":"' + big + '"},"id":15}')
    reply = server.receive()
    assert reply["id"] == 15 and reply["error"]["code"] == -32600
    reply = server.call(16, "trace", {"function_name": "relu", "focus": "yaml"})
    assert not reply["result"]["isError"] and "## relu" in reply_text(reply)


def test_a_long_argument_under_the_line_limit_is_the_tools_business(server):
    text = _tool_error(server.call(17, "trace", {"function_name": "\x00" * 100_000}), 17)  # 600 kB of JSON
    assert "function_name" in text and "the limit is 500" in text


# ------------------------------------------------------------------ malformed lines


MALFORMED = [
    ("hello not json", -32700, None),
    ('{"jsonrpc":"2.0","id":21,"method":"tools/call"', -32700, 21),  # truncated: the id is still read
    ('{"jsonrpc":"2.0","id":22,"method":"ping","params":{"x":NaN}}', -32700, 22),
    ("[1,2,3]", -32600, None),
    ("[]", -32600, None),
    ("42", -32600, None),
    ('"just a string"', -32600, None),
    ('{"jsonrpc":"1.0","id":23,"method":"ping"}', -32600, 23),
    ('{"id":24,"method":"ping"}', -32600, 24),
    ('{"jsonrpc":"2.0","id":25,"method":7}', -32600, 25),
    ('{"jsonrpc":"2.0","id":26,"method":"ping","params":[1]}', -32600, 26),
    ('{"jsonrpc":"2.0","id":true,"method":"ping"}', -32600, None),  # not a notification: its id is bad
    ('{"jsonrpc":"2.0","id":null,"method":"ping"}', -32600, None),
    ('{"jsonrpc":"2.0","id":[27],"method":"ping"}', -32600, None),
    ('{"jsonrpc":"2.0"}', -32600, None),
]


@pytest.mark.parametrize("line,code,msg_id", MALFORMED, ids=[m[0][:30] for m in MALFORMED])
def test_malformed_line_gets_an_error_with_the_id_when_readable(server, line, code, msg_id):
    server.send(line)
    reply = server.receive()
    assert reply["jsonrpc"] == "2.0" and reply["error"]["code"] == code, reply
    assert reply["id"] == msg_id, reply
    assert len(reply["error"]["message"]) < 500
    # ... and it is in the server's log, not silent.
    server.send_json({"jsonrpc": "2.0", "id": "after", "method": "ping"})
    assert server.receive() == {"jsonrpc": "2.0", "id": "after", "result": {}}
    assert any("refused" in line for line in server.stderr), server.stderr


def test_bytes_that_are_not_utf8_get_a_parse_error(server):
    server.send(b'{"jsonrpc":"2.0","id":31,"method":"tools/call","params":{"name":"trace","arguments":'
                b'{"function_name":"\xff\xfe"}}}')
    reply = server.receive()
    assert reply["error"]["code"] == -32700 and reply["id"] == 31 and "UTF-8" in reply["error"]["message"]


def test_unknown_method_and_bad_params_are_answered_by_the_protocol(server):
    server.send_json({"jsonrpc": "2.0", "id": 32, "method": "no/such/method"})
    assert server.receive()["error"]["code"] == -32601
    server.send_json({"jsonrpc": "2.0", "id": 33, "method": "tools/call", "params": {"arguments": {}}})
    assert server.receive()["error"]["code"] == -32602


def test_blank_lines_are_skipped_and_crlf_is_accepted(server):
    server.send("")
    server.send("   ")
    server.send(json.dumps({"jsonrpc": "2.0", "id": 34, "method": "ping"}) + "\r")
    assert server.receive() == {"jsonrpc": "2.0", "id": 34, "result": {}}
    time.sleep(0.3)
    assert server.nothing_pending()


# ------------------------------------------------------------------ strict argument types, over raw stdio


def test_a_string_is_not_an_integer_and_unknown_arguments_are_named(server):
    text = _tool_error(server.call(41, "impact", {"function_name": "index_select_out_cpu_", "depth": "3"}), 41)
    assert text == "depth must be an integer, not the string '3'"
    text = _tool_error(server.call(42, "search", {"query": "relu", "limit": True}), 42)
    assert "limit must be an integer, not the boolean true" in text
    text = _tool_error(server.call(43, "trace", {"function_name": "relu", "fokus": "yaml"}), 43)
    assert "'fokus'" in text and "function_name (string, required)" in text and "focus (string, default 'full')" in text
    text = _tool_error(server.call(44, "get_status", {"verbose": 1}), 44)
    assert text == "get_status takes no arguments; got 'verbose'"
    # JSON Schema's integer: 2.0 is one.
    reply = server.call(45, "impact", {"function_name": "index_select_out_cpu_", "depth": 2.0})
    assert not reply["result"]["isError"], reply_text(reply)


# ------------------------------------------------------------------ property: one answer per line, always


def _mutations(seed: int, n: int) -> list[bytes]:
    rnd = random.Random(seed)
    base = _call_line(1, "trace", '{"function_name":"relu","focus":"yaml"}').encode()
    out = []
    for _ in range(n):
        line = bytearray(base)
        how = rnd.randrange(5)
        if how == 0:
            line = line[: rnd.randrange(1, len(line))]
        elif how == 1:
            for _ in range(rnd.randrange(1, 4)):
                line[rnd.randrange(len(line))] = rnd.randrange(256)
        elif how == 2:
            pos = rnd.randrange(len(line))
            line[pos:pos] = rnd.choice([b"[" * 200, b"{", b"]", b'"', b"\\", b"\\ud800", b",,", b"\x00"])
        elif how == 3:
            line = bytearray(rnd.randbytes(rnd.randrange(1, 200)))
        else:
            pos = rnd.randrange(len(line))
            del line[pos: pos + rnd.randrange(1, 20)]
        out.append(bytes(line).replace(b"\n", b" ").replace(b"\r", b" "))
    return out


def _is_notification(line: bytes) -> bool:
    """A well-formed JSON-RPC notification: the one kind of line that gets no answer."""
    from mcp.types import JSONRPCNotification, jsonrpc_message_adapter
    try:
        return isinstance(jsonrpc_message_adapter.validate_json(line, by_name=False), JSONRPCNotification)
    except ValueError:
        return False


def test_every_mutated_line_gets_exactly_one_answer(server):
    for i, line in enumerate(_mutations(20240611, 80)):
        if not line.strip():
            continue
        server.send(line)
        marker = f"probe-{i}"
        server.send_json({"jsonrpc": "2.0", "id": marker, "method": "ping"})
        expected = 0 if _is_notification(line) else 1
        answers, probed = [], False
        while not probed or len(answers) < expected:  # a tool call may be answered after the ping
            reply = server.receive()
            if reply.get("id") == marker:
                probed = True
            else:
                answers.append(reply)
        assert len(answers) == expected, (line, answers)
    time.sleep(1)
    assert server.nothing_pending() and server.proc.poll() is None


# ------------------------------------------------------------------ no tree yet


def test_without_a_tree_initialize_succeeds_and_every_tool_says_how_to_set_one_up(tmp_path):
    env = dict(os.environ)
    s = RawServer(["--no-codegen"], env=env, cwd=tmp_path)  # the config (XDG_CONFIG_HOME per test) is empty
    try:
        init = s.initialize()
        assert init["result"]["serverInfo"]["name"] == "torchtalk"
        s.send_json({"jsonrpc": "2.0", "id": "list", "method": "tools/list"})
        assert len(s.receive()["result"]["tools"]) == len(all_tools())
        for i, tool in enumerate(all_tools()):
            args = {p.name: "relu" for p in tool.params if p.required}
            text = _tool_error(s.call(i, tool.name, args), i)
            assert "no PyTorch source tree yet" in text and "/torchtalk:setup" in text and "`torchtalk setup`" in text
    finally:
        assert s.close() == 0
    assert not any("Traceback" in line for line in s.stderr), "".join(s.stderr)


def test_a_tree_configured_while_the_server_runs_is_served_without_a_restart(tmp_path, tree):
    from torchtalk.source.tree import save_source_in_config

    s = RawServer(["--no-codegen"], cwd=tmp_path)
    try:
        s.initialize()
        assert "no PyTorch source tree yet" in _tool_error(s.call(1, "get_status", {}), 1)
        save_source_in_config(tree)  # what `torchtalk setup` / `fetch-source` record
        # The tree has no index yet: it is built in the background; the call waits a little for it.
        reply = s.call(2, "trace", {"function_name": "relu", "focus": "yaml"})
        deadline = time.monotonic() + 120
        while reply["result"]["isError"] and "indexing" in reply_text(reply) and time.monotonic() < deadline:
            assert "Try again in" in reply_text(reply)
            time.sleep(2)
            reply = s.call(2, "trace", {"function_name": "relu", "focus": "yaml"})
        assert not reply["result"]["isError"] and "## relu" in reply_text(reply), reply_text(reply)
        assert find_source(tree).index_path.exists()
    finally:
        assert s.close() == 0


# ------------------------------------------------------------------ clean exits


@pytest.mark.parametrize("how", ["stdin closed", "SIGTERM"])
def test_the_server_exits_cleanly_and_ends_its_background_index_run(indexed, how):
    import psutil

    tree, _ix = indexed
    s = RawServer(["--source", str(tree), "--no-codegen"])
    s.initialize()
    assert not s.call(1, "get_status", {})["result"]["isError"]
    # An edit makes the server start a refresh at once (a background `torchtalk index`).
    cpp = tree / "aten/src/ATen/native/Activation.cpp"
    cpp.write_text(cpp.read_text() + "\n// edited\n")
    deadline = time.monotonic() + 60
    while True:
        family = psutil.Process(s.proc.pid).children(recursive=True)
        if any("index" in p.cmdline() for p in family):
            break
        assert time.monotonic() < deadline, [p.cmdline() for p in family]
        time.sleep(0.05)
    if how == "SIGTERM":  # stdin stays open: the signal alone ends the server
        s.proc.send_signal(signal.SIGTERM)
        assert s.proc.wait(timeout=10) == 143
    assert s.close() == (143 if how == "SIGTERM" else 0)
    time.sleep(0.5)
    left = [p.pid for p in family if psutil.pid_exists(p.pid)]
    assert not left, f"left behind: {left}"
    assert not any("Traceback" in line for line in s.stderr), "".join(s.stderr)
