"""Constructions in a C++ body: ``CUDAGuard guard(device);``, ``new T(args)``, ``std::make_unique<T>(args)`` run a
constructor of their type.

A mixin of ``cpp_walk.Walker``, as ``cpp_calls.Calls`` is: it reads the walker's text, typer and variables and adds
to its calls (Note [Constructions written as declarations]).
"""

from __future__ import annotations

from ..model import CallKind, CallSite
from ..model.cpp import is_builtin_name
from ..model.factories import FACTORIES
from .cpp_bindings import u
from .cpp_text import split_scope, strip_templates


class Constructions:
    """The walker's handlers of a body's declarations that construct their variable, of ``new`` expressions and of
    the factories' calls (Note [Factories construct] in model/factories.py)."""

    # Note [Constructions written as declarations]
    # ``CUDAGuard guard(device_index_);``, ``c10::FunctionSchema schema{name, ...};``, ``std::lock_guard<std::mutex>
    # lock(m);``: a variable declared with constructor arguments in a function body runs a constructor of its type, as
    # ``CUDAGuard(device_index_)`` and ``new CUDAGuard(device_index_)`` do; each is a CONSTRUCT site of the type as
    # written (its arguments counted and typed as a call's), resolved to the constructor they choose
    # (graph/resolve.py). tree-sitter reads it as an ``init_declarator`` with an argument list or a braced list, or,
    # when every argument is a name (``CUDAGuard guard(device);``), as the declaration of a function ``guard`` taking
    # a ``device`` (the most vexing parse, which no body of PyTorch means): a declarator of parameters each only a
    # name or a call (Note [Calls read as declarations]) is the construction. A pointer, a reference, a builtin or
    # ``auto`` constructs no class; ``T x;`` and ``T x = e;`` are not recorded (no arguments: the default
    # constructor; an expression: the copy of a value whose own construction, if any, is a call site already).
    def _declared(self, ty, d, caller: int) -> None:
        if ty is None or ty.type not in ("type_identifier", "qualified_identifier", "template_type"):
            return
        parts, callee = split_scope(strip_templates(self.t(ty)).replace("template ", ""))
        if not callee or is_builtin_name(callee) or is_builtin_name("::".join([*parts, callee])):
            return
        inner = d.child_by_field_name("declarator")
        if inner is None or inner.type != "identifier":
            return
        if d.type == "init_declarator":
            vals = d.child_by_field_name("value")
            if vals is None or vals.type not in ("argument_list", "initializer_list"):
                return
            nargs, args = self.typer.arg_list(vals, vals.start_byte)
        elif d.type == "function_declarator":
            params = d.child_by_field_name("parameters")
            got = self._vexing_args(params)
            if got is None:
                return
            nargs, args = got
            vals = None
        else:
            return
        self.calls.append(CallSite(caller, callee, u("::".join(parts)), self.line(ty), CallKind.CONSTRUCT, "", "",
                                   nargs, u(args)))
        if vals is not None:
            self._refs(vals, caller)

    def _vexing_args(self, params) -> tuple[int, str] | None:
        """A declarator's parameters read as the arguments they are: (count, type expressions); None when one is a
        parameter (a type with a name, a builtin type), so the declarator declares a function."""
        if params is None or not params.named_children:
            return None  # T x(); declares a function
        tes = []
        for prm in params.named_children:
            if prm.type == "comment":
                continue
            ty, inner = prm.child_by_field_name("type"), prm.child_by_field_name("declarator")
            if prm.type != "parameter_declaration" or ty is None or ty.type == "primitive_type" or (
                    inner is not None and inner.type != "abstract_function_declarator"):
                return None
            if inner is None and ty.type == "type_identifier":  # a name: the variable's type, if the file shows it
                tes.append(self.vars.get(self.t(ty), prm.start_byte) or "")
            else:
                tes.append("")
        joined = ";".join(tes)
        return len(tes), joined if any(tes) else ""

    def _new(self, n, caller: int) -> None:
        """``new T(args)``, ``new T{args}``, ``new T``, ``new T[n]``: a construction of T, its arguments counted and
        typed as a call's (Note [Argument counts] in graph/signatures.py): none for ``new T`` and for each element
        of ``new T[n]`` (the default constructor)."""
        ty = n.child_by_field_name("type")
        if ty is None:
            return
        parts, callee = split_scope(strip_templates(self.t(ty)))
        if not callee or ty.type == "primitive_type":
            return
        vals = n.child_by_field_name("arguments")
        if vals is None:
            nargs, args = 0, ""
        elif caller >= 0:
            nargs, args = self.typer.arg_list(vals, n.start_byte)
        else:
            nargs, args = -1, ""
        self.calls.append(CallSite(caller, callee, u("::".join(parts)), self.line(n), CallKind.CONSTRUCT, "", "",
                                   nargs, u(args)))
        if caller >= 0:
            self._refs(vals, caller)

    def _made(self, n, f, qual: str, callee: str, nargs: int, args: str, caller: int) -> None:
        """``std::make_unique<T>(args)``: a CONSTRUCT of T with the call's arguments (Note [Factories construct] in
        model/factories.py). ``f``: the call's function, written with template arguments."""
        if (f"{qual.strip(':')}::{callee}" if qual.strip(":") else callee) not in FACTORIES:
            return
        while f is not None and f.type == "qualified_identifier":
            f = f.child_by_field_name("name")
        targs = f.child_by_field_name("arguments") if f is not None and f.type == "template_function" else None
        first = next((c for c in targs.named_children if c.type != "comment"), None) if targs is not None else None
        ty = first.child_by_field_name("type") if first is not None and first.type == "type_descriptor" else None
        if ty is None or first.child_by_field_name("declarator") is not None or ty.type not in (
                "type_identifier", "qualified_identifier", "template_type"):
            return  # make_unique<int[]>(n), make_shared<T*>(): no class constructed
        parts, name = split_scope(strip_templates(self.t(ty)).replace("template ", ""))
        full = "::".join([*parts, name])
        if not name or parts[:1] == ["std"] or is_builtin_name(name) or is_builtin_name(full) or (
                not parts and name in self._own_names(n)):
            return
        self.calls.append(CallSite(caller, name, u("::".join(parts)), self.line(ty), CallKind.CONSTRUCT, "", "",
                                   nargs, u(args)))
