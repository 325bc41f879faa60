"""C++ definitions by name, as the op registry names kernels.

A YAML kernel name ``relu`` means ``at::native::relu``; for a structured op it
means ``TORCH_IMPL_FUNC(relu_out)``; ``ufunc::add`` means the ufunc template in
``native/ufunc/add.h``. Other functions of the same short name elsewhere are
different functions and are never returned for a kernel.
"""

from __future__ import annotations

from dataclasses import dataclass

from .index import Index
from .model import Loc

SYMBOL_COLS = "id, file_id, name, qualname, params, kind, line, end_line, is_definition, macro"


@dataclass(frozen=True)
class CppDef:
    id: int
    name: str
    qualname: str
    params: str
    kind: str
    loc: Loc
    end_line: int
    is_definition: bool
    macro: str

    @property
    def display(self) -> str:
        if self.kind == "impl_func":
            return f"TORCH_IMPL_FUNC({self.name})"
        if self.kind == "meta_func":
            return f"TORCH_META_FUNC({self.name})"
        if self.kind == "precompute_meta_func":
            return f"TORCH_PRECOMPUTE_META_FUNC({self.name})"
        if self.kind == "global_kernel":
            return f"__global__ {self.qualname}"
        return self.qualname

    @property
    def in_generated(self) -> bool:
        return self.loc.path.startswith("<generated>/")


def to_def(ix: Index, row: tuple) -> CppDef:
    sid, file_id, name, qualname, params, kind, line, end_line, is_def, macro = row
    return CppDef(sid, name, qualname, params, kind, Loc(ix.path_of(file_id), line), end_line, bool(is_def), macro)


def has_cpp(ix: Index) -> bool:
    return ix.cached("has_cpp", lambda: bool(ix.one("SELECT 1 FROM cpp_symbol LIMIT 1")))


def defs_by_qualname(ix: Index, qualname: str, definitions_only: bool = True) -> list[CppDef]:
    sql = f"SELECT {SYMBOL_COLS} FROM cpp_symbol WHERE qualname = ?" + (" AND is_definition" if definitions_only else "")
    return [to_def(ix, r) for r in ix.q(sql + " ORDER BY file_id, line", (qualname,))]


def defs_by_name(ix: Index, name: str, definitions_only: bool = True) -> list[CppDef]:
    sql = f"SELECT {SYMBOL_COLS} FROM cpp_symbol WHERE name = ?" + (" AND is_definition" if definitions_only else "")
    return [to_def(ix, r) for r in ix.q(sql + " ORDER BY file_id, line", (name,))]


def symbol(ix: Index, sid: int) -> CppDef | None:
    row = ix.one(f"SELECT {SYMBOL_COLS} FROM cpp_symbol WHERE id = ?", (sid,))
    return to_def(ix, row) if row else None


def kernel_definitions(ix: Index, kernel: str, structured: bool) -> list[CppDef]:
    """Where the kernel a dispatch table names is defined (hand-written code first)."""
    if not has_cpp(ix):
        return []
    memo = ix.cached("kernel_definitions", dict)  # search and trace ask for the same kernels again and again
    key = (kernel, structured)
    if key not in memo:
        memo[key] = _kernel_definitions(ix, kernel, structured)
    return list(memo[key])


def _kernel_definitions(ix: Index, kernel: str, structured: bool) -> list[CppDef]:
    short = kernel.split("::")[-1]
    if kernel.startswith("ufunc::"):
        return defs_by_qualname(ix, f"at::native::{kernel}")
    found: list[CppDef] = []
    if structured:
        found = [d for d in defs_by_name(ix, short) if d.kind == "impl_func"]
    if not found:
        qual = kernel if kernel.startswith("at::") else f"at::native::{kernel}"
        found = defs_by_qualname(ix, qual)
    if not found:
        # Kernels defined inside an anonymous namespace or a nested one of at::native.
        found = [d for d in defs_by_name(ix, short)
                 if d.qualname.startswith("at::native::") and d.kind not in ("global_kernel", "device_function")]
    return sorted(found, key=lambda d: (d.in_generated, d.loc.path, d.loc.line))
