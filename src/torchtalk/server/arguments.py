"""A tool call's arguments held to the tool's input schema, strictly, before any query runs.

A string is not an integer (``depth: "3"`` is refused, where a lenient parser would coerce it), an
argument the tool does not have is an error naming the ones it has (an agent that misspells
``fucntion_name`` learns that, instead of getting an answer to another question), and text that
is not valid Unicode (a lone surrogate, which JSON's ``\\ud800`` escape can carry) is refused with
its reason. Values in range is the queries' business (``query/args.py``).
"""

from __future__ import annotations

import math
from typing import Any

from ..errors import BadArgument
from ..query.args import shown
from ..tools import Param, Tool
from .schema import json_type

MAX_LISTED = 5  # unknown names quoted in one message


def _kind(value: object) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return f"the boolean {str(value).lower()}"
    if isinstance(value, str):
        return f"the string {shown(value)}"
    if isinstance(value, (int, float)):
        return f"the number {shown(value)}"
    return {list: "a list", dict: "an object"}.get(type(value), type(value).__name__)


def _signature(p: Param) -> str:
    t = json_type(p)
    kind = t if isinstance(t, str) else " or ".join(t)
    return f"{p.name} ({kind}, " + ("required)" if p.required else f"default {p.default!r})")


def _lone_surrogate(text: str) -> str | None:
    for ch in text:
        if "\ud800" <= ch <= "\udfff":
            return f"U+{ord(ch):04X}"
    return None


def check_value(tool: Tool, p: Param, value: Any) -> Any:
    if value is None and not p.required and p.default is None:
        return None
    if p.type is str:
        if not isinstance(value, str):
            raise BadArgument(f"{p.name} must be a string, not {_kind(value)}")
        bad = _lone_surrogate(value)
        if bad:
            raise BadArgument(f"{p.name} is not valid Unicode text (it holds a lone surrogate, {bad}); "
                              "send the name as plain UTF-8")
        return value
    if p.type is int:
        if isinstance(value, float) and math.isfinite(value) and value.is_integer():
            return int(value)  # JSON Schema's integer: 3.0 is one
        if isinstance(value, bool) or not isinstance(value, int):
            raise BadArgument(f"{p.name} must be an integer, not {_kind(value)}")
        return value
    raise TypeError(f"tool {tool.name}: parameter {p.name} has type {p.type.__name__}, which has no JSON type")


def check_arguments(tool: Tool, arguments: dict[str, Any] | None) -> dict[str, Any]:
    """The keyword arguments for the tool's query, or BadArgument naming what is wrong and what is valid."""
    given = dict(arguments or {})
    known = {p.name for p in tool.params}
    unknown = [k for k in given if k not in known]
    if unknown:
        names = ", ".join(shown(k, 40) for k in unknown[:MAX_LISTED])
        if len(unknown) > MAX_LISTED:
            names += f" and {len(unknown) - MAX_LISTED} more"
        if not tool.params:
            raise BadArgument(f"{tool.name} takes no arguments; got {names}")
        raise BadArgument(f"{tool.name} has no argument {names}; its arguments are: "
                          + ", ".join(_signature(p) for p in tool.params))
    kwargs = {}
    for p in tool.params:
        if p.name not in given:
            if p.required:
                raise BadArgument(f"{tool.name} needs {p.name} ({p.help})")
            kwargs[p.name] = p.default
            continue
        kwargs[p.name] = check_value(tool, p, given[p.name])
    return kwargs
