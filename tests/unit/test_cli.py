import argparse
import io
import json
import os
import re
import subprocess
import sys
from pathlib import Path

from torchtalk.cli import EXIT_NOT_FOUND, _build_parser
from torchtalk.index import progress


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
    assert r.returncode == EXIT_NOT_FOUND == 3  # an answer, with its own exit code (README, "Using it")
    r = tt("trace", "rleu", "--source", str(tree))
    assert r.returncode == 3 and r.stdout.startswith("No op named 'rleu'") and r.stderr == ""


def test_a_name_given_twice_differently_is_an_error(tree):
    # trace softmax --function-name add answered softmax, silently dropping add
    r = tt("trace", "softmax", "--function-name", "add", "--source", str(tree))
    assert r.returncode == 2 and "trace got two function_names ('softmax' and --function-name 'add')" in r.stderr
    r = tt("trace", "--function-name", "relu", "--source", str(tree))
    assert r.returncode == 0 and r.stdout.startswith("# trace relu")


def test_json_errors_are_a_json_object_on_stdout(tree, tmp_path):
    """Note [JSON errors]: with --json every failure prints {"kind": "error", ...} on stdout (was: stdout empty)."""
    def error_of(*args: str, code: int = 2) -> str:
        r = tt(*args)
        assert r.returncode == code, (args, r.stderr)
        data = json.loads(r.stdout)
        assert set(data) == {"kind", "error"} and data["kind"] == "error", data
        assert data["error"] in r.stderr  # the same message as stderr's
        return data["error"]

    src = ("--source", str(tree))
    assert "no index yet" in error_of("status", "--json", *src)  # before any command builds it
    assert "from 1 to 500" in error_of("search", "relu", "--limit", "0", "--json", *src)  # the query's check
    assert "invalid int value: 'x'" in error_of("search", "relu", "--limit", "x", "--json", *src)  # argparse's
    assert "function_name is empty" in error_of("trace", "", "--json", *src)
    assert "got two function_names" in error_of("trace", "softmax", "--function-name", "add", "--json", *src)
    assert "does not exist" in error_of("trace", "relu", "--json", "--source", str(tmp_path / "nowhere"))
    r = tt("search", "relu", "--limit", "x", *src)  # without --json stdout stays empty
    assert r.returncode == 2 and r.stdout == ""


def test_over_long_input_is_reported_as_more_than_the_limit_never_as_limit_plus_one(tree, tmp_path):
    """The CLI reads a diff or a piped message only up to its limit: it said "2,000,001 characters long" for a
    52 MB diff, and "200,001" for a 2 MB error_origin message, lengths it never counted."""
    from torchtalk.query.change.diff import MAX_DIFF_CHARS
    big = tmp_path / "big.diff"
    big.write_text("+" * (3 * MAX_DIFF_CHARS))
    r = tt("affected", "--diff", str(big), "--source", str(tree))
    assert r.returncode == 2 and f"holds more than {MAX_DIFF_CHARS:,} characters (it is {3 * MAX_DIFF_CHARS:,} " \
        "bytes)" in r.stderr, r.stderr
    assert f"{MAX_DIFF_CHARS + 1:,}" not in r.stderr
    r = tt("affected", "--diff", "/dev/zero", "--source", str(tree))  # no size to give
    assert r.returncode == 2 and f"--diff /dev/zero holds more than {MAX_DIFF_CHARS:,} characters;" in r.stderr
    # A long traceback piped to error_origin is read whole (its error is at the end), and its length is exact.
    frames = "".join(f'  File "/x/torch/nn/m.py", line {i}, in f\n    y = g(x)\n' for i in range(60_000))
    text = "Traceback (most recent call last):\n" + frames + "RuntimeError: zzz qqq\n"
    r = subprocess.run([sys.executable, "-m", "torchtalk", "error-origin", "-", "--source", str(tree)], input=text,
                       capture_output=True, text=True, env=dict(os.environ), timeout=300)
    assert f"the input is {len(text):,} characters long; its last" in r.stdout, r.stdout[:2000]
    assert "zzz qqq" in r.stdout.splitlines()[0]


def test_search_backend_flag(tree):
    r = tt("search", "cumsum", "--backend", "MPS", "--source", str(tree))
    assert r.returncode == 0 and "cumsum_out_mps" in r.stdout


def test_index_when_piped_prints_plain_progress_and_then_up_to_date(tree):
    r = tt("index", "--source", str(tree), "--no-codegen")
    assert r.returncode == 0 and "full index" in r.stdout
    assert "\x1b[" not in r.stderr  # no progress bar escape codes into a pipe
    # Plain lines instead (at most one every few seconds: this small build gets only the last one).
    assert re.search(r"^torchtalk: indexing (\d+)/\1 files in \d+\.\ds$", r.stderr, re.M), r.stderr
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
    r = tt("serve", "--transport", "http", "--workers", "0", cwd=tmp_path)
    assert r.returncode == 2 and "--workers must be from 1 to 64" in r.stderr


def _subparsers() -> dict[str, argparse.ArgumentParser]:
    parser = _build_parser()
    action = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    return dict(action.choices)


def test_help_has_a_description_per_command_help_per_option_and_real_metavars():
    for name, sub in _subparsers().items():
        assert sub.description and len(sub.description) > 20, name
        text = sub.format_help()
        assert " _" not in text.replace("\n", " ").replace(" __", ""), f"{name}: an internal metavar:\n{text}"
        for action in sub._actions:
            if isinstance(action, argparse._HelpAction):
                continue
            assert action.help and action.help != argparse.SUPPRESS, f"{name} {action.option_strings or action.dest}"
        assert "exit codes: 0 answered; 3 " in " ".join(text.split()), name
    trace = _subparsers()["trace"].format_help()
    assert "--function-name FUNCTION_NAME" in trace and "--focus {yaml,dispatch,full}" in trace
    # status and get-status both exist, each saying why
    assert "nothing is built or refreshed" in " ".join(_subparsers()["status"].format_help().split())
    assert "refreshes the index first" in " ".join(_subparsers()["get-status"].format_help().split())


def test_plain_progress_lines_are_rate_limited_and_end_with_a_summary():
    now = [0.0]
    out = io.StringIO()  # not a terminal
    with progress.bar(1000, "indexing", stream=out, clock=lambda: now[0]) as advance:
        for i in range(1000):
            now[0] = i * 0.05  # 50 s in all
            advance(f"file{i}.cpp")
    lines = out.getvalue().splitlines()
    assert lines[-1] == "torchtalk: indexing 1000/1000 files in 50.0s"
    assert lines[:-1] == [f"torchtalk: indexing {n}/1000 files ({n // 10}%) after {n * 0.05:.0f}s"
                          for n in (101, 201, 301, 401, 501, 601, 701, 801, 901)]
    out = io.StringIO()
    with progress.bar(10, "indexing", enabled=False, stream=out) as advance:
        advance("x")
    assert out.getvalue() == ""


def test_the_bar_cuts_paths_in_the_middle():
    path = "torch/testing/_internal/common_methods_invocations.py"
    short = progress.shorten(path, 40)
    assert len(short) == 40 and short.startswith("torch/testing") and short.endswith("invocations.py")
    assert "…" in short
    assert progress.shorten("aten/x.cpp", 40) == "aten/x.cpp"


def test_index_command_line_is_built_without_importing_the_tools(tree, tmp_path):
    # `torchtalk index` after an edit: the tools' ~0.3 s of imports would come before the refresh starts. Their
    # subcommands are still there for every other command.
    code = ("import sys; from torchtalk.cli import _build_parser; "
            "p = _build_parser('index'); p.parse_args(['index', '--progress', 'never']); "
            "print('torchtalk.tools' in sys.modules); _build_parser('trace').parse_args(['trace', 'relu']); "
            "print('torchtalk.tools' in sys.modules)")
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert r.stdout.split() == ["False", "True"], r.stderr
    env = {**os.environ, "TORCHTALK_CACHE_DIR": str(tmp_path / "cache")}
    r = subprocess.run([sys.executable, "-m", "torchtalk", "index", "--source", str(tree), "--progress", "never"],
                       capture_output=True, text=True, env=env, timeout=300)
    assert r.returncode == 0 and r.stdout.startswith("full index:"), r.stderr
    # the schemas a server reads at start are left in the cache by the first index run
    assert list((tmp_path / "cache" / "schemas").glob("output-*.json"))
