"""Edges of the Python layer: a Python name bound to native code (BINDING), and what a Python
function calls (PY_CALL), resolved as the interpreter would bind the names."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

from ..model import Edge, EdgeHow, EdgeKind, Loc, Node, NodeKind, Op, PyApiKind, PyDefKind
from ..store.reader import Index
from .nodes import binding_node, cpp_node, op_node, py_node, symbol_id, unresolved_node
from .pynames import PyDef, PyNames, pynames
from .registry import registry
from .symbols import defs_in_file, symbol

# Plumbing every nn function goes through (__torch_function__ overrides, scripting checks): never
# a step towards the op.
HIDDEN_PREFIXES = ("torch.overrides.", "torch._jit_internal.", "torch.jit.", "torch.compiler.", "torch._C._log_api",
                   "torch._dynamo.", "warnings.", "typing.")
MAX_CALLS_PER_FUNCTION = 30


# ------------------------------------------------------------------ BINDING

def bindings_into(ix: Index, node: Node) -> list[Edge]:
    """BINDING edges into an op (its Python names, then the public Python functions that call it:
    torch.nn.functional.group_norm), into such a Python function (the nn modules and functions that call it:
    nn.GroupNorm.forward), or into a C++ function (PyMethodDef / pybind11 names)."""
    if node.kind is NodeKind.OP:
        op = registry(ix).by_full.get(node.key)
        if op is None:
            return []
        # The generated binding (THPVariable_X) first: it is where the name enters C++, the YAML line second.
        names = sorted(registry(ix).python_names(op), key=lambda p: p.kind is not PyApiKind.GENERATED_BINDING)
        out = [Edge(binding_node(p.name, p.loc), node, EdgeKind.BINDING, p.loc, p.kind.value) for p in names]
        bound = {p.name for p in names}
        return out + [e for e in python_callers(ix, node, lambda full: op in ops_of_python(ix, full))
                      if e.src.key not in bound]
    if node.kind is NodeKind.BINDING:
        return python_callers(ix, node, lambda full: full == node.key)
    sid = symbol_id(node)
    fn = symbol(ix, sid) if sid is not None else None
    if fn is None:
        return []
    by_target = _bindings_by_target(ix)
    out = []
    for name, kind, file_id, line in by_target.get(fn.name, []) + by_target.get(fn.qualname, []):
        loc = Loc(ix.path_of(file_id), line)
        if kind == PyApiKind.GENERATED_BINDING and loc.path != fn.path:
            continue
        out.append(Edge(binding_node(name, loc), node, EdgeKind.BINDING, loc, kind))
    return out


def _bindings_by_target(ix: Index) -> dict[str, list[tuple[str, str, int, int]]]:
    """C++ bindings (PyMethodDef, pybind11, generated THPVariable_*) by their target, once per index version."""
    def build() -> dict[str, list[tuple[str, str, int, int]]]:
        out: dict[str, list[tuple[str, str, int, int]]] = {}
        for name, kind, target, file_id, line in ix.q(
                "SELECT name, kind, target, file_id, line FROM py_api WHERE kind IN (?, ?, ?)",
                (PyApiKind.PYMETHODDEF.value, PyApiKind.PYBIND.value, PyApiKind.GENERATED_BINDING.value)):
            out.setdefault(target, []).append((name, kind, file_id, line))
        return out
    table: dict[str, list[tuple[str, str, int, int]]] = ix.cached("bindings_by_target", build)
    return table


def bindings_out(ix: Index, node: Node) -> list[Edge]:
    """BINDING edges out of a Python name: the op or C++ function it is bound to."""
    if node.kind is not NodeKind.BINDING:
        return []
    reg = registry(ix)
    out: list[Edge] = []
    for kind, op_name, target, file_id, line in ix.q(
            "SELECT kind, op, target, file_id, line FROM py_api WHERE name = ?", (node.key,)):
        loc = Loc(ix.path_of(file_id), line)
        if op_name and op_name in reg.by_full and kind != PyApiKind.GENERATED_BINDING:
            out.append(Edge(node, op_node(reg.by_full[op_name]), EdgeKind.BINDING, loc, kind))
        elif target:
            defs = defs_in_file(ix, file_id, target.split("::")[-1]) or []
            dst = cpp_node(defs[0]) if defs else _cpp_named(ix, target) or unresolved_node(target)
            out.append(Edge(node, dst, EdgeKind.BINDING, loc, kind))
    return out


# Where the Python entry points of ops live: the public functions and modules users call.
_ENTRY_MODULES = ("torch.nn.", "torch.functional", "torch._tensor")
EXPR = "<expr>"  # extract/pymodules.py: the receiver of a method call on an expression


def _entry_calls(ix: Index) -> dict[str, list[tuple[str, str, str, int, int]]]:
    """Last component of a callee -> (caller fq, caller module, callee as written, file, line), over the public
    Python API modules (torch.nn.*, torch.functional, torch._tensor; private submodules left out)."""
    def build() -> dict[str, list[tuple[str, str, str, int, int]]]:
        out: dict[str, list[tuple[str, str, str, int, int]]] = {}
        for module, qualname, callee, file_id, line in ix.q(
                "SELECT f.module, f.qualname, c.callee, c.file_id, c.line FROM py_call c JOIN py_function f "
                "ON f.id = c.func WHERE f.module LIKE 'torch.nn.%' OR f.module IN ('torch.functional', "
                "'torch._tensor') ORDER BY c.id"):
            if any(p.startswith("_") for p in module.split(".")[1:] if p != "_tensor") or "<locals>" in qualname:
                continue
            out.setdefault(callee.rsplit(".", 1)[-1], []).append((f"{module}.{qualname}", module, callee, file_id,
                                                                  line))
        return out
    table: dict[str, list[tuple[str, str, str, int, int]]] = ix.cached("py_entry_calls", build)
    return table


def python_callers(ix: Index, node: Node, reaches: Callable[[str], bool]) -> list[Edge]:
    """BINDING edges from the public Python functions whose body calls ``node`` (an op, by any of its Python
    names, or a Python function), resolved as the interpreter binds the names; one per caller."""
    names = pynames(ix)
    if node.kind is NodeKind.OP:
        op = registry(ix).by_full.get(node.key)
        lasts = {p.name.rsplit(".", 1)[-1] for p in registry(ix).python_names(op)} if op else set()
    else:
        lasts = {node.key.rsplit(".", 1)[-1]}
    out: dict[str, Edge] = {}
    for last in sorted(lasts):
        for fq, module, callee, file_id, line in _entry_calls(ix).get(last, ()):
            if fq in out or fq == node.key:
                continue
            full = names.resolve_in(module, callee)
            if reaches(full) or node.kind is NodeKind.OP and _tensor_argument(names, fq, callee) \
                    and reaches(f"Tensor.{last}"):
                site = Loc(ix.path_of(file_id), line)
                d = names.definition(fq)
                out[fq] = Edge(binding_node(fq, d.loc if d else site), node, EdgeKind.BINDING, site,
                               note=f"calls it ({callee})", how=EdgeHow.PY_CALLER, written=callee)
    return list(out.values())


def _params(signature: str) -> dict[str, str]:
    """Parameter name -> annotation ("" if none) of a signature
    "(self, input: Tensor, memo: Optional[Set[M]] = None)"."""
    inner = signature[signature.find("(") + 1:signature.rfind(")")] if "(" in signature else ""
    parts, depth, cur = [], 0, ""
    for ch in inner:
        depth += ch in "[(" and 1 or ch in "])" and -1 or 0
        if ch == "," and depth == 0:
            parts.append(cur)
            cur = ""
        else:
            cur += ch
    parts.append(cur)
    out = {}
    for p in parts:
        name, _, ann = p.split("=", 1)[0].partition(":")
        name = name.strip().lstrip("*")
        if name.isidentifier():
            out[name] = ann.strip()
    return out


def _tensor_argument(names: PyNames, fq: str, callee: str) -> bool:
    """``input.softmax(dim)`` where ``input`` is a parameter of the caller that is not annotated as something
    else than a Tensor (not self, not a local, not ``memo: Set[Module]``): taken for a Tensor method."""
    head, _, rest = callee.partition(".")
    if not rest or "." in rest:
        return False
    if head == EXPR:
        return True
    d = names.definition(fq)
    params = _params(d.signature) if d is not None else {}
    return head != "self" and head in params and (not params[head] or "Tensor" in params[head])


def _cpp_named(ix: Index, target: str) -> Node | None:
    rows = ix.q("SELECT id FROM cpp_symbol WHERE name = ? AND is_definition ORDER BY file_id LIMIT 1",
                (target.split("::")[-1],))
    sym = symbol(ix, rows[0][0]) if rows else None
    return cpp_node(sym) if sym else None


# ------------------------------------------------------------------ PY_CALL

_OP_MODULES = ("torch._C._VariableFunctions.", "torch._VF.", "_VF.")


def ops_of_python(ix: Index, dotted: str) -> list[Op]:
    """The ops a Python name reaches directly (torch.X, torch._C._nn.X, torch._VF.X, torch.ops.aten.X)."""
    reg = registry(ix)
    if dotted.startswith("torch.ops.aten."):
        return reg.lookup(dotted)
    candidates = [dotted] + ["torch." + dotted[len(p):] for p in _OP_MODULES if dotted.startswith(p)]
    for c in candidates:
        if c in reg.py_by_name:
            return [reg.by_full[f] for f in dict.fromkeys(reg.py_by_name[c]) if f in reg.by_full]
    return []


@dataclass(frozen=True)
class PyContext:
    """What ``self`` is while a module's methods are walked: its class and bases, nearest first."""

    mro: Sequence[str]  # fully qualified class names


def method_of(ix: Index, mro: Sequence[str], name: str) -> PyDef | None:
    names = pynames(ix)
    for fq in mro:
        d = names.definition(f"{fq}.{name}")
        if d is not None and d.kind is PyDefKind.FUNCTION:
            return d
    return None


def function_node(d: PyDef) -> Node:
    return py_node(NodeKind.PY_FUNCTION, d.fq, d.loc)


def py_call_edges(ix: Index, node: Node, ctx: PyContext) -> list[Edge]:
    """PY_CALL edges out of a Python function: to the methods, functions and ops it calls (one per
    distinct callee, in line order); a call through an untyped receiver (x.sum()) is taken for a
    Tensor method and says so. Out of a name bound by assignment: what it is bound to."""
    names = pynames(ix)
    if node.kind is NodeKind.BINDING:
        d = names.definition(node.key)
        return assign_edges(ix, node, d) if d is not None and d.kind is PyDefKind.ASSIGN else []
    if node.kind is not NodeKind.PY_FUNCTION:
        return []
    fn = names.definition(node.key)
    if fn is None or fn.kind is not PyDefKind.FUNCTION:
        return []
    out: list[Edge] = []
    seen: set[str] = set()
    for callee, line, file_id in ix.q("SELECT callee, line, file_id FROM py_call WHERE func = ? ORDER BY line, id",
                                      (fn.row_id,))[: MAX_CALLS_PER_FUNCTION * 3]:
        if callee in seen:
            continue  # the same callee again (a guard repeated in branches): once is enough
        seen.add(callee)
        out += _call(ix, node, fn, callee, Loc(ix.path_of(file_id), line), ctx)
        if len(out) >= MAX_CALLS_PER_FUNCTION:
            break
    return out


def assigned_node(d: PyDef) -> Node:
    """A name bound by assignment (``linear = _add_docstr(torch._C._nn.linear, ...)``) as a node."""
    return Node(NodeKind.BINDING, d.fq, f"{d.fq} = {' | '.join(d.values or (d.value,))}", d.loc)


def assign_edges(ix: Index, src: Node, d: PyDef) -> list[Edge]:
    """What a name bound by assignment is bound to: the ops of a native function (BINDING), or the Python
    functions it names (PY_CALL: ``max_pool2d = boolean_dispatch(if_true=max_pool2d_with_indices,
    if_false=_max_pool2d)``, ``__neg__ = _C.TensorBase.neg``)."""
    names = pynames(ix)
    out: list[Edge] = []
    for value in d.values or (d.value,):
        full = names.resolve_in(d.module, value)
        ops = ops_of_python(ix, value) or ops_of_python(ix, full) or _tensor_base_ops(ix, full)
        if ops:
            out += [Edge(src, op_node(op), EdgeKind.BINDING, d.loc, written=value) for op in ops]
            continue
        target = names.definition(full)
        if target is not None and target.kind is PyDefKind.FUNCTION:
            out.append(Edge(src, function_node(target), EdgeKind.PY_CALL, d.loc, written=value))
        elif target is not None and target.kind is PyDefKind.ASSIGN and target.fq != d.fq:
            out.append(Edge(src, assigned_node(target), EdgeKind.PY_CALL, d.loc, written=value))
    return out


_TENSOR_BASE = ("torch._C.TensorBase.", "torch._C._TensorBase.")


def _tensor_base_ops(ix: Index, full: str) -> list[Op]:
    """``_C.TensorBase.neg``: the method of the C++ base of torch.Tensor, bound to the op like Tensor.neg."""
    for prefix in _TENSOR_BASE:
        if full.startswith(prefix):
            return ops_of_python(ix, "Tensor." + full[len(prefix):])
    return []


def _call(ix: Index, src: Node, fn: PyDef, written: str, site: Loc, ctx: PyContext) -> list[Edge]:
    names = pynames(ix)
    head = written.split(".")[0]
    if written.startswith(("self.", "super().")) and written.count(".") == 1:
        mro = list(ctx.mro)
        if written.startswith("super()"):
            owner = fn.fq.rsplit(".", 1)[0]
            mro = mro[mro.index(owner) + 1:] if owner in mro else mro[1:]
        target = method_of(ix, mro, written.split(".")[1])
        # None: a submodule call (self.linear(x)) or an attribute, not a method of the class.
        return [Edge(src, function_node(target), EdgeKind.PY_CALL, site, written=written)] if target else []
    if head in ("self", "super()"):
        return []
    full = names.resolve_in(fn.module, written)
    if full.startswith(HIDDEN_PREFIXES):
        return []
    d = names.definition(full)
    if d is not None and d.kind is PyDefKind.ASSIGN:
        return [Edge(src, assigned_node(d), EdgeKind.PY_CALL, site, written=written)]
    if d is not None and d.kind is PyDefKind.FUNCTION:
        return [Edge(src, function_node(d), EdgeKind.PY_CALL, site, written=written)]
    ops = ops_of_python(ix, full)
    if ops:
        return [Edge(src, op_node(op), EdgeKind.PY_CALL, site, written=written) for op in ops]
    if "." not in written:
        return []  # a local or builtin callable
    if written.count(".") == 1 and head not in names.imports(fn.module)[0]:
        method = written.split(".")[1]
        ops = ops_of_python(ix, f"Tensor.{method}")
        return [Edge(src, op_node(op), EdgeKind.PY_CALL, site, note="receiver not typed; assumed a Tensor",
                     how=EdgeHow.UNTYPED_RECEIVER, written=written) for op in ops]
    if full.startswith("torch."):
        return [Edge(src, unresolved_node(full), EdgeKind.PY_CALL, site, written=written)]
    return []
