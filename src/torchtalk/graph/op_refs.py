"""DISPATCH_CALL edges of an op's C++ API function handed on without being called.

Note [Op references]: ``unary_op_impl_(self, at::abs_out)`` (abs_'s kernel) hands the op-API function
``at::abs_out`` to a helper that calls it through its parameter. No call of abs.out is written there, so the
graph would have no edge from abs_'s kernel to abs.out, and a walk down from it would find nothing. Two
places show such a name:

- the arguments of the function's recorded calls (their type expressions, Note [Type expressions]): an
  argument that is only a name, or its address, naming an op's function (``at::X``: op_spellings.op_named's
  X, X_out, X_outf) or a Tensor method (``&Tensor::X_``, ``&at::Tensor::X_``: the ops of that method). The
  extractor reads a same-file macro's expansion, so this finds what SparseCsrTensorMath.cpp's
  ``CREATE_UNARY_UFUNC(sqrt)`` makes, ``unary_op_out(&at::sqrt_outf, self, result)`` and
  ``unary_op_inplace(self, &Tensor::sqrt_)``, at the macro's line; the edges into an op are found the same
  way (``passing``: every call passing one, read once), so called_by and impact see them too;
- the function's own lines, for ``at::name`` written as an argument (followed by ``,`` or ``)``) of what
  is not a recorded call.

Each is a DISPATCH_CALL edge that says how it was found (``EdgeHow.PASSED_ON``). graph.py's rules add these
to the recorded calls.
"""

from __future__ import annotations

import re

from ..model import NO_REF, CallKind, CallSite, Edge, EdgeHow, EdgeKind, Loc, Node, NodeKind, Variant
from ..model.cpp import TypeBase, TypeExpr, TypeStepKind
from ..store.reader import Index
from .cpp_callers import op_callers
from .nodes import symbol_id, symbol_node
from .op_spellings import op_named
from .registry import OpRegistry, registry
from .source_lines import file_lines
from .symbols import CALL_COLS, symbol, to_call

NOTE = "passes the op's function on (found in the source text: no call site is recorded for it)"
_REF = re.compile(r"\bat::(\w+)\s*[,)]")
_METHOD_OWNERS = ("Tensor::", "at::Tensor::")


def op_refs(ix: Index, node: Node) -> list[Edge]:
    root = ix.source_root
    sid = symbol_id(node)
    if sid is None or root is None:
        return []
    memo: dict[int, list[Edge]] = ix.cached("op_refs", dict)
    if sid not in memo:
        memo[sid] = _refs(ix, node, sid)
    return memo[sid]


def passing(ix: Index, node: Node) -> list[Edge]:
    """The edges into op ``node`` of the calls that pass its function on as an argument (Note [Op references])."""
    return _passing(ix).get(node.key, [])


def dispatch_calls(ix: Index, node: Node, out: list[Edge]) -> list[Edge]:
    """The recorded calls of ops of a C++ function among its edges ``out``, and the op functions it hands on."""
    recorded = [e for e in out if e.kind is EdgeKind.DISPATCH_CALL]
    have = {e.dst.key for e in recorded}
    return recorded + [e for e in op_refs(ix, node) if e.dst.key not in have]


def op_calls_into(ix: Index, node: Node) -> list[Edge]:
    """The recorded calls of an op, and the calls that pass its function on."""
    recorded = op_callers(ix, node)
    have = {(e.src.key, e.site) for e in recorded}
    return recorded + [e for e in passing(ix, node) if (e.src.key, e.site) not in have]


def warm_passing(ix: Index) -> None:
    """Load the table ``passing`` reads (one scan of the call arguments, ~0.4 s on 2.6.0): the server's warm-up, so
    that no first answer walking up to an op pays it."""
    _passing(ix)


def _passing(ix: Index) -> dict[str, list[Edge]]:
    """op -> the edges of the calls passing its function on, for every op (once per index version)."""
    return _scan(ix)[0]


def _scan(ix: Index) -> tuple[dict[str, list[Edge]], dict[int, list[tuple[str, str, Loc]]]]:
    """The calls passing an op's function on, read once per index version: by op (their edges into it), and by
    caller ((op, as written, site) in source order: what ``op_refs`` reads of its calls)."""
    def load() -> tuple[dict[str, list[Edge]], dict[int, list[tuple[str, str, Loc]]]]:
        reg = registry(ix)
        into: dict[str, list[Edge]] = {}
        found: dict[int, list[tuple[int, int, str, str, Loc]]] = {}
        # every call _passed reads an op from: an argument "v:" naming at::... or Tensor::...; and every at::X named
        # without a call (a cast's operand: comparison_op(self, other, static_cast<OutFunc>(at::logical_and_out)))
        rows = ix.q(f"SELECT {CALL_COLS} FROM cpp_call WHERE caller != ? AND ((args LIKE '%v:%' AND "
                    "(args LIKE '%at::%' OR args LIKE '%Tensor::%')) OR (kind = ? AND qualifier = 'at'))",
                    (NO_REF, CallKind.REF.value))
        seen: set[tuple[int, int, str]] = set()
        for call in (to_call(ix, r) for r in rows):
            sym = symbol(ix, call.caller)
            if sym is None:
                continue
            passed = [(o, f"at::{call.callee}") for o in _at_ops(reg, call.callee)] if call.kind is CallKind.REF \
                else _passed(reg, call)
            for full, written in passed:
                if (sym.id, call.line, full) not in seen:
                    seen.add((sym.id, call.line, full))
                    into.setdefault(full, []).append(_edge(reg, symbol_node(ix, sym), full, call.loc, written))
                    found.setdefault(sym.id, []).append((call.line, call.id, full, written, call.loc))
        return into, {sid: [t[2:] for t in sorted(calls, key=lambda t: (t[0], t[1]))] for sid, calls in found.items()}
    table: tuple[dict[str, list[Edge]], dict[int, list[tuple[str, str, Loc]]]] = ix.cached("op_refs_scan", load)
    return table


def _refs(ix: Index, node: Node, sid: int) -> list[Edge]:
    sym = symbol(ix, sid)
    if sym is None or sym.loc is None or not sym.is_definition:
        return []
    reg = registry(ix)
    out: list[Edge] = []
    seen: set[str] = set()
    for full, written, site in _scan(ix)[1].get(sid, ()):
        if full not in seen:
            seen.add(full)
            out.append(_edge(reg, node, full, site, written))
    path = sym.loc.path
    lines = file_lines(ix, path)
    for n in range(sym.line, min(sym.end_line, len(lines)) + 1):
        text = lines[n - 1]
        if "at::" not in text or text.lstrip().startswith("//"):
            continue
        for m in _REF.finditer(text):
            for full in op_named(reg, m.group(1)):
                if full in seen or full not in reg.by_full:
                    continue
                seen.add(full)
                out.append(_edge(reg, node, full, Loc(path, n), f"at::{m.group(1)}"))
    return out


def _passed(reg: OpRegistry, call: CallSite) -> list[tuple[str, str]]:
    """(op, name as written) of each argument of ``call`` that names an op's function or a Tensor method."""
    out: list[tuple[str, str]] = []
    for text in call.args.split(";") if "v:" in call.args else ():
        if not text.startswith("v:"):
            continue
        te = TypeExpr.parse(text)
        if te.base is not TypeBase.VARIABLE or any(s.kind is not TypeStepKind.ADDRESS for s in te.steps):
            continue
        name = te.text.lstrip(":")
        if name.startswith(_METHOD_OWNERS):
            method = name.rsplit("::", 1)[1]
            ops = [o.full_name for o in reg.by_name.get(method, ()) if Variant.METHOD in o.variants]
        elif name.startswith("at::") and name.count("::") == 1:
            ops = _at_ops(reg, name[4:])
        else:
            continue
        out += [(o, te.text) for o in ops]
    return out


def _at_ops(reg: OpRegistry, name: str) -> list[str]:
    """The ops ``at::name`` is the function of (``at::abs_out``: abs.out)."""
    return [o for o in op_named(reg, name) if o in reg.by_full]


def _edge(reg: OpRegistry, src: Node, full: str, site: Loc, written: str) -> Edge:
    return Edge(src, Node(NodeKind.OP, full, full, reg.by_full[full].loc), EdgeKind.DISPATCH_CALL, site, note=NOTE,
                how=EdgeHow.PASSED_ON, written=written)
