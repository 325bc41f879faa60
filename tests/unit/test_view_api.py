"""The web view's server side on the fixture tree: its JSON API, the source lines it shows, what it refuses."""

from __future__ import annotations

import http.client
import json
import os
import time

import pytest
from starlette.applications import Starlette
from starlette.testclient import TestClient

from torchtalk.errors import BadArgument
from torchtalk.query.excerpt import excerpt
from torchtalk.server.backend import Backend
from torchtalk.server.view.payload import parse_call
from torchtalk.server.view.routes import CSP, static_dir, view_routes

from ..servers import HttpServer


@pytest.fixture
def client(indexed):
    tree, ix = indexed
    app = Starlette(routes=view_routes(Backend.over(ix)))
    with TestClient(app, base_url="http://127.0.0.1:8766") as c:
        yield c


def answer(client, tool, **args):
    return client.get("/view/api/answer", params={"tool": tool, "args": json.dumps(args)})


def test_the_page_and_its_scripts_come_from_the_package(client):
    r = client.get("/view/")
    assert r.status_code == 200 and r.headers["content-security-policy"] == CSP
    assert '<script src="static/vendor/cytoscape.min.js">' in r.text and "http" not in r.text.split("<body")[0]
    for name in ("view.js", "view.css", "vendor/cytoscape.min.js", "vendor/cytoscape-dagre.min.js",
                 "vendor/mermaid.min.js", "vendor/licenses/mermaid.txt"):
        got = client.get(f"/view/static/{name}")
        assert got.status_code == 200 and got.content == (static_dir() / name).read_bytes(), name
    assert client.get("/view").status_code == 200  # redirected to /view/


def test_an_answer_comes_with_its_picture_and_how_to_expand_each_node(client):
    r = answer(client, "trace", function_name="index_select")
    assert r.status_code == 200
    a = r.json()
    assert a["call"] == 'trace("index_select")' and a["kind"] == "result"
    assert a["text"].startswith("# trace index_select") and a["mermaid"].startswith("flowchart LR")
    nodes = {n["id"]: n for n in a["picture"]["nodes"]}
    assert nodes["op:index_select"]["expand"] == {"tool": "trace", "args": {"function_name": "index_select"}}
    cuda = next(n for n in nodes.values() if n["label"] == "at::native::index_select_cuda")
    # A C++ function expands by its definition's path:line: unambiguous where names are shared.
    assert cuda["expand"] == {"tool": "calls", "args": {"function_name": "aten/src/ATen/native/cuda/Indexing.cu:41"}}
    gpu = next(n for n in nodes.values() if n["layer"] == "gpu")
    assert gpu["expand"]["tool"] == "called_by"
    assert {"id": "gpu", "name": "GPU kernel", "fill": "#fbd3cf", "stroke": "#b83227"} in a["picture"]["layers"]
    assert a["next"][0] == {"tool": "calls", "args": {"function_name": "at::native::index_select_cpu_"}}
    # The expansion answers, and shows what the node calls.
    e = answer(client, cuda["expand"]["tool"], **cuda["expand"]["args"]).json()
    assert any(n["label"] == "at::native::index_select_out_cuda" for n in e["picture"]["nodes"])


def test_bad_requests_say_what_is_wrong(client):
    r = answer(client, "search_everything", query="x")
    assert r.status_code == 400 and "unknown tool 'search_everything'" in r.json()["error"]
    r = answer(client, "impact", function_name="index_select_out_cpu_", depth="3")
    assert r.status_code == 400 and r.json()["error"] == "depth must be an integer, not the string '3'"
    r = answer(client, "trace", name="relu")
    assert r.status_code == 400 and "trace has no argument 'name'" in r.json()["error"]
    r = client.get("/view/api/answer", params={"tool": "trace", "args": "[1"})
    assert r.status_code == 400 and "args must be a JSON object" in r.json()["error"]
    r = answer(client, "trace", function_name="sofmax")
    assert r.status_code == 200 and r.json()["kind"] == "not_found" and not r.json()["picture"]["nodes"]


def test_source_lines_around_a_location(client):
    r = client.get("/view/api/source", params={"where": "aten/src/ATen/native/cuda/Indexing.cu:7"})
    s = r.json()
    assert r.status_code == 200 and s["path"] == "aten/src/ATen/native/cuda/Indexing.cu" and s["line"] == 7
    assert s["first"] == 1 and "indexSelectSmallIndex" in s["lines"][7 - s["first"]]


@pytest.mark.parametrize("where, why", [
    ("../../etc/passwd:1", "is not a path inside the source tree"),
    ("/etc/passwd:1", "is not a path inside the source tree"),
    ("aten/../../../etc/passwd:1", "is not a path inside the source tree"),
    ("version.txt:1", "is not a file of the index"),
    ("aten/src/ATen/native/cuda/Indexing.cu", "is not path:line"),
    ("aten/src/ATen/native/cuda/Indexing.cu:9999", "has 51 lines, not 9999"),
])
def test_source_refuses_what_is_not_an_indexed_file_of_the_tree(client, where, why):
    r = client.get("/view/api/source", params={"where": where})
    assert r.status_code == 400 and why in r.json()["error"], r.json()


def test_a_symlink_out_of_the_tree_is_refused_even_when_indexed(tmp_path, indexed):
    tree, ix = indexed
    secret = tmp_path / "secret.cpp"
    secret.write_text("int secret() { return 42; }\n")
    link = tree / "aten/src/ATen/native/Leak.cpp"
    os.symlink(secret, link)
    from torchtalk.index.indexer import refresh
    from torchtalk.source.tree import find_source
    refresh(find_source(tree), workers=1, codegen=False)
    with pytest.raises(BadArgument, match="leads outside the source tree|is not a file of the index"):
        excerpt(ix, "aten/src/ATen/native/Leak.cpp:1")


def test_requests_to_other_host_names_are_refused(client):
    r = client.get("/view/api/tools", headers={"Host": "attacker.example:8766"})
    assert r.status_code == 421
    assert client.get("/view/", headers={"Host": "attacker.example"}).status_code == 421
    assert client.get("/view/api/tools", headers={"Host": "localhost:8766"}).status_code == 200


def test_next_calls_are_parsed_as_the_answers_print_them():
    assert parse_call('impact("at::native::f", depth=2)') == {"tool": "impact",
                                                              "args": {"function_name": "at::native::f", "depth": 2}}
    assert parse_call('trace("a\\"b")') == {"tool": "trace", "args": {"function_name": 'a"b'}}
    assert parse_call("nope(") is None and parse_call('unknown_tool("x")') is None


def test_the_http_server_serves_the_view_next_to_mcp(tree, tmp_path):
    server = HttpServer(tree, tmp_path / "server.log", workers=1)
    try:
        conn = http.client.HTTPConnection("127.0.0.1", server.port, timeout=60)
        # The tree has no index yet: the first call waits a while for it, then asks to retry (a busy machine).
        deadline = time.monotonic() + 240
        while True:
            conn.request("GET", "/view/api/answer?" + "tool=calls&args=" + json.dumps(
                {"function_name": "index_select_out_cuda_impl"}).replace(" ", ""))
            r = conn.getresponse()
            body = json.loads(r.read())
            if r.status != 503 or not body.get("retry") or time.monotonic() > deadline:
                break
            time.sleep(2)
        assert r.status == 200 and body["call"] == 'calls("index_select_out_cuda_impl")', body
        conn.request("GET", "/view/", headers={"Host": "evil.example"})
        r = conn.getresponse()
        r.read()
        assert r.status == 421
        conn.close()
        assert "the web view at http://127.0.0.1:" in server.log()
    finally:
        assert server.stop() == 143  # SIGTERM


def test_the_wheel_ships_every_file_of_the_page():
    """pyproject's package-data must name each static file (setuptools globs do not cross directories)."""
    import glob
    from pathlib import Path

    tomllib = pytest.importorskip("tomllib")  # Python >= 3.11

    root = Path(__file__).resolve().parents[2]
    data = tomllib.loads((root / "pyproject.toml").read_text())["tool"]["setuptools"]["package-data"]["torchtalk"]
    pkg = root / "src" / "torchtalk"
    shipped = {p for pattern in data for p in glob.glob(pattern, root_dir=pkg)}
    files = {str(p.relative_to(pkg)) for p in static_dir().rglob("*") if p.is_file()}
    assert files and files <= shipped, sorted(files - shipped)


def test_vendored_libraries_are_the_ones_recorded_with_their_licences():
    import hashlib
    vendor = static_dir() / "vendor"
    for line in (vendor / "SHA256SUMS").read_text().splitlines():
        digest, name = line.split()
        assert hashlib.sha256((vendor / name).read_bytes()).hexdigest() == digest, name
    for lib in ("cytoscape", "cytoscape-dagre", "dagre", "mermaid"):
        assert "Permission is hereby granted" in (vendor / "licenses" / f"{lib}.txt").read_text()
    assert "=== elkjs@" in (vendor / "licenses" / "bundled.txt").read_text()  # what mermaid bundles is listed


def test_the_view_command_checks_its_port_before_anything_else(tree, capsys):
    from torchtalk.cli import main
    assert main(["view", "--source", str(tree), "--port", "70000", "--no-browser"]) == 2
    assert "--port must be from 0 to 65535 (0: any free port), not 70000" in capsys.readouterr().err
