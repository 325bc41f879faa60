"""The OpInfo entries of torch/testing/_internal (the generic @ops tests' database), and the skips, xfails
and decorators that name one op's generic tests (in OpInfo entries and in test files' lists)."""

from __future__ import annotations

import ast
import re
from ast import Call, Constant, Name

from ..model import OpInfoEntry, OpInfoList, OpTestMark
from ..model.tests import OPINFO_NAME_PREFIXES
from .pyast import block_statements, dotted, last_part, push_children, text

# ---------------------------------------------------------------- OpInfo entries


def opinfo_entries(tree: ast.Module) -> list[OpInfoEntry]:
    """Calls ``XxxInfo("name", ...)`` (any callee ending in "Info" but DecorateInfo) with
    a string first argument, in files that import or define ``OpInfo`` (rpc tests have a
    ``WorkerInfo("name")``); ``db`` is the module-level list they are assigned into."""
    out: list[OpInfoEntry] = []
    if not _binds_opinfo(tree):
        return out
    for s in tree.body:
        db = ""
        t = s.__class__
        target = None
        if t is ast.Assign and len(s.targets) == 1:
            target = s.targets[0]
        elif t is ast.AnnAssign or t is ast.AugAssign:
            target = s.target
        if target is not None and target.__class__ is Name:
            db = target.id
        stack = [s]
        while stack:
            n = stack.pop()
            c = n.__class__
            if c is Name or c is Constant:
                continue
            if c is Call:
                e = _opinfo(n, db)
                if e is not None:
                    out.append(e)
            push_children(n, stack)
    out.sort(key=lambda e: e.line)
    return out


def _binds_opinfo(tree: ast.Module) -> bool:
    for s in block_statements(tree.body):
        t = s.__class__
        if t is ast.ClassDef and s.name == "OpInfo":
            return True
        if t is ast.ImportFrom and any((a.asname or a.name) == "OpInfo" or a.name == "*" for a in s.names):
            return True
        if t is ast.Import and any(a.name.endswith("opinfo.core") or a.name.endswith("opinfo") for a in s.names):
            return True
    return False


def _opinfo(call: Call, db: str) -> OpInfoEntry | None:
    name = dotted(call.func)
    if name is None:
        return None
    ctor = last_part(name)
    if not ctor.endswith("Info") or ctor == "DecorateInfo":
        return None
    first = call.args[0] if call.args else None
    kw = {k.arg: k.value for k in call.keywords if k.arg}
    if first is None:
        first = kw.get("name")
    if first is None or first.__class__ is not Constant or not isinstance(first.value, str):
        return None
    aliases = kw.get("aliases")
    alias_names = []
    if aliases is not None and aliases.__class__ in (ast.Tuple, ast.List):
        alias_names = [e.value for e in aliases.elts if e.__class__ is Constant and isinstance(e.value, str)]
    flags = " ".join(k for k, v in kw.items() if v.__class__ is Constant and v.value is True)
    return OpInfoEntry(
        _own_name(ctor, first.value), ctor, _str(kw.get("aten_name")), _str(kw.get("variant_test_name")),
        " ".join(alias_names), call.lineno, db, flags, _str(kw.get("aten_backward_name")),
    )


# ---------------------------------------------------------------- lists of entries drawn from other lists


def opinfo_lists(tree: ast.Module) -> list[OpInfoList]:
    """Module-level ``name = <entries of other lists>`` (OpInfoList): a comprehension over list names
    (``[op for op in op_db if ...]``, in ``tuple(...)`` or ``list(...)`` too), ``filter(lambda op: ..., L)``,
    or a sum of list names (``op_db + python_ref_db``)."""
    out = []
    for s in tree.body:
        if s.__class__ is ast.Assign and len(s.targets) == 1 and s.targets[0].__class__ is Name:
            got = _drawn(s.value)
            if got is not None:
                sources, isa, flags, dropped = got
                out.append(OpInfoList(s.targets[0].id, " ".join(sources), " ".join(isa), " ".join(flags), dropped,
                                      s.lineno))
    return out


def _drawn(v: ast.expr) -> tuple[list[str], list[str], list[str], int] | None:
    """(source lists, classes, true attributes, conditions not kept) of an expression drawing entries from other
    lists."""
    if v.__class__ is Call and dotted(v.func) in ("list", "tuple") and len(v.args) == 1:
        return _drawn(v.args[0])
    if v.__class__ in (ast.ListComp, ast.GeneratorExp) and len(v.generators) == 1:
        g = v.generators[0]
        sources = _names(g.iter)
        if g.target.__class__ is not Name or sources is None:
            return None
        if v.elt.__class__ is not Name or v.elt.id != g.target.id:
            return None  # [translate_opinfo(op) for op in op_db]: new entries made from each, not those entries
        isa: list[str] = []
        flags: list[str] = []
        dropped = sum(_conditions(cond, g.target.id, isa, flags) for cond in g.ifs)
        return sources, isa, flags, dropped
    if v.__class__ is Call and dotted(v.func) == "filter" and len(v.args) == 2 and v.args[0].__class__ is ast.Lambda:
        fn = v.args[0]
        sources = _names(v.args[1])
        if sources is None or len(fn.args.args) != 1:
            return None
        isa, flags = [], []
        return sources, isa, flags, _conditions(fn.body, fn.args.args[0].arg, isa, flags)
    if v.__class__ is ast.BinOp:
        sources = _names(v)
        return (sources, [], [], 0) if sources is not None and len(sources) > 1 else None
    return None


def _names(v: ast.expr) -> list[str] | None:
    """The list names of ``a``, ``a + b``, ``(a + b)``; None for anything else."""
    if v.__class__ is Name:
        return [v.id]
    if v.__class__ is ast.BinOp and v.op.__class__ is ast.Add:
        left, right = _names(v.left), _names(v.right)
        return left + right if left is not None and right is not None else None
    return None


def _conditions(cond: ast.expr, var: str, isa: list[str], flags: list[str]) -> int:
    """The ``isinstance(var, C)`` / ``isinstance(var, (C, D))`` classes and the ``var.attr`` attributes an and of
    conditions requires; how many others it has (not kept)."""
    if cond.__class__ is ast.BoolOp and cond.op.__class__ is ast.And:
        return sum(_conditions(c, var, isa, flags) for c in cond.values)
    if (cond.__class__ is Call and dotted(cond.func) == "isinstance" and len(cond.args) == 2
          and cond.args[0].__class__ is Name and cond.args[0].id == var):
        kinds = cond.args[1].elts if cond.args[1].__class__ is ast.Tuple else [cond.args[1]]
        isa += [last_part(d) for k in kinds if (d := dotted(k))]
        return 0
    if cond.__class__ is ast.Attribute and cond.value.__class__ is Name and cond.value.id == var:
        flags.append(cond.attr)
        return 0
    return 1


def _own_name(ctor: str, written: str) -> str:
    """An entry's name as the entry names itself (Note [OpInfo names set after construction]):
    ForeachFuncInfo('neg') is _foreach_neg."""
    return OPINFO_NAME_PREFIXES.get(ctor, "") + written


def _str(node) -> str:
    return node.value if node is not None and node.__class__ is Constant and isinstance(node.value, str) else ""


# ---------------------------------------------------------------- skips and xfails of the generic op tests

# functorch's and test_ops' list helpers: xfail(op_name, variant_name='', *, device_type=None, dtypes=None),
# skip(...), decorate(..., decorator=...), tol1/tol2(op_name, {dtype: tol}, ...)
_MARK_CALLS = frozenset({"xfail", "skip", "decorate", "tol1", "tol2"})
# calls that give the marks inside them a test class and test: skipOps('TestOperators', 'test_grad', {...})
_CONTEXT_CALLS = frozenset({"skipOps", "opsToleranceOverride"})
# A file with no bare call of one (``xfail(``, not ``unittest.skip(``) has no list marks, and one with no context
# call no set a context call uses: the text tells before the tree is walked.
_BARE_MARK_CALL = re.compile(rb"(?<![\w.])(?:" + b"|".join(c.encode() for c in sorted(_MARK_CALLS)) + rb")\(")
_CONTEXT_TEXT = re.compile(b"|".join(c.encode() + rb"\(" for c in sorted(_CONTEXT_CALLS)))
_OP_NAME = re.compile(r"^[A-Za-z_][\w.]*$")
_MARK_TEXT = 100


def op_test_marks(tree: ast.Module, data: bytes, has_opinfo: bool) -> list[OpTestMark]:
    """OpTestMark rows: DecorateInfo in OpInfo entries (``has_opinfo``: the file defines entries), and the
    xfail/skip/decorate/tol1 calls naming an op (files whose text has such calls). A mark inside
    ``skipOps('TestX', 'test_y', {...})``, or in a module-level set that such a call uses
    (``vjp_fail = {xfail(...)}``; ``@skipOps('TestOperators', 'test_grad', vjp_fail.union(...))``), gets its
    test class and test, once per use."""
    out: list[OpTestMark] = []
    lists = _BARE_MARK_CALL.search(data) is not None
    if not has_opinfo and not lists:
        return out
    uses = _set_uses(tree) if lists and _CONTEXT_TEXT.search(data) else {}
    none: list[tuple[str, str]] = [("", "")]
    stack: list[tuple[ast.AST, list[tuple[str, str]]]] = []
    children: list[ast.AST] = []
    for s in reversed(tree.body):
        target = s.targets[0] if s.__class__ is ast.Assign and len(s.targets) == 1 else None
        stack.append((s, uses.get(target.id, none) if target is not None and target.__class__ is Name else none))
    while stack:
        n, ctx = stack.pop()
        c = n.__class__
        if c is Name or c is Constant:
            continue
        if c is Call:
            callee = last_part(dotted(n.func) or "")
            if has_opinfo and callee.endswith("Info") and callee != "DecorateInfo":
                out += _entry_marks(n)
            elif lists and callee in _MARK_CALLS and n.func.__class__ is Name:  # xfail(...), not unittest.skip
                out += [m for where in ctx if (m := _list_mark(n, callee, where)) is not None]
            elif callee in _CONTEXT_CALLS and len(n.args) >= 2:
                cls, test = _str(n.args[0]), _str(n.args[1])
                if cls or test:
                    ctx = [(cls, test)]
        # The children in source order, the last popped first (as ast.iter_child_nodes gave them, at a third of
        # its cost: this walk is most of a large test file's extraction after its parse).
        children.clear()
        push_children(n, children)
        stack.extend([(child, ctx) for child in reversed(children)])
    out.sort(key=lambda m: m.line)
    return out


def _set_uses(tree: ast.Module) -> dict[str, list[tuple[str, str]]]:
    """Module-level names used in skipOps('TestX', 'test_y', <names>) calls -> the (class, test) of each use."""
    out: dict[str, list[tuple[str, str]]] = {}
    for n in ast.walk(tree):
        if n.__class__ is not Call or len(n.args) < 3 or last_part(dotted(n.func) or "") not in _CONTEXT_CALLS:
            continue
        where = (_str(n.args[0]), _str(n.args[1]))
        for sub in ast.walk(n.args[2]):
            if sub.__class__ is Name and where not in out.setdefault(sub.id, []):
                out[sub.id].append(where)
    return out


def _entry_marks(call: Call) -> list[OpTestMark]:
    """The DecorateInfo(decorator, 'TestClass', 'test_name', device_type=..., dtypes=...) of one OpInfo entry."""
    first = call.args[0] if call.args else None
    kw = {k.arg: k.value for k in call.keywords if k.arg}
    name = _str(first) if first is not None else _str(kw.get("name"))
    if not name:
        return []
    ctor = dotted(call.func)
    name = _own_name(last_part(ctor) if ctor else "", name)
    op = _str(kw.get("torch_opinfo_name")) or name
    variant = _str(kw.get("torch_opinfo_variant_name")) if "torch_opinfo_name" in kw else \
        _str(kw.get("variant_test_name"))
    out = []
    for field in ("skips", "decorators"):
        seq = kw.get(field)
        if seq is None or seq.__class__ not in (ast.List, ast.Tuple):
            continue
        for d in seq.elts:
            if d.__class__ is not Call or last_part(dotted(d.func) or "") != "DecorateInfo" or not d.args:
                continue
            dkw = {k.arg: k.value for k in d.keywords if k.arg}
            pos = d.args[1:3]
            cls = _str(pos[0]) if pos else _str(dkw.get("cls_name"))
            test = _str(pos[1]) if len(pos) > 1 else _str(dkw.get("test_name"))
            out.append(OpTestMark(op, variant, name, text(d.args[0], _MARK_TEXT), cls, test,
                                  _str(dkw.get("device_type")), _dtypes(dkw.get("dtypes")), d.lineno))
    return out


def _list_mark(call: Call, callee: str, ctx: tuple[str, str]) -> OpTestMark | None:
    op = _str(call.args[0]) if call.args else ""
    if not op or not _OP_NAME.match(op):
        return None
    kw = {k.arg: k.value for k in call.keywords if k.arg}
    variant = _str(call.args[1]) if len(call.args) > 1 and callee not in ("tol1", "tol2") else \
        _str(kw.get("variant_name"))
    mark = callee
    if callee == "decorate" and kw.get("decorator") is not None:
        mark = text(kw["decorator"], _MARK_TEXT)
    elif callee in ("tol1", "tol2"):
        mark = "toleranceOverride" + (f"({text(call.args[1], _MARK_TEXT - 20)})" if len(call.args) > 1 else "")
    return OpTestMark(op, variant, "", mark, ctx[0], ctx[1], _str(kw.get("device_type")), _dtypes(kw.get("dtypes")),
                      call.lineno)


def _dtypes(node) -> str:
    if node is None:
        return ""
    if node.__class__ in (ast.Tuple, ast.List, ast.Set):
        return " ".join(dotted(e) or text(e, 40) for e in node.elts)
    return text(node, 80)
