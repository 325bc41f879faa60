"""Function definitions and declarations in a C++/CUDA buffer, as symbols.

A mixin of ``cpp_walk.Walker``: its methods read and fill the walker's state (text, syms,
defs, regs, typer) and return the scope entry a definition opens. Structured kernels
(``TORCH_IMPL_FUNC``), ``TORCH_LIBRARY`` blocks, macro blocks and registration lambdas
become symbols of their own kinds; CUDA ``__global__``/``__device__`` functions are told
apart by the positions the preprocessing step found.
"""

from __future__ import annotations

import re
from bisect import bisect_left

from ..model import CppSymbol, Registration, RegistrationKind, SymbolKind
from .cpp_bindings import u
from .cpp_macros import PASTE, unpaste
from .cpp_regs import Regs
from .cpp_text import collapse, norm_params, split_scope
from .cpp_types import _declarator_name, type_text

_STRUCTURED = {
    "TORCH_IMPL_FUNC": (SymbolKind.IMPL_FUNC, "impl"),
    "TORCH_META_FUNC": (SymbolKind.META_FUNC, "meta"),
    "TORCH_META_FUNC2": (SymbolKind.META_FUNC, "meta"),
    "TORCH_PRECOMPUTE_META_FUNC": (SymbolKind.PRECOMPUTE_META_FUNC, "meta"),
    "TORCH_PRECOMPUTE_META_FUNC2": (SymbolKind.PRECOMPUTE_META_FUNC, "meta"),
}
_LIBRARY = {"TORCH_LIBRARY", "TORCH_LIBRARY_FRAGMENT", "TORCH_LIBRARY_IMPL"}
MACRO_NAME = re.compile(r"^[A-Z][A-Z0-9_]*$")


class Definitions:
    """The walker's handlers of function definitions, and the symbol records declarations share."""

    def _cuda_kind(self, def_start: int, name_start: int) -> SymbolKind | None:
        lo = max(self.text.rfind(";", 0, def_start), self.text.rfind("{", 0, def_start),
                 self.text.rfind("}", 0, def_start)) + self.base
        for positions, kind in ((self.glob_pos, SymbolKind.GLOBAL_KERNEL), (self.dev_pos, SymbolKind.DEVICE_FUNCTION)):
            if positions:
                i = bisect_left(positions, lo + 1)
                if i < len(positions) and positions[i] < name_start + self.base:
                    return kind
        return None

    def _fn_declarator(self, d):
        """(function_declarator or None, name node, params node) below a declarator."""
        for _ in range(8):
            if d is None:
                return None, None, None
            ty = d.type
            if ty == "function_declarator":
                return d, d.child_by_field_name("declarator"), d.child_by_field_name("parameters")
            if ty in ("pointer_declarator", "reference_declarator", "attributed_declarator"):
                d = d.child_by_field_name("declarator") or d.named_child(d.named_child_count - 1)
                continue
            if ty == "operator_cast" or (ty == "qualified_identifier" and "operator" in self.t(d)):
                params = _find_params(d)
                return None, d, params
            return None, None, None
        return None, None, None

    def _def(self, n, cur) -> tuple:
        end = n.end_byte
        fd, name_node, params = self._fn_declarator(n.child_by_field_name("declarator"))
        keep = (end, cur[1], cur[2], cur[3], cur[4], None, "")  # a scope that adds nothing
        if name_node is None or any(ch.type == "delete_method_clause" for ch in n.children):
            return keep  # "f(TensorBase&&) = delete": never the function a call reaches
        lib = cur[4]
        kind: SymbolKind | None = None
        nt = name_node.type
        in_body = cur[3] >= 0 and cur[5] is None  # directly inside a function body
        if fd is None:  # conversion operator: name runs up to the parameter list
            raw = self.text[name_node.start_byte:params.start_byte] if params is not None else self.t(name_node)
            parts, name = split_scope(raw)
        elif nt == "function_declarator":  # MACRO(args)(params) { ... }
            mname = self.t(name_node.child_by_field_name("declarator") or name_node)
            margs = _macro_args(self, name_node.child_by_field_name("parameters"))
            scope = self.scope(cur, n.start_byte)
            ptext = norm_params(self.t(params)) if params is not None else "()"
            if mname in _STRUCTURED and margs:
                kind, suffix = _STRUCTURED[mname]
                name = "_".join(margs[:2]) if mname.endswith("2") else margs[0]
                inner = (f"structured_{name}", suffix)
                idx = self._symbol(name, scope + inner, ptext, kind, n, name_node, True)
                reg_kind = RegistrationKind.IMPL_FUNC if kind is SymbolKind.IMPL_FUNC else RegistrationKind.META_FUNC
                self.regs.append(Registration(reg_kind, name, "::".join(scope + inner), "",
                                              self.line(name_node), mname, idx))
                self.typer.parameters(params, n.start_byte, end)
                return (end, cur[1], cur[2] + inner, idx, lib, None, "")
            name, parts = f"{mname}({', '.join(margs)})", []
            if in_body or _garbled(name):
                return keep
            kind = SymbolKind.MACRO_BLOCK
        elif nt == "parenthesized_declarator":
            return keep
        else:
            scope_node = name_node.child_by_field_name("scope") if nt == "qualified_identifier" else None
            if scope_node is not None and scope_node.type == "decltype":
                # "MACRO inline decltype(auto) apply(...)": with the macro read as the type, tree-sitter reads the
                # return type as a scope behind a missing "::" (no definition's name is scoped by a decltype)
                name_node = name_node.child_by_field_name("name") or name_node
            parts, name = split_scope(self.t(name_node))
            if not name:
                return keep
            tnode = n.child_by_field_name("type")
            if tnode is not None and self.t(tnode).replace(" ", "").endswith("::operator"):
                # "BFloat16::operator float() const {": tree-sitter reads "BFloat16::operator" as the type
                name = f"operator {self.t(name_node).strip()}"
                parts = split_scope(self.t(tnode).replace(" ", "") + "()")[0]
            if (nt == "identifier" and not cur[5] and n.child_by_field_name("type") is None
                    and MACRO_NAME.match(name)):
                if in_body and name not in _LIBRARY:  # CUDA_KERNEL_LOOP(i, n) { ... }: a statement
                    return keep
                margs = _macro_args(self, params)
                label = f"{name}({', '.join(margs)})"
                if name in _LIBRARY:
                    margs = margs + ["", "", ""]
                    ns = margs[0]
                    key = margs[1] if name == "TORCH_LIBRARY_IMPL" else ""
                    label = f"{name}({ns}, {key})" if key else f"{name}({ns})"
                    lib = (ns, key)
                    kind = SymbolKind.LIBRARY_BLOCK
                elif _garbled(label):  # "FOO(int, x); } void g()": error recovery, not a block
                    return keep
                else:
                    kind = SymbolKind.MACRO_BLOCK
                idx = self._symbol(label, self.scope(cur, n.start_byte) + (label,), "", kind, n, name_node, True)
                return (end, cur[1], cur[2] + (label,), idx, lib, None, "")
        inner = tuple(parts) + (name,)
        if kind is None:
            kind = self._kind(n, name_node, name, parts, cur[5])
        ptext = norm_params(self.t(params)) if params is not None else "()"
        idx = self._symbol(name, self.scope(cur, n.start_byte) + inner, ptext, kind, n, name_node,
                           n.child_by_field_name("body") is not None, self._traits(n, fd, cur, parts, kind))
        self.typer.parameters(params, n.start_byte, end)
        return (end, cur[1], cur[2] + inner, idx, lib, None, "")

    def _kind(self, n, name_node, name: str, parts, cls) -> SymbolKind:
        if self.glob_pos or self.dev_pos:
            p = n.parent
            start = p.start_byte if p is not None and p.type == "template_declaration" else n.start_byte
            ck = self._cuda_kind(start, name_node.start_byte)
            if ck is SymbolKind.GLOBAL_KERNEL or (ck is not None and not cls and not parts):
                return ck
        if parts:
            owner = parts[-1]
            if owner == name:
                return SymbolKind.CONSTRUCTOR
            return SymbolKind.FUNCTION if owner in self.namespaces else SymbolKind.METHOD
        if cls:
            return SymbolKind.CONSTRUCTOR if name == cls else SymbolKind.METHOD
        return SymbolKind.FUNCTION

    def _symbol(self, name, qual, params, kind, n, name_node, is_def,
                traits: tuple = ("", False, False, "", "", False)) -> int:
        line = name_node.start_point[0] + 1 + self.line_base
        end_line = n.end_point[0] + 1 + self.line_base
        span = self.span_at(name_node.start_byte) if self.spans else None
        if span is not None and n.end_byte + self.base <= span.end:  # wholly inside: end at the invocation's ")"
            end_line = line + span.lines
        if PASTE in name:  # a name a same-file macro pastes from its parameters (cpp_macros): "_cast_##n"
            name = unpaste(name)
            qual = tuple(unpaste(q) for q in qual)
        idx = len(self.syms)
        self.syms.append(CppSymbol(name, "::".join(qual), u(params), kind, line, end_line, is_def,
                                   span.macro if span is not None else "", *traits))
        if is_def:
            self.defs.append((n.start_byte, n.end_byte, idx))
        return idx

    def _traits(self, n, fd, cur, parts, kind: SymbolKind) -> tuple[str, bool, bool, str, str, bool]:
        """(return type, internal linkage, function template, class specialization arguments, template parameters
        that are functions, virtual) of a definition or declaration ``n`` whose function declarator is ``fd``."""
        ret = ""
        tnode = n.child_by_field_name("type")
        if tnode is not None and self.t(tnode).replace(" ", "").endswith("::operator"):
            tnode = fd.child_by_field_name("declarator") if fd is not None else None  # operator float(): float
        if tnode is not None and kind is not SymbolKind.CONSTRUCTOR:
            ret = self.t(tnode)
            if ret == "auto" and fd is not None:
                trail = next((c for c in fd.children if c.type == "trailing_return_type"), None)
                if trail is not None and trail.named_child_count:
                    ret = self.t(trail.named_child(0))
            ptrs = 0
            d = n.child_by_field_name("declarator")
            while d is not None and d is not fd and d.type in ("pointer_declarator", "reference_declarator"):
                ptrs += d.type == "pointer_declarator"
                d = d.child_by_field_name("declarator") or d.named_child(d.named_child_count - 1)
            ret = type_text(ret, ptrs) if len(ret) < 200 else ""
        internal = False
        if cur[5] is None and not parts:
            for c in n.children:
                if c.type == "storage_class_specifier" and self.t(c) == "static":
                    internal = True
                    break
                if c.type in ("function_declarator", "compound_statement"):
                    break
        p = n.parent
        is_template = p is not None and p.type == "template_declaration"
        # Written in its class: ``virtual``, ``override`` or ``final`` (Note [Virtual calls] in graph/overrides.py)
        virtual = kind is SymbolKind.METHOD and not parts and (
            any(c.type == "virtual" for c in n.children)
            or fd is not None and any(c.type == "virtual_specifier" for c in fd.children))
        return ret, internal, is_template, cur[6], _function_params(self, p) if is_template else "", virtual

    def _registration_lambda(self, n, cur) -> tuple | None:
        """``REGISTER_X(name, id, [](...) {...})`` at namespace scope: the lambda becomes a symbol of its own
        (REGISTRATION_LAMBDA), so the calls inside it have a caller."""
        f = n.child_by_field_name("function")
        args = n.child_by_field_name("arguments")
        if f is None or args is None or f.type != "identifier":
            return None
        macro = self.t(f)
        if not MACRO_NAME.match(macro) or macro in Regs.MACROS:
            return None
        vals = [c for c in args.named_children if c.type != "comment"]
        lam = next((c for c in vals if c.type == "lambda_expression"), None)
        if lam is None:
            return None
        label = f"{macro}({', '.join(collapse(self.t(c))[:60] for c in vals if c is not lam)})"
        if _garbled(label):
            return None
        idx = self._symbol(label, self.scope(cur, n.start_byte) + (label,), "", SymbolKind.REGISTRATION_LAMBDA,
                           n, f, True)
        self.vars.clear()
        self.typer.memo.clear()
        return (n.end_byte, cur[1], cur[2] + (label,), idx, cur[4], None, "")


def _garbled(label: str) -> bool:
    return len(label) > 200 or ";" in label or "{" in label or "}" in label


def _find_params(d):
    """The parameter_list under a conversion-operator declarator."""
    stack = [d]
    for _ in range(64):
        if not stack:
            return None
        x = stack.pop()
        if x.type == "parameter_list":
            return x
        stack.extend(reversed(x.named_children))
    return None


def _macro_args(w: Definitions, params) -> list[str]:
    if params is None:
        return []
    return [collapse(w.t(c)) for c in params.named_children if c.type != "comment"]


def _function_params(w, template) -> str:
    """``position:name`` of each parameter of a ``template <...>`` head that is a function or a function pointer
    (``void compute(const index_t*)``, ``cudnnStatus_t (*dtor)(T*)``), ","-separated; "" when none."""
    plist = template.child_by_field_name("parameters")
    if plist is None:
        return ""
    out = []
    for i, c in enumerate(x for x in plist.named_children if x.type != "comment"):
        d = c.child_by_field_name("declarator")
        if c.type in ("parameter_declaration", "optional_parameter_declaration") and _declares_function(d):
            names, _ptrs = _declarator_name(d, w.t)
            if names:
                out.append(f"{i}:{names[0]}")
    return ",".join(out)


def _declares_function(d) -> bool:
    """Whether a declarator declares a function or a pointer or reference to one: ``f(int)``, ``(*f)(int)``."""
    while d is not None and d.type in ("pointer_declarator", "reference_declarator", "parenthesized_declarator"):
        d = d.child_by_field_name("declarator") or (d.named_child(0) if d.named_child_count else None)
    return d is not None and d.type == "function_declarator"
