"""A much-called function on error_origin's way up, summarised from its call sites instead of walked through.

With the store of resolved calls the sites are its callers. Without it they are the sites of its
name (Note [Callers by name]): the answer says so, and leaves out the sites written on another
class.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass

from ..errors import BadArgument
from ..graph import graph
from ..graph.nodes import cpp_node
from ..graph.symbols import symbol
from ..model import CallKind, CppSymbol, Edge, EdgeKind, Loc, Node, NodeKind, SymbolKind
from ..store.reader import Index
from .error_match import is_test_path
from .excerpt import resolve

SAMPLES = 4  # callers shown of a much-called function


@dataclass
class FanIn:
    """A function on the way up called from too many sites to walk through: its call sites, summarised."""

    callee: Node
    sites: int
    generated: int  # of them in generated code (<generated>/..., the Register*.cpp wrappers)
    files: list[tuple[str, int]]  # the files with most of them (tests' files after the others)
    samples: list[Edge]  # a few call sites, each a CALL edge from its caller (found by name; note: the line)
    entries: list[Edge]  # WRAPPER / KERNEL edges into the samples: the ops that dispatch to them
    by_name: bool = False  # the sites of its name, not its resolved callers (Note [Callers by name])
    other_classes: int = 0  # sites of its name written on another class, left out (by_name only)


# Note [Callers by name]
# ~~~~~~~~~~~~~~~~~~~~~~
# Without the store of resolved calls, resolving every call of a much-called name costs more than an answer may
# spend, so its sites are read by name: `QMaxPool_arr_args::run` was "called at 299 sites", the calls of every
# `run` (a thread pool's, TBB's, JIT's; the TORCH_FN(QConvInt8::run) of other classes' registrations). Those are the
# sites of a name, not callers, and the answer says so. A site whose text names another class
# (`QLinearInt8::run`: a qualified call or reference, not a method call on an object whose class the text does not
# tell) is left out and counted; those naming its own class come first.
def by_name(ix: Index, sym: CppSymbol) -> tuple[list[tuple[int, int, int, str]], int]:
    """The sites of ``sym``'s name (caller id, file id, line, caller's name) that may call it, and how many were
    left out as written on another class (Note [Callers by name])."""
    rows = ix.q("SELECT c.caller, c.file_id, c.line, s.name, c.kind, c.qualifier FROM cpp_call c JOIN cpp_symbol s "
                "ON s.id = c.caller WHERE c.callee = ?", (sym.name,))
    parts = sym.qualname.split("::")
    cls = parts[-2] if sym.kind in (SymbolKind.METHOD, SymbolKind.CONSTRUCTOR) and len(parts) > 1 else ""
    if not cls:
        return [(c, f, ln, n) for c, f, ln, n, _k, _q in rows], 0
    method = CallKind.METHOD.value
    mine = [(c, f, ln, n) for c, f, ln, n, k, q in rows if k != method and q and q.rsplit("::", 1)[-1] == cls]
    rest = [(c, f, ln, n) for c, f, ln, n, k, q in rows if k == method or not q]
    return mine + rest, len(rows) - len(mine) - len(rest)  # the sites naming its class first: the samples


def summary(ix: Index, node: Node, rows: list[tuple[int, int, int, str]], total: int, prefer: str,
            named_only: bool = False, other_classes: int = 0) -> FanIn:
    """The call sites of a much-called function (``rows``: caller id, file id, line, caller's name; its resolved
    callers, or without the store of resolved calls the sites of its name): by file, and a few callers (those the
    message names first, then one per file, spread over the rest), with the call as written and the op each is a
    wrapper or kernel of."""
    paths = ix.paths()
    files = Counter(paths.get(f, "?") for _c, f, _l, _n in rows)
    generated = sum(n for p, n in files.items() if p.startswith("<generated>/"))
    # a test's calls are none a user's error went through: its files after the others, its sites never samples
    rows = [r for r in rows if not is_test_path(paths.get(r[1], "?"))] or rows
    picks: dict[int, tuple[int, int]] = {}
    named = [r for r in rows if r[3] in prefer]
    firsts = list({r[1]: r for r in reversed(rows)}.values())[::-1]
    for c, f, ln, _n in named + firsts + rows[:: max(1, len(rows) // 3)]:
        if len(picks) < SAMPLES and c not in picks:
            picks[c] = (f, ln)
    g = graph(ix)
    samples: list[Edge] = []
    entries: list[Edge] = []
    for caller, (fid, line) in picks.items():
        sym = symbol(ix, caller)
        if sym is None:
            continue
        src = cpp_node(sym)
        samples.append(Edge(src, node, EdgeKind.CALL, Loc(paths.get(fid, "?"), line),
                            written=_written(ix, fid, line)))
        entries += g.into(src, [EdgeKind.WRAPPER] if src.kind is NodeKind.WRAPPER else [EdgeKind.KERNEL])[:1]
    ranked = sorted(files.items(), key=lambda pn: (is_test_path(pn[0]), -pn[1]))
    return FanIn(node, total, generated, ranked[:4], samples, entries, named_only, other_classes)


def _written(ix: Index, fid: int, line: int) -> str:
    """The source line of a call site, as written (found by name, not resolved); the last few files read
    are kept, since the samples of one summary mostly share a (large, generated) file."""
    memo: dict[int, list[str]] = ix.cached("error_call_lines", dict)
    lines = memo.get(fid)
    if lines is None:
        try:
            lines = resolve(ix, ix.path_of(fid)).read_bytes().decode("utf-8", "replace").splitlines()
        except (BadArgument, OSError):
            lines = []
        if len(memo) >= 4:
            memo.pop(next(iter(memo)))
        memo[fid] = lines
    return lines[line - 1].strip()[:200] if 0 < line <= len(lines) else ""
