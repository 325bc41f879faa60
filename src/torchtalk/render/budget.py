"""Answers within a budget: the lead, then detail by relevance, then a line per thing cut (Note [Answer budget]).

Note [Answer budget]
~~~~~~~~~~~~~~~~~~~~
An agent reads every character a tool returns (Claude Code warns above ~10k tokens a result and
cuts at 25k), and it asks most questions once. So every renderer builds its answer as a ``lead``
(the few lines that answer the question: always kept), ``Section`` s of detail in the order of
their relevance (each saying what it is and the exact call that shows it whole), and a ``tail``
(notes and the walks' own cut lines: always kept). ``fit`` keeps the lead, then whole sections
in order while they fit within ``BUDGET`` characters; of the first section that does not fit it
keeps the head and as many items as fit; it keeps no section after that one (a later section may
point back at an earlier one: "details above"). Each section left out, whole or in part, becomes
one ``Cut:`` line naming what it was and the call that shows it (``trace("upsample_nearest2d.vec")``,
``called_by("at::native::copy_")``), so nothing is dropped silently. The budget is on the text
only: the structured answer (MCP structuredContent, CLI --json) keeps everything.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

BUDGET = 12_000  # characters of an answer's text, about 3k tokens
STRUCTURED = "the structured answer (MCP structuredContent, CLI --json)"  # holds what the text cuts
MIN_ITEMS = 3  # a section cut in part keeps at least this many items, or is cut whole


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

    def __post_init__(self) -> None:
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
    n = len(s.items)
    count = f" ({n} {s.noun})" if n else ""
    return f"Cut: {s.what}{count}; {s.shows} shows it"


def cut_part(s: Section, kept: int) -> str:
    return f"Cut: {s.what}: showing {kept} of {len(s.items)} {s.noun}; {s.shows} shows all"


def fit(lead: Sequence[str], sections: Sequence[Section], tail: Sequence[str] = (), budget: int = BUDGET) -> Fitted:
    """The lead, the sections that fit in order (the first that does not, in part), the tail, and a ``Cut:``
    line for each section left out; the cut lines count against the budget."""
    out = Fitted(list(lead))
    used = size(lead) + size(tail)
    pending = [cut_whole(s) for s in sections]  # were every section still to come cut
    reserve = size(pending)
    stopped = False
    for i, s in enumerate(sections):
        reserve -= len(pending[i]) + 1
        room = budget - used - reserve
        whole = size(s.head) + size(s.items)
        if not stopped and whole <= room:
            out.lines += [*s.head, *s.items]
            used += whole
            continue
        if not stopped and s.items:
            kept = _prefix(s.items, room - size(s.head) - len(cut_part(s, len(s.items))) - 1)
            if kept >= min(MIN_ITEMS, len(s.items)) and kept:
                out.lines += [*s.head, *s.items[:kept]]
                out.cuts.append(cut_part(s, kept))
                used += size(s.head) + size(s.items[:kept]) + len(out.cuts[-1]) + 1
                stopped = True
                continue
        stopped = True
        out.cuts.append(pending[i])
        used += len(pending[i]) + 1
    out.lines += list(tail)
    if out.cuts:
        if not (out.lines and out.lines[-1].startswith("Cut:")):
            out.lines.append("")
        out.lines += out.cuts
    return out


def _prefix(items: Sequence[str], room: int) -> int:
    """How many of ``items``, from the first, fit in ``room`` characters."""
    n = 0
    for item in items:
        room -= len(item) + 1
        if room < 0:
            break
        n += 1
    return n


def fitted(lead: Sequence[str], sections: Sequence[Section], tail: Sequence[str] = ()) -> str:
    """``fit``'s text: what a renderer returns."""
    return fit(lead, sections, tail).text
