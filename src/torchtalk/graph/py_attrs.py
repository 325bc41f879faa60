"""Calls through what an object holds (Note [Submodules] in model/python.py): ``self.attr(...)`` runs what
``__init__`` made (a submodule's forward, an object's ``__call__``) or the default of the parameter it holds;
``Class.attr.method(...)`` a class attribute's method; and the small lookups PY_CALL edges share (a class's
method, hand-written bindings, the nodes of Python definitions)."""

from __future__ import annotations

from collections.abc import Sequence

from ..model import Edge, EdgeHow, EdgeKind, Loc, Node, NodeKind, PyApiKind, PyDefKind
from ..store.reader import Index, like_literal
from .nodes import binding_node, held_node, py_node
from .pynames import PyDef, pynames

MODULE = "torch.nn.modules.module.Module"  # calling an instance of a subclass runs its forward
AUTOGRAD_FUNCTION = "torch.autograd.function.Function"  # C.apply(...) of a subclass runs C.forward


# Note [Whose self]
# ~~~~~~~~~~~~~~~~~
# ``self.m()`` runs the ``m`` of the class ``self`` is an instance of, looked up from that class (Python's MRO), not
# from the class whose method makes the call: ``_BatchNorm.forward`` calls ``self._check_input_dim(input)``, which
# for a BatchNorm2d is ``BatchNorm2d._check_input_dim``, not the abstract ``_NormBase._check_input_dim``. A walk
# knows that class where the code shows it: for the method it starts from (trace_module's class), for a method
# called through ``self`` or ``super()`` (the caller's ``self``), and for the method an attribute's object runs
# (``self.bn(x)`` with ``self.bn = nn.BatchNorm1d(...)`` in ``__init__``: a BatchNorm1d, Note [Submodules] in
# model/python.py). Such a PY_CALL edge names that class in its ``key``, and query/pywalk.py walks the method it
# reaches within that class's context (``PyContext`` in graph/py_calls.py); a method reached any other way is its own
# class's, unless the walk's context is a class that has it. A method reached with two classes (two submodules of
# different classes running one inherited forward) is walked once, as the first class's.


def hand_bound(ix: Index) -> dict[str, Loc]:
    """Python names bound by hand-written C++ (PyMethodDef entries, pybind11 .def) that no op answers: where each is
    bound (the first entry), once per index version. A call of one is a step into C++ (bindings_out follows it)."""
    def build() -> dict[str, Loc]:
        out: dict[str, Loc] = {}
        for name, file_id, line in ix.q(
                "SELECT name, file_id, line FROM py_api WHERE kind IN (?, ?) AND op = '' ORDER BY file_id, line",
                (PyApiKind.PYMETHODDEF.value, PyApiKind.PYBIND.value)):
            if name.startswith("torch."):  # not a pybind11 .def of no known module (a bare "getattr")
                out.setdefault(name, Loc(ix.path_of(file_id), line))
        return out
    table: dict[str, Loc] = ix.cached("hand_bound", build)
    return table


def tensor_hand_bound(ix: Index) -> dict[str, Loc]:
    """Tensor methods whose Python binding is hand-written C++ (THPVariable_size in the python_variable_methods.cpp
    template: a binding entry of the name that calls no op), by method name: where each is bound."""
    def build() -> dict[str, Loc]:
        out: dict[str, Loc] = {}
        for name, file_id, line in ix.q(
                "SELECT name, file_id, line FROM py_api WHERE name LIKE 'Tensor.%' AND op = '' AND target != '' "
                "ORDER BY file_id, line"):
            out.setdefault(name[len("Tensor."):], Loc(ix.path_of(file_id), line))
        return out
    table: dict[str, Loc] = ix.cached("tensor_hand_bound", build)
    return table


def method_of(ix: Index, mro: Sequence[str], name: str) -> PyDef | None:
    """The method ``name`` of an instance whose class and bases are ``mro`` (the nearest definition)."""
    names = pynames(ix)
    for fq in mro:
        d = names.definition(f"{fq}.{name}")
        if d is not None and d.kind is PyDefKind.FUNCTION:
            return d
    return None


def function_node(d: PyDef) -> Node:
    return py_node(NodeKind.PY_FUNCTION, d.fq, d.loc)


def assigned_node(d: PyDef) -> Node:
    """A name bound by assignment (``linear = _add_docstr(torch._C._nn.linear, ...)``) as a node."""
    return Node(NodeKind.BINDING, d.fq, f"{d.fq} = {' | '.join(d.values or (d.value,))}", d.loc)


def class_attribute_call(ix: Index, src: Node, full: str, site: Loc, written: str) -> list[Edge] | None:
    """``Variable._execution_engine.run_backward(...)``: a method of what a class attribute holds, set in the class
    body by ``_execution_engine = ImperativeEngine()`` (Note [Submodules]): the Python method of that class, or the
    C++ one a binding gives it (torch._C._ImperativeEngine.run_backward). None when ``full`` is no such call."""
    names = pynames(ix)
    parts = full.split(".")
    for i in range(len(parts) - 2, 0, -1):
        d = names.definition(".".join(parts[:i]))
        if d is None:
            continue
        if d.kind is not PyDefKind.CLASS or i != len(parts) - 2:
            return None
        rows = ix.q("SELECT value, file_id, line FROM py_attr WHERE func IS NULL AND attr = ? ORDER BY file_id, line",
                    (f"{d.qualname}.{parts[i]}",))
        own = [r for r in rows if ix.path_of(r[1]) == d.loc.path]
        return _held_calls(ix, src, d.module, own, parts[-1], site, written) or None
    return None


def inherited_method_call(ix: Index, src: Node, full: str, site: Loc, written: str) -> list[Edge]:
    """``C.m(...)`` where the class ``C`` does not define ``m``: the method its nearest base defines; ``C.apply(...)``
    of a ``torch.autograd.Function`` runs ``C.forward`` (Function.apply, through the C++ ``_FunctionBase.apply``),
    said so. [] when ``full`` names no class's method."""
    names = pynames(ix)
    cls_fq, _, method = full.rpartition(".")
    cls = names.definition(cls_fq) if cls_fq else None
    if cls is None or cls.kind is not PyDefKind.CLASS:
        return []
    mro = names.mro(cls.fq)
    if method == "apply" and AUTOGRAD_FUNCTION in mro and (fwd := method_of(ix, mro, "forward")) is not None:
        apply = method_of(ix, mro, "apply")
        return [Edge(src, function_node(fwd), EdgeKind.PY_CALL, site, how=EdgeHow.FUNCTION_APPLY, written=written,
                     note=f"torch.autograd.Function.apply runs forward{f' ({apply.loc})' if apply else ''}")]
    target = method_of(ix, mro, method)
    return [Edge(src, function_node(target), EdgeKind.PY_CALL, site, written=written)] if target is not None else []


def called_class_method(ix: Index, cls: PyDef) -> PyDef | None:
    """What calling an instance of ``cls`` runs: an ``nn.Module``'s ``forward``, any other class's ``__call__``."""
    mro = pynames(ix).mro(cls.fq)
    return method_of(ix, mro, "forward" if MODULE in mro else "__call__")


def attribute_calls(ix: Index, src: Node, mro: Sequence[str], written: str, site: Loc) -> list[Edge]:
    """``self.attr(...)`` where a method of the class (nearest in ``mro``) set ``self.attr = Ctor(...)``: the method
    calling a ``Ctor`` instance runs, once per constructor the class assigns (Note [Submodules]); for
    ``self.attr.method(...)`` that object's ``method``. [] when no method of the class makes it."""
    parts = written.split(".")
    attr, method = parts[1], (parts[2] if len(parts) > 2 else None)
    found = attribute_makers(ix, mro, attr)
    if found is None:
        return []  # no method of the class makes it: a subclass's method (self.forward in Module.__call__), or unknown
    module, rows, params = found
    if params and not rows:
        return _parameter_calls(ix, src, module, params, site, written, method)
    held = _held_calls(ix, src, module, rows, method, site, written)
    if not held:
        # Named, never dropped: self.weight_fake_quant = qconfig.weight(...) makes an object of no class shown
        value, file_id, line = rows[0]
        held = [Edge(src, held_node(written, site), EdgeKind.PY_CALL, site, how=EdgeHow.ATTRIBUTE, note=(
            f"made by {value}(...) at {ix.path_of(file_id)}:{line}, whose class the code does not show; not "
            "followed"), written=written)]
    # set in one branch by a call, in another to a parameter (TransformerDecoderLayer's self.activation =
    # _get_activation_fn(activation) or activation): the parameter's default runs too
    default = [e for e in _parameter_calls(ix, src, module, params, site, written, method)
               if e.dst.kind is not NodeKind.UNRESOLVED] if params else []
    return held + default


def attribute_makers(ix: Index, mro: Sequence[str], attr: str) -> tuple[
        str, list[tuple[str, int, int]], list[tuple[str, int, int, str]]] | None:
    """What a method of the nearest class in ``mro`` that sets ``self.attr`` sets it to: (its module, the calls
    (value as written, file, line), the parameters (default, file, line, parameter)); None when none sets it.
    Memoised per index version: every call through ``self.attr`` asks it, some twice (a Tensor's, then an object's)."""
    memo: dict[tuple[tuple[str, ...], str], tuple[str, list[tuple[str, int, int]],
                                                   list[tuple[str, int, int, str]]] | None] = ix.cached(
        "attribute_makers", dict)
    key = (tuple(mro), attr)
    if key not in memo:
        memo[key] = _attribute_makers(ix, mro, attr)
    return memo[key]


def _attribute_makers(ix: Index, mro: Sequence[str], attr: str) -> tuple[
        str, list[tuple[str, int, int]], list[tuple[str, int, int, str]]] | None:
    names = pynames(ix)
    for cls_fq in mro:
        d = names.definition(cls_fq)
        if d is None or d.kind is not PyDefKind.CLASS:
            continue
        made = ix.q("SELECT a.value, a.file_id, a.line, a.param FROM py_attr a JOIN py_function f ON f.id = a.func "
                    "WHERE a.attr = ? AND f.module = ? AND f.cls = ? ORDER BY a.file_id, a.line",
                    (attr, d.module, d.qualname))
        rows = [(value, file_id, line) for value, file_id, line, param in made if not param]
        params = [(value, file_id, line, param) for value, file_id, line, param in made if param]
        if rows or params:
            return d.module, rows, params
    return None


def _parameter_calls(ix: Index, src: Node, module: str, params: list[tuple[str, int, int, str]], site: Loc,
                     written: str, method: str | None = None) -> list[Edge]:
    """``self.activation(x)`` where ``__init__`` set ``self.activation = activation``: the parameter's default when it
    names a function or class (F.relu), said to be the default; else named as not followed (Note [Submodules])."""
    names = pynames(ix)
    out: list[Edge] = []
    for default, file_id, line, param in params if method is None else ():  # a method of it: not followed
        at = f"{ix.path_of(file_id)}:{line}"
        d = names.definition(names.resolve_in(module, default)) if default else None
        target = called_class_method(ix, d) if d is not None and d.kind is PyDefKind.CLASS else d
        if target is not None and target.kind in (PyDefKind.FUNCTION, PyDefKind.ASSIGN):
            node = function_node(target) if target.kind is PyDefKind.FUNCTION else assigned_node(target)
            made = d.fq if d is not None and d.kind is PyDefKind.CLASS else ""  # Note [Whose self]
            out.append(Edge(src, node, EdgeKind.PY_CALL, site, key=made, how=EdgeHow.ATTRIBUTE, written=written,
                            note=f"the default of parameter {param}={default}, set at {at}; a caller may pass another"))
    default, file_id, line, param = params[0]
    return out or [Edge(src, held_node(written, site), EdgeKind.PY_CALL, site, how=EdgeHow.ATTRIBUTE, written=written,
                        note=f"holds parameter {param}{f' (default {default})' if default else ''}, set at "
                             f"{ix.path_of(file_id)}:{line}: whatever the caller passes; not followed")]


def _held_calls(ix: Index, src: Node, module: str, made_by: list[tuple[str, int, int]], method: str | None,
                site: Loc, written: str) -> list[Edge]:
    """The calls of ``method`` (None: of the object itself) of what each constructor of ``made_by`` (value as written
    in ``module``, file, line) makes: a Python class's method, or one hand-written C++ binds on a native type; each
    target once (Linear and LazyLinear both run Linear.forward). Note [Submodules]."""
    names = pynames(ix)
    out: list[Edge] = []
    seen: set[str] = set()
    for value, file_id, line in made_by:
        made = names.resolve_in(module, value)
        cls = names.definition(made)
        instance = ""  # the class of the object, whose method the edge reaches: Note [Whose self]
        if cls is not None and cls.kind is PyDefKind.CLASS:
            target = called_class_method(ix, cls) if method is None else method_of(ix, names.mro(cls.fq), method)
            dst = function_node(target) if target is not None else None
            instance = cls.fq
        else:
            bound = hand_bound(ix).get(f"{made}.{method}") if method is not None else None
            dst = binding_node(f"{made}.{method}", bound) if bound is not None else None
        if dst is not None and dst.key not in seen:
            seen.add(dst.key)
            out.append(Edge(src, dst, EdgeKind.PY_CALL, site, key=instance, how=EdgeHow.ATTRIBUTE,
                            note=f"{value}(...) at {ix.path_of(file_id)}:{line}", written=written))
    return out


def attributes_made_by(ix: Index, cls_fq: str) -> set[str]:
    """``self.attr`` of every attribute some class sets to an instance of ``cls_fq`` or of a class derived from it
    (one level: ``out_proj = NonDynamicallyQuantizableLinear(...)`` runs Linear.forward): the calls that may run its
    ``forward`` (Note [Submodules]); ``_call`` decides which do."""
    classes = {cls_fq.rsplit(".", 1)[-1]} | {d.name for d in pynames(ix).derived(cls_fq)}
    out: set[str] = set()
    for name in classes:
        out |= {"self." + attr for (attr,) in ix.q(
            "SELECT DISTINCT attr FROM py_attr WHERE func IS NOT NULL AND param = '' AND (value = ? OR value LIKE ? "
            "ESCAPE '\\')",
            (name, "%." + like_literal(name)))}
    return out
