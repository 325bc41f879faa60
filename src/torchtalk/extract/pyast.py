"""Small AST helpers shared by the Python-module and test extractors.

Everything here is cheap on purpose: extraction walks ~61 MB of Python, so text is
built by hand (dotted names, signatures) and ``ast.unparse`` only ever sees small
nodes (decorators, annotations, defaults, bases).
"""

from __future__ import annotations

import ast
from ast import AST, Attribute, Call, Constant, Expr, Name
from collections.abc import Collection
from typing import Any

from ..model import FileFacts, FileProblems, PyCall
from .pyargs import call_shape

# Bigger files are refused: nothing in PyTorch comes close (largest is 1.2 MB), and
# a worker must not be taken down by a pathological input.
MAX_BYTES = 8 * 1024 * 1024
_MAX_TEXT = 400  # cap on any unparsed snippet
_MAX_LINES = 60  # nodes spanning more lines are elided, not unparsed

DEFS = (ast.FunctionDef, ast.AsyncFunctionDef)


def run_extractor(extractor: Any, relpath: str, data: bytes, tree: ast.Module | None) -> FileFacts:
    """Parse (unless given a tree) and run ``extractor(relpath, tree).run()``. A file that does
    not parse is a problem of the file (FileProblems); a bug in the extractor raises."""
    tree, err = parse(data, tree)
    if tree is None:
        return {FileProblems: [f"{relpath}: {err}"]}
    facts: FileFacts = extractor(relpath, tree).run()
    return facts


def parse(data: bytes, tree: ast.Module | None = None) -> tuple[ast.Module | None, str]:
    """Return ``(tree, "")`` or ``(None, error)``; never raises."""
    if tree is not None:
        return tree, ""
    if len(data) > MAX_BYTES:
        return None, f"file too large: {len(data)} bytes"
    try:
        # bytes in: the parser honours a BOM and a PEP 263 coding cookie itself
        return ast.parse(data), ""
    except SyntaxError as e:
        return None, f"SyntaxError: line {e.lineno}: {e.msg}"
    except (ValueError, UnicodeError, MemoryError, RecursionError) as e:
        return None, f"{type(e).__name__}: {e}"


def module_name(relpath: str) -> tuple[str, bool]:
    """``torch/nn/modules/linear.py`` -> ("torch.nn.modules.linear", False);
    ``torch/nn/__init__.py`` -> ("torch.nn", True)."""
    p = relpath.replace("\\", "/")
    if p.endswith(".py"):
        p = p[:-3]
    elif p.endswith(".pyi"):
        p = p[:-4]
    parts = [x for x in p.split("/") if x and x != "."]
    is_pkg = bool(parts) and parts[-1] == "__init__"
    if is_pkg:
        parts.pop()
    return ".".join(parts), is_pkg


def resolve_from(module: str, is_pkg: bool, level: int, name: str | None) -> str:
    """Absolute module of ``from <level dots><name> import ...`` written in ``module``."""
    if not level:
        return name or ""
    parts = module.split(".") if module else []
    if not is_pkg:
        parts = parts[:-1]  # a module's relative imports start at its package
    if level > 1:
        parts = parts[: max(0, len(parts) - (level - 1))]
    if name:
        parts.append(name)
    return ".".join(parts)


def import_rows(node: ast.Import | ast.ImportFrom, module: str, is_pkg: bool) -> list[tuple[str, str, int]]:
    """(alias, absolute target, line) for each name an import binds.

    ``import a.b`` binds ``a`` -> "a"; ``import a.b as c`` binds ``c`` -> "a.b";
    ``from .m import X as Y`` binds ``Y`` -> "<pkg>.m.X"; a star import gives
    alias "*" with the module as target.
    """
    line = node.lineno
    if node.__class__ is ast.Import:
        out = []
        for a in node.names:
            if a.asname:
                out.append((a.asname, a.name, line))
            else:
                top = a.name.split(".", 1)[0]
                out.append((top, top, line))
        return out
    base = resolve_from(module, is_pkg, node.level or 0, node.module)
    out = []
    for a in node.names:
        if a.name == "*":
            out.append(("*", base, line))
        else:
            out.append((a.asname or a.name, f"{base}.{a.name}" if base else a.name, line))
    return out


def dotted(node: AST) -> str | None:
    """``torch._C._nn.linear`` for an Attribute chain on a Name; ``super().forward``;
    None for anything else (subscripts, calls other than ``super()``, literals)."""
    parts = []
    while node.__class__ is Attribute:
        parts.append(node.attr)
        node = node.value
    cls = node.__class__
    if cls is Name:
        parts.append(node.id)
    elif cls is Call and node.func.__class__ is Name and node.func.id == "super" and not node.args:
        parts.append("super()")
    else:
        return None
    parts.reverse()
    return ".".join(parts)


def text(node: AST | None, limit: int = _MAX_TEXT) -> str:
    """Source-like text of a small node; "..." for huge or unprintable ones."""
    if node is None:
        return ""
    end = getattr(node, "end_lineno", None)
    if end is not None and end - node.lineno > _MAX_LINES:
        return "..."
    try:
        s = ast.unparse(node)
    except Exception:  # unparse of odd/deep nodes: the text is only informative
        return "..."
    if len(s) > limit:
        s = s[: limit - 3] + "..."
    return s


def decorator_texts(node: ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef) -> list[str]:
    return [text(d) for d in node.decorator_list]


def decorator_calls(node: ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef, func: int, calls: list[PyCall],
                    stack: list) -> None:
    """Decorator expressions run in the enclosing scope: their calls belong there (PyCall rows of ``func`` appended
    to ``calls``); what is left to walk of them goes on the scope's ``stack``."""
    for d in node.decorator_list:
        if d.__class__ is Call:
            name = dotted(d.func)
            if name is not None:
                calls.append(PyCall(func, name, d.lineno, **call_shape(d)))
            else:
                stack.append(d.func)
            for k in d.keywords:
                stack.append(k.value)
            stack.extend(d.args)
        elif d.__class__ is not Name and dotted(d) is None:
            stack.append(d)


def _arg(a: ast.arg, default: AST | None, prefix: str = "") -> str:
    s = prefix + a.arg
    if a.annotation is not None:
        s += ": " + text(a.annotation, 200)
        if default is not None:
            s += " = " + text(default, 200)
    elif default is not None:
        s += "=" + text(default, 200)
    return s


def signature(fn: ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda) -> str:
    """``(self, input: Tensor, *, out: Tensor | None = None) -> Tensor``."""
    a = fn.args
    pos = a.posonlyargs + a.args
    defaults = [None] * (len(pos) - len(a.defaults)) + list(a.defaults)
    parts = []
    npos_only = len(a.posonlyargs)
    for i, arg in enumerate(pos):
        parts.append(_arg(arg, defaults[i]))
        if npos_only and i == npos_only - 1:
            parts.append("/")
    if a.vararg is not None:
        parts.append(_arg(a.vararg, None, "*"))
    elif a.kwonlyargs:
        parts.append("*")
    for arg, d in zip(a.kwonlyargs, a.kw_defaults, strict=True):
        parts.append(_arg(arg, d))
    if a.kwarg is not None:
        parts.append(_arg(a.kwarg, None, "**"))
    s = "(" + ", ".join(parts) + ")"
    returns = getattr(fn, "returns", None)
    if returns is not None:
        s += " -> " + text(returns, 200)
    return s


def first_doc_line(node: AST) -> str:
    """First non-empty line of a def/class/module docstring, or ""."""
    body = getattr(node, "body", None)
    if not body:
        return ""
    first = body[0]
    if first.__class__ is not Expr:
        return ""
    v = first.value
    if v.__class__ is not Constant or not isinstance(v.value, str):
        return ""
    return _first_line(v.value)


def _first_line(doc: str) -> str:
    """First non-empty line; a bare heading ("Usage:") is joined with the line after it."""
    lines = [x.strip() for x in doc.splitlines()]
    lines = [x for x in lines if x]
    if not lines:
        return ""
    out = lines[0]
    if out.endswith(":") and len(out.split()) <= 2 and len(lines) > 1:
        out += " " + lines[1]
    return out[:_MAX_TEXT]


def doc_assigned(body: list) -> str:
    """First line of a string assigned to ``__doc__`` in a class body (``__doc__ = r"..." + x``,
    as nn.Conv2d does)."""
    for s in body:
        if s.__class__ is ast.Assign and len(s.targets) == 1:
            t = s.targets[0]
            if t.__class__ is Name and t.id == "__doc__":
                v = s.value
                while v.__class__ is ast.BinOp:
                    v = v.left
                if v.__class__ is Constant and isinstance(v.value, str):
                    return _first_line(v.value)
                return ""
    return ""


def block_statements(body: list) -> list:
    """The statements of ``body`` and of the if/for/while/with/try/match blocks in it, in
    source order; defs and classes are included but not entered."""
    out, todo = [], list(reversed(body))
    while todo:
        s = todo.pop()
        out.append(s)
        t = s.__class__
        if t in DEFS or t is ast.ClassDef:
            continue
        # pushed last-first so that they pop in source order: body, handlers/cases, orelse, finalbody
        for f in ("finalbody", "orelse"):
            sub = getattr(s, f, None)
            if sub and sub.__class__ is list:
                todo.extend(reversed(sub))
        for h in reversed(getattr(s, "cases", None) or getattr(s, "handlers", None) or ()):
            todo.extend(reversed(h.body))
        sub = getattr(s, "body", None)
        if sub and sub.__class__ is list:
            todo.extend(reversed(sub))
    return out


def last_part(name: str) -> str:
    return name.rpartition(".")[2]


def _child_fields() -> dict[type, tuple[str, ...]]:
    """For every AST class, the fields that can hold child nodes (scalars dropped)."""
    scalar = {
        "ctx", "id", "attr", "name", "arg", "kind", "type_comment", "level", "module",
        "conversion", "is_async", "simple", "tag", "names", "kwd_attrs", "lineno",
        "col_offset", "end_lineno", "end_col_offset",
    }
    out: dict[type, tuple[str, ...]] = {}
    todo = [AST]
    while todo:
        cls = todo.pop()
        todo.extend(cls.__subclasses__())
        fields = getattr(cls, "_fields", ())
        if cls is Constant:
            fields = ()
        # reversed so that a LIFO stack pops children in source order
        out[cls] = tuple(reversed([f for f in fields if f not in scalar]))
    return out


# Constant table (computed once at import, never mutated): which fields to descend.
CHILD_FIELDS = _child_fields()


def literal_strs(node: AST) -> list[str]:
    """The str literals of a list or tuple literal (``__all__ = ["a", "b"]``); none for any other expression."""
    if isinstance(node, (ast.List, ast.Tuple)):
        return [e.value for e in node.elts if e.__class__ is ast.Constant and isinstance(e.value, str)]
    return []


def push_children(node: AST, stack: list) -> None:
    """Push ``node``'s child nodes so that popping yields them in source order."""
    push = stack.append
    for f in CHILD_FIELDS.get(node.__class__, ()):
        v = getattr(node, f, None)
        if v is None:
            continue
        if v.__class__ is list:
            for x in reversed(v):
                if x is not None and x.__class__ is not str:
                    push(x)
        elif isinstance(v, AST):
            push(v)


def instance_attrs(n: ast.Assign | ast.AnnAssign, owners: Collection[str] | None = ("self",)) -> list[tuple[str, str]]:
    """(target, constructor as written) of ``owner.attr = Ctor(...)`` for an owner in ``owners``: ``("self.proj",
    "Linear")`` in a method, ``("Variable._execution_engine", "ImperativeEngine")`` at module level with the module's
    classes; with ``owners`` None, ``(name, Ctor)`` of ``name = Ctor(...)`` in a class body (Note [Submodules] in
    model/python.py)."""
    ctor = dotted(n.value.func) if isinstance(n.value, ast.Call) else None
    if ctor is None:
        return []
    targets = n.targets if isinstance(n, ast.Assign) else [n.target]
    if owners is None:
        return [(t.id, ctor) for t in targets if isinstance(t, ast.Name)]
    return [(f"{t.value.id}.{t.attr}", ctor) for t in targets
            if isinstance(t, ast.Attribute) and isinstance(t.value, ast.Name) and t.value.id in owners]


def param_defaults(a: ast.arguments) -> dict[str, str]:
    """Parameter name -> its default as a dotted name ("F.relu"), "" when it has none or it is no name (a literal,
    a call): what an attribute set from the parameter holds unless the caller passes another (Note [Submodules])."""
    pos = a.posonlyargs + a.args
    defaults = [None] * (len(pos) - len(a.defaults)) + list(a.defaults)
    out = {arg.arg: (dotted(d) or "") if d is not None else "" for arg, d in zip(pos, defaults, strict=True)}
    out.update({arg.arg: (dotted(d) or "") if d is not None else ""
                for arg, d in zip(a.kwonlyargs, a.kw_defaults, strict=True)})
    return out


def param_attrs(n: ast.Assign, params: dict[str, str]) -> list[tuple[str, str, str]]:
    """(attr, parameter, its default) of ``self.attr = param`` for a parameter of the method."""
    if n.value.__class__ is not ast.Name or n.value.id not in params:
        return []
    return [(t.attr, n.value.id, params[n.value.id]) for t in n.targets
            if isinstance(t, ast.Attribute) and isinstance(t.value, ast.Name) and t.value.id == "self"]


def dedupe_oprefs(rows: list) -> list:
    """PyOpRef rows without repeats (kind, op, function, line), in order."""
    seen, out = set(), []
    for r in rows:
        key = (r.kind, r.op, r.func, r.line)
        if key not in seen:
            seen.add(key)
            out.append(r)
    return out
