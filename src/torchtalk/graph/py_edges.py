"""BINDING edges: a Python name bound to native code (py_api: generated bindings, PyMethodDef and pybind11
tables, torch.X / Tensor.X from variants:, names bound by assignment to an op), and the public Python
functions that call an op (F.group_norm -> native_group_norm). What Python code calls is PY_CALL
(graph/py_calls.py)."""

from __future__ import annotations

from collections.abc import Callable

from ..model import CppSymbol, Edge, EdgeHow, EdgeKind, Loc, Node, NodeKind, Op, PyApiKind, PyDefKind, SymbolKind
from ..model.cpp import TEMPLATE_ARGS, written_as
from ..store.reader import Index
from .bound_lambdas import lambda_bindings
from .library_impls import library_impls, library_python
from .nodes import binding_node, cpp_node, op_node, symbol_id, unresolved_node
from .py_args import overloads_for
from .py_calls import assign_edges, ops_of_python, python_tensor_method
from .pynames import PyNames, pynames, signature_params
from .registry import registry
from .symbols import defs_by_name, defs_in_file, symbol

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
        # a call reaches the overloads its arguments fit (Note [Overloads by arguments]): torch.sigmoid(x) is no
        # caller of sigmoid.out
        return out + [e for e in python_callers(ix, node, lambda full, shape: op in _fitting(ix, full, shape))
                      if e.src.key not in bound]
    if node.kind is NodeKind.BINDING:
        return python_callers(ix, node, lambda full, _shape: full == node.key)
    sid = symbol_id(node)
    fn = symbol(ix, sid) if sid is not None else None
    if fn is None:
        return []
    out = []
    # the bindings whose target, as written, has its name (Note [Bound as written] says which of them name it)
    for name, kind, target, file_id, line in _bindings_by_target(ix).get(fn.name, []):
        loc = Loc(ix.path_of(file_id), line)
        if kind == PyApiKind.GENERATED_BINDING and loc.path != fn.path:
            continue
        if binds(ix, target, file_id, fn):
            out.append(Edge(binding_node(name, loc), node, EdgeKind.BINDING, loc, kind))
    return out + _library_bindings(ix, node, fn.name, fn.qualname, fn.path if fn.is_file_local else "") + \
        lambda_bindings(ix, node)  # the names whose bound lambda calls it (Note [Calls in a bound lambda])


def _library_bindings(ix: Index, node: Node, name: str, qualname: str, only_in: str) -> list[Edge]:
    """BINDING edges from torch.ops.ns.op into a function an m.impl of a TORCH_LIBRARY_IMPL block outside aten
    registers (Note [Library ops]: symm_mem's multimem_all_reduce_ is reached from Python only so), the function as
    written naming it (QConvInt8<3, false>::run is QConvInt8::run, no other run); ``only_in``: the file a file-local
    function must be registered in."""
    def build() -> dict[str, list[tuple[str, str, str, str, int, int]]]:
        out: dict[str, list[tuple[str, str, str, str, int, int]]] = {}
        for impl in library_impls(ix):
            out.setdefault(impl[3].split("::")[-1], []).append(impl)
        return out
    table: dict[str, list[tuple[str, str, str, str, int, int]]] = ix.cached("library_impls_by_target", build)
    edges = []
    for ns, op, key, target, file_id, line in table.get(name, []):
        loc = Loc(ix.path_of(file_id), line)
        if only_in and loc.path != only_in or not written_as(qualname, target):
            continue
        python = f"torch.ops.{ns}.{op.split('.')[0]}"
        edges.append(Edge(binding_node(python, loc), node, EdgeKind.BINDING, loc, PyApiKind.LIBRARY,
                          f"m.impl of {ns}::{op} for {key}"))
    return edges


def _library_kernels(ix: Index, node: Node) -> list[Edge]:
    """BINDING edges out of torch.ops.ns.op (ns not aten): to each function an m.impl registers for one of the op's
    overloads (Note [Library ops]: torch.ops.quantized.conv_transpose1d_dynamic, which an ao module's forward
    calls, is QConv1dDynamicInt8::run for QuantizedCPU)."""
    edges = []
    for ns, op, key, target, file_id, line in library_python(ix).get(node.key.removesuffix(".default"), []):
        loc = Loc(ix.path_of(file_id), line)
        defs = defs_in_file(ix, file_id, target.split("::")[-1]) or []
        # the function the m.impl names as written (QLinearDynamicFp16<true>::run, not the file's first ``run``)
        defs = [d for d in defs if written_as(d.qualname, target)] or defs
        dst = cpp_node(defs[0]) if defs else _cpp_named(ix, target) or unresolved_node(target)
        edges.append(Edge(node, dst, EdgeKind.BINDING, loc, PyApiKind.LIBRARY, f"m.impl of {ns}::{op} for {key}"))
    return edges


# Note [Bound as written]
# A binding names its function as written in its file: ``m.def("start", start)`` (instruction_counter/Module.cpp)
# binds the ``start`` that a call written there would reach, the file's own free function, not
# LibKinetoClient::start elsewhere. So a target is looked up like a call from the binding's file: its definitions in
# that file first; else, written qualified (``&Class::method``, ``torch::jit::f``), the functions whose qualified
# name ends so; written bare, the free functions of that name (a bare name never names a method).
_MEMBERS = (SymbolKind.METHOD, SymbolKind.CONSTRUCTOR)


def bound_functions(ix: Index, target: str, file_id: int) -> list[CppSymbol]:
    """The C++ definitions a binding's target, as written in file ``file_id``, names (Note [Bound as written]): those
    of the file, else those of its name anywhere (not file-local)."""
    name, fits = _bound_name(target)
    here = [d for d in defs_in_file(ix, file_id, name) if fits(d)]
    if here:
        return here
    return [d for d in defs_by_name(ix, name) if fits(d) and not d.is_file_local]


def binds(ix: Index, target: str, file_id: int, fn: CppSymbol) -> bool:
    """Whether ``fn`` is one of ``bound_functions(ix, target, file_id)``, without reading every definition of its
    name (``add``'s hundreds, for a first impact answer)."""
    name, fits = _bound_name(target)
    if fn.name != name or not fn.is_definition or not fits(fn):
        return False
    here = [d for d in defs_in_file(ix, file_id, name) if fits(d)]
    return any(d.id == fn.id for d in here) if here else not fn.is_file_local


def _bound_name(target: str) -> tuple[str, Callable[[CppSymbol], bool]]:
    """The name a binding's target ends with, and which definitions of that name it can mean (Note [Bound as
    written]): one of its qualified name when written qualified, else no member."""
    written = TEMPLATE_ARGS.sub("", target).removeprefix("::")  # ConvPackedParamsBase<kSpatialDim>::groups

    def fits(d: CppSymbol) -> bool:
        return written_as(d.qualname, written) if "::" in written else d.kind not in _MEMBERS
    return written.rsplit("::", 1)[-1], fits


def _bindings_by_target(ix: Index) -> dict[str, list[tuple[str, str, str, int, int]]]:
    """C++ bindings (PyMethodDef, PyGetSetDef, pybind11, generated THPVariable_*) by their target's last name (once
    per index): (Python name, kind, target as written, file, line)."""
    def build() -> dict[str, list[tuple[str, str, str, int, int]]]:
        out: dict[str, list[tuple[str, str, str, int, int]]] = {}
        for name, kind, target, file_id, line in ix.q(
                "SELECT name, kind, target, file_id, line FROM py_api WHERE kind IN (?, ?, ?, ?, ?)",
                (PyApiKind.PYMETHODDEF.value, PyApiKind.PYBIND.value, PyApiKind.GENERATED_BINDING.value,
                 PyApiKind.GETTER.value, PyApiKind.SETTER.value)):  # Note [Attribute bindings]
            out.setdefault(target.rsplit("::", 1)[-1], []).append((name, kind, target, file_id, line))
        return out
    table: dict[str, list[tuple[str, str, str, int, int]]] = ix.cached("bindings_by_target", build)
    return table


def bindings_out(ix: Index, node: Node) -> list[Edge]:
    """BINDING edges out of a Python name: the op or C++ function it is bound to (a name bound by assignment:
    the ops of the native functions it is bound to, ``linear = _add_docstr(torch._C._nn.linear, ...)``)."""
    if node.kind is not NodeKind.BINDING:
        return []
    reg = registry(ix)
    d = pynames(ix).definition(node.key)
    out = [e for e in assign_edges(ix, node, d) if e.kind is EdgeKind.BINDING] \
        if d is not None and d.kind is PyDefKind.ASSIGN else []
    if node.key.startswith("torch.ops.") and not node.key.startswith("torch.ops.aten."):
        out += _library_kernels(ix, node)
    rows = ix.q("SELECT kind, op, target, file_id, line FROM py_api WHERE name = ?", (node.key,))
    # a name hand-written C++ binds (Tensor.size: THPVariable_size) runs that function; the ops it reaches are below
    # it, not the YAML's method variants of the name (graph/py_calls.py's Tensor methods)
    hand = any(not op_name and target for _k, op_name, target, _f, _l in rows)
    for kind, op_name, target, file_id, line in rows:
        loc = Loc(ix.path_of(file_id), line)
        if op_name and op_name in reg.by_full and kind != PyApiKind.GENERATED_BINDING and not hand:
            out.append(Edge(node, op_node(reg.by_full[op_name]), EdgeKind.BINDING, loc, kind))
        elif target:
            defs = bound_functions(ix, target, file_id)
            dst = cpp_node(defs[0]) if defs else unresolved_node(target)
            out.append(Edge(node, dst, EdgeKind.BINDING, loc, kind))
    return out


# Where the Python entry points of ops live: the public functions and modules users call.
_ENTRY_MODULES = ("torch.nn.", "torch.functional", "torch._tensor")
EXPR = "<expr>"  # extract/pymodules.py: the receiver of a method call on an expression


EntryCall = tuple[str, str, str, int, int, int, str, str]  # caller fq, module, callee, file, line, nargs, keywords,
#                                                           literals (the call's shape: Note [Overloads by arguments])


def entry_calls(ix: Index) -> dict[str, list[EntryCall]]:
    """Last component of a callee -> (caller fq, caller module, callee as written, file, line, and the call's shape),
    over the public Python API modules (torch.nn.*, torch.functional, torch._tensor; private submodules left out);
    a method of a receiver known to hold a builtin (Note [Builtin receivers]) left out."""
    def build() -> dict[str, list[EntryCall]]:
        out: dict[str, list[EntryCall]] = {}
        for module, qualname, callee, file_id, line, nargs, keywords, literals in ix.q(
                "SELECT f.module, f.qualname, c.callee, c.file_id, c.line, c.nargs, c.keywords, c.literals "
                "FROM py_call c JOIN py_function f ON f.id = c.func WHERE c.recv = '' AND (f.module LIKE 'torch.nn.%' "
                "OR f.module IN ('torch.functional', 'torch._tensor')) ORDER BY c.id"):
            if any(p.startswith("_") for p in module.split(".")[1:] if p != "_tensor") or "<locals>" in qualname:
                continue
            out.setdefault(callee.rsplit(".", 1)[-1], []).append((f"{module}.{qualname}", module, callee, file_id,
                                                                  line, nargs, keywords, literals))
        return out
    table: dict[str, list[EntryCall]] = ix.cached("py_entry_calls", build)
    return table


Shape = tuple[int, str, str]  # a call's nargs, keywords and literals (Note [Overloads by arguments])


def _fitting(ix: Index, full: str, shape: Shape) -> list[Op]:
    """The ops Python name ``full`` reaches that a call of this shape can (all when the shape fits none)."""
    nargs, keywords, literals = shape
    return overloads_for(ops_of_python(ix, full), nargs, tuple(keywords.split(",")) if keywords else (), False,
                         literals)


def python_callers(ix: Index, node: Node, reaches: Callable[[str, Shape], bool]) -> list[Edge]:
    """BINDING edges from the public Python functions whose body calls ``node`` (an op, by any of its Python
    names, or a Python function), resolved as the interpreter binds the names; one per caller."""
    names = pynames(ix)
    op = registry(ix).by_full.get(node.key) if node.kind is NodeKind.OP else None
    if node.kind is NodeKind.OP:
        lasts = {p.name.rsplit(".", 1)[-1] for p in registry(ix).python_names(op)} if op else set()
    else:
        lasts = {node.key.rsplit(".", 1)[-1]}
    out: dict[str, Edge] = {}
    for last in sorted(lasts):
        for fq, module, callee, file_id, line, nargs, keywords, literals in entry_calls(ix).get(last, ()):
            if fq in out or fq == node.key:
                continue
            full = names.resolve_in(module, callee)
            if reaches(full, (nargs, keywords, literals)) or op is not None and _tensor_argument(names, fq, callee) \
                    and _tensor_method_reaches(ix, op, last, (nargs, keywords, literals)):
                site = Loc(ix.path_of(file_id), line)
                d = names.definition(fq)
                out[fq] = Edge(binding_node(fq, d.loc if d else site), node, EdgeKind.BINDING, site,
                               note=f"calls it ({callee})", how=EdgeHow.PY_CALLER, written=callee)
    return list(out.values())


def _tensor_method_reaches(ix: Index, op: Op, method: str, shape: tuple[int, str, str]) -> bool:
    """Whether ``x.method(...)`` of this shape, x taken for a Tensor, reaches ``op``: not when torch.Tensor's Python
    class defines the method (Note [Python Tensor methods]: that function calls on), nor when the call's arguments
    fit no overload of it (``s.split("\\n")``: a string is no split size, Note [Overloads by arguments])."""
    if python_tensor_method(ix, method) is not None:
        return False
    ops = ops_of_python(ix, f"Tensor.{method}")
    if op not in ops:
        return False
    nargs, keywords, literals = shape
    return op in overloads_for(ops, nargs, tuple(keywords.split(",")) if keywords else (), True, literals)


def _tensor_argument(names: PyNames, fq: str, callee: str) -> bool:
    """``input.softmax(dim)`` where ``input`` is a parameter of the caller that is not annotated as something
    else than a Tensor (not self, not a local, not ``memo: Set[Module]``): taken for a Tensor method."""
    head, _, rest = callee.partition(".")
    if not rest or "." in rest:
        return False
    if head == EXPR:
        return True
    d = names.definition(fq)
    params = signature_params(d.signature) if d is not None else {}
    return head != "self" and head in params and (not params[head] or "Tensor" in params[head])


def _cpp_named(ix: Index, target: str) -> Node | None:
    rows = ix.q("SELECT id FROM cpp_symbol WHERE name = ? AND is_definition ORDER BY file_id LIMIT 1",
                (target.split("::")[-1],))
    sym = symbol(ix, rows[0][0]) if rows else None
    return cpp_node(sym) if sym else None
