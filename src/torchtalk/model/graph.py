"""The graph's vocabulary: typed nodes and typed edges between them (see graph/)."""

from __future__ import annotations

from dataclasses import dataclass

from .cpp import CppSymbol
from .facts import check_enum
from .kinds import CutKind, EdgeHow, EdgeKind, NodeKind, PyApiKind
from .loc import GENERATED_PREFIX, Loc
from .ops import Op


@dataclass(frozen=True, slots=True)
class Node:
    """Something an answer can start from or reach.

    ``key`` identifies it within its kind for one index version: an op's full name, a
    C++ symbol's row id, a stub's name, a Python object's dotted name.
    """

    kind: NodeKind
    key: str
    label: str  # how answers name it: "index_select.out", "TORCH_IMPL_FUNC(cumsum_out)", "add_stub"
    loc: Loc | None = None

    def __post_init__(self) -> None:
        check_enum("Node", "kind", self.kind, NodeKind)
        if not self.key:
            raise ValueError(f"Node {self.kind}: empty key")

    def __str__(self) -> str:
        return f"{self.label}  {self.loc}" if self.loc else self.label


@dataclass(frozen=True, slots=True)
class Branch:
    """The ``if``/``elif``/``else`` arm a Python call is made in (Note [Branch arms] in model/python.py), or a C++
    call the GPU walk found in an arm taken only for a sparse, nested, quantized or MKLDNN tensor (``layout``:
    Note [Layout arms] in graph/layout_arms.py).

    Arms with one ``head`` are the alternatives of one choice: ``func = _fused_adamw`` under ``if fused``
    and ``func = _single_tensor_adamw`` under ``else`` make ``func(...)`` a choice between two paths.
    """

    arm: str  # "if fused and (not torch.jit.is_scripting())", "elif foreach", "else"
    head: Loc  # the ``if`` that starts the arm's chain
    chosen: Loc | None = None  # a call through a local alias: the assignment that chose this callee
    # Python: the arms of the choice that are paths (Note [Hand-overs are no path] in graph/py_branches.py)
    arms: int = 0
    past: bool = False  # Python: the arm is the rest of a block past a return (Note [Branch arms])
    top: bool = False  # Python: the choice is on every path through its function (Note [Ops on every path])
    # Python: the arms holding this one's choice, outermost first, as (head, arm): the arm's calls are theirs too
    within: tuple[tuple[Loc, str], ...] = ()
    layout: bool = False  # C++: the arm runs only for a tensor of a layout other than dense strided


@dataclass(frozen=True, slots=True)
class Edge:
    """``src`` reaches ``dst`` (Note [Edge direction] in kinds.py), with the site that says so.

    ``key`` qualifies the edge where its kind needs it: the dispatch key of a KERNEL, WRAPPER or
    AUTOGRAD edge, the backend of a STUB_KERNEL edge, the ``PyApiKind`` of a BINDING edge read from
    the binding tables (``binding_kind``), the class ``self`` is an instance of in the method a PY_CALL edge
    reaches, where the caller's code shows it (``self.m()``, ``super().m()``: the caller's own; ``self.bn(x)``: the
    class ``__init__`` made it of; Note [Whose self] in graph/py_attrs.py). ``how`` says how the edge was made
    (Note [Edge provenance]), ``written`` the call or name as the source spells it (``at::empty``,
    ``self.add_``, ``F.linear``), which tells apart two calls on one line. ``note`` is display text only
    ("structured_delegate cumsum.out", a launch's ``<<<grid, block>>>``): nothing decides on it.
    """

    src: Node
    dst: Node
    kind: EdgeKind
    site: Loc | None = None  # the call site, YAML line or registration line
    key: str = ""
    note: str = ""
    how: EdgeHow = EdgeHow.DIRECT
    written: str = ""
    # PY_CALL: the arm of an if/elif/else chain the call is made in; a C++ call of the GPU walk or an OP_CALL: the
    # layout arm it is made in (Note [Layout arms] in graph/layout_arms.py)
    branch: Branch | None = None

    def __post_init__(self) -> None:
        check_enum("Edge", "kind", self.kind, EdgeKind)
        check_enum("Edge", "how", self.how, EdgeHow)

    @property
    def binding_kind(self) -> PyApiKind | None:
        """How a BINDING edge read from the binding tables binds its Python name (None for other edges)."""
        if self.kind is not EdgeKind.BINDING or not self.key:
            return None
        return PyApiKind(self.key)


@dataclass(frozen=True, slots=True)
class Cut:
    """What a walk left out (Note [No silent cut] in graph/walk.py), and the call that shows it.

    ``at`` is where: the node whose edges were cut (FAN_OUT), the first of the nodes not walked
    from (DEPTH, LEVEL, NODES). ``left`` counts what was left out (edges for FAN_OUT, nodes
    otherwise), ``limit`` is the limit that applied. ``shows`` is the exact tool call that shows
    what was left out (``calls("at::native::f")``, ``impact("f", depth=4)``); the query that ran
    the walk fills it in, since only it knows its tools' parameters.
    """

    kind: CutKind
    at: Node | None
    left: int
    limit: int
    shows: str = ""

    def __post_init__(self) -> None:
        check_enum("Cut", "kind", self.kind, CutKind)


# Note [Nodes of facts]: the graph and the pictures of answers (render/) make nodes of ops and C++ symbols
# the same way, so a picture's nodes are the graph's (the web view merges expansions on them).
def op_node(op: Op) -> Node:
    return Node(NodeKind.OP, op.full_name, op.full_name, op.loc)


def cpp_node(sym: CppSymbol) -> Node:
    """A C++ symbol's node: a GPU kernel, a generated Register<Key>.cpp wrapper, or a function."""
    if sym.kind.is_gpu_kernel:
        kind = NodeKind.GPU_KERNEL
    elif sym.path.startswith(GENERATED_PREFIX) and sym.name.startswith("wrapper_"):
        kind = NodeKind.WRAPPER
    else:
        kind = NodeKind.CPP_FUNCTION
    return Node(kind, str(sym.id), sym.display, sym.loc)
