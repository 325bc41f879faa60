"""The package's shape: no import cycles, every stage imports only the stages before it, small modules.

Imports are read with ``ast`` from every module, function-local ones included: an import
moved into a function to dodge a cycle is still a cycle.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

SRC = Path(__file__).resolve().parents[2] / "src" / "torchtalk"
MAX_LINES = 400

# What each stage may import (besides itself): ARCHITECTURE.md's import table, which tests/unit/test_docs.py
# keeps equal to this one. Front-ends (cli, cli_common, cli_input, cli_tools, server, onboard) may import any stage.
ALLOWED: dict[str, set[str]] = {
    "model": set(),
    "errors": set(),
    "atomic": set(),
    "procs": set(),
    "codedigest": set(),
    "source": {"model", "errors", "atomic", "procs", "codedigest"},
    "store": {"model", "errors", "procs", "atomic", "codedigest"},
    "extract": {"model", "source", "store"},
    "link": {"model", "store"},
    "index": {"model", "errors", "source", "extract", "store", "link", "procs", "atomic", "codedigest"},
    "graph": {"model", "store", "link", "errors"},
    "query": {"model", "store", "graph", "link", "source", "errors", "index"},
    "render": {"model", "query"},
    "tools": {"model", "store", "graph", "query", "render", "source", "errors", "atomic"},
}


def _module_name(path: Path) -> str:
    rel = path.relative_to(SRC.parent).with_suffix("")
    parts = list(rel.parts)
    if parts[-1] == "__init__":
        parts = parts[:-1]
    return ".".join(parts)


def _modules() -> dict[str, Path]:
    return {_module_name(p): p for p in SRC.rglob("*.py")}


def _imports(name: str, path: Path, known: set[str]) -> set[str]:
    """torchtalk modules ``name`` imports (anywhere in the file)."""
    is_pkg = path.name == "__init__.py"
    package = name if is_pkg else name.rpartition(".")[0]
    out: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            targets = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")
                base = base[: len(base) - (node.level - 1)]
                mod = ".".join(base + ([node.module] if node.module else []))
            else:
                mod = node.module or ""
            # "from pkg import sub" imports the submodule; "from pkg import name" imports pkg.
            targets = [f"{mod}.{a.name}" if f"{mod}.{a.name}" in known else mod for a in node.names]
        else:
            continue
        for t in targets:
            # The module itself, or the longest known module prefix of the name.
            while t and t not in known:
                t = t.rpartition(".")[0]
            if t and t.startswith("torchtalk") and t != name:
                out.add(t)
    return out


def _graph() -> dict[str, set[str]]:
    mods = _modules()
    known = set(mods)
    return {m: _imports(m, p, known) for m, p in mods.items()}


def _cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components with more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on: set[str] = set()
    out: list[list[str]] = []
    counter = [0]

    def visit(v: str) -> None:
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        for w in graph.get(v, ()):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                out.append(sorted(comp))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return out


def _stage(module: str) -> str:
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else ""


def test_no_import_cycles():
    # A package importing its own submodules (torchtalk.graph -> torchtalk.graph.walk) is not a cycle
    # unless a submodule imports the package back.
    assert _cycles(_graph()) == []


def test_the_cycle_check_can_fail():
    assert _cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]


def test_stages_import_only_earlier_stages():
    bad = []
    for mod, deps in _graph().items():
        stage = _stage(mod)
        if stage not in ALLOWED:
            continue  # front-ends (cli, server, onboard) may import any stage
        for d in deps:
            ds = _stage(d)
            if ds != stage and ds not in ALLOWED[stage] and d != "torchtalk":  # the root holds __version__ only
                bad.append(f"{mod} imports {d}")
    assert bad == []


def test_the_root_package_imports_nothing():
    assert _graph()["torchtalk"] == set()


def test_model_imports_nothing_of_torchtalk():
    graph = _graph()
    assert {d for m, deps in graph.items() if _stage(m) == "model" for d in deps if _stage(d) != "model"} == set()


@pytest.mark.parametrize("path", sorted(SRC.rglob("*.py")), ids=lambda p: str(p.relative_to(SRC)))
def test_modules_are_small_or_say_why(path):
    lines = path.read_text(encoding="utf-8").count("\n")
    if lines <= MAX_LINES:
        return
    doc = ast.get_docstring(ast.parse(path.read_text(encoding="utf-8"))) or ""
    assert "Size:" in doc, f"{path.name} has {lines} lines; split it, or say why in its docstring ('Size: ...')"
