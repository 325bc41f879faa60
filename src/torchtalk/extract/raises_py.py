"""Raise sites of a Python module, read during the module extractor's one walk (pymodules.py).

``raise X(...)``, ``assert cond, msg``, ``warnings.warn(msg, Category)`` and
``torch._check*(cond, lambda: msg)`` are recorded with their message flattened into
literal pieces and values (Note [Raise messages] in model/raises.py): f-strings,
``"...".format(...)``, ``"..." % (...)``, ``+`` concatenation, a message first built in a
local variable (``msg = f"..."; msg += ...; raise ValueError(msg)``) or a module-level
string constant. The condition is the test of the ``if`` the raise sits in.
"""

from __future__ import annotations

import ast
from ast import Attribute, BinOp, Call, Constant, JoinedStr, Name

from ..model import RaiseKind, RaiseSite
from ..model.facts import NO_REF
from ..model.raises import BRACE_FIELD, MAX_TEXT, PY_PERCENT_FIELD, Parts, split_format
from .pyast import dotted, last_part

WARN_CALLS = frozenset({"warnings.warn", "warn", "_warnings.warn"})
# torch._check and kin (torch/__init__.py): (exception, position of the message argument)
PY_CHECKS: dict[str, tuple[str, int]] = {
    "torch._check": ("RuntimeError", 1), "torch._check_index": ("IndexError", 1),
    "torch._check_value": ("ValueError", 1), "torch._check_type": ("TypeError", 1),
    "torch._check_not_implemented": ("NotImplementedError", 1), "torch._check_with": ("", 2),
    "torch._check_is_size": ("RuntimeError", 1),
}
# The default message of torch._check_with (its own, not TORCH_CHECK's).
PY_CHECK_DEFAULT = ("Expected cond to be True, but got False. (Could this error message be improved? If so, "
                    "please report an enhancement request to PyTorch.)")
_MAX_DEPTH = 6
_EXC_SUFFIXES = ("Error", "Exception", "Warning", "Exit", "Interrupt")


def _is_str(node) -> bool:
    return node.__class__ is Constant and isinstance(node.value, str)


def _stringish(node) -> bool:
    cls = node.__class__
    if cls is Constant:
        return isinstance(node.value, str)
    if cls is JoinedStr:
        return True
    if cls is BinOp:
        return _stringish(node.left) or _stringish(node.right)
    return cls is Call and node.func.__class__ is Attribute and node.func.attr == "format" and \
        _is_str(node.func.value)


def _operands(node) -> list:
    """The operands of a left-nested ``a + b + c`` in order."""
    out = []
    while node.__class__ is BinOp and node.op.__class__ is ast.Add:
        out.append(node.right)
        node = node.left
    out.append(node)
    return out[::-1]




class PyRaises:
    """Collects one module's raise sites; pymodules' walk calls the hooks (HOOKS, WARN_CALLS, PY_CHECKS)."""

    def __init__(self, tree: ast.Module, aliases: dict[str, str], data: bytes) -> None:
        self.sites: list[RaiseSite] = []
        self.lines = data.split(b"\n")  # expressions are read from the source (ast.unparse costs ~100x more)
        self.aliases = aliases
        self.tests: dict[int, ast.expr] = {}  # id(statement) -> the test of the `if` whose body holds it
        self.consts: dict[str, ast.expr] = {}  # module-level NAME = "..." (and f-strings, concatenations)
        for s in tree.body:
            if s.__class__ is ast.Assign and len(s.targets) == 1 and s.targets[0].__class__ is Name and \
                    _stringish(s.value):
                self.consts[s.targets[0].id] = s.value

    # ------------------------------------------------------------ hooks

    def on_if(self, n: ast.If, func: int, strs: dict) -> None:
        for s in n.body:
            if s.__class__ is ast.Raise:
                self.tests[id(s)] = n.test

    def on_assign(self, n: ast.Assign, func: int, strs: dict) -> None:
        if len(n.targets) == 1 and n.targets[0].__class__ is Name:
            if _stringish(n.value):
                strs[n.targets[0].id] = [n.value]
            else:
                strs.pop(n.targets[0].id, None)

    def on_augassign(self, n: ast.AugAssign, func: int, strs: dict) -> None:
        if n.target.__class__ is Name and n.op.__class__ is ast.Add and n.target.id in strs:
            strs[n.target.id].append(n.value)

    def on_raise(self, n: ast.Raise, func: int, strs: dict) -> None:
        exc = n.exc
        if exc is None or exc.__class__ is not Call:
            return
        name = dotted(exc.func) or ""
        cls = last_part(name)
        shown = cls if cls.endswith(_EXC_SUFFIXES) or cls in ("StopIteration", "KeyboardInterrupt") else ""
        msg = exc.args[0] if exc.args else next((k.value for k in exc.keywords if k.arg in ("msg", "message")),
                                                None)
        if msg is None:
            return
        test = self.tests.get(id(n))
        self._add(n, func, strs, RaiseKind.RAISE, f"raise {name or self._text(exc.func, 80)}", shown, msg,
                  self._text(test) if test is not None else "")

    def on_assert(self, n: ast.Assert, func: int, strs: dict) -> None:
        if n.msg is not None:
            self._add(n, func, strs, RaiseKind.RAISE, "assert", "AssertionError", n.msg, self._text(n.test))

    def warn(self, call: Call, name: str, func: int, strs: dict) -> None:
        if name == "warn" and self.aliases.get("warn") != "warnings.warn":
            return
        msg = call.args[0] if call.args else next((k.value for k in call.keywords if k.arg == "message"), None)
        if msg is None:
            return
        cat = call.args[1] if len(call.args) > 1 else next((k.value for k in call.keywords
                                                            if k.arg == "category"), None)
        shown = last_part(dotted(cat) or "UserWarning") if cat is not None else "UserWarning"
        self._add(call, func, strs, RaiseKind.WARN, name, shown, msg, "")

    def check(self, call: Call, name: str, func: int, strs: dict) -> None:
        """torch._check(cond, lambda: f"..."): the message is what the lambda returns."""
        exc, at = PY_CHECKS[name]
        args = call.args
        if name == "torch._check_with":
            if not args:
                return
            exc = last_part(dotted(args[0]) or "")
            args = args[1:]
            at -= 1
        if not args:
            return
        msg = args[at] if len(args) > at else next((k.value for k in call.keywords if k.arg == "message"), None)
        if msg is not None and msg.__class__ is ast.Lambda:
            msg = msg.body
        cond = self._text(args[0])
        if msg is None or (msg.__class__ is Constant and msg.value is None):
            parts = Parts()
            parts.lit(PY_CHECK_DEFAULT)
            self._site(call, func, RaiseKind.CHECK, name, exc, parts, cond)
        else:
            self._add(call, func, strs, RaiseKind.CHECK, name, exc, msg, cond)

    # ------------------------------------------------------------ messages

    def _text(self, node, limit: int = MAX_TEXT) -> str:
        """An expression's source text, whitespace runs as one space."""
        first, last = node.lineno - 1, (node.end_lineno or node.lineno) - 1
        lines = self.lines
        if last >= len(lines) or last - first > 20:
            return "..."
        if first == last:
            raw = lines[first][node.col_offset:node.end_col_offset]
        else:
            raw = b" ".join([lines[first][node.col_offset:], *lines[first + 1:last],
                             lines[last][:node.end_col_offset]])
        return " ".join(raw.decode("utf-8", "replace").split())[:limit]

    def _short(self, node) -> str:
        d = dotted(node)
        return d if d is not None else self._text(node)

    def _constant(self, node, strs: dict) -> str | None:
        """The string a node stands for when it is a literal or a name bound to one (here or in the module)."""
        if _is_str(node):
            return str(node.value)
        if node.__class__ is Name:
            exprs = strs.get(node.id) or ([self.consts[node.id]] if node.id in self.consts else [])
            if len(exprs) == 1 and _is_str(exprs[0]):
                return str(exprs[0].value)
        return None

    def _add(self, n, func: int, strs: dict, kind: RaiseKind, macro: str, exc: str, msg: ast.expr,
             cond: str) -> None:
        parts = Parts()
        self._flatten(msg, parts, strs, 0)
        self._site(n, func, kind, macro, exc, parts, cond)

    def _site(self, n, func: int, kind: RaiseKind, macro: str, exc: str, parts: Parts, cond: str) -> None:
        if not parts.has_text:
            return
        pieces, gaps = parts.done()
        line = n.lineno
        self.sites.append(RaiseSite(NO_REF, func if func >= 0 else NO_REF, kind, macro, exc, pieces, gaps,
                                    cond, line, max(line, n.end_lineno or line)))

    def _flatten(self, node, parts: Parts, strs: dict, depth: int) -> None:
        cls = node.__class__
        if cls is Constant:
            if isinstance(node.value, str):
                parts.lit(node.value)
            else:
                parts.val(repr(node.value))
            return
        if depth < _MAX_DEPTH:
            if cls is JoinedStr:
                for v in node.values:
                    if v.__class__ is Constant:
                        parts.lit(str(v.value))
                    else:
                        parts.val(self._short(v.value))
                return
            if cls is BinOp:
                op = node.op.__class__
                if op is ast.Add and _stringish(node):
                    for x in _operands(node):  # a + b + c + ...: one level, however long
                        self._flatten(x, parts, strs, depth + 1)
                    return
                if op is ast.Mod and _is_str(node.left):
                    r = node.right
                    args = [self._short(e) for e in r.elts] if r.__class__ is ast.Tuple else [self._short(r)]
                    split_format(node.left.value, parts, PY_PERCENT_FIELD, args)
                    return
            if cls is Call:
                f = node.func
                fmt = self._constant(f.value, strs) if f.__class__ is Attribute and f.attr == "format" else None
                if fmt is not None:  # "...{}...".format(x), also on a name bound to such a string
                    split_format(fmt, parts, BRACE_FIELD, [self._short(a) for a in node.args])
                    return
                if last_part(dotted(f) or "") == "dedent" and node.args:
                    self._flatten(node.args[0], parts, strs, depth + 1)
                    return
            if cls is Name:
                exprs = strs.get(node.id) or ([self.consts[node.id]] if node.id in self.consts else None)
                if exprs:
                    for e in exprs:
                        self._flatten(e, parts, strs, depth + 1)
                    return
        parts.val(self._short(node))


# pymodules' walk calls these for the statements it meets (one dict lookup per node).
HOOKS = {ast.If: PyRaises.on_if, ast.Assign: PyRaises.on_assign, ast.AugAssign: PyRaises.on_augassign,
         ast.Raise: PyRaises.on_raise, ast.Assert: PyRaises.on_assert}
CALL_NAMES = WARN_CALLS | frozenset(PY_CHECKS)


def on_call(r: PyRaises, call: Call, name: str, func: int, strs: dict) -> None:
    if name in PY_CHECKS:
        r.check(call, name, func, strs)
    else:
        r.warn(call, name, func, strs)

