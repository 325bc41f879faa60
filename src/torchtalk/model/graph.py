"""The graph's vocabulary: typed nodes and typed edges between them (see graph/)."""

from __future__ import annotations

from dataclasses import dataclass

from .facts import check_enum
from .kinds import EdgeKind, NodeKind
from .loc import Loc


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
class Edge:
    """``src`` reaches ``dst`` (Note [Edge direction] in kinds.py), with the site that says so.

    ``key`` qualifies the edge where its kind needs it: the dispatch key of a KERNEL or
    WRAPPER edge, the backend of a STUB_KERNEL edge. ``note`` is one line on how the
    link was made ("structured_delegate cumsum.out", "REGISTER_DISPATCH", "at::_ops::add_Tensor::call").
    """

    src: Node
    dst: Node
    kind: EdgeKind
    site: Loc | None = None  # the call site, YAML line or registration line
    key: str = ""
    note: str = ""

    def __post_init__(self) -> None:
        check_enum("Edge", "kind", self.kind, EdgeKind)
