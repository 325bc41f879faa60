"""Answer types every query shares: a name that is not there, and a name that means several things."""

from __future__ import annotations

from dataclasses import dataclass, field

from ..model import Loc


@dataclass
class NotFound:
    """An answer, not an error: what was asked, that it is not there, and what is close."""

    what: str  # "op", "C++ function or DispatchStub", "module", "test file"
    query: str
    suggestions: list[str] = field(default_factory=list)
    hint: str = ""


@dataclass
class Candidate:
    label: str  # "at::native::foo(const Tensor& self)"
    loc: Loc | None


@dataclass
class Ambiguous:
    """Several things answer to one name: which ones, and which of them the answer covers."""

    what: str
    query: str
    candidates: list[Candidate]
    answered: int = 0  # how many of the candidates (the first ones) have a section of their own
