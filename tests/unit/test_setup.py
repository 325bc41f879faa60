"""`torchtalk setup`, `status` and `doctor` end to end: subprocesses on the fixture tree, a fake `claude`."""

import asyncio
import json
import os
import pty
import shlex
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from mcp import Client, StdioServerParameters

from torchtalk.onboard import claude as onboard_claude
from torchtalk.onboard.claude import server_base_command
from torchtalk.source.tree import FIX_SOURCE, find_source, read_config

FAKE_CLAUDE = textwrap.dedent('''\
    import json, os, sys, time
    argv = sys.argv[1:]
    with open(os.environ["FAKE_CLAUDE_LOG"], "a") as f:
        f.write(json.dumps(argv) + "\\n")
    state_file = os.environ["FAKE_CLAUDE_STATE"]
    servers = json.load(open(state_file)) if os.path.exists(state_file) else {}
    if os.environ.get("FAKE_CLAUDE_SLEEP"):
        time.sleep(float(os.environ["FAKE_CLAUDE_SLEEP"]))
    if argv[:2] == ["mcp", "get"]:
        s = servers.get(argv[2])
        if s is None:
            print(f"No MCP server found with name: {argv[2]}", file=sys.stderr)
            sys.exit(1)
        print(f"{argv[2]}:\\n  Scope: User config (available in all your projects)\\n  Status: \\u2713 Connected\\n"
              f"  Type: stdio\\n  Command: {s['command']}\\n  Args: {' '.join(s['args'])}\\n  Environment:\\n\\n"
              f"To remove this server, run: claude mcp remove \\"{argv[2]}\\" -s {s['scope']}")
    elif argv[:2] == ["mcp", "add"]:
        if os.environ.get("FAKE_CLAUDE_FAIL_ADD"):
            print("Error: something went wrong", file=sys.stderr)
            sys.exit(1)
        sep = argv.index("--")
        opts, cmd = argv[2:sep], argv[sep + 1:]
        name = opts[opts.index("stdio") + 1]
        if name in servers:
            print(f"MCP server {name} already exists", file=sys.stderr)
            sys.exit(1)
        servers[name] = {"command": cmd[0], "args": cmd[1:], "scope": opts[opts.index("--scope") + 1]}
    elif argv[:2] == ["mcp", "remove"]:
        if servers.pop(argv[2], None) is None:
            sys.exit(1)
    elif argv[:3] == ["plugin", "list", "--json"]:
        print(os.environ.get("FAKE_CLAUDE_PLUGINS", "[]"))
        sys.exit(0)
    else:
        sys.exit(2)
    json.dump(servers, open(state_file, "w"))
''')


def tt(*args, cwd, env=None, stdin=subprocess.DEVNULL):
    return subprocess.run([sys.executable, "-m", "torchtalk", *args], check=False, capture_output=True,
                          text=True, env=env if env is not None else dict(os.environ), cwd=cwd, stdin=stdin,
                          timeout=300)


def no_claude_path(tmp_path) -> str:
    """A PATH with a bin dir of our own and this Python's, and certainly no `claude`."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir(exist_ok=True)
    path = os.pathsep.join([str(bin_dir), str(Path(sys.executable).parent)])
    assert shutil.which("claude", path=path) is None
    return path


@pytest.fixture
def workdir(tmp_path) -> Path:
    d = tmp_path / "work"
    d.mkdir()
    return d


@pytest.fixture
def fake_claude(tmp_path):
    """(env with a fake `claude` first on PATH, log of its calls, its stored registrations)."""
    path = no_claude_path(tmp_path)
    script = tmp_path / "bin" / "claude"
    script.write_text(f"#!{sys.executable}\n" + FAKE_CLAUDE)
    script.chmod(0o755)
    log, state = tmp_path / "claude.log", tmp_path / "claude.json"
    env = {**os.environ, "PATH": path, "FAKE_CLAUDE_LOG": str(log), "FAKE_CLAUDE_STATE": str(state)}
    assert shutil.which("claude", path=env["PATH"]) == str(script)

    def calls() -> list[list[str]]:
        """The `claude mcp ...` calls (setup also asks `claude plugin list --json`, see plugin_asked)."""
        every = [json.loads(line) for line in log.read_text().splitlines()] if log.exists() else []
        return [c for c in every if c[:1] == ["mcp"]]

    def registered() -> dict:
        return json.loads(state.read_text()) if state.exists() else {}

    return env, calls, registered


def pasted_json(stdout: str) -> dict:
    start = stdout.index('{\n  "mcpServers"')
    return json.JSONDecoder().raw_decode(stdout[start:])[0]


def test_setup_without_claude_prints_a_registration_that_starts_a_working_server(tree, workdir, tmp_path):
    env = {**os.environ, "PATH": no_claude_path(tmp_path)}
    r = tt("setup", "--source", str(tree), "--no-codegen", cwd=workdir, env=env)
    assert r.returncode == 0, r.stdout + r.stderr
    assert "index: full index" in r.stdout and "verify: get_status ok, trace softmax ok" in r.stdout
    assert "calls: resolved " in r.stdout, "the first session's first answers read resolved calls"
    root = str(Path(tree).resolve())
    assert read_config()["source"] == root  # a bare `torchtalk serve` now finds it
    assert find_source(None).root == Path(root)

    entry = pasted_json(r.stdout)["mcpServers"]["torchtalk"]
    assert entry["type"] == "stdio" and entry["env"] == {}
    assert os.path.isabs(entry["command"]) and os.access(entry["command"], os.X_OK)
    assert entry["args"] == ["serve", "--source", root, "--no-codegen"]
    add_line = next(line.strip() for line in r.stdout.splitlines() if line.strip().startswith("claude mcp add"))
    assert shlex.split(add_line) == ["claude", "mcp", "add", "--transport", "stdio", "torchtalk", "--scope", "user",
                                     "--", entry["command"], *entry["args"]]
    assert "~/.claude.json" in r.stdout and ".mcp.json" in r.stdout
    assert not (workdir / ".mcp.json").exists()
    # How to start this installation, for the plugin's launcher (it cannot find the venv by itself).
    assert onboard_claude.recorded_server_command() == server_base_command()

    # Start it as Claude Code would: that command line, no venv activated, a minimal PATH.
    server_env = {k: v for k, v in os.environ.items() if k != "VIRTUAL_ENV"} | {"PATH": "/usr/bin:/bin"}
    params = StdioServerParameters(command=entry["command"], args=entry["args"], env=server_env, cwd=str(tmp_path))

    async def go():
        async with Client(params, read_timeout_seconds=120) as c:
            res = await c.call_tool("get_status", {})
            text = "\n".join(getattr(x, "text", "") for x in res.content)
            assert not res.is_error and "PyTorch version: 9.9.0a0" in text and root in text

    asyncio.run(asyncio.wait_for(go(), 180))


def test_setup_registers_with_claude_once_and_reregisters_when_the_command_changes(tree, workdir, fake_claude):
    env, calls, registered = fake_claude
    root = str(Path(tree).resolve())
    base = server_base_command()

    r = tt("setup", "--source", str(tree), "--no-codegen", cwd=workdir, env=env)
    assert r.returncode == 0, r.stdout + r.stderr
    assert calls() == [["mcp", "get", "torchtalk"],
                       ["mcp", "add", "--transport", "stdio", "torchtalk", "--scope", "user", "--",
                        *base, "serve", "--source", root, "--no-codegen"]]
    assert "$ claude mcp add --transport stdio torchtalk --scope user -- " in r.stdout
    assert registered()["torchtalk"]["args"] == ["serve", "--source", root, "--no-codegen"]

    r = tt("setup", "--source", str(tree), "--no-codegen", cwd=workdir, env=env)  # idempotent
    assert r.returncode == 0, r.stdout + r.stderr
    assert calls()[2:] == [["mcp", "get", "torchtalk"]]
    assert "already registered" in r.stdout and "index is up to date" in r.stdout

    r = tt("setup", "--source", str(tree), cwd=workdir, env=env)  # codegen now on: another command line
    assert r.returncode == 0, r.stdout + r.stderr
    assert calls()[3:] == [["mcp", "get", "torchtalk"], ["mcp", "remove", "torchtalk", "--scope", "user"],
                           ["mcp", "add", "--transport", "stdio", "torchtalk", "--scope", "user", "--",
                            *base, "serve", "--source", root]]
    assert registered()["torchtalk"]["args"] == ["serve", "--source", root]

    r = tt("doctor", cwd=workdir, env=env)
    assert r.returncode == 0, r.stdout
    assert "ok: registered with Claude Code (User config" in r.stdout


def test_a_failing_claude_gives_a_clear_message_and_the_manual_way(tree, workdir, fake_claude):
    env, _calls, registered = fake_claude
    r = tt("setup", "--source", str(tree), "--no-codegen", cwd=workdir, env={**env, "FAKE_CLAUDE_FAIL_ADD": "1"})
    assert r.returncode == 1 and "Traceback" not in r.stderr
    assert "problem: `claude mcp add` failed (exit 1: Error: something went wrong)" in r.stdout
    assert pasted_json(r.stdout)["mcpServers"]["torchtalk"]["args"][-1] == "--no-codegen"
    assert registered() == {}


def test_a_claude_that_hangs_times_out(tmp_path, fake_claude, monkeypatch, capsys):
    env, _calls, _registered = fake_claude
    for k in ("PATH", "FAKE_CLAUDE_LOG", "FAKE_CLAUDE_STATE"):
        monkeypatch.setenv(k, env[k])
    monkeypatch.setenv("FAKE_CLAUDE_SLEEP", "20")
    monkeypatch.setattr(onboard_claude, "CLAUDE_TIMEOUT_S", 1.0)
    cmd = onboard_claude.server_command(tmp_path)
    assert onboard_claude.register(cmd, "user") is False
    shown = capsys.readouterr().out
    assert "`claude mcp get torchtalk` failed (no answer in 1 s)" in shown
    assert pasted_json(shown)["mcpServers"]["torchtalk"]["command"] == cmd[0]


def test_project_scope_merges_into_mcp_json_and_refuses_a_broken_one(tree, workdir):
    broken = workdir.parent / "broken"
    broken.mkdir()
    (broken / ".mcp.json").write_text('{"mcpServers": {')
    r = tt("setup", "--source", str(tree), "--scope", "project", cwd=broken)
    assert r.returncode == 2 and "Traceback" not in r.stderr
    assert f"{broken / '.mcp.json'} is not valid JSON" in r.stderr and "left unchanged" in r.stderr
    assert (broken / ".mcp.json").read_text() == '{"mcpServers": {'
    assert not find_source(tree).index_path.exists()  # refused before the (long) build, not after

    mcp_json = workdir / ".mcp.json"
    other = {"type": "stdio", "command": "other-server", "args": ["--x"], "env": {"K": "v"}}
    mcp_json.write_text(json.dumps({"mcpServers": {"other": other}, "note": "kept"}))
    r = tt("setup", "--source", str(tree), "--no-codegen", "--scope", "project", cwd=workdir)
    assert r.returncode == 0, r.stdout + r.stderr
    data = json.loads(mcp_json.read_text())
    assert data["note"] == "kept" and data["mcpServers"]["other"] == other
    ours = data["mcpServers"]["torchtalk"]
    assert ours["type"] == "stdio" and os.access(ours["command"], os.X_OK)
    assert ours["args"] == ["serve", "--source", str(Path(tree).resolve()), "--no-codegen"]
    assert not list(workdir.glob(".mcp.json.*"))  # no temp file left behind
    r = tt("setup", "--source", str(tree), "--no-codegen", "--scope", "project", cwd=workdir)
    assert r.returncode == 0 and "already up to date" in r.stdout


def test_setup_without_a_tree_and_without_a_terminal_says_what_to_run(workdir, tmp_path):
    cache = tmp_path / "xdg-cache"  # where a fetch would put the tree
    env = {**os.environ, "XDG_CACHE_HOME": str(cache)}
    r = tt("setup", cwd=workdir, env=env)
    assert r.returncode == 2 and "Traceback" not in r.stderr
    assert len(r.stderr.strip().splitlines()) == 1
    assert f"Fix: {FIX_SOURCE}." in r.stderr
    assert not cache.exists()
    # doctor, status and a tool command name the same fix for the same missing tree
    assert f"-> fix: {FIX_SOURCE}" in tt("doctor", cwd=workdir, env=env).stdout
    assert FIX_SOURCE in tt("status", cwd=workdir, env=env).stderr
    assert FIX_SOURCE in tt("trace", "relu", cwd=workdir, env=env).stderr


def test_setup_asks_on_a_terminal_and_a_no_fetches_nothing(workdir, tmp_path):
    cache = tmp_path / "xdg-cache"
    master, slave = pty.openpty()
    try:
        os.write(master, b"n\n")
        r = tt("setup", cwd=workdir, env={**os.environ, "XDG_CACHE_HOME": str(cache)}, stdin=slave)
    finally:
        os.close(master)
        os.close(slave)
    assert r.returncode == 2
    assert "No PyTorch source tree found. Fetch PyTorch 2.6.0's source (~" in r.stderr and "[Y/n]" in r.stderr
    assert str(cache / "torchtalk" / "pytorch-source") in r.stderr
    assert not cache.exists()


def test_status_never_builds_and_reports_after_setup(tree, workdir, tmp_path):
    # No usable index or no tree exits 2, as a tool command does for them (README, "Using it"; was 1).
    r = tt("status", "--source", str(tree), cwd=workdir)
    assert r.returncode == 2 and "no index yet" in r.stderr and "`torchtalk setup`" in r.stderr
    assert not find_source(tree).index_path.exists()
    r = tt("status", cwd=workdir)  # no tree at all
    assert r.returncode == 2 and "torchtalk setup --fetch" in r.stderr and "Traceback" not in r.stderr
    assert tt("trace", "relu", cwd=workdir).returncode == 2  # the same exit code for the same missing tree

    env = {**os.environ, "PATH": no_claude_path(tmp_path)}
    assert tt("setup", "--source", str(tree), "--no-codegen", "--no-register", cwd=workdir, env=env).returncode == 0
    r = tt("status", cwd=workdir)
    assert r.returncode == 0, r.stderr
    assert r.stdout.startswith("# TorchTalk status\n") and "PyTorch version: 9.9.0a0" in r.stdout
    r = tt("status", "--json", cwd=workdir)
    assert r.returncode == 0 and "9.9.0a0" in json.dumps(json.loads(r.stdout))


def test_doctor_passes_on_a_good_setup_without_claude(tree, workdir, tmp_path):
    env = {**os.environ, "PATH": no_claude_path(tmp_path)}
    assert tt("setup", "--source", str(tree), "--no-codegen", cwd=workdir, env=env).returncode == 0
    r = tt("doctor", cwd=workdir, env=env)
    assert r.returncode == 0, r.stdout + r.stderr
    lines = r.stdout.splitlines()
    assert lines[-1] == "All checks passed."
    # Decision: no `claude` on PATH is not a failure (the registration may live in ~/.claude.json, which
    # only claude can tell); it is an "info" line carrying the JSON to paste.
    info = [line for line in lines[:-1] if not line.startswith("ok: ")]
    assert info[0] == "info: generated code: disabled (--no-codegen)", info  # as this setup asked
    assert len(info) == 2 and info[1].startswith("info: the `claude` command is not on PATH"), info
    assert '{"torchtalk": {"type": "stdio"' in info[1]
    for what in ("ok: Python 3.", "ok: mcp ", "ok: tree_sitter_cpp ", "ok: yaml ", "with CSafeLoader",
                 "with FTS5 trigram", f"ok: source tree {Path(tree).resolve()}", "from the config file",
                 "is usable", "ok: index is fresh", "ok: resolved calls stored for this build", "ok: server command "):
        assert what in r.stdout, what
    assert tt("setup", "--check", cwd=workdir, env=env).stdout == r.stdout


def test_doctor_names_the_fix_for_a_missing_tree_and_a_missing_index(tree, workdir):
    r = tt("doctor", cwd=workdir)
    assert r.returncode == 1 and "Traceback" not in r.stderr + r.stdout
    assert ("problem: no PyTorch source tree found (no --source, $TORCHTALK_SOURCE or config file, and the current "
            f"directory is not a checkout) -> fix: {FIX_SOURCE}") in r.stdout
    r = tt("setup", "--check", "--source", str(tree), cwd=workdir)  # changes nothing: no index appears
    assert r.returncode == 1 and "no index yet -> fix: `torchtalk setup`" in r.stdout
    assert not find_source(tree).index_path.exists()


def _plugin_json(enabled=True, path="/somewhere/torchtalk/plugin") -> str:
    """What `claude plugin list --json` says about an installed TorchTalk plugin (fields as in 2.1.332)."""
    return json.dumps([{"id": "torchtalk@torchtalk", "version": "0.1.0", "scope": "user", "enabled": enabled,
                        "installPath": "/home/u/.claude/plugins/cache/torchtalk/torchtalk/0.1.0",
                        "readFromFolder": path,
                        "mcpServers": {"torchtalk": {"command": "${CLAUDE_PLUGIN_ROOT}/bin/torchtalk-mcp"}}},
                       {"id": "other@builtin", "version": "unknown", "scope": "user", "enabled": True}])


def test_setup_with_the_plugin_installed_registers_no_second_server(tree, workdir, fake_claude):
    env, calls, registered = fake_claude
    env = {**env, "FAKE_CLAUDE_PLUGINS": _plugin_json()}
    r = tt("setup", "--source", str(tree), "--no-codegen", cwd=workdir, env=env)
    assert r.returncode == 0, r.stdout + r.stderr
    assert ("Claude Code: the torchtalk@torchtalk plugin is installed and starts the server itself "
            "(plugin:torchtalk:torchtalk); setup registers no second one.") in r.stdout
    assert registered() == {} and ["mcp", "add"] not in [c[:2] for c in calls()]
    assert onboard_claude.recorded_server_command() == server_base_command()  # the plugin's launcher runs it
    r = tt("doctor", cwd=workdir, env=env)
    assert r.returncode == 0, r.stdout
    assert ("ok: the torchtalk@torchtalk Claude Code plugin is installed and starts the server: "
            f"{shlex.join(server_base_command())} serve") in r.stdout

    # Disabled, the plugin starts nothing: setup registers the server itself.
    r = tt("setup", "--source", str(tree), "--no-codegen", cwd=workdir,
           env={**env, "FAKE_CLAUDE_PLUGINS": _plugin_json(enabled=False)})
    assert r.returncode == 0 and "plugin is installed but disabled" in r.stdout, r.stdout
    assert "torchtalk" in registered()


def test_setup_and_doctor_report_a_registration_that_duplicates_the_plugin(tree, workdir, fake_claude):
    env, calls, registered = fake_claude
    assert tt("setup", "--source", str(tree), "--no-codegen", cwd=workdir, env=env).returncode == 0
    assert "torchtalk" in registered()  # registered before the plugin was installed
    env = {**env, "FAKE_CLAUDE_PLUGINS": _plugin_json()}
    r = tt("setup", "--source", str(tree), "--no-codegen", cwd=workdir, env=env)
    assert r.returncode == 1, r.stdout
    assert ("problem: a second torchtalk server is registered (user scope: ") in r.stdout
    assert "so Claude Code starts two -> fix: `claude mcp remove torchtalk --scope user`" in r.stdout
    r = tt("doctor", cwd=workdir, env=env)
    assert r.returncode == 1
    assert ("-> fix: `claude mcp remove torchtalk --scope user` (the plugin's server stays)") in r.stdout, r.stdout
    assert "problem: a second torchtalk server is registered besides the plugin's (user scope:" in r.stdout

    # The project's .mcp.json is a second server too.
    env_np = {k: v for k, v in env.items() if k != "FAKE_CLAUDE_PLUGINS"}
    assert tt("setup", "--source", str(tree), "--no-codegen", "--scope", "project", cwd=workdir,
              env=env_np).returncode == 0
    r = tt("doctor", cwd=workdir, env=env)
    assert f'fix: remove "torchtalk" from the "mcpServers" of {workdir / ".mcp.json"}' in r.stdout, r.stdout


def test_doctor_reports_stale_registrations(tree, workdir, fake_claude, tmp_path):
    env, _calls, registered = fake_claude
    moved = tmp_path / "moved"
    shutil.copytree(tree, moved)
    assert tt("setup", "--source", str(moved), "--no-codegen", cwd=workdir, env=env).returncode == 0
    shutil.rmtree(moved)  # the registered tree is gone
    r = tt("doctor", "--source", str(tree), cwd=workdir, env=env)
    assert (f"problem: the registered server's tree {moved.resolve()} is not a PyTorch tree any more "
            "(a stale registration) -> fix: `torchtalk setup` (it re-registers)") in r.stdout, r.stdout

    state = json.loads(Path(env["FAKE_CLAUDE_STATE"]).read_text())
    state["torchtalk"]["command"] = str(tmp_path / "old-venv" / "bin" / "torchtalk")
    Path(env["FAKE_CLAUDE_STATE"]).write_text(json.dumps(state))
    r = tt("doctor", "--source", str(tree), cwd=workdir, env=env)
    assert "does not exist (a stale registration) -> fix: `torchtalk setup` (it re-registers)" in r.stdout

    # The plugin's launcher would run a recorded command that is gone (a deleted venv).
    onboard_claude.server_command_file().write_text(str(tmp_path / "old-venv" / "bin" / "torchtalk") + "\n")
    r = tt("doctor", "--source", str(tree), cwd=workdir, env={**env, "FAKE_CLAUDE_PLUGINS": _plugin_json()})
    assert "which no longer exists (a stale record) -> fix: `torchtalk setup`" in r.stdout, r.stdout


def test_installed_plugin_from_claude_codes_records(tmp_path):
    """Without `claude`, the plugin is found in Claude Code's own records; a copy left in its cache after an
    uninstall is not an installed plugin."""
    home = tmp_path / "home"
    plugins = home / ".claude" / "plugins"
    cached = plugins / "cache" / "torchtalk" / "torchtalk" / "0.1.0"
    shutil.copytree(Path(__file__).parents[2] / "plugin" / ".claude-plugin", cached / ".claude-plugin")
    assert onboard_claude.installed_plugin(home) is None  # left over, not installed
    (plugins / "installed_plugins.json").write_text(json.dumps(
        {"version": 2, "plugins": {"torchtalk@torchtalk": [{"scope": "user", "installPath": str(cached)}]}}))
    found = onboard_claude.installed_plugin(home)
    assert found == onboard_claude.Plugin("torchtalk@torchtalk", str(cached), True)
    (home / ".claude" / "settings.json").write_text(json.dumps({"enabledPlugins": {"torchtalk@torchtalk": False}}))
    assert onboard_claude.installed_plugin(home).enabled is False
    (plugins / "installed_plugins.json").write_text(json.dumps({"version": 2, "plugins": {}}))
    assert onboard_claude.installed_plugin(home) is None
