"""Calls in a C++/CUDA buffer: call expressions, kernel launches, references.

A mixin of ``cpp_walk.Walker``: its methods read and fill the walker's state (text,
typer, calls). Each call keeps its callee as written, its receiver's type expression and
its arguments' types; nothing is resolved here (graph/resolve.py does that at query time).
"""

from __future__ import annotations

import re

from ..model import TEMPLATE_ARGUMENT, CallKind, CallSite
from ..model.cpp import is_builtin_name, split_template_args
from ..model.cuda import LAUNCH_FAMILIES
from .cpp_bindings import BINDING_METHODS, record_binding, u
from .cpp_regs import Regs
from .cpp_text import collapse, split_scope, strip_comments, strip_templates
from .cpp_types import type_text
from .raises_cpp import DISPATCH_PREFIX, RAISE_CALLEES, record_raise

_CASTS = frozenset({"static_cast", "reinterpret_cast", "const_cast", "dynamic_cast", "bit_cast"})
_RECV_MAX = 80
_FUNCTOR_NAME = re.compile(r"[\w:]+")
# Note [Kernels held in a variable]: a kernel launched through a local variable (``auto kernel =
# &flash_fwd_kernel<...>; kernel<<<grid, block>>>(params)``, a function pointer chosen by a branch) is
# launched as each function the variable is given in the body before the launch, at the launch's line.
# A local variable given a function's address and called (``auto launch = &run_mha_bwd; launch(params)``)
# calls that function the same way.
_HELD = re.compile(r"\s*=(?!=)\s*(&?)\s*((?:[A-Za-z_]\w*\s*::\s*)*[A-Za-z_]\w*)")
_NOT_HELD = frozenset({"nullptr", "NULL", "this", "new", "static_cast", "reinterpret_cast"})
# Note [Operators]: an operator on an operand of a class type is a call of the function that overloads it (C++
# [over.match.oper]): ``self != self`` in at::native::isnan is at::operator!=(const Tensor&, const Tensor&), whose
# body is ``x.ne(y)``; ``grad * self.sgn()``, ``-t``, ``t += u``, ``t[i]`` likewise. One is recorded
# (CallKind.OPERATOR: the first operand as the receiver, the others as the arguments) when an operand is a name the
# file declares with a class type (``_may_be_class``; the operators the query captures: cpp_walk.QUERY). Which
# function it is, if any, is decided where calls are resolved (graph/resolve.py); an operator the tree overloads for
# none of the operands' types is the language's: no call. Operands whose type takes resolving (``t.size(0) == 1``,
# mostly numbers) are left out: a call site for each would add a fifth to the call sites of a tree.
# Note [References]: a function is run through a name that is not called where it is written as often as by a
# call: put in a table (``array_of<bool (*)(sdp_params const&, bool)>(check_runtime_disabled_cudnn, ...)``, looped
# over and called), handed to a helper that calls it (``fmap(value, getOptTensorValueTrace)``,
# ``split_batch_dim_to_32bit_out(..., raw_cudnn_convolution_backward_input_out_32bit)``), given to a registration
# (``TORCH_FN(f)``) or its address taken (``&f``), or given as a template argument (``makeFromBoxedFunction<&
# conjugateFallback>()``, ``upsample_template<nearest_neighbor_compute_source_index>(...)``). Each name written as an
# argument, an element of an initializer list or a call's template argument (detail TEMPLATE_ARGUMENT; not a
# parameter of a template around it, nor a type alias of its body) in a function's body is recorded as a REF site
# (``CallKind.REF``), its address or template instance as the name; whether it names a function (and which) is
# decided where calls are resolved (graph/resolve.py): a variable, an enumerator or a class of that name makes no
# edge. A pybind11 ``.def`` and the registration macros keep their own
# facts (their arguments are not references again).
_ALIASED = re.compile(r"\busing\s+(\w+)\s*=")  # a type alias a function body declares
_WORD = re.compile(r"[A-Za-z_]\w*")
_CONSTRUCTED = re.compile(r"^([A-Za-z_][\w:]*)\s*(<.*>)?\s*(\(\s*\)|\{\s*\})$", re.S)  # Functor<T>() / Functor{}


class Calls:
    """The walker's handlers of call expressions."""

    def _call(self, n, caller: int, lib) -> None:
        f = n.child_by_field_name("function")
        if f is None:
            return
        ty = f.type
        qual = ""
        kind = CallKind.CALL
        detail = ""
        recv = targs = ""
        explicit = False  # written with template arguments of its own: f<T>(...)
        name_at = n
        if ty == "identifier":
            callee = self.t(f)
            te = self.vars.get(callee, n.start_byte)
            if te is not None:
                recv = te or "?"  # a local variable called (a lambda, a functor): never a function of that name
        elif ty == "qualified_identifier":
            raw = self.t(f).replace("template ", "")
            parts, callee = split_scope(raw)
            # "::atan2(a, b)" names the global (C library) function: keep that apart from "atan2".
            qual = "::".join(parts) if parts else ("::" if raw.lstrip().startswith("::") else "")
            if ">::" in raw:  # std::numeric_limits<float>::max: the arguments tell specializations apart
                targs = type_text(_last_scope_args(raw))
            explicit = raw.rstrip().endswith(">")
        elif ty == "template_function":
            nm = f.child_by_field_name("name")
            callee = self.t(nm) if nm is not None else ""
            explicit = True
        elif ty == "field_expression":
            fld = f.child_by_field_name("field")
            if fld is None:
                return
            callee = self.t(fld)
            if fld.type != "field_identifier":  # x.f<T>(), x.template f<T>()
                explicit = "<" in callee
                callee = split_scope(strip_templates(callee).replace("template ", ""))[1]
            if callee in BINDING_METHODS and record_binding(self, n, f, callee, caller, lib):
                return
            obj = f.child_by_field_name("argument")
            qual = collapse(self.t(obj)) if obj is not None else ""
            if len(qual) > _RECV_MAX:
                qual = qual[:_RECV_MAX]
            kind = CallKind.METHOD
            recv = self.typer.expr(obj, n.start_byte) if caller >= 0 else ""
            op = f.child_by_field_name("operator")
            if recv and op is not None and self.t(op) == "->":
                recv += "|*"
            name_at = fld  # x\n  .f(): the call is where f is written
        elif ty == "compound_literal_expression":  # sum_functor<scalar_t>{}(iter): the type's operator()
            tn = f.child_by_field_name("type")
            if tn is None:
                return
            parts, name = split_scope(strip_templates(self.t(tn)).replace("template ", ""))
            callee, qual = "operator()", "::".join([*parts, name])
        elif ty == "call_expression" and _constructed_in_place(f):  # Functor<T>()(iter, f): its operator()
            parts, name = split_scope(strip_templates(self.t(f.child_by_field_name("function"))).replace(
                "template ", ""))
            callee, qual = "operator()", "::".join([*parts, name])
        else:
            return
        if not callee:
            return
        if callee in _CASTS:  # static_cast<OutFunc>(at::logical_and_out) names a function (Note [References])
            if caller >= 0:
                self._refs(n.child_by_field_name("arguments"), caller)
            return
        if (callee in RAISE_CALLEES or callee.startswith(DISPATCH_PREFIX)) and kind is CallKind.CALL:
            record_raise(self, n, callee, qual, caller)
        if self.is_cuda and n.child_count > 2 and n.child(1).type == "kernel_call_syntax":
            kind = CallKind.LAUNCH
            detail = collapse(self.t(n.child(1)).strip("<> \n"))
            held = self._held_kernels(callee, n.start_byte) if recv else []
            if held:  # impl_fptr<<<...>>>: the kernels the local variable was given
                for q, name in held:
                    self.calls.append(CallSite(caller, name, u(q), self.line(name_at), kind, u(detail)))
                return
        elif callee in LAUNCH_FAMILIES:
            kind = CallKind.GPU_LAUNCH
            detail = self._functor(n, f)
        elif callee in Regs.MACROS:
            return  # handled as a registration
        nargs, args = self.typer.args(n, n.start_byte) if caller >= 0 and not kind.is_launch else (-1, "")
        held = self._held_kernels(callee, n.start_byte, address=True) if recv and kind is CallKind.CALL else []
        if held and ty == "identifier":  # launch(params, stream) with auto launch = &run_mha_bwd;
            for q, name in held:
                self.calls.append(CallSite(caller, name, u(q), self.line(name_at), kind, "", "", nargs, u(args)))
            return
        self.calls.append(CallSite(caller, callee, u(qual), self.line(name_at), kind, u(detail), u(recv), nargs,
                                   u(args), u(targs), explicit))
        if caller >= 0:
            self._refs(n.child_by_field_name("arguments"), caller)
            if explicit:
                self._template_refs(f, caller)
                self._made(n, f, qual, callee, nargs, args, caller)

    def _vexing(self, n, caller: int) -> None:
        """Note [Calls read as declarations]: in a function body, ``THPObjectPtr parent_(functionToPyObject(node));``
        is a variable made from a call, which C++'s grammar (and tree-sitter) reads as the declaration of a function
        ``parent_`` taking a ``functionToPyObject`` that takes a ``node`` (the most vexing parse): no function is
        declared so in PyTorch's bodies, so each such parameter, of each declarator and nested in another, is recorded
        as the call it is (``int(a)`` is a conversion). The variable itself is constructed (Note [Constructions
        written as declarations])."""
        for d in n.children_by_field_name("declarator"):
            if d.type == "function_declarator":
                self._vexing_params(d.child_by_field_name("parameters"), caller)
            self._declared(n.child_by_field_name("type"), d, caller)

    def _vexing_params(self, params, caller: int) -> None:
        for prm in params.named_children if params is not None else ():
            ty, inner = prm.child_by_field_name("type"), prm.child_by_field_name("declarator")
            if prm.type != "parameter_declaration" or ty is None or ty.type == "primitive_type" or inner is None \
                    or inner.type != "abstract_function_declarator":
                continue
            parts, callee = split_scope(self.t(ty))
            args = inner.child_by_field_name("parameters")
            nargs = sum(c.type == "parameter_declaration" for c in args.named_children) if args is not None else 0
            self.calls.append(CallSite(caller, callee, u("::".join(parts)), self.line(ty), CallKind.CALL, "", "",
                                       nargs))
            self._vexing_params(args, caller)

    def _refs(self, n, caller: int) -> None:
        """The names of an argument list or an initializer list that may name a function without calling it: a
        name, its address, a template's instance (Note [References]). A local variable or parameter is not one, nor
        a name with no lower-case letter (a macro or a constant)."""
        if n is None:
            return
        for c in n.named_children:
            at = c
            if c.type == "pointer_expression" and self.t(c).lstrip().startswith("&"):
                at = c.child_by_field_name("argument")
                if at is None:
                    continue
            if at.type == "identifier":
                qual, name = "", self.t(at)
                if self.vars.get(name, c.start_byte) is not None:
                    continue
            elif at.type in ("qualified_identifier", "template_function"):
                parts, name = split_scope(strip_templates(self.t(at)).replace("template ", ""))
                qual = "::".join(parts)
            else:
                continue
            if name.lower() != name.upper() and name != name.upper() and name not in _CASTS:
                self.calls.append(CallSite(caller, name, u(qual), self.line(at), CallKind.REF, ""))

    def _template_refs(self, f, caller: int) -> None:
        """``upsample_nearest2d_out_cuda_template<nearest_neighbor_compute_source_index>(...)``: a function given as a
        template argument is referenced too (Note [References]). An argument that is a type is not one: a name
        written as a function is (lower case first, not ``*_t``), and where calls are resolved only a function of
        that name makes an edge."""
        at_call = f
        while f is not None and f.type == "qualified_identifier":
            f = f.child_by_field_name("name")
        args = f.child_by_field_name("arguments") if f is not None and f.type == "template_function" else None
        own: set[str] | None = None  # the enclosing templates' parameters and the body's type aliases, when asked
        for c in args.named_children if args is not None else ():
            at = c.named_children[0] if c.type == "type_descriptor" and c.named_child_count == 1 else c
            if at.type == "pointer_expression" and self.t(at).lstrip().startswith("&"):
                at = at.child_by_field_name("argument")
            if at is None or at.type not in ("type_identifier", "identifier", "qualified_identifier",
                                             "qualified_type_identifier"):
                continue
            parts, name = split_scope(self.t(at))
            if not name[:1].islower() or name.endswith("_t") or name in _CASTS or (
                    not parts and self.vars.get(name, c.start_byte) is not None):
                continue
            if not parts:
                own = self._own_names(at_call) if own is None else own
                if name in own:  # compute_mode<scalar_t, size>: a parameter of the template around the call
                    continue
            self.calls.append(CallSite(caller, name, u("::".join(parts)), self.line(at), CallKind.REF,
                                       TEMPLATE_ARGUMENT))

    def _own_names(self, n) -> set[str]:
        """The names of the templates' parameters around ``n`` and the type aliases of the function body around it
        (``using dtype = OpaqueType<...>``): names a template argument may be that are no function."""
        out: set[str] = set()
        body = None
        while n is not None:
            if n.type == "template_declaration":
                for p in (n.child_by_field_name("parameters").named_children
                          if n.child_by_field_name("parameters") is not None else ()):
                    nm = p.child_by_field_name("name") or p.child_by_field_name("declarator")
                    if nm is not None:  # int size; bool (*pred)(int): its first name
                        out.update(_WORD.findall(self.t(nm))[:1])
                    else:  # typename T; template <typename> class normal_kernel: its last name
                        out.update(_WORD.findall(self.t(p).split("=", 1)[0])[-1:])
            elif n.type == "function_definition" and body is None:
                body = n
            n = n.parent
        if body is not None:
            out.update(_ALIASED.findall(self.t(body)))
        return out

    def _operator(self, n, caller: int) -> None:
        """An operator expression that may call an overload (Note [Operators]); the query captures those with an
        operand that is a name (a binary one twice when both are)."""
        key = (n.start_byte, n.end_byte)
        if key == self._last_operator:
            return
        self._last_operator = key
        ty = n.type
        if ty == "subscript_expression":
            sym, at = "[]", n
            indices = n.child_by_field_name("indices")
            operands = [n.child_by_field_name("argument"),
                        indices.named_child(0) if indices is not None and indices.named_child_count == 1 else None]
        else:
            at = n.child_by_field_name("operator")
            sym = at.type if at is not None else ""
            if ty == "unary_expression":
                operands = [n.child_by_field_name("argument")]
            else:
                operands = [n.child_by_field_name("left"), n.child_by_field_name("right")]
        if not sym or any(o is None for o in operands):
            return
        if not any(o.type == "identifier" and _may_be_class(self.vars.get(self.t(o), n.start_byte) or "")
                   for o in operands):
            return
        types = [self.typer.expr(o, n.start_byte) for o in operands]
        self.calls.append(CallSite(caller, f"operator{sym}", "", self.line(at), CallKind.OPERATOR, "", u(types[0]),
                                   len(types) - 1, u(";".join(types[1:]))))

    def _held_kernels(self, var: str, pos: int, address: bool = False) -> list[tuple[str, str]]:
        """(qualifier, name) of every function a local variable launched with ``<<<>>>`` is given between its
        declaration and the launch: ``auto kernel = &flash_fwd_kernel<...>;``, ``impl_fptr = k<scalar_t, F>;``
        (Note [Kernels held in a variable])."""
        start = self.vars.declared_at(var, pos)
        if start is None:
            return []
        out: list[tuple[str, str]] = []
        for m in _assignments(strip_comments(self.text[start:pos]), var):
            parts, name = split_scope(re.sub(r"\s+", "", m.group(2)))
            if address and not m.group(1):
                continue
            if name not in _NOT_HELD and ("::".join(parts), name) not in out:
                out.append(("::".join(parts), name))
        return out

    def _functor(self, n, f) -> str:
        args = n.child_by_field_name("arguments")
        if args is None:
            return ""
        vals = [c for c in args.named_children if c.type != "comment"]
        for a in vals:
            lam = a if a.type == "lambda_expression" else _lambda_in(a)
            if lam is not None:
                return f"lambda@{self.line(lam)}"
        if f.type == "template_function" and "jit" in self.t(f.child_by_field_name("name") or f):
            targs = f.child_by_field_name("arguments")
            if targs is not None:
                for c in targs.named_children:
                    if c.type != "comment":
                        return collapse(self.t(c))
        if not vals:
            return ""
        for a in vals:  # a functor made at the call site: multi_tensor_apply<4>(lists, AdamFunctor<T>(), ...)
            m = _CONSTRUCTED.match(self.t(a).strip())
            # a type alias made in place is a value: the identity of gpu_reduce_kernel(iter, ops, ops_t::acc_t{})
            if m and a.type in ("call_expression", "compound_literal_expression") and not m.group(1).endswith("_t"):
                return m.group(1).split("::")[-1]
        text = strip_templates(self.t(vals[1] if len(vals) > 1 else vals[0])).lstrip("&* ")
        if text.startswith("func_wrapper("):  # func_wrapper<T>(MaxNanFunctor<T>()): the functor inside
            text = text[len("func_wrapper("):].lstrip("&* ")
        m = _FUNCTOR_NAME.match(text)
        return m.group(0) if m else collapse(text)[:_RECV_MAX]


def _last_scope_args(raw: str) -> str:
    """Template arguments of the last scope component: ``std::numeric_limits<float>::max`` -> ``float``."""
    return split_template_args(raw[: raw.rfind(">::") + 1])[1]


def _constructed_in_place(f) -> bool:
    """``Functor<T>()`` called in place (``Functor<T>()(args)``): a type named with no arguments."""
    fn, args = f.child_by_field_name("function"), f.child_by_field_name("arguments")
    return (fn is not None and args is not None and fn.type in ("identifier", "qualified_identifier",
                                                                 "template_function")
            and not any(c.type != "comment" for c in args.named_children))


def _lambda_in(a):
    """A lambda passed through one wrapper call: func_wrapper<T>([] (...) {...})."""
    if a.type != "call_expression":
        return None
    args = a.child_by_field_name("arguments")
    if args is None:
        return None
    for c in args.named_children:
        if c.type == "lambda_expression":
            return c
    return None


def _assignments(text: str, var: str):
    """The matches of ``_HELD`` right after ``var`` in ``text`` where ``var`` is not the end of a longer name or a
    member (``x.var``, ``p->var``), left to right and not overlapping; one compiled pattern for every variable
    (a pattern per variable name was compiled thousands of times per generated file: ``dispatch_add``)."""
    at = text.find(var)
    while at >= 0:
        before = text[at - 1] if at else " "
        m = None if before.isalnum() or before in "_.>" else _HELD.match(text, at + len(var))
        if m is not None:
            yield m
            at = text.find(var, m.end())
        else:
            at = text.find(var, at + 1)


def _may_be_class(te: str) -> bool:
    """Whether a variable's type may be a class: declared with a type that is not a builtin, a pointer or a standard
    library type (``const Tensor& self``), or ``auto`` from a call or another variable (``auto grad_pos =
    at::where(...)``: typed where calls are resolved). A member's or a chain's (``t.size(0)``), mostly numbers, is
    left out, so as not to store a call site for each ``self.dim() == 0``."""
    if te.startswith(("c:", "v:")):
        return "|" not in te
    if not te.startswith("t:") or "|" in te:
        return False
    name = te[2:]
    return not (name.endswith(("*", "&")) or is_builtin_name(name) or name.startswith(("std::", "char")))
