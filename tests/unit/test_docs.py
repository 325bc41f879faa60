"""The docs as a contract: README.md's tool table is the tool table in code, and ARCHITECTURE.md's import table
is the rule tests/unit/test_architecture.py enforces. Changing either side without the other fails here.

(ARCHITECTURE.md's edge table against the graph table is tests/unit/test_graph_table.py.)
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from torchtalk.tools import FORMAT, all_tools, draws
from torchtalk.tools.table import Tool

from .test_architecture import ALLOWED, SRC

ROOT = Path(__file__).resolve().parents[2]


def _table(doc: str, header: str) -> list[list[str]]:
    """The rows (cells stripped) of the Markdown table whose header row starts with ``header``."""
    lines = (ROOT / doc).read_text(encoding="utf-8").splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith(header))
    rows = []
    for line in lines[start + 2:]:
        if not line.startswith("|"):
            break
        rows.append([c.strip() for c in line.strip().strip("|").split("|")])
    return rows


# ------------------------------------------------------------------ README.md: the tools

def _signature(tool: Tool) -> str:
    """A tool as README.md writes it: its parameters in order, the optional ones with their default.
    ``format`` is left out: every graph-shaped tool takes it, and README.md says so once."""
    args = [p.name if p.required else f"{p.name}={p.default!r}".replace("'", '"')
            for p in tool.params if p is not FORMAT]
    return f"{tool.name}({', '.join(args)})"


def _readme_tools() -> dict[str, tuple[str, str]]:
    """README.md's tool table: tool name -> (its signature as written, what it answers)."""
    out = {}
    for sig, answers in _table("README.md", "| tool | answers |"):
        m = re.fullmatch(r"`((\w+)\(.*\))`", sig)
        assert m, f"README.md's tool table: {sig!r} is not `name(args)`"
        out[m.group(2)] = (m.group(1), answers)
    return out


def test_readme_lists_every_tool_and_no_other():
    assert list(_readme_tools()) == [t.name for t in all_tools()]


@pytest.mark.parametrize("tool", all_tools(), ids=lambda t: t.name)
def test_readme_writes_each_tools_arguments_and_defaults(tool):
    written, answers = _readme_tools()[tool.name]
    assert written == _signature(tool)
    for p in tool.params:  # a parameter with a fixed set of values names them all
        if p is not FORMAT:
            assert all(f"`{c}`" in answers for c in p.choices), f"{tool.name}'s row should name {p.name}: {p.choices}"


def test_readme_counts_the_tools_that_draw():
    words = {3: "three", 4: "four", 5: "five", 6: "six", 7: "seven", 8: "eight", 9: "nine", 10: "ten"}
    n = sum(draws(t) for t in all_tools())
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    assert f"The {words[n]} whose\nanswers are graphs also take `format=\"mermaid\"`" in readme


def test_the_signature_check_can_fail():
    search = next(t for t in all_tools() if t.name == "search")
    assert _signature(search) == 'search(query, backend=None, limit=20)'
    assert _signature(search) != "search(query, limit=20)"


# ------------------------------------------------------------------ ARCHITECTURE.md: who imports whom

FRONT_ENDS = {"cli", "cli_common", "cli_input", "cli_tools", "server", "onboard"}  # may import any stage


def _stage_names(cell: str) -> list[str]:
    """`index/`, `cli.py`, `server/` -> index, cli, server."""
    return [re.sub(r"(/|\.py|\*)$", "", name) for name in re.findall(r"`([^`]+)`", cell)]


def _imports(cell: str) -> set[str] | None:
    """'model, store.codec, link (pure helpers)' -> {model, store, link}; 'nothing of ours' -> set();
    'any stage ...' -> None."""
    if cell.startswith("any stage"):
        return None
    if cell == "nothing of ours":
        return set()
    return {re.match(r"\w+", item.strip()).group(0) for item in re.split(r",(?![^(]*\))", cell)}


def _architecture_rule() -> dict[str, set[str] | None]:
    rule: dict[str, set[str] | None] = {}
    for package, _holds, imports in _table("ARCHITECTURE.md", "| package | holds | imports |"):
        for name in _stage_names(package):
            rule[name] = _imports(imports)
    return rule


def test_architecture_import_table_is_the_enforced_rule():
    rule = _architecture_rule()
    assert {k: v for k, v in rule.items() if v is not None} == ALLOWED
    assert {k for k, v in rule.items() if v is None} == FRONT_ENDS


def test_architecture_names_every_package_and_module():
    top = {p.stem for p in SRC.iterdir() if p.suffix == ".py" or (p / "__init__.py").exists()}
    assert set(_architecture_rule()) == top - {"__init__", "__main__"}


def test_the_import_cell_reader():
    assert _imports("model, store.codec") == {"model", "store"}
    assert _imports("model, errors, graph (the registry, to check a name), source (`git.py`, the file list)") == {
        "model", "errors", "graph", "source"}
    assert _imports("nothing of ours") == set() and _imports("any stage (tools for answers)") is None
