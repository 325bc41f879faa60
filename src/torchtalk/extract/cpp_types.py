"""What one C++ file shows of types: declared types of variables, and type expressions of
receivers and arguments (Note [Type expressions] in model/cpp.py).

The walker feeds ``Vars`` with every parameter, local, range-for variable and lambda
parameter it passes, with where each is visible; ``Typer.expr`` turns an expression
node into a type expression from those declarations and the expression's shape. Nothing
here looks outside the file: a call's return type, a member's type, an alias, are left
as steps for graph/cpp_lookup.py and graph/resolve.py to evaluate at query time.
"""

from __future__ import annotations

import functools
import re

_CV = re.compile(r"\b(?:const|volatile|typename|struct|class|enum|constexpr|mutable|static|inline|"
                 r"thread_local|register|extern|__restrict__|__restrict|C10_UNUSED|\[\[\w+\]\])\b|[&|]")
_SPACES = re.compile(r"\s+")
_SPACE_PUNCT = re.compile(r"\s*([<>,*:()\[\]])\s*")
_MAX_TE = 240  # longer type expressions are dropped (unknown): they are rare and never decide anything
_CASTS = frozenset({"static_cast", "reinterpret_cast", "const_cast", "dynamic_cast", "bit_cast", "c10::bit_cast",
                    "std::bit_cast"})
# std::numeric_limits<T>::quiet_NaN() and kin are T (TensorCompare.cpp's at::fill_(result, ...quiet_NaN()): a
# Scalar, so fill_.Scalar, not fill_.Tensor)
_LIMITS = re.compile(r"(?:std::)?numeric_limits<(.+)>::(?:max|min|lowest|quiet_NaN|signaling_NaN|infinity|epsilon|"
                     r"denorm_min|round_error)$")
_PASS_THROUGH = frozenset({"std::move", "move", "std::forward", "forward", "std::as_const", "c10::guts::as_const"})
_COMPARE = frozenset({"==", "!=", "<", ">", "<=", ">=", "&&", "||", "<=>"})
_PLACEHOLDERS = frozenset({"auto", "decltype(auto)"})
_MAX_DEPTH = 12
_PLAIN = re.compile(r"[\w:]+")


@functools.lru_cache(maxsize=1 << 16)
def type_text(text: str, ptrs: int = 0) -> str:
    """A type as written, normalised: cv-qualifiers, ``&``, ``typename`` dropped; pointers kept.
    ``const at::Tensor &`` -> ``at::Tensor``; ``std::vector< Tensor >`` -> ``std::vector<Tensor>``.
    Memoised: a file writes the same few types thousands of times (a pure function of its arguments)."""
    if _PLAIN.fullmatch(text) and text not in ("const", "volatile", "typename"):
        return text + "*" * ptrs
    t = _CV.sub(" ", text)
    if "/" in t:
        t = re.sub(r"/\*.*?\*/|//[^\n]*", " ", t, flags=re.S)
    t = _SPACE_PUNCT.sub(r"\1", _SPACES.sub(" ", t).strip())
    return t + "*" * ptrs


def _number(te: str) -> bool:
    return te in ("t:int", "t:double", "t:bool", "t:char")


class Vars:
    """Variables visible in the function being walked: name -> [(start, end, type expression)]."""

    __slots__ = ("by_name",)

    def __init__(self) -> None:
        self.by_name: dict[str, list[tuple[int, int, str]]] = {}

    def clear(self) -> None:
        self.by_name.clear()

    def add(self, name: str, start: int, end: int, te: str) -> None:
        self.by_name.setdefault(name, []).append((start, end, te))

    def get(self, name: str, pos: int) -> str | None:
        """The innermost declaration of ``name`` visible at ``pos`` (its type expression, maybe ""), or None."""
        entries = self.by_name.get(name)
        if not entries:
            return None
        for start, end, te in reversed(entries):
            if start <= pos < end:
                return te
        return None

    def declared_at(self, name: str, pos: int) -> int | None:
        """Where the innermost declaration of ``name`` visible at ``pos`` starts, or None."""
        for start, end, _te in reversed(self.by_name.get(name) or ()):
            if start <= pos < end:
                return start
        return None


def _declarator_name(d, t) -> tuple[list[str], int]:
    """(names, pointer depth) below a declarator: ``*&x`` -> (["x"], 1); ``[a, b]`` -> (["a", "b"], 0)."""
    ptrs = 0
    for _ in range(8):
        if d is None:
            return [], 0
        ty = d.type
        if ty in ("identifier", "field_identifier"):
            return [t(d)], ptrs
        if ty == "pointer_declarator":
            ptrs += 1
            d = d.child_by_field_name("declarator")
        elif ty == "array_declarator":
            ptrs += 1
            d = d.child_by_field_name("declarator")
        elif ty in ("reference_declarator", "attributed_declarator", "parenthesized_declarator"):
            d = d.named_child(d.named_child_count - 1) if ty != "attributed_declarator" else d.named_child(0)
        elif ty == "function_declarator":  # "Tensor t(x);" inside a body: a variable (the vexing parse)
            d = d.child_by_field_name("declarator")
        elif ty == "structured_binding_declarator":
            return [t(c) for c in d.named_children if c.type == "identifier"], -1
        elif ty == "init_declarator":
            d = d.child_by_field_name("declarator")
        else:
            return [], 0
    return [], 0


class Typer:
    """Type expressions of expressions in one buffer, given the variables in scope."""

    def __init__(self, text: str, variables: Vars) -> None:
        self.text = text
        self.vars = variables
        self.memo: dict[tuple[int, int], str] = {}

    def t(self, n) -> str:
        return self.text[n.start_byte:n.end_byte]

    # ------------------------------------------------------------ declarations

    def declare(self, type_node, declarator, start: int, end: int, value=None) -> None:
        """Record the variables one declarator declares, visible from ``start`` to ``end``."""
        if declarator is not None and declarator.type == "init_declarator":
            value = declarator.child_by_field_name("value")
        names, ptrs = _declarator_name(declarator, self.t)
        if not names:
            return
        written = type_text(self.t(type_node)) if type_node is not None else ""
        if ptrs < 0:  # auto [a, b] = e;
            base = self.expr(value, start) if value is not None else ""
            for i, name in enumerate(names):
                self.vars.add(name, start, end, f"{base}|#{i}" if base else "")
            return
        if not written or written in _PLACEHOLDERS or written.startswith("decltype"):
            # auto x = e; (auto* p = e: e's type already is the pointer)
            te = self.expr(value, start) if value is not None and value.type != "initializer_list" else ""
        else:
            te = "t:" + written + "*" * ptrs
        if len(te) > _MAX_TE:
            te = ""
        for name in names:
            self.vars.add(name, start, end, te)

    def declaration(self, n, scope_end: int) -> None:
        """A declaration statement inside a body: its variables are visible to the end of the block."""
        ty = n.child_by_field_name("type")
        for d in n.children_by_field_name("declarator"):
            self.declare(ty, d, n.end_byte if d.type != "init_declarator" else d.start_byte, scope_end)

    def parameters(self, params, start: int, end: int) -> None:
        """Parameters of a function or lambda, visible in its body."""
        if params is None:
            return
        for p in params.named_children:
            if p.type in ("parameter_declaration", "optional_parameter_declaration"):
                d = p.child_by_field_name("declarator")
                if d is not None:
                    self.declare(p.child_by_field_name("type"), d, start, end)

    def range_for(self, n) -> None:
        """``for (T x : e)`` / ``for (auto& x : e)``: x is an element of e."""
        d = n.child_by_field_name("declarator")
        ty = n.child_by_field_name("type")
        right = n.child_by_field_name("right")
        names, ptrs = _declarator_name(d, self.t)
        if not names or ty is None:
            return
        written = type_text(self.t(ty))
        if written in _PLACEHOLDERS:
            base = self.expr(right, n.start_byte) if right is not None else ""
            te = f"{base}|[]" if base else ""
            if ptrs < 0:
                for i, name in enumerate(names):
                    self.vars.add(name, n.start_byte, n.end_byte, f"{te}|#{i}" if te else "")
                return
        else:
            te = "t:" + written + "*" * max(ptrs, 0)
        for name in names:
            self.vars.add(name, n.start_byte, n.end_byte, te if len(te) <= _MAX_TE else "")

    # ------------------------------------------------------------ expressions

    def expr(self, n, pos: int | None = None, depth: int = 0) -> str:
        """The type expression of ``n`` ("" when the file does not show it)."""
        if n is None or depth > _MAX_DEPTH:
            return ""
        key = (n.start_byte, n.end_byte)
        te = self.memo.get(key)
        if te is None:
            te = self._expr(n, n.start_byte if pos is None else pos, depth)
            if len(te) > _MAX_TE:
                te = ""
            self.memo[key] = te
        return te

    def _expr(self, n, pos: int, depth: int) -> str:
        ty = n.type
        if ty == "identifier":
            name = self.t(n)
            te = self.vars.get(name, pos)
            return te if te is not None else f"v:{name}"
        if ty == "this":
            return "this"
        if ty == "qualified_identifier":  # at::kLong, ScalarType::Long: a variable or an enum's value, named
            written = _SPACES.sub("", self.t(n)).lstrip(":")
            return f"v:{written}" if _PLAIN.fullmatch(written) else ""
        if ty == "field_expression":
            arg = n.child_by_field_name("argument")
            fld = n.child_by_field_name("field")
            base = self.expr(arg, pos, depth + 1)
            if not base or fld is None or fld.type != "field_identifier":
                return ""
            op = n.child_by_field_name("operator")
            arrow = op is not None and self.t(op) == "->"
            return f"{base}{'|*' if arrow else ''}|.{self.t(fld)}"
        if ty == "call_expression":
            return self._call(n, pos, depth)
        if ty == "parenthesized_expression":
            inner = n.named_child(0)
            return self.expr(inner, pos, depth + 1) if n.named_child_count == 1 else ""
        if ty == "subscript_expression":
            base = self.expr(n.child_by_field_name("argument"), pos, depth + 1)
            return f"{base}|[]" if base else ""
        if ty == "pointer_expression":
            base = self.expr(n.child_by_field_name("argument"), pos, depth + 1)
            op = n.child(0)
            if not base or op is None:
                return ""
            return f"{base}|*" if op.type == "*" else f"{base}|&"
        if ty == "number_literal":
            s = self.t(n).lower()
            if s.startswith("0x"):
                return "t:int"
            return "t:double" if ("." in s or "e" in s or s.endswith("f")) else "t:int"
        if ty in ("string_literal", "concatenated_string", "raw_string_literal"):
            return "t:char*"
        if ty in ("true", "false"):
            return "t:bool"
        if ty == "char_literal":
            return "t:char"
        if ty == "nullptr":
            return "t:std::nullptr_t"
        if ty == "binary_expression":
            op = n.child_by_field_name("operator")
            left = self.expr(n.child_by_field_name("left"), pos, depth + 1)
            right = self.expr(n.child_by_field_name("right"), pos, depth + 1)
            if op is not None and self.t(op) in _COMPARE:
                # numbers compare to bool; Tensor == 0 is a Tensor: decided once the operand's type is known
                side = left if left and not _number(left) else right if right and not _number(right) else ""
                return f"{side}|cmp" if side else "t:bool"
            # int * Tensor is a Tensor: the side that is not a plain number decides
            if _number(left):
                return right or left
            return left or right
        if ty == "unary_expression":
            op = n.child_by_field_name("operator")
            if op is not None and self.t(op) in ("!", "not"):
                return "t:bool"
            return self.expr(n.child_by_field_name("argument"), pos, depth + 1)
        if ty == "conditional_expression":
            return (self.expr(n.child_by_field_name("consequence"), pos, depth + 1)
                    or self.expr(n.child_by_field_name("alternative"), pos, depth + 1))
        if ty == "cast_expression":
            tn = n.child_by_field_name("type")
            return "t:" + type_text(self.t(tn)) if tn is not None else ""
        if ty == "compound_literal_expression":
            tn = n.child_by_field_name("type")
            return "t:" + type_text(self.t(tn)) if tn is not None else ""
        if ty == "new_expression":
            tn = n.child_by_field_name("type")
            return "t:" + type_text(self.t(tn)) + "*" if tn is not None else ""
        if ty in ("update_expression", "assignment_expression"):
            return self.expr(n.child_by_field_name("argument") or n.child_by_field_name("left"), pos, depth + 1)
        if ty == "sizeof_expression":
            return "t:size_t"
        return ""

    def _call(self, n, pos: int, depth: int) -> str:
        f = n.child_by_field_name("function")
        args = n.child_by_field_name("arguments")
        if f is None or args is None:
            return ""
        vals = [c for c in args.named_children if c.type != "comment"]
        count = len(vals)
        ft = f.type
        if ft == "field_expression":
            fld = f.child_by_field_name("field")
            base = self.expr(f.child_by_field_name("argument"), pos, depth + 1)
            if not base or fld is None:
                return ""
            name = self.t(fld)
            if fld.type != "field_identifier":  # x.template foo<T>(): the name without its arguments
                name = name.replace("template", "").split("<")[0].strip()
            op = f.child_by_field_name("operator")
            arrow = op is not None and self.t(op) == "->"
            return f"{base}{'|*' if arrow else ''}|.{name}({count})"
        if ft == "identifier":
            name = self.t(f)
            te = self.vars.get(name, pos)
            if te is not None:  # a local functor or lambda called
                return f"{te}|(){count}" if te else ""
            if name in _PASS_THROUGH and vals:
                return self.expr(vals[0], pos, depth + 1)
            return f"c:{name}/{count}"
        if ft in ("qualified_identifier", "template_function"):
            written = _SPACES.sub("", self.t(f)).replace("template", "")
            if written.startswith("::") and "::" not in written[2:].split("<")[0]:
                return ""  # ::trunc(a): the global (C library) function, never at::trunc: its type is not told
            written = written.lstrip(":")
            head, _, targs = written.partition("<")
            if (limits := _LIMITS.match(written)) is not None:
                return "t:" + type_text(limits.group(1))
            if head in _CASTS or head.rsplit("::", 1)[-1] in _CASTS:
                return "t:" + type_text(targs.rsplit(">", 1)[0]) if targs else ""
            if head in _PASS_THROUGH and vals:
                return self.expr(vals[0], pos, depth + 1)
            if head in ("std::get", "get") and targs[:-1].isdigit() and vals:
                base = self.expr(vals[0], pos, depth + 1)
                return f"{base}|#{targs[:-1]}" if base else ""
            return f"c:{written}/{count}"
        if ft == "parenthesized_expression" or ft == "lambda_expression":
            return ""
        return ""

    def args(self, n, pos: int) -> tuple[int, str]:
        """(number of arguments, their type expressions ";"-joined or "" if none is known) of a call."""
        args = n.child_by_field_name("arguments")
        if args is None:
            return -1, ""
        return self.arg_list(args, pos)

    def arg_list(self, args, pos: int) -> tuple[int, str]:
        """``args`` for an argument list (or a braced list) itself."""
        vals = [c for c in args.named_children if c.type != "comment"]
        if not vals:
            return 0, ""
        if args.has_error or any(v.type == "parameter_pack_expansion" for v in vals):
            # f(args...), or a list the parser could not read (a lambda's init-capture, an #ifdef inside): the count
            # is not known (Note [Argument counts] in graph/signatures.py)
            return -1, ""
        tes = [self.expr(v, pos) for v in vals]
        joined = ";".join(tes)
        return len(vals), joined if any(tes) and len(joined) <= 2 * _MAX_TE else ""
