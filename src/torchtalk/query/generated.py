"""What the build would generate for one op: Python binding, at::_ops entry, per-key wrappers, autograd.

Everything here comes from the tree's own generators, run into the cache (see
index/generated.py); locations are ``<generated>/...`` paths, with the
generator and template that wrote them.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from ..model.codegen import template_for
from .cppdefs import SYMBOL_COLS, CppDef, to_def
from .index import Index
from .model import Loc
from .ops import OpRecord

PREFIX = "<generated>/"


@dataclass
class Binding:
    python_name: str
    function: CppDef
    signatures: list[str]
    template: str  # "tools/autograd/gen_python_functions.py from tools/autograd/templates/..."


@dataclass
class Wrapper:
    key: str
    function: CppDef | None
    registered: Loc
    target: str


@dataclass
class AutogradKernel:
    key: str
    function: CppDef | None
    registered: Loc
    target: str
    nodes: list[tuple[str, CppDef | None]]  # (XBackward0, its apply())


@dataclass
class GeneratedInfo:
    available: bool
    status: str
    bindings: list[Binding] = field(default_factory=list)
    ops_entry: CppDef | None = None  # at::_ops::X::call
    wrappers: list[Wrapper] = field(default_factory=list)
    autograd: list[AutogradKernel] = field(default_factory=list)


def status(ix: Index) -> str:
    return ix.meta.get("codegen_status", "not run")


def available(ix: Index) -> bool:
    return ix.cached("has_generated", lambda: bool(ix.one("SELECT 1 FROM files WHERE generated = 1 LIMIT 1")))


def made_by(path: str) -> str:
    generator, template = template_for(path.removeprefix(PREFIX))
    if not generator:
        return ""
    return f"{generator}" + (f" from {template}" if template else "")


def _symbol_in_file(ix: Index, file_id: int, name: str) -> CppDef | None:
    short = name.split("::")[-1]
    rows = ix.q(f"SELECT {SYMBOL_COLS} FROM cpp_symbol WHERE file_id = ? AND name = ? AND is_definition "
                "ORDER BY line", (file_id, short))
    defs = [to_def(ix, r) for r in rows]
    # VariableType::atan2 is defined inside an anonymous namespace: compare without it.
    exact = [d for d in defs if d.qualname.replace("(anonymous)::", "").endswith(name)]
    return (exact or defs or [None])[0]


def signatures(ix: Index, symbol_id: int) -> list[str]:
    return [r[0] for r in ix.q("SELECT value FROM generated_fact WHERE scope = ? AND kind = 'parser_signature' "
                               "ORDER BY line", (symbol_id,))]


def _registrations(ix: Index, op: OpRecord) -> list[tuple[str, str, int, int]]:
    """(key, target, file_id, line) of generated m.impl("op", ...) for this overload."""
    return ix.q("SELECT r.key, r.target, r.file_id, r.line FROM cpp_registration r JOIN files f ON f.id = r.file_id "
                "WHERE r.kind = 'library_impl' AND r.name = ? AND f.generated = 1 ORDER BY r.key", (op.full_name,))


def for_op(ix: Index, op: OpRecord) -> GeneratedInfo:
    if not available(ix):
        return GeneratedInfo(False, status(ix))
    info = GeneratedInfo(True, status(ix))
    for name, file_id, line, target in ix.q(
            "SELECT name, file_id, line, target FROM py_api WHERE op = ? AND kind = 'generated binding' ORDER BY name",
            (op.full_name,)):
        fn = _symbol_in_file(ix, file_id, target)
        if fn is not None:
            info.bindings.append(Binding(name, fn, signatures(ix, fn.id), made_by(fn.loc.path)))
    struct = f"{op.name}_{op.overload}" if op.overload else op.name
    rows = ix.q(f"SELECT {SYMBOL_COLS} FROM cpp_symbol WHERE qualname = ? AND is_definition",
                (f"at::_ops::{struct}::call",))
    info.ops_entry = to_def(ix, rows[0]) if rows else None
    for key, target, file_id, line in _registrations(ix, op):
        fn = _symbol_in_file(ix, file_id, target)
        registered = Loc(ix.path_of(file_id), line)
        if key.startswith("Autograd"):
            nodes = []
            if fn is not None:
                for (node,) in ix.q("SELECT DISTINCT value FROM generated_fact WHERE scope = ? AND kind = 'grad_fn'",
                                    (fn.id,)):
                    apply = ix.q(f"SELECT {SYMBOL_COLS} FROM cpp_symbol WHERE name = 'apply' AND qualname LIKE ? "
                                 "AND is_definition", (f"%::{node}::apply",))
                    nodes.append((node, to_def(ix, apply[0]) if apply else None))
            info.autograd.append(AutogradKernel(key, fn, registered, target, nodes))
        else:
            info.wrappers.append(Wrapper(key, fn, registered, target))
    return info
