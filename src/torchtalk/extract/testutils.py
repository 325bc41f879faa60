"""What torch/testing/_internal offers tests: its helpers, classified (OpInfo entries: opinfo.py).

TestUtil categories, decided from each helper's own source (first rule that holds):

- assertions: a function named ``assert*``, or a ``TestCase`` method named ``assert*``; a test base's method
  that asserts (Note [Helper methods of the test bases]).
- opinfo inputs: a function named ``sample_inputs*``, ``reference_inputs*``, ``error_inputs*`` (the inputs an
  OpInfo entry gives the generic tests: hundreds of them, which would drown the fixtures).
- fixtures (by form): a ``@contextmanager`` function, or one named ``instantiate_*``, ``make_*``.
- decorators: a function taking one function (first parameter ``fn``, ``func``, ``f``,
  ``test``, ``cls``..., at most one without default) that defines a ``@wraps`` wrapper
  or returns the function, a nested def, or a decorator applied to it
  (``skipCUDAIf(...)(fn)``, ``unittest.expectedFailure(fn)``); or a factory returning
  such a nested def / a ``lambda fn: ...`` / another decorator of the file /
  ``unittest.skip*(...)``. Classes:
  ``__call__(self, fn)``, a ``_parametrize_test`` method (the parametrizer protocol),
  or a base that is a decorator class of the same file. A module-level name bound to what such a factory
  returns is one too (``requires_gpu = functools.partial(unittest.skipIf, not HAS_GPU, "requires gpu")``,
  ``skipIfNoDill = unittest.skipIf(not TEST_DILL, "no dill")``, ``skipCUDAIf = partial(skipDeviceIf, ...)``,
  an alias of a decorator of the file), unless the call hands it a function of the file (that is a decorated
  function).
- opinfo: a class named ``*Info`` or subclassing one of the file's opinfo classes.
- fixtures (the rest): generator functions (test data such as ``generate_elementwise_binary_tensors``);
  classes with ``setUp``/``setUpClass``/``tearDown``, ``__enter__``+``__exit__``, or a
  base named ``*TestCase``/``*TestBase`` or being such a class of the same file.
- other: anything else.

Helpers are the public (no leading "_") module-level defs, classes and decorators bound by assignment of the
file, and the helper methods of its test bases.

Note [Helper methods of the test bases]
~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
A test base is a class of the file deriving from a ``*TestCase`` / ``*TestBase`` (``TestCase``, ``JitTestCase``,
``QuantizationTestCase``, ``DeviceTypeTestBase``) or from a test base of the file. Its tests' classes derive from
it, so its public methods are what a test calls as ``self.x(...)``: each is listed as ``Class.method``, except
the unittest protocol (``setUp``, ``tearDown``, ``run``...), dunders, properties (read, not called) and ``test*``
methods (pytest collects those as tests of every class deriving from it). The function rules by name and form
decide first (``assert*``: assertions; a generator of inputs is a fixture even if it asserts); of the rest, one
that asserts is an assertion: it calls ``self.assert*`` / ``self.fail*`` or another of the class's assertions
(``JitTestCase.checkScript`` calls ``self.assertEqual``; ``QuantizationTestCase.checkQuantDequant`` too), and
the others are "other". Another fixture class (a context manager) lists its ``assert*`` methods only.
"""

from __future__ import annotations

import ast
from ast import Call, Name

from ..model import TestUtil, UtilKind
from ..model.paths import TESTING_INTERNAL
from .pyast import DEFS, block_statements, dotted, first_doc_line, last_part, signature

INTERNAL = TESTING_INTERNAL

_FN_PARAMS = frozenset({
    "fn", "func", "f", "fun", "function", "test", "test_fn", "test_func", "testfn",
    "method", "meth", "wrapped", "decorated", "callable_", "cls", "cls_or_func", "klass",
})
# callees whose result is a decorator (unittest.skipIf(...), expectedFailure, xfail...)
_DECORATOR_PREFIXES = ("skip", "expectedFailure", "xfail")
_FIXTURE_PREFIXES = ("instantiate_", "make_")
_TEST_BASES = ("TestCase", "TestBase")  # a class deriving from one is a test base
_OPINFO_INPUTS = ("sample_inputs", "reference_inputs", "error_inputs")  # what an OpInfo entry gives its tests
_SETUP = frozenset({"setUp", "setUpClass", "tearDown", "tearDownClass", "instantiate_test"})
# unittest.TestCase's protocol, which a test base overrides for the runner: not what a test calls
_PROTOCOL = frozenset({"run", "debug", "shortDescription", "id", "countTestCases", "defaultTestResult",
                       "setUpModule", "tearDownModule", "doCleanups", "doClassCleanups"})

# ---------------------------------------------------------------- helpers (TestUtil)


def classify_helpers(tree: ast.Module) -> list[TestUtil]:
    """TestUtil rows for the public helpers of one torch/testing/_internal module (rules above)."""
    defs = _module_defs(tree.body)
    decorators: set[str] = set()  # decorator defs/classes of this file, also private ones
    opinfos: set[str] = set()
    fixtures: set[str] = set()
    test_bases: set[str] = set()  # Note [Helper methods of the test bases]
    classes = {d.name: d for d in defs if d.__class__ is ast.ClassDef}
    funcs = {d.name: d for d in defs if d.__class__ is not ast.ClassDef}
    bound = _bound(tree.body, set(funcs) | set(classes))
    # fixpoint: class rules look at bases, function rules at returned decorators
    for _ in range(8):
        before = len(decorators) + len(opinfos) + len(fixtures) + len(test_bases)
        for name, f in funcs.items():
            if name not in decorators and _is_decorator_fn(f, decorators):
                decorators.add(name)
        for name, a in bound.items():
            if name not in decorators and _returns_decorator(a.value, {}, decorators, 0):
                decorators.add(name)
        for name, c in classes.items():
            bases = {last_part(dotted(b) or "") for b in c.bases}
            if name not in decorators and _is_decorator_class(c, bases, decorators):
                decorators.add(name)
            if name.endswith("Info") or bases & opinfos:
                opinfos.add(name)
            if _is_fixture_class(c, bases, fixtures):
                fixtures.add(name)
            if any(b.endswith(_TEST_BASES) for b in bases) or bases & test_bases:
                test_bases.add(name)
        if len(decorators) + len(opinfos) + len(fixtures) + len(test_bases) == before:
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
            if name in fixtures:
                out += _methods(d, name in test_bases)
        else:
            out.append(TestUtil(name, UtilKind.FUNCTION, _function_category(d, decorators), d.lineno, _doc(d, name)))
    for name, a in bound.items():
        if name in decorators and not name.startswith("_"):
            out.append(TestUtil(name, UtilKind.BOUND, "decorators", a.lineno, _doc_of_bound(a, name)))
    return sorted(out, key=lambda u: u.line)


def _bound(body: list, defined: set[str]) -> dict[str, ast.Assign]:
    """Module-level ``name = <call or name>`` (in if/try blocks too), the first binding of each name that no def or
    class of the file also binds, and whose call hands no function of the file (``x = slowTest(helper)`` binds a
    decorated function, not a decorator)."""
    out: dict[str, ast.Assign] = {}
    for s in block_statements(body):
        if s.__class__ is not ast.Assign or len(s.targets) != 1 or s.targets[0].__class__ is not Name:
            continue
        name, v = s.targets[0].id, s.value
        if name in defined or name in out or v.__class__ not in (Call, Name, ast.Attribute):
            continue
        handed = (v.args[1:] if last_part(dotted(v.func) or "") == "partial" else v.args) if v.__class__ is Call \
            else []
        if any(a.__class__ is Name and a.id in defined for a in handed):
            continue
        out[name] = s
    return out


def _methods(c: ast.ClassDef, test_base: bool) -> list[TestUtil]:
    """The helper methods of a fixture class (Note [Helper methods of the test bases])."""
    methods = {m.name: m for m in c.body if m.__class__ in DEFS and not m.name.startswith(("_", "test"))
               and m.name not in _SETUP and m.name not in _PROTOCOL and not _is_property(m)}
    asserting = {n for n in methods if n.startswith("assert")}
    while test_base:  # fixpoint: a method calling one of the class's assertions asserts too
        more = {n for n, m in methods.items() if n not in asserting and _asserts(m, asserting)}
        if not more:
            break
        asserting |= more
    out = []
    for n, m in methods.items():
        cat = _function_category(m, set())  # by name and form first: a generator of inputs that asserts is a fixture
        if cat == "other" and n in asserting:
            cat = "assertions"
        if cat != "assertions" and not test_base:
            continue
        out.append(TestUtil(f"{c.name}.{n}", UtilKind.METHOD, cat, m.lineno, _doc(m, f"{c.name}.{n}")))
    return out


def _is_property(f) -> bool:
    """``@property`` / ``@x.setter``: read as an attribute, not called."""
    return any(last_part(dotted(d) or "") in ("property", "setter", "getter", "deleter", "cached_property")
               for d in f.decorator_list)


def _asserts(f, asserting: set[str]) -> bool:
    """Whether a method calls ``self.assert*`` / ``self.fail*`` or one of ``asserting`` on ``self``."""
    for n in ast.walk(f):
        if n.__class__ is Call and n.func.__class__ is ast.Attribute and n.func.value.__class__ is Name and \
                n.func.value.id == "self" and (n.func.attr.startswith(("assert", "fail")) or n.func.attr in asserting):
            return True
    return False


def _function_category(f, decorators: set[str]) -> str:
    name = f.name
    if name.startswith("assert"):
        return "assertions"
    if name.startswith(_OPINFO_INPUTS):
        return "opinfo"
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
        if name == "partial" and r.args:
            # partial(decorator, flag=...): a decorator with some arguments bound (common_dtensor's with_comms);
            # partial(unittest.skipIf, cond, reason): a factory of one (inductor_utils' requires_gpu)
            inner = dotted(r.args[0]) or ""
            if inner in nested:
                return depth < 3 and _is_decorator_fn(nested[inner], decorators, False, depth + 1)
            return inner in decorators or last_part(inner).startswith(_DECORATOR_PREFIXES)
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
    if bases & fixtures or any(b.endswith(_TEST_BASES) for b in bases):
        return True
    names = {m.name for m in c.body if m.__class__ in DEFS}
    return bool(names & _SETUP) or {"__enter__", "__exit__"} <= names


def _doc_of_bound(a: ast.Assign, name: str) -> str:
    """What a bound decorator is bound to, as written (one line)."""
    return " ".join(f"{name} = {ast.unparse(a.value)}".split())[:200]


def _doc(node, name: str) -> str:
    doc = first_doc_line(node)
    if doc:
        return doc
    if node.__class__ is ast.ClassDef:
        bases = ", ".join(dotted(b) or "..." for b in node.bases)
        return f"class {name}({bases})" if bases else f"class {name}"
    return f"{name}{signature(node)}"
