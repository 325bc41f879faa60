"""Resolve a C++ call site to what it reaches, at query time (stack-graphs style).

Facts are stored per file as written (callee name, qualifier, caller); the
edges are computed here, using the caller's namespace and class scope, the
file's ``using namespace`` directives and qualified names, so a refresh of one
file never requires relinking the others. Across the dispatcher: ``at::X`` /
``at::_ops::X::call`` / ``tensor.X()`` reach the op ``X``; a call of a
DispatchStub reaches the stub and, from it, the kernels registered for it.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from .cppdefs import SYMBOL_COLS, CppDef, symbol, to_def
from .index import Index
from .model import Loc
from .ops import registry

_OP_NAMESPACES = {"at", "torch", "at::_ops", "at::redispatch"}
# Receivers that are Tensors in ATen code by convention, when the parameter list does not say.
_TENSOR_NAMES = {"self", "other", "result", "out", "output", "input", "grad", "grad_output", "grad_input",
                 "tensor", "weight", "bias", "src", "source", "index", "indices", "values", "mask", "t"}
_TENSOR_PARAM = re.compile(r"\b(?:at::)?(?:Tensor|TensorBase)\s*(?:const\s*)?&{0,2}\s*(\w+)\s*(?:[,)=])")


def _tensor_params(params: str) -> set[str]:
    return set(_TENSOR_PARAM.findall(params or ""))


def _receiver_is_tensor(receiver: str, caller: CppDef) -> bool:
    """Whether ``receiver.X()`` is a Tensor method call, from the caller's parameters and naming.

    Without types we cannot know; ``a.atan2(b)`` on a Vectorized in a CPU kernel is not the op.
    """
    r = receiver.strip()
    if r.endswith(")"):
        return r.startswith(("at::", "self.", "result.")) or ".to(" in r or ".contiguous(" in r
    name = r.lstrip("*&(").split(".")[0].split("->")[0]
    return name in _tensor_params(caller.params) or name in _TENSOR_NAMES


@dataclass
class Call:
    caller_id: int
    callee: str
    qualifier: str
    loc: Loc
    kind: str
    detail: str

    @property
    def written(self) -> str:
        if self.kind == "method":
            return f"{self.qualifier}.{self.callee}" if self.qualifier else f".{self.callee}"
        if self.qualifier == "::":
            return f"::{self.callee}"
        return f"{self.qualifier}::{self.callee}" if self.qualifier else self.callee


@dataclass
class Resolution:
    kind: str  # defs | decls | op | stub | unresolved
    defs: list[CppDef] = field(default_factory=list)
    ops: list[str] = field(default_factory=list)  # op base names or full names
    stub: str = ""


CALL_COLS = "caller, callee, qualifier, file_id, line, kind, detail"


def to_call(ix: Index, row: tuple) -> Call:
    caller, callee, qualifier, file_id, line, kind, detail = row
    return Call(caller, callee, qualifier or "", Loc(ix.path_of(file_id), line), kind, detail or "")


def calls_from(ix: Index, sid: int) -> list[Call]:
    return [to_call(ix, r) for r in ix.q(f"SELECT {CALL_COLS} FROM cpp_call WHERE caller = ? ORDER BY line, id", (sid,))]


def stub_names(ix: Index) -> set[str]:
    return ix.cached("stub_names", lambda: {r[0] for r in ix.q(
        "SELECT DISTINCT name FROM cpp_registration WHERE kind IN ('declare_dispatch', 'define_dispatch', 'register_dispatch')")})


def _usings(ix: Index, file_id: int) -> list[str]:
    cache = ix.cached("usings", dict)
    if file_id not in cache:
        cache[file_id] = [r[0] for r in ix.q("SELECT namespace FROM cpp_using WHERE file_id = ?", (file_id,))]
    return cache[file_id]


def _file_id(ix: Index, path: str) -> int:
    inv = ix.cached("path_ids", lambda: {p: i for i, p in ix.paths().items()})
    return inv.get(path, -1)


def scope_chain(qualname: str) -> list[str]:
    """'at::native::(anonymous)::f' -> ['at::native::(anonymous)', 'at::native', 'at', '']."""
    parts = qualname.split("::")[:-1]
    return ["::".join(parts[:i]) for i in range(len(parts), -1, -1)]


def _lookup(ix: Index, qualnames: list[str]) -> dict[str, list[CppDef]]:
    if not qualnames:
        return {}
    marks = ",".join("?" * len(qualnames))
    out: dict[str, list[CppDef]] = {}
    for row in ix.q(f"SELECT {SYMBOL_COLS} FROM cpp_symbol WHERE qualname IN ({marks})", qualnames):
        d = to_def(ix, row)
        out.setdefault(d.qualname, []).append(d)
    return out


def _prefer(defs: list[CppDef], near_path: str) -> Resolution:
    # An anonymous namespace in another .cpp/.cu file is out of reach (headers may be included).
    defs = [d for d in defs if "(anonymous)" not in d.qualname or d.loc.path == near_path
            or d.loc.path.endswith((".h", ".cuh", ".hpp"))] or defs
    real = [d for d in defs if d.is_definition]
    if real:
        # Same-file definitions first: static helpers and anonymous namespaces are file-local.
        real.sort(key=lambda d: (d.loc.path != near_path, d.loc.path, d.loc.line))
        return Resolution("defs", real)
    return Resolution("decls", sorted(defs, key=lambda d: (d.loc.path != near_path, d.loc.path, d.loc.line)))


def _op_from_struct(ix: Index, struct: str) -> list[str]:
    """at::_ops::add_Tensor -> add.Tensor (struct names join name and overload with '_')."""
    reg = registry(ix)
    table = ix.cached("ops_structs", lambda: {
        (r.name if not r.overload else f"{r.name}_{r.overload}"): r.full_name for r in reg.by_id.values()})
    full = table.get(struct)
    return [full] if full else []


def resolve(ix: Index, call: Call, caller: CppDef | None = None) -> Resolution:
    cache = ix.cached("resolutions", dict)
    caller = caller or symbol(ix, call.caller_id)
    if caller is None:
        return Resolution("unresolved")
    key = (caller.qualname if call.kind != "launch" else caller.loc.path, call.callee, call.qualifier, call.kind,
           caller.loc.path)
    if key not in cache:
        cache[key] = _resolve(ix, call, caller)
    return cache[key]


def _resolve(ix: Index, call: Call, caller: CppDef) -> Resolution:
    reg = registry(ix)
    name, qual = call.callee, call.qualifier.strip(":")
    if call.qualifier == "::":
        # ::f is the global f (usually the C library's): never an op, never a namespace-local f.
        found = _lookup(ix, [name]).get(name)
        return _prefer(found, caller.loc.path) if found else Resolution("unresolved")
    if call.kind in ("launch",):
        defs = [to_def(ix, r) for r in ix.q(
            f"SELECT {SYMBOL_COLS} FROM cpp_symbol WHERE name = ? AND kind = 'global_kernel'", (name,))]
        return _prefer(defs, caller.loc.path) if defs else Resolution("unresolved")
    if call.kind == "method":
        if qual in ("this", "") and "::" in caller.qualname:
            cls = caller.qualname.rsplit("::", 1)[0]
            found = _lookup(ix, [f"{cls}::{name}"]).get(f"{cls}::{name}")
            if found:
                return _prefer(found, caller.loc.path)
        if (name in reg.by_name and any("method" in r.variants for r in reg.by_name[name])
                and _receiver_is_tensor(call.qualifier, caller)):
            return Resolution("op", ops=[name])
        return Resolution("unresolved")
    if qual.startswith("at::_ops::") or qual.startswith("_ops::"):
        ops = _op_from_struct(ix, qual.split("::")[-1])
        return Resolution("op", ops=ops) if ops else Resolution("unresolved")
    if not qual and name in stub_names(ix):
        return Resolution("stub", stub=name)
    chain = scope_chain(caller.qualname)
    usings = _usings(ix, _file_id(ix, caller.loc.path))
    candidates: list[str] = []
    target = f"{qual}::{name}" if qual else name
    for s in chain:
        candidates.append(f"{s}::{target}" if s else target)
        if not qual:
            # Names of an anonymous namespace are visible in the enclosing one.
            candidates.append(f"{s}::(anonymous)::{name}" if s else f"(anonymous)::{name}")
    candidates += [f"{u}::{target}" for u in usings]
    found = _lookup(ix, candidates)
    for cand in candidates:
        hits = found.get(cand)
        if hits:
            if qual in _OP_NAMESPACES and name in reg.by_name and not any(h.is_definition for h in hits):
                break  # only a declaration of at::X: the dispatcher's op is the real target
            return _prefer(hits, caller.loc.path)
    # Unqualified X in ATen's own namespaces finds at::X; at::vec and friends call math, not ops.
    in_at = qual in _OP_NAMESPACES or (not qual and (caller.qualname.startswith(("at::native::", "at::meta::"))
                                                     or chain[0] == "at"))
    if in_at and name in reg.by_name:
        return Resolution("op", ops=[name])
    if in_at and name.endswith(("_out", "_outf")):
        # at::X_out / at::X_outf: the C++ API of the out= overloads of X.
        outs = [r.full_name for r in reg.by_name.get(name.rsplit("_out", 1)[0], []) if r.is_out]
        if outs:
            return Resolution("op", ops=outs)
    return Resolution("unresolved")
