"""Edges into C++ functions, ops, stubs and unresolved names: their callers.

Into a node, the call sites that name it are resolved as cpp_edges.call_edges resolves the sites of the
function that holds them, so ``calls`` and ``called_by`` (and the walks up of ``impact``) agree by
construction. A name's sites are read and resolved once for every function and op of that name whose callers
are asked (``_Named``), and only those that may reach what is asked (Note [Sites the store rules out]).
"""

from __future__ import annotations

import re
import threading
from collections import defaultdict
from collections.abc import Callable

from ..model import CallKind, CallSite, CppSymbol, Edge, EdgeHow, EdgeKind, Node, NodeKind, SymbolKind
from ..store.reader import Index
from .cpp_edges import call_edges, out_edges
from .handed import function_templates, handed_methods
from .nodes import cpp_node, symbol_id
from .op_spellings import DISPATCH_HELPER_PREFIX, op_spellings
from .overrides import is_virtual, overridden
from .qualifiers import qualifiers
from .registry import registry
from .resolution import Resolution
from .resolve import TargetKind, stub_names
from .resolved import prefetch_resolutions, stored
from .stored_edges import stored_callers, stored_op_callers
from .symbols import calls_named, launched_names_of_no_kernel, prefetch_symbols, symbol


def callers(ix: Index, node: Node, kind: EdgeKind = EdgeKind.CALL) -> list[Edge]:
    """CALL (or LAUNCH) edges into a C++ function: the call sites naming it that resolve to it
    (memoised per index version)."""
    memo: dict[tuple[str, EdgeKind], list[Edge]] = ix.cached("cpp_callers", dict)
    if (node.key, kind) not in memo:
        memo[(node.key, kind)] = _callers(ix, node, kind)
    return memo[(node.key, kind)]


def _callers(ix: Index, node: Node, kind: EdgeKind) -> list[Edge]:
    sid = symbol_id(node)
    target = symbol(ix, sid) if sid is not None else None
    if target is None:
        return []
    read = stored_callers(ix, target, kind)  # Note [Stored edges] in store/resolved.py
    if read is not None:
        return read
    named = _named(ix, target.name)
    quals = qualifiers(ix, target)
    handed: list[Edge] = []
    if kind is EdgeKind.LAUNCH:
        # Only a `<<<>>>` site makes a LAUNCH edge to a definition (call_edges): never resolve the name's
        # other call sites (thousands of method calls for a name like copy_) to find none.
        groups = [[i for i, c in enumerate(named.calls) if c.kind is CallKind.LAUNCH]]
        handed = _handed_launches(ix).get(target.id, [])
    elif len(named.calls) >= NAMED_LIMIT:  # a name written this often: its sites resolved one by one, not kept
        return _callers_of_sites(ix, target, kind, quals)
    else:
        # Only call sites that could name it: written with a qualifier its scope allows, or, when it is a method,
        # any other (a receiver's text says nothing of its class; `obj.f()` and `Derived::f()` alike); each site
        # once, in the first group that holds it.
        groups = [named.qualified(quals)]
        if target.kind in (SymbolKind.METHOD, SymbolKind.CONSTRUCTOR):
            groups.append([i for i, c in enumerate(named.calls) if c.qualifier not in quals])
    named.resolve(ix, named.may_reach(ix, [i for g in groups for i in g], target))
    # A call reaches the target when it resolves to it, or to a declaration of it (same qualified name); of a
    # site's edges, the first that does.
    found = named.reaching[target.id] + (named.declaring[target.qualname] if not target.is_file_local else [])
    first: dict[int, Edge] = {}
    for i, _j, e in sorted((t for t in found if t[2].kind is kind), key=lambda t: (t[0], t[1])):
        first.setdefault(i, e)
    # a recursive call is one of its callers (``calls`` lists the same edge out of it)
    out = [first[i] for g in groups for i in g if i in first] + handed
    # only a method call that reached nothing may be one a template makes on an object handed to it
    # (resolved or not: Note [Sites the store rules out]), its caller read from the site
    methods = [c for g in groups for i in g if i not in first and (c := named.calls[i]).kind is CallKind.METHOD
               and c.has_caller]
    prefetch_symbols(ix, [c.caller for c in methods])
    return _with_handed(ix, target, out, [(c, caller) for c in methods if (caller := symbol(ix, c.caller)) is not None],
                        kind)


NAMED_LIMIT = 20000  # call sites of one name from which a function's callers resolve them one by one


def _handed_launches(ix: Index) -> dict[int, list[Edge]]:
    """Note [Kernels handed to a launching lambda] read backwards: the LAUNCH edges of the ``<<<>>>`` sites whose
    name is no kernel (``kernel_fn``, a lambda's parameter), by the kernel each reaches (memoised per index
    version; a few hundred launch names, of which 2.6.0 has one such)."""

    def build() -> dict[int, list[Edge]]:
        out: dict[int, list[Edge]] = defaultdict(list)
        for name in launched_names_of_no_kernel(ix):
            for call in calls_named(ix, name):
                caller = symbol(ix, call.caller) if call.kind is CallKind.LAUNCH and call.has_caller else None
                for e in call_edges(ix, caller, call) if caller is not None else ():
                    if e.how is EdgeHow.HANDED and (sid := symbol_id(e.dst)) is not None:
                        out[sid].append(e)
        return dict(out)

    return ix.cached("cpp_handed_launches", build)


# Note [Sites the store rules out]
# The callers of a function or an op are found among the sites that name it, which are many more than those that
# reach it (every site of ``operator()`` for one functor's callers, every site of ``max`` for ``max.unary_out``'s).
# With the store of resolved calls (Note [Resolved calls] in store/resolved.py), a site not yet resolved whose
# stored resolution cannot give an edge to what is asked is not resolved for it (the stored resolutions are read
# and kept, so the sites that are resolved read them once); nor is a site without a caller (it makes no edge). A
# site without an id is resolved as asked (resolve() reads the store by id); a damaged store rules nothing out.
# The sites left are resolved as before, so the edges found are the same (tests/unit/test_resolved_calls.py).


class _Named:
    """The call sites naming one name, resolved once per index version whichever function of that name asks
    (every structured class's ``set_output_raw_strided`` asks for the same 3,669 sites) or op (``add``'s callers
    through the dispatcher), and only those some function's or op's callers needed: a site's edges filed under the
    symbol each reaches, its dispatcher calls under the site."""

    def __init__(self, calls: list[CallSite]) -> None:
        self.calls = calls
        self.done = [False] * len(calls)
        # symbol id -> [(site, edge's place among the site's, edge)]; a declaration's qualified name -> the same:
        # per site, the first edge of each kind reaching it
        self.reaching: defaultdict[int, list[tuple[int, int, Edge]]] = defaultdict(list)
        self.declaring: defaultdict[str, list[tuple[int, int, Edge]]] = defaultdict(list)
        self.dispatching: dict[int, list[Edge]] = {}  # site -> its DISPATCH_CALL edges
        self.lock = threading.Lock()
        self._by_qualifier: dict[str, list[int]] | None = None

    def qualified(self, quals: frozenset[str]) -> list[int]:
        """The sites written with one of these qualifiers, in order (every function and op of the name asks with
        its own qualifiers: the sites are grouped by qualifier once, not scanned per ask)."""
        by = self._by_qualifier
        if by is None:
            by = {}
            for i, c in enumerate(self.calls):
                by.setdefault(c.qualifier, []).append(i)
            self._by_qualifier = by  # two threads may both build it: the same grouping
        return sorted(i for q in quals for i in by.get(q, ()))

    def resolve(self, ix: Index, sites: list[int]) -> None:
        """Resolve these sites (those not yet), filing each site's edges only once it is whole: a thread that
        finds a site done finds all its edges (two threads may both resolve it; the second files nothing)."""
        prefetch_symbols(ix, [self.calls[i].caller for i in sites if not self.done[i] and self.calls[i].has_caller])
        prefetch_resolutions(ix, [self.calls[i].id for i in sites if not self.done[i]])
        for i in sites:
            if self.done[i]:
                continue
            call = self.calls[i]
            caller = symbol(ix, call.caller) if call.has_caller else None
            edges = call_edges(ix, caller, call) if caller is not None else []
            with self.lock:
                if self.done[i]:
                    continue
                self._file(ix, i, edges)
                self.done[i] = True

    def may_dispatch(self, ix: Index, sites: list[int], op: str) -> list[int]:
        """Of these sites, those that may call ``op`` through the dispatcher (Note [Sites the store rules out]):
        call_edges makes a DISPATCH_CALL edge only from an OP resolution, to its ops."""
        return self._may(ix, sites, lambda res: res.kind is TargetKind.OP and op in res.ops)

    def may_reach(self, ix: Index, sites: list[int], target: CppSymbol) -> list[int]:
        """Of these sites, those whose CALL or LAUNCH edges may reach ``target`` or a declaration of it (Note [Sites
        the store rules out]): call_edges makes them from a DEFS or DECLS resolution, to its functions, and to the
        methods of objects handed to a template among them (Note [Handed objects]), named as that template calls
        them."""
        bases = overridden(ix, target)  # a call of a method it overrides (Note [Virtual calls])

        def reaches(res: Resolution) -> bool:
            return (res.kind is TargetKind.DEFS or res.kind is TargetKind.DECLS) and any(
                d.id == target.id or d.qualname == target.qualname or d.is_template and d.is_definition and any(
                    target.name in names for names in handed_methods(ix, d).values())
                or d.qualname in bases and (not d.is_definition or is_virtual(ix, d)) for d in res.defs)
        return self._may(ix, sites, reaches)

    def _may(self, ix: Index, sites: list[int], keep: Callable[[Resolution], bool]) -> list[int]:
        todo = [i for i in sites if not self.done[i]]
        if not todo or stored(ix) is None:
            return sites
        # read (and keep, for the sites resolved next) the stored resolutions of the sites not yet resolved
        prefetch_resolutions(ix, [call.id for i in todo if (call := self.calls[i]).has_caller and call.id])
        held: dict[int, Resolution] = ix.cached("stored_resolutions", dict)
        drop = set()
        for i in todo:
            call = self.calls[i]
            if not call.has_caller:
                drop.add(i)  # no caller: no edge
            elif call.id:  # without an id it is resolved as asked (resolve() reads the store by id)
                res = held.get(call.id)
                if res is None:  # the store turned out damaged: rule nothing out
                    return sites
                if not keep(res):
                    drop.add(i)
        return [i for i in sites if i not in drop]

    def _file(self, ix: Index, i: int, edges: list[Edge]) -> None:
        seen: set[tuple[EdgeKind, int | str]] = set()
        for j, e in enumerate(edges):
            if e.kind is EdgeKind.DISPATCH_CALL:
                self.dispatching.setdefault(i, []).append(e)
            if e.kind is not EdgeKind.CALL and e.kind is not EdgeKind.LAUNCH:
                continue
            dst = symbol_id(e.dst)
            other = symbol(ix, dst) if dst is not None else None
            if dst is not None and (e.kind, dst) not in seen:
                seen.add((e.kind, dst))
                self.reaching[dst].append((i, j, e))
            if other is not None and not other.is_definition and (e.kind, other.qualname) not in seen:
                seen.add((e.kind, other.qualname))
                self.declaring[other.qualname].append((i, j, e))


def _named(ix: Index, name: str) -> _Named:
    """Every call site naming ``name`` (however many: Note [Every caller of an op])."""
    memo: dict[str, _Named] = ix.cached("cpp_sites_named", dict)
    if name not in memo:
        memo[name] = _Named(calls_named(ix, name, limit=-1))
    return memo[name]


def _callers_of_sites(ix: Index, target: CppSymbol, kind: EdgeKind, quals: frozenset[str]) -> list[Edge]:
    """Callers among every site of the name, resolved one by one (those written with a qualifier its scope allows
    first)."""
    every = _named(ix, target.name).calls
    sites = [c for c in every if c.qualifier in quals]
    if target.kind in (SymbolKind.METHOD, SymbolKind.CONSTRUCTOR):
        sites += [c for c in every if c.qualifier not in quals]
    out = []
    missed: list[tuple[CallSite, CppSymbol | None]] = []
    for call in sites:
        caller = symbol(ix, call.caller) if call.has_caller else None
        if caller is None:
            continue
        for e in call_edges(ix, caller, call):
            if e.kind is kind and _same(e.dst, target, ix):
                out.append(e)
                break
        else:
            missed.append((call, caller))
    return _with_handed(ix, target, out, missed, kind)


def _with_handed(ix: Index, target: CppSymbol, out: list[Edge],
                 missed: list[tuple[CallSite, CppSymbol | None]], kind: EdgeKind) -> list[Edge]:
    """``out`` and, for a method call ``x.f()`` in a template that resolved to nothing, the calls handing that
    template an object whose class defines ``f`` (Note [Handed objects] in handed.py): their HANDED edges to
    ``target``."""
    handing: set[int] = set()
    for call, caller in missed:
        if caller is not None and caller.id != target.id and call.kind is CallKind.METHOD and \
                any(call.callee in names for names in handed_methods(ix, caller).values()):
            handing.add(caller.id)
    for tmpl in (symbol(ix, tid) for tid in sorted(handing)):  # x.f() in a template: calls handing it an object
        if tmpl is not None:
            out += [e for e in _handed_at_calls(ix, tmpl) if _same(e.dst, target, ix) and e not in out]
    if kind is EdgeKind.CALL and not target.fparams:  # (made of the callers of templates that have them: no recursion)
        out += [e for e in _handed_functions(ix) if _same(e.dst, target, ix) and e not in out]
    return out


def _handed_at_calls(ix: Index, tmpl: CppSymbol) -> list[Edge]:
    """The HANDED edges the calls of template ``tmpl`` make (what they hand it that it calls), at those calls."""
    out: list[Edge] = []
    for into in callers(ix, cpp_node(tmpl)):
        out += [e for e in out_edges(ix, into.src) if e.how is EdgeHow.HANDED and e.site == into.site]
    return out


def _handed_functions(ix: Index) -> list[Edge]:
    """Note [Functions as template arguments] (handed.py) read backwards: the HANDED edges of the calls of every
    function template taking functions (a handful in a tree), memoised per index version."""

    def build() -> list[Edge]:
        out: list[Edge] = []
        for tmpl in (t for t in function_templates(ix) if t.is_definition):
            out += [e for e in _handed_at_calls(ix, tmpl) if e.kind is EdgeKind.CALL and e not in out]
        return out

    return ix.cached("cpp_handed_functions", build)


def _same(dst: Node, target: CppSymbol, ix: Index) -> bool:
    """A call reaches ``target`` when it resolves to it, or to its declaration (same qualified name)."""
    sid = symbol_id(dst)
    if sid == target.id:
        return True
    other = symbol(ix, sid) if sid is not None else None
    return (other is not None and not other.is_definition and other.qualname == target.qualname
            and not target.is_file_local)


def op_callers(ix: Index, node: Node) -> list[Edge]:
    """DISPATCH_CALL edges into an op: C++ functions that call it through the dispatcher, in any spelling, every one,
    by site (memoised per index version)."""
    memo: dict[str, list[Edge]] = ix.cached("op_callers", dict)
    if node.key not in memo:
        memo[node.key] = _op_callers(ix, node)
    return memo[node.key]


# Note [Every caller of an op]
# An op's callers are every site whose resolution reaches it, whatever name the site writes, by site: the store of
# resolved calls reads them by what each edge reaches (Note [Stored edges] in store/resolved.py), and resolving as
# asked finds them among the sites of every name a call of the op can be written with, which are those op_named and
# dispatch_helper_ops read as the op (op_spellings: at::X_symint_outf is one of X.out's), and at::_ops::S::call and
# ::redispatch; every site of each name, however many the tree has. None is left out: a walk up through the op
# (impact) ranks them and records what its fan-out leaves (Note [No silent cut] in walk.py). Both ways give the same
# edges, in the same order. Once, these were cut at 400 after two different orders (on 2.6.0, impact of
# at::native::copy_ at depth 2 answered 1,611 callers from the store and 976 without it, of op copy_'s 2,482 call
# sites), and X_symint_outf was not among the names read.
def _op_callers(ix: Index, node: Node) -> list[Edge]:
    reg = registry(ix)
    op = reg.by_full.get(node.key)
    if op is None:
        return []
    read = stored_op_callers(ix, op.full_name)  # Note [Stored edges] in store/resolved.py
    if read is not None:
        return _by_site(read)
    names = list(dict.fromkeys([op.name, f"{op.name}_symint", *op_spellings(op),
                                *(f"{op.name}{s}" for s in (("_outf_symint", "_out_symint") if op.is_out else ())),
                                f"{DISPATCH_HELPER_PREFIX}{op.name}"]))
    structs = frozenset(f"{p}_ops::{op.struct_name}" for p in ("at::", "", "::at::"))
    # The sites of each spelling (shared with every other op and function of that name), those of at::_ops::S::call
    # and ::redispatch by their qualifier.
    lists: list[tuple[_Named, frozenset[str] | None]] = [(_named(ix, n), None) for n in names]
    lists += [(_named(ix, via), structs) for via in _VIA]
    out: list[Edge] = []
    for named, quals in lists:
        sites = named.may_dispatch(ix, list(range(len(named.calls))) if quals is None else named.qualified(quals),
                                   op.full_name)
        named.resolve(ix, sites)
        for i in sites:
            e = next((e for e in named.dispatching.get(i, ()) if e.dst.key == op.full_name), None)
            if e is not None:
                out.append(e)
    return _by_site(out)


_VIA = ("call", "redispatch")  # at::_ops::S::call / ::redispatch: every op's callers read these names' sites


def warm_op_callers(ix: Index) -> None:
    """Read and group the sites every op's callers read (at::_ops::S::call and ::redispatch, ~7,000 on 2.6.0: the
    first ``impact`` or ``called_by`` to reach an op paid ~35 ms for them); for the server's warm-up."""
    for via in _VIA:
        _named(ix, via).qualified(frozenset())
    _handed_launches(ix)  # every LAUNCH edge into a kernel asks for it (50 ms of a first impact)


def _by_site(edges: list[Edge]) -> list[Edge]:
    """Hand-written sites before generated ones, then by site, caller and the call as written: an order of the edges
    alone, not of the order they were found in (the store finds them by site id, resolving as asked name by name:
    Note [Every caller of an op]). A walk's fan-out takes the first: the tree's own code before the generated
    wrappers' boilerplate (by path alone, ``<generated>/`` sorts first: the structured wrappers'
    ``outputs_[0].get().copy_(...)`` filled the 400 callers of op copy_ an impact keeps)."""
    return sorted(edges, key=lambda e: ((e.site.in_generated, str(e.site.path), e.site.line) if e.site
                                        else (True, "", 0), e.src.key, e.written, e.how.value))


def unresolved_callers(ix: Index, node: Node) -> list[Edge]:
    """UNRESOLVED edges into a name not found in the index: the call sites that write it and resolve to nothing."""
    if node.kind is not NodeKind.UNRESOLVED:
        return []
    names = re.findall(r"\w+", node.key)  # the callee is the last name of the call as written
    out: list[Edge] = []
    for call in calls_named(ix, names[-1]) if names else ():
        caller = symbol(ix, call.caller) if call.has_caller else None
        if caller is not None and call.written == node.key:
            out += [e for e in call_edges(ix, caller, call) if e.kind is EdgeKind.UNRESOLVED]
    return out


def stub_callers(ix: Index, node: Node) -> list[Edge]:
    """STUB_CALL edges into a stub: functions that call it (or pass it on)."""
    if node.key not in stub_names(ix):
        return []
    out = []
    for call in calls_named(ix, node.key):
        caller = symbol(ix, call.caller) if call.has_caller else None
        if caller is None:
            continue
        out += [e for e in call_edges(ix, caller, call) if e.kind is EdgeKind.STUB_CALL]
    return out
