"""What a decorator written on a test does, read from where the name it calls is defined.

Note [Decorators read from their definition]
~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
A test's decorator is often a helper of the test file or of torch/testing/_internal, whose name says nothing of
what it does. Its definition does: the name is looked up as the interpreter would (a module-level def or
assignment of the test file itself, else what the file imports, via graph/pynames.py), and read as written:

- a function whose ``return`` hands back a decorator call stands for that call: test_vmap_registrations.py's
  ``def dispatch_registrations(...): ... return parametrize("registration", subtests)`` makes
  ``@dispatch_registrations(...)`` a ``@parametrize`` (it renames the test: Note [Parametrizers rename tests]);
  test_sparse_csr.py's ``all_sparse_compressed_layouts()`` too. A module-level ``x = parametrize(...)`` stands for
  its value the same way, and test_sparse.py's ``_sparse_unary_ops = ops(sparse_unary_ufuncs, ...)`` is an ``@ops``.
- a function or assignment that hands back a decorator deciding where the test runs (``WHERE_IT_RUNS``: a skip,
  an expected failure, a device filter), or what one makes of the function, decides it too: common_utils'
  ``xpassIfTorchDynamo_np`` returns ``func if TEST_WITH_TORCHDYNAMO else unittest.expectedFailure(func)``, so
  outside dynamo its tests are expected to fail, and the test lists show it. What its body calls on the way does
  not count (``instantiate_parametrized_tests`` runs the parametrizers but decides nothing of where tests run).

Returns are read through at most ``HELPER_DEPTH`` helpers (a helper returning another's call, or its own).
"""

from __future__ import annotations

import ast
import re
import textwrap

from ..graph.pynames import pynames
from ..graph.source_lines import file_lines
from ..link.pyclasses import module_of
from ..model import PyDefKind
from ..store.reader import Index
from .testlist import runs_where
from .testnames import callable_of

HELPER_DEPTH = 3
_DEF = (ast.FunctionDef, ast.AsyncFunctionDef)


_BLOCK = 2000  # lines a statement read alone may span
_PARSE_ERRORS = (SyntaxError, ValueError, RecursionError, MemoryError)


def parsed(ix: Index, path: str) -> ast.Module | None:
    """The file's AST (None when it does not parse), memoised per index version: only where a statement read alone
    does not parse (a file can be 1.2 MB: common_methods_invocations.py takes 0.7 s)."""
    trees: dict[str, ast.Module | None] = ix.cached("parsed_test_files", dict)
    if path not in trees:
        try:
            trees[path] = ast.parse("\n".join(file_lines(ix, path)))
        except _PARSE_ERRORS:
            trees[path] = None
    return trees[path]


def statement_at(ix: Index, path: str, line: int, kinds: tuple[type, ...], whole: bool = True) -> ast.AST | None:
    """The statement of one of ``kinds`` starting at ``line`` of ``path`` (a def's line, past its decorators),
    parsed alone: its lines up to the next one indented no deeper (memoised per index version); with ``whole``,
    the whole file parsed when those do not parse alone (a string's lines at column 0), for a line the index
    knows a definition starts at."""
    memo: dict[tuple[str, int], ast.AST | None] = ix.cached("statements_at", dict)
    if (path, line) not in memo:
        node = _alone(file_lines(ix, path), line)
        if node is None and whole and (tree := parsed(ix, path)) is not None:
            node = next((n for n in ast.walk(tree) if isinstance(n, (*_DEF, ast.ClassDef, ast.Assign)) and
                         n.lineno == line), None)
        memo[(path, line)] = node
    found = memo[(path, line)]
    return found if isinstance(found, kinds) else None


def _alone(lines: list[str], line: int) -> ast.stmt | None:
    if not 0 < line <= len(lines):
        return None
    first = lines[line - 1]
    indent, end = len(first) - len(first.lstrip()), line
    while end < len(lines) and end - line < _BLOCK:
        text = lines[end].strip()
        if text and not text.startswith(("#", ")", "]", "}")) and len(lines[end]) - len(lines[end].lstrip()) <= indent:
            break
        end += 1
    try:
        tree = ast.parse(textwrap.dedent("\n".join(lines[line - 1:end])))
    except _PARSE_ERRORS:
        return None
    if not tree.body:
        return None
    ast.increment_lineno(tree, line - 1)
    return tree.body[0]


def definition(ix: Index, path: str, written: str) -> tuple[str, ast.AST] | None:
    """(file, its def or assignment) that the callable ``written`` in file ``path`` names, or None."""
    memo: dict[tuple[str, str], tuple[str, ast.AST] | None] = ix.cached("decorator_definitions", dict)
    key = (path, written)
    if key not in memo:
        memo[key] = _definition(ix, path, written)
    return memo[key]


def _definition(ix: Index, path: str, written: str) -> tuple[str, ast.AST] | None:
    if "." not in written:
        here = _module_level(ix, path, written)
        if here is not None:
            return path, here
    names = pynames(ix)
    d = names.definition(names.resolve_in(module_of(path), written))
    if d is None or d.kind not in (PyDefKind.FUNCTION, PyDefKind.ASSIGN) or d.cls:
        return None
    node = statement_at(ix, d.loc.path, d.loc.line, (*_DEF, ast.Assign))
    return (d.loc.path, node) if node is not None else None


def _module_level(ix: Index, path: str, name: str) -> ast.AST | None:
    """The last module-level def of ``name`` in file ``path`` (the one bound when the tests run), else its last
    assignment (``parametrize_axis = parametrize(...)``); one in an if or try block counts, one in a def or a
    class does not. Found in the text, each read alone (statement_at)."""
    lines = file_lines(ix, path)
    pattern = re.compile(rf"\s*(?:(?:async\s+)?def\s+{re.escape(name)}\s*\(|{re.escape(name)}\s*(?::[^=]*)?=(?!=))")
    defs: list[int] = []
    assigns: list[int] = []
    for i, text in enumerate(lines):
        if name in text and pattern.match(text) and _at_module_level(lines, i):
            (defs if text.lstrip().startswith(("def ", "async ")) else assigns).append(i + 1)
    for line in (defs[-1:] or assigns[-1:]):
        return statement_at(ix, path, line, (*_DEF, ast.Assign), whole=False)
    return None


def _at_module_level(lines: list[str], i: int) -> bool:
    """Whether line ``i`` starts a statement at module level or in an if/try/with block there: each line it is
    indented under opens a block (ends with ``:``) and none is a def or a class (``dtypes=[...]`` indented under
    ``@ops(`` is a keyword argument, not a statement)."""
    indent = len(lines[i]) - len(lines[i].lstrip())
    while indent and i:
        i -= 1
        text = lines[i].split("#", 1)[0].strip()
        depth = len(lines[i]) - len(lines[i].lstrip())
        if text and depth < indent:
            if text.startswith(("def ", "async def ", "class ")) or not text.endswith(":"):
                return False
            indent = depth
    return True


def returned_calls(node: ast.AST) -> list[ast.Call]:
    """The calls a helper hands back: each ``return`` of a def (its own, not its nested defs'), both arms of a
    conditional one; the value of an assignment."""
    values: list[ast.expr] = []
    if isinstance(node, ast.Assign):
        values.append(node.value)
    elif isinstance(node, _DEF):
        todo: list[ast.AST] = list(node.body)
        while todo:
            n = todo.pop()
            if isinstance(n, (*_DEF, ast.ClassDef, ast.Lambda)):
                continue
            if isinstance(n, ast.Return) and n.value is not None:
                values.append(n.value)
            todo.extend(ast.iter_child_nodes(n))
    out: list[ast.Call] = []
    while values:
        v = values.pop()
        if isinstance(v, ast.IfExp):
            values += [v.body, v.orelse]
        elif isinstance(v, ast.Call):
            out.append(v)
    return out


def stands_for(ix: Index, path: str, decorator: str, depth: int = 0) -> list[tuple[str, str]]:
    """The decorators (file they are written in, text) that ``decorator`` on a test of ``path`` hands back (Note
    [Decorators read from their definition]): those its helper returns, through helpers returning helpers' calls;
    [] when it is not such a helper."""
    name = callable_of(decorator)
    found = definition(ix, path, name) if name else None
    if found is None or depth >= HELPER_DEPTH:
        return []
    where, node = found
    out: list[tuple[str, str]] = []
    for call in returned_calls(node):
        text = ast.unparse(call)
        out.append((where, text))
        out += stands_for(ix, where, text, depth + 1)
    return out


def decides_where(ix: Index, path: str, decorator: str) -> bool:
    """Whether a decorator whose name is not one of WHERE_IT_RUNS decides where the test runs by what it is
    defined as: it hands back one that does (``return func if ... else unittest.expectedFailure(func)``; Note
    [Decorators read from their definition]). What its body calls on the way does not count
    (instantiate_parametrized_tests runs the parametrizers, and decides nothing of where a test runs)."""
    return any(runs_where(text) for _p, text in stands_for(ix, path, decorator))
