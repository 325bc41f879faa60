"""trace: one op from Python through the registry and dispatch to C++/CUDA and autograd.

A Python spelling a Python function defines is that function, which reaches the ops (``torch.stft``,
``Tensor.split``: Note [Python functions over bindings]); else a name is an op as native_functions.yaml or Python
names it (``add.Tensor``, ``torch.add``); else a Python function whose body calls ops
(``torch.nn.functional.relu``, ``F.relu``); else a Python name bound to C++ that is not an op
(``torch.set_num_threads``, a PyMethodDef), answered with its binding chain.
"""

from __future__ import annotations

from dataclasses import replace

from ..graph import Step, down, graph
from ..graph.formula_edges import calls_itself
from ..graph.gpu import GPU_BACKENDS, KernelLaunch, LibraryCall, gpu_reach
from ..graph.gpu_rank import layout_arm, nearest_first
from ..graph.nodes import autograd_node, op_node, symbol_id
from ..graph.op_derivatives import derivative_entry, derivatives_of
from ..graph.op_edges import autograd_nodes
from ..graph.op_spellings import cpp_api_ops
from ..graph.overloads import op_kernel_definitions
from ..graph.pp_branches import twin_branches
from ..graph.py_attrs import assigned_node, function_node
from ..graph.pynames import PyDef, PyNames, pynames
from ..graph.registry import OpRegistry, py_spellings, registry
from ..graph.symbols import has_cpp, symbol
from ..model import (
    COMPOSITE_KEYS,
    DerivativeMatch,
    DispatchEntry,
    Edge,
    EdgeHow,
    EdgeKind,
    Loc,
    NodeKind,
    Op,
    PyApiKind,
    PyDefKind,
    is_composite,
    key_tier,
    runs_on,
)
from ..model.ops import DEFAULT_OVERLOAD
from ..store.reader import Index
from . import generated as gen_q
from .args import check_choice, clean_text
from .bound import BindingTrace, bindings_named, unknown_module_bindings
from .cuts import calls_cuts, explore, gpu_cuts, named
from .handbound import bindings_of
from .library_ops import library_op
from .no_entry import no_entry
from .pywalk import walk_to_ops
from .results import NotFound
from .trace_results import DerivInfo, GpuLine, KernelInfo, OpCall, OpTrace, PythonEntry, StubUse, TraceResult

FOCUS = ("yaml", "dispatch", "full")
REACH_DEPTH = 3  # calls below a kernel searched for DispatchStubs
MAX_ENTRY_OPS = 8  # op sections of a Python function's answer (the nearest ops first); the rest are named
_PY_FUNCTION_PREFIXES = ("torch.nn.functional.", "torch.functional.", "torch._refs.", "torch.special.",
                         "torch.linalg.", "torch.fft.", "torch.")


def ops_named(ix: Index, name: str) -> tuple[list[Op], PythonEntry | None, str]:
    """The ops a name means, as trace resolves it: an op or its Python name, a Python function or name that
    reaches ops (F.cross_entropy), an autograd node (the ops that create it). (ops, Python entry, how)."""
    # Note [Python functions over bindings]: a Python spelling that a Python function defines is that function, also
    # where an op's binding has the name too: torch/__init__.py re-exports torch/functional.py's stft over the binding
    # of op stft, and torch/_tensor.py's Tensor.split overrides TensorBase.split, so torch.stft and Tensor.split run
    # that Python code (which picks the ops) first. A name bound by assignment (F.conv2d = _add_docstr(torch.conv2d))
    # is the binding itself; an op's own name (stft) is the op.
    spelled = _py_definition(ix, name) if "." in name else None
    walked = _python_function(ix, spelled) if spelled is not None and spelled.kind is PyDefKind.FUNCTION else None
    if walked is not None and walked[1]:
        return walked[1], walked[0], ""
    reg = registry(ix)
    ops = reg.lookup(name)
    entry = None
    via = ""
    if not ops:  # a Python function or name (walked once: the one above, when it reached no op)
        d = spelled if "." in name else _py_definition(ix, name)
        entry, ops = walked or (_python_function(ix, d) if d is not None else (None, []))
    if not ops and "::" in name:
        api = cpp_api_ops(ix, reg, name)
        ops = [reg.by_full[f] for f in api.ops if f in reg.by_full]
        if ops:
            how = (f"'s {api.kernel} kernel: it calls that kernel, not the dispatcher" if api.kernel
                   else ": it calls the dispatcher")
            via = f"{name} is the C++ function generated for op {ops[0].name}{how} (Note [Op call spellings])."
    if not ops:
        ops = _node_creators(ix, name)
        if ops:
            via = (f"{name} is an autograd node (grad_fn); shown: the op{'s' if len(ops) > 1 else ''} whose "
                   "generated Autograd kernel creates it.")
    return ops, entry, via


def _no_op_note(entry: PythonEntry) -> str:
    cpp = [e.src.key for e in entry.calls if e.src.kind is NodeKind.BINDING and e.dst.kind is not NodeKind.OP]
    if cpp:
        return (f"{entry.name} reaches no op; it calls C++ through hand-written bindings "
                f"({', '.join(dict.fromkeys(cpp))}): trace(\"{cpp[0]}\") follows one into its C++ code.")
    return f"{entry.name} reaches no op (it is Python only, or calls through names that are not bound to ops)."


def trace(ix: Index, function_name: str, focus: str = "full") -> TraceResult | NotFound:
    name = clean_text(function_name, "function_name", "softmax")
    focus = check_choice(focus, "focus", FOCUS)
    reg = registry(ix)
    ops, entry, via = ops_named(ix, name)
    bindings: list[BindingTrace] = []
    lib = library_op(ix, name) if not ops and entry is None else None
    if lib is not None:  # Note [Library ops]: quantized::conv3d is no op of native_functions.yaml
        return TraceResult(name, focus, [], [], {}, has_cpp(ix), library=lib)
    if not ops:
        bindings = bindings_named(ix, name) or ([] if entry is not None else unknown_module_bindings(ix, name))
        ops = list({e.dst.key: reg.by_full[e.dst.key] for b in bindings for e in b.reaches
                    if e.dst.key in reg.by_full}.values())
        if bindings and not ops:
            return TraceResult(name, focus, [], [], {}, has_cpp(ix), bindings=bindings,
                               cuts=[c for b in bindings for c in b.cuts])
    if not ops and entry is not None:
        return TraceResult(name, focus, [], [], {}, has_cpp(ix), entry=entry,
                           notes=[_no_op_note(entry)], cuts=entry.cuts)
    if not ops:
        return NotFound("op", name, reg.suggest(name),
                        "Ops are named as in native_functions.yaml (e.g. 'softmax', 'add.Tensor') or by their "
                        "Python name ('torch.add', 'Tensor.add_', 'torch.nn.functional.relu', 'F.relu').")
    rest: list[Op] = []
    if entry is not None and len(ops) > MAX_ENTRY_OPS:  # a Python function that reaches many ops: the nearest
        ops, rest = ops[:MAX_ENTRY_OPS], ops[MAX_ENTRY_OPS:]
    cpp = has_cpp(ix) and focus != "yaml"
    cache: dict[tuple[str, bool, tuple[int, ...], bool], KernelInfo] = {}
    traces = [_op_trace(ix, op, focus, cpp, cache) for op in ops]
    keys = {k.entry.key for t in traces for k in t.kernels}
    result = TraceResult(name, focus, traces, _related(reg.by_name, ops), {k: v for k, v in COMPOSITE_KEYS.items()
                                                                           if k in keys}, has_cpp(ix),
                         via=via or _alias_note(reg, name, ops), entry=entry, bindings=bindings)
    if rest:
        result.notes.append(f"{entry.name if entry else name} reaches {len(ops) + len(rest)} ops; the sections are "
                            f"the first {len(ops)} it reaches; trace(\"<op>\") shows any of the others: "
                            + ", ".join(o.full_name for o in rest))
    if focus != "yaml" and not has_cpp(ix):
        result.notes.append("The C++ layer is not indexed yet, so kernels are shown by name only.")
    result.cuts = (entry.cuts if entry else []) + [c for b in bindings for c in b.cuts]
    # One line per place: the kernels' stub walks, then their GPU walks.
    for cuts in ([c for k in cache.values() for c in k.cuts], [c for k in cache.values() for c in k.gpu_cuts]):
        result.cuts += named(cuts, lambda c: c.shows)
    return result


def _alias_note(reg: OpRegistry, name: str, ops: list[Op]) -> str:
    """How a Python alias reached its op (torch.spmm: a copy of the torch.mm PyMethodDef entry)."""
    for spelling in py_spellings(name):
        for op in ops:
            for p in reg.python_names(op):
                if p.name == spelling and p.kind is PyApiKind.ALIAS:
                    return (f"{spelling} is an alias of {p.target}: the binding table copies its entry under this "
                            f"name ({p.loc}).")
    return ""


def _node_creators(ix: Index, name: str) -> list[Op]:
    """The ops whose generated Autograd kernel creates the autograd node ``name`` (AddBackward0 -> add.Tensor)."""
    if name not in autograd_nodes(ix):
        return []
    reg = registry(ix)
    edges = graph(ix).into(autograd_node(name), [EdgeKind.AUTOGRAD])
    return [reg.by_full[k] for k in dict.fromkeys(e.src.key for e in edges) if k in reg.by_full]


def _op_trace(ix: Index, op: Op, focus: str, cpp: bool,
              cache: dict[tuple[str, bool, tuple[int, ...], bool], KernelInfo]) -> OpTrace:
    reg = registry(ix)
    entries = [e for e in reg.dispatch(op) if not e.delegate] if focus == "yaml" else reg.dispatch(op)
    entries = sorted(entries, key=lambda e: key_tier(e.key))  # the dense path first (Note [Key order])
    # a kernel's name and the overloads of it this op takes (arange and arange.start name one kernel, and take two
    # of its overloads: Note [Kernel overloads])
    defs = {id(e): (e.kernel, e.structured, tuple(d.id for d in op_kernel_definitions(ix, op, e)) if cpp else ())
            for e in entries}
    # Its GPU lines are those of a kernel some key of which runs on CUDA: CPU and CUDA share mul_out, but a Vulkan
    # kernel named like the composite one (expand) is other code, and the ops it calls run for Vulkan tensors.
    on_gpu = {defs[id(e)] for e in entries if any(runs_on(e.key, b) for b in GPU_BACKENDS)}
    kernels = []
    for entry in entries:
        key = (*defs[id(entry)], defs[id(entry)] in on_gpu)
        if cpp and key not in cache:
            cache[key] = _kernel(ix, op, entry, focus, key[-1])
        base = cache.get(key)
        kernels.append(replace(base, entry=entry) if base else KernelInfo(entry))
    python = [p for p in reg.python_names(op) if p.kind is not PyApiKind.GENERATED_BINDING]
    source, match = derivative_entry(ix, op) or (op.full_name, DerivativeMatch.EXACT)
    full = focus == "full"
    node = op_node(op)
    derivs = [DerivInfo(d, f, _formula_calls(ix, op, EdgeKind.BACKWARD) if full else [],
                        _formula_calls(ix, op, EdgeKind.FORWARD_AD) if full else [], source, match,
                        full and calls_itself(ix, node, EdgeKind.BACKWARD),
                        full and calls_itself(ix, node, EdgeKind.FORWARD_AD))
              for d, f in derivatives_of(ix, op)]
    refs = python_op_refs(ix, op) if focus == "full" else []
    generated = gen_q.for_op(ix, op) if focus != "yaml" else None
    callers = [e for e in graph(ix).into(op_node(op), [EdgeKind.BINDING]) if e.how is EdgeHow.PY_CALLER] \
        if focus == "full" else []
    hand = bindings_of(ix, op) if focus != "yaml" and has_cpp(ix) else []
    without = no_entry(ix, op) if not derivs and not op.is_out else None
    return OpTrace(op, kernels, python, derivs, refs, generated, callers, hand, without)


def _kernel(ix: Index, op: Op, entry: DispatchEntry, focus: str, on_gpu: bool) -> KernelInfo:
    g = graph(ix)
    info = KernelInfo(entry)
    edges = [e for e in g.out(op_node(op), [EdgeKind.KERNEL])
             if e.key == entry.key and e.dst.kind != NodeKind.UNRESOLVED]
    info.definitions = [s for e in edges if (sid := symbol_id(e.dst)) is not None and (s := symbol(ix, sid))]
    info.branches = twin_branches(ix, info.definitions)
    roots = [e.dst for e in edges]
    walk = down(roots, g.out, [EdgeKind.CALL, EdgeKind.STUB_CALL], REACH_DEPTH, fan_out=40, max_nodes=300,
                rank=_stubs_first)
    info.stubs = [StubUse(s.edge, g.out(s.node, [EdgeKind.STUB_KERNEL])) for s in walk.steps
                  if s.edge.kind is EdgeKind.STUB_CALL]
    info.cuts = calls_cuts(walk.cuts)
    if focus == "full" and on_gpu:
        # The GPU lines of a kernel that runs on CUDA are its walk of graph/gpu.py, the one cuda_kernels composes.
        reaches = [gpu_reach(ix, root) for root in roots]  # listed as cuda_kernels lists them (Note [Nearest first])
        seen: set[tuple[str, int, str]] = set()
        reached: list[KernelLaunch | LibraryCall] = [*(x for r in reaches for x in r.launches),
                                                     *(x for r in reaches for x in r.libraries)]
        # Ranked with no key: the walk starts below this kernel, so its own code is this entry's work whatever
        # the key (CPU for `CPU, CUDA: foo`, SparseCUDA for a sparse op's), never a layout variant put last;
        # keys met further down (another op's Sparse kernel) still are. One line per launch site and kernel:
        # a macro's expansion launches several kernels from one line (cat's HANDLE_CASE).
        for x, via in nearest_first(ix, op.name, "", reached, _library):
            e = x.site
            label = e.dst.label.rsplit("(", 1)[0] if e.dst.label.endswith(")") else e.dst.label
            name = label.split("<")[0]  # the kernel or library function, not its overload or instantiation
            if e.site and (e.site.path, e.site.line, name) not in seen:
                seen.add((e.site.path, e.site.line, name))
                info.gpu.append(GpuLine(e, _library(x), via, layout_arm(x.chain, e)))
        info.launches = [g.site for g in info.gpu if not g.library]  # the LAUNCH edges alone, in the same order
        info.gpu_cuts += gpu_cuts([c for r in reaches for c in r.cuts])
    if focus == "full" and is_composite(entry.key):
        reg = registry(ix)
        info.op_calls = [OpCall(e, reg.dispatch(reg.by_full[e.dst.key]))
                         for e in g.out(op_node(op), [EdgeKind.OP_CALL]) if e.key == entry.key]
    return info


def _library(x: KernelLaunch | LibraryCall) -> str:
    return x.library if isinstance(x, LibraryCall) else ""


def _stubs_first(e: Edge) -> int:
    """The stub walk's ranking: stub calls, then calls of definitions, then candidates and declarations."""
    if e.kind is EdgeKind.STUB_CALL:
        return 0
    return 2 if e.how.is_candidate or e.how.is_declaration else 1


def _formula_calls(ix: Index, op: Op, kind: EdgeKind) -> list[Edge]:
    """What the op's backward (BACKWARD) or forward-mode (FORWARD_AD) formulas call (Note [Formula modes])."""
    return graph(ix).out(op_node(op), [kind])


def _related(by_name: dict[str, list[Op]], ops: list[Op]) -> list[str]:
    base = ops[0].name.rstrip("_")
    shown = {o.name for o in ops}
    cands = [base, base + "_", "_" + base, base + "_backward", "_" + base + "_backward"]
    return [c for c in cands if c in by_name and c not in shown]


def python_op_refs(ix: Index, op: Op) -> list[tuple[str, str, Loc]]:
    """Decompositions, refs, meta functions and Inductor lowerings registered for the op in Python."""
    # the packet, or this overload (the one with the empty name written .default: Note [Packet or overload])
    names = [f"aten.{op.name}", f"aten.{op.full_name}" + ("" if op.overload else DEFAULT_OVERLOAD)]
    rows = ix.q("SELECT r.kind, coalesce(f.qualname, ''), coalesce(f.module, ''), r.file_id, r.line FROM py_op_ref r "
                "LEFT JOIN py_function f ON f.id = r.func WHERE r.op IN (?, ?) ORDER BY r.kind, r.file_id, r.line",
                names)
    return [(kind, f"{mod}.{qn}" if qn else "", Loc(ix.path_of(fid), line)) for kind, qn, mod, fid, line in rows]


# ------------------------------------------------------------------ Python names that are not op names

def _defined(names: PyNames, dotted: str) -> PyDef | None:
    """What a dotted Python name is defined as, a member of a class included (``torch.Tensor.__rsub__``:
    the class is re-exported, its members are not)."""
    fq = names.canonical(dotted)
    if fq:
        return names.definition(fq)
    head, _, member = dotted.rpartition(".")
    cls = names.canonical(head) if head else None
    c = names.definition(cls) if cls else None
    return names.definition(f"{cls}.{member}") if c is not None and c.kind is PyDefKind.CLASS else None


def _py_definition(ix: Index, name: str) -> PyDef | None:
    names = pynames(ix)
    spellings = py_spellings(name)
    if "." not in name:  # torch's and torch.nn.functional's before Tensor's
        spellings = list(dict.fromkeys([name, f"torch.{name}", f"torch.nn.functional.{name}", *spellings]))
    if name.startswith("Tensor."):
        spellings.append(f"torch.{name}")  # torch.Tensor (torch/_tensor.py) over torch._C.TensorBase
    for spelling in spellings:
        d = _defined(names, spelling)
        if d is not None and d.kind is not PyDefKind.CLASS and d.fq.startswith(_PY_FUNCTION_PREFIXES):
            return d
    return None


def _python_function(ix: Index, d: PyDef) -> tuple[PythonEntry, list[Op]]:
    """A Python function (F.relu, torch.nn.functional.gelu, Tensor.__rsub__) or a name bound by assignment
    (F.max_pool2d = boolean_dispatch(...), Tensor.__neg__ = _C.TensorBase.neg), and the ops it reaches."""
    g = graph(ix)
    start = function_node(d) if d.kind is PyDefKind.FUNCTION else assigned_node(d)

    def follow(s: Step) -> bool:
        return s.node.kind is not NodeKind.OP and (s.node.kind is not NodeKind.PY_FUNCTION
                                                   or s.node.key.startswith(_PY_FUNCTION_PREFIXES))

    walk = walk_to_ops(g, start, follow, lambda e: 0 if e.dst.kind is NodeKind.OP else 1)  # the ops first
    steps = walk.steps
    cuts = named(walk.cuts, lambda c: explore(c.at) if c.at is not None else "")
    reg = registry(ix)
    ops: dict[str, Op] = {}
    for s in steps:
        if s.node.kind is NodeKind.OP and s.node.key in reg.by_full:
            ops.setdefault(s.node.key, reg.by_full[s.node.key])
    reached = sorted(ops.values(), key=lambda o: o.is_out)  # functional overloads first, in the order reached
    if d.kind is PyDefKind.ASSIGN:
        return PythonEntry(d.fq, d.loc, " = " + " | ".join(d.values or (d.value,)), [s.edge for s in steps],
                           PyDefKind.ASSIGN, cuts, choices=walk.choices), reached
    branches = {str(s.edge.site): s.edge.branch.arm for s in steps  # Note [Branch arms]: the arm of each op call
                if s.node.kind is NodeKind.OP and s.edge.site is not None and s.edge.branch is not None}
    return PythonEntry(d.fq, d.loc, d.signature, [s.edge for s in steps], cuts=cuts, branches=branches,
                       choices=walk.choices), reached
