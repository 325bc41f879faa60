"""Tree -> facts for one parsed C++/CUDA buffer.

One query collects the nodes that matter (definitions, declarations, calls, scopes);
they are visited in source order with a stack of open scopes, so each node costs a few
C calls and nothing walks the whole tree in Python. Node text is sliced from a latin-1
decoding of the buffer (offsets = byte offsets); ``u()`` repairs the rare non-ASCII
string afterwards.

This module holds the driver and the walker's state; the handlers of each kind of node
are mixins: ``cpp_defs`` (function definitions), ``cpp_decls`` (prototypes, classes,
members, usings, aliases), ``cpp_calls`` (calls, launches, ``new``).
"""

from __future__ import annotations

from bisect import bisect_right

from ..model import (
    CallSite,
    CppClass,
    CppField,
    CppSymbol,
    RaiseSite,
    Registration,
    Using,
    UsingKind,
)
from .cpp_calls import Calls
from .cpp_constructs import Constructions
from .cpp_decls import Declarations
from .cpp_defs import Definitions
from .cpp_regs import Regs
from .cpp_text import Scopes
from .cpp_types import Typer, Vars

QUERY = """
(namespace_definition) @ns
(class_specifier body: (_)) @cls
(struct_specifier body: (_)) @cls
(union_specifier body: (_)) @cls
(enum_specifier body: (_)) @cls
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
(binary_expression left: (identifier) operator: ["+" "-" "*" "/" "%" "^" "&" "|" "<" ">" "<=" ">=" "==" "!="]) @op
(binary_expression right: (identifier) operator: ["+" "-" "*" "/" "%" "^" "&" "|" "<" ">" "<=" ">=" "==" "!="]) @op
(unary_expression operator: ["-" "~"] argument: (identifier)) @op
(assignment_expression left: (identifier) operator: ["+=" "-=" "*=" "/=" "%=" "^=" "&=" "|="]) @op
(subscript_expression argument: (identifier)) @op
(initializer_list) @init
(ERROR) @e
(MISSING) @m
"""

_ORDER = {"ns": 0, "cls": 1, "def": 2, "decl": 3, "using": 4, "call": 5, "new": 6, "lam": 7, "for": 8, "op": 9,
          "init": 10}

_COMMON_NS = frozenset({
    "at", "c10", "torch", "native", "std", "detail", "impl", "jit", "autograd", "cuda", "meta",
    "mps", "cpu", "internal", "utils", "functorch", "dynamo", "inductor", "profiler", "api",
    "distributed", "c10d", "nn", "python", "ops", "_ops", "vec", "CPU_CAPABILITY", "sparse",
    "quantized", "xpu", "hip", "lazy", "tensorexpr", "fuser", "mobile", "aoti", "functional",
})

class Walker(Definitions, Declarations, Calls, Constructions):
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
        # the multi-line arguments' copies inside expansions (Note [Arguments keep their lines] in cpp_macros.py)
        self.arg_copies = sorted(a for sp in macro_spans for a in sp.args)
        self.arg_starts = [a.start for a in self.arg_copies]
        self.scopes = scopes  # namespaces by brace matching, used when the tree is damaged
        self.base = byte_base
        self.line_base = line_base
        self.syms: list[CppSymbol] = []
        self.calls: list[CallSite] = []
        self.regs: list[Registration] = []
        self.usings: list[Using] = []
        self.classes: list[CppClass] = []
        self.fields: list[CppField] = []
        self.raises: list[RaiseSite] = []  # raise_cpp.record_raise
        self.vars = Vars()
        self._last_operator: tuple[int, int] = (-1, -1)  # a binary expression captured twice is one call
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
            self.namespaces.update(self._ns_parts(n))
        # Stack entries: (end byte, namespaces, inner scope (classes, functions), function
        # symbol index, TORCH_LIBRARY context, class name if the innermost scope is a class,
        # template arguments of the innermost class if it is a specialization).
        stack: list[tuple] = []
        top = (1 << 62, (), (), -1, None, None, "")
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
                    self._vexing(n, cur[3])
            elif o == 2:
                if cur[3] < 0:  # a new top-level function: forget the last one's variables
                    self.vars.clear()
                    self.typer.memo.clear()
                entry = self._def(n, cur)
                stack.append(entry)
            elif o == 0:
                parts = self._ns_parts(n) or ["(anonymous)"]
                if parts[0] != "(anonymous)" and n.child(0) is not None and n.child(0).type == "inline":
                    # inline namespace X { ... }: its names are members of the enclosing namespace too
                    outer = "::".join(self.scope(cur, n.start_byte))
                    inner = "::".join((outer, *parts)) if outer else "::".join(parts)
                    self.usings.append(Using(UsingKind.NAMESPACE, f"::{inner}", "", self.line(n), outer))
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
            elif o == 9 and cur[3] >= 0:
                self._operator(n, cur[3])
            elif o == 10 and cur[3] >= 0:
                self._refs(n, cur[3])  # Note [References] in cpp_calls.py
        Regs(self).run()

    # ------------------------------------------------------------------ helpers

    def t(self, n) -> str:
        return self.text[n.start_byte:n.end_byte]

    def line(self, n) -> int:
        if self.arg_starts:  # inside an argument a same-file macro's expansion copied: the line it was written on
            pos = n.start_byte + self.base
            i = bisect_right(self.arg_starts, pos) - 1
            if i >= 0 and pos < self.arg_copies[i].end:
                a = self.arg_copies[i]
                return a.line + bisect_right(a.breaks, pos - a.start)
        return n.start_point[0] + 1 + self.line_base

    def scope(self, cur, pos: int) -> tuple[str, ...]:
        """Qualified scope at ``pos``: namespaces from the text when the tree is damaged."""
        if self.scopes is None:
            return cur[1] + cur[2]
        return self._text_namespaces(pos) + cur[2]

    def _text_namespaces(self, pos: int) -> tuple[str, ...]:
        """The namespaces around ``pos`` as the text's braces give them (``scopes``: the tree is damaged)."""
        assert self.scopes is not None
        i = bisect_right(self.scopes.starts, pos + self.base) - 1
        return self.scopes.chains[i] if i >= 0 else ()

    def _ns_parts(self, n) -> list[str]:
        """The parts of a namespace definition's name (``at::native``: at, native); none for an unnamed one."""
        nm = n.child_by_field_name("name")
        return self.text[nm.start_byte:nm.end_byte].replace(" ", "").split("::") if nm is not None else []

    def span_at(self, pos: int):
        """The same-file macro expansion (Span) that holds ``pos``, or None."""
        pos += self.base
        i = bisect_right(self.span_starts, pos) - 1
        if i >= 0 and pos < self.spans[i].end:
            return self.spans[i]
        return None

    def namespace_at(self, pos: int) -> str:
        """The namespaces enclosing ``pos`` as C++ qualifies a name declared there (``at::native``; an unnamed
        namespace adds no part): from the text when the tree is damaged, as ``scope`` reads them."""
        if self.scopes is not None:
            chain: tuple[str, ...] = self._text_namespaces(pos)
        else:
            chain = tuple(p for n in sorted(self.caps.get("ns", ()), key=lambda n: n.start_byte)  # outer ones first
                          if n.start_byte <= pos < n.end_byte for p in self._ns_parts(n))
        return "::".join(p for p in chain if p and p != "(anonymous)")

    def enclosing_def(self, pos: int) -> int:
        best = -1
        for s, e, i in self.defs:
            if s <= pos < e:
                best = i
        return best
