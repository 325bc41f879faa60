"""The ``torchtalk`` command: setup, status, doctor, index, serve, fetch-source, quickstart, and one per tool."""

from __future__ import annotations

import argparse
import os
import signal
import sys
import threading

from .errors import TorchTalkError

# Exit codes (README, "Using it"); argparse itself exits 2 on a malformed command line.
EXIT_OK = 0
EXIT_PROBLEM = 1  # doctor or setup found a problem, status has no index to report on, or an internal error
EXIT_ERROR = 2  # bad arguments, no source tree, an index that cannot be built or read
EXIT_NOT_FOUND = 3  # the tool answered "not found" (the answer, with close matches, is on stdout)
EXIT_INTERRUPTED = 130  # Ctrl-C
EXIT_TERMINATED = 143  # SIGTERM

EPILOG = (f"exit codes: {EXIT_OK} answered; {EXIT_NOT_FOUND} the name asked for is not in the index (the answer "
          f"lists close matches); {EXIT_ERROR} bad arguments, no source tree, or an index that cannot be built "
          f"or read; {EXIT_PROBLEM} doctor/setup found a problem, or an internal error; {EXIT_INTERRUPTED} "
          f"interrupted (Ctrl-C); {EXIT_TERMINATED} terminated (SIGTERM).")

STATUS_HELP = ("what get_status reports, from the index as it is: nothing is built or refreshed, so it shows "
               "whether the index is stale (`get-status`, like every tool command, refreshes the index first)")
GET_STATUS_HELP = ("the get_status tool, as an agent sees it: refreshes the index first, like every tool command "
                   "(`status` reports without refreshing, so it can show that the index is stale)")


def _add_source(p: argparse.ArgumentParser) -> None:
    p.add_argument("--source", metavar="PATH", help="PyTorch source tree (default: $TORCHTALK_SOURCE, the config "
                                                    "file, or the current directory)")


def _add_codegen(p: argparse.ArgumentParser) -> None:
    p.add_argument("--no-codegen", action="store_true",
                   help="do not run the tree's own code generators (they are code from the tree being indexed); "
                        "the index then lacks the generated layer")


def _sub(sub, name: str, help: str, description: str | None = None, **kw) -> argparse.ArgumentParser:
    return sub.add_parser(name, help=help, description=description or (help[0].upper() + help[1:] + "."),
                          epilog=EPILOG, **kw)


def _metavar(prm) -> str:
    return "{" + ",".join(prm.choices) + "}" if prm.choices else prm.name.upper()


PLAIN_COMMANDS = frozenset({"index", "fetch-source", "status", "doctor"})  # their command line needs no tool


def _build_parser(command: str | None = None) -> argparse.ArgumentParser:
    """The command line; for a ``command`` of PLAIN_COMMANDS, without `view` and the tools' subcommands: importing
    the tools takes ~0.3 s, which `torchtalk index` after an edit would spend before its refresh starts."""
    from .source.fetch import DEFAULT_VERSION, KNOWN_VERSIONS
    parser = argparse.ArgumentParser(
        prog="torchtalk", epilog=EPILOG,
        description="Answers about PyTorch internals from a raw source tree: Python -> op registry -> "
                    "C++/CUDA kernels -> autograd -> tests, with file:line.")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")

    p = _sub(sub, "quickstart", "find or fetch a tree, index it with progress, and trace softmax",
             "Find the configured PyTorch tree (or fetch PyTorch 2.6.0's source into the user cache when there is "
             "none), index it with progress on stderr, and print `trace softmax`.")
    _add_source(p)

    p = _sub(sub, "setup", "find or fetch a tree, index it, check it answers, and register the server with "
                           "Claude Code (safe to re-run)",
             "Find or fetch a PyTorch tree and record it, build its index, check that get_status and trace answer, "
             "and register the MCP server with Claude Code. With the TorchTalk Claude Code plugin installed, the "
             "plugin starts the server and nothing is registered. Safe to re-run.")
    _add_source(p)
    p.add_argument("--fetch", nargs="?", const="2.6.0", default=None, metavar="VERSION",
                   help="download PyTorch VERSION's source (default 2.6.0) into the user cache and use it")
    p.add_argument("--yes", "-y", action="store_true", help="fetch PyTorch 2.6.0 without asking when no tree is found")
    p.add_argument("--scope", choices=("user", "project", "local"), default="user",
                   help="Claude Code scope: user (every project, default), local (this project, private), "
                        "project (.mcp.json in the current directory)")
    p.add_argument("--no-register", action="store_true",
                   help="do not register with Claude Code (the Claude Code plugin defines the server itself)")
    _add_codegen(p)
    p.add_argument("--check", action="store_true", help="only check the setup, like `torchtalk doctor`")

    p = _sub(sub, "status", STATUS_HELP)
    _add_source(p)
    p.add_argument("--json", action="store_true", help="print the structured result as JSON")

    p = _sub(sub, "doctor", "check Python, libraries, source tree, index (and its integrity) and the Claude Code "
                            "registration, one line each with its fix")
    _add_source(p)

    p = _sub(sub, "index", "build or refresh the index (incremental; atomic)",
             "Build the index of a PyTorch tree, or refresh it: only files whose size or mtime changed are read "
             "again. A new version is built beside the old one and renamed into place, so an interrupted run "
             "leaves the previous index in use.")
    _add_source(p)
    p.add_argument("--force", action="store_true", help="rebuild from scratch")
    _add_codegen(p)
    p.add_argument("--workers", type=int, default=None, metavar="N", help="worker processes (default: all cores)")
    p.add_argument("--progress", choices=("auto", "always", "never"), default="auto",
                   help="progress on stderr: auto (a bar on a terminal, a plain line every few seconds otherwise; "
                        "default), always (the bar), never")

    p = _sub(sub, "serve", "run the MCP server (stdio by default)",
             "Run the MCP server with every tool, read-only. It builds an index first when there is none, and "
             "keeps it fresh in the background.")
    _add_source(p)
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
    _add_codegen(p)

    p = _sub(sub, "fetch-source", "download a PyTorch release tree into the user cache and use it",
             "Download a PyTorch release's source (a shallow git clone, else Debian's source package) into the "
             "user cache, record it as the tree to use, and print its path. An existing tree is reused without "
             "network access.")
    p.add_argument("version", nargs="?", default=DEFAULT_VERSION, metavar="VERSION",
                   help=f"the release to fetch: one of {', '.join(KNOWN_VERSIONS)} (default {DEFAULT_VERSION})")
    p.add_argument("--dest", metavar="DIR", help="directory to place the tree in (default: the user cache dir)")
    if command not in PLAIN_COMMANDS:
        _add_tool_commands(sub)
    return parser


def _add_tool_commands(sub) -> None:
    """`view` and one subcommand per tool."""
    from .cli_input import FILE_PARAMS
    from .tools import FORMAT, all_tools, draws
    p = _sub(sub, "view", "open the web view: answers drawn as graphs, nodes that expand, source beside them",
             "Serve the web view on 127.0.0.1 and open it in a browser (when one can be opened; the address is "
             "printed either way): a search box, the answer's graph laid out left to right by layer (click a node "
             "to expand it with the same tools and to read the source around its path:line), and the same Markdown "
             "answer below. Runs until Ctrl-C. Everything it loads ships with TorchTalk: no network is used.")
    _add_source(p)
    p.add_argument("name", nargs="?", default="", metavar="NAME", help="a name to answer on opening (e.g. softmax)")
    p.add_argument("--tool", choices=[t.name for t in all_tools() if draws(t)], default="trace",
                   help="the tool answering NAME (default trace)")
    p.add_argument("--port", type=int, default=8766, help="port on 127.0.0.1 (default 8766; 0: any free port)")
    p.add_argument("--no-browser", action="store_true", help="only print the address; open no browser")
    _add_codegen(p)

    for tool in all_tools():
        first = tool.description.split("? ")[0] + "?"
        status_tool = tool.name == "get_status"
        p = _sub(sub, tool.name.replace("_", "-"), GET_STATUS_HELP if status_tool else first,
                 tool.description + (f" From the command line: {GET_STATUS_HELP}." if status_tool else ""),
                 aliases=[tool.name] if "_" in tool.name else [])
        _add_source(p)
        p.add_argument("--json", action="store_true", help="print the structured result as JSON")
        for i, prm in enumerate(tool.params):
            flag = f"--{prm.name.replace('_', '-')}"
            default = "" if prm.required or prm.default is None else f" (default {prm.default})"
            kwargs = {"type": prm.type, "help": prm.help + default, "metavar": _metavar(prm)}
            if (tool.name, prm.name) in FILE_PARAMS:
                p.add_argument(flag, dest=prm.name, default=None, metavar="FILE", help=FILE_PARAMS[tool.name, prm.name])
            elif i == 0 and prm.type is str:
                # The main name is positional (``torchtalk trace softmax``); the flag form works too.
                p.add_argument(prm.name, nargs="?", default=None, **kwargs)
                p.add_argument(flag, dest=f"_{prm.name}", default=None, **{**kwargs, "help": f"same as {prm.name}"})
            else:
                p.add_argument(flag, dest=prm.name, default=None if prm.required else prm.default, **kwargs)
        if draws(tool):
            p.add_argument("--mermaid", dest=FORMAT.name, action="store_const", const="mermaid",
                           help="print the answer's graph as a Mermaid diagram (same as --format mermaid)")
        p.set_defaults(tool=tool.name)


def _tree(args):
    from .source.tree import find_source
    return find_source(getattr(args, "source", None))


def _err(msg: str) -> None:
    print(msg, file=sys.stderr, flush=True)


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


QUERY_LOCK_WAIT_S = 10.0  # a query waits this long for another build (saying so), then answers; `index` waits on


def ensure_index(tree, quiet: bool = False, codegen: bool = True):
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
        _err(f"torchtalk: warning: answering from the index as it is, which may miss recent changes: {exc}")
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
            value = value if value is not None else getattr(args, f"_{prm.name}", None)
        if value is None and prm.required:
            _err(f"error: {tool.name} needs {prm.name} ({prm.help})")
            return EXIT_ERROR
        kwargs[prm.name] = prm.default if value is None else value
    file_args(tool, kwargs)
    ix = ensure_index(_tree(args))
    try:
        a = answer(tool, ix, **kwargs)
    finally:
        ix.close()
    print(to_json(tool, a) if args.json else a.text)
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
    args = parser.parse_args(argv)
    if not args.command:
        parser.print_help()
        return EXIT_ERROR
    handlers = {"index": cmd_index, "serve": cmd_serve, "view": cmd_view, "fetch-source": cmd_fetch,
                "quickstart": cmd_quickstart, "setup": cmd_setup, "status": cmd_status, "doctor": cmd_doctor}
    previous = None
    if args.command not in ("serve", "view") and threading.current_thread() is threading.main_thread():
        # serve and view leave their signals to the server; every other command cleans up and exits with one line.
        previous = signal.signal(signal.SIGINT, _on_interrupt), signal.signal(signal.SIGTERM, _on_terminate)
    try:
        return handlers.get(args.command, cmd_tool)(args)
    except TorchTalkError as exc:
        _err(f"error: {exc}")
        return EXIT_ERROR
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
        _err(f"internal error: {type(exc).__name__}: {exc} (set TORCHTALK_DEBUG=1 for a traceback)")
        return EXIT_PROBLEM
    finally:
        if previous is not None:  # main() may run inside another program (tests)
            signal.signal(signal.SIGINT, previous[0])
            signal.signal(signal.SIGTERM, previous[1])


if __name__ == "__main__":
    sys.exit(main())
