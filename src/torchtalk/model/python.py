"""Facts of the Python sources under torch/ (ast), one file at a time."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Annotated

from .facts import Ref, Stored, check_enum, check_line
from .kinds import PyFunctionKind, PyOpRefKind, PyReceiver
from .loc import Loc


@dataclass(frozen=True, slots=True)
class PyClass:
    module: str  # "torch.nn.modules.linear"
    qualname: str  # "Linear", "Outer.Inner"
    name: str
    bases: str  # JSON list of base expressions as written: ["Module"], ["nn.Module"], ["_ConvNd"]
    line: int  # the "class" line
    end_line: int
    doc: str  # first line of the docstring
    decorators: str  # JSON list of decorator source texts
    id: Annotated[int, Stored.ID] = field(default=0, compare=False)
    path: Annotated[str, Stored.PATH] = field(default="", compare=False)

    def __post_init__(self) -> None:
        check_line("PyClass", self.line, self.end_line)

    @property
    def loc(self) -> Loc:
        return Loc(self.path, self.line)


@dataclass(frozen=True, slots=True)
class PyFunction:
    module: str
    qualname: str  # "Linear.forward", "linear"; nested defs: "outer.<locals>.inner"
    name: str
    cls: str  # enclosing class qualname or "" (also "" for defs nested in a def)
    signature: str  # "(self, input: Tensor) -> Tensor" with defaults, X | None, *args, kw-only
    line: int  # the "def" line
    end_line: int
    doc: str
    decorators: str  # JSON list of decorator source texts
    kind: PyFunctionKind
    returns: PyReceiver = PyReceiver.UNKNOWN  # the builtin its return annotation names (Note [Builtin receivers])
    id: Annotated[int, Stored.ID] = field(default=0, compare=False)
    path: Annotated[str, Stored.PATH] = field(default="", compare=False)

    def __post_init__(self) -> None:
        check_line("PyFunction", self.line, self.end_line)
        check_enum("PyFunction", "kind", self.kind, PyFunctionKind)

    @property
    def loc(self) -> Loc:
        return Loc(self.path, self.line)


# Note [Builtin receivers]
# ~~~~~~~~~~~~~~~~~~~~~~~~
# ``memo.add(m)`` in Module.named_modules is a set's ``add``, not the op ``add``: a method call on a name of
# unknown type is taken for a Tensor method when the name is one (graph/py_calls.py, flagged "receiver not
# typed"), but a local whose every binding in its function is a builtin container or string (``memo = set()``,
# ``seen = {}``, ``keys = sorted(...)``, ``msg = f"..."``, ``x = None`` aside), or a parameter annotated with one
# (``memo: Optional[Set[Module]] = None``, ``*args``, ``**kwargs``) and never bound otherwise, holds that builtin
# wherever the function calls its methods. Such a call records the builtin (``PyCall.recv``) and reaches no op.
# A name bound any other way (unpacked, a loop or ``with`` target, ``global`` / ``nonlocal``) stays unknown. A name
# bound once, to what a call returns (``grouped_tensors = Optimizer._group_tensors_by_device_and_dtype(...)``), keeps
# that call's function as written (``PyCall.recv_call``): where it resolves to a function whose return annotation
# names a builtin (``PyFunction.returns``: ``-> Union[Dict[...], Dict[...]]``), ``grouped_tensors.values()`` is a
# dict's, not the op ``values`` (graph/py_calls.py).


# PyCall.literals: what a literal argument is (an int, -1 too; a float; a str or f-string; True/False; None).
LITERAL_KINDS = {"i": "int", "f": "float", "s": "str", "b": "bool", "n": "None"}


@dataclass(frozen=True, slots=True)
class PyCall:
    func: Annotated[int, Ref("PyFunction")]  # the enclosing function, NO_REF at module level
    callee: str  # dotted as written: "F.linear", "torch._C._nn.linear", "self._conv_forward";
    #              a call through a local alias (func = _single_tensor_sgd; func()) names the target
    line: int
    # Note [Branch arms]: the innermost arm of the function that guards the call, as ast.unparse writes it ("if
    # fused and (not torch.jit.is_scripting())", "elif foreach", "else", "except ImportError"), and the line of the
    # statement that starts its choice (arms of one choice share it: they are its alternatives); for a call through a
    # local alias, the arm that guards the assignment choosing this callee. An arm (``ArmKind``) is one of an
    # ``if``/``elif``/``else`` chain, of a conditional expression (``_VF.dropout_(...) if inplace else
    # _VF.dropout(...)``: "if inplace" and "else", told apart by column on one line), a handler of a ``try`` (each
    # ``except`` is an alternative, and the try's ``else``, run when its body did not raise, is the way past them: the
    # body and ``finally`` run on every path), or the rest of a block past a statement that may return ("past the
    # return at line 538": ``if self.padding_mode != "zeros": return F.conv2d(F.pad(...))`` then ``return
    # F.conv2d(...)``; the second runs only when the first did not, and is the if's other arm; past a loop, try or with
    # holding a return, the arm of a choice of that statement's line). ``branch_arms`` counts the arms of the choice
    # with the way past them all when none is taken (an ``if`` without ``else``: one more), so a reader tells an arm
    # that makes no call from one not there; ``branch_past`` tells the rest of a block past a return (the code's way
    # on, which a reader ranks with the calls outside any arm) from an arm as written. ``branch_within``: the arms
    # holding this one's choice, outermost first, each as (head line, arm as written, arms of its choice, past): an
    # arm's calls are those of the choices nested in it too (GRUCell's ``hx.unsqueeze(0) if not is_batched else hx``
    # is in the ``else`` of ``if hx is None``, which reaches unsqueeze where the ``if`` reaches zeros; a past arm's are
    # its own: Note [Arms hold their nested choices] in graph/py_branches.py), and what runs on every path of a nested
    # choice runs only on the paths through its arm.
    branch: str = ""
    branch_line: int = 0
    branch_arms: int = 0  # the arms of that choice, the way past them when none is taken counted (Note [Branch arms])
    branch_past: bool = False  # the arm is the rest of a block past a return: the way on when the if did not return
    branch_within: tuple[tuple[int, str, int, bool], ...] = ()  # the arms around this one's choice, outermost first
    chosen: int = 0  # func = _fused_adamw; func(...): the line of the assignment (0 for a call by its own name)
    recv: PyReceiver = PyReceiver.UNKNOWN  # ``x.m()``: what x holds, when the function shows it is a builtin
    recv_call: str = ""  # ``x.m()`` with x bound once, to ``f(...)``: f as written (Note [Builtin receivers])
    over: str = ""  # ``m(...)`` with m bound only by loops over one iterable: it as written ("self.layers"; Note
    #                 [Loop callables] in extract/pyrecv.py)
    local: bool = False  # ``m(...)`` with m a name the function (or one around it) binds, not the module's
    # Note [Overloads by arguments]: the call's shape, which picks the op overloads it can reach
    nargs: int = -1  # positional arguments written; -1 when one is starred (*args): not known
    keywords: str = ""  # keyword arguments' names as written, comma-separated; "**" for a **mapping
    literals: str = ""  # a letter per argument (positional ones, then keywords): LITERAL_KINDS, "." for no literal
    id: Annotated[int, Stored.ID] = field(default=0, compare=False)
    path: Annotated[str, Stored.PATH] = field(default="", compare=False)

    def __post_init__(self) -> None:
        check_line("PyCall", self.line)
        if self.recv is not PyReceiver.UNKNOWN:  # the default is valid (one check per call of a file: ~200k a build)
            check_enum("PyCall", "recv", self.recv, PyReceiver)

    @property
    def loc(self) -> Loc:
        return Loc(self.path, self.line)


@dataclass(frozen=True, slots=True)
class PyImport:
    alias: str  # local name bound: "F", "torch", "linear"; "*" for a star import
    target: str  # absolute dotted target (relative imports resolved): "torch.nn.functional";
    #              for "*", the module star-imported
    line: int
    id: Annotated[int, Stored.ID] = field(default=0, compare=False)
    path: Annotated[str, Stored.PATH] = field(default="", compare=False)


@dataclass(frozen=True, slots=True)
class PyAssign:
    """Module-level ``name = <dotted>`` or ``name = wrapper(<dotted>, ...)`` (``_add_docstr``)."""

    name: str  # "relu", or "Tensor.__invert__" for an assignment in a class body
    value: str  # dotted name it refers to: "torch._C._nn.linear"
    line: int
    id: Annotated[int, Stored.ID] = field(default=0, compare=False)
    path: Annotated[str, Stored.PATH] = field(default="", compare=False)

    @property
    def loc(self) -> Loc:
        return Loc(self.path, self.line)


@dataclass(frozen=True, slots=True)
class PyAttr:
    """``self.attr = Ctor(...)`` in a method: an instance attribute made by calling ``Ctor`` (Note [Submodules]).

    Note [Submodules]: a module's ``__init__`` makes its parts (``self.self_attn = MultiheadAttention(...)``,
    ``self.linear1 = Linear(...)``) and its ``forward`` calls them (``self.self_attn(x, x, x)``); calling an
    ``nn.Module`` runs its ``forward`` (``Module.__call__`` -> ``_call_impl``), any other object its ``__call__``.
    The row keeps the constructor as written; graph/py_attrs.py resolves it in the assigning method's module, and
    a call ``self.attr(...)`` that names no method of the class goes to the constructed class's ``forward``. One
    whose attribute was made by a call that names no class (``self.weight_fake_quant = qconfig.weight(...)``) is
    named in the answer as not followed, never dropped. An attribute that holds a parameter of the method
    (``self.activation = activation`` in ``__init__(..., activation=F.relu)``, ``self.module = module``) is
    recorded with the parameter and its default as written: a call ``self.activation(x)`` runs the default
    (named as such: a caller may pass another), and with no default it is named as not followed.
    """

    func: Annotated[int, Ref("PyFunction")]  # the method that assigns it (its class is the attribute's owner);
    #                                           NO_REF for a class body's ``name = Ctor()``, whose attr is "Class.name"
    attr: str  # "self_attn"; "Variable._execution_engine" in a class body
    value: str  # the constructor as written: "MultiheadAttention", "nn.Linear", "Dropout"; for a parameter, its
    #             default as written ("F.relu"; "" when it has none or it is no name)
    line: int
    param: str = ""  # the method's parameter the attribute holds ("activation"); "" when a call made it
    id: Annotated[int, Stored.ID] = field(default=0, compare=False)
    path: Annotated[str, Stored.PATH] = field(default="", compare=False)

    def __post_init__(self) -> None:
        check_line("PyAttr", self.line)

    @property
    def loc(self) -> Loc:
        return Loc(self.path, self.line)


@dataclass(frozen=True, slots=True)
class PyOpRef:
    """Where an op is given Python meaning: decompositions, refs, meta, Inductor lowerings."""

    kind: PyOpRefKind
    op: str  # "aten.linear", "aten.add.Tensor", "aten.add"; other torch.ops namespaces as
    #          "prims.xor_sum"; Python callables lowered by path as "torch.as_tensor"
    func: Annotated[int, Ref("PyFunction")]  # NO_REF if not attached to a function
    line: int
    id: Annotated[int, Stored.ID] = field(default=0, compare=False)
    path: Annotated[str, Stored.PATH] = field(default="", compare=False)

    def __post_init__(self) -> None:
        check_line("PyOpRef", self.line)
        check_enum("PyOpRef", "kind", self.kind, PyOpRefKind)

    @property
    def loc(self) -> Loc:
        return Loc(self.path, self.line)
