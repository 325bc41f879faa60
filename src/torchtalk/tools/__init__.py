"""The tools, declared once: the MCP server and the CLI are both built from this table.

Each tool is a query (typed result) plus a renderer (Markdown) and its next calls;
front-ends only wire arguments in and text or JSON out, so the two can never
disagree. One module per family declares its tools.
"""

from __future__ import annotations

import json
from typing import Any

from ..query.args import check_choice
from ..query.elsewhere import elsewhere
from ..query.results import NotFound
from ..render.next import MAX_NEXT, NextCall, not_found_next, unique
from ..store.reader import Index
from . import change, cpp, errors, ops, python, tests
from .structured import output_schemas, structured
from .table import FORMAT, FORMATS, REQUIRED, Answer, Param, Tool, call_text, render_any

_TOOLS: list[Tool] = ops.TOOLS + cpp.TOOLS + python.TOOLS + tests.TOOLS + change.TOOLS + errors.TOOLS
_BY_NAME = {t.name: t for t in _TOOLS}


def all_tools() -> list[Tool]:
    return list(_TOOLS)


def get_tool(name: str) -> Tool:
    return _BY_NAME[name]


def _valid(ix: Index, c: str) -> bool:
    """A next call is kept only if its tool knows the name it is given (never a call that answers 'not found')."""
    if not isinstance(c, NextCall) or c.first is None:
        return True
    tool = _BY_NAME.get(c.tool)
    return tool is None or tool.knows is None or tool.knows(ix, c.first)


def draws(tool: Tool) -> bool:
    """Whether the tool's answers are graphs it can draw (it takes ``format``)."""
    return FORMAT in tool.params


def answer(tool: Tool, ix: Index, **kwargs: Any) -> Answer:
    fmt = FORMAT.default
    if draws(tool) and FORMAT.name in kwargs:
        fmt = check_choice(kwargs.pop(FORMAT.name), FORMAT.name, FORMATS)
    with ix.using():  # one connection, hence one version of the index, for the whole answer
        result = tool.query(ix, **kwargs)
        known: set[str] = set()  # next calls whose tool's own resolver found the name (no need to ask again)
        if isinstance(result, NotFound):  # the tools that do know the name (Note [Names of another kind])
            result.elsewhere = result.elsewhere + elsewhere(ix, result.query, tool.name)  # the query's own first
            candidates = not_found_next(result, tool.name)  # the elsewhere calls first
            known = {str(c) for c in candidates[:len(result.elsewhere)]}
        else:
            candidates = tool.follow(result)
        follow = [c for c in unique(candidates) if str(c) in known or _valid(ix, c)][:MAX_NEXT]
    # Computed once: the text and the typed answer both carry the same next calls.
    text = render_any(tool, result, follow, fmt, call_text(tool, kwargs))
    return Answer(result, text, [str(c) for c in follow])


def run(tool: Tool, ix: Index, **kwargs: Any) -> tuple[Any, str]:
    a = answer(tool, ix, **kwargs)
    return a.result, a.text


def to_json(tool: Tool, a: Answer, stale: str = "") -> str:
    """The same object MCP clients get as structuredContent (``stale``: what an answer from an index that misses
    changes misses)."""
    return json.dumps(structured(tool, a.result, a.next, stale), indent=2)


def warm_server_start() -> None:
    """Leave the output schemas in the cache after an index run, so the next `torchtalk serve` reads them
    instead of deriving them before it can answer `initialize`."""
    output_schemas(all_tools())


__all__ = ["FORMAT", "REQUIRED", "Answer", "Param", "Tool", "all_tools", "answer", "call_text", "draws", "get_tool",
           "run", "to_json", "warm_server_start"]
