"""graph/walk.py on hand-made graphs: ranking before cutting, and a Cut for every limit (Note [No silent cut])."""

from __future__ import annotations

from torchtalk.graph import LevelCap, down, up
from torchtalk.model import CutKind, Edge, EdgeKind, Node, NodeKind


def fn(name: str) -> Node:
    return Node(NodeKind.CPP_FUNCTION, name, name)


def graph_of(calls: dict[str, list[str]]):
    """An edge source over ``calls`` (caller -> callees, in source order), both directions."""
    out = {a: [Edge(fn(a), fn(b), EdgeKind.CALL) for b in bs] for a, bs in calls.items()}
    into: dict[str, list[Edge]] = {}
    for edges in out.values():
        for e in edges:
            into.setdefault(e.dst.key, []).append(e)

    def down_edges(node, kinds):
        return [e for e in out.get(node.key, []) if e.kind in kinds]

    def up_edges(node, kinds):
        return [e for e in into.get(node.key, []) if e.kind in kinds]

    return down_edges, up_edges


def test_fan_out_ranks_before_it_cuts_and_says_what_it_cut():
    # the 47th call leads to the launch; source order would cut it, the ranking keeps it
    callees = [f"helper{i}" for i in range(46)] + ["launcher"]
    edges, _ = graph_of({"host": callees, "launcher": ["kernel"]})
    walk = down([fn("host")], edges, [EdgeKind.CALL], 3, fan_out=40,
                rank=lambda e: 0 if e.dst.key == "launcher" else 1)
    reached = {s.node.key for s in walk.steps}
    assert "kernel" in reached and "launcher" in reached
    (cut,) = walk.cuts
    assert (cut.kind, cut.at.key, cut.left, cut.limit) == (CutKind.FAN_OUT, "host", 7, 40)
    # without a ranking the order decides, and the cut is still recorded
    walk = down([fn("host")], edges, [EdgeKind.CALL], 3, fan_out=40)
    assert "kernel" not in {s.node.key for s in walk.steps} and walk.cuts[0].kind is CutKind.FAN_OUT


def test_edges_to_nodes_already_reached_do_not_use_up_the_fan_out():
    edges, _ = graph_of({"a": ["b"], "b": ["a", "c"]})
    walk = down([fn("a")], edges, [EdgeKind.CALL], 3, fan_out=1)
    assert [s.node.key for s in walk.steps] == ["b", "c"] and walk.cuts == []  # b -> a was no new edge


def test_depth_and_node_budget_are_cuts_too():
    edges, up_edges = graph_of({"a": ["b"], "b": ["c"], "c": ["d"]})
    walk = down([fn("a")], edges, [EdgeKind.CALL], 2)
    assert [s.node.key for s in walk.steps] == ["b", "c"]
    assert [(c.kind, c.at.key, c.left, c.limit) for c in walk.cuts] == [(CutKind.DEPTH, "c", 1, 2)]
    assert down([fn("a")], edges, [EdgeKind.CALL], 5).cuts == []  # nothing left out: nothing said
    walk = up([fn("d")], up_edges, [EdgeKind.CALL], 5, max_nodes=1)
    assert [s.node.key for s in walk.steps] == ["c"]
    assert [(c.kind, c.at.key, c.limit) for c in walk.cuts] == [(CutKind.NODES, "c", 1)]  # reached, not walked from


def test_level_cap_names_what_it_left_unexpanded():
    edges, _ = graph_of({"a": ["b", "c", "d"], "b": ["e"], "c": ["f"], "d": ["g"]})
    cap = LevelCap(1, {NodeKind.CPP_FUNCTION})
    walk = down([fn("a")], edges, [EdgeKind.CALL], 3, follow=cap)
    assert {s.node.key for s in walk.steps} == {"b", "c", "d", "e"}
    (cut,) = cap.cuts()
    assert (cut.kind, cut.at.key, cut.left, cut.limit) == (CutKind.LEVEL, "c", 2, 1)
