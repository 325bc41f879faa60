"""The tool table's types: a tool is one declaration, and an answer is computed the same way for every front-end.

Each tool names its query (typed result), its renderer (Markdown), the calls worth
making after its answer, and how to tell whether a name is one it can answer for
(so a suggested next call never names something that is not there). The MCP server
and the CLI only wire arguments in and text or JSON out, so the two can never disagree.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, NamedTuple

from ..query.results import Ambiguous, NotFound
from ..render.collapse import collapse
from ..render.common import ambiguous, not_found
from ..render.mermaid import mermaid_answer
from ..render.next import next_line
from ..render.picture import picture
from ..store.reader import Index

REQUIRED = dataclasses.MISSING
FORMATS = ("text", "mermaid")


@dataclass(frozen=True)
class Param:
    name: str
    type: type
    default: Any  # REQUIRED when there is no default
    help: str
    choices: tuple[str, ...] = ()
    metavar: str = ""  # how help shows the value: OP, FUNCTION, N

    @property
    def required(self) -> bool:
        return self.default is REQUIRED


@dataclass(frozen=True)
class Tool:
    name: str
    description: str  # the question it answers, what it gives, an example call
    params: tuple[Param, ...]
    query: Callable[..., Any]  # (Index, **kwargs) -> typed result
    render: Callable[[Any], str]
    follow: Callable[[Any], list[str]]  # next calls named from a result
    knows: Callable[[Index, str], bool] | None = None  # whether its first argument names something here


# Graph-shaped tools declare it; tools/__init__.py's answer() takes it off before the query runs (how an
# answer is shown is no query's business) and the typed answer is the same in every format.
FORMAT = Param("format", str, "text", "text (Markdown) | mermaid (the answer's graph as a Mermaid diagram, "
                                      "to paste into a PR or an issue)", FORMATS)


def call_text(tool: Tool, kwargs: dict[str, Any]) -> str:
    """The call as an agent would write it: trace("softmax"), impact("f", depth=2)."""
    args = []
    for i, p in enumerate(tool.params):
        value = kwargs.get(p.name, p.default)
        if p.name == FORMAT.name or value is REQUIRED or (i and value == p.default):
            continue
        args.append(f'"{value}"' if i == 0 and isinstance(value, str) else f"{p.name}={value!r}")
    return f"{tool.name}({', '.join(args)})"


class Answer(NamedTuple):
    """One tool call's answer in every form a front-end sends: typed result, Markdown, next calls."""

    result: Any
    text: str
    next: list[str]


def render_any(tool: Tool, result: Any, follow: list[str], fmt: str = "text", title: str = "") -> str:
    if isinstance(result, NotFound):
        text = not_found(result)
    elif fmt == "mermaid":
        text = mermaid_answer(collapse(picture(result, title or tool.name)))
    elif isinstance(result, Ambiguous):
        text = ambiguous(result)
    else:
        text = tool.render(result)
    line = next_line(follow)
    return f"{text}\n\n{line}" if line else text
