"""What ``affected`` answers: the change as found, what it reaches, the tests to run, and what was cut."""

from __future__ import annotations

from dataclasses import dataclass, field

from ...model import Edge, Loc, Node
from ...model.change import ChangeStatus, DiffSide, FileKind
from ...model.dispatch import Device
from .definitions import ChangedNode
from .generators import GeneratorChange
from .python import AffectedModule
from .tests import AffectedTest


@dataclass
class ChangedFile:
    path: str  # relative to the tree ("" when the input names nothing here)
    written: str  # as the input wrote it
    status: ChangeStatus
    kind: FileKind | None  # None when no line of it can be mapped (it names nothing here, binary, mode only)
    side: DiffSide | None  # which side of the diff the tree holds (None for names)
    lines: int  # changed lines mapped
    found: int  # changed definitions, tests and entries found in it
    note: str  # per-file problem, lines no definition spans, what was cut


@dataclass
class RemovedName:
    name: str  # a definition the change deletes or renames (from the diff's removed lines)
    path: str
    still_named: list[Loc]  # call sites and registrations that still name it
    total: int


@dataclass
class UnknownName:
    name: str
    suggestions: list[str]


@dataclass
class ReachedOp:
    op: Node
    depth: int  # calls between the change and the op (registrations cost none)
    path: str  # how the change reaches it: "softmax_kernel <- registered [CPU] for softmax_stub <- ..."
    chain: list[Edge]  # the same, as edges (walked against their direction)
    python: list[str]  # its Python names (torch.X, Tensor.X, torch.nn.functional.X)


@dataclass(frozen=True)
class Sample:
    """A change that reaches more ops than tests were looked up for (a helper nearly every kernel calls): its
    tests, and the ones to run first, are a sample of what it reaches, not coverage."""

    ops: int  # ops reached (overloads counted apart)
    names: int  # op names among them (cumsum for cumsum, cumsum.out, cumsum_)
    looked_up: int  # op names whose tests were looked up (the closest)
    functions: int  # C++ functions on the way up
    depth: int  # as walked
    capped: bool  # the walk's caps (level, node budget, fan-out) left more out: it reaches further still


@dataclass
class AffectedResult:
    source: str  # where the change came from
    depth: int  # as asked
    walked_depth: int  # as walked: deeper when no op is within the asked depth (Note [Walk on to an op])
    device: Device | None  # when only that device's code changed: tests are narrowed to it
    files: list[ChangedFile]
    changed: list[ChangedNode]
    removed: list[RemovedName]
    unknown: list[UnknownName]
    ops: list[ReachedOp]
    ops_total: int
    functions_reached: int  # C++ functions on the way up
    python: list[str]
    modules: list[AffectedModule]
    generators: list[GeneratorChange]
    tests: list[AffectedTest]
    tests_total: int
    run_first: list[str]
    tests_changed: int  # tests and OpInfo entries the change edits
    sample: Sample | None = None  # set when the tests are a sample of what the change reaches
    # The Python functions above a changed one (fq, how it reaches the change), closest first
    python_callers: list[tuple[str, str]] = field(default_factory=list)
    compiled: list[str] = field(default_factory=list)  # ops whose walk stopped at them (Note [Compiled only])
    # How the tests were found when nothing the change reaches has tests of its own (imports.py), "" otherwise
    tests_by: str = ""
    cuts: list[str] = field(default_factory=list)
