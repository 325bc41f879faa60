"""The tests that expect an error message: the test bodies that spell the matched site's text.

Note [Tests that expect a message]
A test that checks an error spells its message, or a part of it, in its body:
``assertRaisesRegex(RuntimeError, "Input is supposed to be a vector")``, ``pytest.raises(match=...)``,
an ``ErrorInput(..., error_regex=...)`` of an OpInfo. Such a test is the one to run after changing the check,
whatever it is named after. The needle is the longest run of plain text (letters, digits, spaces and plain
punctuation: nothing a regex would escape, and no clause break , : ; after which a test's pattern often stops) in
the site's literal pieces, at least ``MIN_NEEDLE`` characters, so that a regex spelling of the message, or of its
first clause, still holds it; the test files (and torch/testing/_internal, where OpInfo
error inputs live) are searched for it as bytes, each hit placed in the test method whose lines hold it. The scan
reads the files every time (~30 MB, tens of ms on a warm page cache): nothing is cached, so a refreshed test is
seen at once.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass

from ..model import Loc
from ..store.reader import Index
from .testclasses import run_where_collected
from .testnames import generated_names, run_command
from .tests import FoundTest, device_instantiations

MIN_NEEDLE = 12
MAX_HITS = 50  # hits placed (the rest are counted)
_PLAIN = re.compile(r"[A-Za-z0-9_ '\"=<>!@%&/#~`-]+")
_DIRS = ("test/", "torch/testing/_internal/")


@dataclass
class ExpectingTests:
    needle: str  # the text searched for
    tests: list[FoundTest]  # test methods whose bodies hold it, in path order
    elsewhere: list[Loc]  # hits outside any test method (helpers, OpInfo error inputs), first few
    total: int  # hits in all


def needle_of(pieces: list[str]) -> str:
    """The longest plain-text run of the pieces (stripped), or "" when none is ``MIN_NEEDLE`` long."""
    runs = [m.group(0).strip() for p in pieces for m in _PLAIN.finditer(p)]
    best = max(runs, key=len, default="")
    return best if len(best) >= MIN_NEEDLE else ""


def tests_expecting(ix: Index, pieces: list[str], limit: int = 5) -> ExpectingTests | None:
    """The tests whose bodies spell the longest plain run of ``pieces`` (None: no run is long enough)."""
    needle = needle_of(pieces)
    if not needle:
        return None
    raw = needle.encode()
    root = ix.source_root
    hits: list[tuple[int, str, int]] = []  # (file id, path, line)
    total = 0
    for fid, path in sorted(ix.paths().items(), key=lambda x: x[1]):
        if not path.startswith(_DIRS) or not path.endswith(".py") or root is None:
            continue
        try:
            data = (root / path).read_bytes()
        except OSError:
            continue
        at = data.find(raw)
        while at >= 0:
            total += 1
            if len(hits) < MAX_HITS:
                hits.append((fid, path, data.count(b"\n", 0, at) + 1))
            at = data.find(raw, at + len(raw))
    tests: dict[int, FoundTest] = {}
    elsewhere: list[Loc] = []
    inst = device_instantiations(ix)
    for fid, path, line in hits:
        row = ix.one("SELECT m.id, coalesce(c.name, ''), m.name, m.line, m.decorators FROM test_method m "
                     "LEFT JOIN test_class c ON c.id = m.cls WHERE m.file_id = ? AND m.line <= ? AND m.end_line >= ? "
                     "ORDER BY m.line DESC LIMIT 1", (fid, line, line))
        if row is None:
            if len(elsewhere) < 3:
                elsewhere.append(Loc(path, line))
            continue
        mid, cls, name, mline, decos = row
        if mid in tests or len(tests) >= limit:
            continue
        decorators = json.loads(decos or "[]")
        opts = inst.get((fid, cls))
        tests[mid] = FoundTest(name, cls, Loc(path, mline), f"expects the message (line {line})",
                               run_command(path, cls, name, decorators, opts), decorators,
                               generated_names(cls, name, decorators, opts))
    return ExpectingTests(needle, run_where_collected(ix, list(tests.values())), elsewhere, total)


__all__ = ["ExpectingTests", "MIN_NEEDLE", "needle_of", "tests_expecting"]
