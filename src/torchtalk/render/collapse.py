"""Big pictures stay readable: past a size, nodes are folded into counted groups ("+37 callers").

A breadth-first walk from what the answer is about (its roots; else the nodes nothing
leads to) shows nodes until a budget is spent, and at most FAN of one layer around one
node; every other node joins the group of the first shown node it hangs from, per layer
and direction (callers of X, GPU kernels launched from Y). The
groups are counted on one node each; nothing is dropped: the web view expands a group to
its members, and the text answer lists them all.
"""

from __future__ import annotations

from collections import Counter, deque
from typing import NamedTuple

from .picture import PGroup, Picture

SMALL = 40  # pictures up to this many nodes are shown whole
BUDGET = 60  # nodes shown in a bigger one
FAN = 8  # nodes of one layer shown around one node, in one direction

_NOUNS = {"python": ("Python name", "Python names"), "op": ("op", "ops"), "stub": ("stub", "stubs"),
          "gpu": ("GPU kernel", "GPU kernels"), "generated": ("generated wrapper", "generated wrappers"),
          "autograd": ("autograd node", "autograd nodes"), "test": ("test", "tests"),
          "unresolved": ("unresolved call", "unresolved calls")}


def _noun(layer: str, direction: str, n: int) -> str:
    if layer == "cpp":
        one, many = ("caller", "callers") if direction == "in" else ("callee", "callees")
    else:
        one, many = _NOUNS.get(layer, ("node", "nodes"))
    return one if n == 1 else many


def group_label(counts: Counter[str], direction: str) -> str:
    return " · ".join(f"+{n} {_noun(layer, direction, n)}" for layer, n in counts.most_common())


def _adjacency(pic: Picture) -> dict[str, list[tuple[str, str]]]:
    """Per node, its neighbours in edge order, with the direction seen from the node."""
    adj: dict[str, list[tuple[str, str]]] = {nid: [] for nid in pic.nodes}
    for e in pic.edges.values():
        adj[e.source].append((e.target, "out"))
        adj[e.target].append((e.source, "in"))
    return adj


def _starts(pic: Picture) -> list[str]:
    roots = [n.id for n in pic.nodes.values() if n.root]
    if roots:
        return roots
    led_to = {e.target for e in pic.edges.values()}
    return [nid for nid in pic.nodes if nid not in led_to]


class _Assigned(NamedTuple):
    shown: set[str]
    group_of: dict[str, tuple[str, str, str]]  # hidden node -> (anchor, layer, direction)
    spent: bool  # the budget ran out (rather than every hidden node being past a full fan)


def _assign(pic: Picture, adj: dict[str, list[tuple[str, str]]], budget: int, fan: int) -> _Assigned:
    shown: set[str] = set()
    group_of: dict[str, tuple[str, str, str]] = {}
    fans: Counter[tuple[str, str, str]] = Counter()
    seen: set[str] = set()
    queue: deque[str] = deque()
    spent = False

    def start(nid: str) -> None:
        nonlocal spent
        seen.add(nid)
        queue.append(nid)
        if len(shown) < budget or pic.nodes[nid].root:
            shown.add(nid)
        else:
            spent = True
            group_of[nid] = ("", pic.nodes[nid].layer, "out")

    for nid in _starts(pic):
        if nid not in seen:
            start(nid)
    pending = iter(list(pic.nodes))  # nodes no start reaches: each begins a walk of its own
    while True:
        while queue:
            u = queue.popleft()
            for v, direction in adj[u]:
                if v in seen:
                    continue
                seen.add(v)
                queue.append(v)
                if u in shown:
                    key = (u, pic.nodes[v].layer, direction)
                    if fans[key] < fan and len(shown) < budget:
                        fans[key] += 1
                        shown.add(v)
                        continue
                    spent = spent or fans[key] < fan
                    group_of[v] = key
                else:  # past a hidden node: the same anchor, one group per layer
                    anchor, _layer, side = group_of[u]
                    group_of[v] = (anchor, pic.nodes[v].layer, side)
        nxt = next((nid for nid in pending if nid not in seen), None)
        if nxt is None:
            return _Assigned(shown, group_of, spent)
        start(nxt)


def collapse(pic: Picture, small: int = SMALL, budget: int = BUDGET, fan: int = FAN) -> Picture:
    """Fold ``pic`` in place (each hidden node gets its group's id) and return it."""
    if len(pic.nodes) <= small:
        return pic
    adj = _adjacency(pic)
    got = _assign(pic, adj, budget, fan)
    while not got.spent and got.group_of and fan < budget:
        # A few hubs spent their fan and left budget unused: let them show more, as long as the
        # budget is not cut mid-level (that would scatter the rest into many small groups).
        wider = _assign(pic, adj, budget, fan * 2)
        if wider.spent:
            break
        got, fan = wider, fan * 2
    members: dict[tuple[str, str, str], list[str]] = {}
    for nid, key in got.group_of.items():
        members.setdefault(key, []).append(nid)
    # A group of one would take the place of the node it hides: show the node (up to a fan past the budget).
    extra = budget + FAN - len(got.shown)
    for key in [k for k, nids in members.items() if len(nids) == 1]:
        if extra > 0:
            del members[key]
            extra -= 1
    for i, (key, nids) in enumerate(members.items()):
        anchor, _layer, direction = key
        gid = f"group:{i}"
        counts = Counter(pic.nodes[n].layer for n in nids)
        pic.groups[gid] = PGroup(gid, anchor, direction, group_label(counts, direction), len(nids))
        for n in nids:
            pic.nodes[n].group = gid
    return pic
