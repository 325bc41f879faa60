"""search: ops, their kernels, Python bindings, functions and classes, C++ functions and classes, stubs and autograd
nodes by name, ranked exact > prefix > substring."""

from __future__ import annotations

import difflib
from collections.abc import Callable
from typing import NamedTuple

from ..errors import BadArgument
from ..graph import graph
from ..graph.nodes import autograd_node
from ..graph.op_edges import AutogradNode, autograd_nodes
from ..graph.overloads import op_kernel_definitions
from ..graph.registry import registry
from ..graph.resolve import stub_names
from ..graph.stubs import stub_declared
from ..model import DispatchEntry, EdgeKind, HitKind, Loc, MatchKind, Op, SymbolKind
from ..store.reader import Index, like_literal
from .args import MAX_LIMIT, check_int, clean_text, shown
from .functions import suggest as cpp_suggest
from .results import NotFound
from .search_classes import class_hits, class_names, constructor_of
from .search_classes import warm as warm_classes
from .search_match import Group, Query, parse, rank, rank_l, rank_op, rank_qualified
from .search_results import MATCHES, PER_NAME, KernelHit, Scored, SearchHit, SearchResult

Binding = tuple[str, str, Loc]  # (kind, target or op, loc) of a Python name in py_api


def backends(ix: Index) -> list[str]:
    reg = registry(ix)
    keys: list[str] = ix.cached("backends", lambda: sorted({str(d.key) for ds in reg.own.values() for d in ds} |
                                                           {"CPU", "CUDA", "CompositeImplicitAutograd"}))
    return keys


def search(ix: Index, query: str, backend: str | None = None, limit: int = 20) -> SearchResult | NotFound:
    q = clean_text(query, "query", "conv")
    if not any(ch.isalnum() for ch in q):  # "::" or "." matched every qualified name as a prefix, in 0.6 s
        return NotFound("op, kernel, binding, Python function or class, C++ function or class", q, [],
                        "the query has no letter or digit: give a name or a part of one ('conv', "
                        "'at::native::add_out', 'torch.nn.Linear')")
    limit = check_int(limit, "limit", 1, MAX_LIMIT)
    key = None
    if backend is not None and not (isinstance(backend, str) and not backend.strip()):
        b = clean_text(backend, "backend", "CUDA", max_len=100)
        valid = backends(ix)
        matching = [k for k in valid if k.lower() == b.lower()]
        if not matching:
            raise BadArgument(f"backend {shown(b)} is not a dispatch key of any op; valid keys: {', '.join(valid)}")
        key = matching[0]
    pq = parse(q)  # Note [Search spellings] in search_match.py
    scored: list[Scored] = []
    without_key: list[tuple[tuple[int, int, str], str]] = []
    for rec, full_l, name_l, entries, kernels_l in _op_table(ix):
        # The better of the overload's name and the op's: search "size" finds size.int and size.Dimname as exact
        # (the op size), before a C++ function named Size.
        rank_ = rank_op(pq, full_l, name_l)
        match = None
        if rank_ is None:
            # Found through a kernel name (search "index_select_cuda" finds index_select first).
            kernel_ranks = [r for k in kernels_l if (r := rank_l(pq.op, k)) is not None]
            if kernel_ranks:
                rank_, match = (0 if min(kernel_ranks) == 0 else 3), MatchKind.KERNEL
        if rank_ is None:
            continue
        kernels = entries
        if key is not None:
            kernels = [d for d in kernels if d.key == key]
            if not kernels:
                without_key.append(((rank_, len(rec.name), rec.full_name), rec.full_name))
                continue
        hit = SearchHit(HitKind.OP, rec.full_name, rec.loc, match or MATCHES[rank_],
                        str(rec.schema), [KernelHit(d, []) for d in kernels])
        scored.append(((rank_, Group.OP, len(rec.name), rec.full_name), hit, rec))
    if pq.op_only and any(k[0] == 0 for k, _h, _r in scored):  # aten::add: add's overloads, not addmm's
        scored = [t for t in scored if t[0][0] == 0]
    names_left = ""
    if key is None and not pq.op_only:  # aten::add is an op as the dispatcher names it: ops only
        for name, name_l, bindings in _binding_table(ix):
            rank_ = rank_l(pq.binding, name_l) if len(pq.words) == 1 else rank(pq, name_l)
            if rank_ is not None and rank_ > 0 and not pq.py_scope and name_l.rsplit(".", 1)[-1] == pq.last:
                rank_ = 0  # torch.add, Tensor.add for "add": the name itself, under its namespace
            if rank_ is None:
                continue
            kind, _target, loc = bindings[0]
            detail = ", ".join(sorted({t for _k, t, _l in bindings if t}))[:200]
            scored.append(((rank_, Group.BINDING, len(name), name),
                           SearchHit(HitKind.BINDING, name, loc, MATCHES[rank_], f"{kind} -> {detail}"), None))
        scored += _python_hits(ix, pq)
        functions, names_left = _function_hits(ix, pq)
        scored += functions
        scored += class_hits(ix, pq)
        nodes = autograd_nodes(ix)
        if not pq.targs:  # a stub or an autograd node is no template
            scored += _named_hits(pq, HitKind.STUB, Group.STUB, sorted(stub_names(ix)),
                                  lambda n: stub_declared(ix, n))
            scored += _named_hits(pq, HitKind.AUTOGRAD_NODE, Group.AUTOGRAD_NODE, list(nodes), lambda n: nodes[n].loc)
    if not scored and not without_key:
        what = f"op with a {key} kernel" if key else "op, kernel, binding, Python function or class, C++ function or " \
                                                     "class"
        return NotFound(what, q, _suggest(ix, pq, ops_only=key is not None),
                        hint="search matches names exactly, by prefix or by a part of them; try a shorter part.")
    scored.sort(key=lambda t: t[0])
    hits = [h for _s, h, _r in scored[:limit]]
    for h in hits:
        if h.kind is HitKind.AUTOGRAD_NODE:
            h.detail = _node_detail(ix, nodes[h.name])
        h.constructor = constructor_of(ix, h)
    by_name = {h.name: r for _s, h, r in scored[:limit] if r is not None}
    for h in hits:
        if h.name not in by_name:
            continue
        for kh in h.kernels:  # the overloads of the kernel's name this op takes, as trace shows them
            kh.defs = op_kernel_definitions(ix, by_name[h.name], kh.entry)
    res = SearchResult(q, key, hits, len(scored), limit, other_backends=[n for _k, n in sorted(without_key)])
    if key is None and names_left:
        res.notes.append(names_left)
    if key is not None:
        res.notes.append(f"Only ops with a {key} kernel are shown, with their {key} entries; "
                         "bindings are not filtered by backend.")
        if res.other_backends:
            n, shown_ = len(res.other_backends), ", ".join(res.other_backends[:5])
            res.notes.append(f"{n} op{'s' * (n != 1)} match{'es' * (n == 1)} without a {key} kernel ({shown_}"
                             f"{', ...' if n > 5 else ''}): search({q!r}) shows them with their kernels.")
    return res


def _suggest(ix: Index, pq: Query, n: int = 8, ops_only: bool = False) -> list[str]:
    """Close names of every kind for a query nothing contains (a typo: ``sofmax``), ops first: names search finds,
    so the query itself is never one (Note [Close matches search finds])."""
    last = pq.last if len(pq.words) == 1 else pq.op
    if pq.op_only:  # torch.ops.aten.add.Tensr: an op's overloads
        return registry(ix).suggest(pq.text, n)
    if ops_only:  # with a backend, search looks at ops only
        return registry(ix).suggest(last, n)
    names = registry(ix).suggest(last, n) + _found_names(ix, cpp_suggest(ix, last, n * 3))[:n]
    names += difflib.get_close_matches(pq.binding, [b for b, _l, _e in _binding_table(ix)], n=n, cutoff=0.6)
    names += difflib.get_close_matches(pq.text, sorted(stub_names(ix)) + list(autograd_nodes(ix)), n=n, cutoff=0.7)
    names += difflib.get_close_matches(last, _python_names(ix), n=n, cutoff=0.6)
    names += difflib.get_close_matches(pq.spelled or last, class_names(ix), n=n, cutoff=0.6)
    # each kind's closest, then all of them by how close they are (CatBakward0: CatBackward0 before op names)
    asked = (pq.text if len(pq.words) > 1 else last).lower()
    return sorted(dict.fromkeys(names), key=lambda x: -difflib.SequenceMatcher(None, asked, x.lower()).ratio())[:n]


# Note [Close matches search finds]
# ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
# A name search does not find is answered with close names, and each is one search finds: its next call answers.
# The trigram index of names holds every name the index has, also those no hit is: a class's constructors
# (TensorIterator::TensorIterator), functions only declared, registration blocks. Suggested from it as they are,
# "TensorIterator" was answered "not found; close matches: TensorIterator" (a constructor's name, before classes
# were hits). Its names are kept only when search hits them: a C++ function's definition, or a name of another
# kind of hit. With a backend, search looks at ops only, and suggests ops only.


def _found_names(ix: Index, names: list[str]) -> list[str]:
    """The names search finds by themselves, of these from the trigram index (Note [Close matches search finds])."""
    if not names:
        return []
    defined = {r[0] for r in ix.q(f"SELECT DISTINCT name FROM cpp_symbol WHERE is_definition AND kind IN "
                                  f"({','.join('?' * len(_FUNCTION_KINDS))}) AND name IN "
                                  f"({','.join('?' * len(names))})", (*_FUNCTION_KINDS, *names))}
    return [n for n in names if n in defined or n.lower() in _hit_names(ix)]


def _hit_names(ix: Index) -> frozenset[str]:
    """Lower-cased, the names of every hit but C++ functions: ops, their kernels, bindings, Python functions, classes,
    stubs and autograd nodes."""
    def build() -> frozenset[str]:
        ops = {x for r in _op_table(ix) for x in (r.full_l, r.name_l, *r.kernels_l)}
        return frozenset(ops | {b for _n, b, _e in _binding_table(ix)} | set(_python_names(ix)) |
                         {c.lower() for c in class_names(ix)} |
                         {n.lower() for n in stub_names(ix)} | {n.lower() for n in autograd_nodes(ix)})
    return ix.cached("search_hit_names", build)


MAX_NAMES = 60  # C++ names whose definitions are listed (the best-ranked; the others are named in a note)
_FUNCTION_KINDS = tuple(k.value for k in (SymbolKind.FUNCTION, SymbolKind.METHOD, SymbolKind.IMPL_FUNC,
                                         SymbolKind.GLOBAL_KERNEL, SymbolKind.DEVICE_FUNCTION, SymbolKind.METAL_KERNEL))


def _named_hits(pq: Query, kind: HitKind, group: Group, names: list[str],
                where: Callable[[str], Loc | None]) -> list[Scored]:
    """Hits among a small list of names (stubs, autograd nodes), ranked like the others."""
    out: list[Scored] = []
    for n in names:
        rank_ = rank_qualified(pq, n.lower(), n.lower(), "::")
        if rank_ is not None:
            out.append(((rank_, group, len(n), n), SearchHit(kind, n, where(n), MATCHES[rank_]), None))
    return out


def _node_detail(ix: Index, node: AutogradNode) -> str:
    """Where an autograd node's apply() is and which ops create it (their generated Autograd kernels)."""
    parts = [f"apply() {node.apply.loc}"] if node.apply and node.apply.loc != node.loc else []
    ops = list(dict.fromkeys(f"{e.src.key} [{e.key}]" for e in graph(ix).into(autograd_node(node.name),
                                                                               [EdgeKind.AUTOGRAD])))
    if ops:
        parts.append("grad_fn of " + ", ".join(ops[:4]) + (f" (+{len(ops) - 4} more)" if len(ops) > 4 else ""))
    return "; ".join(parts)


# Note [Names that flood]
# A C++ name can have hundreds of definitions (run, size, forward): listed in full they would push every other hit
# out of the first page. The first PER_NAME definitions of a name rank with the other hits of their match kind; the
# rest rank after all of that kind (search "to_meta": its 3 first, then the exact stubs and nodes, then its 5 more),
# and every one is counted in the total, so "showing 20 of N" and its limit= name what is left. Names are ranked
# over every name containing the query (an exact one is never lost among thousands that contain it: search "run"),
# and the definitions of the best MAX_NAMES names are listed; a note counts the names left and says how to narrow.
# Classes are grouped so too, per name (query/search_classes.py): Vectorized's 54 specializations, the 57 classes
# named CachedGraph of the MPS files; a header's class comes before a .cpp file's own, a primary template before its
# specializations, torch.nn.Linear before the quantized Linears.


def _function_hits(ix: Index, pq: Query) -> tuple[list[Scored], str]:
    """C++ functions and GPU kernels by name, through the trigram index (ranked after ops and bindings), and a note
    naming the names left out (Note [Names that flood])."""
    if pq.py_scope and not pq.cpp_scope and len(pq.words) == 1:
        return [], ""  # a dotted Python name: no C++ function is spelled so
    words = pq.fts
    if words:  # every word of the query (one for most): the names holding each
        match = " AND ".join('"' + w.replace('"', '""') + '"' for w in words)
        names = [r[0] for r in ix.q("SELECT name FROM names WHERE id IN (SELECT rowid FROM names_fts WHERE "
                                    "names_fts MATCH ?)", (match,))]
    else:  # too short for trigrams: the names it starts (or is)
        names = [r[0] for r in ix.q("SELECT name FROM names WHERE name LIKE ? ESCAPE '\\'",
                                    (like_literal(pq.last) + "%",))]
    # every C++ function of the name, an op's or a binding's too (at::native::randn after the op randn, whose hit
    # shows only the kernels; torch::nn::Conv2dImpl::forward whatever Python binding is named forward)
    # a name with template arguments (foo<float>) is a function template's instance: the name itself only
    ranked = sorted((r, len(n), n) for n in names if (r := rank(pq, n.lower())) is not None and not (pq.targs and r))
    if not ranked:
        return [], ""
    rank_of = {n: r for r, _length, n in ranked[:MAX_NAMES]}
    rows = ix.q(f"SELECT name, kind, qualname, file_id, line FROM cpp_symbol WHERE is_definition "
                f"AND kind IN ({','.join('?' * len(_FUNCTION_KINDS))}) "
                f"AND name IN ({','.join('?' * len(rank_of))}) ORDER BY file_id, line",
                (*_FUNCTION_KINDS, *rank_of))
    out: list[Scored] = []
    per_name: dict[str, int] = {}
    for name, kind, qualname, file_id, line in rows:
        rank_ = rank_qualified(pq, name.lower(), qualname.lower(), "::") if pq.cpp_scope else rank_of[name]
        if rank_ is None:
            continue
        seen = per_name[name] = per_name.get(name, 0) + 1
        label = HitKind.GPU_KERNEL if SymbolKind(kind).is_gpu_kernel else HitKind.CPP_FUNCTION
        out.append(((rank_, Group.CPP if seen <= PER_NAME else Group.FLOOD, len(name), qualname),
                    SearchHit(label, qualname, Loc(ix.path_of(file_id), line), MATCHES[rank_], kind), None))
    left = len(ranked) - len(rank_of)
    note = (f"C++ functions: the definitions of the {len(rank_of)} best-matching names are counted and listed; "
            f"{left} more names contain {pq.last if len(pq.words) == 1 else pq.text!r} (a longer query narrows "
            "them)") if left > 0 else ""
    return out, note


class _PyRow(NamedTuple):
    name_l: str
    fq: str  # module.qualname: torch.nn.functional.layer_norm, torch.optim.adamw.AdamW.step
    fq_l: str  # the same, lower-cased (matched by every query: made once with the table)
    loc: Loc
    private: bool  # in a private module (torch._refs) or ONNX's symbolic functions


def _python_hits(ix: Index, pq: Query) -> list[Scored]:
    """Python functions and methods of the tree's torch/ by name, or by a dotted name (``F.layer_norm``): those of
    public modules after the bindings, of private ones after the C++ functions (Note [Names that flood] per name)."""
    if pq.cpp_scope and len(pq.words) == 1 or pq.targs:  # at::Tensor, Vectorized<float>: no Python name
        return []
    out: list[Scored] = []
    per_name: dict[str, int] = {}
    for row in _python_table(ix):
        rank_ = rank_qualified(pq, row.name_l, row.fq_l, ".")
        if rank_ is None:
            continue
        seen = per_name[row.name_l] = per_name.get(row.name_l, 0) + 1
        group = Group.FLOOD if seen > PER_NAME else Group.PRIVATE_PY if row.private else Group.PUBLIC_PY
        out.append(((rank_, group, len(row.fq), row.fq), SearchHit(HitKind.PY_FUNCTION, row.fq, row.loc,
                                                                   MATCHES[rank_]), None))
    return out


def _python_table(ix: Index) -> list[_PyRow]:
    """Per Python function, public modules first (each name's first PER_NAME hits are theirs), once per index
    version."""
    def build() -> list[_PyRow]:
        rows = []
        for module, qualname, name, file_id, line in ix.q(
                "SELECT module, qualname, name, file_id, line FROM py_function ORDER BY module, line"):
            fq = f"{module}.{qualname}" if module else qualname
            private = any(p.startswith("_") for p in module.split(".")) or ".onnx.symbolic" in f".{module}"
            rows.append(_PyRow(name.lower(), fq, fq.lower(), Loc(ix.path_of(file_id), line), private))
        rows.sort(key=lambda r: (r.private, len(r.fq)))
        return rows
    return ix.cached("search_python", build)


def _python_names(ix: Index) -> list[str]:
    return ix.cached("search_python_names", lambda: sorted({r.name_l for r in _python_table(ix)}))


class _OpRow(NamedTuple):
    """An op with what search matches it on."""

    op: Op
    full_l: str  # full name, lower-cased
    name_l: str
    entries: list[DispatchEntry]
    kernels_l: list[str]  # kernel names, lower-cased


def _op_table(ix: Index) -> list[_OpRow]:
    """Per op, once per index version."""
    def build() -> list[_OpRow]:
        reg = registry(ix)
        out = []
        for rec in reg.by_id.values():
            entries = reg.dispatch(rec)
            out.append(_OpRow(rec, rec.full_name.lower(), rec.name.lower(), entries,
                              [d.kernel.lower() for d in entries]))
        return out
    return ix.cached("search_ops", build)


def _binding_table(ix: Index) -> list[tuple[str, str, list[Binding]]]:
    """(Python name, the same lower-cased, its bindings) per name."""
    return ix.cached("search_bindings", lambda: [(n, n.lower(), e) for n, e in _bindings(ix).items()])


def _bindings(ix: Index) -> dict[str, list[Binding]]:
    """Python name -> its bindings, from the py_api table."""
    def build() -> dict[str, list[Binding]]:
        out: dict[str, list[Binding]] = {}
        for name, kind, op, target, file_id, line in ix.q("SELECT name, kind, op, target, file_id, line FROM py_api"):
            out.setdefault(name, []).append((kind, target or op, Loc(ix.path_of(file_id), line)))
        return out
    return ix.cached("bindings", build)


def warm(ix: Index) -> None:
    """Build the tables every search reads (ops, Python names, classes), off a first answer's path (the server's
    warm-up)."""
    _op_table(ix)
    _binding_table(ix)
    _python_table(ix)
    warm_classes(ix)
    _hit_names(ix)  # a first name not found, answered with close names search finds
