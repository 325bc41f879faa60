import json
import os
import subprocess
import sys
from pathlib import Path


def tt(*args, cwd=None):
    return subprocess.run([sys.executable, "-m", "torchtalk", *args], capture_output=True, text=True,
                          env=dict(os.environ), cwd=cwd, timeout=300)


def test_trace_positional_and_json(tree):
    r = tt("trace", "relu", "--focus", "yaml", "--source", str(tree))
    assert r.returncode == 0, r.stderr
    assert "## relu  aten/src/ATen/native/native_functions.yaml:" in r.stdout
    r = tt("trace", "relu", "--focus", "yaml", "--source", str(tree), "--json")
    data = json.loads(r.stdout)  # the same envelope MCP clients get as structuredContent
    assert data["kind"] == "result" and data["result"]["ops"][0]["op"]["full_name"] == "relu"
    assert data["next"] and all(c.split("(")[0] in {"trace", "calls", "cuda_kernels", "find_similar_tests"}
                                for c in data["next"])
    r = tt("trace", "rleu", "--source", str(tree), "--json")
    data = json.loads(r.stdout)
    assert data["kind"] == "not_found" and "relu" in data["result"]["suggestions"]


def test_search_backend_flag(tree):
    r = tt("search", "cumsum", "--backend", "MPS", "--source", str(tree))
    assert r.returncode == 0 and "cumsum_out_mps" in r.stdout


def test_index_is_quiet_when_piped_and_then_up_to_date(tree):
    r = tt("index", "--source", str(tree), "--no-codegen")
    assert r.returncode == 0 and "full index" in r.stdout
    assert "\x1b[" not in r.stderr  # no progress bar escape codes into a pipe
    # An index run leaves the tools' output schemas for the next server start to read.
    cache = os.environ["TORCHTALK_CACHE_DIR"]
    assert len(list((Path(cache) / "schemas").glob("output-*.json"))) == 1
    r = tt("index", "--source", str(tree), "--no-codegen")
    assert r.stdout.startswith("index is up to date")


def test_errors_are_one_line_without_traceback(tree, tmp_path):
    r = tt("trace", "relu", "--source", str(tmp_path / "nowhere"))
    assert r.returncode == 2 and "does not exist" in r.stderr and "Traceback" not in r.stderr
    (tmp_path / "empty").mkdir()
    r = tt("trace", "relu", "--source", str(tmp_path / "empty"))
    assert r.returncode == 2 and "native_functions.yaml is missing" in r.stderr
    r = tt("search", "relu", "--limit", "0", "--source", str(tree))
    assert r.returncode == 2 and "from 1 to 500" in r.stderr and "Traceback" not in r.stderr


def test_source_from_env_and_current_directory(tree, tmp_path):
    env_r = subprocess.run([sys.executable, "-m", "torchtalk", "trace", "relu", "--focus", "yaml"], capture_output=True,
                           text=True, env={**os.environ, "TORCHTALK_SOURCE": str(tree)}, timeout=300)
    assert env_r.returncode == 0 and "## relu" in env_r.stdout
    r = tt("trace", "relu", "--focus", "yaml", cwd=tree)
    assert r.returncode == 0 and "## relu" in r.stdout
    r = tt("trace", "relu", cwd=tmp_path)
    assert r.returncode == 2 and "No PyTorch source tree configured" in r.stderr


def test_optional_first_arguments_take_their_defaults(tree):
    r = tt("list-modules", "--source", str(tree))
    assert r.returncode == 0, r.stderr
    assert r.stdout.startswith("# list_modules nn:")
    r = tt("cuda-kernels", "--source", str(tree))
    assert r.returncode == 0 and "__global__" in r.stdout, r.stderr
    r = tt("list_test_utils", "--source", str(tree))  # the underscore spelling works too
    assert r.returncode == 0 and r.stdout.startswith("# test utilities (all)"), r.stderr


def test_http_refuses_a_non_loopback_host_without_allow_remote(tmp_path):
    # Refused before any source lookup or bind: nothing listens on 0.0.0.0 by accident.
    r = tt("serve", "--transport", "http", "--host", "0.0.0.0", cwd=tmp_path)
    assert r.returncode == 2 and "--allow-remote" in r.stderr and "Traceback" not in r.stderr
    r = tt("serve", "--transport", "http", "--port", "70000", cwd=tmp_path)
    assert r.returncode == 2 and "1 to 65535" in r.stderr
