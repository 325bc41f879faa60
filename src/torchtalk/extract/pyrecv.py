"""Locals of a Python function that hold a builtin container (Note [Builtin receivers] in model/python.py).

``Receivers`` is fed by the scope walk of extract/pymodules.py as it passes the function's nodes: every node that
binds a name (``bind``: an assignment records what it binds, any other binding makes the name unknown), and the
index of every call of a method of a bare name (``calls``); at the end of the scope, ``apply`` marks those calls
whose receiver holds a builtin on every binding. Nothing here walks more than a binding's target: it costs a few
dict operations per binding.
"""

from __future__ import annotations

import ast
import warnings
from dataclasses import replace

from ..model import PyCall, PyReceiver
from .pyast import dotted

R = PyReceiver
# Constructors and annotations that name a builtin, bare or under their module (collections.deque, typing.Set).
_CALLS = {"set": R.SET, "frozenset": R.FROZENSET, "dict": R.DICT, "defaultdict": R.DICT, "OrderedDict": R.DICT,
          "Counter": R.DICT, "list": R.LIST, "sorted": R.LIST, "tuple": R.TUPLE, "str": R.STR, "repr": R.STR,
          "bytes": R.BYTES, "bytearray": R.BYTES, "deque": R.DEQUE}
_TYPES = {"set": R.SET, "Set": R.SET, "MutableSet": R.SET, "frozenset": R.FROZENSET, "FrozenSet": R.FROZENSET,
          "dict": R.DICT, "Dict": R.DICT, "DefaultDict": R.DICT, "OrderedDict": R.DICT, "Counter": R.DICT,
          "defaultdict": R.DICT, "list": R.LIST, "List": R.LIST, "tuple": R.TUPLE, "Tuple": R.TUPLE,
          "str": R.STR, "bytes": R.BYTES, "deque": R.DEQUE, "Deque": R.DEQUE}
_MODULES = frozenset({"collections", "typing", "builtins", "typing_extensions"})
# The standard library's functions that return a str (or None): the environment and paths. A method called on what they
# return is a str's (os.getenv("ROCR_VISIBLE_DEVICES").split(","): no Tensor.split).
_STR_CALLS = frozenset({"os.getenv", "os.environ.get", "os.getcwd", "os.fspath", "os.path.join", "os.path.basename",
                        "os.path.dirname", "os.path.abspath", "os.path.realpath", "os.path.normpath",
                        "os.path.expanduser", "os.path.relpath"})
_LITERALS = {ast.Dict: R.DICT, ast.DictComp: R.DICT, ast.List: R.LIST, ast.ListComp: R.LIST, ast.Set: R.SET,
             ast.SetComp: R.SET, ast.Tuple: R.TUPLE, ast.JoinedStr: R.STR}
_NONE = object()  # ``x = None``: no value whose methods are called
_ASSIGNS = frozenset({ast.Assign, ast.AnnAssign, ast.AugAssign})
# The nodes that bind a name, which ``Receivers.bind`` reads: assignments, and those that bind a name to a value the
# function does not show (a loop, ``with``, ``except``, import, walrus or comprehension target, a match capture, a
# lambda's parameters, global and nonlocal names).
BINDS = _ASSIGNS | {ast.Global, ast.Nonlocal, ast.Lambda, ast.For, ast.AsyncFor, ast.With, ast.AsyncWith,
                    ast.NamedExpr, ast.comprehension, ast.ExceptHandler, ast.Import, ast.ImportFrom, ast.MatchAs,
                    ast.MatchStar, ast.MatchMapping}


def _named(node: ast.expr) -> str | None:
    """``set`` / ``collections.deque`` / ``typing.Set``: the name, bare or under a module that holds builtins;
    None for any other expression."""
    if node.__class__ is ast.Name:
        return node.id
    if node.__class__ is ast.Attribute and node.value.__class__ is ast.Name and node.value.id in _MODULES:
        return node.attr
    return None


def value_kind(v: ast.expr | None) -> PyReceiver | object | None:
    """The builtin an expression makes, ``_NONE`` for None, or None when the function does not show it."""
    if v is None:
        return None
    t = v.__class__
    if t in _LITERALS:
        return _LITERALS[t]
    if t is ast.Constant:
        c = v.value
        return R.STR if isinstance(c, str) else R.BYTES if isinstance(c, bytes) else _NONE if c is None else None
    if t is ast.Call:
        f = v.func
        if f.__class__ is ast.Attribute and f.value.__class__ is ast.Constant and isinstance(f.value.value, str):
            return R.STR  # ", ".join(...), "{}".format(...)
        if f.__class__ is ast.Attribute and dotted(f) in _STR_CALLS:
            return R.STR
        return _CALLS.get(_named(f) or "")
    if t is ast.IfExp:
        a, b = value_kind(v.body), value_kind(v.orelse)
        if a is None or b is None:
            return None
        return b if a is _NONE else a if b is _NONE or a == b else R.BUILTINS
    if t is ast.BinOp and v.op.__class__ in (ast.Add, ast.Mod) and value_kind(v.left) is R.STR:
        return R.STR  # "..." % args, "..." + name
    return None


def made_by(v: ast.expr) -> dict[str, PyReceiver]:
    """The receiver of a method call on an expression (not a name) as PyCall's keyword argument: the builtin it
    makes (``"\\n".join(lines).split(...)``, ``f"{x}".strip()``: a str), or none when the function does not show
    it (``x.view(...).sum()``)."""
    kind = value_kind(v)
    return {"recv": kind} if isinstance(kind, PyReceiver) else {}


def annotation_kind(a: ast.expr | None) -> PyReceiver | None:
    """The builtin an annotation names: ``Set[str]``, ``Optional[Dict[str, int]]``, ``list[int] | None``,
    ``"Set[Module]"``; None for any other annotation."""
    if a is None:
        return None
    if a.__class__ is ast.Constant and isinstance(a.value, str):
        try:
            with warnings.catch_warnings():  # "1x" would print a SyntaxWarning: a string is not the file's code
                warnings.simplefilter("ignore")
                a = ast.parse(a.value, mode="eval").body
        except (SyntaxError, ValueError):
            return None
    if a.__class__ is ast.Subscript:
        if _named(a.value) == "Optional":
            return annotation_kind(a.slice)
        if _named(a.value) == "Union":  # Union[Dict[...], Dict[...]]: the one builtin its members name, None aside
            members = a.slice.elts if a.slice.__class__ is ast.Tuple else [a.slice]  # type: ignore[attr-defined]
            kinds = {annotation_kind(m) for m in members if not (m.__class__ is ast.Constant and m.value is None)}
            return kinds.pop() if len(kinds) == 1 else R.BUILTINS if kinds and None not in kinds else None
        a = a.value
    elif a.__class__ is ast.BinOp and a.op.__class__ is ast.BitOr:  # X | None
        sides = [s for s in (a.left, a.right) if not (s.__class__ is ast.Constant and s.value is None)]
        return annotation_kind(sides[0]) if len(sides) == 1 else None
    return _TYPES.get(_named(a) or "")


# Note [Loop callables]
# ~~~~~~~~~~~~~~~~~~~~~
# ``for mod in self.layers: output = mod(output, ...)`` (TransformerEncoder.forward) and ``for module in self: input =
# module(input)`` (Sequential.forward) call what a container holds: the main work of such a forward, which no name
# in the file resolves. A call of a bare name that only loops bind, each over the same iterable, records that
# iterable as written (``PyCall.over``: "self.layers", "self", "self.blocks.values()"); ``for i, m in
# enumerate(xs)`` and ``for a, m in zip(xs, ys)`` take the items of the argument in m's place. graph/py_calls.py
# names such a call with what the iterable is (the attribute's maker and line, the class's ``__iter__``) as not
# followed, never drops it; a call of a parameter or of another local is named the same way, and so is a call of an
# item of a container (``self.tail[i](x)``, ``self[0](x)``: the callee "self.tail[]" through ``__getitem__``).
_MAX_ITERABLE = 80  # characters of an iterable as written; a longer expression is not recorded


def loop_items(target: ast.expr, iterable: ast.expr) -> list[tuple[str, str]]:
    """(name, iterable as written) for each name a loop target takes the items of one iterable in: ``m`` of ``for
    m in xs``, of ``for i, m in enumerate(xs)`` and of ``for a, m in zip(ys, xs)``; none for another target."""
    if target.__class__ is ast.Name:
        pairs = [(target.id, iterable)]
    elif target.__class__ is ast.Tuple and iterable.__class__ is ast.Call and not iterable.keywords:
        f = iterable.func
        fn = f.id if f.__class__ is ast.Name else ""
        if fn == "enumerate" and len(target.elts) == 2 and len(iterable.args) == 1:
            pairs = [(target.elts[1].id, iterable.args[0])] if target.elts[1].__class__ is ast.Name else []
        elif fn == "zip" and len(target.elts) == len(iterable.args):
            pairs = [(t.id, a) for t, a in zip(target.elts, iterable.args, strict=True) if t.__class__ is ast.Name]
        else:
            pairs = []
    else:
        pairs = []
    out = []
    for name, it in pairs:
        written = ast.unparse(it)
        if len(written) <= _MAX_ITERABLE and it.__class__ is not ast.Starred:
            out.append((name, written))
    return out


class Receivers:
    """The builtins the locals of one function scope hold (Note [Builtin receivers])."""

    __slots__ = ("kinds", "unknown", "calls", "open", "made", "other", "aliases", "loops", "assigned")

    def __init__(self, args: ast.arguments | None, open_scopes: list[Receivers]) -> None:
        """``open_scopes``: the Receivers of the enclosing functions, whose walks are not done (a ``nonlocal``
        here rebinds their names); this one joins them until ``apply``."""
        self.open = open_scopes
        open_scopes.append(self)
        self.kinds: dict[str, set[object]] = {}  # name -> what its bindings and annotation make
        self.unknown: set[str] = set()  # names bound to what the function does not show
        self.calls: list[int] = []  # indices of calls of a method of a bare name
        self.made: dict[str, str] = {}  # name -> the function whose call it is bound to ("" when bound so twice)
        self.other: set[str] = set()  # names bound some other way too
        self.aliases: dict[str, set[str]] = {}  # name -> the locals it is bound to as well (var = hip_devices)
        self.loops: dict[str, list[str]] = {}  # loop variable -> the iterables it takes items of: Note [Loop callables]
        self.assigned: set[str] = set()  # names bound by an assignment or as a parameter
        if args is None:
            return
        for p in (*args.posonlyargs, *args.args, *args.kwonlyargs):
            self.other.add(p.arg)
            self.assigned.add(p.arg)
            kind = annotation_kind(p.annotation)
            if kind is None:
                self.unknown.add(p.arg)
            else:
                self.kinds[p.arg] = {kind}
        if args.vararg is not None:
            self.kinds[args.vararg.arg] = {R.TUPLE}
        if args.kwarg is not None:
            self.kinds[args.kwarg.arg] = {R.DICT}

    def bind(self, n: ast.stmt) -> None:
        """A node of the scope that binds names (``BINDS``): an assignment records what it binds; ``global`` /
        ``nonlocal``, a lambda's parameters and every other binding make their names unknown."""
        t = n.__class__
        if t is ast.Global or t is ast.Nonlocal:
            for scope in self.open:  # this one, and the functions around it whose names a nonlocal rebinds
                scope.unknown.update(n.names)
                scope.other.update(n.names)
            return
        if t is ast.Lambda:
            a = n.args
            self.unknown.update(p.arg for p in (*a.posonlyargs, *a.args, *a.kwonlyargs, a.vararg, a.kwarg) if p)
            return
        if t not in _ASSIGNS:
            self._unknown(n)
            return
        if t is ast.AugAssign:  # x += [...]: a container keeps its type
            kind: object = _NONE
            targets = [n.target]
        elif t is ast.AnnAssign:  # the annotation declares what a value (or None) the file does not show holds
            kind = value_kind(n.value)
            if kind is None or kind is _NONE:
                kind = annotation_kind(n.annotation) or kind
            targets = [n.target]
        else:
            kind = value_kind(n.value)
            targets = n.targets
        call = dotted(n.value.func) if t is ast.Assign and n.value.__class__ is ast.Call else None
        source = n.value.id if t is ast.Assign and n.value.__class__ is ast.Name else None
        for tg in targets:
            if tg.__class__ is not ast.Name:
                self._names_in(tg)  # a, b = ...: unpacked (an attribute or item stored binds no name)
                continue
            self.assigned.add(tg.id)
            if source is not None and source != tg.id:  # var = other_local: what that one holds (read at the end)
                self.aliases.setdefault(tg.id, set()).add(source)
            elif kind is None:
                self.unknown.add(tg.id)
            else:
                self.kinds.setdefault(tg.id, set()).add(kind)
            if call is not None and len(targets) == 1:
                self.made[tg.id] = "" if tg.id in self.made else call
            else:
                self.other.add(tg.id)

    def _unknown(self, n: ast.AST) -> None:
        """A binding of what the function does not show: its names are unknown."""
        t = n.__class__
        if t is ast.For or t is ast.AsyncFor or t is ast.comprehension:
            self._names_in(n.target)
            for name, iterable in loop_items(n.target, n.iter):
                self.loops.setdefault(name, []).append(iterable)
        elif t is ast.With or t is ast.AsyncWith:
            for item in n.items:
                if item.optional_vars is not None:
                    self._names_in(item.optional_vars)
        elif t is ast.NamedExpr:
            self._names_in(n.target)
        elif t is ast.Import or t is ast.ImportFrom:
            self.unknown.update((a.asname or a.name).split(".")[0] for a in n.names)
            self.other.update((a.asname or a.name).split(".")[0] for a in n.names)
        else:  # except ... as name, and a match's captures
            name = getattr(n, "name", None) or getattr(n, "rest", None)
            if name:
                self.unknown.add(name)
                self.other.add(name)

    def _names_in(self, target: ast.AST) -> None:
        if target.__class__ is ast.Name:
            self.unknown.add(target.id)
            self.other.add(target.id)
        elif target.__class__ in (ast.Tuple, ast.List, ast.Starred):
            for sub in ast.iter_child_nodes(target):
                self._names_in(sub)

    def _binds(self, name: str) -> bool:
        """Whether the scope binds ``name`` (as a parameter, by an assignment, a loop or another binding)."""
        return name in self.assigned or name in self.loops or name in self.unknown or name in self.kinds \
            or name in self.aliases or name in self.made

    def kind_of(self, name: str) -> PyReceiver | None:
        kinds = self._kinds(name, set())
        if kinds is None:
            return None
        kinds -= {_NONE}
        if len(kinds) > 1:
            return R.BUILTINS
        return next(iter(kinds)) if kinds else None  # type: ignore[return-value]

    def _kinds(self, name: str, seen: set[str]) -> set[object] | None:
        """What a name's bindings make, those to another local included (None: one of them is not known)."""
        if name in self.unknown or name not in self.kinds and name not in self.aliases:
            return None
        seen.add(name)
        kinds = set(self.kinds.get(name, ()))
        for other in self.aliases.get(name, ()):
            if other in seen:
                continue
            more = self._kinds(other, seen)
            if more is None:
                return None
            kinds |= more
        return kinds

    def apply(self, calls: list[PyCall], bare: list[int]) -> None:
        """Mark the scope's calls of a method of a name that holds a builtin, and its calls of a bare name (``bare``:
        their indices) that it or a function around it binds (``PyCall.local``), with the iterable when loops alone
        bind it; the scope is done."""
        self.open.remove(self)
        for i in bare:
            c = calls[i]
            over = self.loops.get(c.callee)
            if over and len(set(over)) == 1 and c.callee not in self.assigned:
                calls[i] = replace(c, over=over[0], local=True)
            elif self._binds(c.callee) or any(s._binds(c.callee) for s in self.open):
                calls[i] = replace(c, local=True)
        for i in self.calls:
            c = calls[i]
            head, _, rest = c.callee.partition(".")
            kind = self.kind_of(head) if rest and "." not in rest else None
            if kind is not None:
                calls[i] = replace(c, recv=kind)
            elif rest and "." not in rest and self.made.get(head) and head not in self.other:
                calls[i] = replace(c, recv_call=self.made[head])

