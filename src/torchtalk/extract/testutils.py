"""What torch/testing/_internal offers tests: OpInfo entries and classified helpers.

TestUtil categories, decided from each helper's own source (first rule that holds):

- assertions: a function named ``assert*``, or a ``TestCase`` method named ``assert*``.
- fixtures (by form): a ``@contextmanager`` function, or one named ``instantiate_*``,
  ``make_*``, ``sample_inputs*``, ``reference_inputs*``, ``error_inputs*``.
- decorators: a function taking one function (first parameter ``fn``, ``func``, ``f``,
  ``test``, ``cls``..., at most one without default) that defines a ``@wraps`` wrapper
  or returns the function, a nested def, or a decorator applied to it
  (``skipCUDAIf(...)(fn)``, ``unittest.expectedFailure(fn)``); or a factory returning
  such a nested def / a ``lambda fn: ...`` / another decorator of the file /
  ``unittest.skip*(...)``. Classes:
  ``__call__(self, fn)``, a ``_parametrize_test`` method (the parametrizer protocol),
  or a base that is a decorator class of the same file.
- opinfo: a class named ``*Info`` or subclassing one of the file's opinfo classes.
- fixtures (the rest): generator functions (test data such as ``sample_inputs_*``);
  classes with ``setUp``/``setUpClass``/``tearDown``, ``__enter__``+``__exit__``, or a
  base named ``*TestCase``/``*TestBase`` or being such a class of the same file.
- other: anything else.

Helpers are the public (no leading "_") module-level defs and classes of the file.
"""

from __future__ import annotations

import ast
from ast import Call, Constant, Name

import re

from ..model import OpInfoEntry, OpTestMark, TestUtil, UtilKind
from .pyast import DEFS, block_statements, dotted, first_doc_line, last_part, push_children, signature, text

INTERNAL = "torch/testing/_internal/"

_FN_PARAMS = frozenset({
    "fn", "func", "f", "fun", "function", "test", "test_fn", "test_func", "testfn",
    "method", "meth", "wrapped", "decorated", "callable_", "cls", "cls_or_func", "klass",
})
# callees whose result is a decorator (unittest.skipIf(...), expectedFailure, xfail...)
_DECORATOR_PREFIXES = ("skip", "expectedFailure", "xfail")
_FIXTURE_PREFIXES = ("instantiate_", "make_", "sample_inputs", "reference_inputs", "error_inputs")
_SETUP = frozenset({"setUp", "setUpClass", "tearDown", "tearDownClass", "instantiate_test"})

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
    return OpInfoEntry(
        first.value, ctor, _str(kw.get("aten_name")), _str(kw.get("variant_test_name")),
        " ".join(alias_names), call.lineno, db,
    )


def _str(node) -> str:
    return node.value if node is not None and node.__class__ is Constant and isinstance(node.value, str) else ""


# ---------------------------------------------------------------- skips and xfails of the generic op tests

# functorch's and test_ops' list helpers: xfail(op_name, variant_name='', *, device_type=None, dtypes=None),
# skip(...), decorate(..., decorator=...), tol1/tol2(op_name, {dtype: tol}, ...)
_MARK_CALLS = frozenset({"xfail", "skip", "decorate", "tol1", "tol2"})
# calls that give the marks inside them a test class and test: skipOps('TestOperators', 'test_grad', {...})
_CONTEXT_CALLS = frozenset({"skipOps", "opsToleranceOverride"})
_OP_NAME = re.compile(r"^[A-Za-z_][\w.]*$")
_MARK_TEXT = 100


def op_test_marks(tree: ast.Module, data: bytes, has_opinfo: bool) -> list[OpTestMark]:
    """OpTestMark rows: DecorateInfo in OpInfo entries (``has_opinfo``: the file defines entries), and the
    xfail/skip/decorate/tol1 calls naming an op (files whose text has such calls). A mark inside
    ``skipOps('TestX', 'test_y', {...})``, or in a module-level set that such a call uses
    (``vjp_fail = {xfail(...)}``; ``@skipOps('TestOperators', 'test_grad', vjp_fail.union(...))``), gets its
    test class and test, once per use."""
    out: list[OpTestMark] = []
    lists = any(f"{c}(".encode() in data for c in _MARK_CALLS)
    if not has_opinfo and not lists:
        return out
    uses = _set_uses(tree) if lists else {}
    none: list[tuple[str, str]] = [("", "")]
    stack: list[tuple[ast.AST, list[tuple[str, str]]]] = []
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
        for child in ast.iter_child_nodes(n):
            stack.append((child, ctx))
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


# ---------------------------------------------------------------- helpers (TestUtil)


def classify_helpers(tree: ast.Module) -> list[TestUtil]:
    """TestUtil rows for the public helpers of one torch/testing/_internal module (rules above)."""
    defs = _module_defs(tree.body)
    decorators: set[str] = set()  # decorator defs/classes of this file, also private ones
    opinfos: set[str] = set()
    fixtures: set[str] = set()
    classes = {d.name: d for d in defs if d.__class__ is ast.ClassDef}
    funcs = {d.name: d for d in defs if d.__class__ is not ast.ClassDef}
    # fixpoint: class rules look at bases, function rules at returned decorators
    for _ in range(8):
        before = len(decorators) + len(opinfos) + len(fixtures)
        for name, f in funcs.items():
            if name not in decorators and _is_decorator_fn(f, decorators):
                decorators.add(name)
        for name, c in classes.items():
            bases = {last_part(dotted(b) or "") for b in c.bases}
            if name not in decorators and _is_decorator_class(c, bases, decorators):
                decorators.add(name)
            if name.endswith("Info") or bases & opinfos:
                opinfos.add(name)
            if _is_fixture_class(c, bases, fixtures):
                fixtures.add(name)
        if len(decorators) + len(opinfos) + len(fixtures) == before:
            break

    out: list[TestUtil] = []
    for d in defs:
        name = d.name
        if name.startswith("_"):
            continue
        if d.__class__ is ast.ClassDef:
            if name in decorators:
                cat = "decorators"
            elif name in opinfos:
                cat = "opinfo"
            elif name in fixtures:
                cat = "fixtures"
            else:
                cat = "other"
            out.append(TestUtil(name, UtilKind.CLASS, cat, d.lineno, _doc(d, name)))
            if name == "TestCase":
                for m in d.body:
                    if m.__class__ in DEFS and m.name.startswith("assert"):
                        out.append(TestUtil(f"TestCase.{m.name}", UtilKind.METHOD, "assertions", m.lineno,
                                            _doc(m, f"TestCase.{m.name}")))
        else:
            out.append(TestUtil(name, UtilKind.FUNCTION, _function_category(d, decorators), d.lineno, _doc(d, name)))
    return out


def _function_category(f, decorators: set[str]) -> str:
    name = f.name
    if name.startswith("assert"):
        return "assertions"
    if name.startswith(_FIXTURE_PREFIXES) or any(
        last_part(dotted(d) or "") == "contextmanager" for d in f.decorator_list
    ):
        return "fixtures"
    if name in decorators:
        return "decorators"
    if _is_generator(f.body):
        return "fixtures"
    return "other"


def _module_defs(body: list) -> list:
    """Defs and classes at module level, including inside if/try blocks."""
    return [s for s in block_statements(body) if s.__class__ in DEFS or s.__class__ is ast.ClassDef]


def _is_generator(body: list) -> bool:
    for s in block_statements(body):
        v = getattr(s, "value", None)
        if v is not None and v.__class__ in (ast.Yield, ast.YieldFrom):
            return True
    return False


def _params(f) -> list[str]:
    return [a.arg for a in f.args.posonlyargs + f.args.args]


def _is_decorator_fn(f, decorators: set[str], method: bool = False, depth: int = 0) -> bool:
    a = f.args
    params = [x.arg for x in a.posonlyargs + a.args]
    required = len(params) - len(a.defaults)
    if method and params:
        params, required = params[1:], required - 1
    first = params[0] if params else None
    nested = {}
    returns = []
    for s in block_statements(f.body):
        t = s.__class__
        if t in DEFS:
            nested[s.name] = s
        elif t is ast.Return and s.value is not None:
            returns.append(s.value)
    # takes one function and gives back a function
    if first in _FN_PARAMS and required <= 1:
        if any(_wraps(n) for n in nested.values()):
            return True
        if any(_returns_wrapped(r, first, nested, decorators) for r in returns):
            return True
    # a factory: returns a decorator
    return any(_returns_decorator(r, nested, decorators, depth) for r in returns)


def _wraps(f) -> bool:
    for d in f.decorator_list:
        if d.__class__ is Call and last_part(dotted(d.func) or "") == "wraps":
            return True
    return False


def _applies_decorator(func, nested: dict, decorators: set[str]) -> bool:
    """``X(...)(fn)``, ``nested_dec(fn)``, ``skipIfFoo(fn)``, ``unittest.expectedFailure(fn)``."""
    if func.__class__ is Call:
        return True
    name = last_part(dotted(func) or "")
    return name in nested or name in decorators or name.startswith(_DECORATOR_PREFIXES)


def _mentions(node, param: str) -> bool:
    if node.__class__ is Name:
        return node.id == param
    if node.__class__ is Call:
        return any(_mentions(a, param) for a in node.args)
    return False


def _returns_wrapped(r, param: str, nested: dict, decorators: set[str]) -> bool:
    c = r.__class__
    if c is Name:
        return r.id == param or r.id in nested
    if c is ast.IfExp:
        return any(_returns_wrapped(b, param, nested, decorators) for b in (r.body, r.orelse))
    if c is Call:
        return _applies_decorator(r.func, nested, decorators) and any(_mentions(a, param) for a in r.args)
    return False


def _returns_decorator(r, nested: dict, decorators: set[str], depth: int) -> bool:
    c = r.__class__
    if c is Name:
        if r.id in decorators:
            return True
        return r.id in nested and depth < 3 and _is_decorator_fn(nested[r.id], decorators, False, depth + 1)
    if c is ast.Lambda:
        p = r.args.args
        return bool(p) and p[0].arg in _FN_PARAMS
    if c is ast.IfExp:
        return any(_returns_decorator(b, nested, decorators, depth) for b in (r.body, r.orelse))
    if c is Call:
        name = last_part(dotted(r.func) or "")
        return name.startswith(_DECORATOR_PREFIXES) or name in decorators
    return False


def _is_decorator_class(c: ast.ClassDef, bases: set[str], decorators: set[str]) -> bool:
    if bases & decorators:
        return True
    for m in c.body:
        if m.__class__ in DEFS:
            if m.name == "_parametrize_test":
                return True
            if m.name == "__call__":
                params = _params(m)[1:]
                if params and (params[0] in _FN_PARAMS or _is_decorator_fn(m, decorators, True)):
                    return True
    return False


def _is_fixture_class(c: ast.ClassDef, bases: set[str], fixtures: set[str]) -> bool:
    if bases & fixtures or any(b.endswith(("TestCase", "TestBase")) for b in bases):
        return True
    names = {m.name for m in c.body if m.__class__ in DEFS}
    return bool(names & _SETUP) or {"__enter__", "__exit__"} <= names


def _doc(node, name: str) -> str:
    doc = first_doc_line(node)
    if doc:
        return doc
    if node.__class__ is ast.ClassDef:
        bases = ", ".join(dotted(b) or "..." for b in node.bases)
        return f"class {name}({bases})" if bases else f"class {name}"
    return f"{name}{signature(node)}"
