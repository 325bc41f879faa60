"""The Python side of a change: nn modules, optimizers and Python functions it reaches.

Python calls have no reverse edges in the graph (a Python function is reached
from its callers only by name), so this goes by the names code writes: a module's
methods that call ``F.softmax`` reach whatever ``torch.nn.functional.softmax`` reaches.
Only torch/nn/modules is searched for such callers (what users build models from);
the answer says so.
"""

from __future__ import annotations

import json
from dataclasses import dataclass

from ..graph.pynames import pynames
from ..model import Loc, Node, NodeKind
from ..store.reader import Index

MODULE_DIRS = ("torch/nn/modules/",)
MAX_SUBCLASSES = 8
_PUBLIC = ("torch.nn.", "torch.optim.", "torch.optim.lr_scheduler.", "torch.nn.functional.", "torch.")
_ROOTS = ("module", "optimizer", "lr_scheduler")


@dataclass
class AffectedModule:
    name: str  # as users write it: "torch.nn.Linear"
    fq: str  # where it is defined: "torch.nn.modules.linear.Linear"
    kind: str  # module | optimizer | lr_scheduler
    loc: Loc
    why: str


@dataclass(frozen=True)
class ClassRow:
    fq: str
    name: str
    loc: Loc
    roots: tuple[str, ...]


def _class(ix: Index, fq: str) -> ClassRow | None:
    row = ix.one("SELECT fq, name, file_id, line, roots FROM py_class_fq WHERE fq = ? AND source = 'py'", (fq,))
    if row is None:
        return None
    return ClassRow(row[0], row[1], Loc(ix.path_of(row[2]), row[3]), tuple(row[4].split()))


def public_name(ix: Index, fq: str) -> str:
    """How users spell a class or function: torch.nn.Linear for torch.nn.modules.linear.Linear."""
    short = fq.rsplit(".", 1)[-1]
    names = pynames(ix)
    for prefix in _PUBLIC:
        if names.canonical(prefix + short) == fq:
            return prefix + short
    return fq


def owner_class(ix: Index, node: Node) -> ClassRow | None:
    """The module / optimizer class a changed method or class belongs to (None for other code)."""
    if node.kind is NodeKind.PY_CLASS:
        fq = node.key
    else:
        fn = pynames(ix).definition(node.key)
        if fn is None or not fn.cls:
            return None
        fq = f"{fn.module}.{fn.cls.split('.<locals>')[0]}"
    row = _class(ix, fq)
    return row if row is not None and any(r in _ROOTS for r in row.roots) else None


def as_module(ix: Index, row: ClassRow, why: str) -> AffectedModule:
    kind = next(r for r in _ROOTS if r in row.roots)
    return AffectedModule(public_name(ix, row.fq), row.fq, kind, row.loc, why)


def subclasses(ix: Index, fq: str) -> list[ClassRow]:
    """Classes of torch/ that name ``fq`` as a base (they inherit what changed unless they override it)."""
    out = []
    for sub_fq, name, fid, line, roots, bases in ix.q(
            "SELECT fq, name, file_id, line, roots, bases FROM py_class_fq WHERE source = 'py' AND bases LIKE ? "
            "ESCAPE '\\' ORDER BY fq", ('%"' + fq.replace("_", "\\_") + '"%',)):
        if fq in json.loads(bases or "[]"):
            out.append(ClassRow(sub_fq, name, Loc(ix.path_of(fid), line), tuple(roots.split())))
    return out[:MAX_SUBCLASSES]


def spellings(fq: str) -> list[str]:
    """How module code writes a call to a Python function: F.softmax, torch.nn.functional.softmax, torch.X."""
    out = [fq]
    if fq.startswith("torch.nn.functional."):
        short = fq[len("torch.nn.functional."):]
        out += [f"F.{short}", f"nn.functional.{short}"]
    return out


def _module_calls(ix: Index) -> dict[str, list[tuple[str, int, int]]]:
    """callee as written -> [(class fq, line, file id)] for the methods of classes under MODULE_DIRS."""
    def build() -> dict[str, list[tuple[str, int, int]]]:
        out: dict[str, list[tuple[str, int, int]]] = {}
        dirs = " OR ".join("path LIKE ?" for _ in MODULE_DIRS)
        for callee, line, fid, module, cls in ix.q(
                "SELECT c.callee, c.line, c.file_id, f.module, f.cls FROM py_call c "
                f"JOIN py_function f ON f.id = c.func WHERE c.file_id IN (SELECT id FROM files WHERE {dirs}) AND f.cls != ''",
                [d + "%" for d in MODULE_DIRS]):
            out.setdefault(callee, []).append((f"{module}.{cls.split('.')[0]}", line, fid))
        return out
    table: dict[str, list[tuple[str, int, int]]] = ix.cached("affected_module_calls", build)
    return table


def modules_calling(ix: Index, names: list[str], via: str) -> list[AffectedModule]:
    """nn modules whose methods call one of ``names`` (as written in their source)."""
    calls = _module_calls(ix)
    out: dict[str, AffectedModule] = {}
    for name in names:
        for cls_fq, line, fid in calls.get(name, []):
            if cls_fq in out:
                continue
            row = _class(ix, cls_fq)
            if row is not None and any(r in _ROOTS for r in row.roots):
                out[cls_fq] = as_module(ix, row, f"{name}(...) at {ix.path_of(fid)}:{line}{via}")
    return list(out.values())
