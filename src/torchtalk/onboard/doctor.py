"""``torchtalk doctor``: one check per step from Python to the Claude Code registration, each with its fix.

Kept apart from setup because it only looks (it changes nothing, builds nothing) and
holds checks setup never runs; it reuses setup's and the registration's helpers.
"""

from __future__ import annotations

import importlib
import importlib.metadata
import json
import re
import shlex
import shutil
import sqlite3
import subprocess
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from ..errors import SourceError, TorchTalkError
from ..index.usable import index_problem
from ..source.tree import FIX_SOURCE, MARKER, SourceTree, find_source
from ..store import integrity
from ..store.builds import failure_summary, reported_failure
from ..store.resolved import serving
from .claude import (
    CLAUDE_TIMEOUT_S,
    DEFAULT_SCOPE,
    MCP_JSON,
    SERVER_NAME,
    Plugin,
    claude_add_argv,
    installed_plugin,
    mcp_entry,
    mcp_json_names,
    out,
    parse_mcp_get,
    recorded_server_command,
    run_claude,
    scope_word,
    server_base_command,
    server_command,
    server_command_file,
)
from .flow import FIX_INDEX, _first_sentence, source_rule

MIN_PYTHON = (3, 10)


@dataclass
class Check:
    level: str  # "ok" | "problem" | "info" (worth knowing, not a failure)
    what: str
    fix: str = ""

    def line(self) -> str:
        if self.level == "problem":
            return f"problem: {self.what} -> fix: {self.fix}"
        return f"{self.level}: {self.what}" + (f" -> {self.fix}" if self.fix else "")


def check_python() -> list[Check]:
    v = ".".join(map(str, sys.version_info[:3]))
    if sys.version_info[:2] >= MIN_PYTHON:  # what doctor is for: an install in a Python that cannot run it
        return [Check("ok", f"Python {v} ({sys.executable})")]
    return [Check("problem", f"Python {v} is too old (TorchTalk needs {'.'.join(map(str, MIN_PYTHON))} or newer)",
                  "install TorchTalk into a Python 3.10+ environment")]


# import name -> distribution (for the reinstall hint)
LIBRARIES = {"mcp": "mcp", "tree_sitter": "tree-sitter", "tree_sitter_cpp": "tree-sitter-cpp",
             "tree_sitter_cuda": "tree-sitter-cuda", "yaml": "PyYAML"}


def _requirement(dist: str) -> str:
    # The pin TorchTalk declares, so the fix installs a version that works.
    try:
        for req in importlib.metadata.requires("torchtalk") or []:
            spec = req.split(";")[0].strip()
            if ";" not in req and re.split(r"[<>=!~\[ ]", spec)[0].lower() == dist.lower():
                return spec
    except importlib.metadata.PackageNotFoundError:
        pass
    return dist


def _pip_fix(dist: str) -> str:
    return f"{shlex.quote(sys.executable)} -m pip install --force-reinstall {shlex.quote(_requirement(dist))}"


def check_libraries() -> list[Check]:
    checks = []
    for mod, dist in LIBRARIES.items():
        try:
            m = importlib.import_module(mod)
        except Exception as exc:  # noqa: BLE001 - a broken install can raise anything on import
            checks.append(Check("problem", f"library {mod} does not import ({type(exc).__name__}: {exc})",
                                _pip_fix(dist)))
            continue
        try:
            version = importlib.metadata.version(dist)
        except importlib.metadata.PackageNotFoundError:
            version = "?"
        if mod == "yaml" and not hasattr(m, "CSafeLoader"):
            checks.append(Check("problem", f"PyYAML {version} lacks CSafeLoader (built without libyaml: "
                                           "native_functions.yaml parses several times slower)",
                                _pip_fix(dist) + " (a wheel with libyaml)"))
            continue
        checks.append(Check("ok", f"{mod} {version}" + (" with CSafeLoader" if mod == "yaml" else "")))
    checks.append(check_sqlite())
    return checks


def check_sqlite() -> Check:
    conn = sqlite3.connect(":memory:")
    try:
        conn.execute("CREATE VIRTUAL TABLE t USING fts5(x, tokenize='trigram')")
    except sqlite3.Error as exc:
        return Check("problem", f"SQLite {sqlite3.sqlite_version} lacks FTS5 with the trigram tokenizer ({exc})",
                     "use a Python whose sqlite3 has SQLite 3.34+ with FTS5 (python.org, uv and conda builds do)")
    finally:
        conn.close()
    return Check("ok", f"SQLite {sqlite3.sqlite_version} with FTS5 trigram")


def check_source(source: str | None) -> tuple[SourceTree | None, Check]:
    rule = source_rule(source)
    try:
        tree = find_source(source)
    except SourceError as exc:
        what = ("no PyTorch source tree found (no --source, $TORCHTALK_SOURCE or config file, and the current "
                "directory is not a checkout)") if rule == "the current directory" else _first_sentence(exc)
        return None, Check("problem", what, FIX_SOURCE)
    return tree, Check("ok", f"source tree {tree.root} (PyTorch {tree.version}), from {rule}")


def check_index(tree: SourceTree) -> list[Check]:
    from ..query.status import status as q_status
    from ..store.reader import Index
    problem = index_problem(tree)
    if problem:
        return [Check("problem", f"index {tree.index_path}: {problem}", FIX_INDEX)]
    ix = Index(tree.index_path, tree.root)
    try:
        st = q_status(ix)
        stored = serving(tree.index_path, ix.meta.get("build_id")) is not None
    finally:
        ix.close()
    checks = [Check("ok", f"index {tree.index_path} (built {st.built_at}) is usable")]
    failed = reported_failure(tree.index_path)
    if failed:  # the index answers, but from before the changes the failing builds would have added
        checks.append(Check("problem", f"refreshing the index fails: {failure_summary(failed)}",
                            f"fix what the error names (free space under {tree.index_path.parent}, or set "
                            "TORCHTALK_CACHE_DIR to a directory with room), then run `torchtalk index`"))
    generated = st.readiness.get("generated code", "")
    if generated and not generated.startswith("ready"):
        checks.append(Check("info", f"generated code: {generated}"))
    # Queries notice damage only on the pages they read: SQLite's own check reads them all (~1 s).
    whole = integrity.check_and_mark(tree.index_path)
    if whole.ok is False:
        checks.append(Check("problem", f"the index is damaged: SQLite's integrity check says {whole.detail}",
                            "`torchtalk index --force` (a running server rebuilds it by itself)"))
    elif whole.ok is None:
        checks.append(Check("info", f"the index's integrity was not checked: {whole.detail}"))
    else:
        checks.append(Check("ok", f"SQLite's integrity check passed ({whole.seconds:.1f}s)"))
    if st.fresh is False:
        some = ", ".join(st.changed_files[:3]) + (" ..." if len(st.changed_files) > 3 else "")
        # Not a failure: a running server refreshes a stale index by itself.
        checks.append(Check("info", f"index is stale: {len(st.changed_files)} files changed since the build ({some})",
                            "a running server refreshes it by itself; or run `torchtalk index`"))
    else:
        checks.append(Check("ok", "index is fresh (no file changed since the build)"))
    if stored:
        checks.append(Check("ok", f"resolved calls {st.resolved_calls.split(':')[0]}"))
    else:  # not a failure: answers resolve calls as asked, the same answers
        checks.append(Check("info", f"resolved calls {st.resolved_calls}"))
    return checks


def _runs(cmd: list[str]) -> str | None:
    """Why ``cmd --help`` does not run, or None."""
    try:
        r = subprocess.run([*cmd, "--help"], check=False, capture_output=True, text=True, errors="replace", timeout=60,
                           stdin=subprocess.DEVNULL)
    except subprocess.TimeoutExpired:
        return "`--help` did not finish in 60 s"
    except OSError as exc:
        return exc.strerror or str(exc)
    if r.returncode != 0:
        tail = r.stderr.strip().splitlines()
        return f"`--help` exited {r.returncode}" + (f": {tail[-1]}" if tail else "")
    return None


def check_command() -> Check:
    base = server_base_command()
    why = _runs(base)
    if why:
        return Check("problem", f"the server command {shlex.join(base)} does not run ({why})",
                     _pip_fix("torchtalk"))
    return Check("ok", f"server command {shlex.join(base)} runs")


def _command_missing(command: str) -> bool:
    return not command or shutil.which(command) is None


def _source_arg(args: str) -> str | None:
    parts = args.split()
    return parts[parts.index("--source") + 1] if "--source" in parts[:-1] else None


def check_registration(tree: SourceTree | None) -> list[Check]:
    """How Claude Code starts the server: the plugin, `claude mcp add`, a project's .mcp.json; exactly one
    of them should, with a command that exists and the tree that is configured."""
    local = Path.cwd() / MCP_JSON
    try:
        entry = mcp_json_names(local)
    except TorchTalkError as exc:
        return [Check("problem", str(exc).split(";")[0], f"fix or remove {local}")]
    claude = shutil.which("claude")
    plugin = installed_plugin(claude=claude)
    found: list[Check] = []
    if plugin is not None:
        found += check_plugin(plugin)
    if entry is not None:
        cmd = str(entry.get("command", ""))
        args = " ".join(map(str, entry.get("args", [])))
        if plugin is not None and plugin.enabled:
            found.append(Check("problem", f"{local} registers a second {SERVER_NAME} server besides the plugin's "
                                          f"({cmd} {args}), so Claude Code starts two",
                               f'remove "{SERVER_NAME}" from the "mcpServers" of {local}'))
        elif _command_missing(cmd):
            found.append(Check("problem", f"{local} names {SERVER_NAME}, but its command {cmd!r} does not exist "
                                          "(a stale registration)", "`torchtalk setup --scope project`"))
        else:
            found.append(Check("ok", f"{local} names {SERVER_NAME}: {cmd} {args}"))
            found += _tree_of(args, tree, "`torchtalk setup --scope project`")
    if claude is not None:
        found += _claude_registration(claude, entry is not None, plugin, tree)
    elif entry is None and (plugin is None or not plugin.enabled):
        # Without claude, ~/.claude.json cannot be asked: say how to register, without failing.
        how = (f"register with `{shlex.join(claude_add_argv(server_command(tree.root), DEFAULT_SCOPE))}`, or add "
               f"{json.dumps({SERVER_NAME: mcp_entry(server_command(tree.root))})} to \"mcpServers\" in "
               "~/.claude.json or a project's .mcp.json") if tree else "run `torchtalk setup` once a tree is found"
        found.append(Check("info", "the `claude` command is not on PATH, so the registration cannot be checked", how))
    return found


def check_plugin(plugin: Plugin) -> list[Check]:
    """The plugin's server (bin/torchtalk-mcp) must find TorchTalk: as the launcher does, the recorded
    command, the clone's virtualenv, then PATH."""
    if not plugin.enabled:
        return [Check("info", f"the {plugin.id} Claude Code plugin is installed but disabled",
                      f"`claude plugin enable {plugin.id}` to use it (then `torchtalk doctor` again)")]
    recorded = recorded_server_command()
    if recorded:
        if _command_missing(recorded[0]) and not Path(recorded[0]).is_file():
            return [Check("problem", f"the {plugin.id} plugin's server would run {recorded[0]}, recorded in "
                                     f"{server_command_file()}, which no longer exists (a stale record)",
                          "`torchtalk setup` from the TorchTalk installation to use (it records its own command)")]
        return [Check("ok", f"the {plugin.id} Claude Code plugin is installed and starts the server: "
                            f"{shlex.join(recorded)} serve")]
    clone_venv = Path(plugin.path).parent / ".venv" / "bin" / "torchtalk"
    if plugin.path and clone_venv.is_file():
        return [Check("ok", f"the {plugin.id} Claude Code plugin is installed and starts the server: "
                            f"{clone_venv} serve")]
    on_path = shutil.which("torchtalk")
    if on_path:
        return [Check("ok", f"the {plugin.id} Claude Code plugin is installed and starts the server: "
                            f"{on_path} serve (torchtalk on PATH)")]
    return [Check("problem", f"the {plugin.id} Claude Code plugin is installed, but its server cannot find "
                             "TorchTalk (no command recorded by `torchtalk setup`, no torchtalk on PATH)",
                  "`torchtalk setup` (it records how to start this installation)")]


def _tree_of(args: str, tree: SourceTree | None, fix: str) -> list[Check]:
    # A registration names its tree with --source: gone is stale; another one answers about that tree.
    source = _source_arg(args)
    if source is None:
        return []
    if not (Path(source) / MARKER).is_file():
        return [Check("problem", f"the registered server's tree {source} is not a PyTorch tree any more "
                                 "(a stale registration)", fix)]
    if tree is not None and Path(source).resolve() != tree.root:
        return [Check("info", f"the registered server uses another tree than {tree.root} ({source})", fix)]
    return []


def _claude_registration(claude: str, in_mcp_json: bool, plugin: Plugin | None,
                         tree: SourceTree | None) -> list[Check]:
    try:
        r = run_claude(claude, ["mcp", "get", SERVER_NAME])
    except subprocess.TimeoutExpired:
        return [Check("problem", f"`claude mcp get {SERVER_NAME}` gave no answer in {CLAUDE_TIMEOUT_S:.0f} s",
                      f"run `claude mcp get {SERVER_NAME}` by hand to see why")]
    except OSError as exc:
        return [Check("problem", f"cannot run {claude}: {exc.strerror or exc}", "reinstall Claude Code")]
    if r.returncode != 0:
        if in_mcp_json or (plugin is not None and plugin.enabled):
            return []  # the project's .mcp.json or the plugin starts it (claude lists .mcp.json once approved)
        return [Check("problem", f"{SERVER_NAME} is not registered with Claude Code",
                      "`torchtalk setup` (or `torchtalk setup --scope project` for this project only)")]
    fields = parse_mcp_get(r.stdout)
    cmd, args = fields.get("command", ""), fields.get("args", "")
    scope = scope_word(fields.get("scope", "")) or DEFAULT_SCOPE
    if scope == "project" and in_mcp_json:
        return []  # the .mcp.json entry, checked above
    if plugin is not None and plugin.enabled:
        return [Check("problem", f"a second {SERVER_NAME} server is registered besides the plugin's ({scope} scope: "
                                 f"{cmd} {args}), so Claude Code starts two",
                      f"`claude mcp remove {SERVER_NAME} --scope {scope}` (the plugin's server stays)")]
    if _command_missing(cmd):
        return [Check("problem", f"{SERVER_NAME} is registered with Claude Code, but its command {cmd!r} does "
                                 "not exist (a stale registration)", "`torchtalk setup` (it re-registers)")]
    return [Check("ok", f"registered with Claude Code ({fields.get('scope', '?')}): {cmd} {args}"),
            *_tree_of(args, tree, "`torchtalk setup` (it re-registers)")]


def _guarded(name: str, fn: Callable[[], list[Check]]) -> list[Check]:
    try:
        return fn()
    except Exception as exc:  # noqa: BLE001 - doctor must report, never crash
        return [Check("problem", f"the {name} check failed ({type(exc).__name__}: {exc})",
                      "run again with TORCHTALK_DEBUG=1 and report it")]


def doctor(source: str | None) -> int:
    """One line per check; 0 when nothing is a problem. Changes nothing."""
    checks = _guarded("Python", check_python) + _guarded("library", check_libraries)
    found: list[SourceTree | None] = [None]

    def source_check() -> list[Check]:
        found[0], check = check_source(source)
        return [check]

    checks += _guarded("source", source_check)
    tree = found[0]
    if tree is not None:
        checks += _guarded("index", lambda: check_index(tree))
    else:
        checks.append(Check("info", "index not checked (it needs a source tree)"))
    checks += _guarded("command", lambda: [check_command()])
    checks += _guarded("registration", lambda: check_registration(tree))
    for c in checks:
        out(c.line())
    problems = sum(c.level == "problem" for c in checks)
    out(f"{problems} problem{'s' if problems != 1 else ''} found." if problems else "All checks passed.")
    return 1 if problems else 0
