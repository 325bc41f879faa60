"""The ``torchtalk`` subcommands made from the tool table: ``view`` and one per tool (cli.py adds them unless the
command is one of its plain ones, which need no tool imported)."""

from __future__ import annotations

from .cli_common import GET_STATUS_HELP, add_codegen, add_source, metavar, subcommand


def add_tool_commands(sub) -> None:
    """`view` and one subcommand per tool."""
    from .cli_input import FILE_PARAMS
    from .tools import FORMAT, all_tools, draws
    p = subcommand(sub, "view", "open the web view: answers drawn as graphs, nodes that expand, source beside them",
             "Serve the web view on 127.0.0.1 and open it in a browser (when one can be opened; the address is "
             "printed either way): a search box, the answer's graph laid out left to right by layer (click a node "
             "to expand it with the same tools and to read the source around its path:line), and the same Markdown "
             "answer below. Runs until Ctrl-C. Everything it loads ships with TorchTalk: no network is used.")
    add_source(p)
    p.add_argument("name", nargs="?", default="", metavar="NAME", help="a name to answer on opening (e.g. softmax)")
    p.add_argument("--tool", choices=[t.name for t in all_tools() if draws(t)], default="trace",
                   help="the tool answering NAME (default trace)")
    p.add_argument("--port", type=int, default=8766, help="port on 127.0.0.1 (default 8766; 0: any free port)")
    p.add_argument("--no-browser", action="store_true", help="only print the address; open no browser")
    add_codegen(p)

    for tool in all_tools():
        first = tool.description.split("? ")[0] + "?"
        status_tool = tool.name == "get_status"
        p = subcommand(sub, tool.name.replace("_", "-"), GET_STATUS_HELP if status_tool else first,
                 tool.description + (f" From the command line: {GET_STATUS_HELP}." if status_tool else ""),
                 aliases=[tool.name] if "_" in tool.name else [])
        add_source(p)
        p.add_argument("--json", action="store_true", help="print the structured result as JSON")
        for i, prm in enumerate(tool.params):
            flag = f"--{prm.name.replace('_', '-')}"
            default = "" if prm.required or prm.default is None else f" (default {prm.default})"
            kwargs = {"type": prm.type, "help": prm.help + default, "metavar": metavar(prm)}
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
