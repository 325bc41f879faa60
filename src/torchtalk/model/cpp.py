"""Facts of the C++ / CUDA / Objective-C++ / Metal sources, one file at a time.

Calls are kept as written (callee name, qualifier, caller); what they reach is
decided at query time by graph/ (stack-graphs style), so a refresh of one file
never relinks the others.
"""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass, field
from typing import Annotated

from .facts import NO_REF, Ref, Stored, check_enum, check_line
from .kinds import CallKind, ClassKind, GeneratedKind, RegistrationKind, StrEnum, SymbolKind, UsingKind
from .loc import Loc

# The builtin types' names (a type of none of these is a class, an enum or a standard library type).
#: How a qualname spells an unnamed namespace's part: ``at::native::(anonymous)::f``, which C++ code names as
#: ``at::native::f``.
ANONYMOUS = "(anonymous)::"
#: The unnamed namespaces, one in another, whose names are members of the namespace enclosing them (C++'s implicit
#: using-directive, transitively): the generated Register*.cpp define their wrappers two deep.
ANONYMOUS_NESTING = ("(anonymous)", "(anonymous)::(anonymous)", "(anonymous)::(anonymous)::(anonymous)")
#: One level of template arguments, as a name is written without them (``QConvInt8<3, false>::run``: QConvInt8::run).
TEMPLATE_ARGS = re.compile(r"<[^<>]*>")


def written_as(qualname: str, written: str) -> bool:
    """Whether the definition ``qualname`` is what code writing ``written`` (a name, qualified or not) names: the
    whole name or its tail after a ``::``, an unnamed namespace adding no part (at::native::(anonymous)::f is
    at::native::f, native::f and f)."""
    own = qualname.replace(ANONYMOUS, "")
    return own == written or own.endswith("::" + written)

BUILTINS = frozenset((
    "void bool char wchar_t char16_t char32_t short int long float double unsigned signed "
    "int8_t int16_t int32_t int64_t uint8_t uint16_t uint32_t uint64_t size_t ssize_t ptrdiff_t intptr_t "
    "uintptr_t std::size_t std::int64_t std::int32_t std::uint8_t std::nullptr_t nullptr_t").split())


def is_builtin_name(name: str) -> bool:
    """A builtin type's name, also of several words ("long long", "unsigned int": every word a builtin)."""
    return name in BUILTINS or " " in name and all(w in BUILTINS for w in name.split())


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
    ret: str = ""  # declared return type as written, cv and & dropped ("Tensor", "std::tuple<Tensor,Tensor>",
    #                "TensorImpl*"); "" for constructors and macro blocks
    internal: bool = False  # ``static`` at namespace scope: internal linkage, visible only in its own file
    is_template: bool = False  # declared under its own ``template <...>``
    spec: str = ""  # template arguments of the class specialization it is a member of ("c10::BFloat16" for
    #                 numeric_limits<c10::BFloat16>::infinity); "" otherwise
    fparams: str = ""  # a function template's parameters that are functions, "position:name" ","-separated
    #                    ("1:compute" for template <typename index_t, void compute(const index_t*)>): a call
    #                    written with template arguments hands it the functions it names there (Note [Functions
    #                    as template arguments] in graph/handed.py)
    is_virtual: bool = False  # a method written ``virtual``, ``override`` or ``final`` in its class (Note [Virtual
    #                           calls] in graph/overrides.py); an out-of-line definition never says so itself
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
        """Internal linkage: an anonymous namespace, or ``static`` at namespace scope."""
        return self.internal or "(anonymous)" in self.qualname

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
    detail: str  # LAUNCH: "grid, block[, smem, stream]"; GPU_LAUNCH: functor, "lambda@LINE"; REF: TEMPLATE_ARGUMENT
    # Type expressions (Note [Type expressions] below, as their text ``str(TypeExpr)``):
    recv: str = ""  # METHOD: the receiver's type expression; CALL of a local variable (a lambda): the variable's
    nargs: int = -1  # arguments written; -1 when not a call with an argument list
    args: str = ""  # the arguments' type expressions, ";"-separated ("" for each unknown one; "" if none known)
    targs: str = ""  # template arguments written on the qualifier's last component ("float" in
    #                  std::numeric_limits<float>::max), to tell specializations apart
    explicit: bool = False  # the callee is written with template arguments of its own (t.data_ptr<float>(),
    #                         at::_isnan<scalar_t>(v)): only a function template takes them
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

    @classmethod
    def implied(cls, caller: int, callee: str, kind: CallKind, qualifier: str = "", nargs: int = -1) -> CallSite:
        """A call no file writes, asked about during resolution: the type of ``x.f()`` or ``f(a, b)`` in a type
        expression is the return type of the function that call would reach."""
        return cls(caller=caller, callee=callee, qualifier=qualifier, line=1, kind=kind, detail="", nargs=nargs)


def split_template_args(text: str) -> tuple[str, str]:
    """A name as written and the template arguments it ends with: ``c10::ArrayRef<int64_t>`` ->
    ("c10::ArrayRef", "int64_t"), ``Foo<A<B>, C>`` -> ("Foo", "A<B>, C"); (text, "") when it ends with none,
    or they do not close."""
    if not text.endswith(">"):
        return text, ""
    depth = 0
    for i in range(len(text) - 1, -1, -1):
        ch = text[i]
        if ch == ">":
            depth += 1
        elif ch == "<":
            depth -= 1
            if depth == 0:
                return text[:i], text[i + 1:-1]
    return text, ""


# Note [Type expressions]: what a file shows of types, kept as written for resolution at query time
# (graph/resolve.py, graph/cpp_lookup.py): a file-local fact cannot name a type another file defines.
# A type expression is a base and "|"-separated steps. Bases: "t:TYPE" (a type as written), "c:NAME/N"
# (the result of calling NAME with N arguments), "v:NAME" (a name the function does not declare: a member
# or a global), "this". Steps: ".f(N)" (method call), ".x" (member), "[]" (element), "*" (dereference),
# "&" (address), "#K" (tuple element), "()N" (call operator), "cmp" (a comparison: bool, or what the
# class's operator gives, a Tensor for Tensors). "self.options().dtype()" in f(const Tensor& self) is
# "t:Tensor|.options(0)|.dtype(0)". The extractor (extract/cpp_types.py) writes the text; ``TypeExpr.parse``
# reads it back, and ``str()`` writes it again unchanged.

class TypeBase(StrEnum):
    """What a type expression starts from (its text's prefix)."""

    TYPE = "t:"  # a type as written
    CALL = "c:"  # the result of a call: callee as written, and how many arguments
    VARIABLE = "v:"  # a name the function does not declare (a member or a global)
    THIS = "this"


class TypeStepKind(StrEnum):
    METHOD = "method"  # .f(N): a method's result
    MEMBER = "member"  # .x: a data member
    ELEMENT = "[]"
    DEREF = "*"
    ADDRESS = "&"
    TUPLE = "#"  # #K: element K of a std::tuple / std::pair
    CALL_OP = "()"  # ()N: the call operator's result
    COMPARE = "cmp"  # a comparison: bool, or what the class's operator gives (a Tensor for Tensors)


_PLAIN_STEPS = {"[]": TypeStepKind.ELEMENT, "*": TypeStepKind.DEREF, "&": TypeStepKind.ADDRESS,
                "cmp": TypeStepKind.COMPARE}


@dataclass(frozen=True, slots=True)
class TypeStep:
    kind: TypeStepKind
    name: str = ""  # METHOD, MEMBER: the name
    n: int = -1  # METHOD, CALL_OP: arguments written; TUPLE: the element

    def __str__(self) -> str:
        k = self.kind
        if k is TypeStepKind.METHOD:
            return f".{self.name}({self.n})"
        if k is TypeStepKind.MEMBER:
            return f".{self.name}"
        if k in (TypeStepKind.TUPLE, TypeStepKind.CALL_OP):
            return f"{k.value}{self.n}"
        return k.value

    @staticmethod
    def parse(text: str) -> TypeStep:
        """The step ``text`` writes; ValueError naming what is not one. Steps repeat (``|.options(0)``, ``|[]``):
        each text is parsed once."""
        return _step(text)

    @staticmethod
    def _parse(text: str) -> TypeStep:
        plain = _PLAIN_STEPS.get(text)
        if plain is not None:
            return TypeStep(plain)
        if text.startswith("#") and text[1:].isdigit():
            return TypeStep(TypeStepKind.TUPLE, n=int(text[1:]))
        if text.startswith("()") and text[2:].isdigit():
            return TypeStep(TypeStepKind.CALL_OP, n=int(text[2:]))
        if text.startswith(".") and len(text) > 1:
            name, paren, n = text[1:].partition("(")
            if not paren and ")" not in name:
                return TypeStep(TypeStepKind.MEMBER, name)
            if name and n.endswith(")") and n[:-1].isdigit():
                return TypeStep(TypeStepKind.METHOD, name, int(n[:-1]))
        raise ValueError(f"{text!r} is not a step of a type expression (Note [Type expressions] in model/cpp.py)")


@dataclass(frozen=True, slots=True)
class TypeExpr:
    """A type expression, parsed (Note [Type expressions]): ``parse(str(x)) == x``."""

    base: TypeBase
    text: str = ""  # TYPE: the type as written; CALL: the callee as written; VARIABLE: the name
    nargs: int = -1  # CALL: arguments written
    steps: tuple[TypeStep, ...] = ()

    def __str__(self) -> str:
        if self.base is TypeBase.THIS:
            head = self.base.value
        elif self.base is TypeBase.CALL:
            head = f"{self.base.value}{self.text}/{self.nargs}"
        else:
            head = f"{self.base.value}{self.text}"
        return "|".join([head, *map(str, self.steps)])

    @staticmethod
    def parse(text: str) -> TypeExpr:
        """The type expression ``text`` writes; ValueError naming what is not one."""
        head, *rest = text.split("|")
        steps = tuple(map(_step, rest))
        if head == "this":
            return TypeExpr(TypeBase.THIS, steps=steps)
        base = _BASES.get(head[:2])
        if base is TypeBase.CALL:
            name, slash, n = head[2:].rpartition("/")
            if slash and n.isdigit():
                return TypeExpr(base, name, int(n), steps)
        elif base is not None:
            return TypeExpr(base, head[2:], steps=steps)
        raise ValueError(f"{text!r} is not a type expression (Note [Type expressions] in model/cpp.py)")


_BASES = {b.value: b for b in TypeBase if b is not TypeBase.THIS}
_step = functools.lru_cache(maxsize=4096)(TypeStep._parse)


@dataclass(frozen=True, slots=True)
class Registration:
    """A registration macro or table entry that ties a name to a C++ function."""

    kind: RegistrationKind
    name: str  # stub ("add_stub"), op ("add.Tensor" without "aten::"), or Python name
    target: str  # kernel/function as written, minus "&": "CPU_CAPABILITY::sign_kernel"; "lambda@LINE";
    #              DECLARE_DISPATCH: the function-pointer type
    key: str  # REGISTER_DISPATCH: backend (CPU, CUDA, MPS); TORCH_LIBRARY_IMPL: dispatch key; namespace;
    #           PyMethodDef: table name; pybind: receiver at the root of the .def chain;
    #           DECLARE_DISPATCH / DEFINE_DISPATCH: the namespace the stub is declared in ("at::native")
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
        """The target's last component without template arguments (``q_batch_norm_kernel<false>``): its name."""
        return re.sub(r"<.*?>(?=::|$)", "", self.target).split("::")[-1]  # Foo<int>::apply: apply


@dataclass(frozen=True, slots=True)
class Using:
    """``using namespace X;`` / ``using X::f;`` / an alias (``namespace fx = ...;``, ``using T = ...;``,
    ``typedef ... T;``): widens or renames lookup in its scope."""

    kind: UsingKind
    name: str  # the namespace as written, a leading :: kept (NAMESPACE: Note [Using-directive targets]), the
    #            qualified name brought in (DECLARATION), the alias target (ALIAS)
    alias: str  # ALIAS: the new name; DECLARATION: the last component; "" for NAMESPACE
    line: int
    scope: str  # qualname of the namespace, class or function it appears in, "" at file level
    tparams: str = ""  # ALIAS of an alias template: its parameter names, ","-separated ("Node" in template
    #                    <typename Node> using NodePtr = std::shared_ptr<Node>;)
    id: Annotated[int, Stored.ID] = field(default=0, compare=False)
    path: Annotated[str, Stored.PATH] = field(default="", compare=False)

    def __post_init__(self) -> None:
        check_line("Using", self.line)
        check_enum("Using", "kind", self.kind, UsingKind)


@dataclass(frozen=True, slots=True)
class CppClass:
    """A class, struct, union or enum with a body: what member lookup needs (its bases, its template parameters).

    An enum is a type with no members (its underlying type, ``: int8_t``, is no base): ``ScalarType out_dtype``
    types its variable, so ``options.dtype(out_dtype)`` picks ``dtype(std::optional<ScalarType>)`` over
    ``dtype(std::optional<TypeMeta>)``, and ``toString(dtype)`` finds ``c10::toString(ScalarType)`` by the enum's
    namespace (ADL)."""

    name: str  # "ArrayRef"
    qualname: str  # "c10::ArrayRef"; a nested class "at::TensorIteratorBase::Foo"; template arguments dropped
    bases: str  # base classes as written, ";"-separated, template arguments kept: "SmallVectorImpl<T>"
    tparams: str  # template parameter names, ","-separated: "T,N"; "" when not a template
    spec: str  # a specialization's arguments as written: "c10::BFloat16"; "" for a primary template or a class
    line: int
    end_line: int
    kind: ClassKind = ClassKind.CLASS
    id: Annotated[int, Stored.ID] = field(default=0, compare=False)
    path: Annotated[str, Stored.PATH] = field(default="", compare=False)

    def __post_init__(self) -> None:
        check_line("CppClass", self.line, self.end_line)
        check_enum("CppClass", "kind", self.kind, ClassKind)

    @property
    def loc(self) -> Loc:
        return Loc(self.path, self.line)


@dataclass(frozen=True, slots=True)
class CppField:
    """A data member of a class, with its declared type (``impl_`` of TensorBase is ``c10::intrusive_ptr<...>``), or a
    variable declared at namespace scope, a member of its namespace (``constexpr ScalarType kLong`` in ``c10``)."""

    cls: str  # qualname of the class, or of the namespace ("" for the global one)
    name: str
    type: str  # as written, cv and & dropped, pointers kept ("TensorImpl*")
    line: int
    id: Annotated[int, Stored.ID] = field(default=0, compare=False)
    path: Annotated[str, Stored.PATH] = field(default="", compare=False)

    def __post_init__(self) -> None:
        check_line("CppField", self.line)


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
