"""calls / called_by / impact over the C++ call graph, across the dispatcher.

Edges down: resolved calls, op calls (at::X, tensor.X(), at::_ops::X::call),
DispatchStub calls and kernel launches. Edges up: direct callers, and for a
kernel, whatever reaches it through a registration: the op the YAML
dispatch table (or TORCH_LIBRARY_IMPL) binds it to, the stub it is
REGISTER_DISPATCH'ed for, the Python binding that wraps it.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from .args import check_int
from .cppdefs import SYMBOL_COLS, CppDef, symbol, to_def
from .functions import ambiguity_note, find_function
from .index import Index
from .model import Ambiguous, Loc, NotFound
from .ops import OpRecord, registry
from .reach import StubRegistration, stub_registrations
from .resolve import CALL_COLS, Call, Resolution, calls_from, resolve, to_call

MAX_LEVEL_NODES = 60


@dataclass
class CallsResult:
    function: CppDef
    ambiguity: Ambiguous | None
    resolved: list[tuple[Call, list[CppDef]]] = field(default_factory=list)
    ops: list[tuple[Call, list[OpRecord]]] = field(default_factory=list)
    stubs: list[tuple[Call, list[StubRegistration]]] = field(default_factory=list)
    stub_refs: list[Call] = field(default_factory=list)  # stubs passed on, not called here
    launches: list[tuple[Call, list[CppDef]]] = field(default_factory=list)
    unresolved: list[Call] = field(default_factory=list)
    macros: list[str] = field(default_factory=list)


@dataclass
class Caller:
    caller: CppDef
    site: Loc
    via: str = ""  # "" for a direct call; "op index_select", "stub add_stub" when through a registration


@dataclass
class Registration:
    kind: str  # yaml | dispatch_stub | torch_library | python
    text: str
    loc: Loc


@dataclass
class CalledByResult:
    function: CppDef
    ambiguity: Ambiguous | None
    callers: list[Caller]
    registrations: list[Registration]
    total_callers: int


@dataclass
class ImpactLevel:
    depth: int
    callers: list[Caller]
    total: int


@dataclass
class ImpactResult:
    function: CppDef
    ambiguity: Ambiguous | None
    depth: int
    levels: list[ImpactLevel]
    ops: list[tuple[OpRecord, str, str]]  # (op, how it is reached, at which level)
    python: list[tuple[str, str, Loc]]  # (Python name, through what, where)
    stopped_at: int
    truncated: bool


def _is_macro(name: str) -> bool:
    return name.isupper() or name.startswith(("AT_", "C10_", "TORCH_"))


def calls(ix: Index, function_name: str) -> CallsResult | NotFound:
    found = find_function(ix, function_name)
    if isinstance(found, NotFound):
        return found
    fn, others = found
    res = CallsResult(fn, ambiguity_note(fn, others))
    reg = registry(ix)
    macros: dict[str, None] = {}
    for call in calls_from(ix, fn.id):
        if call.kind == "stub_ref":
            res.stub_refs.append(call)
            continue
        r = resolve(ix, call, fn)
        if call.kind in ("launch", "gpu_launch"):
            res.launches.append((call, r.defs if r.kind == "defs" else []))
        elif r.kind in ("defs", "decls"):
            res.resolved.append((call, r.defs[:3]))
        elif r.kind == "op":
            recs = [rec for n in r.ops for rec in ([reg.by_full[n]] if "." in n and n in reg.by_full
                                                    else reg.by_name.get(n, []))]
            res.ops.append((call, recs))
        elif r.kind == "stub":
            res.stubs.append((call, stub_registrations(ix, r.stub)[1]))
        elif _is_macro(call.callee):
            macros.setdefault(call.callee)
        else:
            res.unresolved.append(call)
    res.macros = list(macros)
    return res


# ------------------------------------------------------------------ upward edges

def _resolves_to(res: Resolution, fn: CppDef) -> bool:
    for d in res.defs:
        if d.id == fn.id:
            return True
        if d.qualname == fn.qualname and "(anonymous)" not in fn.qualname and not res.kind == "defs":
            return True  # a call to the declaration of fn
    return False


def direct_callers(ix: Index, fn: CppDef) -> list[Caller]:
    out = []
    for row in ix.q(f"SELECT {CALL_COLS} FROM cpp_call WHERE callee = ? AND kind != 'stub_ref'", (fn.name,)):
        call = to_call(ix, row)
        caller = symbol(ix, call.caller_id)
        if caller is None or caller.id == fn.id:
            continue
        if _resolves_to(resolve(ix, call, caller), fn):
            out.append(Caller(caller, call.loc))
    return out


def ops_implemented_by(ix: Index, fn: CppDef) -> list[tuple[OpRecord, str]]:
    """Ops whose dispatch table names ``fn`` as a kernel (structured kernels by TORCH_IMPL_FUNC name)."""
    if fn.kind == "impl_func":
        written = fn.name
    elif fn.qualname in (f"at::native::{fn.name}", f"at::native::ufunc::{fn.name}"):
        written = fn.qualname.removeprefix("at::native::")
    else:
        return []  # a helper that merely shares a kernel's name is not that kernel
    # A TORCH_IMPL_FUNC implements structured entries only; a plain at::native function the others.
    return [(op, key) for op, key, structured in registry(ix).kernel_ops.get(written, [])
            if structured == (fn.kind == "impl_func") or written.startswith("ufunc::")]


def _registrations_by_target(ix: Index) -> dict[str, list[tuple]]:
    """Registration rows keyed by the short name of their target (loaded once per index)."""
    def build():
        out: dict[str, list[tuple]] = {}
        for row in ix.q("SELECT kind, name, key, file_id, line, target FROM cpp_registration WHERE kind IN "
                        "('register_dispatch', 'library_impl', 'pybind_def', 'pymethoddef')"):
            out.setdefault(row[5].split("::")[-1], []).append(row)
        return out
    return ix.cached("registrations_by_target", build)


def _stubs_registering(ix: Index, fn: CppDef) -> list[tuple[str, str, Loc]]:
    rows = [r for r in _registrations_by_target(ix).get(fn.name, []) if r[0] == "register_dispatch"]
    return [(name, key, Loc(ix.path_of(fid), line)) for _kind, name, key, fid, line, _t in rows
            if ix.path_of(fid) == fn.loc.path or "(anonymous)" not in fn.qualname]


def registrations(ix: Index, fn: CppDef) -> list[Registration]:
    out = []
    reg = registry(ix)
    for op, key in ops_implemented_by(ix, fn):
        entry = next((d for d in reg.dispatch(op) if d.key == key), None)
        out.append(Registration("yaml", f"{op.full_name} dispatch {key}: {fn.name}", entry.loc if entry else op.loc))
    for stub, key, loc in _stubs_registering(ix, fn):
        out.append(Registration("dispatch_stub", f"REGISTER_DISPATCH({stub}, {fn.name}) for {key}", loc))
    for kind, name, key, fid, line, _t in _registrations_by_target(ix).get(fn.name, []):
        if kind == "register_dispatch":
            continue
        label = {"library_impl": f"TORCH_LIBRARY_IMPL {key}: m.impl(\"{name}\")",
                 "pybind_def": f"pybind11 .def(\"{name}\") on {key}",
                 "pymethoddef": f"PyMethodDef {key}: \"{name}\""}[kind]
        out.append(Registration("torch_library" if kind == "library_impl" else "python", label,
                                Loc(ix.path_of(fid), line)))
    return out


def called_by(ix: Index, function_name: str) -> CalledByResult | NotFound:
    found = find_function(ix, function_name)
    if isinstance(found, NotFound):
        return found
    fn, others = found
    callers = direct_callers(ix, fn)
    callers.sort(key=lambda c: (c.site.path, c.site.line))
    return CalledByResult(fn, ambiguity_note(fn, others), callers, registrations(ix, fn), len(callers))


# ------------------------------------------------------------------ impact

def op_callers(ix: Index, op: OpRecord, cap: int = 200) -> list[Caller]:
    """C++ functions that call ``op`` through the dispatcher (at::X, tensor.X(), at::X_out for out= overloads)."""
    out = []
    names, wanted = ((f"{op.name}_out", f"{op.name}_outf"), op.full_name) if op.is_out else ((op.name,), op.name)
    for name in names:
        for row in ix.q(f"SELECT {CALL_COLS} FROM cpp_call WHERE callee = ? LIMIT 5000", (name,)):
            call = to_call(ix, row)
            caller = symbol(ix, call.caller_id)
            if caller is None:
                continue
            r = resolve(ix, call, caller)
            if r.kind == "op" and (wanted in r.ops or op.full_name in r.ops):
                out.append(Caller(caller, call.loc, f"op {op.full_name if op.is_out else op.name}"))
                if len(out) >= cap:
                    return out
    return out


def stub_callers(ix: Index, stub: str) -> list[Caller]:
    out = []
    for row in ix.q(f"SELECT {CALL_COLS} FROM cpp_call WHERE callee = ?", (stub,)):
        call = to_call(ix, row)
        caller = symbol(ix, call.caller_id)
        if caller is not None:
            out.append(Caller(caller, call.loc, f"stub {stub}"))
    return out


def python_entry_points(ix: Index, op: OpRecord) -> list[tuple[str, str, Loc]]:
    """Python names of an op (and of the ops that delegate to it: cumsum -> cumsum.out), each at its
    generated binding (THPVariable_*) when the generated layer is indexed, else at the YAML entry."""
    reg = registry(ix)
    rows = list(reg.python_names(op))
    for other in reg.by_id.values():
        if other.structured_delegate == op.full_name:
            rows += reg.python_names(other)
    best: dict[str, tuple[str, str, Loc]] = {}
    for name, kind, loc in rows:
        if name not in best or kind == "generated binding":
            best[name] = (name, kind, loc)
    return list(best.values())


def generated_wrappers(ix: Index, op: OpRecord, key: str) -> list[Caller]:
    """The generated Register<Key>.cpp wrapper that the dispatcher calls for (op, key)."""
    out = []
    for target, file_id, line in ix.q(
            "SELECT r.target, r.file_id, r.line FROM cpp_registration r JOIN files f ON f.id = r.file_id "
            "WHERE r.kind = 'library_impl' AND r.name = ? AND r.key = ? AND f.generated = 1", (op.full_name, key)):
        for row in ix.q(f"SELECT {SYMBOL_COLS} FROM cpp_symbol WHERE file_id = ? AND name = ? AND is_definition",
                        (file_id, target.split("::")[-1])):
            out.append(Caller(to_def(ix, row), Loc(ix.path_of(file_id), line), f"m.impl({op.full_name!r}) for {key}"))
    return out


def impact(ix: Index, function_name: str, depth: int = 3) -> ImpactResult | NotFound:
    depth = check_int(depth, "depth", 1, 5)
    found = find_function(ix, function_name)
    if isinstance(found, NotFound):
        return found
    fn, others = found
    seen = {fn.id}
    seen_ops: set[str] = set()
    seen_stubs: set[str] = set()
    ops: list[tuple[OpRecord, str, str]] = []
    python: dict[str, tuple[str, str, Loc]] = {}
    levels: list[ImpactLevel] = []
    frontier = [fn]
    truncated = False
    stopped = 0

    def reached(op: OpRecord, kernel: CppDef, key: str, level: str) -> bool:
        """Note an op (and its Python entry points) the first time a kernel of it is met."""
        if op.full_name in seen_ops:
            return False
        seen_ops.add(op.full_name)
        ops.append((op, f"{kernel.display} is its {key} kernel", level))
        for name, kind, loc in python_entry_points(ix, op):
            binding = f", binding {loc}" if kind == "generated binding" else ""
            python.setdefault(name, (name, f"op {op.full_name}{binding}", loc))
        return True

    for level in range(1, depth + 1):
        found_here: list[Caller] = []
        for node in frontier:
            found_here += direct_callers(ix, node)
            for op, key in ops_implemented_by(ix, node):
                found_here += generated_wrappers(ix, op, key)
                if reached(op, node, key, str(level)):
                    caller_key = f"callers:{op.full_name if op.is_out else op.name}"
                    if caller_key not in seen_ops:
                        seen_ops.add(caller_key)
                        found_here += op_callers(ix, op, cap=MAX_LEVEL_NODES)
            for stub, _key, _loc in _stubs_registering(ix, node):
                if stub not in seen_stubs:
                    seen_stubs.add(stub)
                    found_here += stub_callers(ix, stub)
            for r in registrations(ix, node):
                if r.kind == "python":
                    python.setdefault(r.text, (r.text, node.display, r.loc))
        fresh: list[Caller] = []
        for c in found_here:
            if c.caller.id not in seen:
                seen.add(c.caller.id)
                fresh.append(c)
        if not fresh:
            break
        stopped = level
        shown = fresh[:MAX_LEVEL_NODES]
        truncated = truncated or len(fresh) > len(shown)
        levels.append(ImpactLevel(level, shown, len(fresh)))
        frontier = [c.caller for c in shown]
    # Ops reached by the last level's callers are reported too (without walking further up).
    for c in (levels[-1].callers if levels else []):
        for op, key in ops_implemented_by(ix, c.caller):
            reached(op, c.caller, key, "last")
    return ImpactResult(fn, ambiguity_note(fn, others), depth, levels, ops, list(python.values()),
                        stopped or 0, truncated)


