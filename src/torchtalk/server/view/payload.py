"""What the web view's page asks for, as JSON: an answer with its picture, and source lines.

An answer is the tool table's answer (the same Markdown and next calls as MCP and the
CLI), plus its picture (render/picture.py, collapsed) and its Mermaid text. Each node of
the picture says which tool call expands it, so the page only asks for what a node says.
"""

from __future__ import annotations

import ast
import dataclasses
from typing import Any

from ...errors import BadArgument
from ...model import NodeKind
from ...query.excerpt import excerpt
from ...query.results import NotFound
from ...render.collapse import collapse
from ...render.mermaid import COLOURS, mermaid
from ...render.picture import Picture, picture
from ...store.reader import Index
from ...tools import Tool, all_tools, answer, call_text, draws, get_tool
from ..arguments import check_arguments

# Which tool expands a node of each kind, and with what: the op's name, the definition's path:line
# (unambiguous where several C++ functions share a name), the Python name.
EXPAND: dict[str, tuple[str, str]] = {
    NodeKind.OP.value: ("trace", "key"),
    NodeKind.CPP_FUNCTION.value: ("calls", "loc"),
    NodeKind.WRAPPER.value: ("calls", "loc"),
    NodeKind.STUB.value: ("called_by", "key"),
    NodeKind.GPU_KERNEL.value: ("called_by", "loc"),
    NodeKind.BINDING.value: ("trace", "key"),
    NodeKind.PY_FUNCTION.value: ("trace", "key"),
    NodeKind.PY_CLASS.value: ("trace_module", "key"),
}


def graph_tools() -> list[Tool]:
    return [t for t in all_tools() if draws(t)]


def tools_json() -> dict[str, Any]:
    return {"tools": [{"name": t.name, "question": t.description.split("? ")[0] + "?",
                       "params": [{"name": p.name, "type": p.type.__name__, "required": p.required,
                                   "default": None if p.required else p.default, "help": p.help,
                                   "choices": list(p.choices)} for p in t.params if p.name != "format"]}
                      for t in graph_tools()]}


def _expansion(kind: str, key: str, label: str, loc: str) -> dict[str, Any] | None:
    how = EXPAND.get(kind)
    if how is None:
        return None
    tool, source = how
    value = key
    if source == "loc":
        value = loc or label  # no definition site: the name as answers print it
    first = get_tool(tool).params[0].name
    return {"tool": tool, "args": {first: value}}


def picture_json(pic: Picture) -> dict[str, Any]:
    out = pic.to_json()
    for layer in out["layers"]:  # type: ignore[union-attr]
        layer["fill"], layer["stroke"] = COLOURS[layer["id"]]
    for n in out["nodes"]:  # type: ignore[union-attr]
        key = n["id"].split(":", 1)[1]
        n["expand"] = _expansion(n["kind"], key, n["label"], n["loc"])
    return out


def parse_call(text: str) -> dict[str, Any] | None:
    """A next call as the answers print it (``impact("f", depth=2)``) as {tool, args}, or None."""
    try:
        node = ast.parse(text, mode="eval").body
    except SyntaxError:
        return None
    if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Name)):
        return None
    try:
        tool = get_tool(node.func.id)
        args = {p.name: ast.literal_eval(a) for p, a in zip(tool.params, node.args, strict=False)}
        args.update({k.arg: ast.literal_eval(k.value) for k in node.keywords if k.arg})
    except (KeyError, ValueError):
        return None
    return {"tool": tool.name, "args": args}


def answer_json(ix: Index, tool_name: str, arguments: dict[str, Any]) -> dict[str, Any]:
    try:
        tool = get_tool(tool_name)
    except KeyError:
        raise BadArgument(f"unknown tool {tool_name!r}; the view draws: "
                          f"{', '.join(t.name for t in graph_tools())}") from None
    kwargs = check_arguments(tool, arguments)
    kwargs.pop("format", None)
    a = answer(tool, ix, **kwargs)
    call = call_text(tool, kwargs)
    pic = collapse(picture(a.result, call))
    return {"ok": True, "call": call, "tool": tool.name, "args": kwargs,
            "kind": "not_found" if isinstance(a.result, NotFound) else "result", "text": a.text,
            "next": [c for c in (parse_call(n) for n in a.next) if c is not None], "next_text": a.next,
            "picture": picture_json(pic), "mermaid": mermaid(pic) if pic.nodes else ""}


def source_json(ix: Index, where: str) -> dict[str, Any]:
    if not isinstance(where, str):
        raise BadArgument("where must be path:line")
    return {"ok": True, **dataclasses.asdict(excerpt(ix, where))}
