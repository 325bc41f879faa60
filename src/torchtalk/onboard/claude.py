"""Registering the server with Claude Code: the command it runs, a project's .mcp.json, and the `claude mcp` CLI.

Kept apart from setup and doctor (which both use it) because it is about Claude Code's files and
command, not about the PyTorch tree or the index; it imports neither of them.
"""

from __future__ import annotations

import json
import os
import shlex
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

from ..atomic import write_text_atomic
from ..errors import TorchTalkError
from ..source.tree import config_path

SERVER_NAME = "torchtalk"
SCOPES = ("user", "project", "local")
DEFAULT_SCOPE = "user"  # TorchTalk answers about PyTorch, not about one project: every project gets it
CLAUDE_TIMEOUT_S = 30.0
MCP_JSON = ".mcp.json"


def out(msg: str = "") -> None:
    print(msg, flush=True)


# --------------------------------------------------------------------------- what Claude Code runs


def server_base_command() -> list[str]:
    """How to start torchtalk without this venv activated: absolute paths only."""
    python = Path(os.path.abspath(sys.executable))  # not resolve(): a venv's python is a symlink out of the venv
    script = python.parent / ("torchtalk.exe" if os.name == "nt" else "torchtalk")
    if script.is_file() and os.access(script, os.X_OK):
        return [str(script)]
    return [str(python), "-m", "torchtalk"]


def server_command(root: Path, codegen: bool = True) -> list[str]:
    return [*server_base_command(), "serve", "--source", str(root), *([] if codegen else ["--no-codegen"])]


def mcp_entry(cmd: list[str]) -> dict:
    return {"type": "stdio", "command": cmd[0], "args": cmd[1:], "env": {}}


def claude_add_argv(cmd: list[str], scope: str) -> list[str]:
    return ["claude", "mcp", "add", "--transport", "stdio", SERVER_NAME, "--scope", scope, "--", *cmd]


def print_manual(cmd: list[str], scope: str) -> None:
    """The registration by hand: both ways, ready to paste."""
    cli_scope = scope if scope in ("user", "local") else DEFAULT_SCOPE
    out("Register it by hand with Claude Code's command:")
    out("  " + shlex.join(claude_add_argv(cmd, cli_scope)))
    out('or add this server to the "mcpServers" of ~/.claude.json (every project) or of a project\'s '
        ".mcp.json (that project):")
    out(json.dumps({"mcpServers": {SERVER_NAME: mcp_entry(cmd)}}, indent=2))


# --------------------------------------------------------------------------- .mcp.json (project scope)


def load_mcp_json(path: Path) -> dict:
    """An existing .mcp.json ({} when absent); TorchTalkError naming the file when it cannot be merged into."""
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return {}
    except OSError as exc:
        raise TorchTalkError(f"cannot read {path}: {exc.strerror or exc}") from None
    try:
        data = json.loads(text)
    except ValueError as exc:
        raise TorchTalkError(f"{path} is not valid JSON ({exc}); it was left unchanged: fix or remove it, then run "
                             "`torchtalk setup --scope project` again") from None
    if not isinstance(data, dict) or not isinstance(data.get("mcpServers", {}), dict):
        raise TorchTalkError(f'{path} is not a JSON object with an "mcpServers" object; it was left unchanged: '
                             "fix or remove it, then run `torchtalk setup --scope project` again")
    return data


def write_mcp_json(path: Path, cmd: list[str]) -> bool:
    """Add or update torchtalk in ``path``, keeping other servers and keys; False when it already matched."""
    data = load_mcp_json(path)
    servers = data.setdefault("mcpServers", {})
    old = servers.get(SERVER_NAME)
    # Keep what the user added to our entry (env, ...); set what setup owns.
    entry = {**(old if isinstance(old, dict) else {}), **{k: v for k, v in mcp_entry(cmd).items() if k != "env"}}
    entry.setdefault("env", {})
    if old == entry:
        return False
    servers[SERVER_NAME] = entry
    write_text_atomic(path, json.dumps(data, indent=2) + "\n")  # a killed setup leaves the old file
    return True


def mcp_json_names(path: Path) -> dict | None:
    """torchtalk's entry in an .mcp.json, or None (TorchTalkError when the file is broken)."""
    entry = load_mcp_json(path).get("mcpServers", {}).get(SERVER_NAME)
    return entry if isinstance(entry, dict) else None


# --------------------------------------------------------------------------- the claude CLI


def run_claude(claude: str, args: list[str]) -> subprocess.CompletedProcess:
    return subprocess.run([claude, *args], check=False, capture_output=True, text=True, encoding="utf-8",
                          errors="replace", timeout=CLAUDE_TIMEOUT_S, stdin=subprocess.DEVNULL)


def parse_mcp_get(text: str) -> dict[str, str]:
    """The "  Key: value" lines of `claude mcp get` (scope, type, command, args, ...), keys lower-case."""
    fields = {}
    for line in text.splitlines():
        key, sep, value = line.strip().partition(": ")
        if sep and key and " " not in key.strip():
            fields.setdefault(key.strip().lower(), value.strip())
        elif line.strip().endswith(":") and line.startswith("  "):
            fields.setdefault(line.strip()[:-1].lower(), "")  # "  Args:" with nothing after it
    return fields


def scope_word(label: str) -> str:
    # `claude mcp get` says e.g. "User config (available in all your projects)".
    word = label.split()[0].lower() if label else ""
    return word if word in SCOPES else ""


def same_command(fields: dict[str, str], cmd: list[str]) -> bool:
    return fields.get("command") == cmd[0] and fields.get("args", "") == " ".join(cmd[1:])


def _claude_step(claude: str, args: list[str]) -> tuple[bool, str]:
    """Run one claude command, shown first; (succeeded, why not)."""
    out("  $ " + shlex.join(["claude", *args]))
    try:
        r = run_claude(claude, args)
    except subprocess.TimeoutExpired:
        return False, f"no answer in {CLAUDE_TIMEOUT_S:.0f} s"
    except OSError as exc:
        return False, f"could not run {claude}: {exc.strerror or exc}"
    if r.returncode != 0:
        detail = (r.stderr.strip() or r.stdout.strip()).splitlines()
        return False, f"exit {r.returncode}" + (f": {detail[-1]}" if detail else "")
    return True, ""


def register_with_claude(claude: str, cmd: list[str], scope: str) -> bool:
    """Register through `claude mcp` (idempotent); False, with the manual way printed, when claude fails."""
    try:
        got = run_claude(claude, ["mcp", "get", SERVER_NAME])
    except (subprocess.TimeoutExpired, OSError) as exc:
        why = f"no answer in {CLAUDE_TIMEOUT_S:.0f} s" if isinstance(exc, subprocess.TimeoutExpired) else str(exc)
        return _claude_failed(f"`claude mcp get {SERVER_NAME}` failed ({why})", cmd, scope)
    if got.returncode == 0:
        fields = parse_mcp_get(got.stdout)
        where = fields.get("scope", "?")
        if same_command(fields, cmd):
            out(f"Claude Code: {SERVER_NAME} is already registered ({where}) with this command; nothing to change.")
            return True
        out(f"Claude Code: {SERVER_NAME} is registered ({where}) as `{fields.get('command', '?')} "
            f"{fields.get('args', '')}`; replacing it.")
        other = scope_word(where)
        if other and other != scope:
            out(f"  note: that registration is in the {other} scope; it stays, and Claude Code uses the most "
                f"specific one (local, then project, then user). Remove it with "
                f"`claude mcp remove {SERVER_NAME} --scope {other}` if it is stale.")
        ok, why = _claude_step(claude, ["mcp", "remove", SERVER_NAME, "--scope", scope])
        if not ok:
            out(f"  (remove: {why}; adding anyway)")
    else:
        out(f"Claude Code: registering {SERVER_NAME} ({scope} scope):")
    ok, why = _claude_step(claude, claude_add_argv(cmd, scope)[1:])
    if not ok:
        return _claude_failed(f"`claude mcp add` failed ({why})", cmd, scope)
    out(f"  registered {SERVER_NAME} with Claude Code ({scope} scope).")
    return True


def _claude_failed(what: str, cmd: list[str], scope: str) -> bool:
    out(f"problem: {what}.")
    print_manual(cmd, scope)
    return False


def register(cmd: list[str], scope: str) -> bool:
    """Register the server for Claude Code in ``scope``; False when that failed (the manual way is printed)."""
    if scope == "project":
        path = Path.cwd() / MCP_JSON
        changed = write_mcp_json(path, cmd)
        out(f"Claude Code: {'wrote' if changed else 'already up to date:'} {path} (server {SERVER_NAME}, "
            "project scope; Claude Code asks once before using a project's servers).")
        return True
    claude = shutil.which("claude")
    if claude is None:
        out("Claude Code: the `claude` command is not on PATH, so nothing was registered.")
        print_manual(cmd, scope)
        return True  # nothing failed: the user has what to paste
    return register_with_claude(claude, cmd, scope)


@dataclass(frozen=True)
class Plugin:
    """The TorchTalk Claude Code plugin as Claude Code knows it."""

    id: str  # torchtalk@<marketplace>
    path: str  # where Claude Code reads it from
    enabled: bool

    @property
    def server_name(self) -> str:
        return f"plugin:{SERVER_NAME}:{SERVER_NAME}"  # as `claude mcp list` names the plugin's server


def _is_ours(plugin_id: object) -> bool:
    return isinstance(plugin_id, str) and plugin_id.split("@", 1)[0] == SERVER_NAME


def installed_plugin(home: Path | None = None, claude: str | None = None) -> Plugin | None:
    """The TorchTalk plugin if Claude Code has it installed (enabled or not), else None.

    Asks `claude plugin list --json` when ``claude`` is given; otherwise (or when that fails) reads Claude
    Code's own records: ~/.claude/plugins/installed_plugins.json and the enabledPlugins of
    ~/.claude/settings.json. A copy left in the plugin cache after an uninstall does not count.
    """
    if claude is not None:
        try:
            r = run_claude(claude, ["plugin", "list", "--json"])
            entries = json.loads(r.stdout) if r.returncode == 0 else None
        except (subprocess.TimeoutExpired, OSError, ValueError):
            entries = None
        if isinstance(entries, list):
            for e in entries:
                if isinstance(e, dict) and _is_ours(e.get("id")):
                    return Plugin(e["id"], str(e.get("readFromFolder") or e.get("installPath") or ""),
                                  bool(e.get("enabled", True)))
            return None
    base = (home or Path.home()) / ".claude"
    try:
        installed = json.loads((base / "plugins" / "installed_plugins.json").read_text(encoding="utf-8"))
        records = installed.get("plugins", {})
    except (OSError, ValueError, AttributeError):
        return None
    try:
        enabled = json.loads((base / "settings.json").read_text(encoding="utf-8")).get("enabledPlugins", {})
    except (OSError, ValueError, AttributeError):
        enabled = {}
    for plugin_id, installs in (records.items() if isinstance(records, dict) else []):
        if _is_ours(plugin_id) and installs:
            first = installs[0] if isinstance(installs, list) and isinstance(installs[0], dict) else {}
            return Plugin(plugin_id, str(first.get("installPath", "")),
                          enabled.get(plugin_id, True) is not False if isinstance(enabled, dict) else True)
    return None


def registrations_besides_plugin(claude: str | None) -> list[tuple[str, str]]:
    """Registrations of a server named torchtalk made apart from the plugin (`claude mcp add`, .mcp.json):
    (where, the fix that removes it). With the plugin enabled, each is a second server."""
    found: list[tuple[str, str]] = []
    project_reported = False
    if claude is not None:
        try:
            r = run_claude(claude, ["mcp", "get", SERVER_NAME])
        except (subprocess.TimeoutExpired, OSError):
            r = None
        if r is not None and r.returncode == 0:
            fields = parse_mcp_get(r.stdout)
            scope = scope_word(fields.get("scope", "")) or DEFAULT_SCOPE
            where = f"{scope} scope: {fields.get('command', '?')} {fields.get('args', '')}".rstrip()
            if scope == "project":
                project_reported = True
                found.append((where, f'remove "{SERVER_NAME}" from the "mcpServers" of {Path.cwd() / MCP_JSON}'))
            else:
                found.append((where, f"`claude mcp remove {SERVER_NAME} --scope {scope}`"))
    if not project_reported:
        path = Path.cwd() / MCP_JSON
        try:
            entry = mcp_json_names(path)
        except TorchTalkError:
            entry = None
        if entry is not None:
            found.append((f"{path}", f'remove "{SERVER_NAME}" from the "mcpServers" of {path}'))
    return found


# --------------------------------------------------------------------------- the command the plugin runs


def server_command_file() -> Path:
    """Where setup records how to start TorchTalk, for the plugin's launcher (bin/torchtalk-mcp): the plugin
    is copied without the clone it came from, so it cannot find the clone's virtualenv by itself."""
    return config_path().parent / "server-command"


def record_server_command() -> bool:
    """Record this installation's command for the plugin's launcher (one argv element per line); False when
    it was already recorded. Never fails: the plugin then falls back to `torchtalk` on PATH."""
    text = "\n".join(server_base_command()) + "\n"
    path = server_command_file()
    try:
        if path.read_text(encoding="utf-8") == text:
            return False
    except OSError:
        pass
    try:
        write_text_atomic(path, text)
    except OSError:
        return False
    return True


def recorded_server_command() -> list[str] | None:
    """The recorded command (see record_server_command), or None."""
    try:
        lines = [ln for ln in server_command_file().read_text(encoding="utf-8").splitlines() if ln]
    except OSError:
        return None
    return lines or None
