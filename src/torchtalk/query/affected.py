"""affected: from a change to the ops, Python APIs and tests it touches, without a build.

The change comes as diff text, as a git revision of the tree's checkout, or as
names (``path:line``, ops, C++ functions, Python names). Its lines become changed
nodes (query/changes.py), and one walk up the graph from all of them, across
callers, DispatchStubs, the dispatcher, composite and backward ops and Python
bindings, finds the ops each reaches and how; Python modules are found by the
names their code calls; tests are ranked from what was reached (affected_tests.py).
Every walk and list is capped, and the answer says what each cap cut.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from ..errors import BadArgument
from ..graph import LevelCap, graph, up
from ..graph.nodes import CPP_KINDS, op_node, py_node
from ..graph.pynames import pynames
from ..graph.registry import registry
from ..graph.symbols import calls_named
from ..model import Cut, CutKind, Edge, EdgeKind, Loc, Node, NodeKind
from ..store.reader import Index
from . import affected_py as apy
from . import affected_tests as at
from .args import MAX_LIMIT, check_int
from .callgraph import IMPACT_KINDS
from .changes import DEVICE_OF_KEY, ChangedNode, ChangedOpInfo, ChangedTest, file_kind, map_file
from .changeset import FileChange, TreeFiles, from_diff, from_path_name, language, split_names
from .codegen_change import GeneratorChange, generated_from, is_codegen
from .cuts import describe, named, node_arg, tool_call
from .diff import MAX_FILES
from .functions import find_targets, suggest
from .git import git_diff, is_checkout
from .results import NotFound

AFFECTED_KINDS = IMPACT_KINDS | {EdgeKind.LAUNCH, EdgeKind.OP_CALL, EdgeKind.BACKWARD}
MAX_LEVEL_NODES = 25  # C++ functions walked from per level and change (the rest are reached, not walked from)
WALK_MAX_NODES = 1500
MAX_OPS = 30
MAX_PYTHON = 30
MAX_MODULES = 12
MAX_MODULE_LOOKUPS = 3
MAX_STILL_NAMED = 5
_STEP_WORDS = {EdgeKind.CALL: "called by", EdgeKind.KERNEL: "kernel of", EdgeKind.STUB_KERNEL: "registered for",
               EdgeKind.STUB_CALL: "used by", EdgeKind.DISPATCH_CALL: "called by", EdgeKind.OP_CALL: "called by op",
               EdgeKind.BACKWARD: "in the backward of", EdgeKind.BINDING: "bound to", EdgeKind.LAUNCH: "launched by"}


@dataclass
class ChangedFile:
    path: str  # relative to the tree ("" when the input names nothing here)
    written: str  # as the input wrote it
    status: str  # modified | added | deleted | renamed | binary | mode | lines
    kind: str  # cpp | native_functions.yaml | derivatives.yaml | tags.yaml | python | opinfo | test | codegen | other
    side: str  # which side of the diff the tree holds: new | old | neither ("" for names)
    lines: int  # changed lines mapped
    found: int  # changed definitions, tests and entries found in it
    note: str  # per-file problem, lines no definition spans, what was cut


@dataclass
class RemovedName:
    name: str  # a definition the change deletes or renames (from the diff's removed lines)
    path: str
    still_named: list[Loc]  # call sites and registrations that still name it
    total: int


@dataclass
class UnknownName:
    name: str
    suggestions: list[str]


@dataclass
class ReachedOp:
    op: Node
    depth: int  # calls between the change and the op (registrations cost none)
    path: str  # how the change reaches it: "softmax_kernel <- registered [CPU] for softmax_stub <- ..."
    chain: list[Edge]  # the same, as edges (walked against their direction)
    python: list[str]  # its Python names (torch.X, Tensor.X, torch.nn.functional.X)


@dataclass
class AffectedResult:
    source: str  # where the change came from
    depth: int
    device: str  # cpu | cuda | mps when only that backend's code changed: tests are narrowed to it
    files: list[ChangedFile]
    changed: list[ChangedNode]
    removed: list[RemovedName]
    unknown: list[UnknownName]
    ops: list[ReachedOp]
    ops_total: int
    functions_reached: int  # C++ functions on the way up
    python: list[str]
    modules: list[apy.AffectedModule]
    generators: list[GeneratorChange]
    tests: list[at.AffectedTest]
    tests_total: int
    run_first: list[str]
    tests_changed: int  # tests and OpInfo entries the change edits
    cuts: list[str] = field(default_factory=list)


def chain_text(ix: Index, start: Node, chain: list[Edge]) -> str:
    parts = [start.label]
    for e in chain:
        key = f" [{e.key}]" if e.key and e.kind is EdgeKind.STUB_KERNEL else ""
        if e.kind is EdgeKind.KERNEL:
            # The walk crossed one key; name every key the op serves with this same kernel.
            keys = [k.key for k in graph(ix).out(e.src, [EdgeKind.KERNEL]) if k.dst.key == e.dst.key]
            key = f" [{', '.join(dict.fromkeys(keys or [e.key]))}]"
        parts.append(f"{_STEP_WORDS.get(e.kind, e.kind.value)}{key} {e.src.label}")
    return " <- ".join(parts)


# ------------------------------------------------------------------ input -> file changes

def _changes(ix: Index, names: str | None, diff: str | None,
             rev: str | None) -> tuple[list[FileChange], list[str], list[str]]:
    """(file changes, names that are no path, sources)."""
    changes: list[FileChange] = []
    plain: list[str] = []
    sources: list[str] = []
    if diff is not None:
        got = from_diff(ix, diff)
        changes += got
        sources.append(f"a diff of {len(got)} file{'s' * (len(got) != 1)}")
    if rev is not None:
        text, label = git_diff(ix.source_root, rev)
        changes += from_diff(ix, text) if text.strip() else []
        sources.append(label)
    if names is not None:
        files = TreeFiles(ix)
        for n in split_names(names):
            fc = from_path_name(ix, files, n)
            if fc is None:
                plain.append(n)
            else:
                changes.append(fc)
        sources.append("names")
    if not sources:
        if not is_checkout(ix.source_root):
            raise BadArgument(f"affected needs a change: diff (unified diff text), rev (a git revision) or names "
                              f"(path:line, ops, functions); the tree {ix.source_root} is not a git checkout, so "
                              "there is no working-tree change to default to")
        text, label = git_diff(ix.source_root, None)
        changes += from_diff(ix, text) if text.strip() else []
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
        if d is not None and d.kind in ("class", "function"):
            kind = NodeKind.PY_CLASS if d.kind == "class" else NodeKind.PY_FUNCTION
            return [ChangedNode(py_node(kind, d.fq, d.loc), "named", d.loc.path, d.loc.line)]
    return []


def _still_named(ix: Index, name: str, lang: str) -> tuple[list[Loc], int]:
    short = name.split("(")[-1].rstrip(")").split("::")[-1] if "(" in name else name.split("::")[-1]
    if lang == "python":
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


# ------------------------------------------------------------------ the query

def affected(ix: Index, names: str | None = None, diff: str | None = None, rev: str | None = None, depth: int = 2,
             limit: int = 20) -> AffectedResult | NotFound:
    depth = check_int(depth, "depth", 1, 5)
    limit = check_int(limit, "limit", 1, MAX_LIMIT)
    changes, plain, sources = _changes(ix, names, diff, rev)
    layers = dict(ix.cached("affected_layers", lambda: {p: (fid, layer) for fid, p, layer in ix.q(
        "SELECT id, path, layer FROM files")}))
    files: list[ChangedFile] = []
    changed: list[ChangedNode] = []
    tests: list[ChangedTest] = []
    opinfos: list[ChangedOpInfo] = []
    removed: list[RemovedName] = []
    generators: list[GeneratorChange] = []
    cuts: list[str] = []
    for fc in changes:
        n_lines = len(fc.lines) + len(fc.gaps)
        if not fc.path or fc.status in ("binary", "mode"):
            files.append(ChangedFile(fc.path, fc.written, fc.status, "", fc.side, 0, 0,
                                     fc.problem or f"{fc.status} change only: no lines to map"))
            continue
        if is_codegen(fc.path):
            gen = generated_from(ix, fc.path)
            generators.append(gen)
            files.append(ChangedFile(fc.path, fc.written, fc.status, "codegen", fc.side, n_lines, len(gen.layers),
                                     fc.problem or f"{gen.role}: everything generated from it is affected"))
            continue
        fid, layer = layers.get(fc.path, (None, ""))
        if fid is None:
            note = fc.problem or "not indexed (build files, docs, scripts and third-party code have no code facts)"
            files.append(ChangedFile(fc.path, fc.written, fc.status, "other", fc.side, n_lines, 0, note))
            continue
        cm = map_file(ix, fid, layer, fc)
        changed += cm.nodes
        tests += cm.tests
        opinfos += cm.opinfos
        notes = [x for x in (fc.problem, cm.note.strip()) if x]
        if cm.unmapped:
            shown = ", ".join(map(str, cm.unmapped[:6])) + (", ..." if len(cm.unmapped) > 6 else "")
            notes.append(f"{len(cm.unmapped)} changed line(s) outside any definition ({shown}): declarations, "
                         "macros, includes or comments")
        if cm.cut:
            notes.append(f"{cm.cut} more changed definitions not listed")
            cuts.append(f"{fc.path}: {cm.cut} changed definitions beyond the first {len(cm.nodes)}")
        if fc.added:
            notes.append("adds " + ", ".join(fc.added[:5]) + " (not in the tree yet)")
        files.append(ChangedFile(fc.path, fc.written, fc.status, file_kind(fc.path, layer), fc.side, n_lines,
                                 len(cm.nodes) + len(cm.tests) + len(cm.opinfos), "; ".join(notes)))
        if fc.side != "old":
            for name in fc.removed:
                locs, total = _still_named(ix, name, language(fc.path))
                removed.append(RemovedName(name, fc.path, locs, total))
    unknown: list[UnknownName] = []
    for n in plain:
        nodes = _name_nodes(ix, n)
        if nodes:
            changed += nodes
        else:
            unknown.append(UnknownName(n, list(dict.fromkeys(registry(ix).suggest(n, 4) + suggest(ix, n, 4)))[:8]))
    if unknown and not changed and not changes and not tests:
        return NotFound("op, C++ function, Python name or path", ", ".join(u.name for u in unknown)[:200],
                        unknown[0].suggestions, "Give names as 'path:line', 'path:start-end', a file path, an op "
                        "('cumsum', 'add.Tensor'), a C++ function ('index_select_out_cpu_') or a Python name "
                        "('torch.nn.Linear').")
    return _answer(ix, " + ".join(sources), depth, limit, files, changed, removed, unknown, tests, opinfos,
                   generators, cuts)


def _variant(op: str) -> bool:
    """An out= or in-place overload (atan2.out, atan2_)."""
    name, _, overload = op.partition(".")
    return "out" in overload or (name.endswith("_") and not name.endswith("__"))


def _base(op: str) -> str:
    """The name tests use for an op: cumsum for cumsum.out and cumsum_."""
    base = op.split(".")[0]
    return base[:-1] if base.endswith("_") and not base.endswith("__") else base


def _device(ix: Index, changed: list[ChangedNode]) -> str:
    """The one backend all changed code runs on ("" when any): from where a file is, else from the
    dispatch keys a changed kernel is registered for (a TORCH_IMPL_FUNC only CPU dispatches to)."""
    devices = set()
    for c in changed:
        dev = c.device
        if not dev and c.node.kind in CPP_KINDS:
            keys = {DEVICE_OF_KEY.get(e.key, "") for e in graph(ix).into(c.node, [EdgeKind.KERNEL])}
            dev = keys.pop() if len(keys) == 1 else ""
        devices.add(dev)
    return devices.pop() if len(devices) == 1 else ""


def _answer(ix: Index, source: str, depth: int, limit: int, files: list[ChangedFile], changed: list[ChangedNode],
            removed: list[RemovedName], unknown: list[UnknownName], tests: list[ChangedTest],
            opinfos: list[ChangedOpInfo], generators: list[GeneratorChange], cuts: list[str]) -> AffectedResult:
    g = graph(ix)
    reg = registry(ix)
    uniq = list({(c.node.kind, c.node.key): c for c in reversed(changed)}.values())[::-1]
    by_key = {(c.node.kind, c.node.key): c for c in uniq}
    starts = [c.node for c in uniq if c.node.kind not in (NodeKind.PY_FUNCTION, NodeKind.PY_CLASS)]
    cap = LevelCap(MAX_LEVEL_NODES, CPP_KINDS, per_start=True)  # each change walks with its own budget

    walk = up(starts, g.into, AFFECTED_KINDS, depth, fan_out=200, max_nodes=WALK_MAX_NODES, follow=cap)
    steps = walk.steps
    reached: list[tuple[Node, int, Node, list[Edge]]] = [(c.node, 0, c.node, []) for c in uniq
                                                         if c.node.kind is NodeKind.OP]
    python: dict[str, None] = {}
    functions = 0
    for s in steps:
        chain = s.chain()
        start = chain[0].dst
        if s.node.kind is NodeKind.OP:
            reached.append((s.node, s.depth, start, chain))
        elif s.node.kind is NodeKind.BINDING:
            python.setdefault(s.node.key)
        elif s.node.kind in CPP_KINDS:
            functions += 1  # C++ functions on the way up
    # What the walk left out (Note [No silent cut]), each with the call that goes on from there.
    def further(c: Cut) -> str:
        if c.kind is CutKind.DEPTH:
            return f"depth={depth + 1}" if depth < 5 else tool_call("impact", node_arg(c.at), depth=5) if c.at else ""
        return tool_call("impact", node_arg(c.at), depth=depth) if c.at is not None else ""

    cuts += ["walk: " + describe(c) for c in named(walk.cuts + cap.cuts(), further, down=False)]
    ops: list[at.OpForTests] = []
    reached_ops: list[ReachedOp] = []
    aspects: dict[str, set[str]] = {}
    for node, d, start, chain in reached:
        start_change = by_key.get((start.kind, start.key))
        path = start_change.why if not chain and start_change else chain_text(ix, start, chain)
        # What changed about an op itself (its backward, decomposition...) is tested for that op; ops
        # reaching it get their generic tests.
        aspect = start_change.aspect if start_change and not chain else ""
        aspects.setdefault(node.key, set()).update({aspect} - {""})
        op = reg.by_full.get(node.key)
        names = list(dict.fromkeys(p.name for p in reg.python_names(op)))[:4] if op else []
        reached_ops.append(ReachedOp(node, d, path, chain, names))
        python.update(dict.fromkeys(n for n in names if not n.startswith("torch._C._")))
    # Closest first; among equals the ops users call (a public Python name) before internal ones, and the
    # functional overload before its out= and in-place ones.
    reached_ops.sort(key=lambda r: (r.depth, not any(not n.split(".")[-1].startswith("_") for n in r.python),
                                    _variant(r.op.key)))
    seen_bases: dict[str, None] = {}
    # Tests are named after public ops: an internal op (_softmax) counts as one level further than it is.
    for r in sorted(reached_ops, key=lambda r: (r.depth + r.op.key.startswith("_"), r.op.key.startswith("_"))):
        base = _base(r.op.key)
        if base not in seen_bases and len(seen_bases) < at.MAX_OPS_FOR_TESTS:
            seen_bases[base] = None
            via = r.chain[-1].dst.label if r.chain else r.path
            how = f"op {r.op.key}, changed: {via}" if not r.depth else f"op {r.op.key} at depth {r.depth}, via {via}"
            ops.append(at.OpForTests(base, r.op.key, aspects.get(r.op.key, set()), how, r.python))
    bases_total = len({_base(r.op.key) for r in reached_ops})
    if bases_total > len(ops):
        cuts.append(f"tests: looked up for the {len(ops)} closest of {bases_total} ops reached "
                    "(find_similar_tests on the others)")
    own, calling = apy.affected_modules(ix, uniq, [(r.op.key, r.python) for r in reached_ops[:at.MAX_OPS_FOR_TESTS]])
    modules = own + [m for m in calling if m.fq not in {o.fq for o in own}]
    device = _device(ix, uniq)
    groups = [at.changed_tests(ix, tests, device), at.changed_opinfos(ix, opinfos, device)]
    groups += [at.module_tests(ix, m.name, m.why, device) for m in own[:MAX_MODULE_LOOKUPS]]
    groups += [at.op_tests(ix, o, device) for o in apy.python_functions(ix, uniq, MAX_MODULE_LOOKUPS) + ops]
    groups += [at.module_tests(ix, m.name, m.why, device) for m in calling[:max(0, MAX_MODULE_LOOKUPS - len(own))]
               if not m.why.startswith("subclass of ")]
    groups.append(at.suite_tests([(s, f"runs every op through the {layer.layer} {gen.source} writes")
                                  for gen in generators for layer in gen.layers for s in layer.suites]))
    ranked, first = at.rank([g for g in groups if g])
    if len(ranked) > limit:
        cuts.append(f"tests: showing {limit} of {len(ranked)} (limit={min(len(ranked), MAX_LIMIT)} shows more)")
    if len(reached_ops) > MAX_OPS:
        cuts.append(f"ops: showing the {MAX_OPS} closest of {len(reached_ops)}")
    public = [n for n in python if not n.startswith("torch._C._")]
    return AffectedResult(source, depth, device, files, uniq, removed, unknown, reached_ops[:MAX_OPS],
                          len(reached_ops), functions, public[:MAX_PYTHON], modules[:MAX_MODULES], generators,
                          ranked[:limit], len(ranked), first, len(tests) + len(opinfos), cuts)
