"""Which C++ function a user means: exact qualified name, then a unique short name.

Several functions may share a short name (overloads, the same helper in
different namespaces, a kernel and a helper). We then answer for the best one
and say so, listing the others: their edges are never merged.
"""

from __future__ import annotations

import difflib
import re

from .args import clean_text
from .cppdefs import SYMBOL_COLS, CppDef, defs_by_name, defs_by_qualname, has_cpp, to_def
from .index import Index
from .model import Ambiguous, Loc, NotFound
from .ops import registry

_MACRO_FORM = re.compile(r"^(TORCH_IMPL_FUNC|TORCH_META_FUNC2?|TORCH_PRECOMPUTE_META_FUNC2?)\s*\(\s*([\w, ]+?)\s*\)$")


def normalise(text: str) -> tuple[str, str]:
    """(name to look up, kind hint): 'TORCH_IMPL_FUNC(x)' -> ('x', 'impl_func'); 'f(int)' -> ('f', '')."""
    t = text.strip()
    m = _MACRO_FORM.match(t)
    if m:
        kind = {"TORCH_IMPL_FUNC": "impl_func"}.get(m.group(1), "meta_func")
        return m.group(2).replace(",", "_").replace(" ", ""), kind
    if "(" in t and not t.startswith("("):
        t = t[: t.index("(")].strip()
    if t.startswith("::"):
        t = t[2:]
    return t, ""


def _score(ix: Index, d: CppDef, kernel_names: set[str]) -> tuple:
    """Lower is better: the kernel the registry names, hand-written, in at::native, short."""
    return (
        not d.is_definition,
        not (d.name in kernel_names and (d.kind == "impl_func" or d.qualname.startswith("at::native::"))),
        d.kind != "impl_func",  # a structured kernel is "the" cumsum_out, before a same-named helper
        d.in_generated,
        d.kind in ("meta_func", "precompute_meta_func"),
        not d.qualname.startswith("at::native"),
        len(d.qualname),
        d.loc.path,
        d.loc.line,
    )


def find_function(ix: Index, text: object, arg: str = "function_name") -> tuple[CppDef, list[CppDef]] | NotFound:
    """(chosen definition, other candidates) or NotFound with suggestions."""
    raw = clean_text(text, arg, "index_select_cuda")
    name, kind_hint = normalise(raw)
    if not has_cpp(ix):
        return NotFound("C++ function", raw, [], "The C++ layer is not indexed (see get_status).")
    cands = defs_by_qualname(ix, name)
    if not cands and "::" in name:
        short = name.rsplit("::", 1)[1]
        cands = [d for d in defs_by_name(ix, short) if d.qualname.endswith("::" + name) or d.qualname == name]
        if not cands and name.endswith("::impl"):
            cands = [d for d in defs_by_name(ix, name.split("::")[-2].removeprefix("structured_"))
                     if d.kind == "impl_func"]
    if not cands:
        cands = defs_by_name(ix, name.split("::")[-1]) if "::" not in name else []
    if kind_hint:
        cands = [d for d in cands if d.kind == kind_hint] or cands
    if not cands:
        decls = defs_by_qualname(ix, name, definitions_only=False) or defs_by_name(ix, name, definitions_only=False)
        if decls:
            cands = decls
    if not cands:
        return NotFound("C++ function", raw, suggest(ix, name.split("::")[-1]),
                        "Give a function name as written in C++ ('index_select_cuda', 'at::native::add_out', "
                        "'TORCH_IMPL_FUNC(cumsum_out)'); for ops use trace.")
    kernel_names = set(registry(ix).kernel_ops)  # names the YAML dispatch tables use
    cands.sort(key=lambda d: _score(ix, d, kernel_names))
    return cands[0], cands[1:]


def ambiguity_note(chosen: CppDef, others: list[CppDef]) -> Ambiguous | None:
    if not others:
        return None
    return Ambiguous("function", chosen.name, [(f"{d.display}{d.params if d.kind != 'impl_func' else ''}", d.loc)
                                              for d in [chosen, *others]], chosen=f"{chosen.display} ({chosen.loc})")


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
                                       (name.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_") + "%",)))
    return difflib.get_close_matches(name, sorted(pool), n=n, cutoff=0.6)


def by_id(ix: Index, sid: int) -> CppDef | None:
    row = ix.one(f"SELECT {SYMBOL_COLS} FROM cpp_symbol WHERE id = ?", (sid,))
    return to_def(ix, row) if row else None


__all__ = ["find_function", "ambiguity_note", "suggest", "normalise", "by_id", "Loc"]
