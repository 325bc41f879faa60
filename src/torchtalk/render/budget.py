"""Answers within a budget: the lead, then detail by relevance, then a line per thing cut (Note [Answer budget]).

Note [Answer budget]
~~~~~~~~~~~~~~~~~~~~
An agent reads every character a tool returns (Claude Code warns above ~10k tokens a result and
cuts at 25k), and it asks most questions once. So every renderer builds its answer as a ``lead``
(the few lines that answer the question: always kept), ``Section`` s of detail in the order of
their relevance (each saying what it is and the exact call that shows it whole), and a ``tail``
(notes and the walks' own cut lines: always kept). ``fit`` keeps the lead, then the first
``keep`` items of each section that asks for some (so an impact shows a few callers of each
level, a few ops and Python names, before any list is complete), then whole sections in order
while they fit within ``BUDGET`` characters; of the first section that does not fit it keeps the
head and as many items as fit, and it fills no section after that one (a later section may point
back at an earlier one: "details above"). Each section left out, whole or in part, becomes
one ``Cut:`` line naming what it was and the call that shows it (``trace("upsample_nearest2d.vec")``,
``called_by("at::native::copy_")``), so nothing is dropped silently. The budget is on the text
only: the structured answer (MCP structuredContent, CLI --json) keeps everything. A section whose
items are an outline (a trace overload: each dispatch key, its C++ indented below it) keeps, when
cut in part, its least indented items first, in their order: every key before any key's detail. Its
detail may come ranked (``ranks``: lower first, then the least indented, then in order): a trace keeps
the dense CPU/CUDA kernels' detail before a sparse or Vulkan kernel's (Note [Key order] in
model/dispatch.py). A heading of indented items is never shown without the first of them: the
renderer makes the two one item (a trace's "calls ops (1):" and the op it calls).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from functools import cached_property

BUDGET = 12_000  # characters of an answer's text, about 3k tokens
STRUCTURED = "the structured answer (MCP structuredContent, CLI --json)"  # holds what the text cuts
MIN_ITEMS = 3  # a section cut in part keeps at least this many items, or is cut whole
CUT_ROOM = BUDGET // 3  # characters of cut lines past which the sections cut whole share one line


@dataclass(frozen=True)
class Section:
    """Detail an answer may cut: ``head`` lines (its title) and ``items`` that may be cut from the end.

    ``what`` names it in its cut line ("overload add.out", "level 2 callers"); ``shows`` is the exact
    call that shows it whole, or where it is (the structured answer)."""

    head: Sequence[str]
    items: Sequence[str] = ()
    what: str = ""
    shows: str = ""
    noun: str = "lines"  # what an item is, for "showing 12 of 40 callers"
    keep: int = 0  # items kept before any later section is filled (a few of each: the closest callers, ops, ...)
    # Items that are an outline (indented under the item they detail: a trace's dispatch keys, each kernel's C++ under
    # its key): cut in part, the least indented are kept first (every key before any key's detail), in their order.
    outline: bool = False
    total: int = 0  # the items there are, when ``items`` holds only the first of them (0: ``items`` is all)
    # An outline's items' ranks, one per item (empty: all 0): cut in part, the lower ranks are kept first, each
    # least indented first and in order (the top items, rank 0, before any detail).
    ranks: Sequence[int] = ()

    @property
    def count(self) -> int:
        """The items there are: a cut names how many of them it shows."""
        return max(self.total, len(self.items))

    def kept(self, k: int) -> list[str]:
        """The ``k`` items shown when the section is cut to k (all of them from len(items) on)."""
        if not self.outline or k >= len(self.items):
            return list(self.items[:max(k, 0)])
        return [self.items[j] for j in sorted(self._outline_order[:max(k, 0)])]

    @cached_property
    def _outline_order(self) -> list[int]:
        """The items' indices, by rank, least indented first, in their order (``fit`` asks ``kept`` for each k it
        tries)."""
        depth = [len(x) - len(x.lstrip(" ")) for x in self.items]
        rank = list(self.ranks) or [0] * len(depth)
        return sorted(range(len(depth)), key=lambda j: (rank[j], depth[j], j))

    def __post_init__(self) -> None:
        if self.ranks and len(self.ranks) != len(self.items):
            raise ValueError(f"a Section's ranks are one per item; got {len(self.ranks)} for {len(self.items)}")
        if not self.what or not self.shows:
            raise ValueError(f"a Section needs what it is and the call that shows it (Note [Answer budget]); "
                             f"got what={self.what!r} shows={self.shows!r} for {list(self.head)[:1]}")


@dataclass
class Fitted:
    """What ``fit`` kept and what it cut (the cut lines, one per section cut whole or in part)."""

    lines: list[str] = field(default_factory=list)
    cuts: list[str] = field(default_factory=list)

    @property
    def text(self) -> str:
        return "\n".join(self.lines)


def size(lines: Iterable[str]) -> int:
    return sum(len(line) + 1 for line in lines)


def cut_whole(s: Section) -> str:
    n = s.count
    count = f" ({n} {s.noun})" if n else ""
    return f"Cut: {s.what}{count}; {s.shows} shows it"


def cut_part(s: Section, kept: int) -> str:
    return f"Cut: {s.what}: showing {kept} of {s.count} {s.noun}; {s.shows} shows all"


def fit(lead: Sequence[str], sections: Sequence[Section], tail: Sequence[str] = (), budget: int = BUDGET) -> Fitted:
    """The lead, the sections that fit (in order; see Note [Answer budget]), the tail, and a ``Cut:`` line for
    each section left out whole or in part; the cut lines count against the budget."""
    shown = [-1] * len(sections)  # items shown of each section; -1: the section is cut whole
    used = size(lead) + size(tail) + 1 + min(CUT_ROOM, sum(len(cut_whole(s)) + 1 for s in sections))

    def cost(i: int, k: int) -> int:
        """Characters section i takes (its lines and its cut line) when it shows k items (-1: none)."""
        s = sections[i]
        if k < 0:
            return len(cut_whole(s)) + 1
        cut = len(cut_part(s, k)) + 1 if k < s.count else 0
        return size(s.head) + size(s.kept(k)) + cut

    def grow(i: int, k: int) -> bool:
        """Show k items of section i if the budget allows."""
        nonlocal used
        delta = cost(i, k) - cost(i, shown[i])
        if used + delta > budget:
            return False
        used += delta
        shown[i] = k
        return True

    # First the few items each section asks to keep (the closest callers, the first ops reached) ...
    for i, s in enumerate(sections):
        if s.keep and not grow(i, min(s.keep, len(s.items))):
            break
    # ... then each section whole, in order; of the first that does not fit, as many items as fit, then stop.
    for i, s in enumerate(sections):
        if grow(i, len(s.items)):
            continue
        k = max(shown[i], 0)
        low = min(MIN_ITEMS, len(s.items))
        while k < len(s.items) and cost(i, k + 1) - cost(i, shown[i]) + used <= budget:
            k += 1
        if k >= low and k > shown[i]:
            grow(i, k)
        break
    out = Fitted(list(lead))
    for i, s in enumerate(sections):
        if shown[i] >= 0:
            out.lines += [*s.head, *s.kept(shown[i])]
        if shown[i] < s.count:
            out.cuts.append(cut_whole(s) if shown[i] < 0 else cut_part(s, shown[i]))
    out.lines += list(tail)
    out.cuts = _collapse(out.cuts, sections, shown)
    if out.cuts:
        if not (out.lines and out.lines[-1].startswith("Cut:")):
            out.lines.append("")
        out.lines += out.cuts
    return out


def _collapse(cuts: list[str], sections: Sequence[Section], shown: list[int]) -> list[str]:
    """The cut lines, at most CUT_ROOM characters of them: past that, the sections cut whole are one line
    naming each while it fits, then how many more (an answer about 200 overloads cuts most of them, and 200 lines
    would be a budget of their own)."""
    if size(cuts) <= CUT_ROOM:
        return cuts
    whole = [s for i, s in enumerate(sections) if shown[i] < 0]
    keep = [c for c in cuts if c not in {cut_whole(s) for s in whole}]
    while whole and size(keep) + len(cut_whole(whole[0])) + 1 <= CUT_ROOM // 2:
        keep.append(cut_whole(whole.pop(0)))
    if whole:
        # named while the cut lines stay within CUT_ROOM (200 kernel names would be a budget of their own)
        end = f"; each is shown by its call (e.g. {whole[0].shows}), and {STRUCTURED} holds all"
        room = CUT_ROOM - len(end) - 40
        names: list[str] = []
        used = 0
        for s in whole:
            used += len(s.what) + 1
            if names and used > room:
                break
            names.append(s.what)
        rest = f", and {len(whole) - len(names)} more" if len(names) < len(whole) else ""
        keep.append(f"Cut: {len(whole)} more: " + ", ".join(names) + rest + end)
    return keep


def fitted(lead: Sequence[str], sections: Sequence[Section], tail: Sequence[str] = ()) -> str:
    """``fit``'s text within ``BUDGET`` (read at each call): what a renderer returns."""
    return fit(lead, sections, tail, BUDGET).text
