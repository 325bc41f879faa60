"""Ops of other namespaces than aten: defined and implemented in C++ with TORCH_LIBRARY, not in native_functions.yaml.

Note [Library ops]
~~~~~~~~~~~~~~~~~~
``quantized::conv3d`` is declared by ``m.def(TORCH_SELECTIVE_SCHEMA("quantized::conv3d.new(...) -> Tensor"))`` in a
``TORCH_LIBRARY(quantized, m)`` block and given kernels by ``m.impl(TORCH_SELECTIVE_NAME("quantized::conv3d.new"),
QConvInt8<3, false>::run)`` in ``TORCH_LIBRARY_IMPL(quantized, QuantizedCPU, m)`` blocks; the index holds both as
registrations (``library_def``: the namespace as key, the schema as written; ``library_impl``: the dispatch key,
the function as written, the enclosing block naming the namespace). trace answers from native_functions.yaml, so
for a name ``ns::op`` it does not know, it lists these: each overload's schema with its line, then each kernel with
its dispatch key and where it is registered, and the call that follows a kernel (``calls``).
"""

from __future__ import annotations

from dataclasses import dataclass

from ..model import Loc
from ..model.cpp import TEMPLATE_ARGS
from ..store.reader import Index


@dataclass(frozen=True)
class LibraryOp:
    namespace: str
    name: str  # as asked, without the namespace: "conv3d", "conv3d.new"
    schemas: list[tuple[str, Loc]]  # (schema as written, where m.def is)
    kernels: list[tuple[str, str, str, Loc]]  # (overload, dispatch key, function as written, where m.impl is)


def library_op(ix: Index, name: str) -> LibraryOp | None:
    """The TORCH_LIBRARY op ``ns::op[.overload]`` (ns not aten), or None when no block of that namespace has it;
    also as Python spells it, ``torch.ops.ns.op[.overload]`` (``.default``: the overload without a name)."""
    for prefix in ("torch.ops.", "torch._ops.ops.", "ops."):
        if name.startswith(prefix) and name.count(".") > prefix.count("."):
            ns_, _, rest = name[len(prefix):].partition(".")
            name = f"{ns_}::{rest.removesuffix('.default')}"
            break
    ns, sep, op = name.partition("::")
    if not sep or not ns or not op or ns in ("aten", "at", "torch") or "::" in op:
        return None
    like = f"{op}.%" if "." not in op else op
    schemas = [(detail or f"{ns}::{n}", Loc(ix.path_of(fid), line)) for n, detail, fid, line in ix.q(
        "SELECT name, detail, file_id, line FROM cpp_registration WHERE kind = 'library_def' AND key = ? "
        "AND (name = ? OR name LIKE ?) ORDER BY file_id, line", (ns, op, like))]
    kernels = [(n, key, target, Loc(ix.path_of(fid), line)) for n, key, target, fid, line, block in ix.q(
        "SELECT r.name, r.key, r.target, r.file_id, r.line, s.name FROM cpp_registration r "
        "JOIN cpp_symbol s ON s.id = r.scope WHERE r.kind = 'library_impl' AND (r.name = ? OR r.name LIKE ?) "
        "ORDER BY r.file_id, r.line", (op, like)) if block.startswith((f"TORCH_LIBRARY_IMPL({ns},",
                                                                         f"TORCH_LIBRARY({ns})"))]
    if not schemas and not kernels:
        return None
    return LibraryOp(ns, op, schemas, kernels)


def first_kernel(lib: LibraryOp) -> str:
    """The function of the first kernel, as ``calls`` takes it (without its template arguments); "" if none."""
    return TEMPLATE_ARGS.sub("", lib.kernels[0][2]) if lib.kernels else ""
