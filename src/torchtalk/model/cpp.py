"""Facts of the C++ / CUDA / Objective-C++ / Metal sources, one file at a time.

Calls are kept as written (callee name, qualifier, caller); what they reach is
decided at query time by graph/ (stack-graphs style), so a refresh of one file
never relinks the others.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Annotated

from .facts import NO_REF, Ref, Stored, check_enum, check_line
from .kinds import CallKind, GeneratedKind, RegistrationKind, SymbolKind, UsingKind
from .loc import Loc


@dataclass(frozen=True, slots=True)
class CppSymbol:
    """A function, method, structured kernel or GPU kernel (definition or declaration)."""

    name: str  # last component users type: "index_select_cuda"; TORCH_IMPL_FUNC(x) -> "x"
    qualname: str  # "at::native::index_select_cuda"; anonymous namespaces as "(anonymous)";
    #                TORCH_IMPL_FUNC(x) -> "at::native::structured_x::impl"
    params: str  # normalised parameter list "(const Tensor& self, int64_t dim)": keeps overloads apart
    kind: SymbolKind
    line: int  # line of the name (TORCH_IMPL_FUNC(...) line; for macro expansions, the invocation)
    end_line: int
    is_definition: bool
    macro: str  # "" or the macro whose expansion produced it ("CREATE_UNARY_TORCH_IMPL_FUNC")
    id: Annotated[int, Stored.ID] = field(default=0, compare=False)
    path: Annotated[str, Stored.PATH] = field(default="", compare=False)

    def __post_init__(self) -> None:
        check_line("CppSymbol", self.line, self.end_line)
        check_enum("CppSymbol", "kind", self.kind, SymbolKind)
        if not self.name or not self.qualname.endswith(self.name) and not self.kind.is_structured:
            raise ValueError(f"CppSymbol {self.qualname!r} does not end with its name {self.name!r}")

    @property
    def loc(self) -> Loc:
        return Loc(self.path, self.line)

    @property
    def in_generated(self) -> bool:
        return self.loc.in_generated

    @property
    def is_file_local(self) -> bool:
        """Internal linkage as the qualified name shows it (anonymous namespace)."""
        return "(anonymous)" in self.qualname

    @property
    def display(self) -> str:
        """How answers name it: the macro form for structured kernels, __global__ for GPU kernels."""
        if self.kind is SymbolKind.IMPL_FUNC:
            return f"TORCH_IMPL_FUNC({self.name})"
        if self.kind is SymbolKind.META_FUNC:
            return f"TORCH_META_FUNC({self.name})"
        if self.kind is SymbolKind.PRECOMPUTE_META_FUNC:
            return f"TORCH_PRECOMPUTE_META_FUNC({self.name})"
        if self.kind is SymbolKind.GLOBAL_KERNEL:
            return f"__global__ {self.qualname}"
        return self.qualname


@dataclass(frozen=True, slots=True)
class CallSite:
    """A call inside a function body, as written. Never from comments or string literals."""

    caller: Annotated[int, Ref("CppSymbol")]  # the enclosing definition; NO_REF outside any (static initialisers)
    callee: str  # last identifier: "empty", "add_", "call" (for at::_ops::X::call)
    qualifier: str  # scope as written minus template args: "at", "at::_ops::add_Tensor", "", "::" (global);
    #                 for methods, the receiver's text (first 80 chars)
    line: int
    kind: CallKind
    detail: str  # LAUNCH: "grid, block[, smem, stream]"; GPU_LAUNCH: functor name or "lambda@LINE"
    id: Annotated[int, Stored.ID] = field(default=0, compare=False)
    path: Annotated[str, Stored.PATH] = field(default="", compare=False)

    def __post_init__(self) -> None:
        check_line("CallSite", self.line)
        check_enum("CallSite", "kind", self.kind, CallKind)

    @property
    def loc(self) -> Loc:
        return Loc(self.path, self.line)

    @property
    def written(self) -> str:
        """The call as the source spells it: ``at::empty``, ``self.add_``, ``::abs``."""
        if self.kind is CallKind.METHOD:
            return f"{self.qualifier}.{self.callee}" if self.qualifier else f".{self.callee}"
        if self.qualifier == "::":
            return f"::{self.callee}"
        return f"{self.qualifier}::{self.callee}" if self.qualifier else self.callee

    @property
    def has_caller(self) -> bool:
        return self.caller != NO_REF


@dataclass(frozen=True, slots=True)
class Registration:
    """A registration macro or table entry that ties a name to a C++ function."""

    kind: RegistrationKind
    name: str  # stub ("add_stub"), op ("add.Tensor" without "aten::"), or Python name
    target: str  # kernel/function as written, minus "&": "CPU_CAPABILITY::sign_kernel"; "lambda@LINE";
    #              DECLARE_DISPATCH: the function-pointer type
    key: str  # REGISTER_DISPATCH: backend (CPU, CUDA, MPS); TORCH_LIBRARY_IMPL: dispatch key; namespace;
    #           PyMethodDef: table name; pybind: receiver at the root of the .def chain
    line: int
    detail: str  # the macro or call as written (REGISTER_DISPATCH, m.impl, table name, schema string, ".def")
    scope: Annotated[int, Ref("CppSymbol")]  # the symbol enclosing it, or NO_REF
    id: Annotated[int, Stored.ID] = field(default=0, compare=False)
    path: Annotated[str, Stored.PATH] = field(default="", compare=False)

    def __post_init__(self) -> None:
        check_line("Registration", self.line)
        check_enum("Registration", "kind", self.kind, RegistrationKind)

    @property
    def loc(self) -> Loc:
        return Loc(self.path, self.line)

    @property
    def target_name(self) -> str:
        """The last component of the target: what a kernel's definition is named."""
        return self.target.split("::")[-1]


@dataclass(frozen=True, slots=True)
class Using:
    """``using namespace X;`` / ``using X::f;`` / a namespace alias: widens lookup after it."""

    kind: UsingKind
    name: str  # the namespace (NAMESPACE), the qualified name brought in (DECLARATION), the alias target (ALIAS)
    alias: str  # ALIAS: the new name; DECLARATION: the last component; "" for NAMESPACE
    line: int
    scope: str  # qualname of the namespace/function it appears in, "" at file level
    id: Annotated[int, Stored.ID] = field(default=0, compare=False)
    path: Annotated[str, Stored.PATH] = field(default="", compare=False)

    def __post_init__(self) -> None:
        check_line("Using", self.line)
        check_enum("Using", "kind", self.kind, UsingKind)


@dataclass(frozen=True, slots=True)
class GeneratedFact:
    """What generated code says in strings and comments, which C++ facts do not carry."""

    kind: GeneratedKind
    value: str  # the signature ("atan2(Tensor input, ...)|deprecated"), the op ("atan2.out"), the node class
    line: int
    scope: Annotated[int, Ref("CppSymbol")]  # the enclosing function, or NO_REF
    id: Annotated[int, Stored.ID] = field(default=0, compare=False)
    path: Annotated[str, Stored.PATH] = field(default="", compare=False)

    def __post_init__(self) -> None:
        check_line("GeneratedFact", self.line)
        check_enum("GeneratedFact", "kind", self.kind, GeneratedKind)
