"""From what changed to what it reaches: one walk up the graph from every changed node, the ops it
reaches (closest first, each with its path from the change), the Python modules and the tests.

The walk crosses callers, DispatchStubs, the dispatcher, composite and backward ops and Python
bindings; Python modules are found by the names their code calls (python.py); tests are ranked from
what was reached (tests.py). Every walk and list is capped, and the answer says what each cap cut.
"""

from __future__ import annotations

from collections.abc import Collection
from dataclasses import dataclass, field, replace

from ...graph import LevelCap, Walk, graph, up
from ...graph.nodes import CPP_KINDS
from ...graph.registry import registry
from ...model import Cut, CutKind, Edge, EdgeHow, EdgeKind, Node, NodeKind
from ...model.change import Aspect
from ...model.dispatch import Device, DispatchKey, device_of_key
from ...store.reader import Index
from ..args import MAX_LIMIT
from ..callgraph import IMPACT_KINDS, kernel_keys
from ..cuts import describe, named, node_arg, tool_call
from . import imports
from . import python as apy
from . import tests as at
from .definitions import ChangedNode, ChangedOpInfo, ChangedTest
from .generators import GeneratorChange
from .result import AffectedResult, ChangedFile, ReachedOp, RemovedName, Sample, UnknownName

AFFECTED_KINDS = IMPACT_KINDS | {EdgeKind.LAUNCH, EdgeKind.OP_CALL, EdgeKind.BACKWARD, EdgeKind.FORWARD_AD}
# What a change reached through an op's formula changes about that op (Note [Formula modes]).
_FORMULA_ASPECT = {EdgeKind.BACKWARD: Aspect.BACKWARD, EdgeKind.FORWARD_AD: Aspect.FORWARD_AD}
MAX_LEVEL_NODES = 25  # C++ functions walked from per level and change (the rest are reached, not walked from)
WALK_MAX_NODES = 1500
MAX_OPS = 30
MAX_PYTHON = 30
MAX_MODULES = 12
MAX_MODULE_LOOKUPS = 3
LIBRARY_PREFIX = "torch.ops."  # a reached node named so is a TORCH_LIBRARY op (definitions.library_op_node)
WALK_ON_TO = 5  # the deepest the walk goes on to when no op is within the asked depth (Note [Walk on to an op])
_CHECKED_IN_BACKWARD = frozenset({Aspect.DECOMPOSITION})  # see the reached ops below
COMPILED_KINDS = frozenset({EdgeKind.BINDING, EdgeKind.BACKWARD, EdgeKind.OP_CALL})  # Note [Compiled only]
TRACED_COMPOSITE = DispatchKey.CompositeImplicitAutograd  # the OP_CALL key tracing runs the kernel of
_COMPILED_ONLY = frozenset({Aspect.DECOMPOSITION, Aspect.REF, Aspect.LOWERING, Aspect.FAKE})
_STEP_WORDS = {EdgeKind.CALL: "called by", EdgeKind.KERNEL: "kernel of", EdgeKind.STUB_KERNEL: "registered for",
               EdgeKind.STUB_CALL: "used by", EdgeKind.DISPATCH_CALL: "called by", EdgeKind.OP_CALL: "called by op",
               EdgeKind.BACKWARD: "in the backward of", EdgeKind.FORWARD_AD: "in the forward-mode AD formula of",
               EdgeKind.BINDING: "bound to", EdgeKind.LAUNCH: "launched by"}


@dataclass
class MappedChange:
    """The change mapped onto the index (affected.py): what ``answer`` walks from and reports."""

    source: str  # where the change came from
    depth: int
    limit: int
    files: list[ChangedFile] = field(default_factory=list)
    changed: list[ChangedNode] = field(default_factory=list)
    removed: list[RemovedName] = field(default_factory=list)
    unknown: list[UnknownName] = field(default_factory=list)
    tests: list[ChangedTest] = field(default_factory=list)
    opinfos: list[ChangedOpInfo] = field(default_factory=list)
    generators: list[GeneratorChange] = field(default_factory=list)
    cuts: list[str] = field(default_factory=list)


def chain_text(ix: Index, start: Node, chain: list[Edge]) -> str:
    parts = [start.label]
    for e in chain:
        key = f" [{e.key}]" if e.key and e.kind is EdgeKind.STUB_KERNEL else ""
        if e.how is EdgeHow.META:  # Note [Meta functions]: no dispatch key, every backend's wrapper runs it
            parts.append(f"meta function of {e.src.label}")
            continue
        if e.kind is EdgeKind.KERNEL:
            key = f" [{kernel_keys(ix, e)}]"  # the walk crossed one key: every key the op serves with it
        parts.append(f"{_STEP_WORDS.get(e.kind, e.kind.value)}{key} {e.src.label}")
    return " <- ".join(parts)


def _variant(op: str) -> bool:
    """An out= or in-place overload (atan2.out, atan2_)."""
    name, _, overload = op.partition(".")
    return "out" in overload or (name.endswith("_") and not name.endswith("__"))


def _base(op: str) -> str:
    """The name tests use for an op: cumsum for cumsum.out and cumsum_; _convolution_pointwise for
    torch.ops.mkldnn._convolution_pointwise (a TORCH_LIBRARY op, named by its Python name)."""
    return at.base_name(op.removeprefix(LIBRARY_PREFIX).split(".", 1)[1] if op.startswith(LIBRARY_PREFIX) else op)


def _py_how(chain: list[Edge]) -> str:
    """How a Python function the walk reached reaches the change: "reaches op embedding_renorm_ through
    torch.nn.functional._no_grad_embedding_renorm_"."""
    ops = [e.dst for e in chain if e.dst.kind is NodeKind.OP]
    between = [e.dst.key for e in chain if e.dst.kind is NodeKind.BINDING]
    via = f" through {' -> '.join(between[::-1])}" if between else ""
    return f"reaches op {ops[-1].key}{via}" if ops else f"reaches {chain[0].dst.label}{via}"


def _device(ix: Index, changed: list[ChangedNode]) -> Device | None:
    """The one device all changed code runs on (None when any): from where a file is, else from the
    dispatch keys a changed kernel is registered for (a TORCH_IMPL_FUNC only CPU dispatches to)."""
    devices: set[Device | None] = set()
    for c in changed:
        dev = c.device
        if dev is None and c.node.kind in CPP_KINDS:
            keys = {device_of_key(e.key) for e in graph(ix).into(c.node, [EdgeKind.KERNEL])}
            dev = keys.pop() if len(keys) == 1 else None
        devices.add(dev)
    return devices.pop() if len(devices) == 1 else None


def answer(ix: Index, m: MappedChange) -> AffectedResult:
    g = graph(ix)
    reg = registry(ix)
    cuts = list(m.cuts)
    uniq = list({(c.node.kind, c.node.key): c for c in reversed(m.changed)}.values())[::-1]
    # Python functions above a changed one (an optimizer's _single_tensor_X is reached from its step()), and the ops
    # those that are registered give meaning to (Note [Registered above the change]).
    callers, py_cuts = apy.python_callers(ix, uniq, m.depth + 1)
    above = apy.registered_above(ix, callers)
    by_key = {(c.node.kind, c.node.key): c for c in uniq + above}
    # Note [Compiled only]: a decomposition, ref, lowering, Python meta or fake function is run by traced or compiled
    # code (torch.compile, export, make_fx), never by an eager call of its op: a C++ kernel calling at::zeros runs
    # zeros' C++ kernel, not torch._refs.zeros, and tracing records that kernel's op, not what it calls. So such an op
    # is not walked up the C++ graph; tracing goes through only (COMPILED_KINDS): a CompositeImplicitAutograd kernel
    # (it runs while tracing, so the ops it calls are in the graph), a backward formula (AOTAutograd traces it) and
    # the Python names bound to the op. What is reached so is checked by the change's aspect suites
    # (tests.ASPECT_SUITES), not by the eager tests of what calls it.
    starts = [c.node for c in uniq if c.node.kind not in (NodeKind.PY_FUNCTION, NodeKind.PY_CLASS) and not c.compiled]

    def rank(e: Edge) -> int:
        """Callers that are an op or some op's registered kernel first: the level cap walks on from those."""
        if e.src.kind is NodeKind.OP or e.src.kind not in CPP_KINDS:
            return 0
        return 0 if g.into(e.src, [EdgeKind.KERNEL, EdgeKind.STUB_KERNEL]) else 1

    def walk_to(depth: int) -> tuple[Walk, LevelCap]:
        cap = LevelCap(MAX_LEVEL_NODES, CPP_KINDS, per_start=True)  # each change walks with its own budget
        return up(starts, g.into, AFFECTED_KINDS, depth, fan_out=200, max_nodes=WALK_MAX_NODES, follow=cap,
                  rank=rank), cap

    # Note [Walk on to an op]: depth counts C++ calls, and a GPU kernel's launch and the host helpers between it
    # and the kernel an op registers (searchsorted_cuda_kernel <- launched by searchsorted_cuda_contiguous <- dispatch
    # <- searchsorted_out_cuda) can use up the asked depth before any op. "0 ops reached" would read as "nothing
    # uses it", so when no op is within the depth and the depth cut the walk, it goes on a level at a time (at most
    # to WALK_ON_TO) until a level holds an op, and the answer says how deep it went (walked_depth).
    walked = m.depth
    walk, cap = walk_to(walked)
    has_op = any(s.kind is NodeKind.OP for s in starts)
    while (walked < WALK_ON_TO and not has_op and not any(s.node.kind is NodeKind.OP for s in walk.steps)
           and any(c.kind is CutKind.DEPTH for c in walk.cuts)):
        walked += 1
        walk, cap = walk_to(walked)
    compiled = [c.node for c in uniq + above if c.compiled and c.node.kind is NodeKind.OP]

    def traced_into(node: Node, kinds: Collection[EdgeKind]) -> list[Edge]:
        return [e for e in g.into(node, kinds) if e.kind is not EdgeKind.OP_CALL or e.key == TRACED_COMPOSITE]

    py_walk = up(compiled, traced_into, COMPILED_KINDS, m.depth, fan_out=200, max_nodes=WALK_MAX_NODES)
    steps = walk.steps + py_walk.steps
    reached: list[tuple[Node, int, Node, list[Edge]]] = [(c.node, 0, c.node, []) for c in uniq
                                                         if c.node.kind is NodeKind.OP or c.compiled]
    reached += [(c.node, 1, c.node, []) for c in above if (c.node.kind, c.node.key) not in
                {(r[0].kind, r[0].key) for r in reached}]
    python: dict[str, None] = {}
    py_reached: dict[str, str] = {}  # Python functions the walk reached -> how (closest first)
    functions = 0
    for s in steps:
        chain = s.chain()
        start = chain[0].dst
        if s.node.kind is NodeKind.OP:
            reached.append((s.node, s.depth, start, chain))
        elif s.node.kind is NodeKind.BINDING:
            python.setdefault(s.node.key)
            py_reached.setdefault(s.node.key, _py_how(chain))
        elif s.node.kind in CPP_KINDS:
            functions += 1  # C++ functions on the way up
    # What the walk left out (Note [No silent cut]), each with the call that goes on from there.
    depth = walked

    def further(c: Cut) -> str:
        if c.kind is CutKind.DEPTH:
            return f"depth={depth + 1}" if depth < 5 else tool_call("impact", node_arg(c.at), depth=5) if c.at else ""
        return tool_call("impact", node_arg(c.at), depth=depth) if c.at is not None else ""

    cuts += ["walk: " + describe(c) for c in named(walk.cuts + py_walk.cuts + cap.cuts(), further, down=False)]
    ops: list[at.OpForTests] = []
    reached_ops: list[ReachedOp] = []
    aspects: dict[str, set[Aspect]] = {}
    for node, d, start, chain in reached:
        start_change = by_key.get((start.kind, start.key))
        path = start_change.why if not chain and start_change else chain_text(ix, start, chain)
        # What changed about an op itself (its backward, decomposition...) is tested for that op; ops
        # reaching it get their generic tests.
        aspect = start_change.aspect if start_change and not chain else None
        also: set[Aspect] = set()
        if start_change and start_change.compiled and chain:
            aspect = start_change.aspect  # traced through (Note [Compiled only]): checked by the same suites
        if chain and chain[-1].kind in _FORMULA_ASPECT:
            aspect = _FORMULA_ASPECT[chain[-1].kind]  # reached as what its formula calls: its derivatives changed
            # A suite that checks every aten op an OpInfo run calls, its backward's included (TestDecomp's cross-ref
            # mode), checks the changed aspect of the backward op through the forward op's entry.
            if (chain[-1].kind is EdgeKind.BACKWARD and start_change and start_change.aspect in _CHECKED_IN_BACKWARD
                    and len(chain) == 1):
                also.add(start_change.aspect)
        aspects.setdefault(node.key, set()).update(({aspect} if aspect is not None else set()) | also)
        op = reg.by_full.get(node.key)
        names = reg.names_shown(op)
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
    bases = {_base(r.op.key) for r in reached_ops}
    # An op other ops' backward formulas call (reflection_pad1d_backward) is tested through them, mostly by no test
    # of its own: the forward op's tests, and the gradient suites for it (derivatives.yaml says which).
    looked_up = {o.base for o in ops}
    for r in [r for r in reached_ops if _base(r.op.key) in looked_up]:
        for e in g.into(r.op, list(_FORMULA_ASPECT)):
            fwd, fbase = reg.by_full.get(e.src.key), _base(e.src.key)
            if fwd is not None and fbase not in seen_bases and len(seen_bases) < 2 * at.MAX_OPS_FOR_TESTS:
                seen_bases[fbase] = None
                aspect = _FORMULA_ASPECT[e.kind]
                ops.append(at.OpForTests(fbase, fwd.full_name, {aspect},
                                         f"op {fwd.full_name}, whose {aspect} formula calls {r.op.key} ({e.site})",
                                         reg.names_shown(fwd)))
    covered = bases & {o.base for o in ops}  # a forward op looked up for its backward may be no op reached
    sample = None
    if len(bases) > len(covered):
        capped = any(c.kind is not CutKind.DEPTH for c in walk.cuts) or bool(cap.cuts())
        sample = Sample(len(reached_ops), len(bases), len(covered), functions, walked, capped)
        cuts.append(f"tests: looked up for the {len(covered)} closest of {len(bases)} ops reached "
                    "(find_similar_tests on the others)")
    # A change only compiled code runs (a decomposition, ref, lowering or fake kernel) is not run by the eager
    # tests of the Python functions and modules above its ops: their tests are the aspect's suites.
    native = [c for c in uniq if c.node.kind not in (NodeKind.PY_FUNCTION, NodeKind.PY_CLASS)]
    if native and all(c.aspect in _COMPILED_ONLY for c in native):
        py_reached = {}
    for fq, how in callers:
        py_reached.setdefault(fq, how)
    def py_further(c: Cut) -> str:
        """The call that walks further up the Python callers: a larger depth, or affected from the function whose
        callers were cut (not named's own call for a node: trace walks down)."""
        return f"depth={m.depth + 1}" if c.kind is CutKind.DEPTH else tool_call("affected", c.at.key) if c.at else ""

    cuts += ["Python callers: " + describe(replace(c, shows=py_further(c))) for c in named(py_cuts, py_further)]
    own, calling = apy.affected_modules(ix, uniq, [(r.op.key, r.python) for r in reached_ops[:at.MAX_OPS_FOR_TESTS]],
                                        list(py_reached.items()))
    modules = own + [mod for mod in calling if mod.fq not in {o.fq for o in own}]
    device = _device(ix, uniq)
    groups = [at.changed_tests(ix, m.tests, device), at.changed_opinfos(ix, m.opinfos, device)]
    groups += [at.module_tests(ix, mod.name, mod.why, device) for mod in own[:MAX_MODULE_LOOKUPS]]
    groups += [at.op_tests(ix, o, device) for o in apy.python_functions(ix, uniq, MAX_MODULE_LOOKUPS) + ops]
    # The public Python functions that reach an op (torch.nn.functional.embedding for embedding_renorm_'s kernel).
    own_names = {n for o in ops for n in [o.base, *o.python]}
    groups += [at.op_tests(ix, o, device) for o in apy.reached_functions(ix, list(py_reached.items()), own_names,
                                                                       MAX_MODULE_LOOKUPS)]
    groups += [at.module_tests(ix, mod.name, mod.why, device) for mod in calling[:max(0, MAX_MODULE_LOOKUPS - len(own))]
               if not mod.why.startswith("subclass of ")]
    groups.append(at.suite_tests([(s, f"runs every op through the {layer.layer} {gen.source} writes")
                                  for gen in m.generators for layer in gen.layers for s in layer.suites]))
    ranked, first = at.rank([grp for grp in groups if grp])
    if len(callers) > MAX_PYTHON:
        cuts.append(f"Python callers: showing the {MAX_PYTHON} closest of {len(callers)} (the structured answer holds "
                    "the first ones only; affected on a caller walks on from it)")
    tests_by = ""
    py_changed = [c.node.key for c in uniq if c.node.kind in (NodeKind.PY_FUNCTION, NodeKind.PY_CLASS)]
    if not ranked and py_changed:  # Note [Tests by import]: no op and no test found is not "nothing to run"
        by_import, tests_by = imports.importing_tests(ix, py_changed, [fq for fq, _how in callers])
        ranked, first = at.rank([by_import] if by_import else [])
    if len(ranked) > m.limit:
        cuts.append(f"tests: showing {m.limit} of {len(ranked)} (limit={min(len(ranked), MAX_LIMIT)} shows more)")
    if len(reached_ops) > MAX_OPS:
        cuts.append(f"ops: showing the {MAX_OPS} closest of {len(reached_ops)}")
    public = [n for n in python if not n.startswith("torch._C._")]
    return AffectedResult(
        source=m.source, depth=m.depth, walked_depth=walked, device=device, files=m.files, changed=uniq,
        removed=m.removed, unknown=m.unknown, ops=reached_ops[:MAX_OPS], ops_total=len(reached_ops),
        functions_reached=functions,
        python=public[:MAX_PYTHON], modules=modules[:MAX_MODULES], generators=m.generators, tests=ranked[:m.limit],
        tests_total=len(ranked), run_first=first, tests_changed=len(m.tests) + len(m.opinfos), sample=sample,
        cuts=cuts, python_callers=callers[:MAX_PYTHON], compiled=[c.node.key for c in uniq if c.compiled],
        tests_by=tests_by)
