"""Facts from PyTorch's Python modules (torch/**/*.py): classes, defs, calls, imports,
module-level aliases, and where ops get Python meaning.

One pass per file: a LIFO walk per scope (module, class body, function body) that
recurses only into defs and classes; Attribute chains and names are read once and
never descended into.
"""

from __future__ import annotations

import ast
import json
from ast import Attribute, Call, Constant, Name
from dataclasses import replace

from ..model import (
    FileFacts,
    PyAssign,
    PyAttr,
    PyCall,
    PyClass,
    PyFunction,
    PyFunctionKind,
    PyImport,
    PyOpRef,
    PyOpRefKind,
    PyReceiver,
    RaiseSite,
)
from .opregs import kind_for, op_name, op_names, ref_op
from .pyarms import CHOICES, NO_ARM, BranchArms, Pos
from .pyast import (
    DEFS,
    block_statements,
    call_shape,
    decorator_calls,
    decorator_texts,
    dedupe_oprefs,
    doc_assigned,
    dotted,
    first_doc_line,
    import_rows,
    instance_attrs,
    last_part,
    literal_strs,
    module_name,
    param_attrs,
    param_defaults,
    push_children,
    run_extractor,
    signature,
    text,
)
from .pyrecv import BINDS, Receivers, annotation_kind, made_by
from .raises_py import CALL_NAMES, HOOKS, PyRaises, on_call

_FuncDef, _AsyncDef, _ClassDef = ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef
_Import, _ImportFrom, _Assign, _Lambda = ast.Import, ast.ImportFrom, ast.Assign, ast.Lambda
EXPR = "<expr>"  # the receiver of a method call that is not a name: (-input).softmax -> "<expr>.softmax"
_PROPERTY = {"property", "cached_property", "setter", "getter", "deleter", "abstractproperty"}


def extract_python(relpath: str, data: bytes, tree: ast.Module | None = None) -> FileFacts:
    """Facts of one torch/** module; a file that does not parse comes back with its FileProblems."""
    return run_extractor(lambda rel, t: _Extractor(rel, t, data), relpath, data, tree)


class _Extractor:
    def __init__(self, relpath: str, tree: ast.Module, data: bytes = b""):
        self.relpath = relpath
        self.tree = tree
        self.module, self.is_pkg = module_name(relpath)
        self.classes: list[PyClass] = []
        self.funcs: list[PyFunction] = []
        self.calls: list[PyCall] = []
        self.imports: list[PyImport] = []
        self.assigns: list[PyAssign] = []
        self.attrs: list[PyAttr] = []
        self.oprefs: list[PyOpRef] = []
        self.aliases: dict[str, str] = {}  # module-level name -> dotted target
        self.module_funcs: dict[str, int] = {}  # module-level def name -> index
        self.is_refs = relpath.startswith("torch/_refs/")
        self.refs_all: set[str] | None = None
        self.pending: list[tuple[list[int], dict[str, list[str]], dict[tuple[str, str], Pos], BranchArms | None]] = []
        self.open_scopes: list[Receivers] = []  # of the functions whose walk is under way
        self.raises = PyRaises(tree, self.aliases, data)

    def run(self) -> FileFacts:
        self._module_prepass()
        self._scope(self.tree.body, -1, "", "")
        self._resolve_pending()
        if self.is_refs:
            self._assigned_refs()
        return {
            PyClass: self.classes,
            PyFunction: self.funcs,
            PyCall: self.calls,
            PyImport: self.imports,
            PyAssign: self.assigns,
            PyAttr: self.attrs,
            PyOpRef: dedupe_oprefs(self.oprefs),
            RaiseSite: self.raises.sites,
        }

    # ------------------------------------------------------------ module level

    def _module_prepass(self) -> None:
        """Aliases (for op names) and PyAssign rows, before the walk needs them."""
        stmts = block_statements(self.tree.body)
        known: set[str] = set()
        classes = {s.name for s in stmts if s.__class__ is _ClassDef}
        for s in stmts:
            cls = s.__class__
            if cls is _Import or cls is _ImportFrom:
                for alias, target, _ in import_rows(s, self.module, self.is_pkg):
                    if alias != "*":
                        self.aliases[alias] = target
                        known.add(alias)
            elif cls in DEFS or cls is _ClassDef:
                known.add(s.name)
        for s in stmts:
            cls = s.__class__
            if cls is _Assign:
                targets, value = s.targets, s.value
            elif cls is ast.AnnAssign and s.value is not None:
                targets, value = [s.target], s.value
            elif cls is ast.AugAssign and self.is_refs:
                if s.target.__class__ is Name and s.target.id == "__all__":
                    self.refs_all = (self.refs_all or set()) | set(literal_strs(s.value))
                continue
            else:
                continue
            if self.is_refs and len(targets) == 1 and targets[0].__class__ is Name and targets[0].id == "__all__":
                self.refs_all = (self.refs_all or set()) | set(literal_strs(value))
                continue
            refs = self._assigned_values(value, known)
            # Variable._execution_engine = ImperativeEngine() after the class: a class attribute holding an instance
            self.attrs += [PyAttr(-1, name, ctor, s.lineno) for name, ctor in instance_attrs(s, classes)]
            for t in targets:
                name = dotted(t)
                if name is None:
                    continue
                known.add(name)
                for ref in refs:
                    self.assigns.append(PyAssign(name, ref, s.lineno))
                if refs and t.__class__ is Name and refs[0].startswith(("torch.ops.", "torch._ops.ops.")):
                    self.aliases[name] = refs[0]

    @staticmethod
    def _assigned_values(value, known: set[str], prefix: str = "") -> list[str]:
        """What a name is bound to: ``torch.foo`` -> ["torch.foo"]; ``wrapper(torch.foo, ...)`` -> its first
        argument; ``boolean_dispatch(if_true=f, if_false=g, ...)`` -> the functions given by keyword. A value
        counts when it names something (has a dot, or is a def/class/import/alias of this scope); ``prefix``
        qualifies names of a class body (``__rtruediv__ = __rdiv__`` -> "Tensor.__rdiv__")."""
        if value.__class__ is Call:
            cands = value.args[:1] + [k.value for k in value.keywords if k.arg]
        else:
            cands = [value]
        out = []
        for c in cands:
            d = dotted(c)
            if d is None or d.startswith("super()"):
                continue
            head = d.split(".")[0]
            if prefix and prefix + head in known:
                out.append(prefix + d)
            elif head in known or "." in d:
                out.append(d)
        return list(dict.fromkeys(out))

    def _assigned_refs(self) -> None:
        """Refs made by assignment: a name listed in torch/_refs ``__all__`` (``swap_axes =
        transpose``), or a public name built from a ref of this module (``abs_ =
        _make_inplace(abs)``: in-place refs are not listed in ``__all__``)."""
        ref_funcs = {self.funcs[r.func].name for r in self.oprefs if r.kind == "ref" and r.func >= 0}
        for a in self.assigns:
            if a.name in self.module_funcs or a.name.startswith("_") or "." in a.name:
                continue
            if (self.refs_all and a.name in self.refs_all) or a.value in ref_funcs:
                self.oprefs.append(PyOpRef(PyOpRefKind.REF, ref_op(self.module, a.name), -1, a.line))

    # ------------------------------------------------------------ scopes

    def _scope(self, body: list, func: int, qual: str, cls: str, args: ast.arguments | None = None) -> None:
        """Walk one scope's statements. ``func``: enclosing PyFunction index (-1 at module
        level); ``qual``: qualname prefix for defs here; ``cls``: class qualname if a class body; ``args``:
        the parameters of a function's body."""
        calls, append_call = self.calls, self.calls.append
        first = len(calls)
        local: dict[str, list[str]] = {}  # func = _multi_tensor_sgd: callee aliases in a def
        strs: dict[str, list[ast.expr]] = {}  # msg = f"..."; msg += ...: messages built before a raise
        assigned_at: dict[tuple[str, str], Pos] = {}  # (alias, value) -> where its first assignment starts
        pending: list[int] = []  # calls through a bare local name, resolved at scope end
        arms = BranchArms(body) if func >= 0 else None
        cols: dict[int, int] = {}  # a call of this scope (its index) -> its column: which arm of a line holds it
        recv = Receivers(args, self.open_scopes) if args is not None else None  # Note [Builtin receivers]
        params: dict[str, str] | None = None  # parameter -> default, once a `self.x = name` needs it
        stack = list(reversed(body))
        pop = stack.pop
        while stack:
            n = pop()
            t = n.__class__
            if t is Name or t is Constant:
                continue
            if t is Call:
                f = n.func
                name = dotted(f)
                if name is not None:
                    if func >= 0 and f.__class__ is Name:
                        pending.append(len(calls))
                    elif recv is not None and f.__class__ is Attribute and f.value.__class__ is Name:
                        recv.calls.append(len(calls))
                    cols[len(calls)] = n.col_offset
                    append_call(PyCall(func, name, n.lineno, **call_shape(n)))
                    if name in CALL_NAMES:
                        on_call(self.raises, n, name, func, strs)
                    if n.args:
                        kind = kind_for(last_part(name), self.relpath)
                        if kind is not None:
                            self._register(kind, n, -1, local)
                elif f.__class__ is ast.Subscript and func >= 0 and (held := dotted(f.value)) is not None:
                    cols[len(calls)] = n.col_offset
                    append_call(PyCall(func, f"{held}[]", n.lineno, **call_shape(n)))  # self.layers[i](x)
                    stack.append(f)
                elif f.__class__ is Attribute and func >= 0:
                    # (-input).softmax(dim), x.view(...).sum(): a method of whatever the expression gives
                    cols[len(calls)] = n.col_offset
                    append_call(PyCall(func, f"{EXPR}.{f.attr}", n.lineno, **call_shape(n), **made_by(f.value)))
                    stack.append(f.value)
                elif f.__class__ is Call and self._call_of_registrar(n, f, func, local):
                    # the inner registrar call is handled: walk only its arguments
                    for k in reversed(f.keywords):
                        stack.append(k.value)
                    stack.extend(reversed(f.args))
                else:
                    stack.append(f)
                for k in reversed(n.keywords):
                    stack.append(k.value)
                stack.extend(reversed(n.args))
            elif t is Attribute:
                if dotted(n) is None:
                    stack.append(n.value)
            elif t is _FuncDef or t is _AsyncDef:
                self._def(n, func, qual, cls, stack, local)
            elif t is _ClassDef:
                self._class(n, func, qual, stack, local)
            elif t is _Import or t is _ImportFrom:
                for row in import_rows(n, self.module, self.is_pkg):
                    self.imports.append(PyImport(*row))
            else:
                hook = HOOKS.get(t)
                if hook is not None:
                    hook(self.raises, n, func, strs)
                if recv is not None and t in BINDS:
                    recv.bind(n)
                if t in CHOICES and arms is not None:
                    arms.add(n)
                elif t is _Assign and func >= 0 and len(n.targets) == 1 and n.targets[0].__class__ is Name:
                    d = dotted(n.value)
                    if d is not None:
                        vals = local.setdefault(n.targets[0].id, [])
                        if d not in vals:
                            vals.append(d)
                            assigned_at[(n.targets[0].id, d)] = (n.lineno, n.col_offset)
                if func >= 0 and (t is _Assign or t is ast.AnnAssign) and n.value.__class__ is Call:
                    self.attrs += [PyAttr(func, t[len("self."):], ctor, n.lineno) for t, ctor in instance_attrs(n)]
                elif args is not None and t is _Assign and n.value.__class__ is Name:
                    if params is None:
                        params = param_defaults(args)
                    self.attrs += [PyAttr(func, attr, default, n.lineno, param)
                                   for attr, param, default in param_attrs(n, params)]
                push_children(n, stack)
        if arms is not None and arms.spans:
            arms.mark(calls, first, func, cols)
        if recv is not None:
            recv.apply(calls, pending)
        if pending and local:
            self.pending.append((pending, local, assigned_at, arms if arms is not None and arms.spans else None))

    def _resolve_pending(self) -> None:
        """A call through a local alias (``func = _single_tensor_sgd; func(...)``) is
        recorded as a call of what the alias names (one row per assigned value)."""
        for idxs, local, assigned_at, arms in self.pending:
            for i in idxs:
                c = self.calls[i]
                vals = [v for v in local.get(c.callee, ()) if v != c.callee]
                for k, v in enumerate(vals):
                    at = assigned_at[(c.callee, v)]
                    arm = (arms.of(at) if arms is not None else None) or NO_ARM
                    row = replace(c, callee=v, chosen=at[0], local=False, **arm)
                    if k == 0:
                        self.calls[i] = row
                    else:
                        self.calls.append(row)

    def _def(self, n, func: int, qual: str, cls: str, stack: list, local) -> None:
        idx = len(self.funcs)
        decos = decorator_texts(n)
        kind = (PyFunctionKind.ASYNC if n.__class__ is _AsyncDef
                else PyFunctionKind.METHOD if cls else PyFunctionKind.FUNCTION)
        for d in n.decorator_list:
            dn = dotted(d.func if d.__class__ is Call else d) or ""
            last = last_part(dn)
            if last == "staticmethod":
                kind = PyFunctionKind.STATICMETHOD
            elif last == "classmethod":
                kind = PyFunctionKind.CLASSMETHOD
            elif last in _PROPERTY:
                kind = PyFunctionKind.PROPERTY
            if d.__class__ is Call and d.args:
                k = kind_for(last, self.relpath)
                if k is not None:
                    self._register(k, d, idx, local)
                elif last == "py_impl" and d.func.__class__ is Attribute:
                    op = op_name(d.func.value, self.aliases, local)
                    if op is not None:
                        self.oprefs.append(PyOpRef(PyOpRefKind.PYTHON_IMPL, op, idx, d.lineno))
        qualname = qual + n.name
        self.funcs.append(PyFunction(
            self.module, qualname, n.name, cls, signature(n), n.lineno, n.end_lineno or n.lineno,
            first_doc_line(n), json.dumps(decos), kind, annotation_kind(n.returns) or PyReceiver.UNKNOWN,
        ))
        decorator_calls(n, func, self.calls, stack)
        a = n.args
        stack.extend(x for x in a.kw_defaults if x is not None)
        stack.extend(a.defaults)
        if func < 0 and not cls and not qual:
            self.module_funcs[n.name] = idx
            if self.is_refs and self._is_ref(n.name, decos):
                self.oprefs.append(PyOpRef(PyOpRefKind.REF, ref_op(self.module, n.name), idx, n.lineno))
        self._scope(n.body, idx, qualname + ".<locals>.", "", n.args)

    def _is_ref(self, name: str, decos: list[str]) -> bool:
        if any(d.startswith("out_wrapper") for d in decos):
            return True
        return name in self.refs_all if self.refs_all is not None else not name.startswith("_")

    def _class(self, n, func: int, qual: str, stack: list, local) -> None:
        qualname = qual + n.name
        bases = [text(b) for b in n.bases]
        bases += [f"{k.arg}={text(k.value)}" if k.arg else f"**{text(k.value)}" for k in n.keywords]
        self.classes.append(PyClass(
            self.module, qualname, n.name, json.dumps(bases), n.lineno, n.end_lineno or n.lineno,
            first_doc_line(n) or doc_assigned(n.body), json.dumps(decorator_texts(n)),
        ))
        decorator_calls(n, func, self.calls, stack)
        for b in n.bases:
            if b.__class__ is not Name and dotted(b) is None:
                stack.append(b)
        if func < 0:
            self._class_assigns(n, qualname)
        self._scope(n.body, func, qualname + ".", qualname)

    def _class_assigns(self, n, qualname: str) -> None:
        """``__neg__ = _C.TensorBase.neg`` in a class body: PyAssign("Tensor.__neg__", ...), so the member
        resolves like a module-level alias."""
        body = block_statements(n.body)
        known = set(self.aliases) | set(self.module_funcs) | {c.qualname for c in self.classes}
        known |= {f"{qualname}.{s.name}" for s in body if s.__class__ in DEFS}
        for s in body:
            if s.__class__ is not _Assign:
                continue
            self.attrs += [PyAttr(-1, f"{qualname}.{a}", ctor, s.lineno) for a, ctor in instance_attrs(s, None)]
            for ref in self._assigned_values(s.value, known, qualname + "."):
                for t in s.targets:
                    if t.__class__ is Name:
                        self.assigns.append(PyAssign(f"{qualname}.{t.id}", ref, s.lineno))
            for t in s.targets:
                if t.__class__ is Name:
                    known.add(f"{qualname}.{t.id}")

    # ------------------------------------------------------------ op registrations

    def _register(self, kind: str, call: Call, func: int, local) -> None:
        """``registrar(op_or_ops, ...)``; ``register_inplace(aten.X_, impl)`` names its impl."""
        if func < 0 and kind in ("decomposition", "lowering") and len(call.args) > 1:
            impl = call.args[1]
            if impl.__class__ is Name and last_part(dotted(call.func) or "") == "register_inplace":
                func = self.module_funcs.get(impl.id, -1)
        for op in op_names(call.args[0], self.aliases, local):
            self.oprefs.append(PyOpRef(kind, op, func, call.lineno))

    def _call_of_registrar(self, outer: Call, inner: Call, func: int, local) -> bool:
        """``register_lowering(aten.X)(fn)``: the inner call registers ``fn``. True if handled."""
        name = dotted(inner.func)
        if name is None or not inner.args:
            return False
        kind = kind_for(last_part(name), self.relpath)
        if kind is None:
            return False
        target = -1
        if outer.args and outer.args[0].__class__ is Name:
            target = self.module_funcs.get(outer.args[0].id, -1)
        self.calls.append(PyCall(func, name, inner.lineno, **call_shape(inner)))
        self._register(kind, inner, target, local)
        return True
