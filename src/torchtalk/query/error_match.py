"""Which raise sites print a message: every site's pieces, matched against the message in order.

The sites are read once per index version (string constants substituted, C++ text as
Python prints it, whitespace runs as one space), with the words of their literal text:
the sites holding the message's words, rarer words weighing more, are the candidates.
Each candidate's pieces are then found in the message in order (a value matches whatever
lies between two pieces). Ranked by: where the pasted text says the error came from, how
much of the message the site's literal text covers (digits aside: a literal "0" is weak
evidence against a printed value), how much of the site's text the message shows, whether
the exception class agrees, code before tests, device- or layout-specific and generated
code after generic code, then fewer values.
"""

from __future__ import annotations

import json
import math
import re
from collections import defaultdict
from typing import NamedTuple

from ..model import GENERATED_PREFIX, RaiseKind
from ..model.paths import CPP_FRONTEND, backend_of_path
from ..model.raises import ASSERT_HEAD, CHECK_TAIL, HintKind, as_printed, assert_parts
from ..store.reader import Index
from .error_align import PieceHit, align
from .error_align import letters as _letters
from .error_text import Cleaned, Where

MAX_CANDIDATES = 300  # sites aligned in full
STARTS = 0.5  # share of a message a site printing it from its start covers to rank before sites it starts inside
_WORD = re.compile(r"[a-z_][a-z0-9_]{2,}")
_CONST_GAP = re.compile(r'"(?:\w+::)*(?:[A-Z][A-Z0-9_]{3,}|k[A-Z]\w+)"')
_IDENT = re.compile(r"^(?:\w+::)*(\w+)$")
_SPACE = re.compile(r"\s+")
_LOOSE = re.compile(r"\s\s|\\[ntr]")  # whitespace a squash changes, in a piece or its JSON
SEP = "\x00"  # where a macro's own text was in a message (Note [Assert boilerplate]): no piece holds it
# Directories of code that runs for one layout, library or subsystem only (a device's code is told by
# model.paths.backend_of_path).
_SPECIAL = frozenset({"mkldnn", "vulkan", "metal", "nested", "sparse", "quantized", "mkl", "onednn", "ao",
                      "distributed", "mtia", "lazy", "xnnpack", "qnnpack", "transformers", "_inductor", "_dynamo",
                      "onnx", "jit", "export", "fx", "_export", "_functorch", "functorch"})


def squash(text: str) -> str:
    return _SPACE.sub(" ", text)


class Site(NamedTuple):
    """A raise site as matched: its row and its pieces as printed."""

    id: int
    path: str
    line: int
    end_line: int
    pieces: tuple[str, ...]
    literal: int  # characters of literal text, digits aside
    exception: str
    rank: int  # 0: code; 1: device/layout-specific code; 2: tests
    function: str = ""  # the name of the function around it (C++ or Python), its last component
    own: int = 0  # the first of its pieces after a macro's head (an assert's message: 1), all of them when 0
    own_literal: int = 0  # characters of literal text of those pieces, digits aside

    def part(self, headless: bool) -> tuple[tuple[str, ...], int]:
        """The pieces a message is matched against, and their literal characters: after the macro's head when the
        message does not show it (Note [Assert boilerplate])."""
        return (self.pieces[self.own:], self.own_literal) if headless and self.own else (self.pieces, self.literal)


class Match(NamedTuple):
    site: Site
    hint: int  # 2: the pasted text names this site's line; 1: its C++ file
    coverage: float  # the share of the message its literal pieces cover (digits aside)
    shown: float  # the share of its literal text the message shows (before the message's end, when cut)
    exact: bool  # every piece found in order, anchored at both ends
    same_class: bool
    cut: bool  # the message stops inside this site's text (``shown`` counts the text before its end)
    hits: list[PieceHit]
    opened: bool = False  # the message starts inside this site's text (Note [A part of a message])
    headless: bool = False  # matched against its own message only, the macro's head not in the message
    contradicts: bool = False  # it cannot raise the class the pasted text names (Note [A class that rules out])
    demoted: bool = False  # the message starts inside its text, though a class before it says where it starts
    #                        and another site's text starts there (Note [A part of a message])

    @property
    def key(self) -> tuple[object, ...]:
        """Sort key: best first."""
        s = self.site
        return (-self.hint, self.contradicts, self.demoted, -round(self.coverage, 3), -round(self.shown, 3),
                self.opened, not self.exact, not self.same_class, s.rank, len(s.pieces), s.path, s.line)

    @property
    def text_key(self) -> tuple[object, ...]:
        """Matches with equal text keys print the same message as far as the message shows (a message that starts
        inside their text: the same part of it, Note [A part of a message])."""
        text = tuple(h.piece[h.start:h.start + h.length] for h in self.hits if h.at >= 0) if self.opened else \
            self.site.part(self.headless)[0]
        return (self.hint, self.demoted, round(self.coverage, 3), round(self.shown, 3), text)


# Note [A class that rules out]
# ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
# Which class a site raises mostly only tells sites apart among those the text ranks equal (a TORCH_CHECK's
# RuntimeError, a Python raise's class as written). A Python ``assert`` is the exception: it raises AssertionError
# and nothing else, so an error pasted as another class did not come from it, however much of the message it spells;
# and an AssertionError came from no TORCH_CHECK. torch/_meta_registrations.py asserts what the C++ kernel checks,
# in the same words and more of them (``linalg.inv: A must be batches of square matrices``, the C++ check printing
# f_name and arg_name as values), so it covered more of the message than the kernel's check a user hits.
_ASSERT = "AssertionError"


def _contradicts(pasted: str, raised: str) -> bool:
    """Whether a site raising ``raised`` cannot have raised the class ``pasted`` names (Note [A class that rules
    out])."""
    return bool(pasted and raised) and pasted != raised and _ASSERT in (pasted, raised)


def is_test_path(path: str) -> bool:
    """A file of tests: under test/, tests/ or testing/, or named test_*."""
    parts = path.split("/")
    return "test" in parts or "testing" in parts or "tests" in parts or parts[-1].startswith("test_")


def _rank(path: str) -> int:
    """0: code; 1: generated code (one copy per op), the C++ frontend (Python never runs it) or code for one
    device, layout or backend; 2: tests."""
    if is_test_path(path):
        return 2
    parts = path.split("/")
    special = (path.startswith((GENERATED_PREFIX, CPP_FRONTEND)) or backend_of_path(path) not in ("", "CPU")
               or _SPECIAL.intersection(parts[:-1]))
    return 1 if special else 0


class Sites(NamedTuple):
    sites: list[Site]
    words: dict[str, list[int]]  # word (lower case) -> the sites whose literal text holds it
    by_path: dict[str, list[int]]


def sites(ix: Index) -> Sites:
    """The raise sites as matched, read once per index version."""
    return ix.cached("error_sites", lambda: _load(ix))


def _load(ix: Index) -> Sites:
    paths = ix.paths()
    consts: dict[str, list[tuple[int, tuple[str, ...]]]] = defaultdict(list)
    for fid, name, pieces in ix.q("SELECT file_id, macro, pieces FROM raise_site WHERE kind = ?",
                                  (RaiseKind.CONSTANT.value,)):
        consts[name].append((fid, tuple(json.loads(pieces))))
    out: list[Site] = []
    words: dict[str, list[int]] = defaultdict(list)
    by_path: dict[str, list[int]] = defaultdict(list)
    ranks: dict[str, int] = {}
    loads = json.loads
    findall = _WORD.findall
    assert_kind = RaiseKind.ASSERT.value
    for rid, fid, kind, pieces_json, gaps_json, exc, line, end_line, function in ix.q(
            "SELECT r.id, r.file_id, r.kind, r.pieces, r.gaps, r.exception, r.line, r.end_line, "
            "coalesce(c.name, p.name, '') "
            "FROM raise_site r LEFT JOIN cpp_symbol c ON c.id = r.cpp_func LEFT JOIN py_function p ON p.id = r.py_func "
            "WHERE r.kind != ?", (RaiseKind.CONSTANT.value,)):
        pieces = loads(pieces_json)
        if consts and _CONST_GAP.search(gaps_json):
            pieces = _substitute(pieces, loads(gaps_json), consts, fid)
        path = paths.get(fid, "?")
        if "Type" in pieces_json and not path.endswith(".py"):
            pieces = [as_printed(p) for p in pieces]
        if _LOOSE.search(pieces_json):
            pieces = [squash(p) for p in pieces]
        own = own_literal = 0
        parts = assert_parts(pieces) if kind == assert_kind else None
        if parts is not None:  # the assert's head becomes a value between its condition and its own message
            pieces = [parts[0], *parts[1]]
            own, own_literal = 1, _letters("".join(parts[1]))
        elif CHECK_TAIL in pieces[-1]:  # a message-less check: its condition, then the macro's own text
            pieces[-1] = pieces[-1].replace(CHECK_TAIL, "")
            pieces.append("")
        joined = "\x01".join(pieces)
        literal = _letters(joined) - len(pieces) + 1
        if not literal:
            continue
        rank = ranks.get(path)
        if rank is None:
            rank = ranks[path] = _rank(path)
        i = len(out)
        by_path[path].append(i)
        out.append(Site(rid, path, line, end_line, tuple(pieces), literal, exc, rank, function, own, own_literal))
        for w in set(findall(joined.lower())):
            words[w].append(i)
    return Sites(out, dict(words), dict(by_path))


def _substitute(pieces: list[str], gaps: list[str], consts: dict[str, list[tuple[int, tuple[str, ...]]]],
                fid: int) -> list[str]:
    """A value that names a string constant prints the constant (its own file's, else the only one of that
    name): its gap becomes literal text."""
    out = [pieces[0]]
    for g, p in zip(gaps, pieces[1:], strict=True):
        m = _IDENT.match(g)
        found = consts.get(m.group(1), []) if m else []
        mine = [c for f, c in found if f == fid] or ([found[0][1]] if len(found) == 1 else [])
        if mine and len(mine[0]) == 1:
            out[-1] += mine[0][0] + p
        else:
            out.append(p)
    return out


def _candidates(data: Sites, msg: str) -> set[int]:
    """Sites holding the message's words, the best MAX_CANDIDATES by summed inverse frequency (so a site
    with many of its common words can outrank one with a rare word a value printed); words more than half
    of the sites hold say nothing."""
    n = max(1, len(data.sites))
    score: dict[int, float] = defaultdict(float)
    for w in set(_WORD.findall(msg.lower())):
        hits = data.words.get(w)
        if not hits or len(hits) > n // 2:
            continue
        weight = math.log(n / len(hits))
        for i in hits:
            score[i] += weight
    if len(score) <= MAX_CANDIDATES:
        return set(score)
    return set(sorted(score, key=score.__getitem__, reverse=True)[:MAX_CANDIDATES])


def _hint(h: Where, s: Site) -> int:
    """2: the pasted text names this site's line, or its function in its file (a build of other sources prints
    other line numbers); 1: its C++ file (a Python frame's file says little)."""
    if h.path != s.path:
        return 0
    named = h.func.rsplit("::", 1)[-1].rsplit(".", 1)[-1].strip() if h.func else ""
    if s.line <= h.line <= s.end_line or named and named == s.function:
        return 2
    return 1 if h.how is not HintKind.FRAME else 0


def match(ix: Index, cleaned: Cleaned) -> tuple[list[Match], int]:
    """Sites ranked for a message (best first), and how many were candidates."""
    data = sites(ix)
    msg = squash(cleaned.message).strip()
    # the text a macro prints at every site is no evidence (Note [Assert boilerplate]); a message without an
    # assert's head is matched against the asserts' own messages
    headless = not ASSERT_HEAD.search(msg)
    msg = ASSERT_HEAD.sub(SEP, msg).replace(CHECK_TAIL, SEP)
    cands = _candidates(data, msg)
    for h in cleaned.hints:
        cands.update(data.by_path.get(h.path, ()))
    exc = cleaned.exception.rsplit(".", 1)[-1].lstrip("_")
    size = max(1, _letters(msg) - msg.count(SEP))
    out = []
    for i in cands:
        s = data.sites[i]
        pieces, literal = s.part(headless)
        a = align(pieces, msg)
        if not a.covered:
            continue
        hint = max((_hint(h, s) for h in cleaned.hints), default=0)
        raised = s.exception.rsplit(".", 1)[-1].lstrip("_")
        same = bool(exc) and raised == exc
        shown = a.covered / max(1, literal - a.cut - a.head)
        out.append(Match(s, hint, a.covered / size, shown, a.exact, same, a.cut > 0, a.hits, a.head > 0, headless,
                         _contradicts(exc, raised)))
    if exc and any(not m.opened and m.coverage >= STARTS for m in out):
        out = [m._replace(demoted=True) if m.opened else m for m in out]
    out.sort(key=lambda m: m.key)
    return out, len(cands)
