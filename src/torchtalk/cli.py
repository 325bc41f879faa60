"""The ``torchtalk`` command: setup, status, doctor, index, serve, fetch-source, quickstart, and one per tool."""

from __future__ import annotations

import argparse
import os
import signal
import sys
import threading

from .cli_common import (  # noqa: F401  (the exit codes are the command's: tests and callers import them here)
    EPILOG,
    EXIT_ERROR,
    EXIT_INTERRUPTED,
    EXIT_NOT_FOUND,
    EXIT_OK,
    EXIT_PROBLEM,
    EXIT_TERMINATED,
    STATUS_HELP,
    Parser,
    add_codegen,
    add_source,
    json_error,
    subcommand,
    wants_json,
)
from .errors import IndexUnavailable, TorchTalkError

PLAIN_COMMANDS = frozenset({"index", "resolve", "fetch-source", "status", "doctor"})  # their command line needs no tool


def _build_parser(command: str | None = None) -> argparse.ArgumentParser:
    """The command line; for a ``command`` of PLAIN_COMMANDS, without `view` and the tools' subcommands: importing
    the tools takes ~0.3 s, which `torchtalk index` after an edit would spend before its refresh starts."""
    from .source.fetch import DEFAULT_VERSION, KNOWN_VERSIONS
    parser = Parser(
        prog="torchtalk", epilog=EPILOG,
        description="Answers about PyTorch internals from a raw source tree: Python -> op registry -> "
                    "C++/CUDA kernels -> autograd -> tests, with file:line.")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")

    p = subcommand(sub, "quickstart", "find or fetch a tree, index it with progress, and trace softmax",
             "Find the configured PyTorch tree (or fetch PyTorch 2.6.0's source into the user cache when there is "
             "none), index it with progress on stderr, and print `trace softmax`.")
    add_source(p)

    p = subcommand(sub, "setup", "find or fetch a tree, index it, check it answers, and register the server with "
                           "Claude Code (safe to re-run)",
             "Find or fetch a PyTorch tree and record it, build its index and store its resolved calls (`torchtalk "
             "resolve`), check that get_status and trace answer, "
             "and register the MCP server with Claude Code. With the TorchTalk Claude Code plugin installed, the "
             "plugin starts the server and nothing is registered. Safe to re-run.")
    add_source(p)
    p.add_argument("--fetch", nargs="?", const="2.6.0", default=None, metavar="VERSION",
                   help="download PyTorch VERSION's source (default 2.6.0) into the user cache and use it")
    p.add_argument("--yes", "-y", action="store_true", help="fetch PyTorch 2.6.0 without asking when no tree is found")
    p.add_argument("--scope", choices=("user", "project", "local"), default="user",
                   help="Claude Code scope: user (every project, default), local (this project, private), "
                        "project (.mcp.json in the current directory)")
    p.add_argument("--no-register", action="store_true",
                   help="do not register with Claude Code (the Claude Code plugin defines the server itself)")
    add_codegen(p)
    p.add_argument("--check", action="store_true", help="only check the setup, like `torchtalk doctor`")

    p = subcommand(sub, "status", STATUS_HELP)
    add_source(p)
    p.add_argument("--json", action="store_true", help="print the structured result as JSON")

    p = subcommand(sub, "doctor", "check Python, libraries, source tree, index (and its integrity) and the Claude Code "
                            "registration, one line each with its fix")
    add_source(p)

    p = subcommand(sub, "index", "build or refresh the index (incremental; atomic)",
             "Build the index of a PyTorch tree, or refresh it: only files whose size or mtime changed are read "
             "again. A new version is built beside the old one and renamed into place, so an interrupted run "
             "leaves the previous index in use.")
    add_source(p)
    p.add_argument("--force", action="store_true", help="rebuild from scratch")
    add_codegen(p)
    p.add_argument("--workers", type=int, default=None, metavar="N", help="worker processes (default: all cores)")
    p.add_argument("--progress", choices=("auto", "always", "never"), default="auto",
                   help="progress on stderr: auto (a bar on a terminal, a plain line every few seconds otherwise; "
                        "default), always (the bar), never")

    p = subcommand(sub, "resolve", "resolve every C++ call of the index once and store it, for fast first answers",
             "Resolve every C++ call site of the index's current build and store the result beside it "
             "(resolved.db), so that answers read each call's target instead of resolving it (Note [Resolved "
             "calls]), then each op's GPU walk, so that cuda_kernels and trace read it (Note [Stored GPU walks]). "
             "A server does this by itself in the background after it starts and after each refresh; "
             "answers are the same with or without it. Builds no index: run `torchtalk index` first.")
    add_source(p)
    p.add_argument("--force", action="store_true", help="compute it again even when it is there for this build")
    p.add_argument("--workers", type=int, default=None, metavar="N", help="worker processes (default: all cores)")
    p.add_argument("--progress", choices=("auto", "always", "never"), default="auto",
                   help="progress on stderr: auto (a bar on a terminal, a plain line every few seconds otherwise; "
                        "default), always (the bar), never")

    p = subcommand(sub, "serve", "run the MCP server (stdio by default)",
             "Run the MCP server with every tool, read-only. It builds an index first when there is none, and "
             "keeps it fresh in the background.")
    add_source(p)
    p.add_argument("--transport", choices=("stdio", "http"), default="stdio",
                   help="stdio (default: for Claude Code and other local clients) or http (streamable HTTP at "
                        "http://HOST:PORT/mcp, for a team server)")
    p.add_argument("--host", default="127.0.0.1",
                   help="address to bind for --transport http (default 127.0.0.1, this machine only)")
    p.add_argument("--allow-remote", action="store_true",
                   help="needed to bind a --host other than loopback: the server then answers anyone who can reach "
                        "that address, with no authentication")
    p.add_argument("--port", type=int, default=8765, help="port for --transport http (1..65535, default 8765)")
    p.add_argument("--workers", type=int, default=None, metavar="N",
                   help="worker processes for --transport http, 1..64 (default: $TORCHTALK_HTTP_WORKERS, else one "
                        "per core, at most 8)")
    add_codegen(p)

    p = subcommand(sub, "fetch-source", "download a PyTorch release tree into the user cache and use it",
             "Download a PyTorch release's source (a shallow git clone, else Debian's source package) into the "
             "user cache, record it as the tree to use, and print its path. An existing tree is reused without "
             "network access.")
    p.add_argument("version", nargs="?", default=DEFAULT_VERSION, metavar="VERSION",
                   help=f"the release to fetch: one of {', '.join(KNOWN_VERSIONS)} (default {DEFAULT_VERSION})")
    p.add_argument("--dest", metavar="DIR", help="directory to place the tree in (default: the user cache dir)")
    if command not in PLAIN_COMMANDS:
        from .cli_tools import add_tool_commands
        add_tool_commands(sub)
    return parser


def _tree(args):
    from .source.tree import find_source
    return find_source(getattr(args, "source", None))


def _err(msg: str) -> None:
    print(msg, file=sys.stderr, flush=True)


def _fail(args, message: str, code: int = EXIT_ERROR, prefix: str = "error: ") -> int:
    """``message`` on stderr; with --json, the JSON error on stdout too (Note [JSON errors])."""
    _err(prefix + message)
    if getattr(args, "json", False):
        print(json_error(message if prefix == "error: " else prefix + message), flush=True)
    return code


def _say(msg: str) -> None:
    """A progress message on stderr, marked as TorchTalk's like the other lines there."""
    _err(f"torchtalk: {msg}")


def cmd_index(args) -> int:
    from .index.indexer import refresh
    from .source.schema_cache import schema_cache_path
    tree = _tree(args)
    show = {"auto": None, "always": True, "never": False}[args.progress]
    report = refresh(tree, force=args.force, workers=args.workers, show_progress=show,
                     codegen=not args.no_codegen, log=_err)
    if not schema_cache_path().exists():
        from .tools import warm_server_start
        warm_server_start()
    print("\n".join([report.summary(), *(f"  skipped {s}" for s in report.skipped[:10])]))
    if len(report.skipped) > 10:
        print(f"  ... and {len(report.skipped) - 10} more (see `torchtalk get-status`)")
    return EXIT_OK


def cmd_resolve(args) -> int:
    from .graph.resolved_build import store_resolved
    from .index.progress import bar
    from .index.usable import index_problem
    if args.workers is not None and not 1 <= args.workers <= 64:
        raise IndexUnavailable(f"--workers must be 1..64, not {args.workers}")
    tree = _tree(args)
    problem = index_problem(tree)
    if problem is not None:
        raise IndexUnavailable(f"the index of {tree.root} cannot be used ({problem}); run `torchtalk index "
                               f"--source {tree.root}` first")
    show = {"auto": None, "always": True, "never": False}[args.progress]
    print(store_resolved(tree.index_path, tree.root, args.workers, args.force,
                         lambda items, what, unit: bar(items, what, show, unit=unit)))
    return EXIT_OK


QUERY_LOCK_WAIT_S = 10.0  # a query waits this long for another build (saying so), then answers; `index` waits on


def ensure_index(tree, quiet: bool = False, codegen: bool = True, stale: list[str] | None = None):
    """Refresh the index (a no-op when nothing changed) and return an Index over it.

    When the refresh cannot be made (a read-only cache, a full disk, another build holding the index for
    longer than QUERY_LOCK_WAIT_S), an index that is there still answers, with a warning on stderr naming
    why; without one, the error stands (exit 2).
    """
    from .errors import IndexUnavailable
    from .index.indexer import refresh
    from .index.usable import index_problem
    from .store.reader import Index
    log = (lambda m: None) if quiet else _err
    usable = index_problem(tree) is None
    try:
        report = refresh(tree, codegen=codegen, log=log, lock_timeout=QUERY_LOCK_WAIT_S if usable else None)
    except IndexUnavailable as exc:
        if not usable or index_problem(tree) is not None:
            raise
        warning = f"answering from the index as it is, which may miss recent changes: {exc}"
        _err(f"torchtalk: warning: {warning}")
        if stale is not None:  # --json carries it too
            stale.append(warning)
    else:
        if report.mode != "up-to-date":
            log(f"torchtalk: {report.summary()}")
    return Index(tree.index_path, tree.root)


def cmd_tool(args) -> int:
    from .cli_input import file_args
    from .query.results import NotFound
    from .tools import answer, get_tool, to_json
    tool = get_tool(args.tool)
    kwargs = {}
    for i, prm in enumerate(tool.params):
        value = getattr(args, prm.name, None)
        if i == 0 and prm.type is str:
            flag = getattr(args, f"_{prm.name}", None)
            if value is not None and flag is not None and flag != value:  # never one of two names silently
                return _fail(args, f"{tool.name} got two {prm.name}s ({value!r} and "
                                   f"--{prm.name.replace('_', '-')} {flag!r}); give one")
            value = value if value is not None else flag
        if value is None and prm.required:
            return _fail(args, f"{tool.name} needs {prm.name} ({prm.help})")
        kwargs[prm.name] = prm.default if value is None else value
    file_args(tool, kwargs)
    stale: list[str] = []
    ix = ensure_index(_tree(args), stale=stale)
    try:
        a = answer(tool, ix, **kwargs)
    finally:
        ix.close()
    print(to_json(tool, a, stale[0] if stale else "") if args.json else a.text)
    return EXIT_NOT_FOUND if isinstance(a.result, NotFound) else EXIT_OK


def cmd_fetch(args) -> int:
    from pathlib import Path

    from .source.fetch import fetch_source
    from .source.tree import save_source_in_config
    path = fetch_source(args.version, Path(args.dest) if args.dest else None, progress=_say)
    save_source_in_config(path)
    print(path)
    return EXIT_OK


def cmd_quickstart(args) -> int:
    from .errors import SourceError
    from .onboard.claude import record_server_command
    from .source.tree import find_source, save_source_in_config
    from .tools import get_tool, run, warm_server_start
    try:
        tree = find_source(args.source)
    except SourceError:
        if args.source:
            raise  # a path the user typed: fetching something else would hide the typo
        from .source.fetch import fetch_source
        _err("torchtalk: no PyTorch tree configured; fetching PyTorch 2.6.0 ...")
        path = fetch_source("2.6.0", progress=_say)
        save_source_in_config(path)
        tree = find_source(path)
    _err(f"torchtalk: source {tree.root} (PyTorch {tree.version})")
    record_server_command()
    ix = ensure_index(tree)
    warm_server_start()
    try:
        _result, text = run(get_tool("trace"), ix, function_name="softmax", focus="full")
    finally:
        ix.close()
    print(text)
    _err("\ntorchtalk: next, `torchtalk setup` registers the server with Claude Code.")
    return EXIT_OK


def cmd_setup(args) -> int:
    from .onboard.doctor import doctor
    from .onboard.flow import setup
    if args.check:
        return doctor(args.source)
    return setup(args.source, fetch=args.fetch, yes=args.yes, scope=args.scope, do_register=not args.no_register,
                 codegen=not args.no_codegen)


def cmd_status(args) -> int:
    from .onboard.flow import status
    return status(args.source, as_json=args.json)


def cmd_doctor(args) -> int:
    from .onboard.doctor import doctor
    return doctor(args.source)


def cmd_serve(args) -> int:
    from .errors import BadArgument
    from .server import serve
    from .server.http import is_loopback
    if args.transport == "http":
        if not 1 <= args.port <= 65535:
            raise BadArgument(f"--port must be from 1 to 65535, not {args.port}")
        if not is_loopback(args.host) and not args.allow_remote:
            raise BadArgument(f"--host {args.host} would expose the server beyond this machine, without "
                             "authentication; add --allow-remote to do that deliberately, or use 127.0.0.1")
    if args.workers is not None and not 1 <= args.workers <= 64:
        raise BadArgument(f"--workers must be from 1 to 64, not {args.workers}")
    return serve(args.source, transport=args.transport, host=args.host, port=args.port, codegen=not args.no_codegen,
                 workers=args.workers)


def cmd_view(args) -> int:
    from .errors import BadArgument
    from .server.view.serve import serve_view
    if not 0 <= args.port <= 65535:
        raise BadArgument(f"--port must be from 0 to 65535 (0: any free port), not {args.port}")
    return serve_view(args.source, args.port, codegen=not args.no_codegen,
                      open_browser=False if args.no_browser else None, tool=args.tool, name=args.name)


class Terminated(BaseException):
    """SIGTERM: unwinds like Ctrl-C, so a build in progress removes its temp file and stops its helpers."""


def _on_interrupt(signum, frame) -> None:
    # A second Ctrl-C must not cut the clean-up short (the pool, the generators, the temp file).
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    raise KeyboardInterrupt


def _on_terminate(signum, frame) -> None:
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    raise Terminated


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    parser = _build_parser(argv[0] if argv else None)
    Parser.json_errors = wants_json(argv)
    args = parser.parse_args(argv)
    if not args.command:
        parser.print_help()
        return EXIT_ERROR
    handlers = {"index": cmd_index, "resolve": cmd_resolve, "serve": cmd_serve, "view": cmd_view,
                "fetch-source": cmd_fetch, "quickstart": cmd_quickstart, "setup": cmd_setup, "status": cmd_status,
                "doctor": cmd_doctor}
    previous = None
    if args.command not in ("serve", "view") and threading.current_thread() is threading.main_thread():
        # serve and view leave their signals to the server; every other command cleans up and exits with one line.
        previous = signal.signal(signal.SIGINT, _on_interrupt), signal.signal(signal.SIGTERM, _on_terminate)
    try:
        return handlers.get(args.command, cmd_tool)(args)
    except TorchTalkError as exc:
        return _fail(args, str(exc))
    except KeyboardInterrupt:
        _err("torchtalk: interrupted")
        return EXIT_INTERRUPTED
    except Terminated:
        _err("torchtalk: terminated")
        return EXIT_TERMINATED
    except BrokenPipeError:
        return EXIT_OK
    except Exception as exc:  # never a traceback to the user
        if os.environ.get("TORCHTALK_DEBUG"):
            raise
        return _fail(args, f"{type(exc).__name__}: {exc} (set TORCHTALK_DEBUG=1 for a traceback)", EXIT_PROBLEM,
                     "internal error: ")
    finally:
        if previous is not None:  # main() may run inside another program (tests)
            signal.signal(signal.SIGINT, previous[0])
            signal.signal(signal.SIGTERM, previous[1])


if __name__ == "__main__":
    sys.exit(main())
