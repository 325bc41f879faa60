"""The parts of the ``torchtalk`` command line its modules share: exit codes, help texts, common arguments."""

from __future__ import annotations

import argparse
import json

# Exit codes (README, "Using it"); argparse itself exits 2 on a malformed command line.
EXIT_OK = 0
EXIT_PROBLEM = 1  # doctor or setup found a problem, or an internal error
EXIT_ERROR = 2  # bad arguments, no source tree, an index that cannot be built or read (a tool command, or status)
EXIT_NOT_FOUND = 3  # the tool answered "not found" (the answer, with close matches, is on stdout)
EXIT_INTERRUPTED = 130  # Ctrl-C
EXIT_TERMINATED = 143  # SIGTERM

EPILOG = (f"exit codes: {EXIT_OK} answered; {EXIT_NOT_FOUND} the name asked for is not in the index (the answer "
          f"lists close matches); {EXIT_ERROR} bad arguments, no source tree, or an index that cannot be built "
          f"or read (for status: no usable index); {EXIT_PROBLEM} doctor/setup found a problem, or an internal "
          f"error; {EXIT_INTERRUPTED} interrupted (Ctrl-C); {EXIT_TERMINATED} terminated (SIGTERM).")

STATUS_HELP = ("what get_status reports, from the index as it is: nothing is built or refreshed, so it shows "
               "whether the index is stale (`get-status`, like every tool command, refreshes the index first)")
GET_STATUS_HELP = ("the get_status tool, as an agent sees it: refreshes the index first, like every tool command "
                   "(`status` reports without refreshing, so it can show that the index is stale)")


# Note [JSON errors]
# ~~~~~~~~~~~~~~~~~~
# With --json, stdout holds one JSON object for every outcome, so a script reading it always gets a parseable
# answer: the envelope of an answer (tools/structured.py: kind "result" or "not_found") or, when the command fails
# (exit 2: a bad argument, argparse's included, no source tree, no usable index; 1: an internal error),
# {"kind": "error", "error": "<the message stderr also shows>"}. MCP has its own error result (is_error), so the
# error object is not part of the tools' output schema.
ERROR_KIND = "error"


def json_error(message: str) -> str:
    return json.dumps({"kind": ERROR_KIND, "error": message}, indent=2)


def wants_json(argv: list[str]) -> bool:
    """Whether the command line asks for --json (before a ``--``, after which every word is a value)."""
    return "--json" in (argv[:argv.index("--")] if "--" in argv else argv)


class Parser(argparse.ArgumentParser):
    """argparse's parser, whose usage errors also print a JSON error on stdout when ``json_errors`` is set
    (Note [JSON errors]); its subcommands' parsers are of this class too."""
    json_errors = False  # set by cli.main from the command line it parses

    def error(self, message: str):  # type: ignore[no-untyped-def]
        if Parser.json_errors:
            print(json_error(message), flush=True)
        super().error(message)


def add_source(p: argparse.ArgumentParser) -> None:
    p.add_argument("--source", metavar="PATH", help="PyTorch source tree (default: $TORCHTALK_SOURCE, the config "
                                                    "file, or the current directory)")


def add_codegen(p: argparse.ArgumentParser) -> None:
    p.add_argument("--no-codegen", action="store_true",
                   help="do not run the tree's own code generators (they are code from the tree being indexed); "
                        "the index then lacks the generated layer")


def subcommand(sub, name: str, help: str, description: str | None = None, **kw) -> argparse.ArgumentParser:
    return sub.add_parser(name, help=help, description=description or (help[0].upper() + help[1:] + "."),
                          epilog=EPILOG, **kw)


def metavar(prm) -> str:
    return "{" + ",".join(prm.choices) + "}" if prm.choices else prm.name.upper()
