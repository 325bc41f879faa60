"""``torchtalk setup``, ``status`` and ``doctor``: from no tree to a server Claude Code starts, and checks of each step.

Setup is safe to re-run: the index refresh is incremental, and a registration that
already matches is left alone. Status and doctor change nothing (no index build).
"""

from __future__ import annotations

import importlib
import importlib.metadata
import json
import os
import re
import shlex
import shutil
import sqlite3
import subprocess
import sys
import tempfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from .errors import BadArgument, SourceError, TorchTalkError
from .source.tree import (
    SourceTree,
    config_path,
    find_source,
    read_config,
    save_source_in_config,
)

SERVER_NAME = "torchtalk"
SCOPES = ("user", "project", "local")
DEFAULT_SCOPE = "user"  # TorchTalk answers about PyTorch, not about one project: every project gets it
CLAUDE_TIMEOUT_S = 30.0
MIN_PYTHON = (3, 10)
FETCH_SIZE_MB = 160  # a 2.6.0 tree as fetched (no third_party/), on disk
MCP_JSON = ".mcp.json"
FIX_SOURCE = "`torchtalk setup --source /path/to/pytorch` or `torchtalk setup --fetch`"
FIX_INDEX = "`torchtalk setup` (or `torchtalk index`)"
# What setup asks the fresh index before calling it usable: the two answers a new user tries first.
VERIFY_QUERIES: tuple[tuple[str, str, dict], ...] = (
    ("get_status", "get_status", {}),
    ("trace softmax", "trace", {"function_name": "softmax", "focus": "yaml"}),
)


def out(msg: str = "") -> None:
    print(msg, flush=True)


def err(msg: str) -> None:
    print(msg, file=sys.stderr, flush=True)


# --------------------------------------------------------------------------- the source tree


def source_rule(explicit: str | None) -> str:
    """Which of find_source's rules picks the tree (same order), for messages."""
    if explicit:
        return "--source"
    if os.environ.get("TORCHTALK_SOURCE"):
        return "$TORCHTALK_SOURCE"
    cfg = read_config().get("source")
    if isinstance(cfg, str) and cfg:
        return f"the config file {config_path()}"
    return "the current directory"


def _first_sentence(exc: Exception) -> str:
    return str(exc).split(". ")[0].rstrip(".")


def _fetch(version: str) -> SourceTree:
    from .source.fetch import fetch_source
    return find_source(fetch_source(version, progress=err))


def _ask_fetch(version: str) -> bool:
    from .source.fetch import default_dest
    sys.stderr.write(f"No PyTorch source tree found. Fetch PyTorch {version}'s source (~{FETCH_SIZE_MB} MB) "
                     f"into {default_dest(version).parent}? [Y/n] ")
    sys.stderr.flush()
    line = sys.stdin.readline()
    if not line:  # EOF is not consent
        return False
    return line.strip().lower() in ("", "y", "yes")


def _stdin_is_tty() -> bool:
    return sys.stdin is not None and sys.stdin.isatty()


def resolve_tree(source: str | None, fetch: str | None, yes: bool) -> tuple[SourceTree, str]:
    """(tree, how it was found): --source, an explicit --fetch, the normal rules, else a fetch the user agreed to."""
    from .source.fetch import DEFAULT_VERSION
    if source and fetch:
        raise BadArgument("give --source (a tree you have) or --fetch (download one), not both")
    if fetch:
        return _fetch(fetch), "--fetch"  # reuses an already fetched tree without network access
    try:
        return find_source(source), source_rule(source)
    except SourceError as exc:
        if source:
            raise  # a path the user typed: fetching something else would hide the typo
        rule = source_rule(None)
        reason = "" if rule == "the current directory" else f" ({_first_sentence(exc)})"
    if yes or (_stdin_is_tty() and _ask_fetch(DEFAULT_VERSION)):
        return _fetch(DEFAULT_VERSION), "a fetch"
    raise SourceError(f"No PyTorch source tree found{reason}. Run `torchtalk setup --source /path/to/pytorch` to use "
                      f"a checkout you have, or `torchtalk setup --fetch` to download PyTorch {DEFAULT_VERSION}'s "
                      f"source (~{FETCH_SIZE_MB} MB).")


def record_source(tree: SourceTree) -> bool:
    """Put the tree in the config file (so a bare `torchtalk serve` finds it); False when already there."""
    if read_config().get("source") == str(tree.root):
        return False
    save_source_in_config(tree.root)
    return True


# --------------------------------------------------------------------------- the index


def index_problem(tree: SourceTree) -> str | None:
    """Why the index cannot be served as it is (the checks of server.prepare), or None. Builds nothing."""
    from .index.indexer import INDEXER_VERSION
    from .store.db import check_file, corrupt_marker, open_readonly, probe, read_meta
    path = tree.index_path
    problem = check_file(path)
    if problem == "missing":
        return "no index yet"
    if problem:
        return f"the index file is {problem}"
    marker = corrupt_marker(path)
    if marker.exists():
        return f"the index was found corrupt ({marker.read_text(errors='replace').strip()[:200]})"
    try:
        conn = open_readonly(path)
        try:
            probe(conn)
            meta = read_meta(conn)
        finally:
            conn.close()
    except (TorchTalkError, sqlite3.DatabaseError) as exc:
        return f"the index is unreadable ({exc})"
    if meta.get("indexer_version") != INDEXER_VERSION:
        return f"the index was made by indexer {meta.get('indexer_version')}, this TorchTalk needs {INDEXER_VERSION}"
    if meta.get("source_root") != str(tree.root):
        return f"the index belongs to another tree ({meta.get('source_root')})"
    return None


def verify(tree: SourceTree) -> tuple[list[str], list[str]]:
    """Ask the index what a new user asks first, in-process: (answered, problems)."""
    from .query.index import Index
    from .query.model import NotFound
    from .tools import get_tool, run
    ok: list[str] = []
    problems: list[str] = []
    ix = Index(tree.index_path, tree.root)
    try:
        for label, name, kwargs in VERIFY_QUERIES:
            try:
                result, _text = run(get_tool(name), ix, **kwargs)
            except TorchTalkError as exc:
                problems.append(f"{label}: {exc}")
                continue
            except Exception as exc:  # noqa: BLE001 - a bug: report it, setup goes on to say what else is wrong
                problems.append(f"{label}: internal error {type(exc).__name__}: {exc}")
                continue
            if isinstance(result, NotFound):
                problems.append(f"{label}: answered 'not found'")
            else:
                ok.append(label)
    finally:
        ix.close()
    return ok, problems


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


def _atomic_write(path: Path, text: str) -> None:
    # A killed setup leaves either the old file or the new one, never half of one.
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write(text)
            f.flush()
            os.fsync(f.fileno())
        if path.exists():
            shutil.copymode(path, tmp)
        else:
            os.chmod(tmp, 0o644)  # mkstemp makes 0600; .mcp.json is meant to be shared
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


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
    _atomic_write(path, json.dumps(data, indent=2) + "\n")
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


def _scope_word(label: str) -> str:
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
        other = _scope_word(where)
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


# --------------------------------------------------------------------------- setup


def setup(source: str | None, fetch: str | None, yes: bool, scope: str, do_register: bool, codegen: bool) -> int:
    from .index.indexer import refresh
    if do_register and scope == "project":
        load_mcp_json(Path.cwd() / MCP_JSON)  # a broken file stops setup before the long build, not after
    tree, how = resolve_tree(source, fetch, yes)
    recorded = record_source(tree)
    out(f"source: {tree.root} (PyTorch {tree.version}), from {how}"
        + (f"; recorded in {config_path()}" if recorded else ""))

    report = refresh(tree, codegen=codegen, show_progress=None, log=err)  # a bar only on a terminal
    out(f"index: {report.summary()}")

    ok, problems = verify(tree)
    if problems:
        out("verify: problem: " + "; ".join(problems) + f" -> fix: `torchtalk index --force --source {tree.root}`, "
            "then `torchtalk doctor`")
    else:
        out("verify: " + ", ".join(f"{label} ok" for label in ok))

    cmd = server_command(tree.root, codegen)
    registered = True
    if do_register:
        registered = register(cmd, scope)
    else:
        out(f"Claude Code: not registered (--no-register); the server command is: {shlex.join(cmd)}")

    out()
    out("Next: restart Claude Code (or run /mcp in a session) so it starts torchtalk, then ask it to use "
        "`get_status` or to `trace softmax`.")
    out("Check at any time with `torchtalk doctor`; `torchtalk status` shows what is indexed.")
    return 0 if registered and not problems else 1


# --------------------------------------------------------------------------- status


def status(source: str | None, as_json: bool) -> int:
    """What get_status reports, from the index as it is (nothing is built)."""
    from .query.index import Index
    from .tools import get_tool, run, to_json
    tool = get_tool("get_status")
    try:
        tree = find_source(source)
    except SourceError as exc:
        err(f"torchtalk: no index to report on: {_first_sentence(exc)}; set one up with {FIX_SOURCE}.")
        return 1
    problem = index_problem(tree)
    if problem:
        err(f"torchtalk: no usable index for {tree.root} ({problem}); build it with {FIX_INDEX}.")
        return 1
    ix = Index(tree.index_path, tree.root)
    try:
        result, text = run(tool, ix)
    finally:
        ix.close()
    out(to_json(tool, result) if as_json else text)
    return 0


# --------------------------------------------------------------------------- doctor


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
    from .query.index import Index
    from .query.status import status as q_status
    problem = index_problem(tree)
    if problem:
        return [Check("problem", f"index {tree.index_path}: {problem}", FIX_INDEX)]
    ix = Index(tree.index_path, tree.root)
    try:
        st = q_status(ix)
    finally:
        ix.close()
    checks = [Check("ok", f"index {tree.index_path} (built {st.built_at}) is usable")]
    if st.fresh is False:
        some = ", ".join(st.changed_files[:3]) + (" ..." if len(st.changed_files) > 3 else "")
        # Not a failure: a running server refreshes a stale index by itself.
        checks.append(Check("info", f"index is stale: {len(st.changed_files)} files changed since the build ({some})",
                            "a running server refreshes it by itself; or run `torchtalk index`"))
    else:
        checks.append(Check("ok", "index is fresh (no file changed since the build)"))
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


def check_registration(tree: SourceTree | None) -> list[Check]:
    local = Path.cwd() / MCP_JSON
    try:
        entry = mcp_json_names(local)
    except TorchTalkError as exc:
        return [Check("problem", str(exc).split(";")[0], f"fix or remove {local}")]
    claude = shutil.which("claude")
    found: list[Check] = []
    if entry is not None:
        cmd = str(entry.get("command", ""))
        if _command_missing(cmd):
            found.append(Check("problem", f"{local} names {SERVER_NAME}, but its command {cmd!r} does not exist",
                               "`torchtalk setup --scope project`"))
        else:
            args = " ".join(map(str, entry.get("args", [])))
            found.append(Check("ok", f"{local} names {SERVER_NAME}: {cmd} {args}"))
            found += _other_tree(args, tree)
    if claude is not None:
        found += _claude_registration(claude, entry is not None, tree)
    elif entry is None:
        # Without claude, ~/.claude.json cannot be asked: say how to register, without failing.
        how = (f"register with `{shlex.join(claude_add_argv(server_command(tree.root), DEFAULT_SCOPE))}`, or add "
               f"{json.dumps({SERVER_NAME: mcp_entry(server_command(tree.root))})} to \"mcpServers\" in "
               "~/.claude.json or a project's .mcp.json") if tree else "run `torchtalk setup` once a tree is found"
        found.append(Check("info", "the `claude` command is not on PATH, so the registration cannot be checked", how))
    return found


def installed_plugin(home: Path | None = None) -> Path | None:
    """The directory of an installed TorchTalk Claude Code plugin, if any (Claude Code keeps plugins under
    ~/.claude/plugins; a plugin is a directory with .claude-plugin/plugin.json naming it)."""
    base = (home or Path.home()) / ".claude" / "plugins"
    if not base.is_dir():
        return None
    for depth in range(1, 6):  # marketplaces/<m>/..., cache/<m>/<plugin>/<version>/...: shallow, bounded
        for manifest in base.glob("/".join(["*"] * depth) + "/.claude-plugin/plugin.json"):
            try:
                if json.loads(manifest.read_text(encoding="utf-8")).get("name") == SERVER_NAME:
                    return manifest.parent.parent
            except (OSError, ValueError, AttributeError):
                continue
    return None


def _other_tree(args: str, tree: SourceTree | None) -> list[Check]:
    # A registration made for another tree still works, but it answers about that tree.
    if tree is None or "--source" not in args or f"--source {tree.root}" in args:
        return []
    return [Check("info", f"the registered server uses another tree than {tree.root} ({args})",
                  "`torchtalk setup` registers this one")]


def _claude_registration(claude: str, in_mcp_json: bool, tree: SourceTree | None) -> list[Check]:
    try:
        r = run_claude(claude, ["mcp", "get", SERVER_NAME])
    except subprocess.TimeoutExpired:
        return [Check("problem", f"`claude mcp get {SERVER_NAME}` gave no answer in {CLAUDE_TIMEOUT_S:.0f} s",
                      f"run `claude mcp get {SERVER_NAME}` by hand to see why")]
    except OSError as exc:
        return [Check("problem", f"cannot run {claude}: {exc.strerror or exc}", "reinstall Claude Code")]
    if r.returncode != 0:
        if in_mcp_json:
            return []  # the project's .mcp.json registers it (claude lists those only once approved)
        plugin = installed_plugin()
        if plugin is not None:  # the plugin's own mcpServers entry starts the server
            return [Check("ok", f"the {SERVER_NAME} Claude Code plugin is installed ({plugin}); it starts the server")]
        return [Check("problem", f"{SERVER_NAME} is not registered with Claude Code",
                      "`torchtalk setup` (or `torchtalk setup --scope project` for this project only)")]
    fields = parse_mcp_get(r.stdout)
    cmd = fields.get("command", "")
    if _command_missing(cmd):
        return [Check("problem", f"{SERVER_NAME} is registered with Claude Code, but its command {cmd!r} does "
                                 "not exist", "`torchtalk setup` (it re-registers)")]
    return [Check("ok", f"registered with Claude Code ({fields.get('scope', '?')}): {cmd} {fields.get('args', '')}"),
            *_other_tree(fields.get("args", ""), tree)]


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
