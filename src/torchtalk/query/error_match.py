"""Which raise sites print a message: every site's pieces, matched against the message in order.

The sites are read once per index version (string constants substituted, C++ text as
Python prints it, whitespace runs as one space) into one lower-case text of all their
literal pieces, in which the message's words are looked up: the sites holding its rarer
words are the candidates. Each candidate's pieces are then found in the message in order
(a value matches whatever lies between two pieces). Ranked by: where the pasted text says
the error came from, how much of the message the site's literal text covers (digits aside:
a literal "0" is weak evidence against a printed value), how much of the site's text the
message shows, whether the exception class agrees, code before tests, device- or
layout-specific code after generic code, then fewer values.
"""

from __future__ import annotations

import json
import math
import re
from bisect import bisect_right
from collections import defaultdict
from typing import NamedTuple

from ..model import RaiseKind
from ..model.raises import as_printed
from ..store.reader import Index
from .error_text import Cleaned, Where

MAX_CANDIDATES = 600  # sites aligned in full
_WORD = re.compile(r"[a-z_][a-z0-9_]{2,}")
_CONST_GAP = re.compile(r'"(?:\w+::)*(?:[A-Z][A-Z0-9_]{3,}|k[A-Z]\w+)"')
_IDENT = re.compile(r"^(?:\w+::)*(\w+)$")
_SPACE = re.compile(r"\s+")
_LOOSE = re.compile(r"\s\s|\\[ntr]")  # whitespace a squash changes, in a piece or its JSON
_NO_DIGITS = str.maketrans("", "", "0123456789")
# Directories of code that runs for one device, layout or backend only.
_SPECIAL = frozenset({"cuda", "hip", "mps", "xpu", "mkldnn", "vulkan", "metal", "nested", "sparse", "quantized",
                      "miopen", "cudnn", "mkl", "onednn", "ao", "distributed", "mtia", "lazy", "xnnpack", "qnnpack",
                      "transformers", "_inductor", "_dynamo", "onnx", "jit", "export", "fx", "_export",
                      "_functorch", "functorch"})


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


class PieceHit(NamedTuple):
    piece: str
    at: int  # offset in the matched message; -1 when it is not there


class Match(NamedTuple):
    site: Site
    hint: int  # 2: the pasted text names this site's line; 1: its C++ file
    coverage: float  # the share of the message its literal pieces cover (digits aside)
    shown: float  # the share of its literal text the message shows
    exact: bool  # every piece found in order, anchored at both ends
    same_class: bool
    hits: list[PieceHit]

    @property
    def key(self) -> tuple[object, ...]:
        """Sort key: best first."""
        s = self.site
        return (-self.hint, -round(self.coverage, 3), -round(self.shown, 3), not self.same_class, s.rank,
                len(s.pieces), s.path, s.line)

    @property
    def text_key(self) -> tuple[object, ...]:
        """Matches with equal text keys print the same message as far as the message shows."""
        return (self.hint, round(self.coverage, 3), round(self.shown, 3), self.site.pieces)


def _rank(path: str) -> int:
    parts = path.split("/")
    if "test" in parts or "testing" in parts or "tests" in parts or parts[-1].startswith("test_"):
        return 2
    return 1 if _SPECIAL.intersection(parts[:-1]) else 0


def _letters(text: str) -> int:
    return len(text.translate(_NO_DIGITS))


class Sites(NamedTuple):
    sites: list[Site]
    text: str  # every site's literal pieces, lower case, "\x00" before each site
    starts: list[int]  # where each site's text starts in ``text``
    by_path: dict[str, list[int]]
    words: dict[str, tuple[int, ...] | None]  # memo: the sites holding a word (None: too many)


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
    texts: list[str] = []
    by_path: dict[str, list[int]] = defaultdict(list)
    ranks: dict[str, int] = {}
    loads = json.loads
    for rid, fid, pieces_json, gaps_json, exc, line, end_line in ix.q(
            "SELECT id, file_id, pieces, gaps, exception, line, end_line FROM raise_site WHERE kind != ?",
            (RaiseKind.CONSTANT.value,)):
        pieces = loads(pieces_json)
        if consts and _CONST_GAP.search(gaps_json):
            pieces = _substitute(pieces, loads(gaps_json), consts, fid)
        path = paths.get(fid, "?")
        if "Type" in pieces_json and not path.endswith(".py"):
            pieces = [as_printed(p) for p in pieces]
        if _LOOSE.search(pieces_json):
            pieces = [squash(p) for p in pieces]
        joined = "\x01".join(pieces)
        literal = _letters(joined) - len(pieces) + 1
        if not literal:
            continue
        rank = ranks.get(path)
        if rank is None:
            rank = ranks[path] = _rank(path)
        by_path[path].append(len(out))
        out.append(Site(rid, path, line, end_line, tuple(pieces), literal, exc, rank))
        texts.append("\x00" + joined.lower())
    starts = []
    pos = 0
    for t in texts:
        starts.append(pos)
        pos += len(t)
    return Sites(out, "".join(texts), starts, dict(by_path), {})


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


def align(site: Site, msg: str) -> tuple[int, bool, list[PieceHit]]:
    """(literal characters found in order, digits aside; exact; where each piece was found)."""
    pieces = site.pieces
    last = len(pieces) - 1
    pos = 0
    covered = 0
    exact = True
    hits = []
    for i, p in enumerate(pieces):
        if not p:
            continue
        if i == 0:
            at = 0 if msg.startswith(p) else msg.find(p)
            exact = exact and at == 0
        elif i == last and msg.endswith(p) and len(msg) - len(p) >= pos:
            at = len(msg) - len(p)
        else:
            at = msg.find(p, pos)
            exact = exact and i != last
        hits.append(PieceHit(p, at))
        if at < 0:
            exact = False
            continue
        covered += _letters(p)
        pos = at + len(p)
    return covered, exact, hits


def _holding(data: Sites, word: str, common: int) -> tuple[int, ...] | None:
    """The sites whose text holds ``word`` (memoised per index version); None when more than ``common`` do."""
    memo = data.words
    if word in memo:
        return memo[word]
    text, starts = data.text, data.starts
    got: tuple[int, ...] | None = None
    if text.count(word) <= common:
        hits: dict[int, None] = {}
        at = text.find(word)
        while at >= 0:
            hits[bisect_right(starts, at) - 1] = None
            at = text.find(word, at + len(word))
        got = tuple(hits)
    memo[word] = got
    return got


def _candidates(data: Sites, msg: str) -> set[int]:
    """Sites holding the message's rarer words: the best MAX_CANDIDATES by summed inverse frequency. When
    every word of the message is common, the sites holding its longest ones."""
    n = max(1, len(data.sites))
    words = set(_WORD.findall(msg.lower()))
    found = [h for h in (_holding(data, w, n // 8) for w in words) if h]
    if not found:
        found = [h for h in (_holding(data, w, n) for w in sorted(words, key=len)[-2:]) if h]
    score: dict[int, float] = defaultdict(float)
    for hits in found:
        weight = math.log(n / len(hits))
        for i in hits:
            score[i] += weight
    if len(score) <= MAX_CANDIDATES:
        return set(score)
    return set(sorted(score, key=score.__getitem__, reverse=True)[:MAX_CANDIDATES])


def _hint(h: Where, s: Site) -> int:
    """2: the pasted text names this site's line; 1: its C++ file (a Python frame's file says little)."""
    if h.path != s.path:
        return 0
    if s.line <= h.line <= s.end_line:
        return 2
    return 1 if h.how != "innermost frame" else 0


def match(ix: Index, cleaned: Cleaned) -> tuple[list[Match], int]:
    """Sites ranked for a message (best first), and how many were candidates."""
    data = sites(ix)
    msg = squash(cleaned.message).strip()
    cands = _candidates(data, msg)
    for h in cleaned.hints:
        cands.update(data.by_path.get(h.path, ()))
    exc = cleaned.exception.rsplit(".", 1)[-1].lstrip("_")
    size = max(1, _letters(msg))
    out = []
    for i in cands:
        s = data.sites[i]
        covered, exact, hits = align(s, msg)
        if not covered:
            continue
        hint = max((_hint(h, s) for h in cleaned.hints), default=0)
        same = bool(exc) and s.exception.rsplit(".", 1)[-1].lstrip("_") == exc
        out.append(Match(s, hint, covered / size, covered / s.literal, exact, same, hits))
    out.sort(key=lambda m: m.key)
    return out, len(cands)
