"""The tests that expect an error message: the test bodies that spell the matched site's text.

Note [Tests that expect a message]
A test that checks an error spells its message, or a part of it, in its body:
``assertRaisesRegex(RuntimeError, "Input is supposed to be a vector")``, ``pytest.raises(match=...)``,
an ``ErrorInput(..., error_regex=...)`` of an OpInfo. Such a test is the one to run after changing the check,
whatever it is named after. The needles are runs of plain text (letters, digits, spaces and plain
punctuation: nothing a regex would escape, and no clause break , : ; after which a test's pattern often stops) in
the site's literal pieces (never a run of a macro's own text, which every site of it prints: Note [Assert
boilerplate]), each at least ``MIN_NEEDLE`` characters and more than one word (an identifier alone,
``allgather_coalesced``, is what tests call, not a message) whose words the tree's raise sites hold together
rarely (were they spread over the sites at random, fewer than one would hold them all: "Calling torch", the head of
"Calling torch.triangular_solve on a CPU tensor requires compiling ...", is in dynamo's tests of "Calling
torch.func.vmap(compiled_fn)"; "size mismatch" in hundreds), so that a regex spelling of the message, or of one
clause, still holds one: the message's first run (a test often asserts the head: "expected 'self' and 'other' to
have same size" of the dense-sparse add check) and the longest others, at most ``MAX_NEEDLES``. The test files (and
torch/testing/_internal, where OpInfo error inputs live) are searched for them as bytes, each hit placed in the test
method whose lines hold it; a test spelling more of them ranks first. The scan reads the files every time (~30 MB,
tens of ms on a warm page cache): nothing is cached, so a refreshed test is seen at once.
"""

from __future__ import annotations

import json
import math
import re
from dataclasses import dataclass, field

from ..graph.cpp_text import comment_at
from ..model import Loc
from ..model.raises import BOILERPLATE
from ..store.reader import Index
from .error_match import _WORD, Sites, sites
from .testclasses import run_where_collected
from .testnames import generated_names, run_command
from .tests import FoundTest, device_instantiations

MIN_NEEDLE = 12
MAX_NEEDLES = 3
MAX_HITS = 50  # hits placed (the rest are counted)
_PLAIN = re.compile(r"[A-Za-z0-9_ '\"=<>!@%&/#~`-]+")
_DIRS = ("test/", "torch/testing/_internal/")


@dataclass
class ExpectingTests:
    needle: str  # the first text searched for (the message's head)
    tests: list[FoundTest]  # test methods whose bodies hold one, those holding more first, then in path order
    elsewhere: list[Loc]  # hits outside any test method (helpers, OpInfo error inputs), first few
    total: int  # hits in all
    needles: list[str] = field(default_factory=list)  # every text searched for, the head first


# Words any message may hold: a run made of them alone ("but they are", "should contain", "is not divisible by",
# "at dimension") is in many unrelated tests (test_dataloader.py's docstring "..., but they are all safe to ignore"
# was listed as expecting linalg.inv's "must be batches of square matrices, but they are 2 by 3 matrices").
_GENERIC = frozenset("""but they are the that this with from have been should must expected received receive got
given input inputs output outputs size sizes dimension dimensions dim dims tensor tensors contain contains divisible
equal match matches number type types value values argument arguments same shape shapes least most than more less
only when will does were which into either both element elements found support supported supports invalid
need needs length index indices instead also other""".split())


def _specific(run: str) -> bool:
    """Whether a run holds a word of its own (Note [Tests that expect a message]): not only words any message has."""
    return any(len(w) >= 4 and w.lower() not in _GENERIC for w in re.findall(r"[A-Za-z_]\w*", run))


def _rare(run: str, data: Sites) -> bool:
    """Whether the raise sites hold a run's words together rarely enough to tell a message by (Note [Tests that
    expect a message]): were its words spread over the sites at random, fewer than one site would hold them all."""
    n = max(1, len(data.sites))
    words = set(_WORD.findall(run.lower()))
    return sum(math.log(n / max(1, len(data.words.get(w, ())))) for w in words) >= math.log(n)


def needles_of(pieces: list[str], data: Sites | None = None) -> list[str]:
    """The plain-text runs of the pieces searched for (Note [Tests that expect a message]): the first, then the
    longest others; [] when none is ``MIN_NEEDLE`` long, of several words, of a word more specific than any
    message's (``_GENERIC``) and, given the tree's raise sites, rare among them."""
    runs = [r for p in pieces for m in _PLAIN.finditer(p) if len(r := m.group(0).strip()) >= MIN_NEEDLE and " " in r
            and not any(r in b for b in BOILERPLATE) and _specific(r) and (data is None or _rare(r, data))]
    runs = list(dict.fromkeys(runs))
    return runs[:1] + sorted(runs[1:], key=len, reverse=True)[:MAX_NEEDLES - 1]


def _in_comment(data: bytes, at: int) -> bool:
    """Whether offset ``at`` of a Python file is in a ``#`` comment: a ``#`` before it on its line, outside quotes."""
    return comment_at(data[data.rfind(b"\n", 0, at) + 1:at].decode("utf-8", "replace"), "#") >= 0


def tests_expecting(ix: Index, pieces: list[str], limit: int = 5) -> ExpectingTests | None:
    """The tests whose bodies spell a plain run of ``pieces`` (None: no run is long enough)."""
    needles = needles_of(pieces, sites(ix))
    if not needles:
        return None
    raws = [n.encode() for n in needles]
    root = ix.source_root
    hits: list[tuple[int, str, int, int]] = []  # (file id, path, line, needle)
    total = 0
    for fid, path in sorted(ix.paths().items(), key=lambda x: x[1]):
        if not path.startswith(_DIRS) or not path.endswith(".py") or root is None:
            continue
        try:
            data = (root / path).read_bytes()
        except OSError:
            continue
        for k, raw in enumerate(raws):
            at = data.find(raw)
            while at >= 0:
                if not _in_comment(data, at):  # "# proper sorting with duplicate keys" expects nothing
                    total += 1
                    if len(hits) < MAX_HITS:
                        hits.append((fid, path, data.count(b"\n", 0, at) + 1, k))
                at = data.find(raw, at + len(raw))
    found: dict[int, tuple[FoundTest, set[int]]] = {}
    elsewhere: list[Loc] = []
    inst = device_instantiations(ix)
    for fid, path, line, k in hits:
        row = ix.one("SELECT m.id, coalesce(c.name, ''), m.name, m.line, m.decorators FROM test_method m "
                     "LEFT JOIN test_class c ON c.id = m.cls WHERE m.file_id = ? AND m.line <= ? AND m.end_line >= ? "
                     "ORDER BY m.line DESC LIMIT 1", (fid, line, line))
        if row is None:
            if len(elsewhere) < 3 and Loc(path, line) not in elsewhere:
                elsewhere.append(Loc(path, line))
            continue
        mid, cls, name, mline, decos = row
        if mid in found:
            found[mid][1].add(k)
            continue
        decorators = json.loads(decos or "[]")
        opts = inst.get((fid, cls))
        spells = f" (line {line})" if len(needles) == 1 else f": spells {needles[k]!r} (line {line})"
        found[mid] = (FoundTest(name, cls, Loc(path, mline), f"expects the message{spells}",
                                run_command(path, cls, name, decorators, opts), decorators,
                                generated_names(cls, name, decorators, opts)), {k})
    ranked = sorted(found.values(), key=lambda f: (-len(f[1]), f[0].loc.path, f[0].loc.line))
    return ExpectingTests(needles[0], run_where_collected(ix, [t for t, _k in ranked[:limit]]), elsewhere, total,
                          needles)


__all__ = ["ExpectingTests", "MIN_NEEDLE", "needles_of", "tests_expecting"]
