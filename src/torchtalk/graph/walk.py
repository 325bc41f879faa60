"""Traversals of the graph: breadth-first ``down`` (what a node reaches) and ``up`` (what reaches it).

Each edge kind has a cost in levels: crossing a registration (op -> kernel, stub ->
kernel, kernel -> op upwards) costs nothing, a call costs one, so ``depth`` counts
calls the way a reader does. Every step keeps the step it came from, so an answer
can show the chain from the start.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable, Collection, Iterable
from dataclasses import dataclass

from ..model import Edge, EdgeKind, Node, NodeKind

FREE = frozenset({EdgeKind.KERNEL, EdgeKind.STUB_KERNEL, EdgeKind.WRAPPER, EdgeKind.BINDING, EdgeKind.AUTOGRAD})


@dataclass(frozen=True, slots=True)
class Step:
    edge: Edge
    depth: int  # levels used to get here (FREE edges cost none)
    parent: Step | None
    down: bool = True  # False in an ``up`` walk: the step went against the edge

    @property
    def node(self) -> Node:
        """The node this step reached (the far end of its edge, in the walk's direction)."""
        return self.edge.dst if self.down else self.edge.src

    def chain(self) -> list[Edge]:
        out: list[Edge] = []
        step: Step | None = self
        while step is not None:
            out.append(step.edge)
            step = step.parent
        return out[::-1]


EdgeSource = Callable[[Node, Collection[EdgeKind]], list[Edge]]


def _walk(starts: Iterable[Node], edges: EdgeSource, kinds: Collection[EdgeKind], depth: int, fan_out: int,
          max_nodes: int, follow: Callable[[Step], bool] | None, forward: bool) -> list[Step]:
    seen = {(n.kind, n.key) for n in starts}
    queue: deque[tuple[Node, Step | None, int]] = deque((n, None, 0) for n in starts)
    out: list[Step] = []
    while queue and len(out) < max_nodes:
        node, via, used = queue.popleft()
        # At the last level only free edges can be taken: never compute the others.
        allowed = kinds if used < depth else [k for k in kinds if k in FREE]
        for edge in edges(node, allowed)[:fan_out] if allowed else ():
            cost = used + (0 if edge.kind in FREE else 1)
            if cost > depth:
                continue
            step = Step(edge, cost, via, forward)
            nxt = step.node
            if (nxt.kind, nxt.key) in seen:
                continue
            seen.add((nxt.kind, nxt.key))
            out.append(step)
            if follow is None or follow(step):
                # FREE edges keep their level: expand them before the next level's nodes.
                (queue.appendleft if cost == used else queue.append)((nxt, step, cost))
            if len(out) >= max_nodes:
                break
    return out


def down(starts: Iterable[Node], edges: EdgeSource, kinds: Collection[EdgeKind], depth: int, *, fan_out: int = 60,
         max_nodes: int = 2000, follow: Callable[[Step], bool] | None = None) -> list[Step]:
    """Steps reaching new nodes along ``kinds``, breadth first, at most ``depth`` levels from ``starts``."""
    return _walk(starts, edges, kinds, depth, fan_out, max_nodes, follow, True)


def up(starts: Iterable[Node], edges: EdgeSource, kinds: Collection[EdgeKind], depth: int, *, fan_out: int = 200,
       max_nodes: int = 2000, follow: Callable[[Step], bool] | None = None) -> list[Step]:
    """Like ``down``, against the edges: ``edges`` gives the edges *into* a node."""
    return _walk(starts, edges, kinds, depth, fan_out, max_nodes, follow, False)


class LevelCap:
    """A walk's ``follow``: expand at most ``per_level`` nodes of the ``counted`` kinds on each level (the
    others are kept as reached, not walked from), and count what was left unexpanded. With
    ``per_start``, each start node of a walk from many has a budget of its own, so the first change of a
    diff cannot use up the walk of the others."""

    def __init__(self, per_level: int, counted: Collection[NodeKind], per_start: bool = False) -> None:
        self.per_level = per_level
        self.counted = counted
        self.per_start = per_start
        self.reached: dict[tuple[str, int], int] = {}

    def __call__(self, step: Step) -> bool:
        if step.node.kind not in self.counted:
            return True
        root = step
        while self.per_start and root.parent is not None:
            root = root.parent
        key = (root.edge.dst.key if self.per_start else "", step.depth)
        self.reached[key] = self.reached.get(key, 0) + 1
        return self.reached[key] <= self.per_level

    @property
    def unexpanded(self) -> int:
        return sum(max(0, n - self.per_level) for n in self.reached.values())
