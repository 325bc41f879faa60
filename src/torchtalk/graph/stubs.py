"""DispatchStubs: where each is declared, and the kernel each backend registers for it (STUB_KERNEL).

Note [DispatchStub]: a kernel calls ``add_stub(device_type, iter)``; the stub picks the
implementation at run time per device and CPU capability. ``DECLARE_DISPATCH`` in a
header declares it, ``DEFINE_DISPATCH`` in a .cpp defines it, and each backend's
``REGISTER_DISPATCH(add_stub, &add_kernel)`` (native/cpu/*.cpp compiled once per CPU
capability, native/cuda/*.cu) registers its kernel. So the arithmetic lives in the
registered kernels, not in the kernel that calls the stub.
"""

from __future__ import annotations

from ..model import Edge, EdgeKind, Loc, Node, Registration, RegistrationKind
from ..store.codec import codec, row_fact
from ..store.reader import Index
from .nodes import cpp_node, stub_node, symbol_id, unresolved_node
from .symbols import defs_by_name, symbol

_REG_COLS = codec(Registration).select()


def _registrations(ix: Index, stub: str) -> list[Registration]:
    return _dispatch_registrations(ix).get(stub, [])


def _dispatch_registrations(ix: Index) -> dict[str, list[Registration]]:
    """stub name -> its DECLARE_DISPATCH and REGISTER_DISPATCH lines (in file order), read in one query per index
    version: the GPU walk asks every C++ function it passes for its stub kernels, and nearly all are no stub."""
    def load() -> dict[str, list[Registration]]:
        out: dict[str, list[Registration]] = {}
        for r in ix.q(f"SELECT {_REG_COLS} FROM cpp_registration WHERE kind IN (?, ?) ORDER BY file_id, line",
                      (RegistrationKind.DECLARE_DISPATCH.value, RegistrationKind.REGISTER_DISPATCH.value)):
            reg: Registration = row_fact(Registration, r, ix.path_of)
            out.setdefault(reg.name, []).append(reg)
        return out
    table: dict[str, list[Registration]] = ix.cached("stub_registrations", load)
    return table


def stub_declared(ix: Index, stub: str) -> Loc | None:
    return next((r.loc for r in _declarations(ix, stub)), None)


def stub_qualnames(ix: Index, stub: str) -> list[str]:
    """The stub's name as its declarations qualify it (``at::native::sort_stub``; the namespace each
    DECLARE_DISPATCH is in), or the bare name when none is known."""
    names = {f"{r.key}::{r.name}" if r.key else r.name for r in _declarations(ix, stub)}
    return sorted(names) or [stub]


def _declarations(ix: Index, stub: str) -> list[Registration]:
    """The DECLARE_DISPATCH lines of a stub as calls and registrations name it. Two stubs may share a name in two
    namespaces (``at::native::copy_stub`` of Copy.h, ``at::native::cpublas::copy_stub`` of CPUBlas.h, registered as
    ``cpublas::copy_stub``): a qualified name is the declaration in a namespace it ends with; a bare one, as an
    unqualified lookup from the kernels' namespace finds it, those of the outermost namespace (at::native's, not
    the nested cpublas's)."""
    qual, _, name = stub.rpartition("::")
    rows = [r for r in _registrations(ix, name) if r.kind is RegistrationKind.DECLARE_DISPATCH]
    if qual:
        return [r for r in rows if r.key == qual or r.key.endswith("::" + qual)] or rows
    depth = min((r.key.count("::") for r in rows), default=0)
    return [r for r in rows if r.key.count("::") == depth]


def registered(ix: Index, stub: str) -> list[Registration]:
    """The REGISTER_*DISPATCH lines of a stub (its kernel per backend)."""
    return [r for r in _registrations(ix, stub) if r.kind is RegistrationKind.REGISTER_DISPATCH]


def kernel_edges(ix: Index, node: Node) -> list[Edge]:
    """STUB_KERNEL edges: stub -> the kernel each backend registers (key = the backend)."""
    out = []
    for r in registered(ix, node.key):
        short = r.target_name
        if not short:
            continue  # REGISTER_NO_CPU_DISPATCH: no kernel for that backend
        # CPU kernels are often in an anonymous namespace of the registering file: that one first.
        defs = [d for d in defs_by_name(ix, short) if d.path == r.path]
        if not defs:
            defs = [d for d in defs_by_name(ix, short) if d.qualname.startswith("at::native")][:3]
        if not defs:
            out.append(Edge(node, unresolved_node(r.target), EdgeKind.STUB_KERNEL, r.loc, r.key, r.detail))
        out += [Edge(node, cpp_node(d), EdgeKind.STUB_KERNEL, r.loc, r.key, r.detail) for d in defs]
    return out


def registering(ix: Index, node: Node) -> list[Edge]:
    """STUB_KERNEL edges into a kernel: the stubs that register it."""
    sid = symbol_id(node)
    fn = symbol(ix, sid) if sid is not None else None
    if fn is None:
        return []
    regs = _by_target(ix).get(fn.name, [])
    if not regs:  # most functions: no registration names them (and their definitions are not read: impact walks
        return []  # hundreds of functions, resize_output's took 1.2 s reading every run's and apply's)
    out = []
    defined_in = {ix.path_of(r[0]) for r in ix.q("SELECT DISTINCT file_id FROM cpp_symbol WHERE name = ? AND "
                                                  "is_definition", (fn.name,))}
    for r in regs:
        if r.path != fn.path and (fn.is_file_local or r.path in defined_in):
            # a same-named kernel in another file's anonymous namespace; or the registering file has its own
            # (cpu/IndexKernel.cpp's REGISTER_DISPATCH(put_stub, &put_kernel) names its file-local put_kernel, never
            # cuda/IndexKernel.cu's), which kernel_edges picks first too
            continue
        out.append(Edge(stub_node(r.name, stub_declared(ix, r.name)), node, EdgeKind.STUB_KERNEL, r.loc, r.key,
                        r.detail))
    return out


def _by_target(ix: Index) -> dict[str, list[Registration]]:
    """REGISTER_DISPATCH rows by the last component of their kernel (loaded once per index version)."""
    def build() -> dict[str, list[Registration]]:
        out: dict[str, list[Registration]] = {}
        for row in ix.q(f"SELECT {_REG_COLS} FROM cpp_registration WHERE kind = ?",
                        (RegistrationKind.REGISTER_DISPATCH.value,)):
            r: Registration = row_fact(Registration, row, ix.path_of)
            out.setdefault(r.target_name, []).append(r)
        return out
    table: dict[str, list[Registration]] = ix.cached("stub_regs_by_target", build)
    return table
