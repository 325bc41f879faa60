"""The Python walk to the ops: what a Python function reaches, and the paths its code chooses between.

Note [Walk to the ops]: trace_module (from ``forward`` / ``step``) and trace (from a Python
function such as ``torch.nn.functional.x``) walk PY_CALL and BINDING edges with graph/walk.py's
one walk until they reach ops. No depth decides what is shown (``DEPTH_GUARD`` only stops a
pathological chain, and is named if it does): the limit is the answer's size, ``BUDGET`` steps,
the calls of one function ranked by the caller (ops first) before ``FAN_OUT`` cuts them, and
whatever a limit leaves out is a Cut the answer names.

A function whose body chooses between functions in the arms of one if/elif/else chain (Note
[Branch arms] in model/python.py) is a ``Choice``: ``adamw()`` binds ``func`` to
``_fused_adamw`` under ``if fused``, ``_multi_tensor_adamw`` under ``elif foreach`` and
``_single_tensor_adamw`` under ``else``, then calls ``func(...)``; a forward that calls one
function under ``if self.training`` and another under ``else`` chooses the same way. Each arm
lists the ops reached through it (its functions' reach, over the walk's own edges), the calls of
the choices nested in it included (``Branch.within``: GRUCell's ``else: hx = hx.unsqueeze(0) if
not is_batched else hx`` reaches unsqueeze where ``if hx is None`` reaches zeros), so the answer
groups the ops by path (Note [Choices that change the ops] below says which are shown).

Note [Ops on every path]: "Outside any if (on every path)" names the ops that run whichever way the code goes, and
never one that may not run. A function reaches an op on every path when
- it calls the op, or a function reaching it on every path, outside any arm (Note [Branch arms] in
  model/python.py: an arm of an if/elif/else, of ``a if c else b``, a try's ``except`` handler (or its ``else``), or
  the rest of a block past a statement that may return; so Conv2d's ``return F.conv2d(...)`` after ``if
  self.padding_mode != "zeros": return F.conv2d(F.pad(...))`` is in an arm, and so is either side of dropout's
  ``_VF.dropout_(...) if inplace else _VF.dropout(...)``, and a call in an ``except``); a call in a loop's body, a
  try's body or its ``finally`` counts as made;
- or every arm of one choice reaches it so (GRU's ``_VF.gru`` in both arms of ``if batch_sizes is None``), where
  every arm that is a path (Note [Hand-overs are no path] in graph/py_branches.py) makes a call the walk took: an arm
  with no call, or the way past an ``if`` with no ``else``, runs none of them. The choice must be on every path
  itself: at the function's own level, not in an arm of another (``Branch.top``; the one path past a hand-over to
  ``__torch_function__`` is every path). A choice nested in an arm counts for nothing (it may not run), and a
  function whose walk is under way (a cycle) adds nothing.

An op is a native_functions.yaml op or a TORCH_LIBRARY op of another namespace that Python calls as
``torch.ops.ns.op`` (Note [Library ops]: ``quantized::linear_relu_dynamic``), named ``ns::op``. A Python
function the caller's ``follow`` does not walk into (outside the modules its answer expands) is no silent
stop: the walk records a ``SCOPE`` cut at it, whose call (``trace`` of the function) shows what it reaches.
"""

from __future__ import annotations

from collections.abc import Callable, Collection
from dataclasses import dataclass, field

from ..graph import Graph, Step, down
from ..graph.library_impls import library_op_name, library_python
from ..graph.py_calls import PyContext
from ..graph.pynames import pynames
from ..graph.walk import Rank
from ..model import Cut, CutKind, Edge, EdgeKind, Loc, Node, NodeKind

KINDS = (EdgeKind.PY_CALL, EdgeKind.BINDING)
DEPTH_GUARD = 16  # calls from the start: only a chain this long is cut by depth (and the cut is named)
BUDGET = 600  # steps of one walk: the answer's size (its call tree), not a depth
FAN_OUT = 80  # calls followed out of one function, ranked by the walk's rank (ops first)

_Key = tuple[NodeKind, str]


@dataclass
class Arm:
    """One arm of a choice: what it calls and the ops reached through it."""

    arm: str  # as written: "if fused and (not torch.jit.is_scripting())", "else"
    calls: list[Edge]  # the arm's calls (PY_CALL edges), functions first
    ops: list[str] = field(default_factory=list)  # op full names (ns::op for a library op) reached, in walk order

    @property
    def chosen(self) -> Loc | None:
        """Where the path is chosen: the assignment of a local alias (func = _fused_adamw), else the call."""
        first = self.calls[0]
        return first.branch.chosen if first.branch is not None and first.branch.chosen else first.site


@dataclass
class Choice:
    """An if/elif/else chain of one function whose arms call different functions: the paths of the code."""

    where: Node  # the function that chooses
    head: Loc  # its ``if``
    arms: list[Arm]


@dataclass
class PyWalk:
    steps: list[Step]
    cuts: list[Cut]  # what the walk's limits left out (the caller names the call that shows each)
    choices: list[Choice] = field(default_factory=list)
    common: list[str] = field(default_factory=list)  # op full names reached through calls no ``if`` arm guards
    # Note [Calls shown once]: a function the walk reached is stepped into once, at its first call; its other calls
    # (self.norm2 after self.norm1, self.linear1 beside self.linear2), and every call of an op the walk reached at
    # another call (transpose at a second site), are edges the walk did not take. They are kept here, per calling
    # function, so a call tree lists every call its functions make.
    again: dict[_Key, list[Edge]] = field(default_factory=dict)
    library: dict[str, str] = field(default_factory=dict)  # the TORCH_LIBRARY ops reached: torch.ops.ns.op -> ns::op


def _key(n: Node) -> _Key:
    return (n.kind, n.key)


def walk_to_ops(g: Graph, start: Node, follow: Callable[[Step], bool], rank: Rank) -> PyWalk:
    """The walk from ``start`` to the ops (Note [Walk to the ops]), its choices and the ops on every path."""
    memo: dict[tuple[_Key, tuple[EdgeKind, ...]], list[Edge]] = {}
    # Note [Whose self] in graph/py_attrs.py: the class self is an instance of in a method the walk reached, as the
    # edge reaching it first names it; a method without one is walked in ``g``'s context
    selves: dict[_Key, str] = {}
    classes = pynames(g.ix)

    def edges(node: Node, kinds: Collection[EdgeKind]) -> list[Edge]:
        k = (_key(node), tuple(kinds))
        if k not in memo:
            cls = selves.get(_key(node))
            memo[k] = (g.within(PyContext(classes.mro(cls))) if cls else g).out(node, kinds)
            for e in memo[k]:
                if e.kind is EdgeKind.PY_CALL and e.key and e.dst.kind is NodeKind.PY_FUNCTION:
                    selves.setdefault(_key(e.dst), e.key)
        return memo[k]

    expanded: set[_Key] = {_key(start)}

    declined: list[Node] = []  # the Python functions reached and not walked into: a SCOPE cut

    def noted(s: Step) -> bool:
        if follow(s):
            expanded.add(_key(s.node))
            return True
        if s.node.kind is NodeKind.PY_FUNCTION:
            declined.append(s.node)
        return False

    walk = down([start], edges, KINDS, DEPTH_GUARD, fan_out=FAN_OUT, max_nodes=BUDGET, follow=noted, rank=rank)
    if declined:
        walk.cuts.append(Cut(CutKind.SCOPE, declined[0], len(declined), 0))
    library = library_python(g.ix)

    def library_op(n: Node) -> str | None:
        """``ns::op`` when ``n`` is a TORCH_LIBRARY op as Python calls it (torch.ops.ns.op[.overload])."""
        if n.kind is not NodeKind.BINDING or ".".join(n.key.split(".")[:4]) not in library:
            return None
        return library_op_name(n.key.removesuffix(".default"))
    reached = {_key(s.node) for s in walk.steps} | {_key(start)}
    order = [start] + [s.node for s in walk.steps if _key(s.node) in expanded]

    def own(node: Node) -> list[Edge]:
        """The node's edges the walk took or could have taken: to nodes it reached."""
        return [e for e in edges(node, KINDS) if _key(e.dst) in reached] if _key(node) in expanded else []

    reach_memo: dict[_Key, dict[str, None]] = {}

    def reach(node: Node) -> dict[str, None]:
        """The ops reached from ``node`` over the walk's edges, in walk order."""
        if _key(node) in reach_memo:
            return reach_memo[_key(node)]
        out: dict[str, None] = {}
        seen: set[_Key] = {_key(node)}
        stack = [node]
        while stack:
            n = stack.pop(0)
            for e in own(n):
                if e.dst.kind is NodeKind.OP:
                    out.setdefault(e.dst.key)
                elif (lib := library_op(e.dst)) is not None:
                    out.setdefault(lib)
                elif _key(e.dst) not in seen:
                    seen.add(_key(e.dst))
                    stack.append(e.dst)
        reach_memo[_key(node)] = out
        return out

    always_memo: dict[_Key, set[str]] = {}

    def op_of(e: Edge) -> str | None:
        return e.dst.key if e.dst.kind is NodeKind.OP else library_op(e.dst)

    def always(root: Node) -> set[str]:
        """Note [Ops on every path]: the ops every path through ``root``'s body reaches, over the walk's edges."""
        stack, under_way = [root], {_key(root)}
        while stack and _key(root) not in always_memo:
            n = stack[-1]
            callee = next((e.dst for e in own(n) if op_of(e) is None and _key(e.dst) not in always_memo
                           and _key(e.dst) not in under_way), None)
            if callee is not None:  # its callees first; one whose walk is under way (a cycle) adds nothing
                stack.append(callee)
                under_way.add(_key(callee))
                continue
            out: set[str] = set()
            arms: dict[Loc, dict[str, set[str]]] = {}
            paths: dict[Loc, int] = {}
            for e in own(n):
                op = op_of(e)
                got = {op} if op is not None else always_memo.get(_key(e.dst), set())
                if e.branch is None:
                    out |= got
                elif e.branch.top:
                    arms.setdefault(e.branch.head, {}).setdefault(e.branch.arm, set()).update(got)
                    paths[e.branch.head] = e.branch.arms
            for head, by_arm in arms.items():
                if len(by_arm) >= paths[head]:  # every path of the choice makes calls the walk took
                    out |= set.intersection(*by_arm.values())
            always_memo[_key(n)] = out
            stack.pop()
            under_way.discard(_key(n))
        return always_memo[_key(root)]

    choices: list[Choice] = []
    taken = {(_key(s.parent.node) if s.parent is not None else _key(start), _key(s.node), s.edge.site,
              s.edge.written) for s in walk.steps}
    again: dict[_Key, list[Edge]] = {}  # Note [Calls shown once]
    for node in order:
        by_head: dict[Loc, dict[str, list[Edge]]] = {}
        for e in own(node):
            if e.kind is EdgeKind.PY_CALL and e.branch is not None:  # in its arm and those around it (Branch.within)
                for head, arm in (*e.branch.within, (e.branch.head, e.branch.arm)):
                    by_head.setdefault(head, {}).setdefault(arm, []).append(e)
            # a call of an op too (it is no less a call), not the op a name is bound to (F.linear = torch._C._nn.linear)
            if (e.kind is EdgeKind.PY_CALL or e.dst.kind is not NodeKind.OP) and (
                    _key(node), _key(e.dst), e.site, e.written) not in taken:
                again.setdefault(_key(node), []).append(e)
        for head, arms in by_head.items():
            choice = Choice(node, head, [])
            for text, calls in arms.items():
                calls = sorted(calls, key=lambda e: e.dst.kind is NodeKind.OP)
                ops: dict[str, None] = {}
                for e in calls:
                    lib = library_op(e.dst)
                    ops.update({e.dst.key: None} if e.dst.kind is NodeKind.OP else {lib: None} if lib else reach(e.dst))
                choice.arms.append(Arm(text, calls, list(ops)))
            # Note [Choices that change the ops]: a choice is shown where its arms reach different ops; arms that
            # call ops only count too (Adam's `if maximize:` _foreach_add_ or _foreach_add, which the rule "two arms
            # calling Python functions" left out), and arms reaching the same ops choose nothing (Adam's line 579,
            # both arms calling one function). Arms reaching no op stay, for the answer's one line of such paths.
            names = [frozenset(o.split(".", 1)[0] for o in a.ops) for a in choice.arms]
            full = [frozenset(a.ops) for a in choice.arms]
            # overloads count where each arm's arguments decide one per op (gru.input / gru.data), not where a
            # call's arguments leave several (_foreach_add_'s .List, .Tensor, ...)
            decided = all(len(f) == len(n) for f, n in zip(full, names, strict=True))
            if len(names) > 1 and (not any(names) or len(set(names)) > 1 or decided and len(set(full)) > 1):
                choices.append(choice)  # (arms reaching no op: the answer's one line of such paths)
    library_reached = {s.node.key: name for s in walk.steps if (name := library_op(s.node)) is not None}
    every = always(start)
    return PyWalk(walk.steps, walk.cuts, choices, [o for o in reach(start) if o in every], again, library_reached)
