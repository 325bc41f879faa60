"""The structured form of every tool's answer: one JSON shape per tool, with its JSON Schema.

MCP clients get it as ``structuredContent`` (the schema as the tool's ``outputSchema``)
next to the Markdown text, and ``torchtalk <tool> --json`` prints the same object, so a
script and an agent read one format. The shape is an envelope,
``{"kind": "result" | "not_found", "result": {...}, "next": [...], "stale": ""}``: MCP wants an object at the root,
and ``kind`` tells a consumer which of the two result types follows without guessing
from its fields. A command that fails prints ``{"kind": "error", "error": "..."}`` instead
(Note [JSON errors] in cli_common.py; not in the schema: MCP answers a failure with is_error).
The models are derived from the query dataclasses' type hints, so the schema cannot drift from what the queries return.
"""

from __future__ import annotations

import functools
import json
import typing
from typing import Any, Literal, TypeAlias

from pydantic import BaseModel, ConfigDict, Field, create_model

from ..atomic import write_text_atomic
from ..query.results import NotFound
from ..source.schema_cache import schema_cache_path
from .table import Tool

AnswerKind: TypeAlias = Literal["result", "not_found"]
KIND_HELP = ("'result' when the question was answered; 'not_found' when the name is not in the index "
             "(then result.suggestions holds close matches, never a different symbol's answer)")


def result_type(tool: Tool) -> Any:
    """What the tool's query returns (a dataclass, or a union with NotFound), from its annotations."""
    try:
        return typing.get_type_hints(tool.query)["return"]
    except (KeyError, NameError, TypeError) as exc:
        raise TypeError(f"tool {tool.name}: its query needs a resolvable return annotation ({exc})") from None


@functools.cache
def output_model(tool: Tool) -> type[BaseModel]:
    camel = "".join(part.title() for part in tool.name.split("_"))
    return create_model(
        f"{camel}Output",
        __config__=ConfigDict(frozen=True),
        __doc__=f"Structured answer of the {tool.name} tool.",
        kind=(AnswerKind, Field(description=KIND_HELP)),
        result=(result_type(tool), Field(description="the typed answer; its fields are in the schema's $defs")),
        next=(list[str], Field(description="up to three calls worth making next, with names taken from this "
                                           "answer, e.g. 'cuda_kernels(\"softmax\")'")),
        stale=(str, Field("", description="empty when the index held every change of the tree; else what the answer "
                                          "misses (the index's build time and the files changed since), as the "
                                          "text's first line says")),
    )


def output_schema(tool: Tool) -> dict[str, Any]:
    return output_model(tool).model_json_schema(mode="serialization")


def output_schemas(tools: list[Tool]) -> dict[str, dict[str, Any]]:
    """Every tool's output schema, cached on disk: deriving them takes pydantic ~0.2 s, which a server
    would otherwise spend before it can answer ``initialize``."""
    path = schema_cache_path()
    try:
        cached = json.loads(path.read_text(encoding="utf-8"))
        if isinstance(cached, dict) and set(cached) == {t.name for t in tools}:
            return cached
    except (OSError, ValueError):
        pass
    schemas = {t.name: output_schema(t) for t in tools}
    try:
        write_text_atomic(path, json.dumps(schemas))
    except OSError:
        pass  # a read-only cache costs time at start-up, not correctness
    return schemas


def structured(tool: Tool, result: Any, follow: list[str], stale: str = "") -> dict[str, Any]:
    """The JSON-ready envelope for one answer and its next calls (validated against the tool's model); ``stale``:
    what an answer from an index that misses changes misses ("" when it misses nothing)."""
    kind = "not_found" if isinstance(result, NotFound) else "result"
    return output_model(tool)(kind=kind, result=result, next=follow, stale=stale).model_dump(mode="json")

