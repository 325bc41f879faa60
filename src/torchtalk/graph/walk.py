"""Traversals of the graph: breadth-first ``down`` (what a node reaches) and ``up`` (what reaches it).

Each edge kind has a cost in levels: crossing a registration (op -> kernel, stub ->
kernel, kernel -> op upwards) costs nothing, a call costs one, so ``depth`` counts
calls the way a reader does. Every step keeps the step it came from, so an answer
can show the chain from the start.

Note [No silent cut]: a walk has three limits: ``depth`` (levels of calls), ``fan_out``
(new nodes one node may add) and ``max_nodes`` (the walk's budget). Fan-out is a ranking,
not an order: the new edges of a node are sorted by the walk's ``rank`` (best first; the
rule's order among equals) before any is left out, and edges to nodes already reached never
count against it, so what a walk reaches does not depend on the order of calls in a
function body unless the ranking ties. Whatever a limit leaves out is recorded as a ``Cut``
on the ``Walk``; the query that ran the walk names the tool call that shows it
(``Cut.shows``), carries the cuts in its result, and the renderer prints one line per cut.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable, Collection, Iterable
from dataclasses import dataclass, field

from ..model import Cut, CutKind, Edge, EdgeKind, Node, NodeKind

FREE = frozenset({EdgeKind.KERNEL, EdgeKind.STUB_KERNEL, EdgeKind.WRAPPER, EdgeKind.ENTRY, EdgeKind.BINDING,
                  EdgeKind.AUTOGRAD})


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


@dataclass
class Walk:
    """What a walk reached, in walk order, and what its limits left out (Note [No silent cut])."""

    steps: list[Step]
    cuts: list[Cut] = field(default_factory=list)


EdgeSource = Callable[[Node, Collection[EdgeKind]], list[Edge]]
Rank = Callable[[Edge], int]  # lower first: the edges a walk keeps when a node has more than fan_out


def _walk(starts: Iterable[Node], edges: EdgeSource, kinds: Collection[EdgeKind], depth: int, fan_out: int,
          max_nodes: int, follow: Callable[[Step], bool] | None, rank: Rank | None, forward: bool) -> Walk:
    starts = list(starts)
    seen = {(n.kind, n.key) for n in starts}
    queue: deque[tuple[Node, Step | None, int]] = deque((n, None, 0) for n in starts)
    out: list[Step] = []
    cuts: list[Cut] = []
    frontier: list[tuple[int, Node]] = []  # nodes of the last level, whose call edges were not walked (rank, node)
    costly = [k for k in kinds if k not in FREE]
    while queue:
        node, via, used = queue.popleft()
        # At the last level only free edges can be taken: never compute the others.
        allowed = kinds if used < depth else [k for k in kinds if k in FREE]
        if used >= depth and costly:
            frontier.append((rank(via.edge) if rank is not None and via is not None else 0, node))
        new: list[tuple[Edge, int, Node, tuple[NodeKind, str]]] = []
        taken: set[tuple[NodeKind, str]] = set()
        for edge in edges(node, allowed) if allowed else ():
            cost = used + (0 if edge.kind in FREE else 1)
            nxt = edge.dst if forward else edge.src
            key = (nxt.kind, nxt.key)
            if cost > depth or key in seen or key in taken:
                continue
            taken.add(key)
            new.append((edge, cost, nxt, key))
        if rank is not None and len(new) > 1:  # best first, so a ``follow`` budget (LevelCap) also keeps the best
            new.sort(key=lambda t: rank(t[0]))  # stable: the rule's order among equals
        if len(new) > fan_out:
            cuts.append(Cut(CutKind.FAN_OUT, node, len(new) - fan_out, fan_out))
            new = new[:fan_out]
        for i, (edge, cost, nxt, key) in enumerate(new):
            if len(out) >= max_nodes:
                cuts.append(Cut(CutKind.NODES, nxt, len(new) - i + len(queue), max_nodes))
                return Walk(out, cuts + _depth_cut(frontier, depth))
            step = Step(edge, cost, via, forward)
            seen.add(key)
            out.append(step)
            if follow is None or follow(step):
                # FREE edges keep their level: expand them before the next level's nodes.
                (queue.appendleft if cost == used else queue.append)((nxt, step, cost))
        if len(out) >= max_nodes and queue:
            cuts.append(Cut(CutKind.NODES, queue[0][0], len(queue), max_nodes))
            break
    return Walk(out, cuts + _depth_cut(frontier, depth))


def _depth_cut(frontier: list[tuple[int, Node]], depth: int) -> list[Cut]:
    """The DEPTH cut, at the best-ranked node of the last level (the first reached among equals)."""
    if not frontier:
        return []
    return [Cut(CutKind.DEPTH, min(frontier, key=lambda t: t[0])[1], len(frontier), depth)]


def down(starts: Iterable[Node], edges: EdgeSource, kinds: Collection[EdgeKind], depth: int, *, fan_out: int = 60,
         max_nodes: int = 2000, follow: Callable[[Step], bool] | None = None, rank: Rank | None = None) -> Walk:
    """Steps reaching new nodes along ``kinds``, breadth first, at most ``depth`` levels from ``starts``."""
    return _walk(starts, edges, kinds, depth, fan_out, max_nodes, follow, rank, True)


def up(starts: Iterable[Node], edges: EdgeSource, kinds: Collection[EdgeKind], depth: int, *, fan_out: int = 200,
       max_nodes: int = 2000, follow: Callable[[Step], bool] | None = None, rank: Rank | None = None) -> Walk:
    """Like ``down``, against the edges: ``edges`` gives the edges *into* a node."""
    return _walk(starts, edges, kinds, depth, fan_out, max_nodes, follow, rank, False)


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
        self.first_left: Node | None = None

    def __call__(self, step: Step) -> bool:
        if step.node.kind not in self.counted:
            return True
        root = step
        while self.per_start and root.parent is not None:
            root = root.parent
        key = (root.edge.dst.key if self.per_start else "", step.depth)
        self.reached[key] = self.reached.get(key, 0) + 1
        if self.reached[key] <= self.per_level:
            return True
        self.first_left = self.first_left or step.node
        return False

    @property
    def unexpanded(self) -> int:
        return sum(max(0, n - self.per_level) for n in self.reached.values())

    def cuts(self) -> list[Cut]:
        """The LEVEL cut of the walk this followed, if it left any node unexpanded."""
        n = self.unexpanded
        return [Cut(CutKind.LEVEL, self.first_left, n, self.per_level)] if n else []
