"""Hand-written Python bindings: PyMethodDef entries written by hand in the binding files, and the ops they wrap.

gen_python_functions.py writes a ``THPVariable_X`` for most ops. The ones it skips are written by hand, in
two places: the hand-written part of its templates (tools/autograd/templates/python_variable_methods.cpp:
``THPVariable_nonzero`` and its entry in ``variable_methods[]``), which reaches the index as part of the
generated copy, and the manual files whose tables fill the same namespaces
(torch/csrc/autograd/python_torch_functions_manual.cpp: ``torch.nonzero``). An entry is in scope when its
table fills one of the binding namespaces (``torch``, ``Tensor``, ``torch._C._nn``, ...; link/pyapi.py) and
it is written by hand: in a hand-written file, or in a generated file on a line its template holds verbatim
(Note [Template lines]) and bound to a function that is not generated (no ``// aten::`` dispatch lambdas).

Its function is linked to the ops it wraps by three mechanisms, each recorded:

- ``name``: the entry's Python name is one the registry gives an op (``Tensor.nonzero``: ``variants:
  method`` of ``nonzero``);
- ``parser``: else, the function's PythonArgParser signatures name the op (``torch._C._nn._parse_to``
  parses ``"to(Device device=None, ...)"``);
- ``dispatch``: else, the ops it calls through the dispatcher, itself or in the binding helpers it calls
  (``dispatch_*`` and ``THPVariable_*``; its dispatch lambdas are part of it): ``THPVariable_bool_scalar``
  returns the generated ``THPVariable_is_nonzero``, whose lambda calls ``is_nonzero``. Generic helpers
  (``wrap``, ``torch::utils::...``) are not followed: what they call is not the op the binding stands for.

An entry none of these links wraps no op (``Tensor.dim``, ``Tensor.data_ptr``): it is kept, with no op.

Note [Template lines]: a generated file copies its template's text, with each ``${placeholder}`` line
replaced by what the generator renders. A line of the generated file whose text the template holds
(and, where several template lines read the same, whose next lines agree with just one of them) was
written by hand in the template, and is cited at the template's line.
"""

from __future__ import annotations

import os
from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path

from ..graph import Step, down, graph
from ..graph.nodes import cpp_node
from ..graph.registry import registry
from ..graph.symbols import defs_by_name, defs_in_file
from ..link.pyapi import GENERATED_NAMESPACES, generated_namespace
from ..model import GENERATED_PREFIX, CppSymbol, EdgeKind, GeneratedKind, Loc, Op, PyApiKind
from ..model.codegen import template_for
from ..store.reader import Index
from .excerpt import generated_dir
from .generated import signatures

NAMESPACES = frozenset(ns for _prefix, ns in GENERATED_NAMESPACES)
_NAME_KINDS = (PyApiKind.FUNCTION, PyApiKind.METHOD, PyApiKind.PY_MODULE)
_CONTEXT = 3  # following lines compared when several template lines read the same
BINDING_REACH = 3  # calls into dispatch_* helpers followed below a binding function


@dataclass
class HandBinding:
    python_name: str  # "Tensor.nonzero"
    function: CppSymbol  # the definition the index holds (in the generated copy for a template)
    entry: Loc  # the PyMethodDef line, where it is written
    written: Loc  # the function's definition, where it is written
    declared: Loc | None = None  # a forward declaration before it in the same file
    template: str = ""  # the template it is written in ("" for a hand-written file)
    ops: list[str] = field(default_factory=list)  # op full names it wraps
    how: str = ""  # name | parser | dispatch: what linked it ("" when nothing did)


# ------------------------------------------------------------------ Note [Template lines]

def _read_lines(path: Path) -> list[str]:
    try:
        return path.read_bytes().decode("utf-8", "replace").splitlines()
    except OSError:
        return []


def _template_text(ix: Index, gen_path: str) -> tuple[str, list[str], list[str]]:
    """(template relpath, its lines, the generated file's lines); empty when either cannot be read."""
    def load() -> tuple[str, list[str], list[str]]:
        _gen, template = template_for(gen_path.removeprefix(GENERATED_PREFIX))
        root = ix.source_root
        if not template or root is None:
            return "", [], []
        full = Path(root) / template
        real = os.path.realpath(full)
        if not real.startswith(os.path.realpath(root) + os.sep):
            return "", [], []  # a symbolic link that leads out of the tree: not read
        gen_dir = generated_dir(ix)
        return template, _read_lines(full), _read_lines(gen_dir / gen_path.removeprefix(GENERATED_PREFIX))
    out: tuple[str, list[str], list[str]] = ix.cached(f"template_text:{gen_path}", load)
    return out


def in_template(ix: Index, gen_path: str, line: int) -> Loc | None:
    """Where a line of a generated file is written in its template (Note [Template lines]), or None."""
    template, tlines, glines = _template_text(ix, gen_path)
    if not template or not 1 <= line <= len(glines) or not glines[line - 1].strip():
        return None
    index: dict[str, list[int]] = ix.cached(f"template_index:{template}", lambda: _line_index(tlines))
    cands = index.get(glines[line - 1], [])
    for k in range(1, _CONTEXT + 1):
        if len(cands) <= 1:
            break
        nxt = glines[line - 1 + k] if line - 1 + k < len(glines) else None
        cands = [c for c in cands if c - 1 + k < len(tlines) and tlines[c - 1 + k] == nxt]
    return Loc(template, cands[0]) if len(cands) == 1 else None


def _line_index(lines: list[str]) -> dict[str, list[int]]:
    index: dict[str, list[int]] = defaultdict(list)
    for i, text in enumerate(lines, 1):
        if "$" not in text:  # a placeholder line is replaced by the generator: never copied as is
            index[text].append(i)
    return index


# ------------------------------------------------------------------ the entries and their ops

def _function(ix: Index, file_id: int, target: str) -> CppSymbol | None:
    name = target.split("::")[-1]
    found = defs_in_file(ix, file_id, name) or defs_by_name(ix, name)
    return found[0] if found else None


def _declared(ix: Index, fn: CppSymbol) -> Loc | None:
    row = ix.one("SELECT line FROM cpp_symbol WHERE file_id = (SELECT id FROM files WHERE path = ?) AND name = ? "
                  "AND NOT is_definition AND line < ? ORDER BY line LIMIT 1", (fn.path, fn.name, fn.line))
    return Loc(fn.path, row[0]) if row else None


def _entries(ix: Index, generated_fns: set[int]) -> list[tuple[str, CppSymbol, Loc, str]]:
    """(Python name, function, entry line as written, template or "") of every hand-written entry in scope."""
    owners = {(file_id, line): name.rsplit(".", 1)[0] for name, file_id, line in ix.q(
        "SELECT name, file_id, line FROM py_api WHERE kind = ?", (PyApiKind.PYMETHODDEF.value,))}
    out = []
    for name, target, file_id, line, path, generated in ix.q(
            "SELECT r.name, r.target, r.file_id, r.line, f.path, f.generated FROM cpp_registration r "
            "JOIN files f ON f.id = r.file_id WHERE r.kind = 'pymethoddef' ORDER BY f.path, r.line"):
        if generated:
            owner = generated_namespace(path)
            where = in_template(ix, path, line) if owner else None
            if where is None:
                continue  # rendered by the generator
        else:
            owner = owners.get((file_id, line))
            where = Loc(path, line)
        fn = _function(ix, file_id, target) if owner in NAMESPACES else None
        if fn is None or fn.id in generated_fns:
            continue  # another table, or a generated function: a generated binding (query/generated.py)
        out.append((f"{owner}.{name}", fn, where, where.path if generated else ""))
    return out


def _dispatched(ix: Index, fn: CppSymbol) -> list[str]:
    """The ops a binding function calls through the dispatcher: its own calls (its dispatch lambdas included) and
    those of the functions of its own file it calls, within BINDING_REACH calls: the binding code's helpers
    (``dispatch_nonzero``, ``THPVariable_to_type``, the generated ``THPVariable_is_nonzero`` that
    ``THPVariable_bool_scalar`` returns). Helpers of other files (``wrap``, ``torch::utils::...``) are not followed:
    what they call is not the op the binding stands for."""
    memo: dict[int, list[str]] = ix.cached("hand_bindings_dispatched", dict)
    if fn.id not in memo:
        g = graph(ix)
        reg = registry(ix)

        def own_file(s: Step) -> bool:
            return s.edge.kind is EdgeKind.CALL and s.node.loc is not None and s.node.loc.path == fn.path

        steps = down([cpp_node(fn)], g.out, [EdgeKind.CALL, EdgeKind.DISPATCH_CALL], BINDING_REACH, fan_out=60,
                     max_nodes=300, follow=own_file)
        memo[fn.id] = list(dict.fromkeys(s.node.key for s in steps.steps
                                         if s.edge.kind is EdgeKind.DISPATCH_CALL and s.node.key in reg.by_full))
    return memo[fn.id]


def _callee_names(ix: Index, fn: CppSymbol, file_id: int) -> frozenset[str]:
    """The names the function and the functions of its file it calls (by name, within BINDING_REACH calls) call,
    as written and without a ``_symint`` / ``_out`` suffix: a superset, by text, of the ops _dispatched can find,
    so only the bindings whose text names an op are walked for it."""
    names: set[str] = set()
    frontier, seen = [fn.id], {fn.id}
    for _level in range(BINDING_REACH):
        marks = ",".join("?" * len(frontier))
        callees: set[str] = set()
        for callee, qualifier in ix.q(f"SELECT callee, qualifier FROM cpp_call WHERE caller IN ({marks})", frontier):
            for n in [callee or "", *(qualifier or "").split("::")]:
                names.update((n, n.removesuffix("_symint"), n.removesuffix("_out"), n.removesuffix("_outf")))
            if callee:
                callees.add(callee)
        frontier = [d.id for c in sorted(callees) for d in defs_in_file(ix, file_id, c) if d.id not in seen]
        seen.update(frontier)
        if not frontier:
            break
    return frozenset(names)


@dataclass
class _Entry:
    binding: HandBinding  # ops and how filled when its name or its parser signatures link it
    names: frozenset[str]  # _callee_names, for the ones that only what they dispatch to can link


def _entries_linked(ix: Index) -> list[_Entry]:
    """Every entry in scope, linked by its Python name or its parser signatures where these link it (cheap: no
    C++ call is resolved); the others wait for _dispatched."""
    def load() -> list[_Entry]:
        reg = registry(ix)
        by_name: dict[str, list[str]] = defaultdict(list)
        for full, names in reg.py_by_op.items():
            for p in names:
                if p.kind in _NAME_KINDS:
                    by_name[p.name].append(full)
        generated_fns = {scope for (scope,) in ix.q("SELECT DISTINCT scope FROM generated_fact WHERE kind = ?",
                                                    (GeneratedKind.BINDS_OP.value,))}
        file_ids = ix.file_ids()
        out = []
        for python_name, fn, entry, template in _entries(ix, generated_fns):
            written = (in_template(ix, fn.path, fn.line) if template else None) or fn.loc
            b = HandBinding(python_name, fn, entry, written, _declared(ix, fn) if not template else None, template)
            if python_name in by_name:
                b.ops, b.how = by_name[python_name], "name"
            else:
                parsed = {s.split("(", 1)[0].strip() for s in signatures(ix, fn.id)}
                b.ops = [op.full_name for n in sorted(parsed) for op in reg.by_name.get(n, ())]
                b.how = "parser" if b.ops else ""
            out.append(_Entry(b, frozenset() if b.how else _callee_names(ix, fn, file_ids[fn.path])))
        return out
    found: list[_Entry] = ix.cached("hand_bindings_linked", load)
    return found


def warm(ix: Index) -> None:
    """Link the hand-written bindings once, off a first answer's path (the server's warm-up)."""
    _entries_linked(ix)


def _with_dispatch(ix: Index, e: _Entry) -> HandBinding:
    b = e.binding
    if b.how:
        return b
    ops = _dispatched(ix, b.function)
    return HandBinding(b.python_name, b.function, b.entry, b.written, b.declared, b.template, ops,
                       "dispatch" if ops else "")


def hand_bindings(ix: Index) -> list[HandBinding]:
    """Every hand-written entry of the binding namespaces, with the ops it wraps (resolves the calls of each one
    that only what it dispatches to can link: seconds on a cold index; trace asks bindings_of instead)."""
    return [_with_dispatch(ix, e) for e in _entries_linked(ix)]


def bindings_of(ix: Index, op: Op) -> list[HandBinding]:
    """The hand-written bindings that wrap ``op``: by name or parser, or by what they dispatch to (walked only for
    the bindings whose text names the op)."""
    out = []
    for e in _entries_linked(ix):
        if e.binding.how:
            if op.full_name in e.binding.ops:
                out.append(e.binding)
        elif op.name in e.names and op.full_name in (b := _with_dispatch(ix, e)).ops:
            out.append(b)
    return out
