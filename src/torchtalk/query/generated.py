"""What the build would generate for one op: Python binding, at::_ops entry, per-key wrappers, autograd.

Everything here comes from the tree's own generators, run into the cache (see
index/generated.py); locations are ``<generated>/...`` paths, with the
generator and template that wrote them.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from ..graph import graph
from ..graph.nodes import op_node, symbol_id
from ..graph.symbols import defs_by_qualname, defs_in_file, symbol
from ..model import GENERATED_PREFIX, CppSymbol, Edge, EdgeKind, GeneratedKind, Op, PyApiKind
from ..model.codegen import template_for
from ..store.reader import Index


@dataclass
class Binding:
    python_name: str
    function: CppSymbol
    signatures: list[str]
    template: str  # "tools/autograd/gen_python_functions.py from tools/autograd/templates/..."


@dataclass
class AutogradKernel:
    wrapper: Edge  # WRAPPER edge for an Autograd* key (to VariableType::X)
    nodes: list[Edge]  # AUTOGRAD edges: XBackward0 at its apply()


@dataclass
class GeneratedInfo:
    available: bool
    status: str
    bindings: list[Binding] = field(default_factory=list)
    ops_entry: CppSymbol | None = None  # at::_ops::X::call
    wrappers: list[Edge] = field(default_factory=list)  # WRAPPER edges per key
    autograd: list[AutogradKernel] = field(default_factory=list)


def status(ix: Index) -> str:
    return ix.meta.get("codegen_status", "not run")


def available(ix: Index) -> bool:
    return bool(ix.cached("has_generated", lambda: bool(ix.one("SELECT 1 FROM files WHERE generated = 1 LIMIT 1"))))


def made_by(path: str) -> str:
    generator, template = template_for(path.removeprefix(GENERATED_PREFIX))
    if not generator:
        return ""
    return f"{generator}" + (f" from {template}" if template else "")


def signatures(ix: Index, symbol_id_: int) -> list[str]:
    return [r[0] for r in ix.q("SELECT value FROM generated_fact WHERE scope = ? AND kind = ? ORDER BY line",
                               (symbol_id_, GeneratedKind.PARSER_SIGNATURE.value))]


def for_op(ix: Index, op: Op) -> GeneratedInfo:
    if not available(ix):
        return GeneratedInfo(False, status(ix))
    info = GeneratedInfo(True, status(ix))
    for name, file_id, target in ix.q("SELECT name, file_id, target FROM py_api WHERE op = ? AND kind = ? "
                                      "ORDER BY name", (op.full_name, PyApiKind.GENERATED_BINDING.value)):
        fns = defs_in_file(ix, file_id, target.split("::")[-1])
        if fns:
            info.bindings.append(Binding(name, fns[0], signatures(ix, fns[0].id), made_by(fns[0].path)))
    entry = defs_by_qualname(ix, f"at::_ops::{op.struct_name}::call")
    info.ops_entry = entry[0] if entry else None
    g = graph(ix)
    node = op_node(op)
    autograd = g.out(node, [EdgeKind.AUTOGRAD])
    for w in g.out(node, [EdgeKind.WRAPPER]):
        if w.key.startswith("Autograd"):
            info.autograd.append(AutogradKernel(w, [a for a in autograd if a.key == w.key]))
        else:
            info.wrappers.append(w)
    return info


def wrapper_symbol(ix: Index, edge: Edge) -> CppSymbol | None:
    sid = symbol_id(edge.dst)
    return symbol(ix, sid) if sid is not None else None
