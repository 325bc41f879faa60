"""error_origin: from an error message as PyTorch printed it to the line that raised it, and what leads there.

The pasted text is reduced to the message (error_text.py), matched against every raise
site's pieces (error_match.py), and for the best sites the answer gives the raise site,
its condition and enclosing function, then the ops, Python APIs and tests that lead there
(error_reach.py). Sites that print the same text are all listed, each with what leads to
it. A message no site prints well is answered as such: which pieces matched where, never
a silent best guess.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field

from ..graph.nodes import cpp_node, py_node
from ..graph.pp_branches import branches_at
from ..graph.symbols import symbol
from ..model import Layer, Loc, Node, NodeKind, PyFunction, RaiseKind, RaiseSite
from ..model.raises import Verdict
from ..store.codec import codec, row_fact
from ..store.reader import Index
from .args import check_int
from .cuts import node_arg, tool_call
from .error_match import Match, match, sites
from .error_reach import Reach, cpp_reach, py_reach
from .error_tests import ExpectingTests, tests_expecting
from .error_text import EXAMPLE, Where, clean
from .tests import find_similar_tests

DEFAULT_LIMIT = 5
MAX_SITES = 50
REACH_SITES = 3  # sites whose reach is walked (the others name the call that gives it)
WALK_S = 0.07  # the walks up of one answer stop expanding after this much CPU, the first site's taking at most
FIRST_WALK_S = 0.04  # this much (each walk's first step is always taken)
TESTS_S = 0.25  # tests are looked up when the answer has used less CPU than this (else it names the call)
GOOD = 0.5  # a site covering at least this share of the message, and showing
SHOWN = 0.7  # at least this share of its own text, is a match; less is a weak one
NONE = 0.25  # below this share of the message, nothing in the tree prints it
EXACT_LITERAL = 12  # characters of literal text an exact match needs to count whatever the values printed
_SITE_COLS = codec(RaiseSite).select()
_FUNC_COLS = codec(PyFunction).select()


@dataclass
class PieceMatch:
    piece: str
    at: int  # where it is in the message (as matched: whitespace runs as one space); -1 when missing
    length: int  # characters of the piece found there (fewer than all: only a part is in the message)
    start: int = 0  # where that part starts in the piece (the message starts inside it)


@dataclass
class ErrorSite:
    loc: Loc
    end_line: int
    language: Layer  # Layer.CPP or Layer.PYTHON
    kind: RaiseKind
    macro: str  # TORCH_CHECK_INDEX, throw std::runtime_error, raise ValueError, warnings.warn
    exception: str  # the class Python shows ("" when not known)
    condition: str  # the check that failed ("" when none)
    template: str  # the message it prints, each value as {expression}
    via: str  # the same-file macro whose expansion holds it ("ADDMM_META"), or ""
    function: Node | None  # the enclosing C++ or Python function
    coverage: float  # share of the message its literal text covers
    shown: float  # share of its literal text the message shows
    exact: bool  # every piece found in order, anchored at both ends
    hinted: bool  # the pasted text names this line, or its function in its file ("Exception raised from", a frame)
    cut: bool  # the message stops inside this site's text (the pieces after its end are not counted)
    opened: bool  # the message starts inside this site's text (the pieces before its start are not counted)
    branch: str  # C++: the preprocessor branches the line is compiled in ("#if !AT_BUILD_WITH_BLAS()"), "" when none
    pieces: list[PieceMatch]
    reach: Reach | None = None  # None when not walked (see ErrorOriginResult.cuts)


@dataclass
class ErrorOriginResult:
    message: str  # the message as matched (after stripping what PyTorch adds)
    exception: str  # the class the pasted text named
    verdict: Verdict
    sites: list[ErrorSite]
    total: int  # sites that match as well as the shown ones' group
    same_text: int  # sites printing the best site's text (as far as the message shows)
    candidates: int  # sites compared in full
    hints: list[Where] = field(default_factory=list)
    foreign: str = ""  # the innermost frame's file when it is not PyTorch's
    notes: list[str] = field(default_factory=list)
    cuts: list[str] = field(default_factory=list)
    expecting: ExpectingTests | None = None  # tests whose bodies spell the best site's text (Note [Tests that
    #                                          expect a message]); None when not looked up


def _verdict(best: Match | None) -> Verdict:
    if best is not None and best.exact and best.site.literal >= EXACT_LITERAL:
        return Verdict.EXACT  # every piece in order: the values printed may be most of the message
    if best is None or best.coverage < NONE:
        return Verdict.NONE
    if best.coverage >= GOOD and best.shown >= SHOWN:
        return Verdict.EXACT if best.exact else Verdict.MATCH
    return Verdict.WEAK


def _function(ix: Index, site: RaiseSite) -> tuple[Node | None, PyFunction | None]:
    if site.cpp_func >= 0:
        sym = symbol(ix, site.cpp_func)
        return (cpp_node(sym) if sym else None), None
    if site.py_func >= 0:
        row = ix.one(f"SELECT {_FUNC_COLS} FROM py_function WHERE id = ?", (site.py_func,))
        if row:
            fn: PyFunction = row_fact(PyFunction, row, ix.path_of)
            # the innermost def, a nested one as outer.<locals>.inner (Note [Nested defs] in error_reach.py)
            return py_node(NodeKind.PY_FUNCTION, f"{fn.module}.{fn.qualname}", fn.loc), fn
    return None, None


def _site(ix: Index, m: Match, walk: float, tests_until: float, message: str) -> ErrorSite | None:
    """The answer's part for one site; ``walk`` is the CPU its walk up may take (negative: no walk)."""
    row = ix.one(f"SELECT {_SITE_COLS} FROM raise_site WHERE id = ?", (m.site.id,))
    if row is None:
        return None
    rs: RaiseSite = row_fact(RaiseSite, row, ix.path_of)
    node, fn = _function(ix, rs)
    reach = None
    if walk >= 0 and node is not None:
        if fn is not None:
            reach = py_reach(ix, fn.id, node.key, fn.cls, fn.name, tests_until, node, json.loads(fn.decorators or "[]"))
        elif node.kind is not NodeKind.PY_FUNCTION:
            reach = cpp_reach(ix, node, walk, tests_until, message)
    pieces = [PieceMatch(h.piece, h.at, h.length, h.start) for h in m.hits]
    return ErrorSite(rs.loc, rs.end_line, Layer.PYTHON if rs.is_python else Layer.CPP, rs.kind, rs.macro, rs.exception,
                     rs.condition, rs.template, rs.via, node, round(m.coverage, 3), round(m.shown, 3), m.exact,
                     m.hint == 2, m.cut, m.opened, _branch(ix, rs), pieces, reach)


def _branch(ix: Index, rs: RaiseSite) -> str:
    """The preprocessor branches a C++ raise site is compiled in, innermost last: a build without them has no such
    check (a stand-in for a build without a library raises only there)."""
    if rs.is_python:
        return ""
    return " and ".join(b.part for b in branches_at(ix, rs.loc.path, rs.loc.line) if b.part)


def warm(ix: Index) -> None:
    """Load what a first answer would otherwise pay for (the raise sites, the test names, the tables the walks
    up build on first use: stub registrations, bindings, structured ops) by answering the example."""
    sites(ix)
    find_similar_tests(ix, "add", 1, by_body=False)
    error_origin(ix, EXAMPLE)


def error_origin(ix: Index, message: str, limit: int = DEFAULT_LIMIT) -> ErrorOriginResult:
    limit = check_int(limit, "limit", 1, MAX_SITES)
    start = ix.work_clock()  # CPU of this thread less table builds: budgets that depend on neither the machine's
    #                           load nor what earlier answers loaded
    cleaned = clean(message)
    ranked, candidates = match(ix, cleaned)
    best = ranked[0] if ranked else None
    verdict = _verdict(best)
    cuts: list[str] = []
    shown: list[Match] = []
    same = 0
    total = 0

    def like_best(m: Match) -> bool:
        """The same text and, when the message names its exception class, the same class: what it cannot tell
        apart from the best site."""
        return best is not None and m.text_key == best.text_key and m.same_class == best.same_class

    if best is not None:
        same = sum(1 for m in ranked if like_best(m))
        if best.hint == 2 and best.exact:
            # the pasted text names the site and it prints the message: only the sites printing the same text (or
            # all of the message as well) could have raised it
            good = [m for m in ranked if m.text_key == best.text_key or m.exact and m.coverage >= best.coverage]
        else:
            # beside an exact site, a site that shows a part of the message only (its first 12 characters) is noise
            floor = best.coverage * (0.8 if best.exact else 0.5)
            good = [m for m in ranked if m.coverage >= floor]
        total = len(good)
        shown = good[:max(limit, 1)] if verdict is not Verdict.NONE else ranked[:min(limit, 3)]
    sites = []
    walks_until = ix.work_clock() + WALK_S
    for i, m in enumerate(shown):
        left = max(0.0, walks_until - ix.work_clock())
        walk = -1.0 if i >= REACH_SITES or verdict is Verdict.NONE else min(left, FIRST_WALK_S) if not i else left
        # tests for the best site, and for each other site printing the same text (the message cannot tell which
        # raised it), while the answer's CPU allows
        s = _site(ix, m, walk, start + TESTS_S * (1 + i) if not i or same > 1 and like_best(m) else 0.0,
                  cleaned.message)
        if s is not None:
            sites.append(s)
            if s.reach is not None:
                walks_until += s.reach.tests_cpu  # the walks' budget is theirs: a test lookup spends none of it
    if len(shown) > REACH_SITES and verdict is not Verdict.NONE:
        nxt = next((s.function for s in sites[REACH_SITES:] if s.function is not None and s.function.loc), None)
        how = (f"{tool_call('impact', node_arg(nxt), depth=3)} walks site {REACH_SITES + 1}'s function, and likewise "
               "for the others" if nxt is not None else "impact(\"path:line\") on another site's function walks it")
        cuts.append(f"what leads there is walked for the first {REACH_SITES} sites; {how}")
    if total > len(shown) and verdict is not Verdict.NONE:
        cuts.append(f"sites: showing {len(shown)} of {total} (limit={min(total, MAX_SITES)} shows more)")
    # the best site's text, or the part of it the message shows when the message starts inside it
    expecting = tests_expecting(ix, [p.piece[p.start:p.start + p.length] if p.start else p.piece
                                     for p in sites[0].pieces if p.at >= 0]) \
        if sites and verdict is not Verdict.NONE else None
    return ErrorOriginResult(cleaned.message, cleaned.exception, verdict, sites, total, same, candidates,
                             cleaned.hints, cleaned.foreign, cleaned.notes, cuts, expecting)

