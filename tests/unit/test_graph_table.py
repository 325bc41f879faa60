"""The graph table (graph/graph.py) is complete and documented: every EdgeKind has its rule in both
directions and its row in ARCHITECTURE.md's edge table, and asking for a kind without a rule is an error."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from torchtalk.graph import INTO, OUT, graph
from torchtalk.graph.graph import NoRule
from torchtalk.graph.nodes import op_node
from torchtalk.graph.py_attrs import function_node
from torchtalk.graph.py_calls import PyContext
from torchtalk.graph.pynames import pynames
from torchtalk.graph.registry import registry
from torchtalk.model import EdgeKind, Loc, Node, NodeKind

from ..annotations import Expectations, facts, python_function_at, read_tree
from ..conftest import FIXTURE_TREE

TREE = Expectations(read_tree(FIXTURE_TREE))
TREE_PY = Expectations(read_tree(FIXTURE_TREE.parent / "tree_py"))

ARCHITECTURE = Path(__file__).resolve().parents[2] / "ARCHITECTURE.md"


def _edge_table() -> dict[str, list[str]]:
    """Rows of ARCHITECTURE.md's edge table: kind -> its cells (from -> to, rule, example)."""
    text = ARCHITECTURE.read_text(encoding="utf-8")
    section = text[text.index("Every edge kind, with one real example"):text.index("## Adding an edge kind")]
    rows = {}
    for line in section.splitlines():
        m = re.match(r"\|\s*`(\w+)`\s*\|(.*)\|\s*$", line)
        if m:
            rows[m.group(1)] = [c.strip() for c in m.group(2).split("|")]
    return rows


@pytest.mark.parametrize("kind", list(EdgeKind), ids=lambda k: k.value)
def test_every_edge_kind_has_its_rules_and_its_row(kind):
    assert kind in OUT, f"EdgeKind.{kind.name} has no OUT rule in graph/graph.py"
    assert kind in INTO, f"EdgeKind.{kind.name} has no INTO rule in graph/graph.py"
    rows = _edge_table()
    assert kind.value in rows, f"ARCHITECTURE.md's edge table has no row for `{kind.value}`"
    src_dst, rule, example = rows[kind.value]
    assert "->" in src_dst and rule and example, f"the `{kind.value}` row needs from -> to, its rule and an example"


def test_the_edge_table_names_no_kind_that_is_gone():
    assert set(_edge_table()) == {k.value for k in EdgeKind}


def test_a_kind_without_a_rule_is_an_error_that_says_so(indexed, monkeypatch):
    _, ix = indexed
    monkeypatch.delitem(OUT, EdgeKind.BACKWARD)
    with pytest.raises(NoRule, match=r"no rule gives backward edges out of a node; kinds with one: .*graph\.py's OUT"):
        graph(ix).out(Node(NodeKind.OP, "softmax.int", "softmax.int"), [EdgeKind.KERNEL, EdgeKind.BACKWARD])


# ------------------------------------------------------------------ the rules new to the table

def _fn(ix, fq):
    d = pynames(ix).definition(fq)
    assert d is not None, fq
    return function_node(d)


def test_py_call_rules_resolve_self_in_the_walks_context_and_agree_both_ways(py_indexed):
    _, ix = py_indexed
    g = graph(ix)
    call = _fn(ix, "torch.nn.modules.module.Module.__call__")
    # self.forward() in Module.__call__: Module has no forward; for a ReLU instance it is ReLU.forward
    assert g.out(call, [EdgeKind.PY_CALL]) == []
    relu = g.within(PyContext(pynames(ix).mro("torch.nn.modules.activation.ReLU")))
    (e,) = relu.out(call, [EdgeKind.PY_CALL])
    assert call.loc is not None
    body = Loc(call.loc.path, call.loc.line + 1)  # `return self.forward(...)`, the line under the def
    assert (e.dst.key, e.written, e.site) == ("torch.nn.modules.activation.ReLU.forward", "self.forward", body)
    # super().__init__() in Linear.__init__ is Module.__init__ (a method's own class by default), found both ways
    init = _fn(ix, "torch.nn.modules.module.Module.__init__")
    e, empty = g.out(_fn(ix, "torch.nn.modules.linear.Linear.__init__"), [EdgeKind.PY_CALL])
    assert e.dst == init and e in g.into(init, [EdgeKind.PY_CALL]) and empty.written == "torch.empty"
    # into an op: torch.relu(input) in F.relu
    relu_op = op_node(registry(ix).by_full["relu"])
    callers = {(e.src.key, str(e.site)) for e in g.into(relu_op, [EdgeKind.PY_CALL])}
    assert ("torch.nn.functional.relu", TREE_PY.site("op", "relu")) in callers


def test_every_annotated_python_call_is_a_py_call_edge(py_indexed):
    """The annotations under Python calls in tests/fixtures/tree_py (tests/annotations.py) are exactly the
    PY_CALL edges out of the functions holding them (each walked in its own context)."""
    root, ix = py_indexed
    g = graph(ix)
    expected: dict[str, set] = {}
    for a in TREE_PY.uses():
        expected.setdefault(python_function_at(root, a.path, a.line), set()).add(TREE_PY.expected(a))
    assert len(expected) >= 3
    got = {fq: facts(g.out(_fn(ix, fq), [EdgeKind.PY_CALL])) for fq in expected}
    assert got == expected


def test_unresolved_edges_into_a_name_are_the_calls_that_write_it(indexed):
    _, ix = indexed
    g = graph(ix)
    name = Node(NodeKind.UNRESOLVED, "dimname_to_position", "dimname_to_position")
    (e,) = g.into(name, [EdgeKind.UNRESOLVED])
    assert (e.src.label, str(e.site), e.written) == ("at::native::cumsum_out",
                                                     TREE.site("unresolved", "dimname_to_position"),
                                                     "dimname_to_position")
    assert e in g.out(e.src, [EdgeKind.UNRESOLVED])
