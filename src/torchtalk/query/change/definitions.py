"""Changed lines to changed things: C++ definitions and registrations, ops, derivative formulas, Python
functions and classes, tests and OpInfo entries, each with why it counts as changed.

Every mapping is by the line ranges the index records (``cpp_symbol.line/end_line``,
``op.line/end_line``, ``py_function``, ``test_method``); the innermost definition
spanning a line is the one changed. A line no definition spans is reported, not
guessed at (a declaration, a macro, an include).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import TypeVar

from ...graph.nodes import cpp_node, op_node, py_node, stub_node
from ...graph.py_calls import ops_of_python
from ...graph.registry import registered_ops, registry
from ...graph.stubs import stub_declared
from ...graph.symbols import SYMBOL_COLS
from ...model import CppSymbol, FormulaMode, Loc, Node, NodeKind, Op, PyOpRefKind, RegistrationKind, SymbolKind
from ...model.change import Aspect, DiffSide, FileKind
from ...model.dispatch import Device, device_of_key
from ...model.paths import device_of_path
from ...store.codec import rows_facts
from ...store.reader import Index
from .lines import FileChange

MAX_NODES_PER_FILE = 40
T = TypeVar("T")
_NOT_LIBRARY = ("aten", "prims", "torch")  # namespaces of a py_op_ref's op that are no TORCH_LIBRARY op's
_SAMPLE_PREFIXES = ("sample_inputs_", "reference_inputs_", "error_inputs_", "reference_", "np_ref_", "ref_")


@dataclass
class ChangedNode:
    node: Node
    why: str  # "body changed (lines 12-14)", "REGISTER_DISPATCH for CUDA (line 40)", "dispatch CUDA: foo"
    path: str
    line: int  # the first changed line in it
    deleted: bool = False  # the change removes it (from the diff's old side)
    device: Device | None = None  # the one device that runs it (None: any)
    aspect: Aspect | None = None  # what of an op changed when not its kernels
    # Given meaning by a Python registration (a decomposition, ref, lowering, meta or fake function): only traced or
    # compiled code runs it (Note [Compiled only] in reach.py)
    compiled: bool = False


@dataclass
class ChangedTest:
    name: str  # "test_cumsum", or "" for a class or file changed outside its tests
    cls: str
    loc: Loc
    decorators: list[str]
    why: str


@dataclass
class ChangedOpInfo:
    name: str
    variant: str
    loc: Loc
    why: str


@dataclass
class ChangeMap:
    nodes: list[ChangedNode] = field(default_factory=list)
    tests: list[ChangedTest] = field(default_factory=list)
    opinfos: list[ChangedOpInfo] = field(default_factory=list)
    unmapped: list[int] = field(default_factory=list)  # changed lines no definition spans
    note: str = ""
    cut: int = 0  # changed definitions beyond MAX_NODES_PER_FILE


def _span(lines: set[int], gaps: set[tuple[int, int]]) -> tuple[int, int]:
    pts = list(lines) + [p for g in gaps for p in g]
    return (max(1, min(pts)), max(pts)) if pts else (1, 0)


def _innermost(items: Sequence[T], lines: set[int], gaps: set[tuple[int, int]], start: Callable[[T], int],
               end: Callable[[T], int]) -> dict[int, tuple[T, int]]:
    """id(item) -> (item, first changed line) for the innermost item spanning each changed line or gap."""
    out: dict[int, tuple[T, int]] = {}
    for n in sorted(lines):
        hits = [x for x in items if start(x) <= n <= end(x)]
        if hits:
            best = min(hits, key=lambda x: end(x) - start(x))
            out.setdefault(id(best), (best, n))
    for a, b in sorted(gaps):
        hits = [x for x in items if start(x) <= a and b <= end(x)]
        if hits:
            best = min(hits, key=lambda x: end(x) - start(x))
            out.setdefault(id(best), (best, b))
    return out


def _covered(lines: set[int], ranges: Iterable[tuple[int, int]]) -> list[int]:
    rs = list(ranges)
    return sorted(n for n in lines if not any(a <= n <= b for a, b in rs))


def _lines_text(lines: list[int]) -> str:
    return f"line {lines[0]}" if len(lines) == 1 else f"lines {lines[0]}-{lines[-1]}"


# ------------------------------------------------------------------ C++

_NO_NODE = (SymbolKind.LIBRARY_BLOCK,)
_KEYED = (RegistrationKind.REGISTER_DISPATCH, RegistrationKind.LIBRARY_IMPL)  # their key is a dispatch key or backend


def _cpp(ix: Index, fid: int, fc: FileChange) -> ChangeMap:
    out = ChangeMap()
    device = device_of_path(fc.path)
    lo, hi = _span(fc.lines, fc.gaps)
    where = "file_id = ? AND is_definition" + ("" if fc.whole else " AND line <= ? AND end_line >= ?")
    params = (fid,) if fc.whole else (fid, hi, lo)
    syms: list[CppSymbol] = rows_facts(CppSymbol, ix.q(f"SELECT {SYMBOL_COLS} FROM cpp_symbol WHERE {where} "
                                                       "ORDER BY line", params), ix.paths())
    syms = [s for s in syms if s.kind not in _NO_NODE]
    if fc.whole:
        chosen = {id(s): (s, s.line) for s in syms if not s.in_generated}
    else:
        chosen = _innermost(syms, fc.lines, fc.gaps, lambda s: s.line, lambda s: s.end_line)
    removed = set(fc.removed)
    picked = sorted(chosen.values(), key=lambda v: v[1])
    out.cut = max(0, len(picked) - MAX_NODES_PER_FILE)
    for sym, first in picked[:MAX_NODES_PER_FILE]:
        inside = sorted(n for n in fc.lines if sym.line <= n <= sym.end_line)
        why = ("in the file" if fc.whole else f"{'body' if inside and inside[0] > sym.line else 'definition'} "
               f"changed ({_lines_text(inside) if inside else f'lines near {first}'})")
        gone = sym.display in removed or sym.name in removed or sym.qualname in removed
        out.nodes.append(ChangedNode(cpp_node(sym), why, fc.path, first, gone, device))
        if sym.kind in (SymbolKind.META_FUNC, SymbolKind.PRECOMPUTE_META_FUNC):
            for op in _structured_ops(ix, sym.name):
                out.nodes.append(ChangedNode(op_node(op), f"its {sym.display} (shape and dtype checks) changed",
                                             fc.path, first, aspect=Aspect.META))
    regs = ix.q("SELECT kind, name, target, key, line FROM cpp_registration WHERE file_id = ? AND line BETWEEN ? AND ?",
                (fid, lo, hi)) if not fc.whole else []
    reg_lines = set()
    for kind, name, target, key, line in regs:
        if line not in fc.lines:
            continue
        reg_lines.add(line)
        node = _registration_node(ix, RegistrationKind(kind), name)
        if node is not None:
            what = {RegistrationKind.REGISTER_DISPATCH: f"REGISTER_DISPATCH of {target} for {key}",
                    RegistrationKind.LIBRARY_IMPL: f"TORCH_LIBRARY_IMPL registration for {key}: {target}"}.get(
                RegistrationKind(kind), f"{kind} registration")
            dev = device_of_key(key) if RegistrationKind(kind) in _KEYED else None
            out.nodes.append(ChangedNode(node, f"{what} (line {line})", fc.path, line, device=dev or device))
    if not fc.whole:
        out.unmapped = _covered(fc.lines - reg_lines, ((s.line, s.end_line) for s in syms))
    return out


def _registration_node(ix: Index, kind: RegistrationKind, name: str) -> Node | None:
    if kind.is_stub:
        return stub_node(name, stub_declared(ix, name))
    if kind in (RegistrationKind.LIBRARY_IMPL, RegistrationKind.LIBRARY_DEF):
        ops = registry(ix).lookup(name)
        return op_node(ops[0]) if len(ops) == 1 else None
    if kind.is_python:
        return Node(NodeKind.BINDING, name, name)
    return None


def _structured_ops(ix: Index, meta_name: str) -> list[Op]:
    """The structured op a TORCH_META_FUNC(name) belongs to, and the ops delegating to it."""
    reg = registry(ix)
    base = [op for op in reg.by_name.get(meta_name, []) if op.structured]
    base += [reg.by_full[op.structured_delegate] for ops in reg.by_name.values() for op in ops
             if op.struct_name == meta_name and op.structured_delegate in reg.by_full] if not base else []
    out = {op.full_name: op for op in base}
    for op in base:
        out.update({d.full_name: d for d in reg.delegating.get(op.full_name, [])})
    return list(out.values())


# ------------------------------------------------------------------ native_functions.yaml, derivatives.yaml, tags

def _native_yaml(ix: Index, fc: FileChange) -> ChangeMap:
    out = ChangeMap()
    reg = registry(ix)
    ops = [op for op in reg.by_id.values() if op.path == fc.path and not op.autogen_from]
    chosen = _innermost(ops, fc.lines, fc.gaps, lambda o: o.line, lambda o: o.end_line)
    seen: set[str] = set()
    for op, first in sorted(chosen.values(), key=lambda v: v[1]):
        rows = [d for d in reg.own.get(op.full_name, []) if d.line in fc.lines]
        if rows:
            before = " (before the change: the tree holds the diff's old side)" if fc.side is DiffSide.OLD else ""
            why = f"dispatch line {rows[0].line} changed{before}: " + (fc.edit(rows[0].line) or ", ".join(
                f"{d.key}: {d.kernel}" for d in rows))
            device = devices.pop() if len(devices := {device_of_key(d.key) for d in rows}) == 1 else None
        else:
            why, device = f"entry changed (line {first})", None
        out.nodes.append(ChangedNode(op_node(op), why, fc.path, first, device=device))
        seen.add(op.full_name)
        for other in reg.delegating.get(op.full_name, []) + [o for o in reg.by_name.get(op.name, [])
                                                             if o.autogen_from == op.full_name]:
            if other.full_name not in seen:
                seen.add(other.full_name)
                how = "structured_delegate" if other.structured_delegate else "autogen"
                out.nodes.append(ChangedNode(op_node(other), f"{how}: its kernels come from {op.full_name}",
                                             fc.path, first, device=device))
    out.unmapped = _covered(fc.lines, ((o.line, o.end_line) for o in ops))
    return out


def _derivatives_yaml(ix: Index, fid: int, fc: FileChange) -> ChangeMap:
    out = ChangeMap()
    reg = registry(ix)
    rows = ix.q("SELECT id, op_full_name, line FROM derivative WHERE file_id = ? ORDER BY line", (fid,))
    spans = [(rid, name, line, rows[k + 1][2] - 1 if k + 1 < len(rows) else 10**9) for k, (rid, name, line) in
             enumerate(rows)]
    chosen = _innermost(spans, fc.lines, fc.gaps, lambda s: s[2], lambda s: s[3])
    for (rid, name, line, _end), first in sorted(chosen.values(), key=lambda v: v[1]):
        formulas = ix.q("SELECT variables, mode, line FROM derivative_formula WHERE derivative = ? ORDER BY line",
                        (rid,))
        hit = [(v, FormulaMode(m)) for v, m, n in formulas if n in fc.lines]
        what = (", ".join(f"{'forward-mode ' if m is FormulaMode.FORWARD else ''}formula for {v}" for v, m in hit)
                or "entry")
        op = reg.by_full.get(name)
        if op is None:
            out.note += f"derivatives.yaml:{line} names {name}, which is not an op here. "
            continue
        # Forward-mode formulas alone changed: only forward-mode AD runs them (Note [Formula modes]); any other line
        # of the entry (a backward formula, output_differentiability, the name) changes its backward.
        forward = bool(hit) and all(m is FormulaMode.FORWARD for _v, m in hit)
        aspect = Aspect.FORWARD_AD if forward else Aspect.BACKWARD
        out.nodes.append(ChangedNode(op_node(op), f"{aspect}: derivatives.yaml {what} changed (line {first})",
                                     fc.path, first, aspect=aspect))
    out.unmapped = _covered(fc.lines, ((s[2], s[3]) for s in spans))
    return out


def _tags_yaml(ix: Index, fid: int, fc: FileChange) -> ChangeMap:
    out = ChangeMap()
    rows = ix.q("SELECT name, line FROM tag WHERE file_id = ? ORDER BY line", (fid,))
    names = sorted({next(name for name, line in reversed(rows) if line <= n) for n in fc.lines
                    if rows and rows[0][1] <= n})
    reg = registry(ix)
    counts = [f"{t} ({sum(t in op.tags for op in reg.by_id.values())} ops)" for t in names]
    out.note = ("tags changed: " + ", ".join(counts) + "; tags steer codegen and compiler passes for every op "
                "carrying them (not walked op by op)") if counts else ""
    return out


# ------------------------------------------------------------------ Python (torch/**) and tests (test/**)

@dataclass(frozen=True)
class _PyDef:
    kind: NodeKind  # PY_FUNCTION or PY_CLASS
    id: int
    fq: str
    name: str
    line: int
    end_line: int


def _python(ix: Index, fid: int, fc: FileChange) -> ChangeMap:
    out = ChangeMap()
    lo, hi = _span(fc.lines, fc.gaps)
    cond = "" if fc.whole else " AND line <= ? AND end_line >= ?"
    params = (fid,) if fc.whole else (fid, hi, lo)
    defs = [_PyDef(NodeKind.PY_FUNCTION, i, f"{m}.{q}", n, a, b) for i, m, q, n, a, b in ix.q(
        f"SELECT id, module, qualname, name, line, end_line FROM py_function WHERE file_id = ?{cond}", params)]
    defs += [_PyDef(NodeKind.PY_CLASS, i, f"{m}.{q}", n, a, b) for i, m, q, n, a, b in ix.q(
        f"SELECT id, module, qualname, name, line, end_line FROM py_class WHERE file_id = ?{cond}", params)]
    if fc.whole:
        picked = [(d, d.line) for d in defs if d.kind is NodeKind.PY_CLASS or "<locals>" not in d.fq]
    else:
        picked = list(_innermost(defs, fc.lines, fc.gaps, lambda d: d.line, lambda d: d.end_line).values())
    picked.sort(key=lambda v: v[1])
    out.cut = max(0, len(picked) - MAX_NODES_PER_FILE)
    removed = set(fc.removed)
    func_ids = []
    for d, first in picked[:MAX_NODES_PER_FILE]:
        is_func = d.kind is NodeKind.PY_FUNCTION
        why = "in the file" if fc.whole else f"{'def' if is_func else 'class body'} changed (line {first})"
        out.nodes.append(ChangedNode(py_node(d.kind, d.fq, Loc(fc.path, d.line)), why, fc.path, first,
                                     d.name in removed))
        if is_func:
            func_ids.append(d.id)
    # Ops given Python meaning here (decompositions, refs, lowerings, meta kernels): by function or by line.
    marks = ",".join("?" * len(func_ids))
    refs = ix.q(f"SELECT kind, op, line FROM py_op_ref WHERE file_id = ? AND (func IN ({marks}) OR line "
                "BETWEEN ? AND ?)", (fid, *func_ids, lo, hi)) if func_ids or fc.lines else []
    reg = registry(ix)
    seen: set[str] = set()
    for kind, op_text, line in refs:
        why, aspect = f"its {kind} ({op_text}, line {line}) changed", Aspect(PyOpRefKind(kind))
        for op in registered_ops(reg, op_text):
            if op.full_name not in seen:
                seen.add(op.full_name)
                out.nodes.append(ChangedNode(op_node(op), why, fc.path, line, aspect=aspect, compiled=True))
        node = library_op_node(op_text, Loc(fc.path, line))
        if node is not None and node.key not in seen:  # torch.ops.mkldnn._convolution_pointwise: a TORCH_LIBRARY op
            seen.add(node.key)
            out.nodes.append(ChangedNode(node, why, fc.path, line, aspect=aspect, compiled=True))
    # Module-level names bound to native functions (``linear = _add_docstr(torch._C._nn.linear, ...)``).
    for name, value, line in ix.q("SELECT name, value, line FROM py_assign WHERE file_id = ? AND line BETWEEN ? AND ?",
                                  (fid, lo, hi)) if not fc.whole else []:
        if line in fc.lines:
            for op in ops_of_python(ix, value)[:4]:
                out.nodes.append(ChangedNode(op_node(op), f"{name} = {value} changed (line {line})", fc.path, line))
    entry_lines: set[int] = set()
    if fc.kind is FileKind.OPINFO:
        out.opinfos, entry_lines = _opinfos(ix, fid, fc, [(d.name, d.line, d.end_line) for d, _f in picked
                                                          if d.kind is NodeKind.PY_FUNCTION])
    if not fc.whole:
        out.unmapped = _covered(fc.lines - entry_lines, [(d.line, d.end_line) for d in defs])
    return out


def library_op_node(op_text: str, loc: Loc) -> Node | None:
    """An op of another namespace than aten a Python registration names (``mkldnn._convolution_pointwise``, defined
    by TORCH_LIBRARY, not native_functions.yaml): the Python name ``torch.ops.<ns>.<op>`` that calls it, None for
    aten, prims (Python-defined) and Python callables lowered by path (``torch.as_tensor``)."""
    ns = op_text.split(".", 1)[0]
    if "." not in op_text or ns in _NOT_LIBRARY:
        return None
    name = "torch.ops." + op_text
    return Node(NodeKind.BINDING, name, name, loc)


def _opinfos(ix: Index, fid: int, fc: FileChange,
             funcs: list[tuple[str, int, int]]) -> tuple[list[ChangedOpInfo], set[int]]:
    """(OpInfo entries a change to the OpInfo database touches, the lines that are in an entry): the entry
    a line sits in, or the entries named like a changed sample-inputs function (sample_inputs_cumsum ->
    'cumsum', by name)."""
    rows = ix.q("SELECT name, variant_test_name, line FROM op_info_entry WHERE file_id = ? ORDER BY line", (fid,))
    out: dict[tuple[str, str], ChangedOpInfo] = {}
    in_entry: set[int] = set()
    for n in sorted(fc.lines):
        if any(a <= n <= b for _nm, a, b in funcs):
            continue
        before = [r for r in rows if r[2] <= n]
        if before:
            in_entry.add(n)
            name, variant, line = before[-1]
            out.setdefault((name, variant), ChangedOpInfo(name, variant, Loc(fc.path, line),
                                                         f"entry changed (line {n})"))
    for fname, _a, _b in funcs:
        stem = next((fname[len(p):] for p in _SAMPLE_PREFIXES if fname.startswith(p)), "")
        rows_named = ix.q("SELECT name, variant_test_name, file_id, line FROM op_info_entry WHERE name = ? "
                          "OR replace(name, '.', '_') = ?", (stem, stem)) if stem else []
        for name, variant, entry_fid, line in rows_named:
            out.setdefault((name, variant), ChangedOpInfo(name, variant, Loc(ix.path_of(entry_fid), line),
                                                         f"{fname} changed (matched by name)"))
    return list(out.values()), in_entry


def _tests(ix: Index, fid: int, fc: FileChange) -> ChangeMap:
    out = ChangeMap()
    lo, hi = _span(fc.lines, fc.gaps)
    cond = "" if fc.whole else " AND m.line <= ? AND m.end_line >= ?"
    params = (fid,) if fc.whole else (fid, hi, lo)
    methods = ix.q("SELECT m.name, coalesce(c.name, ''), m.line, m.end_line, m.decorators FROM test_method m "
                   f"LEFT JOIN test_class c ON c.id = m.cls WHERE m.file_id = ?{cond} ORDER BY m.line", params)
    if fc.whole:
        picked = [(m, m[2]) for m in methods]
    else:
        picked = sorted(_innermost(methods, fc.lines, fc.gaps, lambda m: m[2], lambda m: m[3]).values(),
                        key=lambda v: v[1])
    for (name, cls, line, _end, decos), first in picked:
        why = "in the file" if fc.whole else f"test changed (line {first})"
        out.tests.append(ChangedTest(name, cls, Loc(fc.path, line), json.loads(decos or "[]"), why))
    rest = [] if fc.whole else _covered(fc.lines, ((m[2], m[3]) for m in methods))
    if rest:
        classes = ix.q("SELECT name, line, end_line FROM test_class WHERE file_id = ? ORDER BY line", (fid,))
        scopes: dict[str, tuple[int, int]] = {}
        for n in rest:
            cls = next((c for c in classes if c[1] <= n <= c[2]), None)
            key = cls[0] if cls else ""
            scopes.setdefault(key, (cls[1] if cls else n, n))
        for cls_name, (line, n) in scopes.items():
            what = f"class {cls_name} changed outside its tests" if cls_name else "module-level code changed"
            out.tests.append(ChangedTest("", cls_name, Loc(fc.path, line), [], f"{what} (line {n})"))
    return out


def map_file(ix: Index, fid: int, fc: FileChange) -> ChangeMap:
    """The changed definitions, entries and tests of one indexed file, by what the file is (``fc.kind``)."""
    kind = fc.kind
    if kind is FileKind.NATIVE_FUNCTIONS:
        return _native_yaml(ix, fc)
    if kind is FileKind.DERIVATIVES:
        return _derivatives_yaml(ix, fid, fc)
    if kind is FileKind.TAGS:
        return _tags_yaml(ix, fid, fc)
    if kind is FileKind.CPP:
        return _cpp(ix, fid, fc)
    if kind in (FileKind.PYTHON, FileKind.OPINFO):
        return _python(ix, fid, fc)
    if kind is FileKind.TEST:
        return _tests(ix, fid, fc)
    return ChangeMap(note="no code facts are indexed for this file")
