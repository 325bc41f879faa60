"""Tree -> facts for one parsed C++/CUDA buffer.

One query collects the nodes that matter (definitions, declarations, calls, scopes);
they are visited in source order with a stack of open scopes, so each node costs a few
C calls and nothing walks the whole tree in Python. Node text is sliced from a latin-1
decoding of the buffer (offsets = byte offsets); ``u()`` repairs the rare non-ASCII
string afterwards.
"""

from __future__ import annotations

import re
from bisect import bisect_left, bisect_right

from ..model import (
    CallKind,
    CallSite,
    CppClass,
    CppField,
    CppSymbol,
    Registration,
    RegistrationKind,
    SymbolKind,
    Using,
    UsingKind,
)
from .cpp_bindings import BINDING_METHODS, record_binding, u
from .cpp_macros import PASTE, unpaste
from .cpp_regs import Regs
from .cpp_text import Scopes, collapse, norm_params, split_scope, strip_templates
from .cpp_types import Typer, Vars, type_text

QUERY = """
(namespace_definition) @ns
(class_specifier body: (_)) @cls
(struct_specifier body: (_)) @cls
(union_specifier body: (_)) @cls
(function_definition) @def
(declaration) @decl
(field_declaration) @decl
(call_expression) @call
(new_expression) @new
(using_declaration) @using
(alias_declaration) @using
(type_definition) @using
(namespace_alias_definition) @using
(lambda_expression) @lam
(for_range_loop) @for
(ERROR) @e
(MISSING) @m
"""
_ORDER = {"ns": 0, "cls": 1, "def": 2, "decl": 3, "using": 4, "call": 5, "new": 6, "lam": 7, "for": 8}

_STRUCTURED = {
    "TORCH_IMPL_FUNC": (SymbolKind.IMPL_FUNC, "impl"),
    "TORCH_META_FUNC": (SymbolKind.META_FUNC, "meta"),
    "TORCH_META_FUNC2": (SymbolKind.META_FUNC, "meta"),
    "TORCH_PRECOMPUTE_META_FUNC": (SymbolKind.PRECOMPUTE_META_FUNC, "meta"),
    "TORCH_PRECOMPUTE_META_FUNC2": (SymbolKind.PRECOMPUTE_META_FUNC, "meta"),
}
_LIBRARY = {"TORCH_LIBRARY", "TORCH_LIBRARY_FRAGMENT", "TORCH_LIBRARY_IMPL"}
GPU_HELPERS = frozenset({
    "gpu_kernel", "gpu_kernel_with_scalars", "gpu_kernel_nocast", "gpu_kernel_multiple_outputs",
    "gpu_kernel_with_index", "opmath_gpu_kernel_with_scalars",
    "opmath_symmetric_gpu_kernel_with_scalars", "jitted_gpu_kernel",
    "opmath_jitted_gpu_kernel_with_scalars", "jitted_gpu_reduce_kernel", "gpu_reduce_kernel",
    "gpu_index_kernel", "launch_kernel", "launch_vectorized_kernel", "launch_legacy_kernel",
    "launch_unrolled_kernel", "launch_jitted_unrolled_kernel", "launch_jitted_vectorized_kernel",
})
_MACRO_NAME = re.compile(r"^[A-Z][A-Z0-9_]*$")
_COMMON_NS = frozenset({
    "at", "c10", "torch", "native", "std", "detail", "impl", "jit", "autograd", "cuda", "meta",
    "mps", "cpu", "internal", "utils", "functorch", "dynamo", "inductor", "profiler", "api",
    "distributed", "c10d", "nn", "python", "ops", "_ops", "vec", "CPU_CAPABILITY", "sparse",
    "quantized", "xpu", "hip", "lazy", "tensorexpr", "fuser", "mobile", "aoti", "functional",
})
_CASTS = frozenset({"static_cast", "reinterpret_cast", "const_cast", "dynamic_cast", "bit_cast"})
_RECV_MAX = 80
_FUNCTOR_NAME = re.compile(r"[\w:]+")


class Walker:
    """Extracts facts from one parsed buffer into syms/calls/regs/usings."""

    def __init__(self, text: str, root, caps: dict, *, relpath: str, is_cuda: bool,
                 glob_pos: list[int], dev_pos: list[int], macro_spans: list = (),
                 scopes: Scopes | None = None, byte_base: int = 0, line_base: int = 0) -> None:
        # text/root/caps may cover one chunk of the file, starting at byte_base on line
        # line_base + 1; glob_pos, dev_pos, macro_spans and scopes use whole-file offsets.
        self.text = text
        self.root = root
        self.caps = caps  # QUERY captures of root
        self.relpath = relpath
        self.is_cuda = is_cuda
        self.glob_pos = glob_pos
        self.dev_pos = dev_pos
        self.spans = macro_spans  # Span(start, end, macro) of same-file macro expansions
        self.span_starts = [sp.start for sp in macro_spans]
        self.scopes = scopes  # namespaces by brace matching, used when the tree is damaged
        self.base = byte_base
        self.line_base = line_base
        self.syms: list[CppSymbol] = []
        self.calls: list[CallSite] = []
        self.regs: list[Registration] = []
        self.usings: list[Using] = []
        self.classes: list[CppClass] = []
        self.fields: list[CppField] = []
        self.vars = Vars()
        self.typer = Typer(text, self.vars)
        self.defs: list[tuple[int, int, int]] = []  # (start, end, symbol index) of definitions
        self.namespaces: set[str] = set(_COMMON_NS)
        if scopes is not None:
            self.namespaces.update(p for chain in scopes.chains for p in chain)
        self.pybind_roots: dict[int, tuple[str, str]] = {}  # .def chain call id -> (key, class)
        self.class_vars: list[tuple[int, str, str]] | None = None  # (pos, variable, python class)

    # ------------------------------------------------------------------ driver

    def run(self) -> None:
        items = []
        for tag, nodes in self.caps.items():
            o = _ORDER.get(tag)
            if o is None:
                continue
            for n in nodes:
                items.append((n.start_byte, -n.end_byte, o, n))
        items.sort(key=lambda it: it[:3])
        for n in self.caps.get("ns", ()):  # to tell "ns::f" (function) from "Class::f" (method)
            nm = n.child_by_field_name("name")
            if nm is not None:
                self.namespaces.update(self.text[nm.start_byte:nm.end_byte].replace(" ", "").split("::"))
        # Stack entries: (end byte, namespaces, inner scope (classes, functions), function
        # symbol index, TORCH_LIBRARY context, class name if the innermost scope is a class,
        # template arguments of the innermost class if it is a specialization).
        stack: list[tuple] = []
        top = (1 << 62, (), (), -1, None, None, "")
        text = self.text
        for start, negend, o, n in items:
            while stack and stack[-1][0] <= start:
                stack.pop()
            cur = stack[-1] if stack else top
            if o == 5:
                if cur[3] < 0:
                    entry = self._registration_lambda(n, cur)
                    if entry is not None:
                        stack.append(entry)
                        continue
                self._call(n, cur[3], cur[4])
            elif o == 3:
                if cur[5] is not None or cur[3] < 0:
                    entry = self._decl(n, cur)
                    if entry is not None:
                        stack.append(entry)
                else:
                    p = n.parent
                    self.typer.declaration(n, p.end_byte if p is not None else n.end_byte)
            elif o == 2:
                if cur[3] < 0:  # a new top-level function: forget the last one's variables
                    self.vars.clear()
                    self.typer.memo.clear()
                entry = self._def(n, cur)
                stack.append(entry)
            elif o == 0:
                nm = n.child_by_field_name("name")
                parts = (text[nm.start_byte:nm.end_byte].replace(" ", "").split("::")
                         if nm is not None else ["(anonymous)"])
                if nm is not None and n.child(0) is not None and n.child(0).type == "inline":
                    # inline namespace X { ... }: its names are members of the enclosing namespace too
                    outer = "::".join(self.scope(cur, n.start_byte))
                    inner = "::".join((outer, *parts)) if outer else "::".join(parts)
                    self.usings.append(Using(UsingKind.NAMESPACE, inner, "", self.line(n), outer))
                stack.append((-negend, cur[1] + tuple(parts), cur[2], cur[3], cur[4], None, ""))
            elif o == 1:
                stack.append(self._class(n, cur, -negend))
            elif o == 6:
                self._new(n, cur[3])
            elif o == 4:
                self._using(n, cur)
            elif o == 7:
                d = n.child_by_field_name("declarator")
                if d is not None:
                    self.typer.parameters(d.child_by_field_name("parameters"), n.start_byte, n.end_byte)
            elif o == 8:
                self.typer.range_for(n)
        Regs(self).run()

    # ------------------------------------------------------------------ helpers

    def t(self, n) -> str:
        return self.text[n.start_byte:n.end_byte]

    def line(self, n) -> int:
        return n.start_point[0] + 1 + self.line_base

    def scope(self, cur, pos: int) -> tuple[str, ...]:
        """Qualified scope at ``pos``: namespaces from the text when the tree is damaged."""
        if self.scopes is None:
            return cur[1] + cur[2]
        i = bisect_right(self.scopes.starts, pos + self.base) - 1
        return (self.scopes.chains[i] if i >= 0 else ()) + cur[2]

    def span_at(self, pos: int):
        """The same-file macro expansion (Span) that holds ``pos``, or None."""
        pos += self.base
        i = bisect_right(self.span_starts, pos) - 1
        if i >= 0 and pos < self.spans[i].end:
            return self.spans[i]
        return None

    def enclosing_def(self, pos: int) -> int:
        best = -1
        for s, e, i in self.defs:
            if s <= pos < e:
                best = i
        return best

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

    # ------------------------------------------------------------------ definitions

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
            parts, name = split_scope(self.t(name_node))
            if not name:
                return keep
            tnode = n.child_by_field_name("type")
            if tnode is not None and self.t(tnode).replace(" ", "").endswith("::operator"):
                # "BFloat16::operator float() const {": tree-sitter reads "BFloat16::operator" as the type
                name = f"operator {self.t(name_node).strip()}"
                parts = split_scope(self.t(tnode).replace(" ", "") + "()")[0]
            if (nt == "identifier" and not cur[5] and n.child_by_field_name("type") is None
                    and _MACRO_NAME.match(name)):
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

    def _symbol(self, name, qual, params, kind, n, name_node, is_def, traits: tuple = ("", False, False, "")) -> int:
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

    def _traits(self, n, fd, cur, parts, kind: SymbolKind) -> tuple[str, bool, bool, str]:
        """(return type, internal linkage, function template, class specialization arguments) of a definition
        or declaration ``n`` whose function declarator is ``fd``."""
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
        return ret, internal, p is not None and p.type == "template_declaration", cur[6]

    def _decl(self, n, cur) -> tuple | None:
        """A declaration at namespace or class scope: a prototype, a data member, or (tree-sitter's reading of
        ``void f() { MACRO(x) }``, a body whose last statement lacks its ';') a definition, whose scope entry
        is returned."""
        d = n.child_by_field_name("declarator")
        body = None
        if d is not None and d.type == "init_declarator":
            value = d.child_by_field_name("value")
            if value is not None and value.type == "initializer_list" and n.child_count and n.child(
                    n.child_count - 1).is_missing:
                body = value
                d = d.child_by_field_name("declarator")
        fd, name_node, params = self._fn_declarator(d)
        cls = cur[5]
        if fd is None or name_node is None:
            if cls is not None and n.type == "field_declaration":
                self._fields(n, cur)
            return None
        nt = name_node.type
        if nt not in ("identifier", "field_identifier", "qualified_identifier", "destructor_name",
                      "operator_name", "template_function"):
            return None
        parts, name = split_scope(self.t(name_node))
        if not name or _MACRO_NAME.match(name) or name.startswith(("C10_", "TORCH_", "AT_")):
            return None
        if n.child_by_field_name("type") is None and not cls and not parts:
            return None  # "FOO(x);" at namespace scope: a macro invocation
        if "constexpr" in self.text[n.start_byte:fd.start_byte]:
            return None  # "constexpr Symbol x(static_cast<T>(k));": a variable, not a prototype
        qual = self.scope(cur, n.start_byte) + tuple(parts) + (name,)
        kind = self._kind(n, name_node, name, parts, cls)
        ptext = norm_params(self.t(params)) if params is not None else "()"
        idx = self._symbol(name, qual, ptext, kind, n, name_node, body is not None,
                           self._traits(n, fd, cur, parts, kind))
        if body is None:
            return None
        self.vars.clear()
        self.typer.memo.clear()
        self.typer.parameters(params, n.start_byte, n.end_byte)
        return (n.end_byte, cur[1], cur[2] + tuple(parts) + (name,), idx, cur[4], None, "")

    def _fields(self, n, cur) -> None:
        """Data members of the class being walked, with their declared types."""
        tnode = n.child_by_field_name("type")
        if tnode is None:
            return
        written = self.t(tnode)
        if len(written) > 200 or "{" in written:
            return
        cls = "::".join(self.scope(cur, n.start_byte))
        line = self.line(n)
        for d in n.children_by_field_name("declarator"):
            ptrs = 0
            for _ in range(6):
                if d is None or d.type == "field_identifier":
                    break
                if d.type in ("pointer_declarator", "array_declarator"):
                    ptrs += 1
                    d = d.child_by_field_name("declarator")
                elif d.type in ("reference_declarator", "init_declarator", "bitfield_clause"):
                    d = d.named_child(0) if d.type != "init_declarator" else d.child_by_field_name("declarator")
                else:
                    d = None
            if d is not None and d.type == "field_identifier":
                self.fields.append(CppField(cls, self.t(d), u(type_text(written, ptrs)), line))

    def _class(self, n, cur, end: int) -> tuple:
        """A class with a body: its fact (bases, template parameters) and the scope entry for its members."""
        nm = n.child_by_field_name("name")
        spec = ""
        if nm is None:
            return (end, cur[1], cur[2] + ("(anonymous)",), cur[3], cur[4], "(anonymous)", "")
        raw = self.t(nm)
        if nm.type == "template_type":
            args = nm.child_by_field_name("arguments")
            if args is not None:
                spec = type_text(self.t(args)[1:-1])
        parts, name = split_scope(strip_templates(raw).replace(" ", ""))
        if not name:
            return (end, cur[1], cur[2] + ("(anonymous)",), cur[3], cur[4], "(anonymous)", "")
        scope = self.scope(cur, n.start_byte) + tuple(parts)
        bases = []
        for c in n.children:
            if c.type == "base_class_clause":
                bases = [type_text(self.t(b)) for b in c.named_children
                         if b.type not in ("access_specifier", "comment", "virtual")]
                break
        tparams = ""
        p = n.parent
        if p is not None and p.type == "template_declaration":
            tparams = ",".join(_template_params(self, p.child_by_field_name("parameters")))
        self.classes.append(CppClass(name, "::".join(scope + (name,)), u(";".join(bases)), tparams, u(spec),
                                     self.line(n), n.end_point[0] + 1 + self.line_base))
        return (end, cur[1], cur[2] + tuple(parts) + (name,), cur[3], cur[4], name, spec)

    def _registration_lambda(self, n, cur) -> tuple | None:
        """``REGISTER_X(name, id, [](...) {...})`` at namespace scope: the lambda becomes a symbol of its own
        (REGISTRATION_LAMBDA), so the calls inside it have a caller."""
        f = n.child_by_field_name("function")
        args = n.child_by_field_name("arguments")
        if f is None or args is None or f.type != "identifier":
            return None
        macro = self.t(f)
        if not _MACRO_NAME.match(macro) or macro in Regs.MACROS:
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

    # ------------------------------------------------------------------ calls

    def _call(self, n, caller: int, lib) -> None:
        f = n.child_by_field_name("function")
        if f is None:
            return
        ty = f.type
        qual = ""
        kind = CallKind.CALL
        detail = ""
        recv = targs = ""
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
        elif ty == "template_function":
            nm = f.child_by_field_name("name")
            callee = self.t(nm) if nm is not None else ""
        elif ty == "field_expression":
            fld = f.child_by_field_name("field")
            if fld is None:
                return
            callee = self.t(fld)
            if fld.type != "field_identifier":
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
        else:
            return
        if not callee or callee in _CASTS:
            return
        if self.is_cuda and n.child_count > 2 and n.child(1).type == "kernel_call_syntax":
            kind = CallKind.LAUNCH
            detail = collapse(self.t(n.child(1)).strip("<> \n"))
        elif callee in GPU_HELPERS:
            kind = CallKind.GPU_LAUNCH
            detail = self._functor(n, f)
        elif callee in Regs.MACROS:
            return  # handled as a registration
        nargs, args = self.typer.args(n, n.start_byte) if caller >= 0 and not kind.is_launch else (-1, "")
        self.calls.append(CallSite(caller, callee, u(qual), self.line(name_at), kind, u(detail), u(recv), nargs,
                                   u(args), u(targs)))

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
        text = strip_templates(self.t(vals[1] if len(vals) > 1 else vals[0])).lstrip("&* ")
        if text.startswith("func_wrapper("):  # func_wrapper<T>(MaxNanFunctor<T>()): the functor inside
            text = text[len("func_wrapper("):].lstrip("&* ")
        m = _FUNCTOR_NAME.match(text)
        return m.group(0) if m else collapse(text)[:_RECV_MAX]

    def _new(self, n, caller: int) -> None:
        ty = n.child_by_field_name("type")
        if ty is None:
            return
        parts, callee = split_scope(strip_templates(self.t(ty)))
        if callee and ty.type != "primitive_type":
            self.calls.append(CallSite(caller, callee, "::".join(parts), self.line(n), CallKind.CONSTRUCT, ""))

    def _using(self, n, cur) -> None:
        if n.type != "using_declaration":
            self._alias(n, cur)
            return
        target = n.named_child(0)
        if target is None or n.child_count < 3:
            return
        name = strip_templates(self.t(target)).replace(" ", "").lstrip(":")
        scope = "::".join(self.scope(cur, n.start_byte))
        if n.child(1).type == "namespace":
            self.usings.append(Using(UsingKind.NAMESPACE, name, "", self.line(n), scope))
        elif "::" in name:  # using c10::maybe_wrap_dim; brings one name into this scope
            self.usings.append(Using(UsingKind.DECLARATION, name, name.rsplit("::", 1)[1], self.line(n), scope))


    def _alias(self, n, cur) -> None:
        """``using T = X;``, ``typedef X T;``, ``namespace a = b;``: T stands for X in its scope."""
        if n.type == "namespace_alias_definition":
            nm = n.child_by_field_name("name")
            target = n.named_child(n.named_child_count - 1)
            if nm is None or target is None or target is nm:
                return
            self.usings.append(Using(UsingKind.NAMESPACE_ALIAS, self.t(target).replace(" ", "").lstrip(":"),
                                     self.t(nm), self.line(n), "::".join(self.scope(cur, n.start_byte))))
            return
        if n.type == "alias_declaration":
            nm = n.child_by_field_name("name")
            tn = n.child_by_field_name("type")
            if nm is None or tn is None:
                return
            ptrs = 0
            written = self.t(tn)
        else:  # typedef
            tn = n.child_by_field_name("type")
            d = n.child_by_field_name("declarator")
            if tn is None or d is None:
                return
            names, ptrs = _type_declarator(d, self.t)
            if not names:
                return
            nm = names
            written = self.t(tn)
        if len(written) > 200 or "{" in written:
            return
        target = u(type_text(written, ptrs))
        scope = "::".join(self.scope(cur, n.start_byte))
        for alias in (nm if isinstance(nm, list) else [self.t(nm)]):
            if alias != target:
                self.usings.append(Using(UsingKind.ALIAS, target, alias, self.line(n), scope))


def _type_declarator(d, t) -> tuple[list[str], int]:
    """Names a typedef declares, with its pointer depth (function-pointer typedefs name nothing useful)."""
    ptrs = 0
    for _ in range(6):
        if d is None:
            return [], 0
        if d.type == "type_identifier":
            return [t(d)], ptrs
        if d.type == "pointer_declarator":
            ptrs += 1
            d = d.child_by_field_name("declarator")
        elif d.type in ("reference_declarator", "array_declarator"):
            d = d.child_by_field_name("declarator") or d.named_child(0)
        else:
            return [], 0
    return [], 0


def _template_params(w: Walker, params) -> list[str]:
    """Names of a template parameter list: ``<typename T, int N, typename... Ts>`` -> [T, N, Ts]."""
    if params is None:
        return []
    out = []
    for c in params.named_children:
        nm = c.child_by_field_name("name") or c.child_by_field_name("declarator")
        if nm is None:
            ids = [x for x in c.named_children if x.type in ("type_identifier", "identifier")]
            nm = ids[-1] if ids else None
        if nm is not None:
            out.append(w.t(nm).lstrip(".").strip())
    return out


def _last_scope_args(raw: str) -> str:
    """Template arguments of the last scope component: ``std::numeric_limits<float>::max`` -> ``float``."""
    head = raw[: raw.rfind(">::") + 1]
    depth = 0
    for i in range(len(head) - 1, -1, -1):
        ch = head[i]
        if ch == ">":
            depth += 1
        elif ch == "<":
            depth -= 1
            if depth == 0:
                return head[i + 1:-1]
    return ""


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


def _macro_args(w: Walker, params) -> list[str]:
    if params is None:
        return []
    return [collapse(w.t(c)) for c in params.named_children if c.type != "comment"]


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
