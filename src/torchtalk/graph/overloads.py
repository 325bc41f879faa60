"""Overloads: which of the functions a name finds a call can mean, by argument count, defaults and the
argument types the caller's file shows.

A candidate whose parameter count cannot take the arguments is out; of the rest, each
known argument scores against its parameter (2 the same type, 1 a conversion C++ makes
without asking: derived to base, between numbers, T to optional<T>; 0 unknown or a
user conversion that may exist, as T to optional<U>; out when none can). Where the best score is shared,
every candidate sharing it stays: the caller is told which remain, never one guessed.
Ops are scored the same way from their schema, as torchgen writes their C++ signature.
"""

from __future__ import annotations

import re

from ..model import CppSymbol, DispatchEntry, EntryOrigin, Op
from ..store.reader import Index
from .aten_library import library_kernel_definitions
from .cpp_lookup import ancestry, class_scope, resolve_type
from .cpp_types import Scope, Ty, scope_chain
from .signatures import signature
from .symbols import kernel_definitions

_SCHEMA_CPP = {
    "Tensor": "at::Tensor", "int": "int64_t", "SymInt": "c10::SymInt", "float": "double", "bool": "bool",
    "Scalar": "c10::Scalar", "ScalarType": "c10::ScalarType", "Layout": "c10::Layout", "Device": "c10::Device",
    "MemoryFormat": "c10::MemoryFormat", "Dimname": "at::Dimname", "str": "c10::string_view",
    "Generator": "at::Generator", "Storage": "c10::Storage", "Stream": "c10::Stream",
}
_SCHEMA_LIST = {"int": "int64_t", "SymInt": "c10::SymInt", "Tensor": "at::Tensor", "float": "double",
                "bool": "bool", "Dimname": "at::Dimname", "Scalar": "c10::Scalar"}


def param_types(ix: Index, sym: CppSymbol, owner: Ty | None) -> tuple[Ty | None, ...]:
    """The parameters of ``sym`` as types (memoised per symbol and owner)."""
    memo: dict[tuple[int, Ty | None], tuple[Ty | None, ...]] = ix.cached("param_types", dict)
    key = (sym.id, owner)
    if key not in memo:
        scope = class_scope(ix, owner) if owner is not None else Scope(scope_chain(sym.qualname), sym.path)
        memo[key] = tuple(resolve_type(ix, t, scope) for t in signature(sym.params).types)
    return memo[key]


def op_signature(op: Op, method: bool) -> tuple[tuple[Ty | None, ...], int]:
    """The C++ parameters torchgen gives an op's function (or method: ``self`` is the object), and how many
    of them are required. Out arguments come first (at::X_out) and are left out for at::X."""
    args = [a for a in op.schema.arguments if not a.out]
    if method:
        args = [a for a in args if a.name != "self"]
    tys = tuple(schema_type(a.type) for a in args)
    required = sum(1 for a in args if a.default is None)
    return tys, required


# Note [Op call signatures]
# torchgen writes each op's C++ function in several signatures (torchgen/api/cpp.py), and a call binds any of
# them: at::X takes a SymInt as int64_t and a SymInt[] as IntArrayRef, at::X_symint keeps c10::SymInt and
# SymIntArrayRef; where the schema has the dtype, layout, device, pin_memory group, at::X takes it scattered
# (the faithful signature) and gathered into one ``TensorOptions options`` in its place.
# A call scores an overload by the best of its signatures: ``at::empty(self.sizes(), self.options())`` is
# empty.memory_format (at::empty(IntArrayRef size, TensorOptions options)), not empty.names, whose int[] size the
# IntArrayRef binds no better and whose Dimname list no TensorOptions makes.
_OPTIONS = ("dtype", "layout", "device", "pin_memory")


def op_call_signatures(op: Op, method: bool, out_first: bool, symint: bool) -> tuple[tuple[Ty | None, ...], ...]:
    """The parameter types of the C++ signatures torchgen gives an op (Note [Op call signatures]): a function
    or a method (no self), ``at::X_out(out, ...)`` (``out_first``) or ``at::X_outf(..., out)``, the
    ``_symint`` spelling or not."""
    args = [a for a in op.schema.arguments if not a.out and not (method and a.name == "self")]
    outs = tuple(schema_type(a.type, symint) for a in op.schema.arguments if a.out)
    scattered = tuple(schema_type(a.type, symint) for a in args)
    forms = [scattered]
    names = tuple(a.name for a in args)
    for i in range(len(names) - len(_OPTIONS) + 1):
        if names[i:i + len(_OPTIONS)] == _OPTIONS:
            forms.append((*scattered[:i], Ty("c10::TensorOptions"), *scattered[i + len(_OPTIONS):]))
            break
    return tuple(f if not outs else (*outs, *f) if out_first else (*f, *outs) for f in forms)


def schema_type(t: str, symint: bool = True) -> Ty | None:
    """A schema type as torchgen's C++ API spells it (arguments): Tensor -> at::Tensor, int[] -> IntArrayRef...;
    SymInt as c10::SymInt, or as int64_t without ``symint`` (Note [Op call signatures])."""
    optional = t.endswith("?")
    base = t.rstrip("?")
    if not symint:
        base = re.sub(r"^SymInt\b", "int", base)
    if base.endswith("]"):
        elem = _SCHEMA_LIST.get(base[: base.index("[")].rstrip("?"))
        ty = Ty("c10::ArrayRef", (Ty(elem),)) if elem else None
    else:
        name = _SCHEMA_CPP.get(base)
        ty = Ty(name) if name else None
    if ty is not None and optional:
        ty = Ty("std::optional", (ty,))
    return ty


def return_of(op: Op) -> Ty | None:
    """What an op's C++ function returns: Tensor, a tuple of them, std::vector<Tensor>, a number."""
    rets = op.schema.returns
    if not rets:
        return Ty("void")
    tys = []
    for r in rets:
        base = r.type.rstrip("?")
        if base.endswith("[]"):
            elem = _SCHEMA_LIST.get(base[:-2])
            tys.append(Ty("std::vector", (Ty(elem),)) if elem else None)
        else:
            name = _SCHEMA_CPP.get(base)
            tys.append(Ty(name) if name else None)
    return tys[0] if len(tys) == 1 else Ty("std::tuple", tuple(tys))


def compat(ix: Index, arg: Ty | None, param: Ty | None) -> int | None:
    """How well an argument of type ``arg`` binds a parameter of type ``param``: 2, 1, 0, or None (it cannot)."""
    if arg is None or param is None:
        return 0
    if param.name == "std::optional" and param.ptr == 0 and arg.name != "std::optional":
        # T to optional<T> is a conversion C++ makes (1); T to optional<U> converts twice, through a user-defined
        # constructor, which a standard conversion beats: at::sort(s, 0) is sort(Tensor, int64_t dim), not
        # sort.stable(Tensor, optional<bool> stable, ...)
        inner = compat(ix, arg, param.arg(0))
        return None if inner is None else 1 if inner == 2 else 0
    kinds = _kind(arg), _kind(param)
    if kinds[1] and kinds[0] != kinds[1] and (kinds[0] or arg.name == "std::optional"):
        return None  # Note [Op argument kinds]
    if kinds == ("string", "string") and arg.ptr == param.ptr:
        return 2 if arg.name in _VIEWS and param.name in _VIEWS else 0
    if arg.ptr != param.ptr:
        if arg.name == "std::nullptr_t" and param.ptr:
            return 1
        if arg.is_builtin and param.is_builtin:
            return None if arg.ptr or arg.name != "int" else 0  # a literal 0 may be a null pointer
        return None if (arg.is_tensor or param.is_tensor) else 0
    if arg.name == param.name:
        return 2 if _same_args(arg, param) else _other_args(ix, arg, param)
    if arg.is_builtin and param.is_builtin:
        return 1
    if arg.is_builtin:  # Scalar, SymInt, optional<int64_t>, IntArrayRef (one element) take numbers
        return None if param.is_tensor or param.name in _NO_NUMBER or _dimnames(param) else 0
    if param.is_builtin:  # Half converts to float; a Tensor to nothing, an optional only explicitly (operator bool)
        return None if arg.is_tensor or arg.name == "std::optional" else 0
    if any(t.name == param.name for t in ancestry(ix, arg)[1:]):
        return 1
    if arg.is_tensor and param.is_tensor:
        return 0  # Tensor(TensorBase&&) converts rvalues only
    if arg.is_tensor and param.name in ("c10::ArrayRef", "c10::Scalar"):
        return None
    return 0


# Note [Op argument kinds]
# An op's C++ parameters are torchgen's spellings of its schema's types (_SCHEMA_CPP), and the ones its overloads
# most often differ by are three classes whose implicit conversions the tree fixes: a Tensor is made implicitly
# from a Tensor or a TensorBase rvalue (TensorBody.h); a Scalar from a number, a Sym number, a complex or a half
# type (c10/core/Scalar.h: its bool constructor is a template that deduces bool only, so no pointer); a
# string_view from a string of any spelling or a char pointer. A value of one of these kinds converts to no other
# kind, and an optional to none of them (std::optional has no conversion to its value): a Scalar, an
# optional<Scalar> or a string never binds a Tensor parameter (``at::xlogy(const Scalar& x, const Tensor& y)`` is
# xlogy.Scalar_Self, never xlogy.Tensor), a Tensor never a Scalar, a string never a Scalar
# (``at::linalg_matrix_norm(A, std::string_view ord, ...)`` is .str_ord) and a Scalar never a string. A number
# still binds a Scalar (0: a constructor), never a Tensor; a class of no kind (one the index does not know, a
# user type) may still convert to one (0). The string_view spellings are one type (c10::string_view is
# std::string_view since 2.1, and the schema's ``str`` is written either way).
_STRINGS = frozenset({"c10::string_view", "std::string_view", "std::basic_string_view", "c10::basic_string_view",
                      "std::basic_string"})
_VIEWS = _STRINGS - {"std::basic_string"}


def _kind(t: Ty) -> str:
    """The kind of ``t`` among the op argument kinds of Note [Op argument kinds] ("tensor", "scalar", "string"),
    "" for any other type."""
    if t.ptr:
        return "string" if t.ptr == 1 and t.name == "char" else ""
    if t.is_tensor:
        return "tensor"
    if t.name == "c10::Scalar":
        return "scalar"
    return "string" if t.name in _STRINGS else ""


# Types of op arguments no number converts to (enum classes, classes without a constructor from one): ``view(-1)``
# is view(SymInt[] size), never view.dtype(ScalarType dtype); ``gather_out(result, t, 0, index)`` is gather.out.
_NO_NUMBER = frozenset({"c10::ScalarType", "c10::Layout", "c10::MemoryFormat", "c10::DeviceType", "c10::Device",
                        "at::Dimname", "c10::string_view", "at::Generator", "c10::Storage", "c10::Stream"})


def _dimnames(t: Ty) -> bool:
    return t.name == "c10::ArrayRef" and bool(t.args) and t.args[0] is not None and t.args[0].name == "at::Dimname"


def _same_args(arg: Ty, param: Ty) -> bool:
    """Whether one template's two instances may be the same type: every argument known on both sides is equal, or
    both are numbers (``int64_t`` is ``long`` or ``long long`` by platform)."""
    return all(a is None or p is None or a == p or a.is_builtin and p.is_builtin and a.ptr == p.ptr
               for a, p in zip(arg.args, param.args, strict=False))


def _other_args(ix: Index, arg: Ty, param: Ty) -> int | None:
    """An instance of a template binding a parameter of another instance of it: an optional as its value does
    (``optional<ScalarType>`` binds ``optional<TypeMeta>`` only as well as a ScalarType binds a TypeMeta, below
    ``optional<ScalarType>`` itself), others maybe (a converting constructor)."""
    if arg.name == "std::optional":
        inner = compat(ix, arg.arg(0), param.arg(0))
        return None if inner is None else min(inner, 1)
    return 0


def score(ix: Index, args: list[Ty | None], params: tuple[Ty | None, ...]) -> int | None:
    total = 0
    for a, p in zip(args, params, strict=False):  # parameters past the arguments have defaults
        c = compat(ix, a, p)
        if c is None:
            return None
        total += c
    return total


# Note [Kernel overloads]
# A dispatch table names a kernel by its C++ name alone, and at::native often overloads that name
# (at::native::arange(end, ...) / (start, end, ...) / (start, end, step, ...); _sparse_sum(input) / (input, dtype) /
# (input, dims) / (input, dims, dtype)). The op's kernel is the overload that takes the op's native signature, as
# torchgen writes it (torchgen/api/native.py: the schema's arguments in order, out arguments last, TensorOptions
# scattered into dtype, layout, device, pin_memory): of the definitions the name finds, those that take that many
# arguments and score best on their types (``score``), all of them when the types do not decide (two definitions
# of one signature in #if branches, as mkldnn_add's) or none takes them.

MAX_KERNEL_DEFS = 4  # definitions an op's dispatch entry keeps (of one signature: #if branches, or a tie)


def op_kernel_definitions(ix: Index, op: Op, entry: DispatchEntry) -> list[CppSymbol]:
    """The definitions of an op's kernel for one dispatch entry: of those its name finds, the overloads that take
    the op's signature (Note [Kernel overloads]), the first MAX_KERNEL_DEFS (memoised per index version: the op's
    KERNEL edges and the ops a function is the kernel of must agree)."""
    memo: dict[tuple[str, str, str], list[CppSymbol]] = ix.cached("op_kernel_definitions", dict)
    key = (op.full_name, str(entry.key), entry.kernel)
    if key not in memo:
        defs = library_kernel_definitions(ix, entry.kernel, entry.scope) if entry.origin is EntryOrigin.LIBRARY \
            else kernel_definitions(ix, entry.kernel, entry.structured)
        memo[key] = (native_overloads(ix, op, defs) if not entry.structured else defs)[:MAX_KERNEL_DEFS]
    return memo[key]


def _bare(t: Ty | None) -> str:
    """A type as text without its namespaces: c10::optional<c10::Scalar> and std::optional<at::Scalar> alike."""
    return "" if t is None else re.sub(r"\b\w+::", "", str(t))


def _written(t: str) -> str:
    """A parameter type as written, bare as ``_bare`` makes a resolved one (const c10::ScalarType& -> ScalarType)."""
    return re.sub(r"\b\w+::|\bconst\b|[&\s]", "", t)


def native_overloads(ix: Index, op: Op, defs: list[CppSymbol]) -> list[CppSymbol]:
    """Of ``defs`` (the definitions a kernel's name finds), the ones that are ``op``'s kernel (Note [Kernel
    overloads]); ``defs`` itself when they are one signature or nothing decides."""
    if len({signature(d.params).key for d in defs}) <= 1:
        return defs
    args = [schema_type(a.type) for a in (*(a for a in op.schema.arguments if not a.out),
                                           *(a for a in op.schema.arguments if a.out))]
    scored: list[tuple[tuple[int, int], CppSymbol]] = []
    for d in defs:
        sig = signature(d.params)
        if not sig.takes(len(args)):
            continue
        params = param_types(ix, d, None)
        s = score(ix, args, params)
        if s is not None:  # then the types equal to the schema's, template arguments too (optional<Scalar>), resolved
            # or as written (an enum such as ScalarType is no class the index resolves)
            same = sum(a is not None and _bare(a) in (_bare(p), _written(w))
                       for a, p, w in zip(args, params, sig.types, strict=False))
            scored.append(((s, same), d))
    if not scored:
        return defs
    best = max(s for s, _d in scored)
    keep = {d.id for s, d in scored if s == best}
    return [d for d in defs if d.id in keep]
