"""The Claude Code plugin and marketplace files: manifests, launcher, slash command and skill."""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest
import yaml

import torchtalk
from torchtalk.cli import _build_parser
from torchtalk.tools import all_tools

ROOT = Path(__file__).resolve().parents[2]
PLUGIN = ROOT / "plugin"  # the plugin alone: Claude Code copies this folder, not the clone
PLUGIN_JSON = PLUGIN / ".claude-plugin" / "plugin.json"
MARKETPLACE_JSON = ROOT / ".claude-plugin" / "marketplace.json"
LAUNCHER = PLUGIN / "bin" / "torchtalk-mcp"
SETUP_MD = PLUGIN / "commands" / "setup.md"
SKILL_MD = PLUGIN / "skills" / "torchtalk-analyzer" / "SKILL.md"
KEBAB = re.compile(r"^[a-z0-9]+(-[a-z0-9]+)*$")
SH = shutil.which("sh") or "/bin/sh"


def _load(path: Path) -> dict:
    data = json.loads(path.read_text(encoding="utf-8"))
    assert isinstance(data, dict), path
    return data


def _frontmatter(path: Path) -> tuple[dict, str]:
    text = path.read_text(encoding="utf-8")
    m = re.match(r"---\n(.*?)\n---\n(.*)", text, re.DOTALL)
    assert m, f"{path} does not start with a --- YAML frontmatter block ---"
    meta = yaml.safe_load(m.group(1))
    assert isinstance(meta, dict), path
    return meta, m.group(2)


def _code(text: str) -> list[str]:
    """Fenced code blocks, and the inline code spans of the text outside them."""
    fence = r"^[ \t]*```[^\n]*\n(.*?)^[ \t]*```"
    fences = re.findall(fence, text, re.DOTALL | re.MULTILINE)
    rest = re.sub(fence, "", text, flags=re.DOTALL | re.MULTILINE)
    return fences + re.findall(r"`([^`\n]+)`", rest)


# A call such as `trace("softmax", focus="dispatch")`: a lower_snake name not preceded by `.`,
# `::` or another name character (so `torch.softmax(x)` and `at::native::add(` are not calls).
CALL = re.compile(r"(?<![\w.:>$])([a-z][a-z0-9_]*)\(([^()]*)\)?")


def _calls(text: str) -> list[tuple[str, str]]:
    """(name, argument text) of every call form in code spans, code blocks and table rows."""
    places = _code(text) + [line for line in text.splitlines() if line.lstrip().startswith("|")]
    return [(m.group(1), m.group(2)) for place in places for m in CALL.finditer(place)]


def _subcommands() -> set[str]:
    parser = _build_parser()
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            return set(action.choices)
    raise AssertionError("torchtalk's parser has no subcommands")


# `torchtalk trace`, `.venv/bin/torchtalk" setup`: the word after the program name, in code only.
SUBCOMMAND = re.compile(r"(?<![\w:@-])torchtalk\"?[ \t]+([a-z][a-z0-9_-]*)")


# ---------------------------------------------------------------------------------- manifests


def test_plugin_manifest():
    p = _load(PLUGIN_JSON)
    assert p["name"] == "torchtalk" and KEBAB.match(p["name"])
    assert p["version"] == torchtalk.__version__
    assert isinstance(p["description"], str) and p["description"].strip()
    assert isinstance(p["author"], dict) and p["author"]["name"].strip()
    assert isinstance(p["keywords"], list) and p["keywords"]
    assert all(isinstance(k, str) and k for k in p["keywords"])
    # Claude Code's plugin directory refuses a plugin without a license (LICENSE_MISSING).
    assert p["license"] == "MIT"
    assert (ROOT / "LICENSE").read_text(encoding="utf-8").startswith("MIT License\n")


def test_the_plugin_folder_holds_only_the_plugin():
    """`claude plugin install` copies the plugin's folder whole: no package, venv or caches in it."""
    files = sorted(str(p.relative_to(PLUGIN)) for p in PLUGIN.rglob("*") if p.is_file())
    assert files == [".claude-plugin/icon.png", ".claude-plugin/plugin.json", "bin/torchtalk-mcp", "commands/setup.md",
                     "skills/torchtalk-analyzer/SKILL.md"]


def test_plugin_mcp_server_is_the_launcher():
    servers = _load(PLUGIN_JSON)["mcpServers"]
    assert isinstance(servers, dict) and set(servers) == {"torchtalk"}
    server = servers["torchtalk"]
    command = server["command"]
    assert command == "${CLAUDE_PLUGIN_ROOT}/bin/torchtalk-mcp"
    assert all(isinstance(a, str) for a in server.get("args", []))
    path = Path(command.replace("${CLAUDE_PLUGIN_ROOT}", str(PLUGIN)))
    assert path.is_file(), path
    assert os.access(path, os.X_OK), f"{path} is not executable"
    assert path.read_text(encoding="utf-8").startswith("#!/bin/sh\n")


def test_marketplace_manifest():
    m = _load(MARKETPLACE_JSON)
    assert KEBAB.match(m["name"])
    assert isinstance(m["owner"], dict) and m["owner"]["name"].strip()
    plugins = m["plugins"]
    assert isinstance(plugins, list)
    entry = next(e for e in plugins if e["name"] == "torchtalk")
    assert entry["source"] == "./plugin"
    # Relative sources resolve from the marketplace root: the directory holding .claude-plugin/.
    plugin_dir = (MARKETPLACE_JSON.parent.parent / entry["source"]).resolve()
    assert plugin_dir == PLUGIN
    manifest = plugin_dir / ".claude-plugin" / "plugin.json"
    assert manifest.is_file()
    assert _load(manifest)["name"] == entry["name"]
    if "version" in entry:
        assert entry["version"] == torchtalk.__version__


# ------------------------------------------------------------------------ command and skill


def test_setup_command_frontmatter():
    meta, body = _frontmatter(SETUP_MD)
    assert isinstance(meta["description"], str) and meta["description"].strip()
    assert "--no-register" in body and "get_status()" in body
    assert 'trace("softmax", focus="dispatch")' in body


def test_skill_frontmatter():
    meta, _ = _frontmatter(SKILL_MD)
    assert meta["name"] == SKILL_MD.parent.name == "torchtalk-analyzer"
    assert KEBAB.match(meta["name"]) and len(meta["name"]) <= 64
    assert isinstance(meta["description"], str) and len(meta["description"].strip()) > 40


def test_skill_calls_only_real_tools_and_covers_all():
    _, body = _frontmatter(SKILL_MD)
    tools = {t.name: t for t in all_tools()}
    calls = _calls(body)
    assert calls
    unknown = sorted({name for name, _ in calls} - set(tools))
    assert not unknown, f"SKILL.md calls tools that do not exist: {unknown}"
    missing = sorted(set(tools) - {name for name, _ in calls})
    assert not missing, f"SKILL.md never mentions these tools in call form: {missing}"
    for name, args in calls:
        params = {p.name for p in tools[name].params}
        for kw in re.findall(r"(?<![\w.])([a-z_]\w*)\s*=", args):
            assert kw in params, f"SKILL.md: {name}(... {kw}=...) but {name} takes {sorted(params)}"


def test_setup_command_calls_only_real_tools():
    _, body = _frontmatter(SETUP_MD)
    tools = {t.name for t in all_tools()}
    # The command's shell code has other call-like forms (`print(`), so only tool-looking
    # (lower_snake with an underscore, or a tool's name) ones are checked: the verification calls.
    names = {name for name, _ in _calls(body) if name in tools or "_" in name}
    assert {"get_status", "trace"} <= names
    assert names <= tools, sorted(names - tools)


def test_skill_names_the_mcp_tool_prefixes():
    _, body = _frontmatter(SKILL_MD)
    assert "mcp__torchtalk__" in body
    plugin = _load(PLUGIN_JSON)
    server = next(iter(plugin["mcpServers"]))
    assert f"mcp__plugin_{plugin['name']}_{server}__" in body


@pytest.mark.parametrize("path", [SETUP_MD, SKILL_MD], ids=lambda p: p.name)
def test_cli_subcommands_mentioned_exist(path):
    """Every `torchtalk <subcommand>` in the docs is real (setup/status/doctor must exist too)."""
    _, body = _frontmatter(path)
    mentioned = {m.group(1) for code in _code(body) for m in SUBCOMMAND.finditer(code)}
    assert mentioned, f"{path.name} mentions no torchtalk subcommand"
    missing = sorted(mentioned - _subcommands())
    assert not missing, f"{path.name} mentions torchtalk subcommands that do not exist: {missing}"


# --------------------------------------------------------------------------------- launcher


def _bin_dir(parent: Path, **scripts: str) -> Path:
    """A new PATH directory holding only `sh` and the given scripts."""
    d = parent / "pathbin"
    d.mkdir(parents=True)
    (d / "sh").symlink_to(os.path.realpath(SH))
    for name, body in scripts.items():
        f = d / name
        f.write_text(body, encoding="utf-8")
        f.chmod(0o755)
    return d


def _fake(tag: str) -> str:
    """A program that prints a tag, its $0 and each argument on its own line."""
    return f'#!/bin/sh\nprintf "%s\\n" "{tag}" "$0"\nfor a in "$@"; do printf "%s\\n" "$a"; done\n'


def _run(launcher: Path, env: dict, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run([os.path.realpath(SH), str(launcher), *args], env=env, capture_output=True,
                          text=True, timeout=60, check=False)


def _env(tmp_path, root: Path | None, **scripts: str) -> dict:
    """A minimal environment: a private HOME and config dir, PATH with only `sh` and the given scripts."""
    env = {"PATH": str(_bin_dir(tmp_path, **scripts)), "HOME": str(tmp_path / "home"),
           "XDG_CONFIG_HOME": str(tmp_path / "config")}
    if root is not None:
        env["CLAUDE_PLUGIN_ROOT"] = str(root)
    return env


def _executable(path: Path, body: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(body, encoding="utf-8")
    path.chmod(0o755)
    return path


def _plugin_copy(tmp_path) -> Path:
    """The plugin folder as Claude Code's cache holds it: alone, without the clone around it."""
    root = tmp_path / "cache" / "torchtalk" / "torchtalk" / "0.1.0"
    shutil.copytree(PLUGIN, root)
    return root


def test_launcher_without_torchtalk_fails_on_stderr_only(tmp_path):
    root = _plugin_copy(tmp_path)
    r = _run(root / "bin" / "torchtalk-mcp", _env(tmp_path, root), "--no-codegen")
    assert r.returncode != 0
    assert r.stdout == ""
    assert "TorchTalk is not installed" in r.stderr and "/torchtalk:setup" in r.stderr
    assert "torchtalk setup" in r.stderr and "pip install" in r.stderr
    assert len(r.stderr.strip().splitlines()) == 1


def test_launcher_runs_the_command_setup_recorded(tmp_path):
    """The copied plugin finds the installation through the command `torchtalk setup` recorded, before PATH."""
    root = _plugin_copy(tmp_path)
    venv = _executable(tmp_path / "clone" / ".venv" / "bin" / "torchtalk", _fake("recorded"))
    record = tmp_path / "config" / "torchtalk" / "server-command"
    record.parent.mkdir(parents=True)
    record.write_text(f"{venv}\n", encoding="utf-8")
    env = _env(tmp_path, root, torchtalk=_fake("path"))
    r = _run(root / "bin" / "torchtalk-mcp", env, "--source", "/some tree", "--no-codegen")
    assert r.returncode == 0, r.stderr
    tag, argv0, *args = r.stdout.splitlines()
    assert tag == "recorded" and argv0 == str(venv)
    assert args == ["serve", "--source", "/some tree", "--no-codegen"]
    assert r.stderr == ""

    # `python -m torchtalk` recorded as three lines (an install without the console script).
    python = _executable(tmp_path / "py" / "python3.11", _fake("python"))
    record.write_text(f"{python}\n-m\ntorchtalk\n", encoding="utf-8")
    r = _run(root / "bin" / "torchtalk-mcp", env)
    assert r.stdout.splitlines()[2:] == ["-m", "torchtalk", "serve"]

    # A record whose program is gone (a deleted venv) is skipped: PATH is next.
    record.write_text(f"{tmp_path / 'gone' / 'torchtalk'}\n", encoding="utf-8")
    r = _run(root / "bin" / "torchtalk-mcp", env)
    assert r.returncode == 0 and r.stdout.splitlines()[0] == "path"


def test_record_written_by_setup_is_what_the_launcher_reads(tmp_path, monkeypatch):
    """record_server_command (setup, quickstart) -> the copied plugin's launcher -> this real torchtalk."""
    from torchtalk.onboard.claude import record_server_command, server_base_command, server_command_file
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "config"))
    assert record_server_command() is True and record_server_command() is False
    assert server_command_file() == tmp_path / "config" / "torchtalk" / "server-command"
    assert server_command_file().read_text().splitlines() == server_base_command()
    root = _plugin_copy(tmp_path)
    r = _run(root / "bin" / "torchtalk-mcp", _env(tmp_path, root), "--help")  # PATH has no torchtalk
    assert r.returncode == 0, r.stderr
    assert r.stdout.startswith("usage: torchtalk serve ")


def test_launcher_in_a_clone_uses_the_clone_venv(tmp_path):
    """Read from a clone (a marketplace added from a local path), the plugin folder sits in the clone."""
    clone = tmp_path / "clone"
    shutil.copytree(PLUGIN, clone / "plugin")
    fake = _executable(clone / ".venv" / "bin" / "torchtalk", _fake("venv"))
    r = _run(clone / "plugin" / "bin" / "torchtalk-mcp", _env(tmp_path, None))  # no CLAUDE_PLUGIN_ROOT either
    assert r.returncode == 0, r.stderr
    tag, argv0, *args = r.stdout.splitlines()
    assert tag == "venv" and os.path.realpath(argv0) == os.path.realpath(fake) and args == ["serve"]


def test_launcher_falls_back_to_path_then_python(tmp_path):
    root = _plugin_copy(tmp_path)
    launcher = root / "bin" / "torchtalk-mcp"
    r = _run(launcher, _env(tmp_path, root, torchtalk=_fake("path")), "--transport", "stdio")
    assert r.returncode == 0, r.stderr
    assert r.stdout.splitlines()[0] == "path" and r.stdout.splitlines()[2:] == ["serve", "--transport", "stdio"]

    # No torchtalk anywhere, but a python3 that can import it: `python3 -m torchtalk serve ...`.
    python3 = ('#!/bin/sh\n'
               'if [ "$1" = "-c" ]; then exit 0; fi\n'
               'for a in "$@"; do printf "%s\\n" "$a"; done\n')
    r = _run(launcher, _env(tmp_path / "p", root, python3=python3), "--no-codegen")
    assert r.returncode == 0, r.stderr
    assert r.stdout.splitlines() == ["-m", "torchtalk", "serve", "--no-codegen"]

    # A python3 that cannot import torchtalk is not used.
    r = _run(launcher, _env(tmp_path / "q", root, python3='#!/bin/sh\nexit 1\n'))
    assert r.returncode == 1 and r.stdout == "" and "TorchTalk is not installed" in r.stderr
