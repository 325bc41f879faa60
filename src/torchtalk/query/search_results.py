"""What search answers: its hits, each with what it is, where, and how it matched (query/search.py)."""

from __future__ import annotations

from dataclasses import dataclass, field

from ..model import CppSymbol, DispatchEntry, HitKind, Loc, MatchKind, Op

MATCHES = [MatchKind.EXACT, MatchKind.PREFIX, MatchKind.SUBSTRING, MatchKind.KERNEL]  # by rank
PER_NAME = 3  # definitions of a name ranked with the other hits; the rest rank after them (Note [Names that flood])


@dataclass
class KernelHit:
    entry: DispatchEntry
    defs: list[CppSymbol]


@dataclass
class SearchHit:
    kind: HitKind
    name: str
    loc: Loc | None
    match: MatchKind
    detail: str = ""  # schema for ops, target for bindings, what a class is (its public name, its bases)
    kernels: list[KernelHit] = field(default_factory=list)
    constructor: str = ""  # a C++ class's constructor with a definition, qualified: called_by shows who constructs it


@dataclass
class SearchResult:
    query: str
    backend: str | None
    hits: list[SearchHit]
    total: int
    limit: int
    notes: list[str] = field(default_factory=list)
    other_backends: list[str] = field(default_factory=list)  # with a backend: ops the query matches without its kernel


# Hits sort by (rank: exact 0 .. kernel 3, Group (query/search_match.py), name length, name).
SortKey = tuple[int, int, int, str]
Scored = tuple[SortKey, SearchHit, Op | None]
