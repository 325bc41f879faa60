"""What trace answers: an op's kernels per key, their stubs, GPU lines and the ops they call, its autograd, and a
Python function's path to the ops it reaches (query/trace.py computes them)."""

from __future__ import annotations

from dataclasses import dataclass, field

from ..graph.registry import PyName
from ..model import (
    Branch,
    CppSymbol,
    Cut,
    Derivative,
    DerivativeFormula,
    DerivativeMatch,
    DispatchEntry,
    Edge,
    Loc,
    Op,
    PyDefKind,
)
from . import generated as gen_q
from .bound import BindingTrace
from .handbound import HandBinding
from .library_ops import LibraryOp
from .no_entry import AutogradWithoutEntry
from .pywalk import Choice


@dataclass
class StubUse:
    call: Edge  # STUB_CALL: site and caller
    kernels: list[Edge]  # STUB_KERNEL: key = backend


@dataclass
class OpCall:
    """An op a composite kernel calls, and that op's kernel per key (one level down)."""

    edge: Edge  # OP_CALL
    kernels: list[DispatchEntry]


@dataclass
class GpuLine:
    """One of a kernel's GPU lines: a launch or a library call its GPU walk reached (graph/gpu.py)."""

    site: Edge  # the LAUNCH edge, or the call into the library (CALL or UNRESOLVED)
    library: str = ""  # the library called (cuBLAS, CUDA runtime, ...); "" for a launch
    via: str = ""  # the other op whose code it is (Note [Nearest first]); "" for the op's own
    # the arm of an ``if`` taken only for a sparse, nested, quantized or MKLDNN tensor the way to it passes (Note
    # [Layout arms]): the line runs only for such tensors, which the answer says; None when its path is the dense one
    arm: Branch | None = None


@dataclass
class KernelInfo:
    entry: DispatchEntry
    definitions: list[CppSymbol] = field(default_factory=list)
    stubs: list[StubUse] = field(default_factory=list)
    launches: list[Edge] = field(default_factory=list)  # LAUNCH edges below the kernel (and its CUDA stubs)
    op_calls: list[OpCall] = field(default_factory=list)  # composite kernels: the ops they call
    cuts: list[Cut] = field(default_factory=list)  # what the walk for its stubs left out
    gpu_cuts: list[Cut] = field(default_factory=list)  # what its GPU walk (graph/gpu.py) left out
    gpu: list[GpuLine] = field(default_factory=list)  # its launches and library calls, nearest first
    branches: dict[int, str] = field(default_factory=dict)  # twin definitions: id -> #if branch (Note [Twin
    #                                                          definitions] in graph/pp_branches.py)


@dataclass
class DerivInfo:
    derivative: Derivative
    formulas: list[DerivativeFormula]
    backward: list[Edge]  # BACKWARD edges: the ops and helpers its backward formulas call
    forward_ad: list[Edge] = field(default_factory=list)  # FORWARD_AD edges: those its forward-mode (JVP) ones call
    entry_of: str = ""  # the op whose entry it is: the traced op's own, or the one torchgen gives it
    match: DerivativeMatch = DerivativeMatch.EXACT  # how torchgen gave it (Note [The entry an op uses])
    # whether its backward / forward-mode formulas call the op itself (no edge: Note [Formulas torchgen writes])
    backward_itself: bool = False
    forward_ad_itself: bool = False


@dataclass
class OpTrace:
    op: Op
    kernels: list[KernelInfo]
    python: list[PyName]
    derivatives: list[DerivInfo]
    py_refs: list[tuple[str, str, Loc]] = field(default_factory=list)  # (kind, function, loc)
    generated: gen_q.GeneratedInfo | None = None
    py_callers: list[Edge] = field(default_factory=list)  # BINDING: public Python functions calling it (F.x)
    handwritten: list[HandBinding] = field(default_factory=list)  # hand-written Python bindings that wrap it
    no_entry: AutogradWithoutEntry | None = None  # no derivatives.yaml entry (not an out= op): what autograd does


@dataclass
class PythonEntry:
    """A Python function asked about by name, and the path from it to the ops it calls."""

    name: str
    loc: Loc
    signature: str  # "(input, dim)"; for a name bound by assignment " = <what it is bound to>"
    calls: list[Edge]  # PY_CALL / BINDING edges, in walk order
    kind: PyDefKind = PyDefKind.FUNCTION  # or ASSIGN: a name bound by assignment
    cuts: list[Cut] = field(default_factory=list)
    branches: dict[str, str] = field(default_factory=dict)  # call site "path:line" -> the if/elif it runs under
    choices: list[Choice] = field(default_factory=list)  # the paths its code chooses between (query/pywalk.py)


@dataclass
class TraceResult:
    query: str
    focus: str
    ops: list[OpTrace]
    related: list[str]
    composite_notes: dict[str, str]
    cpp_indexed: bool
    notes: list[str] = field(default_factory=list)
    via: str = ""  # how a name that is not an op's was resolved (an autograd node, an alias)
    entry: PythonEntry | None = None
    bindings: list[BindingTrace] = field(default_factory=list)
    cuts: list[Cut] = field(default_factory=list)  # what the walks of this answer left out, and the calls showing it
    library: LibraryOp | None = None  # Note [Library ops]: the TORCH_LIBRARY op asked (no op of native_functions.yaml)
