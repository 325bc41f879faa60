"""Pieces every renderer uses."""

from __future__ import annotations

from ..model import Cut
from ..query.args import MAX_LIMIT
from ..query.cuts import describe
from ..query.results import Ambiguous, NotFound
from .budget import STRUCTURED


def not_found(r: NotFound) -> str:
    lines = [f"No {r.what} named '{r.query}'."]
    if r.suggestions:
        lines[0] += " Close matches: " + ", ".join(r.suggestions) + "."
    else:
        lines[0] += " No close matches."
    if r.hint:
        lines.append(r.hint)
    return "\n".join(lines)


def ambiguous(r: Ambiguous) -> str:
    lines = [f"'{r.query}' names {len(r.candidates)} {r.what}s:"]
    for i, c in enumerate(r.candidates[:30]):
        mark = "  (answered below)" if i < r.answered else ""
        lines.append(f"- {c.label}" + (f"  {c.loc}" if c.loc else "") + mark)
    if len(r.candidates) > 30:
        lines.append(f"- ... showing 30 of {len(r.candidates)}")
    if r.answered:
        lines.append(f"Each of the first {r.answered} is answered in its own section; give path:line "
                     "(e.g. the location above) or a qualified name to ask about one.")
    return "\n".join(lines)


# For lists the text cuts short but the typed answer holds whole: where the rest is.
IN_STRUCTURED = f"{STRUCTURED} holds all"


def full_limit(total: int) -> int:
    """The limit= that shows a whole list of ``total`` (as much of it as a limit may ask for)."""
    return min(total, MAX_LIMIT)


def raise_limit(total: int) -> str:
    n = full_limit(total)
    return f"limit={n} shows {'all' if n == total else f'the first {n}'}"


def showing(n: int, total: int, more: str = "") -> str:
    """'showing N of M', and when N < M how to see the rest (a limit= to raise, or where the rest is)."""
    return f"showing {n} of {total}" + (f"; {more}" if more and n < total else "")


MAX_CUT_LINES = 8


def cut_lines(cuts: list[Cut]) -> list[str]:
    """A line per cut (Note [No silent cut]), the first MAX_CUT_LINES of them (the structured answer holds all)."""
    lines = [f"Cut: {describe(c)}" for c in cuts[:MAX_CUT_LINES]]
    if len(cuts) > MAX_CUT_LINES:
        lines.append(f"Cut: ... {showing(MAX_CUT_LINES, len(cuts), IN_STRUCTURED)}")
    return [""] + lines if lines else []
