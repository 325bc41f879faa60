"""Declarations at namespace and class scope in a C++/CUDA buffer: prototypes, classes,
data members, ``using`` declarations and directives, type and namespace aliases.

A mixin of ``cpp_walk.Walker`` (with ``cpp_defs.Definitions``, whose symbol records a
prototype shares): its methods read and fill the walker's state (syms, classes, fields,
usings) and return the scope entry a class (or a definition read as a declaration) opens.
"""

from __future__ import annotations

from ..model import ClassKind, CppClass, CppField, Using, UsingKind
from .cpp_bindings import u
from .cpp_defs import MACRO_NAME
from .cpp_text import norm_params, split_scope, strip_templates
from .cpp_types import type_text


class Declarations:
    """The walker's handlers of declarations, classes, members, usings and aliases."""

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
            if cls is not None and n.type == "field_declaration" or cls is None and n.type == "declaration":
                self._fields(n, cur)  # data members; variables at namespace scope are members of their namespace
            return None
        nt = name_node.type
        if nt not in ("identifier", "field_identifier", "qualified_identifier", "destructor_name",
                      "operator_name", "template_function"):
            return None
        parts, name = split_scope(self.t(name_node))
        if not name or MACRO_NAME.match(name) or name.startswith(("C10_", "TORCH_", "AT_")):
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
        """Data members of the class being walked, or variables of the namespace, with their declared types."""
        tnode = n.child_by_field_name("type")
        if tnode is None:
            return
        written = self.t(tnode)
        if len(written) > 200 or "{" in written or written.endswith("auto"):
            return  # a class or enum defined in place is its own fact; "auto" says nothing before query time
        cls = "::".join(self.scope(cur, n.start_byte))
        line = self.line(n)
        for d in n.children_by_field_name("declarator"):
            ptrs = 0
            for _ in range(6):
                if d is None or d.type in ("field_identifier", "identifier"):
                    break
                if d.type in ("pointer_declarator", "array_declarator"):
                    ptrs += 1
                    d = d.child_by_field_name("declarator")
                elif d.type in ("reference_declarator", "init_declarator", "bitfield_clause"):
                    d = d.named_child(0) if d.type != "init_declarator" else d.child_by_field_name("declarator")
                else:
                    d = None
            if d is not None and d.type in ("field_identifier", "identifier"):
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
        kind = ClassKind.ENUM if n.type == "enum_specifier" else ClassKind.CLASS
        self.classes.append(CppClass(name, "::".join(scope + (name,)), u(";".join(bases)), tparams, u(spec),
                                     self.line(n), n.end_point[0] + 1 + self.line_base, kind))
        return (end, cur[1], cur[2] + tuple(parts) + (name,), cur[3], cur[4], name, spec)

    def _using(self, n, cur) -> None:
        if n.type != "using_declaration":
            self._alias(n, cur)
            return
        target = n.named_child(0)
        if target is None or n.child_count < 3:
            return
        written = strip_templates(self.t(target)).replace(" ", "")
        name = written.lstrip(":")
        scope = "::".join(self.scope(cur, n.start_byte))
        if n.child(1).type == "namespace":  # as written: a relative name is looked up from its scope at query time
            self.usings.append(Using(UsingKind.NAMESPACE, written, "", self.line(n), scope))
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
        if "{" in written:  # a class or enum defined in place: its own fact
            return
        # any length: cutlass's and ska's class-scope ``using Table = sherwood_v3_table<...8 arguments...>;`` (324
        # characters) is what their members (``using Table::emplace;``) are found through
        target = u(type_text(written, ptrs))
        scope = "::".join(self.scope(cur, n.start_byte))
        p = n.parent  # an alias template: template <typename Node> using NodePtr = std::shared_ptr<Node>;
        tparams = (",".join(_template_params(self, p.child_by_field_name("parameters")))
                   if p is not None and p.type == "template_declaration" else "")
        for alias in (nm if isinstance(nm, list) else [self.t(nm)]):
            if alias != target:
                self.usings.append(Using(UsingKind.ALIAS, target, alias, self.line(n), scope, u(tparams)))


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


def _template_params(w: Declarations, params) -> list[str]:
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
