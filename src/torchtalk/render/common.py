"""Pieces every renderer uses."""

from __future__ import annotations

import json
from collections.abc import Sequence

from ..model import Cut, Edge, EdgeHow, NodeKind
from ..query.args import MAX_LIMIT
from ..query.cuts import describe
from ..query.pywalk import Choice
from ..query.results import Ambiguous, NotFound
from .budget import STRUCTURED


def not_found(r: NotFound) -> str:
    lines = [f"No {r.what} named '{r.query}'."]
    if r.suggestions:
        lines[0] += " Close matches: " + ", ".join(r.suggestions) + "."
    else:
        lines[0] += " No close matches."
    for e in r.elsewhere:  # Note [Names of another kind]: before the hint, which speaks of this tool's names
        lines.append(f"It is {e.what}: {e.tool}({json.dumps(e.arg)}) answers it.")
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


PASSED = {EdgeHow.PASSED_ON: "passed on", EdgeHow.TEXT: "passed on, found in the source text"}  # how a stub is used


def registered_at(regs: Sequence[Edge]) -> str:
    """Where a kernel is registered: each registration's site and macro, those on consecutive lines of one file (one
    per CPU capability: REGISTER_ARCH_DISPATCH, REGISTER_AVX2_DISPATCH, ...) written as one range."""
    k = regs[0]
    lines = [r.site.line if r.site else 0 for r in regs]
    if len(regs) > 1 and k.site and all(r.site and r.site.path == k.site.path for r in regs) \
            and lines == list(range(lines[0], lines[0] + len(lines))):
        return f"{k.site}-{lines[-1]} ({', '.join(r.note for r in regs)})"
    return ", ".join(f"{r.site} {r.note}" for r in regs)


def stub_kernel(k: Edge, also: Sequence[Edge] = ()) -> str:
    """A DispatchStub's kernel (a STUB_KERNEL edge): its name, where it is defined, where it is registered; ``also``:
    the same kernel's other registrations for the same key (registered_at)."""
    where = f"defined {k.dst.loc}, " if k.dst.loc else ""
    return f"{k.dst.label.split('::')[-1]}  ({where}registered {registered_at([k, *also])})"


def kernel_groups(kernels: Sequence[Edge]) -> list[list[Edge]]:
    """A stub's registrations, grouped by key and kernel (a kernel registered once per CPU capability: one group)."""
    groups: dict[tuple[str, str], list[Edge]] = {}
    for k in kernels:
        groups.setdefault((k.key, k.dst.key), []).append(k)
    return list(groups.values())


def stub_kernels(kernels: Sequence[Edge]) -> list[str]:
    """A stub's kernels, "KEY: kernel (...)" each, a kernel registered for one key several times (once per CPU
    capability) on one line."""
    return [f"{regs[0].key}: {stub_kernel(regs[0], regs[1:])}" for regs in kernel_groups(kernels)]


MAX_PATH_OPS = 24  # op names shown per path; the structured answer holds all


def first(names: list[str], n: int, sep: str = ", ") -> str:
    """The first ``n`` of ``names``, then " ..." when there are more."""
    return sep.join(names[:n]) + (" ..." if len(names) > n else "")


def some(names: list[str], n: int) -> str:
    """The first ``n`` of ``names``, then how many more there are."""
    return ", ".join(names[:n]) + (f" (+{len(names) - n} more)" if len(names) > n else "")


def op_names(full_names: list[str], limit: int = MAX_PATH_OPS) -> str:
    """Op full names as their names, overloads folded (``_foreach_add_`` for .List, .Scalar, ...), in order."""
    names = list(dict.fromkeys(f.split(".")[0] for f in full_names))
    text = ", ".join(names[:limit])
    return text + (f", ... ({showing(limit, len(names), IN_STRUCTURED)})" if len(names) > limit else "")


def _callee(e: Edge) -> str:
    """An arm's call as a Paths line names it: an op, a function's last name, a call not followed as written
    (``self.reducer.prepare_for_backward``: its key holds its site, whose last dot is the file's)."""
    if e.dst.kind is NodeKind.OP:
        return f"op {e.dst.key}"
    if e.dst.kind is NodeKind.UNRESOLVED:
        return e.written or e.dst.label.split(" at ", 1)[0]
    return e.dst.key.rsplit(".", 1)[-1]


def choice_lines(choices: list[Choice], common: list[str] | None = None) -> list[str]:
    """The paths a Python walk's code chooses between (query/pywalk.py), each arm with the line that chooses it
    and the ops reached through it; then the ops reached through calls no ``if`` guards (on every path)."""
    out: list[str] = []
    # a choice none of whose arms reaches an op (torch.cuda.is_available's, under an optimizer's step) says nothing
    # of the ops: one line names them all
    none = [c for c in choices if not any(a.ops for a in c.arms)]
    for c in choices:
        if not any(a.ops for a in c.arms):
            continue
        out.append(f"\nPaths: {c.where.key} chooses at {c.head} ({len(c.arms)} arms)")
        for a in c.arms:
            callees = ", ".join(list(dict.fromkeys(_callee(e) for e in a.calls))[:4])  # two calls of one name: once
            call = a.calls[0]
            via = f", called at {call.site}" if call.branch and call.branch.chosen else ""
            ops = f": {len({o.split('.')[0] for o in a.ops})} ops: {op_names(a.ops)}" if a.ops else ": no op reached"
            out.append(f"- {a.arm}: {callees} (chosen at {a.chosen}{via}){ops}")
    if none:
        out.append(f"{chr(10) if len(none) == len(choices) else ''}Paths that reach no op on any arm ({len(none)}): "
                   + some([f"{c.where.key} at {c.head}" for c in none], 4)
                   + f"; {STRUCTURED} holds their arms")
    if choices and common is not None:
        out.append(f"Outside any if (on every path): {op_names(common)}" if common else "Outside any if: no op")
    return out
