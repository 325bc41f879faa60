"""The decorators that rename a test: PyTorch's parametrizers, known by their class, and the names they give.

Note [Parametrizers rename tests]
~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
A decorator whose class derives from common_utils' ``_TestParametrizer`` (``PARAMETRIZER_BASE``, found in the
class's MRO as the tree resolves it, never by the decorator's name) replaces the test by the tests its
``_parametrize_test`` yields: ``(test, suffix, param_kwargs, decorator_fn)``. The instantiators name each
``{test}_{suffix}`` (suffixes of stacked parametrizers joined top to bottom: compose_parametrize_fns), then the
device, then a dtype when ``param_kwargs`` holds one (common_device_type.py, Note: device and dtype suffix
placement). No test keeps its written name, so no node id of it exists.

What the suffix is, is read from ``_parametrize_test`` as written:

- an f-string whose fields are each the variable of a ``for x in self.attr`` loop, ``self.attr`` set in
  ``__init__`` from a parameter, and the decorator passes that parameter as a literal: every suffix is computed
  (``swap([True, False])``: ``swap_True``, ``swap_False``; common_utils.py ``f'swap_{swap}'``);
- the empty string: the parametrizer does not rename (``decorateIf``);
- anything else (``module_info.formatted_name``, ``optim_info.name``, an entry of a db of many): a placeholder
  naming that expression, ``<module_info.formatted_name>``; a name holding one cannot be a node id, and the command
  selects the tests by the parts that are known (query/testnames.py).

A string ``"dtype"``/``"dtypes"`` in its body (a ``param_kwargs`` key, ``_update_param_kwargs(param_kwargs, 'dtype',
dtype)``) means the dtype follows the device: ``test_forward_<module_info.formatted_name>_cpu_<dtype>``.

The ``parameterized`` library's ``@parameterized.expand(params)`` (a package outside the tree, known by the name it
resolves to) renames too: it adds ``{test}_{i}`` for the i-th entry, ``{test}_{i}_{name}`` when the entry's first
argument is a string (its ``default_name_func``: ``to_safe_name`` keeps letters, digits and ``_``, the rest becomes
``_``), and marks the written test ``__test__ = False``: pytest never collects it. A literal list is named entry by
entry; another list, or a ``name_func=``, is the placeholder ``<index>``.
"""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass

from ..graph.pynames import pynames
from ..link.pyclasses import module_of
from ..model.tests import PARAMETRIZER_BASE
from ..store.reader import Index
from .decorator_defs import HELPER_DEPTH, stands_for, statement_at
from .testnames import Renamer, callable_of, generator

_DTYPE_KEYS = frozenset({"dtype", "dtypes"})


@dataclass(frozen=True)
class _Shape:
    """What a parametrizer class's ``_parametrize_test`` says of the names it makes."""

    fields: tuple[str, ...]  # the f-string's literal parts and fields, fields as "{k}" (k: the parameter's index)
    placeholder: str  # the suffix as written, when it is not computable ("" with fields)
    renames: bool
    dtype: bool


def renamers(ix: Index, path: str, decorators: list[str], depth: int = 0) -> dict[str, Renamer]:
    """The decorators of a test of ``path`` that are parametrizers other than @ops / @parametrize (which
    query/testnames.py names itself) -> how they rename it (Note [Parametrizers rename tests]); ``depth``: the
    helpers read through to get here (a helper returning a call of itself ends)."""
    out: dict[str, Renamer] = {}
    for d in decorators:
        name = callable_of(d)
        if not name or generator(d):
            continue
        if _EXPAND.fullmatch(pynames(ix).resolve_in(module_of(path), name) or ""):
            out[d] = Renamer("expand", _expanded(d), "<index>", False)
            continue
        shape = _shape_of(ix, module_of(path), name)
        if shape is None:
            helper = _through_helper(ix, path, d, name.rsplit(".", 1)[-1], depth) if depth < HELPER_DEPTH else None
            if helper is not None:
                out[d] = helper
            continue
        if not shape.renames:
            continue
        out[d] = Renamer(name.rsplit(".", 1)[-1], _suffixes(shape, d), shape.placeholder or "<params>", shape.dtype)
    return out


def _through_helper(ix: Index, path: str, decorator: str, name: str, depth: int) -> Renamer | None:
    """How a helper returning a parametrizer renames the tests it decorates: as the parametrizer it returns (a
    ``parametrize(...)``: its values, one placeholder; an ``ops(...)``: its entry, then a dtype), named after the
    helper (Note [Decorators read from their
    definition] in query/decorator_defs.py); None when it returns none."""
    for where, text in stands_for(ix, path, decorator):
        if generator(text) == "parametrize":
            return Renamer(name, (), "<params>", False)
        if generator(text) == "ops":  # _sparse_unary_ops = ops(sparse_unary_ufuncs, ...): an entry, then the dtype
            return Renamer(name, (), "<op>", True)
        inner = renamers(ix, where, [text], depth + 1).get(text)
        if inner is not None:
            return Renamer(name, inner.suffixes, inner.placeholder, inner.dtype)
    return None


_EXPAND = re.compile(r"parameterized(\.parameterized)?\.expand")


def _expanded(decorator: str) -> tuple[str, ...]:
    """The suffixes ``@parameterized.expand([...])`` gives its tests, when its list is written out (Note
    [Parametrizers rename tests]); () when they are not known."""
    try:
        call = ast.parse(decorator.strip(), mode="eval").body
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return ()
    if call.__class__ is not ast.Call or not call.args or any(k.arg == "name_func" for k in call.keywords) or \
            call.args[0].__class__ not in (ast.List, ast.Tuple):
        return ()
    out = []
    for i, entry in enumerate(call.args[0].elts):
        first = entry.elts[0] if entry.__class__ in (ast.Tuple, ast.List) and entry.elts else entry
        if first.__class__ is not ast.Constant or entry.__class__ is ast.Call:  # a name, an f-string, param(...),
            return ()  # *rows: may be a string, whose text the name would take
        text = first.value if isinstance(first.value, str) else None
        out.append(f"{i}_{re.sub(r'[^a-zA-Z0-9_]+', '_', text)}" if text is not None else str(i))
    return tuple(out)


def _shape_of(ix: Index, module: str, written: str) -> _Shape | None:
    memo: dict[tuple[str, str], _Shape | None] = ix.cached("parametrizer_shapes", dict)
    key = (module, written)
    if key not in memo:
        names = pynames(ix)
        fq = names.resolve_in(module, written)
        shape = None
        if PARAMETRIZER_BASE in names.mro(fq)[1:]:
            row = ix.one("SELECT file_id, line FROM py_class_fq WHERE fq = ?", (fq,))
            cls = _class_at(ix, ix.path_of(row[0]), row[1]) if row else None
            shape = read_shape(cls) if cls is not None else _Shape((), "", True, False)
        memo[key] = shape
    return memo[key]


def _class_at(ix: Index, path: str, line: int) -> ast.ClassDef | None:
    found = statement_at(ix, path, line, (ast.ClassDef,))
    return found if isinstance(found, ast.ClassDef) else None


def read_shape(cls: ast.ClassDef) -> _Shape:
    """The shape of the names a parametrizer class makes, from its source (Note [Parametrizers rename tests])."""
    methods = {s.name: s for s in cls.body if isinstance(s, (ast.FunctionDef, ast.AsyncFunctionDef))}
    fn = methods.get("_parametrize_test")
    if fn is None:
        return _Shape((), "", True, False)
    dtype = any(n.__class__ is ast.Constant and n.value in _DTYPE_KEYS for n in ast.walk(fn))
    suffixes = [n.value.elts[1] for n in ast.walk(fn) if n.__class__ is ast.Yield and
                n.value.__class__ is ast.Tuple and len(n.value.elts) >= 3]
    if not suffixes:
        return _Shape((), "", True, dtype)
    expr = suffixes[0]
    if expr.__class__ is ast.Name:  # test_name = module_info.formatted_name ... yield (..., test_name, ...)
        bound = [s.value for s in ast.walk(fn) if s.__class__ is ast.Assign and any(
            t.__class__ is ast.Name and t.id == expr.id for t in s.targets)]
        grown = any(s.__class__ is ast.AugAssign and s.target.__class__ is ast.Name and s.target.id == expr.id
                    for s in ast.walk(fn))
        if len(bound) == 1 and not grown:
            expr = bound[0]
        elif len(bound) == 1:
            return _Shape((), f"<{ast.unparse(bound[0])}...>", True, dtype)
    if all(e.__class__ is ast.Constant and e.value == "" for e in suffixes):
        return _Shape((), "", False, dtype)
    if expr.__class__ is ast.JoinedStr and len(suffixes) == 1:
        fields = _fields(expr, fn, methods.get("__init__"))
        if fields is not None:
            return _Shape(fields, "", True, dtype)
    return _Shape((), f"<{ast.unparse(expr).strip(chr(39))}>", True, dtype)


def _fields(expr: ast.JoinedStr, fn: ast.AST, init: ast.AST | None) -> tuple[str, ...] | None:
    """The f-string's parts, each field as ``{k}``: the index of the ``__init__`` parameter its loop runs over."""
    loops = {n.target.id: n.iter for n in ast.walk(fn) if n.__class__ is ast.For and n.target.__class__ is ast.Name}
    params = [a.arg for a in init.args.args[1:]] if isinstance(init, (ast.FunctionDef, ast.AsyncFunctionDef)) else []
    attrs = {t.attr: s.value.id for s in ast.walk(init) if s.__class__ is ast.Assign and s.value.__class__ is ast.Name
             for t in s.targets if t.__class__ is ast.Attribute and dotted_self(t)} if init is not None else {}
    out: list[str] = []
    for part in expr.values:
        if part.__class__ is ast.Constant:
            out.append(str(part.value))
            continue
        value = getattr(part, "value", None)
        it = loops.get(value.id) if value.__class__ is ast.Name else None
        if it is None or it.__class__ is not ast.Attribute or not dotted_self(it) or attrs.get(it.attr) not in params:
            return None
        out.append(f"{{{params.index(attrs[it.attr])}}}")
    return tuple(out)


def dotted_self(node: ast.Attribute) -> bool:
    return node.value.__class__ is ast.Name and node.value.id == "self"


def _suffixes(shape: _Shape, decorator: str) -> tuple[str, ...]:
    """Every suffix the decorator makes, when its arguments are literals the fields read; else ()."""
    if not shape.fields:
        return ()
    try:
        call = ast.parse(decorator, mode="eval").body
    except SyntaxError:
        return ()
    if call.__class__ is not ast.Call:
        return ()
    values: list[list[object]] = []
    for i in sorted({int(f[1:-1]) for f in shape.fields if f.startswith("{") and f[1:-1].isdigit()}):
        if i >= len(call.args):
            return ()
        try:
            v = ast.literal_eval(call.args[i])
        except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
            return ()
        if not isinstance(v, (list, tuple)) or sum(f.startswith("{") for f in shape.fields) > 1:
            return ()
        values.append(list(v))
    if len(values) != 1:
        return ()
    return tuple("".join(str(v) if f.startswith("{") else f for f in shape.fields) for v in values[0])
