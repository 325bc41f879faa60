"""affected: from a change to the ops, Python APIs and tests it touches, without a build.

The change comes as diff text, as a git revision of the tree's checkout (source/git.py), or as
names (``path:line``, ops, C++ functions, Python names). It becomes files and lines of the tree
(lines.py), their lines changed definitions, entries and tests (definitions.py; a generator or
template its generated layers, generators.py), and names changed nodes; reach.py walks up from
all of them at once and writes the answer.
"""

from __future__ import annotations

from ...errors import BadArgument
from ...graph.nodes import op_node, py_node
from ...graph.pynames import pynames
from ...graph.registry import registry
from ...graph.symbols import calls_named
from ...model import Loc, NodeKind, PyDefKind
from ...model.change import DiffSide, FileKind, Language
from ...source.git import git_diff, is_checkout
from ...store.reader import Index
from ..args import MAX_LIMIT, check_int
from ..functions import find_targets, suggest
from ..results import NotFound
from .definitions import ChangedNode, map_file
from .diff import MAX_FILES
from .generators import generated_from
from .lines import FileChange, TreeFiles, from_diff, from_path_name, split_names
from .reach import MappedChange, answer
from .result import AffectedResult, ChangedFile, RemovedName, UnknownName

MAX_STILL_NAMED = 5


# ------------------------------------------------------------------ input -> file changes

def _changes(files: TreeFiles, names: str | None, diff: str | None,
             rev: str | None) -> tuple[list[FileChange], list[str], list[str]]:
    """(file changes, names that are no path, sources)."""
    root = files.root
    changes: list[FileChange] = []
    plain: list[str] = []
    sources: list[str] = []
    if diff is not None:
        got = from_diff(files, diff)
        changes += got
        sources.append(f"a diff of {len(got)} file{'s' * (len(got) != 1)}")
    if rev is not None:
        text, label = git_diff(root, rev)
        changes += from_diff(files, text) if text.strip() else []
        sources.append(label)
    if names is not None:
        for n in split_names(names):
            fc = from_path_name(files, n)
            if fc is None:
                plain.append(n)
            else:
                changes.append(fc)
        sources.append("names")
    if not sources:
        if not is_checkout(root):
            raise BadArgument(f"affected needs a change: diff (unified diff text), rev (a git revision) or names "
                              f"(path:line, ops, functions); the tree {root} is not a git checkout, so "
                              "there is no working-tree change to default to")
        text, label = git_diff(root, None)
        changes += from_diff(files, text) if text.strip() else []
        sources.append(label)
    if len(changes) > MAX_FILES:
        raise BadArgument(f"the change (diff/rev) touches {len(changes)} files; the limit is {MAX_FILES}. Give part "
                          "of it, e.g. `git diff -- aten/src/ATen/native`")
    return changes, plain, sources


def _name_nodes(ix: Index, name: str) -> list[ChangedNode]:
    """An op, C++ function or Python name given by name, as changed nodes ([] when it names nothing)."""
    reg = registry(ix)
    ops = reg.lookup(name)
    if ops:
        return [ChangedNode(op_node(op), "named", op.path, op.line) for op in ops[:8]]
    found = find_targets(ix, name, "names")
    if not isinstance(found, NotFound):
        targets, _amb = found
        return [ChangedNode(t.node, "named", t.node.loc.path if t.node.loc else "",
                            t.node.loc.line if t.node.loc else 0) for t in targets]
    names = pynames(ix)
    for cand in (name, f"torch.{name}", f"torch.nn.{name}", f"torch.optim.{name}"):
        fq = names.canonical(cand)
        d = names.definition(fq) if fq else None
        if d is not None and d.kind in (PyDefKind.CLASS, PyDefKind.FUNCTION):
            kind = NodeKind.PY_CLASS if d.kind is PyDefKind.CLASS else NodeKind.PY_FUNCTION
            return [ChangedNode(py_node(kind, d.fq, d.loc), "named", d.loc.path, d.loc.line)]
    return []


def _still_named(ix: Index, name: str, lang: Language | None) -> tuple[list[Loc], int]:
    short = name.split("(")[-1].rstrip(")").split("::")[-1] if "(" in name else name.split("::")[-1]
    if lang is Language.PYTHON:
        rows = ix.q("SELECT file_id, line FROM py_call WHERE callee = ? OR callee LIKE ? ESCAPE '\\' LIMIT 500",
                    (short, "%." + short.replace("_", "\\_")))
        locs = [Loc(ix.path_of(f), ln) for f, ln in rows]
    else:
        locs = [c.loc for c in calls_named(ix, short, limit=500)]
        locs += [e.loc for _op, e in registry(ix).kernel_ops.get(short, [])]
        locs += [Loc(ix.path_of(f), ln) for f, ln in ix.q(
            "SELECT file_id, line FROM cpp_registration WHERE target = ? OR target LIKE ? ESCAPE '\\' LIMIT 200",
            (short, "%::" + short.replace("_", "\\_")))]
    return locs[:MAX_STILL_NAMED], len(locs)


def _map_file(ix: Index, files: TreeFiles, fc: FileChange, m: MappedChange) -> None:
    """One changed file's changed nodes, tests, entries and removed names into ``m``, and its line in the answer."""
    n_lines = len(fc.lines) + len(fc.gaps)

    def file_line(kind: FileKind | None, found: int, note: str) -> None:
        m.files.append(ChangedFile(path=fc.path, written=fc.written, status=fc.status, kind=kind, side=fc.side,
                                   lines=n_lines if kind is not None else 0, found=found, note=note))

    if not fc.path or not fc.status.has_lines:
        file_line(None, 0, fc.problem or f"{fc.status} change only: no lines to map")
        return
    if fc.kind is FileKind.CODEGEN:
        gen = generated_from(ix, fc.path)
        m.generators.append(gen)
        file_line(fc.kind, len(gen.layers), fc.problem or f"{gen.role}: everything generated from it is affected")
        return
    fid = files.indexed.get(fc.path, (None, None))[0]
    if fc.path in files.skipped:  # listed by the index, never read: no facts to map its lines to
        file_line(fc.kind, 0, fc.problem)
        return
    if fid is None:
        file_line(FileKind.OTHER, 0, fc.problem or "not indexed (build files, docs, scripts and third-party code "
                                                   "have no code facts)")
        return
    cm = map_file(ix, fid, fc)
    m.changed += cm.nodes
    m.tests += cm.tests
    m.opinfos += cm.opinfos
    notes = [x for x in (fc.problem, cm.note.strip()) if x]
    if cm.unmapped:
        shown = ", ".join(map(str, cm.unmapped[:6])) + (", ..." if len(cm.unmapped) > 6 else "")
        notes.append(f"{len(cm.unmapped)} changed line(s) outside any definition ({shown}): declarations, "
                     "macros, includes or comments")
    if cm.cut:
        notes.append(f"{cm.cut} more changed definitions not listed")
        m.cuts.append(f"{fc.path}: {cm.cut} changed definitions beyond the first {len(cm.nodes)}")
    if fc.added:
        notes.append("adds " + ", ".join(fc.added[:5]) + " (not in the tree yet)")
    file_line(fc.kind, len(cm.nodes) + len(cm.tests) + len(cm.opinfos), "; ".join(notes))
    if fc.side is not DiffSide.OLD:
        for name in fc.removed:
            locs, total = _still_named(ix, name, fc.kind.language)
            m.removed.append(RemovedName(name, fc.path, locs, total))


# ------------------------------------------------------------------ the query

def _close_paths(ix: Index, bad: list[FileChange]) -> list[str]:
    """Files of the tree named like the ones asked (ReduceOps.cpp -> aten/src/ATen/native/ReduceOps.cpp)."""
    paths = list(ix.paths().values())
    out: list[str] = []
    for fc in bad:
        base = fc.written.split(":", 1)[0].rstrip("/").rsplit("/", 1)[-1]
        out += [p for p in paths if p.rsplit("/", 1)[-1] == base][:4] if base else []
    return list(dict.fromkeys(out))[:8]


def affected(ix: Index, names: str | None = None, diff: str | None = None, rev: str | None = None, depth: int = 2,
             limit: int = 20) -> AffectedResult | NotFound:
    depth = check_int(depth, "depth", 1, 5)
    limit = check_int(limit, "limit", 1, MAX_LIMIT)
    files = TreeFiles(ix)
    changes, plain, sources = _changes(files, names, diff, rev)
    m = MappedChange(" + ".join(sources), depth, limit)
    for fc in changes:
        _map_file(ix, files, fc, m)
    for n in plain:
        nodes = _name_nodes(ix, n)
        if nodes:
            m.changed += nodes
        else:
            m.unknown.append(UnknownName(n, list(dict.fromkeys(registry(ix).suggest(n, 4) + suggest(ix, n, 4)))[:8]))
    # names only (a diff's files outside the tree are its answer): not a file of the tree, a line past its end
    bad = [fc for fc in changes if fc.problem and not fc.path] if diff is None and rev is None else []
    if bad and len(bad) == len(changes) and not m.changed and not m.tests:
        return NotFound("file of the source tree or line", ", ".join(fc.written for fc in bad)[:200],
                        _close_paths(ix, bad), "; ".join(fc.problem for fc in bad)[:400])
    if m.unknown and not m.changed and not changes and not m.tests:
        return NotFound("op, C++ function, Python name or path", ", ".join(u.name for u in m.unknown)[:200],
                        m.unknown[0].suggestions, "Give names as 'path:line', 'path:start-end', a file path, an op "
                        "('cumsum', 'add.Tensor'), a C++ function ('index_select_out_cpu_') or a Python name "
                        "('torch.nn.Linear').")
    return answer(ix, m)
