"""PyTorch's conventions for calls in its C++, as free functions: which spellings name an op (Note [Op call
spellings]), which names are DispatchStubs, which receivers ATen code names like Tensors, where test-only
code lives. None of this needs C++ name lookup; graph/resolve.py asks these where C++'s rules leave
PyTorch's to decide.
"""

from __future__ import annotations

from functools import lru_cache
from typing import NamedTuple

from ..model import Op, RegistrationKind
from ..store.reader import Index
from .overloads import op_signature
from .registry import OpRegistry

OP_NAMESPACES = {"at", "torch", "at::_ops", "at::redispatch"}
# Note [Op call spellings]: the C++ API that torchgen generates for an op X reaches the
# dispatcher under many names: at::X, at::X_symint, at::X_out / at::X_outf (out= overloads),
# at::_ops::X::call / ::redispatch, at::redispatch::X, the per-key namespaces at::cpu::X,
# at::cuda::X, at::meta::X, at::compositeexplicitautograd::X ..., and Tensor methods.
KEY_NAMESPACES = {"at::cpu", "at::cuda", "at::meta", "at::mps", "at::compositeexplicitautograd",
                  "at::compositeimplicitautograd", "at::compositeexplicitautogradnonfunctional",
                  "at::compositeimplicitautogradnestedtensor", "at::redispatch", "at::symint"}
# of those, the ones whose functions call one key's kernel directly, without the dispatcher (at::cpu::add)
KERNEL_NAMESPACES = KEY_NAMESPACES - {"at::redispatch", "at::symint"}
STRUCT_QUALIFIERS = ("at::_ops::", "_ops::")  # at::_ops::add_Tensor::call: the op whose struct is add_Tensor
DISPATCH_HELPER_PREFIX = "__dispatch_"  # torchgen's __dispatch_X: how hand-written Tensor methods dispatch
# Receivers that are Tensors in ATen code by convention: used only where the file does not show the type.
_TENSOR_NAMES = {"self", "other", "result", "out", "output", "input", "grad", "grad_output", "grad_input",
                 "tensor", "weight", "bias", "src", "source", "index", "indices", "values", "mask", "t"}
_ATEN_CODE = ("at::native::", "at::meta::", "torch::autograd::", "at::functorch::")
_TEST_DIRS = ("/test/", "/tests/")


def stub_names(ix: Index) -> set[str]:
    """The names of the tree's DispatchStubs (declared, defined or registered)."""
    names: set[str] = ix.cached("stub_names", lambda: {r[0] for r in ix.q(
        "SELECT DISTINCT name FROM cpp_registration WHERE kind IN (?, ?, ?)",
        (RegistrationKind.DECLARE_DISPATCH.value, RegistrationKind.DEFINE_DISPATCH.value,
         RegistrationKind.REGISTER_DISPATCH.value))})
    return names


def struct_op(ix: Index, reg: OpRegistry, qual: str) -> str:
    """The op an ``at::_ops::S`` qualifier names (add_Tensor -> add.Tensor; "" when none)."""
    table: dict[str, str] = ix.cached("ops_structs", lambda: {op.struct_name: op.full_name
                                                              for op in reg.by_id.values()})
    return table.get(qual.split("::")[-1], "")


def op_named(reg: OpRegistry, name: str) -> tuple[str, ...]:
    """The ops a C++ op-API function name means: X, X_symint, X_out / X_outf (out= overloads of X)."""
    base = name.removesuffix("_symint")
    if base in reg.by_name:
        # at::add(...) is one of add's functional overloads; at::add_out(...) names the out= ones.
        ops = reg.by_name[base]
        return tuple(op.full_name for op in ops if not op.is_out) or tuple(op.full_name for op in ops)
    for suffix in ("_outf", "_out"):
        if base.endswith(suffix):
            # torchgen spells a SymInt out= overload X_symint_out / X_symint_outf (at::empty_symint_out)
            stem = base[: -len(suffix)].removesuffix("_symint")
            outs = [op.full_name for op in reg.by_name.get(stem, []) if op.is_out]
            if outs:
                return tuple(outs)
    return ()


class CppApi(NamedTuple):
    """The ops a C++ op-API function is generated for, and the kernel it calls: "" the dispatcher, else the
    name of the key's namespace ("cuda" for at::cuda::add, which calls the CUDA kernel directly)."""

    ops: tuple[str, ...]
    kernel: str = ""


def cpp_api_ops(ix: Index, reg: OpRegistry, name: str) -> CppApi:
    """The ops a C++ op-API function names, written as C++ code calls it (Note [Op call spellings]): at::asin,
    at::add_out, at::cuda::add (the overloads with a CUDA kernel only: torchgen writes it for those),
    at::_ops::add_Tensor::call; no op for any other name (at::native::add is a kernel)."""
    qual, _, last = name.strip().rpartition("::")
    if last in ("call", "redispatch") and qual.startswith(STRUCT_QUALIFIERS):
        return CppApi((op,) if (op := struct_op(ix, reg, qual)) else ())
    if qual in KERNEL_NAMESPACES:
        key = qual.rsplit("::", 1)[-1]
        return CppApi(tuple(f for f in op_named(reg, last)
                            if any(e.key.value.lower() == key for e in reg.dispatch(reg.by_full[f]))), key)
    if qual in OP_NAMESPACES or qual in KEY_NAMESPACES:
        return CppApi(op_named(reg, last))
    return CppApi(())


def op_spellings(op: Op) -> tuple[str, ...]:
    """The names of the C++ op-API functions that can mean ``op`` (op_named's inverse): X and X_symint for a
    functional or in-place overload, X_out / X_outf (and their _symint_ forms) for an out= one."""
    if op.is_out:
        return tuple(f"{op.name}{sym}{suffix}" for sym in ("", "_symint") for suffix in ("_out", "_outf"))
    return (op.name, f"{op.name}_symint")


def ops_for(reg: OpRegistry, name: str, nargs: int) -> tuple[str, ...]:
    """The ops ``at::name(...)`` with ``nargs`` arguments may mean: op_named's, narrowed to the overloads
    the argument count fits (at::max(self) and at::max(self, dim) are different overloads); all of them
    when none fits or the count is unknown (-1)."""
    ops = op_named(reg, name)
    if not ops or nargs < 0:
        return ops
    return ops_fitting(reg, name, nargs) or ops


def ops_fitting(reg: OpRegistry, name: str, nargs: int) -> tuple[str, ...]:
    """Of the ops ``at::name(...)`` means, the overloads ``nargs`` arguments fit (none when the count is unknown)."""
    ops = op_named(reg, name)
    if not ops or nargs < 0:
        return ()
    out_form = name.endswith(("_out", "_outf")) and name.removesuffix("_symint") not in reg.by_name
    fit = []
    for full in ops:
        op = reg.by_full[full]
        tys, required = op_signature(op, method=False)
        extra = sum(1 for a in op.schema.arguments if a.out) if out_form else 0
        if required + extra <= nargs <= len(tys) + extra:
            fit.append(full)
    return tuple(fit)


def methods_fitting(ops: list[Op], nargs: int) -> tuple[str, ...]:
    """The ops of torchgen's Tensor methods ``t.f(...)`` with ``nargs`` arguments may mean (all when none fits)."""
    fit = [op.full_name for op in ops if nargs < 0 or
           op_signature(op, True)[1] <= nargs <= len(op_signature(op, True)[0])]
    return tuple(fit or [op.full_name for op in ops])


def dispatch_helper_ops(reg: OpRegistry, name: str) -> tuple[str, ...]:
    """The ops torchgen's ``__dispatch_X`` reaches (how hand-written Tensor methods of manual_cpp_binding
    ops dispatch); () for other names."""
    if not name.startswith(DISPATCH_HELPER_PREFIX):
        return ()
    return tuple(o.full_name for o in reg.by_name.get(name[len(DISPATCH_HELPER_PREFIX):], ()))


def may_name_op(qual: str, caller_qualname: str, caller_parent: str) -> bool:
    """Whether a call can mean an op: written in an op namespace, or unqualified in ATen's namespaces
    (at::vec and friends call math, not ops). ``caller_parent`` is the scope the caller is declared in
    ("at::native" for at::native::f)."""
    if qual:
        return qual in OP_NAMESPACES
    q = caller_qualname
    return q.startswith(_ATEN_CODE) or caller_parent == "at" or q.startswith("at::") and "::vec::" not in q


def named_like_tensor(receiver: str) -> bool:
    """A receiver ATen code names like a Tensor (self, grad, at::empty(...), self.contiguous())."""
    r = receiver.strip()
    if r.endswith(")"):
        return r.startswith(("at::", "self.", "result.")) or ".to(" in r or ".contiguous(" in r
    return r.lstrip("*&(").split(".")[0].split("->")[0] in _TENSOR_NAMES


@lru_cache(maxsize=1 << 14)
def is_test(path: str) -> bool:
    """Test-only code (C++ tests and their helpers). Memoised: overload choice asks it of every candidate."""
    return path.startswith(("test/", "tests/")) or any(d in path for d in _TEST_DIRS)
