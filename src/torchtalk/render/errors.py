"""Markdown for error_origin, and its next calls.

Leads with the verdict and the best raise site (its check and enclosing function), then
what leads there per site: the ops closest first with the chain from the raise site, the
Python APIs, and tests to run. A weak or missing match says which pieces matched where.
"""

from __future__ import annotations

from ..model import Edge, EdgeHow, EdgeKind, Layer, Node, is_composite
from ..model.raises import Verdict
from ..query.cuts import describe, node_arg
from ..query.error_reach import Reach
from ..query.error_tests import ExpectingTests
from ..query.errors import ErrorOriginResult, ErrorSite, PieceMatch
from .common import showing
from .next import NextCall, call

MAX_CHAIN_OPS = 6  # ops shown with their chain per site
MAX_TESTS = 5
_UP = {EdgeKind.CALL: "called by", EdgeKind.LAUNCH: "launched by", EdgeKind.KERNEL: "the kernel of",
       EdgeKind.STUB_KERNEL: "registered in", EdgeKind.STUB_CALL: "run through the stub by",
       EdgeKind.WRAPPER: "the generated wrapper of", EdgeKind.OP_CALL: "called by the composite op",
       EdgeKind.BINDING: "bound to Python as", EdgeKind.DISPATCH_CALL: "dispatched to by"}
_VERDICT = {
    Verdict.EXACT: "Every piece of the best site's text is in the message, in order.",
    Verdict.MATCH: "Most of the message is the best site's text; some pieces differ or are missing (listed below).",
    Verdict.WEAK: "No site prints this message well; these are the closest, with the pieces that matched where.",
    Verdict.NONE: "Nothing in this tree prints this message.",
}


def chain_text(start: Node, chain: list[Edge]) -> str:
    """The way up from the raise site's function to what reaches it, one hop at a time."""
    parts = [start.label]
    for e in chain:
        if e.how is EdgeHow.META:
            word = "the meta function of"
        elif e.kind is EdgeKind.OP_CALL and e.key and not is_composite(e.key):
            word = f"called by the [{e.key}] kernel of op"  # a backend's kernel calling the op for that backend
        else:
            word = _UP.get(e.kind, e.kind.value)
        key = f" [{e.key}]" if e.key and e.kind in (EdgeKind.KERNEL, EdgeKind.STUB_KERNEL, EdgeKind.WRAPPER) else ""
        parts.append(f"{word}{key} {e.src.label}")
    return " <- ".join(parts)


def _part(p: PieceMatch) -> str:
    """Which part of a piece the message shows: all of it, its start, its end or a part inside it."""
    if p.length == len(p.piece):
        return f"{p.piece!r} at {p.at}"
    which = "the end" if p.start and p.start + p.length == len(p.piece) else "a part" if p.start else "the start"
    return f"{which} of {p.piece!r} ({p.piece[p.start:p.start + p.length]!r}) at {p.at}"


def _pieces(pieces: list[PieceMatch]) -> str:
    found = [_part(p) for p in pieces if p.at >= 0]
    missing = [repr(p.piece) for p in pieces if p.at < 0]
    out = []
    if found:
        out.append("matched " + ", ".join(found))
    if missing:
        out.append("not in the message: " + ", ".join(missing))
    return "; ".join(out)


def _reach(s: ErrorSite, r: Reach, out: list[str]) -> None:
    start = s.function
    if r.nested_in and r.decorators:  # Note [Nested defs]
        out.append(f"  A def nested in {r.nested_in}, registered by @{', @'.join(r.decorators)}: it runs where that "
                   f"registration dispatches, not when {r.nested_in} is called.")
    elif r.nested_in:
        out.append(f"  A def nested in {r.nested_in}: it runs where that def's body calls it or passes it on.")
    if r.registered:
        out.append(f"  Registered for: {', '.join(r.registered)}")
    if r.ops:
        shown = min(len(r.ops), MAX_CHAIN_OPS)
        # a walk that was cut found some of the ops only: the count is a floor, and the cuts below say what was left
        count = (f"at least {r.ops_total}, showing {shown}; the walk up was cut (below)" if r.ops_partial else
                 showing(shown, r.ops_total))
        out.append(f"  Ops that reach it ({count}), closest first:")
        for o in r.ops[:MAX_CHAIN_OPS]:
            py = f"  Python: {', '.join(o.python)}" if o.python else ""
            out.append(f"  - {o.op.label}  {o.op.loc}  depth {o.depth}{py}")
            if o.chain and start is not None:
                out.append(f"      {chain_text(start, o.chain)}")
        rest = [o.op.label for o in r.ops[MAX_CHAIN_OPS:]]
        if rest:
            out.append(f"    also: {', '.join(rest)}")
    elif r.callers:
        whose = f"the direct callers of {r.nested_in}" if r.nested_in else "its direct callers"
        out.append(f"  No op reaches it within the walk; {whose}:")
        out += [f"  - {e.src.label}  {e.site}" for e in r.callers[:5]]
    for f in r.fan_in:
        gen = f", {f.generated:,} of them in generated code" if f.generated else ""
        files = ", ".join(f"{p} ({n:,})" for p, n in f.files)
        if f.by_name:  # Note [Callers by name]
            name = f.callee.label.rsplit("::", 1)[-1]
            other = f", {f.other_classes:,} more written on other classes left out" if f.other_classes else ""
            out.append(f"  {f.callee.label}: a function named {name} is called at {f.sites:,} sites{gen}{other}; "
                       f"too many to resolve, so these are calls of any function of that name, not its callers "
                       f"({call('called_by', node_arg(f.callee))} resolves them): {files}")
        else:
            out.append(f"  {f.callee.label} is called at {f.sites:,} sites{gen}; too many to walk, its callers by "
                       f"file: {files}")
        ops = {w.dst.key: w for w in f.entries}
        for e in f.samples:
            w = ops.get(e.src.key)
            serves = f"  ({_UP[w.kind]} [{w.key}] {w.src.label})" if w is not None else ""
            out.append(f"    e.g. {'a call in ' if f.by_name else ''}{e.src.label}  {e.site}{serves}")
            if e.written:
                out.append(f"         {e.written}")
    if r.python:
        out.append(f"  Python: {', '.join(r.python)}")
    if r.tests_for and r.tests_looked_up and not (r.tests or r.opinfos):
        out.append(f"  No test is named after {r.tests_for}.")
    if r.tests or r.opinfos:
        out.append(f"  Tests to run (for {r.tests_for}):")
        out += [f"  - {o}" for o in r.opinfos]
        for t in r.tests[:MAX_TESTS]:
            how = "" if t.by_name else f"  [{t.why}]"  # found by what its body calls (an internal op's Python name)
            out.append(f"  - {t.cls + '.' if t.cls else ''}{t.name}  {t.loc}{how}")
            out.append(f"      run: {t.command}")
    for c in r.cuts:
        out.append(f"  Cut: {c}")
    out += [f"  Cut: {describe(c)}" for c in r.walk_cuts]


def _site(i: int, s: ErrorSite, detail: bool, out: list[str]) -> None:
    exc = f" ({s.exception})" if s.exception else ""
    via = f", in the expansion of {s.via}()" if s.via else ""
    named = "  [the pasted text names this site: its line, or its function in its file]" if s.hinted else ""
    out.append(f"\n## {i}. {s.loc}  {s.macro}{exc}{via}{named}")
    if s.function is not None:
        out.append(f"  in {s.function.label}  {s.function.loc}")
    if s.condition:
        # a check (TORCH_CHECK, assert, torch._check) raises when its condition fails; a Python raise sits in an
        # `if` whose test holds
        out.append(f"  raised when: {s.condition}" if s.language is Layer.PYTHON and s.macro.startswith("raise ")
                   else
                   "  raised whenever this line runs (its condition is false): the code around it decides" if
                   s.condition == "false" else
                   f"  check (raised when it fails): {s.condition}")
    if s.branch:
        out.append(f"  only in a build where {s.branch} holds (the build decides whether this check exists)")
    out.append(f"  prints: {s.template!r}")
    if detail or not s.exact:
        ends = " and ".join(w for w, on in (("starts", s.opened), ("stops", s.cut)) if on)
        cut = f"; the message {ends} inside its text" if ends else ""
        out.append(f"  pieces: {_pieces(s.pieces)} (covers {s.coverage:.0%} of the message{cut})")
    if s.reach is not None:
        _reach(s, s.reach, out)


def _expecting(e: ExpectingTests, out: list[str]) -> None:
    """The tests whose bodies spell the message (Note [Tests that expect a message])."""
    if not e.total:
        out.append(f"\nNo test spells {' or '.join(map(repr, e.needles or [e.needle]))} (searched test/ and "
                   "torch/testing/_internal/).")
        return
    spelled = " or ".join(map(repr, e.needles or [e.needle]))
    out.append(f"\nTests that expect this message (their bodies spell {spelled}; {e.total} place(s) in all):")
    for t in e.tests:
        out.append(f"- {t.cls + '.' if t.cls else ''}{t.name}  {t.loc}  {t.why}\n    run: {t.command}")
    if e.elsewhere:
        out.append("- outside any test method (helpers, OpInfo error inputs): " + ", ".join(map(str, e.elsewhere)))


def render_error_origin(r: ErrorOriginResult) -> str:
    head = r.message if len(r.message) <= 160 else r.message[:157] + "..."
    exc = f"{r.exception}: " if r.exception else ""
    out = [f"# error_origin: {exc}{head}"]
    for n in r.notes:
        out.append(f"Note: {n}.")
    for h in r.hints:
        out.append(f"The pasted text says: {h.how} {h.func + ' at ' if h.func else ''}{h.path}:{h.line}.")
    if r.verdict is Verdict.NONE:
        out.append(f"Nothing in this tree prints this message: the best site covers {r.sites[0].coverage:.0%} of it"
                   if r.sites else "Nothing in this tree prints this message: no raise site shares its words.")
        if r.foreign:
            out.append(f"The innermost frame is in {r.foreign}: the message comes from another library.")
        else:
            out.append("It may come from another library, a newer or older PyTorch, or a message built at run "
                       "time; search() or find_similar_tests() on a name in it may help.")
        for i, s in enumerate(r.sites, 1):
            out.append(f"- {i}. {s.loc}  {s.macro}: {s.template!r}\n    {_pieces(s.pieces)}")
        return "\n".join(out)
    first = r.sites[0] if r.sites else None
    if first is None:
        return "\n".join(out)
    lead = _VERDICT[r.verdict]
    if r.verdict is Verdict.MATCH and (first.opened or first.cut) and first.coverage >= 1:
        where = "around" if first.opened and first.cut else "before" if first.opened else "after"
        # Note [A part of a message]
        lead = f"All of the message is in the best site's text, which prints more {where} it (a part was pasted)."
    if r.same_text > 1 and r.verdict is Verdict.WEAK:  # none prints the message: they only match it alike
        lead = f"{lead} {r.same_text} of them match it equally (the message cannot tell them apart)."
    elif r.same_text > 1:
        others = r.total - r.same_text  # sites that match it in part, listed after them
        rest = f"; {others} more match{'es' * (others == 1)} it in part" if others > 0 else ""
        lead = (f"{r.same_text} sites print this same text (the message cannot tell them apart); each is listed "
                f"with what leads to it{rest}. {lead}")
    out.append(lead)
    out.append(f"Raise sites: {showing(len(r.sites), r.total)}, best first.")
    for i, s in enumerate(r.sites, 1):
        _site(i, s, r.verdict is Verdict.WEAK, out)
        if i == 1 and r.expecting is not None:
            _expecting(r.expecting, out)
    if r.cuts:
        out.append("\nCut: " + "; ".join(r.cuts) + ".")
    return "\n".join(out)


def next_error_origin(r: ErrorOriginResult) -> list[str]:
    out: list[str] = []
    first = r.sites[0] if r.sites and r.verdict is not Verdict.NONE else None
    if first is None:
        return out
    reach = first.reach
    if reach is not None and reach.ops:
        out.append(call("trace", reach.ops[0].op.key))
    if first.language is Layer.CPP and first.function is not None and first.function.loc is not None:
        out.append(call("impact", str(first.function.loc), depth=3))
    if reach is not None and reach.tests:
        out.append(call("test_file_info", reach.tests[0].loc.path))
    return out


__all__ = ["NextCall", "chain_text", "next_error_origin", "render_error_origin"]
