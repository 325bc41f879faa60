"""The tools as MCP publishes them, built from the tool table (``torchtalk.tools``), never by hand per tool.

Each tool gets its description with an Arguments list, an input schema with types, defaults and
``additionalProperties: false`` (the server holds calls to it: see ``arguments.py``), its output
schema (derived once from the query's result type and cached on disk by ``torchtalk.tools.structured``)
and read-only annotations.
"""

from __future__ import annotations

from typing import Any

from mcp.types import Tool as McpTool
from mcp.types import ToolAnnotations

from ..tools import Param, Tool

JSON_TYPE = {str: "string", int: "integer"}
READ_ONLY = ToolAnnotations(read_only_hint=True, idempotent_hint=True, open_world_hint=False)


def json_type(p: Param) -> str | list[str]:
    """An optional argument whose default is None also takes null (it means: not given)."""
    t = JSON_TYPE[p.type]
    return [t, "null"] if not p.required and p.default is None else t


def input_schema(tool: Tool) -> dict[str, Any]:
    props: dict[str, Any] = {}
    for p in tool.params:
        prop: dict[str, Any] = {"type": json_type(p), "description": p.help}
        if not p.required:
            prop["default"] = p.default
        props[p.name] = prop
    schema: dict[str, Any] = {"type": "object", "properties": props, "additionalProperties": False}
    required = [p.name for p in tool.params if p.required]
    if required:
        schema["required"] = required
    return schema


def description(tool: Tool) -> str:
    if not tool.params:
        return tool.description
    lines = [f"- {p.name}: {p.help}" + ("" if p.required else f" (default {p.default!r})") for p in tool.params]
    return tool.description + "\n\nArguments:\n" + "\n".join(lines)


def published(tools: list[Tool], output_schemas: dict[str, dict[str, Any]]) -> list[McpTool]:
    return [McpTool(name=t.name, description=description(t), input_schema=input_schema(t),
                    output_schema=output_schemas[t.name], annotations=READ_ONLY) for t in tools]
