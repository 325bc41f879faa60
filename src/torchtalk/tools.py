"""The tools, declared once: the MCP server and the CLI are both built from this table.

Each tool is a query (typed result) plus a renderer (Markdown). Front-ends only
wire arguments in and text or JSON out, so the two can never disagree.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, NamedTuple

from .store.reader import Index
from .query.results import Ambiguous, NotFound
from .render.common import ambiguous, not_found


@dataclass(frozen=True)
class Param:
    name: str
    type: type
    default: Any  # dataclasses.MISSING when required
    help: str
    choices: tuple[str, ...] = ()

    @property
    def required(self) -> bool:
        return self.default is dataclasses.MISSING


@dataclass(frozen=True)
class Tool:
    name: str
    description: str  # says when to use it
    params: tuple[Param, ...]
    query: Callable[..., Any]  # (Index, **kwargs) -> result
    render: Callable[[Any], str]


REQUIRED = dataclasses.MISSING


class Answer(NamedTuple):
    """One tool call's answer in every form a front-end sends: typed result, Markdown, next calls."""

    result: Any
    text: str
    next: list[str]


def render_any(tool: Tool, result: Any, follow: list[str]) -> str:
    from .render.next import next_line
    if isinstance(result, NotFound):
        text = not_found(result)
    elif isinstance(result, Ambiguous):
        text = ambiguous(result)
    else:
        text = tool.render(result)
    line = next_line(follow)
    return f"{text}\n\n{line}" if line else text


def to_json(tool: Tool, a: Answer) -> str:
    """The same object MCP clients get as structuredContent."""
    from .structured import structured
    return json.dumps(structured(tool, a.result, a.next), indent=2)


def answer(tool: Tool, ix: Index, **kwargs) -> Answer:
    from .render.next import next_calls
    result = tool.query(ix, **kwargs)
    follow = next_calls(tool.name, result)  # once: the text and the typed answer both carry it
    return Answer(result, render_any(tool, result, follow), follow)


def run(tool: Tool, ix: Index, **kwargs) -> tuple[Any, str]:
    a = answer(tool, ix, **kwargs)
    return a.result, a.text


def _tools() -> list[Tool]:
    from .query import search as q_search
    from .query import status as q_status
    from .query import trace as q_trace
    from .render import basic
    from .render import trace as r_trace

    tools = [
        Tool("get_status",
             "What is indexed, from which tree, and is it fresh? The PyTorch source tree and version, the index file, "
             "when it was built and whether it is fresh, and per layer (op registry, bindings, C++ call graph, "
             "Python modules, tests) its counts and readiness. Use it first, or when answers look incomplete. "
             "Example: get_status()",
             (), q_status.status, basic.render_status),
        Tool("trace",
             "Where and how is this op implemented? Follows one op from Python to kernels: its native_functions.yaml "
             "entries (every overload, or the one "
             "named like 'add.Tensor'), the kernel per dispatch key (following structured_delegate), the C++ "
             "definitions with file:line, the DispatchStubs and CUDA kernels they reach, and the autograd formulas. "
             "focus='yaml' shows only the registry entries, 'dispatch' the kernels per key, 'full' everything. "
             "Example: trace(\"softmax\", focus=\"dispatch\")",
             (Param("function_name", str, REQUIRED, "op name: softmax, add.Tensor, aten::add, torch.add, F.relu"),
              Param("focus", str, "full", "yaml | dispatch | full", q_trace.FOCUS)),
             q_trace.trace, r_trace.render_trace),
        Tool("search",
             "What is the exact name of the op or kernel I mean? Finds ops, their kernels and Python bindings by name (exact, then prefix, then substring), optionally "
             "only ops with a kernel for one dispatch key (backend='CUDA', 'MPS', 'QuantizedCPU'...). Use it when you "
             "do not know the exact op name. Example: search(\"conv\", backend=\"CUDA\")",
             (Param("query", str, REQUIRED, "name or part of a name"),
              Param("backend", str, None, "dispatch key to filter on, case-insensitive (CPU, CUDA, MPS, ...)"),
              Param("limit", int, 20, "how many results, 1..500")),
             q_search.search, basic.render_search),
    ]
    from . import tools_extra
    tools += tools_extra.extra_tools()
    return tools


_TOOLS: list[Tool] | None = None


def all_tools() -> list[Tool]:
    global _TOOLS
    if _TOOLS is None:
        _TOOLS = _tools()
    return _TOOLS


def get_tool(name: str) -> Tool:
    for t in all_tools():
        if t.name == name:
            return t
    raise KeyError(name)
