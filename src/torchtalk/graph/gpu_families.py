"""Launch families and library calls, as the GPU walk (gpu.py) sees them.

A call to a launch family (Note [Launch families] in model/cuda.py) is a LAUNCH edge to the
device code passed at the call site (``gpu_kernel(lambda@24)``, ``multi_tensor_apply
(FusedAdamMathFunctor)``). What the family launches is read from its own body, never listed: the
family's definition is walked like any function (``gpu_reach``), and the ``__global__`` templates
it launches, through the families it calls in turn (gpu_kernel -> gpu_kernel_impl ->
launch_vectorized_kernel -> ``vectorized_elementwise_kernel<<<>>>``), are the call's templates.
Memoised per family definition, so the templates of ``gpu_kernel`` are found once per index.

A call into a GPU library (Note [Libraries]) is recognised by the callee's qualified name or the
call as written; the walk records it and goes no further into it.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace

from ..model import CallKind, CallSite, Edge, EdgeKind, Loc, Node, NodeKind
from ..model.cuda import HOUSEKEEPING, library_match, library_of
from ..store.reader import Index
from .nodes import cpp_node, symbol_id
from .resolve import TargetKind, resolve
from .symbols import calls_from, symbol


@dataclass(frozen=True)
class Template:
    """A ``__global__`` template a launch family launches: the LAUNCH edge (``<<<>>>`` in the family's code)."""

    name: str
    defined: Loc | None
    launched: Loc | None


def family_call(ix: Index, launch: Edge) -> CallSite | None:
    """The call site of a family LAUNCH edge (the launcher's call at that line to that family), or None."""
    sid = symbol_id(launch.src)
    if sid is None or launch.site is None:
        return None
    family = launch.dst.label.split("(", 1)[0]
    for call in calls_from(ix, sid):
        if call.kind is CallKind.GPU_LAUNCH and call.line == launch.site.line and call.callee == family:
            return call
    return None


def family_definitions(ix: Index, launch: Edge) -> list[Node]:
    """The definitions of the launch family a LAUNCH edge calls (C++ lookup from the launcher, as for any call).
    Memoised per call site and index version: every walk passing the launcher asks again."""
    memo: dict[tuple[str, str, int], list[Node]] = ix.cached("family_definitions", dict)
    key = (launch.src.key, launch.dst.key, launch.site.line if launch.site is not None else 0)
    if key not in memo:
        memo[key] = _family_definitions(ix, launch)
    return memo[key]


def _family_definitions(ix: Index, launch: Edge) -> list[Node]:
    call = family_call(ix, launch)
    sid = symbol_id(launch.src)
    sym = symbol(ix, sid) if sid is not None else None
    if call is None or sym is None:
        return []
    res = resolve(ix, call, sym)
    if res.kind is not TargetKind.DEFS:
        return []
    return [cpp_node(d) for d in res.defs if d.is_definition]


Reach = Callable[[Node], tuple[list[Edge], list[tuple[str, Edge]]]]  # a function's LAUNCH edges and library calls


def templates(ix: Index, launch: Edge, reach: Reach) -> list[Template]:
    """The __global__ templates a family LAUNCH edge ends in, read from the family's body: ``reach(node)`` gives
    the LAUNCH edges and library calls a function reaches (gpu.py's walk); a launch of another family is followed
    into that family's body in turn. A family that launches through a library (jiterator: at::cuda::jit, code
    compiled at run time) names that call instead, as "library: function"."""
    memo: dict[str, list[Template]] = ix.cached("family_templates", dict)
    out: list[Template] = []
    for fam in family_definitions(ix, launch):
        if fam.key not in memo:
            memo[fam.key] = []  # a family reaching itself (gpu_kernel splits a 64-bit iterator) stops here
            memo[fam.key] = _templates(ix, fam, reach, memo)
        out += [t for t in memo[fam.key] if t not in out]
    return out


def _templates(ix: Index, fam: Node, reach: Reach, memo: dict[str, list[Template]]) -> list[Template]:
    """The kernels first, then the library calls; the housekeeping ones (HOUSEKEEPING: a memset, the
    allocator) only when the body reaches nothing else."""
    found: list[Template] = []
    libs: list[Template] = []
    chores: list[Template] = []
    launches, libraries = reach(fam)
    for lib, e in libraries:
        t = Template(f"{lib}: {e.written or e.dst.label}", e.dst.loc, e.site)
        into = chores if lib in HOUSEKEEPING else libs
        if t not in into:
            into.append(t)
    for e in launches:
        sid = symbol_id(e.dst)
        if sid is not None:  # a __global__ kernel launched with <<<>>>
            sym = symbol(ix, sid)
            t = Template(sym.name if sym else e.dst.label, e.dst.loc, e.site)
            if t not in found:
                found.append(t)
            continue
        for inner in family_definitions(ix, e):
            if inner.key not in memo:
                memo[inner.key] = []
                memo[inner.key] = _templates(ix, inner, reach, memo)
            found += [t for t in memo[inner.key] if t not in found]
    found += [t for t in libs if t not in found]
    return found or chores


def functor_loc(ix: Index, launch: Edge) -> Loc | None:
    """Where the device code passed to a family is: the lambda's line, or the functor class's definition
    (one in the launcher's file first)."""
    functor = launch.dst.label.partition("(")[2].rstrip(")")
    if launch.site is None or not functor:
        return None
    if functor.startswith("lambda@") and functor[7:].isdigit():
        return Loc(launch.site.path, int(functor[7:]))
    rows = ix.q("SELECT file_id, line FROM cpp_class WHERE name = ? ORDER BY file_id, line", (functor,))
    locs = [Loc(ix.path_of(f), line) for f, line in rows]
    same = [loc for loc in locs if loc.path == launch.site.path]
    return (same or locs)[0] if locs else None


def library_edges(out: list[Edge], works: Callable[[Node], bool] | None = None) -> list[tuple[str, Edge]]:
    """The calls among a function's edges that go into a GPU library, with the library's name. ``works``: whether a
    method the tree defines in a library's namespace does the library's work (Note [Wrapper accessors])."""
    found = []
    for e in out:
        if e.kind not in (EdgeKind.CALL, EdgeKind.UNRESOLVED):
            continue
        match = library_match(e.written) if e.written else None
        if match is None and e.dst.kind is NodeKind.CPP_FUNCTION:
            match = library_match(e.dst.label.split("(", 1)[0])
            # Note [Wrapper accessors]: descA.descriptor() on ATen's CuSparseSpMatCsrDescriptor (at::cuda::sparse::)
            # is a getter of the tree's wrapper, not a cuSPARSE call; a method called on an object counts only when
            # its own code does the library's work (25 such calls made 53 "GPU lines" of triangular_solve)
            if match is not None and match[0] not in HOUSEKEEPING and works is not None and _on_object(e) and \
                    not works(e.dst):
                match = None
        # a C API's name the tree defines is its own helper (magma_int_cast), not the library's entry point
        if match is not None and not (match[1] and e.dst.kind is NodeKind.CPP_FUNCTION):
            found.append((match[0], e))
    return _fold_chains(found)


def _on_object(e: Edge) -> bool:
    """Whether a call is written as a method called on an object (``descA.descriptor``, ``h->get``)."""
    head = (e.written or "").split("(", 1)[0]
    return "." in head or "->" in head


CHAIN_GAP = 12  # lines between two links of one method chain at most (arguments may span lines)


def _fold_chains(found: list[tuple[str, Edge]]) -> list[tuple[str, Edge]]:
    """Note [Builder chains]: ``cudnn_frontend::VariantPackBuilder().setWorkspacePointer(w).setDataPointers(p)
    .setUids(u).build()`` is one use of a library (one object built), written as a chain of calls over a few
    lines; each link, a method called on the call before it, is recorded as a call into the library, and
    cudnn_convolution_transpose listed 58 "library calls", its first dozen the links of two chains. The links
    (a call whose receiver is a call with the chain's first name, a few lines after the one before: arguments may
    span lines) are folded into the chain's first call, which says how many calls it stands for and over which
    lines. A call written without a receiver call starts a chain, so two chains in a row stay two."""
    out: list[tuple[str, Edge]] = []
    open_: dict[tuple[str, str], tuple[int, int, int]] = {}  # (library, first name) -> (index in out, links, line)
    for lib, e in found:
        written = e.written or ""
        root = written.split("(", 1)[0].strip()
        line = e.site.line if e.site is not None else -1
        held = open_.get((lib, root))
        if held is not None and "(" in written and 0 <= line - held[2] <= CHAIN_GAP:
            i, links, _line = held
            open_[lib, root] = (i, links + 1, line)
            first = out[i][1]
            start = first.site.line if first.site is not None else line
            out[i] = (lib, replace(first, note=f"a chain of {links + 1} calls on lines {start}-{line}"))
            continue
        open_[lib, root] = (len(out), 1, line)
        out.append((lib, e))
    return out


def is_library(node: Node) -> bool:
    return node.kind is NodeKind.CPP_FUNCTION and library_of(node.label.split("(", 1)[0]) is not None
