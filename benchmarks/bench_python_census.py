#!/usr/bin/env python3
"""The Python layer, complete by construction: optimizers, nn modules and test files, from the tree itself.

Everything asked about is enumerated with ``ast`` from the tree, then asked over MCP stdio
(``torchtalk serve``, as an agent would; tt_adapter.McpStdio):

- optimizers: for each module of torch/optim that defines an optimizer (a class whose bases
  reach ``Optimizer``), the ``torch._foreach_*`` / ``torch._fused_*`` calls the module makes,
  against the ops ``trace_module(<class>)`` reaches. A miss says how far the walk got: the
  function making the call was never reached, or reached and not expanded.
- nn modules: for each class of torch/nn/modules with its own ``forward``, the ``F.x`` calls of
  that forward (``F`` being whatever name the file binds to torch.nn.functional), against the
  calls ``trace_module(<class>)`` resolves to ``torch.nn.functional.x``.
- submodules: for each class of torch/** with its own ``forward``, the calls ``self.x(...)`` of
  that forward where the class's own methods set ``self.x = C(...)`` and ``C`` names one class of
  torch/** (by its name, the one class of that name; the nearest ``forward`` of ``C`` and its bases,
  by name), against the call tree of ``trace_module(<class>)``: is ``self.x`` resolved to it?
- local callables: for each class of torch/** with its own ``forward``, the calls of that forward
  of a bare name its module does not bind (not a builtin either): a loop variable
  (``for mod in self.layers: mod(x)``), a parameter, a nested function or another local, and the
  calls of an item of a container (``self.tail[i](x)``); is the call in the call tree of
  ``trace_module(<class>)`` (followed, or named as not followed)?
- test files: for each test/**/test_*.py file with 1 to 60 tests (``def test_*`` in a class
  body, or at module level), the tests against what ``test_file_info(<file>)`` lists (class,
  name and line), in its first answer.
- hand-written bindings: every entry of the PyMethodDef tables in the binding templates
  (tools/autograd/templates/python_*.cpp, their hand-written entries) and the manual binding
  files (torch/csrc/autograd/python_variable.cpp, python_*_functions_manual.cpp), whose
  namespace the file's name says (python_variable* -> Tensor, python_torch_functions* -> torch,
  python_X_functions* -> torch._C._X): does ``trace(<namespace>.<entry>)`` show the entry's
  function as a binding of an op it answers with?

Prints the fraction of each and the misses by reason. Targets: optimizers >= 0.95, modules
>= 0.99, test listing >= 0.95.

    python benchmarks/bench_python_census.py --source /path/to/pytorch [--json out.json] [--max-tests 60]
"""

from __future__ import annotations

import argparse
import ast
import json
import os
import re
import sys
import time
from collections import Counter, defaultdict
from collections.abc import Iterator
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

import tt_adapter as tt  # noqa: I001

OPTIM_DIR = "torch/optim"
NN_DIR = "torch/nn/modules"
OP_PREFIXES = ("_foreach_", "_fused_")
TARGETS = {"optimizers": 0.95, "modules": 0.99, "tests": 0.95}


def parse(path: Path) -> ast.Module | None:
    try:
        return ast.parse(path.read_bytes())
    except (SyntaxError, ValueError):
        return None


def parsed_files(root: Path, folder: str, pattern: str = "*.py") -> Iterator[tuple[str, ast.Module]]:
    """(path relative to the tree, its ast) of the .py files of one folder (not below it, unless ``pattern`` says
    so: "**/*.py"), in name order."""
    for path in sorted((root / folder).glob(pattern)):
        tree = parse(path)
        if tree is not None:
            yield path.relative_to(root).as_posix(), tree


def module_name(rel: str) -> str:
    return rel.removesuffix(".py").removesuffix("/__init__").replace("/", ".")


# ------------------------------------------------------------------ what the tree says

def _functions(tree: ast.AST, prefix: str = "") -> list[tuple[str, ast.AST]]:
    """(qualified name, def) of every function, nested ones included."""
    out: list[tuple[str, ast.AST]] = []
    for node in ast.iter_child_nodes(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            out.append((prefix + node.name, node))
            out += _functions(node, prefix + node.name + ".")
        elif isinstance(node, ast.ClassDef):
            out += _functions(node, prefix + node.name + ".")
        else:
            out += _functions(node, prefix)
    return out


def optimizer_calls(root: Path) -> dict[str, dict]:
    """optimizer class -> {"module", "file", "calls": {op name: [enclosing function fq]}} for torch/optim."""
    out: dict[str, dict] = {}
    for rel, tree in parsed_files(root, OPTIM_DIR):
        classes = [n.name for n in tree.body if isinstance(n, ast.ClassDef) and not n.name.startswith("_")
                   and any((b.id if isinstance(b, ast.Name) else getattr(b, "attr", "")) == "Optimizer"
                           for b in n.bases)]
        if not classes:
            continue
        calls: dict[str, list[str]] = defaultdict(list)
        mod = module_name(rel)
        for fq, fn in _functions(tree):
            for node in ast.walk(fn):
                if (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
                        and isinstance(node.func.value, ast.Name) and node.func.value.id == "torch"
                        and node.func.attr.startswith(OP_PREFIXES)):
                    where = f"{mod}.{fq}"
                    if where not in calls[node.func.attr]:
                        calls[node.func.attr].append(where)
        for cls in classes:
            out[cls] = {"module": mod, "file": rel, "calls": dict(calls)}
    return out


def _functional_aliases(tree: ast.Module, module: str) -> set[str]:
    """Names the file binds to torch.nn.functional: ``import torch.nn.functional as F``, ``from torch.nn import
    functional as F``, ``from .. import functional as F`` (relative to the file's package)."""
    names = set()
    package = module.rsplit(".", 1)[0]
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names |= {a.asname for a in node.names if a.name == "torch.nn.functional" and a.asname}
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parent = package.rsplit(".", node.level - 1)[0] if node.level > 1 else package
                base = f"{parent}.{base}" if base else parent
            for a in node.names:
                if f"{base}.{a.name}" == "torch.nn.functional":
                    names.add(a.asname or a.name)
    return names


def module_calls(root: Path) -> dict[str, dict]:
    """nn module class -> {"file", "line", "calls": {F.x name: [lines]}} for classes of torch/nn/modules whose own
    forward calls F.x."""
    out: dict[str, dict] = {}
    for rel, tree in parsed_files(root, NN_DIR):
        aliases = _functional_aliases(tree, module_name(rel))
        for cls in (n for n in tree.body if isinstance(n, ast.ClassDef)):
            fwd = next((f for f in cls.body if isinstance(f, ast.FunctionDef) and f.name == "forward"), None)
            if fwd is None:
                continue
            calls: dict[str, list[int]] = defaultdict(list)
            for node in ast.walk(fwd):
                if (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
                        and isinstance(node.func.value, ast.Name) and node.func.value.id in aliases):
                    calls[node.func.attr].append(node.lineno)
            if calls:
                out[f"{module_name(rel)}.{cls.name}"] = {"file": rel, "line": cls.lineno, "calls": dict(calls)}
    return out


def submodule_calls(root: Path) -> dict[str, dict]:
    """class -> {"calls": {"self.x": expected forward fq}} for the ``self.x(...)`` calls of a torch/** class's own
    forward whose attribute the class's own methods set to an instance of a torch/** class (one of its name)."""
    classes: dict[str, list[tuple[str, ast.ClassDef]]] = defaultdict(list)  # name -> (module, class)
    for rel, tree in parsed_files(root, "torch", "**/*.py"):
        for cls in (n for n in tree.body if isinstance(n, ast.ClassDef)):
            classes[cls.name].append((module_name(rel), cls))

    def forward_of(name: str, seen: frozenset[str] = frozenset()) -> str | None:
        found = classes.get(name, [])
        if len(found) != 1 or name in seen:
            return None  # unknown here, or ambiguous by name: not asked
        module, cls = found[0]
        if any(isinstance(f, ast.FunctionDef) and f.name == "forward" for f in cls.body):
            return f"{module}.{cls.name}.forward"
        for base in cls.bases:
            b = base.attr if isinstance(base, ast.Attribute) else base.id if isinstance(base, ast.Name) else ""
            got = forward_of(b, seen | {name}) if b else None
            if got is not None:
                return got
        return None

    out: dict[str, dict] = {}
    for name, defs in classes.items():
        for module, cls in defs:
            methods = [f for f in cls.body if isinstance(f, ast.FunctionDef)]
            fwd = next((f for f in methods if f.name == "forward"), None)
            if fwd is None:
                continue
            made: dict[str, set[str]] = defaultdict(set)
            for f in methods:
                for node in ast.walk(f):
                    if isinstance(node, ast.Assign) and isinstance(node.value, ast.Call):
                        ctor = node.value.func
                        ctor_name = ctor.attr if isinstance(ctor, ast.Attribute) else getattr(ctor, "id", "")
                        for t in node.targets:
                            if (isinstance(t, ast.Attribute) and isinstance(t.value, ast.Name)
                                    and t.value.id == "self" and ctor_name):
                                made[t.attr].add(ctor_name)
            calls: dict[str, str] = {}
            for node in ast.walk(fwd):
                if (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
                        and isinstance(node.func.value, ast.Name) and node.func.value.id == "self"
                        and len(made.get(node.func.attr, ())) == 1):
                    expected = forward_of(next(iter(made[node.func.attr])))
                    if expected is not None:
                        calls[f"self.{node.func.attr}"] = expected
            if calls:
                out[f"{module}.{name}"] = {"calls": calls}
    return out


def _module_names(tree: ast.Module) -> set[str]:
    """The names a module binds at its top level (through if/try/with/for blocks): defs, classes, imports,
    assignment and loop targets; any name when it has a star import (None of its names is then known here)."""
    out: set[str] = set()
    stack: list[ast.AST] = list(tree.body)
    while stack:
        s = stack.pop()
        if isinstance(s, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            out.add(s.name)
            continue
        if isinstance(s, (ast.Import, ast.ImportFrom)):
            out.update((a.asname or a.name).split(".")[0] for a in s.names)
            if any(a.name == "*" for a in s.names):
                out.add("*")
            continue
        for node in ast.iter_child_nodes(s):
            if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
                out.add(node.id)
            elif isinstance(node, (ast.stmt, ast.excepthandler, ast.expr)):
                stack.append(node)
    return out


def local_callable_calls(root: Path) -> dict[str, dict[str, tuple[str, list[int]]]]:
    """class -> {name: (how it is bound, lines)} for the calls of a bare name in a torch/** class's own forward that
    its module does not bind and that is no builtin: a loop variable, a parameter, a nested function, another local.
    Files with a star import are left out (what their names are is not known here)."""
    import builtins
    out: dict[str, dict[str, tuple[str, list[int]]]] = {}
    for rel, tree in parsed_files(root, "torch", "**/*.py"):
        module_names = _module_names(tree)
        if "*" in module_names:
            continue
        for cls in (n for n in tree.body if isinstance(n, ast.ClassDef)):
            fwd = next((f for f in cls.body if isinstance(f, ast.FunctionDef) and f.name == "forward"), None)
            if fwd is None:
                continue
            a = fwd.args
            params = {p.arg for p in (*a.posonlyargs, *a.args, *a.kwonlyargs, a.vararg, a.kwarg) if p}
            loops, nested, assigned = set(), set(), set()
            for node in _own_nodes(fwd):
                if isinstance(node, (ast.For, ast.comprehension)):
                    loops |= {n.id for n in ast.walk(node.target) if isinstance(n, ast.Name)}
                elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                    nested.add(node.name)
                elif isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
                    assigned.add(node.id)
            calls: dict[str, tuple[str, list[int]]] = {}
            for node in _own_nodes(fwd):
                if isinstance(node, ast.Call) and isinstance(node.func, ast.Subscript) and (
                        held := _dotted(node.func.value)):  # self.tail[i](x): an item of a container
                    calls.setdefault(f"{held}[]", ("container item", []))[1].append(node.lineno)
                    continue
                if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Name)):
                    continue
                name = node.func.id
                if name in module_names or (name in dir(builtins) and name not in params | loops | nested | assigned):
                    continue
                how = ("nested function" if name in nested else "parameter" if name in params else
                       "loop variable" if name in loops else "local")
                calls.setdefault(name, (how, []))[1].append(node.lineno)
            if calls:
                out[f"{module_name(rel)}.{cls.name}"] = calls
    return out


_BLOCKS = ("body", "orelse", "finalbody", "handlers")


def _defs_in_body(body: list) -> list[ast.AST]:
    """Function definitions at statement level of a body, through if/try/with/for blocks (not into defs)."""
    out: list[ast.AST] = []
    for s in body:
        if isinstance(s, (ast.FunctionDef, ast.AsyncFunctionDef)):
            out.append(s)
        elif not isinstance(s, ast.ClassDef):
            for f in _BLOCKS:
                sub = getattr(s, f, None)
                if isinstance(sub, list):
                    out += _defs_in_body(sub)
            if isinstance(s, ast.ExceptHandler):
                out += _defs_in_body(s.body)
    return out


def _classes(node: ast.AST) -> list[ast.ClassDef]:
    """Every class of a file but those local to a test (a class a test body defines is data, not a test class)."""
    out: list[ast.ClassDef] = []
    for child in ast.iter_child_nodes(node):
        if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef)) and child.name.startswith("test"):
            continue
        if isinstance(child, ast.ClassDef):
            out.append(child)
        out += _classes(child)
    return out


def file_tests(tree: ast.Module) -> list[tuple[str, str, int]]:
    """(class or "", name, line) of every ``def test_*`` in a class body or at module level."""
    out = [("", f.name, f.lineno) for f in _defs_in_body(tree.body) if f.name.startswith("test_")]
    for c in _classes(tree):
        out += [(c.name, f.name, f.lineno) for f in _defs_in_body(c.body) if f.name.startswith("test_")]
    return sorted(out, key=lambda t: t[2])


def test_files(root: Path, max_tests: int) -> dict[str, list[tuple[str, str, int]]]:
    out = {}
    for path in sorted((root / "test").rglob("test_*.py")):
        if not path.is_file():
            continue
        tree = parse(path)
        if tree is None:
            continue
        tests = file_tests(tree)
        if 0 < len(tests) <= max_tests:
            out[path.relative_to(root).as_posix()] = tests
    return out


_BINDING_FILE = re.compile(r"^python_(?:(variable)(?:_methods)?|(\w+?)_functions)(?:_manual)?\.cpp$")
_TABLE = re.compile(r"PyMethodDef\s+\w+\[\]\s*=\s*\{(.*?)\n\};", re.S)
_ENTRY = re.compile(r"\{\s*\"(\w+)\"\s*,\s*([^{}]*?),\s*METH_")
_CASTS = frozenset({"castPyCFunctionWithKeywords", "castPyCFunctionFast", "PyCFunction", "PyCFunctionWithKeywords",
                    "TypeError_to_NotImplemented_", "void"})


def binding_entries(root: Path) -> list[tuple[str, str, str, int]]:
    """(Python name, function, file, line) of every PyMethodDef entry written by hand in the binding files."""
    out = []
    files = sorted((root / "tools/autograd/templates").glob("python_*.cpp")) + \
        sorted((root / "torch/csrc/autograd").glob("python_*.cpp"))
    for path in files:
        m = _BINDING_FILE.match(path.name)
        if not m:
            continue
        owner = "Tensor" if m.group(1) else "torch" if m.group(2) == "torch" else f"torch._C._{m.group(2)}"
        text = path.read_text(encoding="utf-8", errors="replace")
        for table in _TABLE.finditer(text):
            for e in _ENTRY.finditer(table.group(1)):
                fn = [w for w in re.findall(r"\w+", e.group(2)) if w not in _CASTS]
                line = text.count("\n", 0, table.start(1) + e.start()) + 1
                out.append((f"{owner}.{e.group(1)}", fn[-1] if fn else "?", path.relative_to(root).as_posix(), line))
    return out


_TYPE_OBJECT = re.compile(r"PyTypeObject\s+([\w:]+)\s*=\s*\{\s*PyVarObject_HEAD_INIT\([^)]*\)\s*\"([\w.]+)\"")
_TP_METHODS = re.compile(r"(\w+)\s*\)*\s*,\s*/\*\s*tp_methods\s*\*/|\b(\w+)\.tp_methods\s*=\s*(?:std::data\()?(\w+)")
# T[] = {, initializer_list<PyMethodDef> T = {
_TYPE_TABLE = re.compile(r"PyMethodDef\s*>?\s+(\w+)\s*(?:\[\s*\])?\s*=\s*\{")
_TYPE_ENTRY = re.compile(r"\{\s*(?:\(\s*(?:const\s+)?char\s*\*\s*\))?\s*\"(\w+)\"\s*,\s*([^{}]*?),\s*METH_")


def _braced(text: str, i: int) -> str:
    """What is inside the brace at ``text[i]`` and its match (braces in strings and comments are not counted)."""
    depth, j = 0, i
    while j < len(text):
        c = text[j]
        if c == '"':
            j = text.index('"', j + 1) if text.find('"', j + 1) >= 0 else len(text)
            while text[j - 1] == "\\":
                j = text.index('"', j + 1)
        elif text.startswith("//", j) or text.startswith("/*", j):
            end = text.find("\n" if text[j + 1] == "/" else "*/", j + 2)
            j = len(text) if end < 0 else end
        elif c == "{":
            depth += 1
        elif c == "}":
            depth -= 1
            if depth == 0:
                return text[i + 1:j]
        j += 1
    return text[i + 1:]


def type_method_entries(root: Path) -> list[tuple[str, str, str, int]]:
    """(Python name, function, file, line) of every PyMethodDef entry of a table that a PyTypeObject of the tree's
    C++ takes as its tp_methods (in its initializer, CPython's ``table, /* tp_methods */``, or ``T.tp_methods =
    table``): ``torch._C._EngineBase.run_backward``, ``torch.Size.numel``, ``torch._C.Generator.manual_seed``."""
    out = []
    for folder in ("torch/csrc", "functorch/csrc"):
        for path in sorted((root / folder).rglob("*.cpp")):
            text = path.read_text(encoding="utf-8", errors="replace")
            if "tp_methods" not in text:
                continue
            types = list(_TYPE_OBJECT.finditer(text))
            by_var = {t.group(1): t.group(2) for t in types}
            owners: dict[str, str] = {}
            for m in _TP_METHODS.finditer(text):
                if m.group(1):  # in an initializer: the nearest type object above it
                    above = [t for t in types if t.start() < m.start()]
                    if above and m.group(1) not in ("nullptr", "NULL", "0"):
                        owners[m.group(1)] = above[-1].group(2)
                elif m.group(2) in by_var:
                    owners[m.group(3)] = by_var[m.group(2)]
            for table in _TYPE_TABLE.finditer(text):
                owner = owners.get(table.group(1))
                if owner is None:
                    continue
                body = _braced(text, table.end() - 1)
                for e in _TYPE_ENTRY.finditer(body):
                    fn = [w for w in re.findall(r"\w+", e.group(2)) if w not in _CASTS]
                    line = text.count("\n", 0, table.end() + e.start()) + 1
                    out.append((f"{owner}.{e.group(1)}", fn[-1] if fn else "?", path.relative_to(root).as_posix(),
                                line))
    return out


def c_calls(root: Path) -> dict[str, str]:
    """Python name written ``torch._C.<name>(...)`` -> the first function of torch/** (module level, or a method of a
    module-level class) calling it, by its full name."""
    out: dict[str, str] = {}
    for rel, tree in parsed_files(root, "torch", "**/*.py"):
        module = module_name(rel)
        defs = (ast.FunctionDef, ast.AsyncFunctionDef)
        scopes = [(f"{module}.{f.name}", f) for f in tree.body if isinstance(f, defs)]
        scopes += [(f"{module}.{c.name}.{f.name}", f) for c in tree.body if isinstance(c, ast.ClassDef)
                   for f in c.body if isinstance(f, defs)]
        for fq, fn in scopes:
            for node in _own_nodes(fn):
                if isinstance(node, ast.Call):
                    name = _dotted(node.func)
                    if name and name.startswith("torch._C.") and name not in out:
                        out[name] = fq
    return out


_BUILTIN_VALUES = (ast.Dict, ast.DictComp, ast.List, ast.ListComp, ast.Set, ast.SetComp, ast.Tuple, ast.JoinedStr)
_BUILTIN_CALLS = frozenset({"set", "dict", "list", "tuple", "frozenset", "sorted", "str"})


def _builtin_value(v: ast.AST) -> bool:
    """A literal, comprehension or f-string, or a call of a builtin container's constructor (``set()``)."""
    if isinstance(v, _BUILTIN_VALUES):
        return True
    return isinstance(v, ast.Call) and isinstance(v.func, ast.Name) and v.func.id in _BUILTIN_CALLS


def tensor_methods(root: Path) -> set[str]:
    """Names of the ops native_functions.yaml gives a method variant (``add``, ``values``, ``sort``)."""
    text = (root / "aten/src/ATen/native/native_functions.yaml").read_text()
    out: set[str] = set()
    for entry in re.split(r"\n(?=- func:)", text):
        m = re.match(r"\s*-?\s*func:\s*([\w]+)", entry)
        if m and re.search(r"\n\s*variants:[^\n]*\bmethod\b", entry):
            out.add(m.group(1))
    return out


def builtin_receiver_calls(root: Path) -> list[tuple[str, str, int]]:
    """(function full name, ``x.m`` as written, line) for each method call of torch/** functions (module level, or
    methods of module-level classes) whose receiver ``x`` is a local every binding of which, in the function's own
    body, assigns a builtin container or an f-string (parameters, unpacking, loop targets, global / nonlocal names
    excluded), and whose method ``m`` is also a Tensor method's name."""
    methods = tensor_methods(root)
    out: list[tuple[str, str, int]] = []
    defs = (ast.FunctionDef, ast.AsyncFunctionDef)
    for rel, tree in parsed_files(root, "torch", "**/*.py"):
        module = module_name(rel)
        scopes = [(f"{module}.{f.name}", f) for f in tree.body if isinstance(f, defs)]
        scopes += [(f"{module}.{c.name}.{f.name}", f) for c in tree.body if isinstance(c, ast.ClassDef)
                   for f in c.body if isinstance(f, defs)]
        for fq, fn in scopes:
            nodes = list(_own_nodes(fn))
            stores: Counter[str] = Counter()
            builtin: Counter[str] = Counter()
            excluded = {a.arg for a in ast.walk(fn.args) if isinstance(a, ast.arg)}
            for n in nodes:
                if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store):
                    stores[n.id] += 1
                elif isinstance(n, ast.Assign) and _builtin_value(n.value):
                    builtin.update(t.id for t in n.targets if isinstance(t, ast.Name))
                elif isinstance(n, (ast.Global, ast.Nonlocal)):
                    excluded.update(n.names)
            for n in ast.walk(fn):  # a nested function's nonlocal rebinds this one's name
                if isinstance(n, ast.Nonlocal):
                    excluded.update(n.names)
            typed = {x for x, k in stores.items() if k == builtin[x] and x not in excluded}
            for n in nodes:
                if (isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute) and isinstance(n.func.value, ast.Name)
                        and n.func.value.id in typed and n.func.attr in methods):
                    out.append((fq, f"{n.func.value.id}.{n.func.attr}", n.lineno))
    return out


_FUNC_LINE = re.compile(r"^- func: (\w+)(?:\.(\w+))?\((.*)\) ->", re.M)
_PUBLIC_DIRS = ("torch/nn", "torch/optim")


def out_overloads(root: Path) -> dict[str, tuple[set[str], set[str]]]:
    """Op base name -> (its out= overloads, the others), for the names that have both: an out= overload takes a
    written-to (``(a!)``) argument after ``*``."""
    text = (root / "aten/src/ATen/native/native_functions.yaml").read_text()
    out: dict[str, tuple[set[str], set[str]]] = {}
    for m in _FUNC_LINE.finditer(text):
        name, overload, args = m.group(1), m.group(2), m.group(3)
        full = f"{name}.{overload}" if overload else name
        kw = args.split("*,", 1)[1] if "*," in args else ""
        out.setdefault(name, (set(), set()))[0 if "!)" in kw else 1].add(full)
    return {n: v for n, v in out.items() if v[0] and v[1]}


def bound_names(root: Path) -> dict[str, str]:
    """Full name of a module-level name bound to an op's function (``gelu = _add_docstr(torch._C._nn.gelu, ...)`` in
    torch/nn/functional.py, ``vector_norm = _add_docstr(_linalg.linalg_vector_norm, ...)``) -> the op's base name,
    for the names with out= and other overloads."""
    names = out_overloads(root)
    out: dict[str, str] = {}
    for folder in ("torch/nn", "torch/linalg", "torch/special", "torch/fft"):
        for rel, tree in parsed_files(root, folder, "**/*.py"):
            for s in tree.body:
                if (isinstance(s, ast.Assign) and len(s.targets) == 1 and isinstance(s.targets[0], ast.Name)
                        and isinstance(s.value, ast.Call) and (_dotted(s.value.func) or "").endswith("_add_docstr")
                        and s.value.args and (op := (_dotted(s.value.args[0]) or "").rsplit(".", 1)[-1]) in names):
                    out[f"{module_name(rel)}.{s.targets[0].id}"] = op
    return out


def _imported(tree: ast.Module, module: str) -> dict[str, str]:
    """A module's top-level import aliases -> the full names they stand for (``F`` -> torch.nn.functional)."""
    out: dict[str, str] = {}
    for s in tree.body:
        if isinstance(s, ast.Import):
            out.update({a.asname: a.name for a in s.names if a.asname})
        elif isinstance(s, ast.ImportFrom) and s.module and not s.level:
            out.update({a.asname or a.name: f"{s.module}.{a.name}" for a in s.names})
        elif isinstance(s, ast.ImportFrom) and s.level:  # from .functional import gelu
            base = module.rsplit(".", s.level)[0] + (f".{s.module}" if s.module else "")
            out.update({a.asname or a.name: f"{base}.{a.name}" for a in s.names})
    return out


def out_calls(root: Path, bound: bool = False) -> list[tuple[str, str, int, bool, str]]:
    """(function full name, the callee as written, line, passes out=, op base name) for each call ``torch.X(...)``
    of the functions of torch/nn and torch/optim (module level, or methods of module-level classes) where X has out=
    and other overloads and the call passes no ``**mapping``; with ``bound``, instead, each call of a name bound to
    such an op's function (``F.gelu(x)``, ``gelu(x)`` in torch/nn/functional.py: ``bound_names``)."""
    names = out_overloads(root)
    aliases = bound_names(root) if bound else {}
    found: list[tuple[str, str, int, bool, str]] = []
    defs = (ast.FunctionDef, ast.AsyncFunctionDef)
    for folder in _PUBLIC_DIRS:
        for rel, tree in parsed_files(root, folder, "**/*.py"):
            module = module_name(rel)
            imported = _imported(tree, module) if bound else {}
            scopes = [(f"{module}.{f.name}", f) for f in tree.body if isinstance(f, defs)]
            scopes += [(f"{module}.{c.name}.{f.name}", f) for c in tree.body if isinstance(c, ast.ClassDef)
                       for f in c.body if isinstance(f, defs)]
            for fq, fn in scopes:
                for n in _own_nodes(fn):
                    if not isinstance(n, ast.Call):
                        continue
                    name = _dotted(n.func)
                    if not name or not all(k.arg for k in n.keywords) or any(
                            isinstance(a, ast.Starred) for a in n.args):
                        continue
                    head, _, rest = name.partition(".")
                    full = f"{imported[head]}.{rest}".rstrip(".") if head in imported else \
                        f"{module}.{name}" if f"{module}.{name}" in aliases else name
                    op = aliases.get(full) if bound else name[6:] if (
                        name.startswith("torch.") and name.count(".") == 1 and name[6:] in names) else None
                    if op:
                        found.append((fq, name, n.lineno, any(k.arg == "out" for k in n.keywords), op))
    return found


def _own_nodes(fn: ast.AST) -> Iterator[ast.AST]:
    """The nodes of a function's own body: not those of the functions, lambdas and classes defined in it."""
    stack = list(ast.iter_child_nodes(fn))
    while stack:
        node = stack.pop()
        yield node
        if not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef)):
            stack.extend(ast.iter_child_nodes(node))


def _dotted(node: ast.AST) -> str | None:
    parts = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    return ".".join([node.id, *reversed(parts)]) if isinstance(node, ast.Name) else None


# ------------------------------------------------------------------ what TorchTalk answers

def _tree_targets(calls: list[dict]) -> dict[str, bool]:
    """Every call target in a trace_module call tree -> whether it was expanded (has children)."""
    out: dict[str, bool] = {}
    stack = list(calls)
    while stack:
        n = stack.pop()
        out[n["target"]] = out.get(n["target"], False) or bool(n["children"])
        stack += n["children"]
    return out


def census_optimizers(server: tt.McpStdio, root: Path) -> dict:
    found = optimizer_calls(root)
    asked = reached = 0
    misses: Counter[str] = Counter()
    rows = []
    for cls, info in sorted(found.items()):
        sc, _text = server.tool("trace_module", module_name=f"{info['module']}.{cls}")
        r = sc["result"] if sc.get("kind") == "result" else {}
        ops = {full.split(".")[0] for full in r.get("ops", {})}
        targets = _tree_targets((r.get("entry") or {}).get("calls", []))
        got = 0
        missed = []
        for op, wheres in sorted(info["calls"].items()):
            asked += 1
            if op in ops:
                got += 1
                continue
            if any(targets.get(w) for w in wheres):
                why = "its caller is expanded but the call is not followed"
            elif any(w in targets for w in wheres):
                why = f"its caller ({', '.join(w.rsplit('.', 1)[-1] for w in wheres)}) is reached, not expanded"
            else:
                why = f"its caller ({', '.join(w.rsplit('.', 1)[-1] for w in wheres)}) is not reached"
            misses[why.split(" (")[0] + (why.split(")")[-1] if "(" in why else "")] += 1
            missed.append(f"{op}: {why}")
        reached += got
        rows.append({"class": cls, "file": info["file"], "calls": len(info["calls"]), "reached": got,
                     "ops_reached": len(r.get("ops", {})), "missed": missed})
    return {"asked": asked, "reached": reached, "rows": rows, "misses": dict(misses)}


def census_modules(server: tt.McpStdio, root: Path) -> dict:
    found = module_calls(root)
    asked = reached = with_ops = 0
    misses: Counter[str] = Counter()
    missed = []
    for fq, info in sorted(found.items()):
        sc, _text = server.tool("trace_module", module_name=fq)
        if sc.get("kind") != "result":
            for name in info["calls"]:
                asked += 1
                misses["trace_module did not find the class"] += 1
                missed.append(f"{fq}: F.{name}: class not found")
            continue
        calls = (sc["result"].get("entry") or {}).get("calls", [])
        by_target: dict[str, list[dict]] = defaultdict(list)
        stack = list(calls)
        while stack:
            n = stack.pop()
            by_target[n["target"].split(" = ")[0]].append(n)  # a name bound by assignment: "F.gelu = torch._C..."
            stack += n["children"]
        for name, lines in sorted(info["calls"].items()):
            asked += 1
            nodes = by_target.get(f"torch.nn.functional.{name}", [])
            if nodes:
                reached += 1
                with_ops += any(n["ops"] or n["children"] for n in nodes)
                continue
            written = [n for ns in by_target.values() for n in ns if n["written"].endswith(f".{name}")]
            why = f"resolved to {written[0]['target'] or 'nothing'}" if written else "not in the call tree"
            misses[why if not written else "resolved elsewhere"] += 1
            missed.append(f"{fq}: F.{name} (line {lines[0]}): {why}")
    return {"asked": asked, "reached": reached, "with_ops": with_ops, "classes": len(found),
            "misses": dict(misses), "missed": missed}


def census_submodules(server: tt.McpStdio, root: Path) -> dict:
    found = submodule_calls(root)
    asked = reached = shown_once = 0
    misses: Counter[str] = Counter()
    missed = []
    for fq, info in sorted(found.items()):
        sc, _text = server.tool("trace_module", module_name=fq)
        roots = (sc["result"].get("entry") or {}).get("calls", []) if sc.get("kind") == "result" else []
        targets = defaultdict(set)
        again = set()  # calls of a forward the tree expands at another call (Note [Calls shown once])
        for n in roots:
            targets[n["written"]].add(n["target"])
            if n.get("shown_above"):
                again.add(n["written"])
        for written, expected in sorted(info["calls"].items()):
            asked += 1
            if expected in targets.get(written, ()):
                reached += 1
                shown_once += written in again
                continue
            if targets.get(written):
                why = f"resolved to {sorted(targets[written])}"
                misses["resolved elsewhere"] += 1
            else:
                why = "not in the call tree"
                misses[why] += 1
            missed.append(f"{fq}: {written} -> {expected}: {why}")
    return {"asked": asked, "reached": reached, "shown_once": shown_once, "classes": len(found),
            "misses": dict(misses), "missed": missed}


def census_local_calls(server: tt.McpStdio, root: Path) -> dict:
    found = local_callable_calls(root)
    asked = shown = 0
    by_how: Counter[str] = Counter()
    misses: Counter[str] = Counter()
    missed = []
    for fq, calls in sorted(found.items()):
        sc, _text = server.tool("trace_module", module_name=fq)
        roots = (sc["result"].get("entry") or {}).get("calls", []) if sc.get("kind") == "result" else []
        lines: dict[str, set[int]] = defaultdict(set)
        for n in roots:
            site = n.get("site") or {}
            line = site.get("line", 0) if isinstance(site, dict) else int(str(site).rsplit(":", 1)[-1])
            lines[n["written"]].add(line)
        for name, (how, at) in sorted(calls.items()):
            asked += 1
            if lines.get(name, set()) & set(at):
                shown += 1
                by_how[how] += 1
                continue
            why = ("trace_module did not find the class" if sc.get("kind") != "result" else
                   f"{how}: not in the call tree")
            misses[why] += 1
            missed.append(f"{fq}: {name} (line {at[0]}): {why}")
    return {"asked": asked, "shown": shown, "classes": len(found), "by_how": dict(by_how), "misses": dict(misses),
            "missed": missed}


def census_tests(server: tt.McpStdio, root: Path, max_tests: int) -> dict:
    files = test_files(root, max_tests)
    asked = listed = 0
    misses: Counter[str] = Counter()
    missed: list[str] = []
    sizes = []
    for rel, tests in files.items():
        sc, text = server.tool("test_file_info", file_path=rel)
        sizes.append((len(text), rel))
        if sc.get("kind") != "result":
            asked += len(tests)
            misses["file not indexed"] += len(tests)
            missed.append(f"{rel}: not found ({len(tests)} tests)")
            continue
        page = sc["result"].get("page") or {"tests": [], "next_call": ""}
        shown = Counter((t["cls"], t["name"], t["loc"]["line"]) for t in page["tests"])
        names = Counter((t["cls"], t["name"]) for t in page["tests"])
        for cls, name, line in tests:
            asked += 1
            if shown[(cls, name, line)] > 0:
                shown[(cls, name, line)] -= 1
                listed += 1
                continue
            if names[(cls, name)]:
                why = "listed at another line"
            elif page.get("next_call"):
                why = "not on the first page"
            else:
                why = "not listed"
            misses[why] += 1
            if len(missed) < 60:
                missed.append(f"{rel}:{line} {cls + '.' if cls else ''}{name}: {why}")
    sizes.sort(reverse=True)
    return {"files": len(files), "asked": asked, "listed": listed, "misses": dict(misses), "missed": missed,
            "largest_answers": sizes[:3]}


def census_bindings(server: tt.McpStdio, root: Path) -> dict:
    entries = binding_entries(root)
    linked = 0
    how: Counter[str] = Counter()
    misses: Counter[str] = Counter()
    missed = []
    for pyname, fn, rel, line in entries:
        sc, _text = server.tool("trace", function_name=pyname, focus="dispatch")
        r = sc["result"] if sc.get("kind") == "result" else None
        found = ""
        for o in (r or {}).get("ops", []):
            for b in o.get("handwritten", []):
                if b["python_name"] == pyname and b["function"]["name"] == fn:
                    found = found or f"hand-written, by {b['how']}"
            for b in (o.get("generated") or {}).get("bindings", []):
                if b["python_name"] == pyname and b["function"]["name"] == fn:
                    found = found or "a generated function (its dispatch lambdas)"
        if found:
            linked += 1
            how[found] += 1
            continue
        if r is None:
            why = "trace: not found"
        elif not r.get("ops"):
            why = ("wraps no op: trace finds none below its function" if r.get("bindings")
                   else "trace answers neither an op nor a binding")
        else:
            why = ("wraps no op of its own: trace answers the ops helpers of other files reach below it, "
                   "none its own code calls")
        misses[why] += 1
        missed.append(f"{pyname} -> {fn}  {rel}:{line}: {why}")
    return {"entries": len(entries), "linked": linked, "how": dict(how), "misses": dict(misses), "missed": missed}


def census_type_methods(server: tt.McpStdio, root: Path) -> dict:
    entries = type_method_entries(root)
    linked = 0
    misses: Counter[str] = Counter()
    missed = []
    for pyname, fn, rel, line in entries:
        sc, _text = server.tool("trace", function_name=pyname, focus="dispatch")
        r = sc["result"] if sc.get("kind") == "result" else None
        names = {(b["python_name"], (b.get("function") or {}).get("name")) for b in (r or {}).get("bindings", [])}
        if (pyname, fn) in names:
            linked += 1
            continue
        why = ("trace: not found" if r is None else
               f"bound to {sorted(n for _, n in names)}" if names else "trace answers no binding")
        misses[why.split(" [")[0] if not names else "bound to another function"] += 1
        missed.append(f"{pyname} -> {fn}  {rel}:{line}: {why}")
    return {"entries": len(entries), "linked": linked, "misses": dict(misses), "missed": missed}


def census_c_calls(server: tt.McpStdio, root: Path) -> dict:
    """For each torch._C name Python code calls, in the first function calling it: trace(<function>) shows the call
    bound to the C++ function that trace(<name>) answers (the two paths agree), among the names trace binds."""
    found = c_calls(root)
    bound = linked = 0
    misses: Counter[str] = Counter()
    missed = []
    for name, fq in sorted(found.items()):
        sc, _text = server.tool("trace", function_name=name, focus="dispatch")
        r = sc["result"] if sc.get("kind") == "result" else {}
        want = {(b.get("function") or {}).get("name") for b in r.get("bindings", [])} - {None}
        if not want:
            continue  # an op's binding, a Python class of torch._C, or a name the tree's C++ does not bind (as read)
        bound += 1
        sc, _text = server.tool("trace", function_name=fq, focus="dispatch")
        entry = (sc["result"] or {}).get("entry") if sc.get("kind") == "result" else None
        got = {e["dst"]["label"].split("::")[-1] for e in (entry or {}).get("calls", [])
               if e["src"]["kind"] == "binding" and e["src"]["key"] == name}
        if want & got:
            linked += 1
            continue
        why = ("trace of the function: not found" if entry is None else
               "the walk was cut" if entry.get("cuts") else "the call is not linked to the binding")
        misses[why] += 1
        missed.append(f"{fq}: {name} -> {sorted(want)}: {why}")
    return {"names": len(found), "bound": bound, "linked": linked, "misses": dict(misses), "missed": missed}


def _traced(server: tt.McpStdio, calls: list[tuple[Any, ...]]) -> Iterator[tuple[str, list[tuple[Any, ...]],
                                                                                 dict | None]]:
    """Call sites, the function's full name first, grouped by function: (function, its sites without the name,
    the entry of trace(<function>), None if not found)."""
    by_fn: dict[str, list[tuple[Any, ...]]] = {}
    for fq, *site in calls:
        by_fn.setdefault(fq, []).append(tuple(site))
    for fq, sites in sorted(by_fn.items()):
        sc, _text = server.tool("trace", function_name=fq, focus="dispatch")
        yield fq, sites, (sc["result"] or {}).get("entry") if sc.get("kind") == "result" else None


def census_builtin_receivers(server: tt.McpStdio, root: Path) -> dict:
    """For each builtin_receiver_calls() call: trace(<function>) lists no op for it (before Note [Builtin receivers],
    ``memo.add(m)`` on ``memo = set()`` was taken for a Tensor's ``add``)."""
    calls = builtin_receiver_calls(root)
    right = 0
    misses: Counter[str] = Counter()
    missed = []
    for fq, sites, entry in _traced(server, calls):
        if entry is None:
            misses["trace of the function: not found"] += len(sites)
            missed += [f"{fq}: {w} line {ln}: not found" for w, ln in sites]
            continue
        wrong = {(e["written"], e["site"]["line"]) for e in entry.get("calls", [])
                 if e["dst"]["kind"] == "op" and e.get("site")}
        for written, line in sites:
            if (written, line) in wrong:
                misses["taken for a Tensor method: the call reaches an op"] += 1
                missed.append(f"{fq}: {written} line {line}")
            else:
                right += 1
    return {"calls": len(calls), "functions": len({c[0] for c in calls}), "right": right, "misses": dict(misses),
            "missed": missed}


def census_out_overloads(server: tt.McpStdio, root: Path, bound: bool = False) -> dict:
    """For each out_calls() call: trace(<function>) lists for it the out= overloads of its name when it passes
    out=, and only the others when it does not (Note [Overloads by arguments]: the argument parser needs out=)."""
    calls = out_calls(root, bound)
    outs = out_overloads(root)
    right = 0
    misses: Counter[str] = Counter()
    missed = []
    for fq, sites, entry in _traced(server, calls):
        listed: dict[str, set[str]] = {}  # a call repeated in the function is listed at its first site
        python = set()  # names the function calls as Python functions (torch.norm is torch.functional.norm)
        for e in (entry or {}).get("calls", []):
            if e["src"]["key"] != fq:
                continue  # a call of a function it calls
            if e["dst"]["kind"] == "op":
                listed.setdefault(e["written"], set()).add(e["dst"]["key"])
            elif e.get("written"):
                python.add(e["written"])
        for written, line, passes, op in sites:
            out_set = outs[op][0]
            got = listed.get(written, set())
            if any(p != passes for w, _ln, p, _op in sites if w == written):  # with out= and without: both kinds
                got = got - out_set if not passes else got & out_set
            if not got:
                why = ("a Python function of that name, whose own calls reach the ops" if written in python else
                       "no op listed at the call: the walk lists an op once, and another call reached them first")
            elif passes and not got <= out_set:
                why = "passes out=, but other overloads are listed"
            elif not passes and got & out_set:
                why = "passes no out=, but an out= overload is listed"
            else:
                right += 1
                continue
            misses[why] += 1
            missed.append(f"{fq}: {written} line {line}: {why} ({sorted(got)[:4]})")
    return {"calls": len(calls), "functions": len({c[0] for c in calls}), "with_out": sum(c[3] for c in calls),
            "right": right, "misses": dict(misses), "missed": missed}


# ------------------------------------------------------------------ report

def _misses(row: dict, limit: int | None = 20) -> None:
    """A census row's misses by reason, most first, then the first ``limit`` missed (None: all)."""
    for why, n in sorted(row["misses"].items(), key=lambda kv: -kv[1]):
        print(f"  missed, {why}: {n}")
    for m in row["missed"][:limit]:
        print(f"    {m}")


def frac(a: int, b: int) -> str:
    return f"{a}/{b} = {a / b:.3f}" if b else "n/a"


def main(argv: list[str] | None = None) -> int:
    def flags(ap: argparse.ArgumentParser) -> None:
        ap.add_argument("--max-tests", type=int, default=60,
                        help="test files with at most this many tests (default 60)")

    args = tt.bench_args(__doc__, argv, flags)
    t0 = time.monotonic()
    try:
        h = tt.open_index(args.source)  # the index must exist: the server would otherwise build it first
        with tt.McpStdio(h.root, dict(os.environ)) as server:
            opt = census_optimizers(server, h.root)
            mods = census_modules(server, h.root)
            subs = census_submodules(server, h.root)
            local = census_local_calls(server, h.root)
            tests = census_tests(server, h.root, args.max_tests)
            binds = census_bindings(server, h.root)
            types = census_type_methods(server, h.root)
            ccalls = census_c_calls(server, h.root)
            recv = census_builtin_receivers(server, h.root)
            outs = census_out_overloads(server, h.root)
            bound = census_out_overloads(server, h.root, bound=True)
    except tt.AdapterError as exc:
        print(f"bench_python_census: {exc}", file=sys.stderr)
        return 2
    print(f"Python-layer census over MCP stdio  ({tt.status_line(h)})")
    print(f"optimizers: torch._foreach_*/_fused_* calls reached by trace_module  {frac(opt['reached'], opt['asked'])}"
          f"  (target >= {TARGETS['optimizers']})")
    for row in opt["rows"]:
        print(f"  {row['class']:<10} {row['file']:<24} {row['reached']:>3}/{row['calls']:<3} "
              f"({row['ops_reached']} ops reached in all)")
    for why, n in sorted(opt["misses"].items(), key=lambda kv: -kv[1]):
        print(f"  missed, {why}: {n}")
    print(f"nn modules: F.x calls of forward reached by trace_module  {frac(mods['reached'], mods['asked'])}"
          f"  over {mods['classes']} classes (target >= {TARGETS['modules']}); reaching an op or a call below: "
          f"{mods['with_ops']}")
    _misses(mods)
    print(f"submodules: self.x(...) calls of forward to a torch/** class's forward, resolved by trace_module  "
          f"{frac(subs['reached'], subs['asked'])} over {subs['classes']} classes ({subs['shown_once']} of them call a "
          "forward the tree expands at another call)")
    _misses(subs)
    hows = ", ".join(f"{n} {how}" for how, n in sorted(local["by_how"].items()))
    print(f"local callables: calls of forward of a bare name its module does not bind (a loop variable, a parameter, a "
          f"nested function, a local) or of a container's item, in trace_module's call tree  "
          f"{frac(local['shown'], local['asked'])} over {local['classes']} classes ({hows})")
    _misses(local)
    print(f"test files with 1..{args.max_tests} tests: tests listed by test_file_info  "
          f"{frac(tests['listed'], tests['asked'])} over {tests['files']} files (target >= {TARGETS['tests']})")
    _misses(tests)
    print("  largest answers: " + ", ".join(f"{rel} {n} chars" for n, rel in tests["largest_answers"]))
    print(f"hand-written bindings: PyMethodDef entries that trace shows linked to an op  "
          f"{frac(binds['linked'], binds['entries'])}")
    for why, n in sorted(binds["how"].items(), key=lambda kv: -kv[1]):
        print(f"  linked, {why}: {n}")
    _misses(binds, None)
    print(f"type methods: PyMethodDef entries of a PyTypeObject's tp_methods that trace(<tp_name>.<entry>) "
          f"shows bound to the entry's function  {frac(types['linked'], types['entries'])}")
    _misses(types)
    print(f"calls into torch._C: of {ccalls['names']} torch._C names Python code calls, {ccalls['bound']} are bound "
          f"by hand-written C++ (trace of the name answers its function); trace of the first function calling each "
          f"shows that function  {frac(ccalls['linked'], ccalls['bound'])}")
    _misses(ccalls)
    print(f"builtin receivers: method calls on a local that holds a builtin container (memo = set(); memo.add(m)), "
          f"the method also a Tensor method's name: trace of the function lists no op for them  "
          f"{frac(recv['right'], recv['calls'])} over {recv['functions']} functions")
    _misses(recv)
    print(f"out= overloads: torch.X(...) calls of torch/nn and torch/optim functions, X with out= and other "
          f"overloads ({outs['with_out']} of them pass out=): trace of the function lists the out= overloads "
          f"exactly when the call passes out=  {frac(outs['right'], outs['calls'])} over {outs['functions']} functions")
    _misses(outs)
    print(f"out= overloads, bound names: calls of torch/nn and torch/optim functions of a name bound to such an op's "
          f"function (F.gelu = _add_docstr(torch._C._nn.gelu, ...); {bound['with_out']} of them pass out=): trace "
          f"lists the out= overloads exactly when the call passes out=  {frac(bound['right'], bound['calls'])} over "
          f"{bound['functions']} functions")
    _misses(bound)
    seconds = round(time.monotonic() - t0, 1)
    print(f"time: {seconds} s")
    if args.json:
        Path(args.json).write_text(json.dumps({"optimizers": opt, "modules": mods, "submodules": subs,
                                               "local_calls": local, "tests": tests,
                                               "bindings": binds, "type_methods": types, "c_calls": ccalls,
                                               "builtin_receivers": recv, "out_overloads": outs, "bound_names": bound,
                                               "seconds": seconds}, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
