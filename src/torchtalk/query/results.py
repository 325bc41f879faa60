"""Typed results shared by the queries. Renderers turn them into Markdown or JSON."""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(frozen=True)
class Loc:
    path: str  # relative to the source root, or "<generated>/..."
    line: int

    def __str__(self) -> str:
        return f"{self.path}:{self.line}"


@dataclass
class NotFound:
    """An answer, not an error: what was asked, that it is not there, and what is close."""

    what: str  # "op", "function", "module", "test file"
    query: str
    suggestions: list[str] = field(default_factory=list)
    hint: str = ""


@dataclass
class Ambiguous:
    what: str
    query: str
    candidates: list[tuple[str, Loc | None]]
    chosen: str = ""  # set when an answer for one candidate follows
