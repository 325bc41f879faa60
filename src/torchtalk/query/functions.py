"""Which C++ function or DispatchStub a user means: a qualified name, a short name, a stub, or path:line.

Several functions may share a name (overloads, the same helper in a .cpp and a .cu
file, a kernel and a helper). Then each of the best few is answered in its own
section, with its own edges (never merged, never silently one), and the rest are
listed; ``path:line`` picks exactly one.
"""

from __future__ import annotations

import difflib
import re
from dataclasses import dataclass

from ..graph.nodes import cpp_node, stub_node
from ..graph.registry import registry
from ..graph.resolve import stub_names
from ..graph.stubs import stub_declared, stub_qualnames
from ..graph.symbols import SYMBOL_COLS, defs_by_name, defs_by_qualname, has_cpp, kernel_definitions, to_symbol
from ..model import CppSymbol, Node, SymbolKind
from ..model.cpp import written_as
from ..source.files import CPP_EXTS
from ..store.reader import Index, like_literal
from .args import clean_text
from .results import Ambiguous, Candidate, NotFound

MAX_ANSWERED = 5  # candidates answered each in its own section; the others are listed
_MACRO_FORM = re.compile(r"^(TORCH_IMPL_FUNC|TORCH_META_FUNC2?|TORCH_PRECOMPUTE_META_FUNC2?)\s*\(\s*([\w, ]+?)\s*\)$")
_MACRO_NAME = re.compile(r"(?:^|::)[A-Z][A-Z0-9_]*_[A-Z0-9_]*\s*$|(?:^|::)TEST\s*$")  # TEST_F(, TORCH_LIBRARY(
# path:line of a definition, in any file the C++ layer indexes (qnnpack's and dynamo's .c files too)
_EXTS = "|".join(re.escape(e) for e in sorted(CPP_EXTS, key=len, reverse=True))
PATH_LINE = re.compile(rf"^(?P<path>[\w./<>+-]+(?:{_EXTS})):(?P<line>\d+)$")


@dataclass
class Target:
    """One thing a C++ name means: a function (with its symbol) or a DispatchStub."""

    node: Node
    symbol: CppSymbol | None  # None for a stub

    @property
    def is_stub(self) -> bool:
        return self.symbol is None


def normalise(text: str) -> tuple[str, SymbolKind | None]:
    """(name to look up, kind hint): 'TORCH_IMPL_FUNC(x)' -> ('x', IMPL_FUNC); 'f(int)' -> ('f', None)."""
    t = text.strip()
    m = _MACRO_FORM.match(t)
    if m:
        kind = SymbolKind.IMPL_FUNC if m.group(1) == "TORCH_IMPL_FUNC" else SymbolKind.META_FUNC
        return m.group(2).replace(",", "_").replace(" ", ""), kind
    i = _params_at(t)  # a parameter list "f(int)" is cut off
    if i > 0:
        t = t[:i].strip()
    elif "(" in t:  # a macro's arguments as the index writes them: "TEST_F(atest, add_operators)"
        t = re.sub(r"\s*,\s*", ", ", re.sub(r"\(\s+|\s+\)", lambda m: m.group(0).strip(), t))
    return t.removeprefix("::"), None


def _params_at(t: str) -> int:
    """Where the parameter list of a written function name starts, or -1. Parentheses that are part of the name
    are not one: the call operator's (``Functor::operator()``, ``Functor::operator()(int)``), a scope's
    (``(anonymous)::f``, a test macro's ``TEST_F(Fixture, name)::Checker::handle``: followed by ``::``) and a
    macro's whose expansion the index names the code after (``TEST_F(atest, add_operators)``,
    ``TORCH_LIBRARY_IMPL(aten, CPU)``, ``REGISTER_OPERATOR_FUNCTOR(aten::scatter_reduce, ...)``: written in
    capitals, as macros are)."""
    i = t.find("(")
    while i > 0:
        if t[i - len("operator"):i] == "operator" and t.startswith("()", i):
            i = t.find("(", i + 2)
            continue
        depth, j = 0, i
        for j in range(i, len(t)):
            depth += {"(": 1, ")": -1}.get(t[j], 0)
            if depth == 0:
                break
        if depth == 0 and (t[j + 1:].lstrip().startswith("::") or _MACRO_NAME.search(t[:i])):
            i = t.find("(", j + 1)
            continue
        return i
    return -1


def _score(d: CppSymbol, kernel_names: set[str]) -> tuple[object, ...]:
    """Lower is better: the kernel the registry names, hand-written, in at::native, short."""
    return (
        not d.is_definition,
        not (d.name in kernel_names and (d.kind is SymbolKind.IMPL_FUNC or d.qualname.startswith("at::native::"))),
        d.kind is not SymbolKind.IMPL_FUNC,  # a structured kernel is "the" cumsum_out, before a same-named helper
        d.in_generated,
        d.kind in (SymbolKind.META_FUNC, SymbolKind.PRECOMPUTE_META_FUNC),
        not d.qualname.startswith("at::native"),
        len(d.qualname),
        d.path,
        d.line,
    )


def _at(ix: Index, path: str, line: int) -> list[CppSymbol]:
    """The definition at path:line (the name's line, or the innermost definition spanning it)."""
    rows = ix.q(f"SELECT {SYMBOL_COLS} FROM cpp_symbol WHERE file_id = (SELECT id FROM files WHERE path = ?) "
                "AND line <= ? AND end_line >= ? AND is_definition ORDER BY line DESC", (path, line, line))
    return [to_symbol(ix, r) for r in rows[:1]]


def _yaml_kernel(ix: Index, name: str) -> list[CppSymbol]:
    """A kernel spelled as native_functions.yaml names it, bare or in its namespace (``cat_out_cuda``,
    ``at::native::cat_out_cuda``; ``at::meta::cat`` for a meta function): the definitions trace shows for that
    dispatch entry (graph.symbols.kernel_definitions), so ``TORCH_IMPL_FUNC(cat_out_cuda)``, whose C++ name is
    ``at::native::structured_cat_out_cuda::impl``."""
    if name.startswith("at::meta::"):
        short = name.removeprefix("at::meta::")
        return [d for d in defs_by_name(ix, short) if d.kind in (SymbolKind.META_FUNC, SymbolKind.PRECOMPUTE_META_FUNC)]
    entries = registry(ix).kernel_ops
    short = name.removeprefix("at::native::")
    kernel = name if name in entries else short if short in entries else ""
    if not kernel:
        return []
    return kernel_definitions(ix, kernel, any(e.structured for _op, e in entries[kernel]))


def _stub_named(ix: Index, name: str) -> str:
    """The DispatchStub ``name`` means, bare (``sort_stub``) or qualified as C++ names it in its namespace
    (``at::native::sort_stub``, ``native::sort_stub``), or ""."""
    short = name.rsplit("::", 1)[-1]
    if short not in stub_names(ix):
        return ""
    if short == name or any(written_as(q, name) for q in stub_qualnames(ix, short)):
        return short
    return ""


def _candidates(ix: Index, name: str, kind_hint: SymbolKind | None) -> list[CppSymbol]:
    cands = defs_by_qualname(ix, name)
    if not cands and "::" in name:
        short = name.rsplit("::", 1)[1]
        # as C++ names it: an unnamed namespace adds no part (at::native::(anonymous)::f is at::native::f)
        cands = [d for d in defs_by_name(ix, short) if written_as(d.qualname, name)]
        if not cands and name.endswith("::impl"):
            cands = [d for d in defs_by_name(ix, name.split("::")[-2].removeprefix("structured_"))
                     if d.kind is SymbolKind.IMPL_FUNC]
        if not cands:
            cands = _yaml_kernel(ix, name)
    if "::" not in name:  # a bare name is every namespace's: a global one (a Metal kernel, a C function) is one of them
        have = {d.id for d in cands}
        cands = cands + [d for d in defs_by_name(ix, name) if d.id not in have]
    if kind_hint is not None:
        cands = [d for d in cands if d.kind is kind_hint] or cands
    if not cands:
        cands = defs_by_qualname(ix, name, definitions_only=False) or defs_by_name(ix, name, definitions_only=False)
    return cands


def find_targets(
    ix: Index, text: object, arg: str = "function_name"
) -> tuple[list[Target], Ambiguous | None] | NotFound:
    """The functions (best first, at most MAX_ANSWERED) or the stub a name means, and the ambiguity if several."""
    raw = clean_text(text, arg, "index_select_cuda")
    if not has_cpp(ix):
        return NotFound("C++ function or DispatchStub", raw, [], "The C++ layer is not indexed (see get_status).")
    m = PATH_LINE.match(raw)
    if m:
        found = _at(ix, m.group("path"), int(m.group("line")))
        if not found:
            return NotFound("C++ function at", raw, [], "Give path:line of a definition as answers cite it "
                            "(e.g. 'aten/src/ATen/native/ReduceOps.cpp:491').")
        return [Target(cpp_node(found[0]), found[0])], None
    name, kind_hint = normalise(raw)
    stub = _stub_named(ix, name)
    if stub:
        return [Target(stub_node(stub, stub_declared(ix, stub)), None)], None
    cands = _candidates(ix, name, kind_hint)
    if not cands:
        return NotFound("C++ function or DispatchStub", raw, suggest(ix, name.split("::")[-1]),
                        "Give a function name as written in C++ ('index_select_cuda', 'at::native::add_out', "
                        "'TORCH_IMPL_FUNC(cumsum_out)'), a DispatchStub ('add_stub'), or path:line of a "
                        "definition; for ops use trace.")
    kernel_names = set(registry(ix).kernel_ops)  # names the YAML dispatch tables use
    cands.sort(key=lambda d: _score(d, kernel_names))
    answered = [Target(cpp_node(d), d) for d in cands[:MAX_ANSWERED]]
    amb = None
    if len(cands) > 1:
        amb = Ambiguous("function", raw, [Candidate(f"{d.display}{d.params if not d.kind.is_structured else ''}",
                                                    d.loc) for d in cands], answered=len(answered))
    return answered, amb


def suggest(ix: Index, name: str, n: int = 8) -> list[str]:
    """Close names from the trigram index (cheap on a few hundred thousand names)."""
    if not name:
        return []
    grams = {name[i:i + 3] for i in range(max(1, len(name) - 2))} if len(name) >= 3 else set()
    pool: set[str] = set()
    for g in list(grams)[:12]:
        q = '"' + g.replace('"', '""') + '"'
        pool.update(r[0] for r in ix.q("SELECT name FROM names WHERE id IN (SELECT rowid FROM names_fts "
                                       "WHERE names_fts MATCH ? LIMIT 400)", (q,)))
    if len(name) < 3:
        pool.update(r[0] for r in ix.q("SELECT name FROM names WHERE name LIKE ? ESCAPE '\\' LIMIT 400",
                                       (like_literal(name) + "%",)))
    pool.update(n for n in stub_names(ix) if name.lower() in n.lower())
    return difflib.get_close_matches(name, sorted(pool), n=n, cutoff=0.6)
