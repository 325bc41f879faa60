"""``torchtalk setup`` and ``status``: from no tree to a server Claude Code starts, and what the index holds.

Setup is safe to re-run: the index refresh is incremental, and a registration that
already matches is left alone. Status changes nothing (no index build). Registering
with Claude Code lives in ``claude``, the checks of ``torchtalk doctor`` in ``doctor``.
"""

from __future__ import annotations

import os
import shlex
import shutil
import sqlite3
import sys
from pathlib import Path

from ..errors import BadArgument, SourceError, TorchTalkError
from ..index.usable import index_problem
from ..source.tree import (
    FIX_SOURCE,
    SourceTree,
    config_path,
    find_source,
    read_config,
    save_source_in_config,
)
from ..store.integrity import reported_damage
from .claude import (
    MCP_JSON,
    installed_plugin,
    load_mcp_json,
    out,
    record_server_command,
    register,
    registrations_besides_plugin,
    server_command,
)

FETCH_SIZE_MB = 160  # a 2.6.0 tree as fetched (no third_party/), on disk
FIX_INDEX = "`torchtalk setup` (or `torchtalk index`)"
# What setup asks the fresh index before calling it usable: the two answers a new user tries first.
VERIFY_QUERIES: tuple[tuple[str, str, dict], ...] = (
    ("get_status", "get_status", {}),
    ("trace softmax", "trace", {"function_name": "softmax", "focus": "yaml"}),
)


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
    from ..source.fetch import fetch_source
    return find_source(fetch_source(version, progress=lambda msg: err(f"torchtalk: {msg}")))


def _ask_fetch(version: str) -> bool:
    from ..source.fetch import default_dest
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
    from ..source.fetch import DEFAULT_VERSION
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
    raise SourceError(f"No PyTorch source tree found{reason}. Fix: {FIX_SOURCE}.")


def record_source(tree: SourceTree) -> bool:
    """Put the tree in the config file (so a bare `torchtalk serve` finds it); False when already there."""
    if read_config().get("source") == str(tree.root):
        return False
    save_source_in_config(tree.root)
    return True


# --------------------------------------------------------------------------- the index


def verify(tree: SourceTree) -> tuple[list[str], list[str]]:
    """Ask the index what a new user asks first, in-process: (answered, problems)."""
    from ..query.results import NotFound
    from ..store.reader import Index
    from ..tools import get_tool, run
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


# --------------------------------------------------------------------------- setup


def setup(source: str | None, fetch: str | None, yes: bool, scope: str, do_register: bool, codegen: bool) -> int:
    from ..graph.resolved_build import store_resolved
    from ..index.indexer import refresh
    from ..index.progress import bar
    from ..tools import warm_server_start
    if do_register and scope == "project":
        load_mcp_json(Path.cwd() / MCP_JSON)  # a broken file stops setup before the long build, not after
    tree, how = resolve_tree(source, fetch, yes)
    recorded = record_source(tree)
    out(f"source: {tree.root} (PyTorch {tree.version}), from {how}"
        + (f"; recorded in {config_path()}" if recorded else ""))

    report = refresh(tree, codegen=codegen, show_progress=None, log=err)  # a bar only on a terminal
    warm_server_start()
    out(f"index: {report.summary()}")
    # The first session's first answers read resolved calls (Note [Resolved calls]), not only those a minute later.
    try:
        out("calls: " + store_resolved(tree.index_path, tree.root,
                                       progress=lambda items, what, unit: bar(items, what, None, unit=unit)))
    except TorchTalkError as exc:  # answers do not need it: they resolve calls as asked
        out(f"calls: not stored ({exc}); the server stores them in the background")

    ok, problems = verify(tree)
    if problems:
        out("verify: problem: " + "; ".join(problems) + f" -> fix: `torchtalk index --force --source {tree.root}`, "
            "then `torchtalk doctor`")
    else:
        out("verify: " + ", ".join(f"{label} ok" for label in ok))

    record_server_command()  # for the Claude Code plugin's launcher, which has no other way to find this install
    cmd = server_command(tree.root, codegen)
    registered = True
    if not do_register:
        out(f"Claude Code: not registered (--no-register); the server command is: {shlex.join(cmd)}")
    else:
        registered = register_once(cmd, scope)

    out()
    out("Next: restart Claude Code (or run /mcp in a session) so it starts torchtalk, then ask it to use "
        "`get_status` or to `trace softmax`.")
    out("Check at any time with `torchtalk doctor`; `torchtalk status` shows what is indexed.")
    return 0 if registered and not problems else 1


def register_once(cmd: list[str], scope: str) -> bool:
    """Register the server, unless the TorchTalk plugin is installed and enabled: it starts the server itself,
    and a registration would make Claude Code start a second one."""
    claude = shutil.which("claude")
    plugin = installed_plugin(claude=claude)
    if plugin is None or not plugin.enabled:
        if plugin is not None:
            out(f"Claude Code: the {plugin.id} plugin is installed but disabled, so the server is registered "
                "directly.")
        return register(cmd, scope)
    out(f"Claude Code: the {plugin.id} plugin is installed and starts the server itself ({plugin.server_name}); "
        "setup registers no second one. It reads the tree from the config file, where setup recorded it.")
    others = registrations_besides_plugin(claude)
    for where, fix in others:
        out(f"  problem: a second torchtalk server is registered ({where}), so Claude Code starts two -> fix: {fix}")
    return not others


# --------------------------------------------------------------------------- status


def status(source: str | None, as_json: bool) -> int:
    """What get_status reports, from the index as it is (nothing is built). No source tree or no usable index
    exits as a tool command does for them (EXIT_ERROR): status is the command a script asks first."""
    from ..cli_common import EXIT_ERROR, EXIT_OK, json_error
    from ..store.reader import Index
    from ..tools import answer, get_tool, to_json
    tool = get_tool("get_status")

    def fail(message: str) -> int:  # with --json, stdout holds the error too (Note [JSON errors])
        err(f"torchtalk: {message}")
        if as_json:
            out(json_error(message))
        return EXIT_ERROR

    try:
        tree = find_source(source)
    except SourceError as exc:
        return fail(f"no index to report on: {_first_sentence(exc)}; set one up with {FIX_SOURCE}.")
    problem = index_problem(tree)
    # A damaged index still has a status to report (get_status says it is damaged); a missing one has not.
    if problem and reported_damage(tree.index_path) is None:
        return fail(f"no usable index for {tree.root} ({problem}); build it with {FIX_INDEX}.")
    ix = Index(tree.index_path, tree.root)
    try:
        a = answer(tool, ix)
    except (TorchTalkError, sqlite3.DatabaseError) as exc:
        return fail(f"no usable index for {tree.root} ({problem or exc}); build it with {FIX_INDEX}.")
    finally:
        ix.close()
    out(to_json(tool, a) if as_json else a.text)
    return EXIT_OK
