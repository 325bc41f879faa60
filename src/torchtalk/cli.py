"""The ``torchtalk`` command: setup, status, doctor, index, serve, fetch-source, quickstart, and one per tool."""

from __future__ import annotations

import argparse
import os
import sys

from .errors import TorchTalkError


def _add_source(p: argparse.ArgumentParser) -> None:
    p.add_argument("--source", metavar="PATH", help="PyTorch source tree (default: $TORCHTALK_SOURCE, the config "
                                                    "file, or the current directory)")


def _build_parser() -> argparse.ArgumentParser:
    from .tools import all_tools

    parser = argparse.ArgumentParser(
        prog="torchtalk",
        description="Answers about PyTorch internals from a raw source tree: Python -> op registry -> "
                    "C++/CUDA kernels -> autograd -> tests, with file:line.")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")

    p = sub.add_parser("index", help="build or refresh the index (incremental; atomic)")
    _add_source(p)
    p.add_argument("--force", action="store_true", help="rebuild from scratch")
    p.add_argument("--no-codegen", action="store_true",
                   help="do not run the tree's own code generators (they are code from the tree being indexed)")
    p.add_argument("--workers", type=int, default=None, help="worker processes (default: all cores)")
    p.add_argument("--progress", choices=("auto", "always", "never"), default="auto")

    p = sub.add_parser("serve", help="run the MCP server (stdio by default)")
    _add_source(p)
    p.add_argument("--transport", choices=("stdio", "http"), default="stdio")
    p.add_argument("--host", default="127.0.0.1",
                   help="address to bind for --transport http (default 127.0.0.1, this machine only)")
    p.add_argument("--allow-remote", action="store_true",
                   help="needed to bind a --host other than loopback: the server then answers anyone who can reach "
                        "that address, with no authentication")
    p.add_argument("--port", type=int, default=8765, help="port for --transport http (1..65535)")
    p.add_argument("--no-codegen", action="store_true", help="index without running the tree's code generators")

    p = sub.add_parser("fetch-source", help="download a PyTorch release tree into the user cache and use it")
    p.add_argument("version", nargs="?", default="2.6.0")
    p.add_argument("--dest", help="directory to place the tree in (default: the user cache dir)")

    p = sub.add_parser("quickstart", help="find or fetch a tree, index it with progress, and trace softmax")
    _add_source(p)

    p = sub.add_parser("setup", help="find or fetch a tree, index it, check it answers, and register the server "
                                     "with Claude Code (safe to re-run)")
    _add_source(p)
    p.add_argument("--fetch", nargs="?", const="2.6.0", default=None, metavar="VERSION",
                   help="download PyTorch VERSION's source (default 2.6.0) into the user cache and use it")
    p.add_argument("--yes", "-y", action="store_true", help="fetch PyTorch 2.6.0 without asking when no tree is found")
    p.add_argument("--scope", choices=("user", "project", "local"), default="user",
                   help="Claude Code scope: user (every project, default), local (this project, private), "
                        "project (.mcp.json in the current directory)")
    p.add_argument("--no-register", action="store_true",
                   help="do not register with Claude Code (the Claude Code plugin defines the server itself)")
    p.add_argument("--no-codegen", action="store_true", help="index without running the tree's code generators")
    p.add_argument("--check", action="store_true", help="only check the setup, like `torchtalk doctor`")

    p = sub.add_parser("status", help="what get_status reports, without building or refreshing the index")
    _add_source(p)
    p.add_argument("--json", action="store_true", help="print the structured result as JSON")

    p = sub.add_parser("doctor", help="check Python, libraries, source tree, index and Claude Code registration")
    _add_source(p)

    for tool in all_tools():
        p = sub.add_parser(tool.name.replace("_", "-"), aliases=[tool.name] if "_" in tool.name else [],
                           help=tool.description.split("? ")[0] + "?")
        _add_source(p)
        p.add_argument("--json", action="store_true", help="print the structured result as JSON")
        for i, prm in enumerate(tool.params):
            flag = f"--{prm.name.replace('_', '-')}"
            kwargs = {"type": prm.type, "help": prm.help}
            if i == 0 and prm.type is str:
                # The main name is positional (``torchtalk trace softmax``); the flag form works too.
                p.add_argument(prm.name, nargs="?", default=None, **kwargs)
                p.add_argument(flag, dest=f"_{prm.name}", default=None, **kwargs)
            else:
                p.add_argument(flag, dest=prm.name, default=None if prm.required else prm.default, **kwargs)
        p.set_defaults(tool=tool.name)
    return parser


def _tree(args):
    from .source.tree import find_source
    return find_source(getattr(args, "source", None))


def cmd_index(args) -> int:
    from .index.indexer import refresh
    from .tools import warm_server_start
    tree = _tree(args)
    show = {"auto": None, "always": True, "never": False}[args.progress]
    report = refresh(tree, force=args.force, workers=args.workers, show_progress=show,
                     codegen=not args.no_codegen, log=lambda m: print(m, file=sys.stderr))
    warm_server_start()
    print(report.summary())
    for s in report.skipped[:10]:
        print(f"  skipped {s}")
    if len(report.skipped) > 10:
        print(f"  ... and {len(report.skipped) - 10} more (see `torchtalk get-status`)")
    return 0


def ensure_index(tree, quiet: bool = False, codegen: bool = True):
    """Refresh the index (a no-op when nothing changed) and return an Index over it."""
    from .index.indexer import refresh
    from .store.reader import Index
    refresh(tree, codegen=codegen, log=(lambda m: None) if quiet else (lambda m: print(m, file=sys.stderr)))
    return Index(tree.index_path, tree.root)


def cmd_tool(args) -> int:
    from .tools import answer, get_tool, to_json
    tool = get_tool(args.tool)
    kwargs = {}
    for i, prm in enumerate(tool.params):
        value = getattr(args, prm.name, None)
        if i == 0 and prm.type is str:
            value = value if value is not None else getattr(args, f"_{prm.name}", None)
        if value is None and prm.required:
            print(f"error: {tool.name} needs {prm.name} ({prm.help})", file=sys.stderr)
            return 2
        kwargs[prm.name] = prm.default if value is None else value
    ix = ensure_index(_tree(args))
    a = answer(tool, ix, **kwargs)
    print(to_json(tool, a) if args.json else a.text)
    return 0


def cmd_fetch(args) -> int:
    from pathlib import Path

    from .source.fetch import fetch_source
    from .source.tree import save_source_in_config
    path = fetch_source(args.version, Path(args.dest) if args.dest else None,
                        progress=lambda m: print(m, file=sys.stderr))
    save_source_in_config(path)
    print(path)
    return 0


def cmd_quickstart(args) -> int:
    from .errors import SourceError
    from .source.tree import find_source, save_source_in_config
    from .tools import get_tool, run
    try:
        tree = find_source(args.source)
    except SourceError:
        from .source.fetch import fetch_source
        print("torchtalk: no PyTorch tree configured; fetching PyTorch 2.6.0 ...", file=sys.stderr)
        path = fetch_source("2.6.0", progress=lambda m: print(m, file=sys.stderr))
        save_source_in_config(path)
        tree = find_source(path)
    print(f"torchtalk: source {tree.root} (PyTorch {tree.version})", file=sys.stderr)
    ix = ensure_index(tree)
    _result, text = run(get_tool("trace"), ix, function_name="softmax", focus="full")
    print(text)
    print("\ntorchtalk: next, `torchtalk setup` registers the server with Claude Code.", file=sys.stderr)
    return 0


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


def _is_loopback(host: str) -> bool:
    import ipaddress
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def cmd_serve(args) -> int:
    from .errors import BadArgument
    from .server import serve
    if args.transport == "http":
        if not 1 <= args.port <= 65535:
            raise BadArgument(f"--port must be from 1 to 65535, not {args.port}")
        if not _is_loopback(args.host) and not args.allow_remote:
            raise BadArgument(f"--host {args.host} would expose the server beyond this machine, without "
                             "authentication; add --allow-remote to do that deliberately, or use 127.0.0.1")
    return serve(args.source, transport=args.transport, host=args.host, port=args.port, codegen=not args.no_codegen)


def main(argv: list[str] | None = None) -> int:
    parser = _build_parser()
    args = parser.parse_args(argv)
    if not args.command:
        parser.print_help()
        return 2
    handlers = {"index": cmd_index, "serve": cmd_serve, "fetch-source": cmd_fetch, "quickstart": cmd_quickstart,
                "setup": cmd_setup, "status": cmd_status, "doctor": cmd_doctor}
    try:
        return handlers.get(args.command, cmd_tool)(args)
    except TorchTalkError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:
        return 0
    except Exception as exc:  # never a traceback to the user
        if os.environ.get("TORCHTALK_DEBUG"):
            raise
        print(f"internal error: {type(exc).__name__}: {exc} (set TORCHTALK_DEBUG=1 for a traceback)", file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())
