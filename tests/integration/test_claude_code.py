"""The real Claude Code CLI (npm @anthropic-ai/claude-code, pinned) with a throwaway HOME: both ways of
connecting TorchTalk end in `claude mcp list` saying Connected, with exactly one torchtalk server.

.ci/run installs the CLI into a cache directory and names it in $TORCHTALK_TEST_CLAUDE; without that,
these tests install it themselves (npm), and are skipped, saying why, only when npm cannot.
Claude Code needs no network or API key for `mcp` and `plugin` commands.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import platformdirs
import pytest

ROOT = Path(__file__).resolve().parents[2]
FIXTURE_TREE = ROOT / "tests" / "fixtures" / "tree"
CLAUDE_CODE_VERSION = "2.1.332"  # .ci/run installs the same
PACKAGE = f"@anthropic-ai/claude-code@{CLAUDE_CODE_VERSION}"
CONNECTED = "Connected"  # `claude mcp list` says "✔ Connected"; the mark is dropped (servers())


@pytest.fixture(scope="session")
def claude_bin() -> str:
    given = os.environ.get("TORCHTALK_TEST_CLAUDE")
    if given:
        assert os.access(given, os.X_OK), f"$TORCHTALK_TEST_CLAUDE={given} is not an executable"
        return given
    npm = shutil.which("npm")
    if npm is None:
        pytest.skip(f"npm is not installed, so the real Claude Code CLI ({PACKAGE}) cannot be installed")
    prefix = Path(os.environ.get("TORCHTALK_TEST_NPM_DIR")
                  or Path(platformdirs.user_cache_dir("torchtalk-tests")) / f"claude-code-{CLAUDE_CODE_VERSION}")
    claude = prefix / "node_modules" / ".bin" / "claude"
    if not claude.exists():
        prefix.mkdir(parents=True, exist_ok=True)
        r = subprocess.run([npm, "install", "--prefix", str(prefix), "--no-audit", "--no-fund", PACKAGE],
                           capture_output=True, text=True, timeout=900)
        if r.returncode != 0 or not claude.exists():
            tail = (r.stderr.strip().splitlines() or ["?"])[-1]
            pytest.skip(f"npm could not install {PACKAGE} (is the npm registry unreachable?): {tail}")
    return str(claude)


@pytest.fixture
def cc(claude_bin, tmp_path):
    """Runs the real `claude` with a throwaway HOME, on a PATH without `torchtalk` and with our `claude`."""
    home = tmp_path / "home"
    home.mkdir()
    bin_dir = tmp_path / "claude-bin"
    bin_dir.mkdir()
    (bin_dir / "claude").symlink_to(claude_bin)
    node_dir = os.path.dirname(shutil.which("node") or "/usr/bin/node")
    env = {**os.environ, "HOME": str(home), "PATH": os.pathsep.join([str(bin_dir), node_dir, "/usr/bin", "/bin"]),
           "DISABLE_AUTOUPDATER": "1", "DISABLE_TELEMETRY": "1"}
    env.pop("TORCHTALK_SOURCE", None)
    assert shutil.which("torchtalk", path=env["PATH"]) is None

    def run(*args: str, timeout: float = 180, check: bool = True) -> subprocess.CompletedProcess:
        r = subprocess.run([str(bin_dir / "claude"), *args], capture_output=True, text=True, env=env,
                           cwd=tmp_path, timeout=timeout, stdin=subprocess.DEVNULL)
        print(f"$ claude {' '.join(args)}  (exit {r.returncode})\n{r.stdout}{r.stderr}")
        if check:
            assert r.returncode == 0, r.stdout + r.stderr
        return r

    def torchtalk(*args: str) -> subprocess.CompletedProcess:
        r = subprocess.run([sys.executable, "-m", "torchtalk", *args], capture_output=True, text=True, env=env,
                           cwd=tmp_path, timeout=600, stdin=subprocess.DEVNULL)
        print(f"$ torchtalk {' '.join(args)}  (exit {r.returncode})\n{r.stdout}{r.stderr}")
        return r

    version = run("--version").stdout
    assert version.startswith(CLAUDE_CODE_VERSION), version
    run.torchtalk = torchtalk
    run.home = home
    return run


def servers(mcp_list: str) -> dict[str, str]:
    """`claude mcp list` lines "name: command ... - ✔ status" as {name: status without its mark}."""
    out = {}
    for line in mcp_list.splitlines():
        m = re.match(r"^(\S+): .* - (?:\W+ )?(\w.*)$", line)
        if m:
            out[m.group(1)] = m.group(2).strip()
    return out


@pytest.fixture
def source(tmp_path) -> Path:
    dest = tmp_path / "pytorch"
    shutil.copytree(FIXTURE_TREE, dest)
    return dest


def test_setup_registers_a_server_claude_code_connects_to(cc, source):
    before = cc("mcp", "list").stdout
    assert servers(before) == {} and "No MCP servers configured" in before
    r = cc.torchtalk("setup", "--source", str(source))
    assert r.returncode == 0, r.stdout + r.stderr
    assert "registered torchtalk with Claude Code (user scope)" in r.stdout
    after = cc("mcp", "list").stdout
    assert servers(after) == {"torchtalk": CONNECTED}, after
    got = cc("mcp", "get", "torchtalk").stdout
    assert re.search(r"Status: \W+ Connected", got) and f"--source {source.resolve()}" in got
    r = cc.torchtalk("doctor")
    assert r.returncode == 0 and "ok: registered with Claude Code (User config" in r.stdout, r.stdout


def _install_plugin(cc) -> dict:
    cc("plugin", "marketplace", "add", str(ROOT))
    cc("plugin", "install", "torchtalk@torchtalk")
    plugins = json.loads(cc("plugin", "list", "--json").stdout)
    return next(p for p in plugins if p["id"] == "torchtalk@torchtalk")


def test_the_plugin_installs_only_itself_and_connects_after_setup(cc, source):
    plugin = _install_plugin(cc)
    assert plugin["enabled"] and Path(plugin["readFromFolder"]) == ROOT / "plugin"
    copied = sorted(str(p.relative_to(plugin["installPath"])) for p in Path(plugin["installPath"]).rglob("*")
                    if p.is_file())
    assert copied == [".claude-plugin/icon.png", ".claude-plugin/plugin.json", "bin/torchtalk-mcp",
                      "commands/setup.md", "skills/torchtalk-analyzer/SKILL.md"], copied  # no .venv, no clone

    r = cc.torchtalk("setup", "--source", str(source))
    assert r.returncode == 0, r.stdout + r.stderr
    assert "plugin is installed and starts the server itself (plugin:torchtalk:torchtalk)" in r.stdout
    after = cc("mcp", "list").stdout
    assert servers(after) == {"plugin:torchtalk:torchtalk": CONNECTED}, after  # one server, not two
    assert cc("mcp", "get", "torchtalk", check=False).returncode != 0
    r = cc.torchtalk("doctor")
    assert r.returncode == 0, r.stdout
    assert "ok: the torchtalk@torchtalk Claude Code plugin is installed and starts the server: " in r.stdout


def test_doctor_and_setup_report_a_second_registration_besides_the_plugin(cc, source):
    assert cc.torchtalk("setup", "--source", str(source)).returncode == 0  # registered first ...
    _install_plugin(cc)  # ... then the plugin came
    listed = servers(cc("mcp", "list").stdout)
    assert listed == {"torchtalk": CONNECTED, "plugin:torchtalk:torchtalk": CONNECTED}, listed
    r = cc.torchtalk("doctor")
    assert r.returncode == 1
    assert "-> fix: `claude mcp remove torchtalk --scope user` (the plugin's server stays)" in r.stdout, r.stdout
    r = cc.torchtalk("setup")
    assert r.returncode == 1 and "fix: `claude mcp remove torchtalk --scope user`" in r.stdout, r.stdout
    cc("mcp", "remove", "torchtalk", "--scope", "user")  # the fix, as printed
    assert servers(cc("mcp", "list").stdout) == {"plugin:torchtalk:torchtalk": CONNECTED}
    assert cc.torchtalk("doctor").returncode == 0


def test_the_plugin_connects_before_a_tree_is_configured(cc):
    _install_plugin(cc)  # its launcher finds this installation in the clone's .venv (no setup has run)
    listed = servers(cc("mcp", "list").stdout)
    assert listed == {"plugin:torchtalk:torchtalk": CONNECTED}, listed


def test_the_plugin_passes_claude_codes_directory_checks(cc):
    r = cc("plugin", "validate", str(ROOT / "plugin"), "--profile", "directory")
    assert "✔ Validation passed" in r.stdout and "warning" not in r.stdout.lower(), r.stdout
    r = cc("plugin", "validate", str(ROOT))  # the marketplace
    assert "✔ Validation passed" in r.stdout
