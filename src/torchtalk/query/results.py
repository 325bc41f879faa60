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
    # the other tools that know the name (Note [Names of another kind] in query/elsewhere.py), filled in by the
    # tool table's answer() for every tool alike
    elsewhere: list[Elsewhere] = field(default_factory=list)


@dataclass(frozen=True)
class Elsewhere:
    """Another tool that answers a name: the call, and what the name is to it."""

    tool: str
    arg: str
    what: str  # "an nn module class (torch.nn.modules.conv.Conv2d)", "a C++ function", ...


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
