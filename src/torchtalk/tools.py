"""The tools, declared once: the MCP server and the CLI are both built from this table.

Each tool is a query (typed result) plus a renderer (Markdown). Front-ends only
wire arguments in and text or JSON out, so the two can never disagree.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from .query.index import Index
from .query.model import Ambiguous, NotFound
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


def render_any(tool: Tool, result: Any) -> str:
    if isinstance(result, NotFound):
        return not_found(result)
    if isinstance(result, Ambiguous):
        return ambiguous(result)
    return tool.render(result)


def to_json(result: Any) -> str:
    def default(o):
        if dataclasses.is_dataclass(o):
            return dataclasses.asdict(o)
        if isinstance(o, (set, frozenset)):
            return sorted(o)
        return str(o)
    payload = dataclasses.asdict(result) if dataclasses.is_dataclass(result) else result
    if isinstance(result, (NotFound, Ambiguous)):
        payload = {"result": type(result).__name__, **payload}
    return json.dumps(payload, indent=2, default=default)


def run(tool: Tool, ix: Index, **kwargs) -> tuple[Any, str]:
    result = tool.query(ix, **kwargs)
    return result, render_any(tool, result)


def _tools() -> list[Tool]:
    from .query import search as q_search
    from .query import status as q_status
    from .query import trace as q_trace
    from .render import basic, trace as r_trace

    tools = [
        Tool("get_status",
             "Where TorchTalk's answers come from: the PyTorch source tree and version, the index file, when it was "
             "built and whether it is fresh, and per layer (op registry, bindings, C++ call graph, Python modules, "
             "tests) its counts and readiness. Use it first, or when answers look incomplete.",
             (), lambda ix: q_status.status(ix), basic.render_status),
        Tool("trace",
             "Follow one op from Python to kernels: its native_functions.yaml entries (every overload, or the one "
             "named like 'add.Tensor'), the kernel per dispatch key (following structured_delegate), the C++ "
             "definitions with file:line, the DispatchStubs and CUDA kernels they reach, and the autograd formulas. "
             "focus='yaml' shows only the registry entries, 'dispatch' the kernels per key, 'full' everything.",
             (Param("function_name", str, REQUIRED, "op name: softmax, add.Tensor, aten::add, torch.add, F.relu"),
              Param("focus", str, "full", "yaml | dispatch | full", q_trace.FOCUS)),
             q_trace.trace, r_trace.render_trace),
        Tool("search",
             "Find ops, their kernels and Python bindings by name (exact, then prefix, then substring), optionally "
             "only ops with a kernel for one dispatch key (backend='CUDA', 'MPS', 'QuantizedCPU'...). Use it when you "
             "do not know the exact op name.",
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
