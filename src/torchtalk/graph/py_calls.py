"""PY_CALL edges: what a Python function calls, resolved as the interpreter would bind the names.

Out of a function (``py_call_edges``): the methods, functions and ops its body calls; a call
through ``self`` or ``super()`` is looked up in the class ``self`` is an instance of, which is
the rule's context (``PyContext``: a module walked from its ``forward`` gives its own class; by
default a method's own class). Into a function, a name bound by assignment or an op
(``py_callers``): the calls that name it, resolved the same way in their callers' modules, so
both directions agree by construction. Out of a name bound by assignment: the Python functions
it is bound to (the ops it is bound to are BINDING edges, graph/py_edges.py).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace

from ..model import Edge, EdgeHow, EdgeKind, Loc, Node, NodeKind, Op, PyDefKind
from ..store.reader import Index
from .library_impls import library_python
from .nodes import binding_node, op_node, unresolved_node
from .py_args import overloads_for
from .py_attrs import (
    assigned_node,
    attribute_calls,
    attribute_makers,
    attributes_made_by,
    class_attribute_call,
    function_node,
    hand_bound,
    inherited_method_call,
    method_of,
    tensor_hand_bound,
)
from .py_branches import arms_around, branch_of, choice_paths
from .py_call_index import calls_naming
from .py_locals import item_calls, local_calls, nested_call, tensor_parameter
from .pynames import PyDef, pynames
from .registry import registry

# Plumbing every nn function goes through (__torch_function__ overrides, scripting checks): never
# a step towards the op.
HIDDEN_PREFIXES = ("torch.overrides.", "torch._jit_internal.", "torch.jit.", "torch.compiler.", "torch._C._log_api",
                   "torch._dynamo.", "warnings.", "typing.")
_OP_MODULES = ("torch._C._VariableFunctions.", "torch._VF.", "_VF.")
_TENSOR_BASE = ("torch._C.TensorBase.", "torch._C._TensorBase.")


@dataclass(frozen=True)
class PyContext:
    """What ``self`` is while methods are walked: its class and bases, nearest first."""

    mro: Sequence[str]  # fully qualified class names


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


def torch_c_spelling(name: str) -> str:
    """``torch.X`` as ``torch._C.X`` (torch/__init__.py: ``from torch._C import *``, so a binding of torch._C.X is
    torch.X too); any other name as it is."""
    return "torch._C." + name[len("torch."):] if name.startswith("torch.") and not name.startswith("torch._C.") \
        else name


def own_context(ix: Index, fn: PyDef) -> PyContext:
    """The context of a method walked without one: ``self`` is an instance of the class that defines it."""
    return PyContext(pynames(ix).mro(f"{fn.module}.{fn.cls}") if fn.cls else ())


def py_call_edges(ix: Index, node: Node, ctx: PyContext | None = None) -> list[Edge]:
    """PY_CALL edges out of a Python function: to the methods, functions and ops it calls (one per
    distinct callee, in line order); a call through an untyped receiver (x.sum()) is taken for a
    Tensor method and says so. Out of a name bound by assignment: the Python functions it is bound to."""
    names = pynames(ix)
    if node.kind is NodeKind.BINDING:
        d = names.definition(node.key)
        return [e for e in assign_edges(ix, node, d) if e.kind is EdgeKind.PY_CALL] \
            if d is not None and d.kind is PyDefKind.ASSIGN else []
    if node.kind is not NodeKind.PY_FUNCTION:
        return []
    fn = names.definition(node.key)
    if fn is None or fn.kind is not PyDefKind.FUNCTION:
        return []
    if ctx is None or (fn.cls and f"{fn.module}.{fn.cls}" not in ctx.mro):
        # self is an instance of the method's own class, unless the walk's context is a class that has it
        # (a submodule's forward walked from its owner's: Note [Submodules] in model/python.py)
        ctx = own_context(ix, fn)
    out: list[Edge] = []
    seen: set[tuple[str, int, str, str, str, int]] = set()
    # A method of a local that holds a builtin (memo = set(); memo.add(m)) reaches nothing: Note [Builtin receivers]
    rows = ix.q("SELECT callee, line, file_id, branch, branch_line, chosen, nargs, keywords, literals, recv_call, "
                "over, local, branch_arms, branch_past, branch_within FROM py_call WHERE func = ? AND recv = '' "
                "ORDER BY line, id", (fn.row_id,))
    paths, top = choice_paths(names, fn, rows, HIDDEN_PREFIXES)
    for row in rows:
        callee, line, file_id, arm, head, chosen, nargs, keywords, literals, made_by, over, local, *_ = row
        # The same call again in the same arm is shown once; in another arm of a choice it is that arm's work too
        # (TransformerDecoderLayer's norm_first and default arms call the same blocks); another shape may reach other
        # overloads (torch.sum(x), (x, 1))
        if (callee, nargs, keywords, literals, arm, head) in seen:
            continue
        seen.add((callee, nargs, keywords, literals, arm, head))
        path = ix.path_of(file_id)
        edges = _call(ix, node, fn, callee, Loc(path, line), ctx, _shape(nargs, keywords, literals), made_by,
                      (over, bool(local)))
        if (branch := branch_of(arms_around(row), path, chosen, paths, top)) is not None:
            edges = [replace(e, branch=branch) for e in edges]
        out += edges
    return out


def py_callers(ix: Index, node: Node) -> list[Edge]:
    """PY_CALL edges into a Python function, a name bound by assignment or an op: every call that names it (by
    its last component), resolved in its caller as ``py_call_edges`` resolves it (memoised per index version)."""
    memo: dict[tuple[NodeKind, str], list[Edge]] = ix.cached("py_callers", dict)
    key = (node.kind, node.key)
    if key not in memo:
        memo[key] = _callers(ix, node)
    return memo[key]


def _callers(ix: Index, node: Node) -> list[Edge]:
    if node.kind is NodeKind.OP:
        op = registry(ix).by_full.get(node.key)
        lasts = {p.name.rsplit(".", 1)[-1] for p in registry(ix).python_names(op)} if op else set()
    elif node.kind in (NodeKind.PY_FUNCTION, NodeKind.BINDING):
        lasts = {node.key.rsplit(".", 1)[-1]}
        if node.kind is NodeKind.PY_FUNCTION and node.key.rsplit(".", 1)[-1] in ("forward", "__call__"):
            lasts |= attributes_made_by(ix, node.key.rsplit(".", 1)[0])
    else:
        return []
    names = pynames(ix)
    out: list[Edge] = []
    for last in sorted(lasts):
        for module, qualname, callee, file_id, line, nargs, keywords, literals, made_by in calls_naming(ix, last):
            fn = names.definition(f"{module}.{qualname}")
            if fn is None or fn.kind is not PyDefKind.FUNCTION:
                continue
            src = function_node(fn)
            site = Loc(ix.path_of(file_id), line)
            out += [e for e in _call(ix, src, fn, callee, site, own_context(ix, fn),
                                     _shape(nargs, keywords, literals), made_by)
                    if e.dst.kind is node.kind and e.dst.key == node.key]
    return out


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


def _assigned_call(ix: Index, src: Node, d: PyDef, written: str, site: Loc, shape: Shape) -> list[Edge]:
    """A call of a name bound by assignment; of one bound to an op's function (``F.gelu = _add_docstr(
    torch._C._nn.gelu, ...)``), the overloads its arguments take, as a call of the function itself reaches them
    (Note [Overloads by arguments]: F.gelu(x) is no call of gelu.out), the name bound in the edge's note."""
    node = assigned_node(d)
    bound = assign_edges(ix, node, d)
    ops = [registry(ix).by_full[e.dst.key] for e in bound if e.kind is EdgeKind.BINDING]
    fit = overloads_for(ops, shape[0], shape[1], False, shape[2]) if len(ops) == len(bound) > 1 else ops
    if not fit or len(fit) == len(ops):
        return [Edge(src, node, EdgeKind.PY_CALL, site, written=written)]
    return [Edge(src, op_node(op), EdgeKind.PY_CALL, site, how=EdgeHow.BOUND_NAME, written=written, note=d.fq)
            for op in fit]


def _tensor_base_ops(ix: Index, full: str) -> list[Op]:
    """``_C.TensorBase.neg``: the method of the C++ base of torch.Tensor, bound to the op like Tensor.neg."""
    for prefix in _TENSOR_BASE:
        if full.startswith(prefix):
            return ops_of_python(ix, "Tensor." + full[len(prefix):])
    return []


Shape = tuple[int, tuple[str, ...], str]  # a call's (nargs, keywords, literals): Note [Overloads by arguments]


def _shape(nargs: int, keywords: str, literals: str) -> Shape:
    """A py_call row's call shape; its keywords are stored comma-separated."""
    return nargs, tuple(keywords.split(",")) if keywords else (), literals


def _call(ix: Index, src: Node, fn: PyDef, written: str, site: Loc, ctx: PyContext,
          shape: Shape = (-1, (), ""), made_by: str = "", local: tuple[str, bool] = ("", False)) -> list[Edge]:
    """``made_by``: for ``x.m()``, the function whose call x is bound to (Note [Builtin receivers]); ``local``: for
    ``m()``, the iterable whose items the loop variable m takes, and whether the function (or one around it) binds m
    (Note [Loop callables] in extract/pyrecv.py)."""
    if local[1]:
        return local_calls(ix, src, fn, written, site, ctx.mro, local[0])
    if written.endswith("[]"):  # self.layers[i](x): an item of what the name holds (Note [Loop callables])
        return item_calls(ix, src, written, site, ctx.mro)
    names = pynames(ix)
    head = written.split(".")[0]
    if written.startswith(("self.", "super().")) and written.count(".") == 1:
        mro = list(ctx.mro)
        if written.startswith("super()"):
            owner = fn.fq.rsplit(".", 1)[0]
            mro = mro[mro.index(owner) + 1:] if owner in mro else mro[1:]
        target = method_of(ix, mro, written.split(".")[1])
        if target is not None:  # self is the caller's self (Note [Whose self])
            return [Edge(src, function_node(target), EdgeKind.PY_CALL, site, key=ctx.mro[0] if ctx.mro else "",
                         written=written)]
        native = _native_method(ix, mro if written.startswith("self.") else [fn.fq.rsplit(".", 1)[0], *mro],
                                written.split(".")[1])
        if native is not None:  # super().record(stream) in torch.cuda.Event: torch._C._CudaEventBase.record
            return [Edge(src, binding_node(*native), EdgeKind.PY_CALL, site, written=written)]
        # Not a method: an instance attribute the class made (self.linear1 = Linear(...)), or nothing known.
        return attribute_calls(ix, src, mro, written, site) if written.startswith("self.") else []
    if head == "self" and written.count(".") == 2:
        # self.attr.method(...): a method of what __init__ made (self.conv.reset_parameters()); else an attribute no
        # method makes, mostly a buffer or parameter (self.num_batches_tracked.add_(1)): taken for a Tensor's
        tensor = _made_tensor(ix, ctx.mro, written.split(".")[1])
        if tensor:  # self.bias = Parameter(...), self._buf = torch.zeros(...): a Tensor's method
            return _untyped_receiver(ix, src, written, site, shape, tensor)
        made = attribute_calls(ix, src, ctx.mro, written, site)
        if made:
            return made
        return _untyped_receiver(ix, src, written, site, shape)
    if head in ("self", "super()"):
        return []
    full = names.resolve_in(fn.module, written)
    if full.startswith(HIDDEN_PREFIXES):
        return []
    d = names.definition(full)
    if d is None:  # ops.quantized.x(...) after ``from torch._ops import ops``: Note [Objects a package exports]
        full = names.exported(full)
    if d is not None and d.kind is PyDefKind.ASSIGN:
        return _assigned_call(ix, src, d, written, site, shape)
    if d is not None and d.kind is PyDefKind.FUNCTION:
        return [Edge(src, function_node(d), EdgeKind.PY_CALL, site, written=written)]
    ops = ops_of_python(ix, full)
    if ops:  # torch.Tensor.add(x, y) passes self; torch.add(x, y) and F.linear(x, w) pass it as input
        fit = overloads_for(ops, shape[0], shape[1], False, shape[2])
        return [Edge(src, op_node(op), EdgeKind.PY_CALL, site, written=written) for op in fit] or [
            Edge(src, unresolved_node(full), EdgeKind.PY_CALL, site, written=written,
                 note=f"no overload of {full} takes these arguments ({', '.join(o.full_name for o in ops[:3])})")]
    # torch._C._set_grad_enabled(mode), torch.is_grad_enabled(): a name hand-written C++ binds; the C++ function is
    # one BINDING edge further (bindings_out)
    bound = hand_bound(ix)
    for name in (full, torch_c_spelling(full)):
        if name in bound:
            return [Edge(src, binding_node(name, bound[name]), EdgeKind.PY_CALL, site, written=written)]
    impls = library_python(ix).get(full.removesuffix(".default")) if full.startswith("torch.ops.") else None
    if impls:  # torch.ops.quantized.conv_transpose1d_dynamic: the functions its m.impl lines register are one
        #        BINDING edge further (Note [Library ops])
        return [Edge(src, binding_node(full, Loc(ix.path_of(impls[0][4]), impls[0][5])), EdgeKind.PY_CALL, site,
                     written=written)]
    held = class_attribute_call(ix, src, full, site, written)
    if held is not None:
        return held
    if "." not in written:  # a builtin, a function nested in this one, or a name the module binds but shows no
        #                      definition of (_pair = _ntuple(2) in torch/nn/modules/utils.py)
        return nested_call(ix, src, fn, written, site)
    if written.count(".") == 1 and head not in names.imports(fn.module)[0] and \
            names.definition(f"{fn.module}.{head}") is None:  # a local's method, not one of the module's class
        if made_by and _returns_builtin(ix, fn.module, made_by):
            return []  # grouped_tensors.values(): a dict's method (Note [Builtin receivers] in model/python.py)
        return _untyped_receiver(ix, src, written, site, shape, tensor_parameter(fn, head))
    inherited = inherited_method_call(ix, src, full, site, written)  # sync_batch_norm.apply(...): Note [Submodules]
    if inherited or not full.startswith("torch."):
        return inherited
    return [Edge(src, unresolved_node(full), EdgeKind.PY_CALL, site, written=written)]


def _untyped_receiver(ix: Index, src: Node, written: str, site: Loc, shape: Shape, made: str = "") -> list[Edge]:
    """``x.sum()`` whose receiver's type the code does not tell: the overloads of the Tensor method its arguments
    can take, said to assume a Tensor (none when Tensor has no method of that name); ``made``: what shows the
    receiver is a Tensor (an attribute set to ``torch.zeros(...)``), said instead. A method hand-written C++ binds
    (Tensor.size: THPVariable_size) also stands for the manual_cpp_binding overloads of its name the YAML gives no
    method (size.int): where the arguments pick one of those, or no overload takes them (``x.size()``), the call
    is that binding (one BINDING edge on to its C++ function)."""
    method = written.rsplit(".", 1)[1]
    how, note = (EdgeHow.ATTRIBUTE, f"a Tensor: {made}") if made else (EdgeHow.UNTYPED_RECEIVER,
                                                                       "receiver not typed; assumed a Tensor")
    python = python_tensor_method(ix, method)
    if python is not None:  # Note [Python Tensor methods]
        return [Edge(src, function_node(python), EdgeKind.PY_CALL, site, note=note, how=how, written=written)]
    ops = ops_of_python(ix, f"Tensor.{method}")
    named = registry(ix).by_name.get(method, [])  # the binding is the op's name's only (not x.tolist())
    hand = tensor_hand_bound(ix).get(method) if named else None
    manual = [op for op in named if op.manual_cpp_binding and op not in ops] if hand is not None else []
    fit = overloads_for(ops + manual, shape[0], shape[1], True, shape[2], keep_all=hand is None)
    out = [Edge(src, binding_node(f"Tensor.{method}", hand), EdgeKind.PY_CALL, site, note=note, how=how,
                written=written)] if hand is not None and (not fit or any(op in manual for op in fit)) else []
    return out + [Edge(src, op_node(op), EdgeKind.PY_CALL, site, note=note, how=how, written=written)
                  for op in fit if op not in manual]


TENSOR = "torch._tensor.Tensor"  # torch.Tensor, as the link stage resolves a base


# Note [Python Tensor methods]
# ~~~~~~~~~~~~~~~~~~~~~~~~~~~~
# torch.Tensor is a Python class (``class Tensor(torch._C.TensorBase)`` in torch/_tensor.py) and a method its body
# (or a Python base of it) defines hides the C++ method of the same name: ``x.norm(p, dim)`` runs ``Tensor.norm``
# (torch/_tensor.py), which calls ``torch.norm`` (torch/functional.py), which calls ``torch.linalg.vector_norm``; it
# never reaches the YAML's ``norm.ScalarOpt_dim`` from the method. So a call on a receiver taken for a Tensor goes to
# the Python method when the class defines one, read from the tree (the class's own definitions), and to the op of
# the method's name only when it does not.

def python_tensor_method(ix: Index, method: str) -> PyDef | None:
    """The Python method ``method`` of torch.Tensor (its class in torch/_tensor.py or a Python base), or None when
    the method is the C++ base's (Note [Python Tensor methods])."""
    return method_of(ix, pynames(ix).mro(TENSOR), method)


def _made_tensor(ix: Index, mro: Sequence[str], attr: str) -> str:
    """How ``self.attr`` is shown to be a Tensor ("made by torch.zeros(...) at path:line"): every call a method of
    the nearest class sets it to is an op's Python name or a class derived from Tensor (Parameter, Buffer); ""
    when not."""
    found = attribute_makers(ix, mro, attr)
    if found is None or not found[1] or found[2]:
        return ""
    names = pynames(ix)
    module, rows, _params = found
    for value, _fid, _line in rows:
        full = names.resolve_in(module, value)
        cls = names.definition(full)
        is_class = cls is not None and cls.kind is PyDefKind.CLASS
        if not (is_class and TENSOR in names.mro(full) or not is_class and
                ops_of_python(ix, full)):
            return ""
    value, file_id, line = rows[0]
    return f"made by {value}(...) at {ix.path_of(file_id)}:{line}"


def _returns_builtin(ix: Index, module: str, written: str) -> bool:
    """Whether ``written`` (a call's function in ``module``) is a Python function returning a builtin container."""
    names = pynames(ix)
    d = names.definition(names.resolve_in(module, written))
    if d is None or d.kind is not PyDefKind.FUNCTION:
        return False
    row = ix.one("SELECT returns FROM py_function WHERE id = ?", (d.row_id,))
    return bool(row and row[0])


def _native_method(ix: Index, classes: Sequence[str], name: str) -> tuple[str, Loc] | None:
    """A method ``name`` that hand-written C++ gives a base class of one of ``classes`` (nearest first) that is no
    Python class (a PyTypeObject's tp_methods, a pybind11 class): its Python name and where it is bound."""
    bound = hand_bound(ix)
    for cls in classes:
        for base in pynames(ix).bases(cls) or ():
            if f"{base}.{name}" in bound:
                return f"{base}.{name}", bound[f"{base}.{name}"]
    return None


