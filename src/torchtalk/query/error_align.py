"""A site's pieces found in a message, in order: all of them, the start of the one the message stops inside, the
end of the one it starts inside (Note [A part of a message])."""

from __future__ import annotations

from typing import NamedTuple

MIN_PREFIX = 12  # characters of a piece's start that count when the whole piece is not in the message
_NO_DIGITS = str.maketrans("", "", "0123456789")


class PieceHit(NamedTuple):
    piece: str
    at: int  # offset in the matched message; -1 when it is not there
    length: int  # characters of the piece found there: all of them, or a part (a message edited or cut)
    start: int = 0  # where that part starts in the piece (the message starts inside it: Note [A part of a message])


def letters(text: str) -> int:
    return len(text.translate(_NO_DIGITS))


class Aligned(NamedTuple):
    covered: int  # literal characters found in order, digits aside
    exact: bool  # every piece found in order, anchored at both ends
    cut: int  # literal characters of the pieces after the message's end (it stops inside the site's text)
    hits: list[PieceHit]
    head: int = 0  # literal characters before the message's start (it starts inside the site's text: Note [A part
    #                of a message])


# Note [A part of a message]
# ~~~~~~~~~~~~~~~~~~~~~~~~~~
# Users paste a part of a message as often as all of it: a printed value and what comes before it dropped
# ("can't be cast to the desired output type" of "result type Float can't be cast to the desired output type
# Long"), a line taken from the middle of a wrapped one, a first word written in lower case ("expected kernel_size
# equals to 2" of "It is expected kernel_size equals to 2, but got size 3"). So the text may start inside a site's
# text, not only stop there: the message lying inside one piece covers all of it; else the first piece found may be
# found by its end, the message's start (upper and lower case alike). The site's text before the message's start
# (and after its end) is outside what was pasted: it is not counted as missing, so a site printing the part shows
# all of it, and ranks after a site printing the message from its start when they match alike. A message pasted
# with its class ("RuntimeError: Given groups=1, ...") is whole at its start: a site whose text starts there
# (covering half of it or more) ranks before every site it would start inside, whose values may match more of it
# by chance (qconv.cpp's "[QConv2D] Given groups=" and its eight ", " pieces, found in "[8, 3, 3, 3]").


def _inside(pieces: tuple[str, ...], msg: str) -> Aligned | None:
    """The message as a part of one piece (Note [A part of a message]): all of it covered, the rest cut."""
    low = msg.lower()
    for i, p in enumerate(pieces):
        at = p.lower().find(low)
        if at >= 0 and len(p) > len(msg):
            head = sum(letters(q) for q in pieces[:i]) + letters(p[:at])
            cut = sum(letters(q) for q in pieces[i + 1:]) + letters(p[at + len(msg):])
            hits = [PieceHit(q, 0, len(msg), at) if k == i else PieceHit(q, -1, 0) for k, q in enumerate(pieces) if q]
            return Aligned(letters(msg), False, cut, hits, head)
    return None


def _tail(piece: str, msg: str) -> int:
    """Where the longest end of ``piece`` that starts the message begins in it (upper and lower case alike), or -1;
    the end is 12 characters or more, or the whole piece (Note [A part of a message])."""
    lp, lm = piece.lower(), msg.lower()
    need = min(MIN_PREFIX, len(piece))
    j = lp.find(lm[:need])
    while j >= 0:
        if lm.startswith(lp[j:]):
            return j
        j = lp.find(lm[:need], j + 1)
    return -1


def align(pieces: tuple[str, ...], msg: str) -> Aligned:
    """Find a site's pieces in the message, in order. A message that stops inside the site's text (pasted
    short, or cut by a terminal) matches the pieces before its end; the start of the next piece may end it. One
    that starts inside it matches from there (Note [A part of a message])."""
    last = len(pieces) - 1
    pos = 0
    covered = 0
    exact = True
    hits = []
    first_missing = -1  # the first piece not found whole, when every piece after it is missing too
    broken = False  # a piece is missing before one that was found: the message is no cut-short copy
    head = 0  # literal characters before the message's start (it starts inside the site's text)
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
        if at < 0 and not covered:
            j = _tail(p, msg)
            if j >= 0:  # the message starts inside this piece, or with it in another case
                exact = False
                head = sum(letters(q) for q in pieces[:i]) + letters(p[:j])
                hits.append(PieceHit(p, 0, len(p) - j, j))
                first_missing = -1
                covered += letters(p[j:])
                pos = len(p) - j
                continue
        if at < 0:
            exact = False
            k, at = _prefix(p, msg, pos)
            hits.append(PieceHit(p, at, k))
            if first_missing < 0:
                first_missing = i
            if k:
                covered += letters(p[:k])
                pos = at + k
            continue
        hits.append(PieceHit(p, at, len(p)))
        if not covered and i:  # the message starts at a value or after it: the pieces before are outside it
            head = sum(letters(q) for q in pieces[:i])
            first_missing = -1
        if first_missing >= 0:
            broken = True
        covered += letters(p)
        pos = at + len(p)
    cut = 0
    if first_missing > 0 and covered and not broken:
        p = pieces[first_missing]
        got = next(h.length for h in hits if h.piece is p)
        k = got or next((k for k in range(min(len(p), len(msg) - pos), 0, -1) if msg.endswith(p[:k])), 0)
        if not got:
            covered += letters(p[:k])
        cut = sum(letters(q) for q in pieces[first_missing:]) - letters(p[:k])
    if not exact and (covered < letters(msg) or not cut and not head):
        inside = _inside(pieces, msg)  # the message inside one piece; or its start, the rest of the piece cut
        if inside is not None and inside.covered >= covered:
            return inside
    return Aligned(covered, exact, cut, hits, head)


def _prefix(piece: str, msg: str, pos: int) -> tuple[int, int]:
    """(length, offset) of the longest start of ``piece`` (12 characters or more) in ``msg`` after ``pos``, or
    (0, -1): a message edited or cut short inside a long piece still shows where it was."""
    lo, hi = MIN_PREFIX, len(piece) - 1
    if hi < lo or msg.find(piece[:lo], pos) < 0:
        return 0, -1
    while lo < hi:  # found(k) is monotone: a longer start found means every shorter one is
        mid = (lo + hi + 1) // 2
        if msg.find(piece[:mid], pos) >= 0:
            lo = mid
        else:
            hi = mid - 1
    return lo, msg.find(piece[:lo], pos)
