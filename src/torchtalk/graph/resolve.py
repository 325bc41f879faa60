"""Resolve a C++ call site to what it reaches, at query time (stack-graphs style).

Facts are stored per file as written (callee name, qualifier, caller); the targets
are computed here, from the caller's namespace and class scope, the file's
``using`` directives and declarations, and qualified names, so a refresh of one
file never requires relinking the others. Across the dispatcher every C++ spelling
of an op call is the op (Note [Op call spellings]); a call of a DispatchStub
reaches the stub.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from ..model import CallKind, CallSite, CppSymbol, Op, RegistrationKind, StrEnum, SymbolKind, UsingKind, Variant
from ..store.reader import Index
from .registry import OpRegistry, registry
from .symbols import SYMBOL_COLS, symbol, to_symbol

_OP_NAMESPACES = {"at", "torch", "at::_ops", "at::redispatch"}
# Note [Op call spellings]: the C++ API that torchgen generates for an op X reaches the
# dispatcher under many names: at::X, at::X_symint, at::X_out / at::X_outf (out= overloads),
# at::_ops::X::call / ::redispatch, at::redispatch::X, the per-key namespaces at::cpu::X,
# at::cuda::X, at::meta::X, at::compositeexplicitautograd::X ..., and Tensor methods.
_KEY_NAMESPACES = {"at::cpu", "at::cuda", "at::meta", "at::mps", "at::compositeexplicitautograd",
                   "at::compositeimplicitautograd", "at::compositeexplicitautogradnonfunctional",
                   "at::compositeimplicitautogradnestedtensor", "at::redispatch", "at::symint"}
# Receivers that are Tensors in ATen code by convention, when the parameter list does not say.
_TENSOR_NAMES = {"self", "other", "result", "out", "output", "input", "grad", "grad_output", "grad_input",
                 "tensor", "weight", "bias", "src", "source", "index", "indices", "values", "mask", "t"}
_TENSOR_PARAM = re.compile(r"\b(?:at::)?(?:Tensor|TensorBase)\s*(?:const\s*)?&{0,2}\s*(\w+)\s*(?:[,)=])")


class TargetKind(StrEnum):
    DEFS = "defs"  # definitions (best first)
    DECLS = "decls"  # only declarations were found
    OP = "op"  # an op, through the dispatcher
    STUB = "stub"  # a DispatchStub
    UNRESOLVED = "unresolved"


@dataclass(frozen=True)
class Resolution:
    kind: TargetKind
    defs: tuple[CppSymbol, ...] = ()
    ops: tuple[str, ...] = ()  # op full names
    stub: str = ""
    spelling: str = ""  # for OP: how the call names it ("at::_ops::add_Tensor::call", "tensor method")


UNRESOLVED = Resolution(TargetKind.UNRESOLVED)


def _tensor_params(params: str) -> set[str]:
    return set(_TENSOR_PARAM.findall(params or ""))


def _receiver_is_tensor(receiver: str, caller: CppSymbol) -> bool:
    """Whether ``receiver.X()`` is a Tensor method call, from the caller's parameters and naming.

    Without types we cannot know; ``a.atan2(b)`` on a Vectorized in a CPU kernel is not the op.
    """
    r = receiver.strip()
    if r.endswith(")"):
        return r.startswith(("at::", "self.", "result.")) or ".to(" in r or ".contiguous(" in r
    name = r.lstrip("*&(").split(".")[0].split("->")[0]
    return name in _tensor_params(caller.params) or name in _TENSOR_NAMES


def stub_names(ix: Index) -> set[str]:
    names: set[str] = ix.cached("stub_names", lambda: {r[0] for r in ix.q(
        "SELECT DISTINCT name FROM cpp_registration WHERE kind IN (?, ?, ?)",
        (RegistrationKind.DECLARE_DISPATCH.value, RegistrationKind.DEFINE_DISPATCH.value,
         RegistrationKind.REGISTER_DISPATCH.value))})
    return names


def _usings(ix: Index, path: str) -> tuple[list[str], dict[str, str]]:
    """(namespaces brought in with ``using namespace``, name -> qualified name from using-declarations)."""
    cache: dict[str, tuple[list[str], dict[str, str]]] = ix.cached("usings", dict)
    if path not in cache:
        namespaces: list[str] = []
        names: dict[str, str] = {}
        for kind, name, alias in ix.q("SELECT u.kind, u.name, u.alias FROM cpp_using u JOIN files f ON "
                                      "f.id = u.file_id WHERE f.path = ?", (path,)):
            if kind == UsingKind.NAMESPACE:
                namespaces.append(name)
            elif kind == UsingKind.DECLARATION:
                names.setdefault(alias, name)
        cache[path] = (namespaces, names)
    return cache[path]


def scope_chain(qualname: str) -> list[str]:
    """'at::native::(anonymous)::f' -> ['at::native::(anonymous)', 'at::native', 'at', '']."""
    parts = qualname.split("::")[:-1]
    return ["::".join(parts[:i]) for i in range(len(parts), -1, -1)]


def _lookup(ix: Index, qualnames: list[str]) -> dict[str, list[CppSymbol]]:
    if not qualnames:
        return {}
    marks = ",".join("?" * len(qualnames))
    out: dict[str, list[CppSymbol]] = {}
    for row in ix.q(f"SELECT {SYMBOL_COLS} FROM cpp_symbol WHERE qualname IN ({marks})", qualnames):
        d = to_symbol(ix, row)
        out.setdefault(d.qualname, []).append(d)
    return out


def _prefer(defs: list[CppSymbol], near_path: str) -> Resolution:
    # An anonymous namespace in another .cpp/.cu file is out of reach (headers may be included).
    defs = [d for d in defs if not d.is_file_local or d.path == near_path
            or d.path.endswith((".h", ".cuh", ".hpp"))] or defs
    real = [d for d in defs if d.is_definition]
    if real:
        # Same-file definitions first: static helpers and anonymous namespaces are file-local.
        real.sort(key=lambda d: (d.path != near_path, d.path, d.line))
        return Resolution(TargetKind.DEFS, tuple(real))
    return Resolution(TargetKind.DECLS, tuple(sorted(defs, key=lambda d: (d.path != near_path, d.path, d.line))))


def _struct_ops(ix: Index, reg: OpRegistry) -> dict[str, str]:
    """at::_ops struct names -> op full names (add_Tensor -> add.Tensor)."""
    table: dict[str, str] = ix.cached("ops_structs", lambda: {op.struct_name: op.full_name
                                                              for op in reg.by_id.values()})
    return table


def op_named(reg: OpRegistry, name: str) -> tuple[str, ...]:
    """The ops a C++ op-API function name means: X, X_symint, X_out / X_outf (out= overloads of X)."""
    base = name.removesuffix("_symint")
    if base in reg.by_name:
        # at::add(...) is one of add's functional overloads; at::add_out(...) names the out= ones.
        ops = reg.by_name[base]
        return tuple(op.full_name for op in ops if not op.is_out) or tuple(op.full_name for op in ops)
    for suffix in ("_outf", "_out"):
        if base.endswith(suffix):
            outs = [op.full_name for op in reg.by_name.get(base[: -len(suffix)], []) if op.is_out]
            if outs:
                return tuple(outs)
    return ()


def resolve(ix: Index, call: CallSite, caller: CppSymbol | None = None) -> Resolution:
    cache: dict[tuple[str, ...], Resolution] = ix.cached("resolutions", dict)
    caller = caller or symbol(ix, call.caller)
    if caller is None:
        return UNRESOLVED
    key = (caller.qualname if call.kind is not CallKind.LAUNCH else "", call.callee, call.qualifier, call.kind.value,
           caller.path, caller.params if call.kind is CallKind.METHOD else "")
    if key not in cache:
        cache[key] = _resolve(ix, call, caller)
    return cache[key]


def _resolve(ix: Index, call: CallSite, caller: CppSymbol) -> Resolution:
    reg = registry(ix)
    name, qual = call.callee, call.qualifier.strip(":")
    if call.qualifier == "::":
        # ::f is the global f (usually the C library's): never an op, never a namespace-local f.
        found = _lookup(ix, [name]).get(name)
        return _prefer(found, caller.path) if found else UNRESOLVED
    if call.kind is CallKind.LAUNCH:
        defs = [to_symbol(ix, r) for r in ix.q(f"SELECT {SYMBOL_COLS} FROM cpp_symbol WHERE name = ? AND kind = ?",
                                               (name, SymbolKind.GLOBAL_KERNEL.value))]
        return _prefer(defs, caller.path) if defs else UNRESOLVED
    if call.kind is CallKind.METHOD:
        return _method(ix, reg, call, caller, name, qual)
    if call.kind is CallKind.REF:
        return Resolution(TargetKind.STUB, stub=name) if name in stub_names(ix) else UNRESOLVED
    if qual.startswith(("at::_ops::", "_ops::")):
        full = _struct_ops(ix, reg).get(qual.split("::")[-1])
        return Resolution(TargetKind.OP, ops=(full,), spelling=f"{qual}::{name}") if full else UNRESOLVED
    if qual in _KEY_NAMESPACES:
        ops = op_named(reg, name)
        if ops:
            return Resolution(TargetKind.OP, ops=ops, spelling=f"{qual}::{name}")
    if not qual and name in stub_names(ix):
        return Resolution(TargetKind.STUB, stub=name)
    chain = scope_chain(caller.qualname)
    namespaces, declared = _usings(ix, caller.path)
    target = f"{qual}::{name}" if qual else name
    candidates: list[str] = []
    if not qual and name in declared:
        candidates.append(declared[name])  # using c10::maybe_wrap_dim; names exactly that one
    for s in chain:
        candidates.append(f"{s}::{target}" if s else target)
        if not qual:
            # Names of an anonymous namespace are visible in the enclosing one.
            candidates.append(f"{s}::(anonymous)::{name}" if s else f"(anonymous)::{name}")
    candidates += [f"{u}::{target}" for u in namespaces]
    found = _lookup(ix, candidates)
    for cand in candidates:
        hits = found.get(cand)
        if hits:
            if qual in _OP_NAMESPACES and op_named(reg, name) and not any(h.is_definition for h in hits):
                break  # only a declaration of at::X: the dispatcher's op is the real target
            return _prefer(hits, caller.path)
    # Unqualified X in ATen's own namespaces finds at::X; at::vec and friends call math, not ops.
    in_at = qual in _OP_NAMESPACES or (not qual and (caller.qualname.startswith(("at::native::", "at::meta::"))
                                                     or chain[0] == "at"))
    if in_at:
        ops = op_named(reg, name)
        if ops:
            return Resolution(TargetKind.OP, ops=ops, spelling=f"{qual}::{name}" if qual else name)
    return UNRESOLVED


def _method(ix: Index, reg: OpRegistry, call: CallSite, caller: CppSymbol, name: str, qual: str) -> Resolution:
    if qual in ("this", "") and "::" in caller.qualname:
        cls = caller.qualname.rsplit("::", 1)[0]
        found = _lookup(ix, [f"{cls}::{name}"]).get(f"{cls}::{name}")
        if found:
            return _prefer(found, caller.path)
    if reg.has_method(name) and _receiver_is_tensor(call.qualifier, caller):
        methods = [op.full_name for op in reg.by_name[name] if Variant.METHOD in op.variants]
        return Resolution(TargetKind.OP, ops=tuple(methods), spelling="Tensor method")
    return UNRESOLVED


def ops_of(reg: OpRegistry, res: Resolution) -> list[Op]:
    """The ops a resolution names (all overloads of a base name when the call does not say which)."""
    return [reg.by_full[n] for n in res.ops if n in reg.by_full]

