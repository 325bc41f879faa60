"""Edges of ops: to their kernels per key, to the ops a composite kernel calls, and to what the build generates for
them (wrappers, autograd nodes). The ops a derivative formula calls are formula_edges.py's."""

from __future__ import annotations

import re
from dataclasses import dataclass

from ..model import (
    Branch,
    CppSymbol,
    DispatchEntry,
    Edge,
    EdgeHow,
    EdgeKind,
    EntryOrigin,
    GeneratedKind,
    Loc,
    Node,
    NodeKind,
    Op,
    RegistrationKind,
    SymbolKind,
    is_composite,
    variant_base,
)
from ..store.reader import Index
from .cpp_callers import callers
from .cpp_edges import out_edges
from .cpp_types import structured_base
from .layout_arms import layout_branch
from .nodes import autograd_node, cpp_node, op_node, symbol_id, unresolved_node
from .op_refs import dispatch_calls, op_calls_into
from .op_spellings import struct_op
from .overloads import op_kernel_definitions
from .registry import OpRegistry, registry
from .symbols import SYMBOL_COLS, defs_by_qualname, defs_in_file, pasted_match, symbol, to_symbol

_NODE_NS = "torch::autograd::generated::"  # Functions.cpp: XBackward0::apply


def _op(reg: OpRegistry, node: Node) -> Op | None:
    return reg.by_full.get(node.key) if node.kind is NodeKind.OP else None


# ------------------------------------------------------------------ KERNEL

def kernel_edges(ix: Index, node: Node) -> list[Edge]:
    """op -> its kernel for each dispatch key (an UNRESOLVED node when no definition is indexed)."""
    reg = registry(ix)
    op = _op(reg, node)
    if op is None:
        return []
    out = []
    for entry in reg.dispatch(op):
        defs = op_kernel_definitions(ix, op, entry)
        if not defs:
            out.append(Edge(node, unresolved_node(entry.kernel), EdgeKind.KERNEL, entry.loc, entry.key, entry.via,
                            _entry_how(entry)))
        out += [Edge(node, cpp_node(d), EdgeKind.KERNEL, entry.loc, entry.key, entry.via, _entry_how(entry))
                for d in defs]
    return out


def kernel_of(ix: Index, node: Node) -> list[Edge]:
    """KERNEL edges into a C++ function: the (op, key) entries whose kernel it is."""
    sid = symbol_id(node)
    fn = symbol(ix, sid) if sid is not None else None
    if fn is None:
        return []
    reg = registry(ix)
    if fn.kind in (SymbolKind.META_FUNC, SymbolKind.PRECOMPUTE_META_FUNC):
        return [Edge(op_node(op), node, EdgeKind.KERNEL, op.loc, note=META_NOTE, how=EdgeHow.META)
                for op in _meta_ops(ix, fn.qualname)]
    names = {fn.name, fn.qualname.removeprefix("at::native::")}
    if "##" in fn.name:  # a name-pasting macro's definition (_cast_##n##): the kernels its pattern makes (_cast_Byte)
        names |= {k for k in reg.kernel_ops if pasted_match(fn.name, k)}
    out = []
    for name in sorted(names):
        for op, entry in reg.kernel_ops.get(name, ()):
            if any(d.id == fn.id for d in op_kernel_definitions(ix, op, entry)):
                out.append(Edge(op_node(op), node, EdgeKind.KERNEL, entry.loc, entry.key, entry.via,
                                _entry_how(entry)))
    return out


# Note [Meta functions]: TORCH_META_FUNC(x) (at::meta::structured_x::meta) checks a structured op's inputs and sets
# its output's shape for every backend; torchgen's wrappers run it first (op.meta(...)), calls the index does not
# resolve. Walked up, it is its op's (and of the ops delegating to it): a KERNEL edge of EdgeHow.META, no key. So a
# change to a helper only a meta function calls (Pool.h's pooling_output_shape from max_pool2d_with_indices' meta)
# reaches the op, in affected and error_origin alike.
META_NOTE = "its TORCH_META_FUNC: the generated wrappers of the structured op run it (op.meta(...)) first"


def _meta_ops(ix: Index, meta_qualname: str) -> list[Op]:
    """The ops whose structured kernel's meta class is ``at::meta::structured_x`` (Note [Meta functions])."""
    def build() -> dict[str, list[str]]:
        reg = registry(ix)
        out: dict[str, list[str]] = {}
        for op in reg.by_id.values():
            if not op.structured:
                continue
            for entry in reg.dispatch(op):
                meta = structured_base(ix, f"at::native::structured_{entry.kernel.split('::')[-1]}") \
                    if entry.structured else None
                if meta is not None:
                    names = out.setdefault(meta, [])
                    for o in [op, *reg.delegating.get(op.full_name, [])]:
                        if o.full_name not in names:
                            names.append(o.full_name)
        return out
    table: dict[str, list[str]] = ix.cached("meta_ops", build)
    reg = registry(ix)
    return [reg.by_full[n] for n in table.get(meta_qualname.removesuffix("::meta"), []) if n in reg.by_full]


def _entry_how(entry: DispatchEntry) -> EdgeHow:
    return EdgeHow.AUTOGEN if entry.origin is EntryOrigin.AUTOGEN else EdgeHow.DIRECT


# ------------------------------------------------------------------ OP_CALL

HELPER_DEPTH = 3  # calls through file-local helpers of a composite kernel (dropout -> _dropout -> _dropout_impl)


def _is_helper(ix: Index, fn: Node, kernel: Node) -> bool:
    """A function a composite kernel calls that is part of its body: defined in the kernel's file, or an operator
    overload (``self != self`` is how the kernel writes ``at::operator!=``'s ``x.ne(y)``: Note [Operators] in
    extract/cpp_calls.py), and not itself the kernel of an op (those are ops in their own right, reached as such)."""
    return (fn.kind is NodeKind.CPP_FUNCTION and fn.loc is not None and kernel.loc is not None
            and (fn.loc.path == kernel.loc.path or is_operator(fn)) and not kernel_of(ix, fn))


def is_operator(fn: Node) -> bool:
    """Whether a C++ function is an operator overload (``at::operator!=``, ``at::Tensor::operator-=``)."""
    return fn.label.rsplit("::", 1)[-1].startswith("operator") and fn.label.rsplit("::", 1)[-1] != "operator()"


def op_call_edges(ix: Index, node: Node) -> list[Edge]:
    """op -> the ops its composite kernels call through the dispatcher (in call order), also through the
    kernel's file-local helpers (``at::native::dropout`` -> ``_dropout<false>`` -> ``_dropout_impl`` ->
    ``bernoulli_``), which the edge's note names."""
    out: dict[str, Edge] = {}
    for k in kernel_edges(ix, node):
        if not is_composite(k.key) or k.dst.kind is NodeKind.UNRESOLVED:
            continue
        # each function with the helpers' names that lead to it and the layout arm it is called in, if any
        frontier: list[tuple[Node, str, Branch | None]] = [(k.dst, "", None)]
        seen = {k.dst.key}
        for depth in range(HELPER_DEPTH + 1):
            nxt: list[tuple[Node, str, Branch | None]] = []
            for fn, via, arm in frontier:
                # an op's function handed on is a call of it too (Note [Op references]: logical_and's
                # comparison_op(self, other, static_cast<OutFunc>(at::logical_and_out)))
                edges = out_edges(ix, fn)
                for e in dispatch_calls(ix, fn, edges) + [e for e in edges if e.kind is EdgeKind.CALL]:
                    here = arm or layout_branch(ix, e.site)  # Note [Layout arms]: it runs for that layout only
                    if e.kind is EdgeKind.DISPATCH_CALL and e.dst.key != node.key and (
                            e.dst.key not in out or here is None and out[e.dst.key].branch is not None):
                        how = _how(k, node, e.dst, bool(via))
                        out[e.dst.key] = Edge(node, e.dst, EdgeKind.OP_CALL, e.site, k.key,
                                              f"{k.dst.label} calls {e.note}{via}",
                                              EdgeHow.PASSED_ON if e.how is EdgeHow.PASSED_ON and how is
                                              EdgeHow.DIRECT else how, e.written, here)
                    elif (e.kind is EdgeKind.CALL and depth < HELPER_DEPTH and e.dst.key not in seen
                          and _is_helper(ix, e.dst, k.dst)):
                        seen.add(e.dst.key)
                        nxt.append((e.dst, f" (through {e.dst.label.split('::')[-1]})", here))
            frontier = nxt
    return list(out.values())


def _how(kernel: Edge, src: Node, dst: Node, helper: bool) -> EdgeHow:
    """How op ``src``'s composite kernel (its KERNEL edge ``kernel``) calls op ``dst``: an autogen'd variant's copy
    of its result (any op but its own variants: torchgen's kernel runs the variant, then ``copy_arg(out, tmp)``),
    through a helper, or directly."""
    if kernel.how is EdgeHow.AUTOGEN and variant_base(src.key) != variant_base(dst.key):
        return EdgeHow.AUTOGEN_COPY
    return EdgeHow.HELPER if helper else EdgeHow.DIRECT


def op_called_by(ix: Index, node: Node) -> list[Edge]:
    """OP_CALL edges into an op: composite ops whose kernel calls it (directly or through its file-local
    helpers)."""
    out: dict[str, Edge] = {}
    for call in op_calls_into(ix, node):
        frontier, seen = [call.src], {call.src.key}
        for depth in range(HELPER_DEPTH + 1):
            nxt = []
            for fn in frontier:
                kernels = kernel_of(ix, fn)
                for k in kernels:
                    if is_composite(k.key) and k.src.key != node.key and k.src.key not in out:
                        out[k.src.key] = Edge(k.src, node, EdgeKind.OP_CALL, call.site, k.key,
                                              f"{call.src.label} calls it", _how(k, k.src, node, bool(depth)),
                                              call.written)
                if kernels or depth == HELPER_DEPTH or fn.kind is not NodeKind.CPP_FUNCTION:
                    continue
                for c in callers(ix, fn):
                    if c.src.key not in seen and c.src.loc and fn.loc and (c.src.loc.path == fn.loc.path
                                                                           or is_operator(fn)):
                        seen.add(c.src.key)
                        nxt.append(c.src)
            frontier = nxt
    return list(out.values())


# ------------------------------------------------------------------ WRAPPER and AUTOGRAD (generated code)

def _generated_impls(ix: Index, op: Op) -> list[tuple[str, str, int, int]]:
    """(key, target, file_id, line) of the generated m.impl("op", ...) of this overload."""
    rows: list[tuple[str, str, int, int]] = ix.q(
        "SELECT r.key, r.target, r.file_id, r.line FROM cpp_registration r JOIN files f ON f.id = r.file_id "
        "WHERE r.kind = ? AND r.name = ? AND f.generated = 1 ORDER BY r.key",
        (RegistrationKind.LIBRARY_IMPL.value, op.full_name))
    return rows


def _defined_in(ix: Index, file_id: int, target: str) -> CppSymbol | None:
    defs = defs_in_file(ix, file_id, target.split("::")[-1])
    # VariableType::atan2 is defined inside an anonymous namespace: compare without it.
    exact = [d for d in defs if d.qualname.replace("(anonymous)::", "").endswith(target)]
    return next(iter(exact or defs), None)


def wrapper_edges(ix: Index, node: Node) -> list[Edge]:
    """op -> the generated function the dispatcher calls for each key (Register<Key>.cpp, VariableType)."""
    op = _op(registry(ix), node)
    if op is None:
        return []
    out = []
    for key, target, file_id, line in _generated_impls(ix, op):
        fn = _defined_in(ix, file_id, target)
        dst = cpp_node(fn) if fn is not None else unresolved_node(target)
        out.append(Edge(node, dst, EdgeKind.WRAPPER, Loc(ix.path_of(file_id), line), key, f"m.impl({op.full_name!r})"))
    return out


def _registered_targets(ix: Index) -> dict[tuple[str, str], list[str]]:
    """(generated file, the function a m.impl there names, its last name) -> the ops it registers it for, read once
    per index version (a walk up through 47 wrappers asked the table 47 times: impact of copy_, 0.34 s)."""
    def build() -> dict[tuple[str, str], list[str]]:
        out: dict[tuple[str, str], list[str]] = {}
        for name, target, path in ix.q(
                "SELECT r.name, r.target, f.path FROM cpp_registration r JOIN files f ON f.id = r.file_id "
                "WHERE r.kind = ? AND f.generated = 1 ORDER BY r.id", (RegistrationKind.LIBRARY_IMPL.value,)):
            last = re.findall(r"\w+", target)
            if last:
                names = out.setdefault((path, last[-1]), [])
                if name not in names:
                    names.append(name)
        return out
    table: dict[tuple[str, str], list[str]] = ix.cached("generated_impl_targets", build)
    return table


def wrapper_of(ix: Index, node: Node) -> list[Edge]:
    """WRAPPER edges into a generated function: the op registered to it."""
    sid = symbol_id(node)
    fn = symbol(ix, sid) if sid is not None else None
    if fn is None or not fn.in_generated:
        return []
    reg = registry(ix)
    out = []
    for name in _registered_targets(ix).get((fn.path, fn.name), ()):
        op = reg.by_full.get(name)
        if op is not None:
            out += [e for e in wrapper_edges(ix, op_node(op)) if e.dst.key == node.key]
    return out


# Note [Dispatcher entries]
# Every C++ call of an op goes through the functions torchgen writes for it in Operators_N.cpp,
# at::_ops::<struct>::call and ::redispatch (at::add, Tensor::add and at::_ops::add_Tensor::call all do). A call
# is recorded as a call of the op (Note [Op call spellings]), never of those functions, so an ENTRY edge goes from
# the op to each of them: called_by and impact of at::_ops::add_Tensor::call (the frames a C++ stack trace shows)
# reach the op and, through it, its callers.
_ENTRY = re.compile(r"^at::_ops::(\w+)::(call|redispatch)$")


def entry_edges(ix: Index, node: Node) -> list[Edge]:
    """op -> its dispatcher entry functions (Note [Dispatcher entries])."""
    op = _op(registry(ix), node)
    if op is None:
        return []
    return [Edge(node, cpp_node(fn), EdgeKind.ENTRY, fn.loc)
            for which in ("call", "redispatch")
            for fn in defs_by_qualname(ix, f"at::_ops::{op.struct_name}::{which}") if fn.in_generated]


def entry_of(ix: Index, node: Node) -> list[Edge]:
    """ENTRY edges into a dispatcher entry function: the op it is the entry of."""
    sid = symbol_id(node)
    fn = symbol(ix, sid) if sid is not None else None
    m = _ENTRY.match(fn.qualname) if fn is not None and fn.in_generated else None
    if m is None:
        return []
    reg = registry(ix)
    op = reg.by_full.get(struct_op(ix, reg, m.group(1)))
    return [e for e in entry_edges(ix, op_node(op)) if e.dst.key == node.key] if op is not None else []


@dataclass(frozen=True)
class AutogradNode:
    """A generated autograd node: its struct in Functions.h and its apply() in Functions.cpp."""

    name: str
    struct: Loc | None
    apply: CppSymbol | None

    @property
    def loc(self) -> Loc | None:
        return self.struct or (self.apply.loc if self.apply else None)


def autograd_nodes(ix: Index) -> dict[str, AutogradNode]:
    """Every node struct Functions.h declares (and any other node a kernel creates that has an apply())."""
    def build() -> dict[str, AutogradNode]:
        structs: dict[str, Loc] = {}
        for value, file_id, line in ix.q("SELECT value, file_id, line FROM generated_fact WHERE kind = ? ORDER BY id",
                                         (GeneratedKind.NODE_STRUCT.value,)):
            structs.setdefault(value, Loc(ix.path_of(file_id), line))
        applies: dict[str, CppSymbol] = {}
        for row in ix.q(f"SELECT {SYMBOL_COLS} FROM cpp_symbol WHERE name = 'apply' AND qualname LIKE ? "
                        "AND is_definition ORDER BY file_id, line", (_NODE_NS + "%",)):
            sym = to_symbol(ix, row)
            applies.setdefault(sym.qualname.split("::")[-2], sym)
        return {n: AutogradNode(n, structs.get(n), applies.get(n)) for n in sorted(set(structs) | set(applies))}
    table: dict[str, AutogradNode] = ix.cached("autograd_nodes", build)
    return table


def _node_of(ix: Index, name: str) -> Node:
    known = autograd_nodes(ix).get(name)
    return autograd_node(name, known.loc if known else None)


def autograd_edges(ix: Index, node: Node) -> list[Edge]:
    """op -> the autograd nodes (XBackward0, ForeachAddBackward0List, ...) its generated Autograd kernels create;
    the site is where the kernel creates it, the node's location its struct in Functions.h."""
    out = []
    nodes = autograd_nodes(ix)
    for w in wrapper_edges(ix, node):
        sid = symbol_id(w.dst)
        if sid is None or not w.key.startswith("Autograd"):
            continue
        for name, line in ix.q("SELECT DISTINCT value, line FROM generated_fact WHERE scope = ? AND kind = ?",
                               (sid, GeneratedKind.GRAD_FN.value)):
            known = nodes.get(name)
            site = Loc(w.dst.loc.path, line) if w.dst.loc else None
            apply = known.apply if known else None
            out.append(Edge(node, _node_of(ix, name), EdgeKind.AUTOGRAD, site, w.key,
                            f"{apply.name} {apply.loc}" if apply else ""))
    return out


def autograd_of(ix: Index, node: Node) -> list[Edge]:
    """AUTOGRAD edges into an autograd node: the ops whose generated Autograd kernel creates it."""
    if node.kind is not NodeKind.AUTOGRAD_NODE:
        return []

    def build() -> dict[str, list[str]]:
        # The Autograd kernels' functions, by (file, name), to the ops registered to them (m.impl in the same file).
        impls: dict[tuple[int, str], list[str]] = {}
        for name, target, file_id in ix.q(
                "SELECT r.name, r.target, r.file_id FROM cpp_registration r JOIN files f ON f.id = r.file_id "
                "WHERE r.kind = ? AND f.generated = 1 AND r.key LIKE 'Autograd%'",
                (RegistrationKind.LIBRARY_IMPL.value,)):
            impls.setdefault((file_id, target.split("::")[-1]), []).append(name)
        rev: dict[str, list[str]] = {}
        for value, fn_name, file_id in ix.q(
                "SELECT g.value, s.name, s.file_id FROM generated_fact g JOIN cpp_symbol s ON s.id = g.scope "
                "WHERE g.kind = ?", (GeneratedKind.GRAD_FN.value,)):
            for op in impls.get((file_id, fn_name), ()):
                if op not in rev.setdefault(value, []):
                    rev[value].append(op)
        return rev
    creators: dict[str, list[str]] = ix.cached("autograd_creators", build)
    reg = registry(ix)
    return [e for full in creators.get(node.key, []) if full in reg.by_full
            for e in autograd_edges(ix, op_node(reg.by_full[full])) if e.dst.key == node.key]
