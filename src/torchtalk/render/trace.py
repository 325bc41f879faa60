"""Markdown for trace results: layers Python -> YAML -> C++ -> CUDA -> autograd."""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Sequence

from ..model import Branch, CppSymbol, KeyTier, NodeKind, Op, SymbolKind, key_tier
from ..model.ops import DEFAULT_OVERLOAD
from ..model.paths import NATIVE_FUNCTIONS
from ..query.cuts import tool_call
from ..query.library_ops import LibraryOp
from ..query.trace_results import GpuLine, KernelInfo, OpCall, OpTrace, TraceResult
from .autograd import autograd_lines
from .budget import STRUCTURED, Section, fitted
from .common import IN_STRUCTURED, PASSED, cut_lines, first, showing, stub_kernels
from .trace_python import binding_lines, by_relevance, cpp_call_lines, entry, entry_lines, reached_lines

MAX_LAUNCHES = 12
MAX_OP_CALLS = 15


def _cpp_line(d: CppSymbol, branch: str = "") -> str:
    gen = " (generated)" if d.in_generated else ""
    params = d.params if d.params and len(d.params) <= 120 else ("(...)" if d.params else "")
    via = f" via {d.macro}" if d.macro else ""
    shown = params if d.kind not in (SymbolKind.IMPL_FUNC, SymbolKind.META_FUNC) else ""
    return f"{d.display}{shown}  {d.loc}{via}{gen}" + (f"  [only in {branch}]" if branch else "")


def _kernel_groups(kernels: list[KernelInfo]) -> OrderedDict[tuple[str, str], list[KernelInfo]]:
    groups: OrderedDict[tuple[str, str], list[KernelInfo]] = OrderedDict()
    for k in kernels:
        groups.setdefault((k.entry.kernel, k.entry.via), []).append(k)
    return groups


def _stubs(info: KernelInfo, out: list[str]) -> None:
    for s in info.stubs:
        decl = f", declared {s.call.dst.loc}" if s.call.dst.loc else ""
        how = f" ({PASSED[s.call.how]})" if s.call.how in PASSED else ""
        out.append(f"    DispatchStub {s.call.dst.key}: called at {s.call.site} by {s.call.src.label}{how}{decl}")
        out += [f"      {line}" for line in stub_kernels(s.kernels)]


def _launches(info: KernelInfo, op: str, out: list[str]) -> None:
    """Its launches and library calls, nearest first (Note [Nearest first]), each naming the other op whose code it
    is; one line per kernel or library function a function launches or calls, with every path:line it does so at."""
    groups: OrderedDict[tuple[str, str, str, str, Branch | None], list[GpuLine]] = OrderedDict()
    for g in info.gpu:
        # by what the line says: a virtual call's overrides of one library (allocator.allocate) read as one line
        said = (g.library, g.site.written or g.site.dst.label) if g.library else ("", g.site.dst.key)
        groups.setdefault((*said, g.site.src.label, g.via, g.arm), []).append(g)
    arms = list(dict.fromkeys(g.arm for g in info.gpu if g.arm is not None))  # each arm's lines together
    ordered = sorted(groups.values(), key=lambda lines: -1 if lines[0].arm is None else arms.index(lines[0].arm))
    arm: Branch | None = None
    for lines in ordered[:MAX_LAUNCHES]:
        g, e = lines[0], lines[0].site
        # what runs only for a sparse, nested, quantized or MKLDNN tensor (Note [Layout arms]) comes after the dense
        # path (Note [Nearest first]), under a line naming the arm it is reached through
        if g.arm is not None and g.arm != arm:
            out.append(f"    only in `{g.arm.arm}` at {g.arm.head}:")
        arm = g.arm
        at = ", ".join(dict.fromkeys(str(x.site.site) for x in lines))  # each path:line whole, once
        by = f" by {e.src.label}" + (f"  ({g.via}'s code)" if g.via else "")
        note = f" ({e.note})" if e.note else ""  # a library call's chain (Note [Builder chains])
        what = f"{g.library}: {e.written or e.dst.label}{note}" if g.library else f"CUDA {e.dst.label}"
        if not g.library and e.dst.kind is NodeKind.GPU_KERNEL and e.dst.key.isdigit():
            what = f"CUDA kernel {e.dst.label.removeprefix('__global__ ').split('::')[-1]}: __global__ at " \
                   f"{e.dst.loc}, launched <<<>>>"
        out.append(f"    {'  ' if arm is not None else ''}{what} at {at}{by}")
    if len(groups) > MAX_LAUNCHES:
        out.append(f"    CUDA: ... showing {MAX_LAUNCHES} of {len(groups)} GPU lines (launches and library calls); "
                   f"{tool_call('cuda_kernels', op)} lists them all")


def _op_calls(info: KernelInfo, out: list[str]) -> None:
    if not info.op_calls:
        return
    # overloads one call may be (its arguments do not tell): one line; two calls on one line (``at::_unsafe_view(
    # at::mul(a, b), shape)``) are two, told apart by the call as written
    by_site: dict[tuple[str, str], list[OpCall]] = {}
    for c in info.op_calls[:MAX_OP_CALLS]:
        by_site.setdefault((str(c.edge.site), c.edge.written), []).append(c)
    lines = []
    for (site, _written), calls in by_site.items():
        keys = [f"{c.edge.dst.key} -> " + first([f"{e.key}: {e.kernel}" for e in c.kernels], 5, "; ") for c in calls]
        if len(calls) > 1:
            lines.append(f"      {' | '.join(c.edge.dst.key for c in calls)}  (called at {site}; the call does not "
                         "say which)" + "".join(f"\n        {k}" for k in keys))
        else:
            lines.append(f"      {calls[0].edge.dst.key}  (called at {site}) -> {keys[0].split(' -> ', 1)[1]}")
    # the heading and the first op are one item: a cut never leaves the heading alone (Note [Answer budget])
    out.append(f"    calls ops ({len(info.op_calls)}; each runs its own kernels):\n{lines[0]}")
    out += lines[1:]
    if len(info.op_calls) > MAX_OP_CALLS:
        out.append(f"      ... showing {MAX_OP_CALLS} of {len(info.op_calls)}")


def _detail_rank(tier: KeyTier, gpu: bool) -> int:
    """The rank a kernel's detail is kept by when its overload is cut (Note [Key order]; 0 is the top lines'): the
    default path's (dense, then composite kernels) first, its C++, stubs, their kernels and the ops it calls before
    its GPU lines; then the other kernels' C++, stubs and op calls, tier by tier; then (OTHER_DETAIL) the detail that
    is no kernel's; then the other kernels' GPU lines."""
    if tier <= KeyTier.COMPOSITE:
        return 1 + 2 * tier + gpu
    return 1 + 2 * (KeyTier.COMPOSITE + 1) + tier + gpu * (len(KeyTier) + 1)


# the detail that is no kernel's (the bindings' parsers, the grad_fn an autograd kernel creates, the ops autograd's
# formulas call): after every kernel's C++ location, before the GPU lines of the kernels off the default path
OTHER_DETAIL = _detail_rank(KeyTier.OTHER, False) + 1


def _render_kernels(t: OpTrace, focus: str, shown: set[str], out: list[str], cpp: bool, ranks: dict[int, int]) \
        -> None:
    """Each kernel's key line, then its C++, stubs, op calls and GPU lines; ``ranks`` gets each detail line's rank
    (out's index -> rank: Note [Key order])."""
    for (kernel, via), infos in _kernel_groups(t.kernels).items():
        keys = ", ".join(i.entry.key for i in infos)
        info = infos[0]
        note = f"  [{via}]" if via else ""
        out.append(f"- {keys}: {kernel}{note}  ({info.entry.source} {info.entry.loc})")
        if focus == "yaml" or not cpp:
            continue
        tier = min(key_tier(i.entry.key) for i in infos)
        start = len(out)
        seen = f"{kernel} {' '.join(str(d.loc) for d in info.definitions)}"  # one overload of a name is not another
        if seen in shown:
            if info.definitions:
                out.append(f"    C++: {info.definitions[0].display}  {info.definitions[0].loc} (details above)")
            ranks.update({k: _detail_rank(tier, False) for k in range(start, len(out))})
            continue
        shown.add(seen)
        if not info.definitions:
            out.append(f"    C++: no definition of {kernel} found in the indexed C++ "
                       "(it may be generated or macro-built)")
        out += [f"    C++: {_cpp_line(d, info.branches.get(d.id, ''))}" for d in info.definitions[:4]]
        _stubs(info, out)
        _op_calls(info, out)
        gpu = len(out)
        _launches(info, t.op.name, out)
        ranks.update({k: _detail_rank(tier, k >= gpu) for k in range(start, len(out))})


def _render_generated(t: OpTrace, out: list[str], shown: set[str]) -> None:
    g = t.generated
    if g is None:
        return
    if not g.available:
        out.append(f"Generated code: not indexed ({g.status}).")
        return
    if not (g.bindings or g.ops_entry or g.wrappers or g.autograd):
        return
    head = "Generated code (TorchTalk ran the tree's generators; <generated>/ paths are in its cache):"
    out.append(head if head not in shown else "Generated code:")
    shown.add(head)
    for b in g.bindings:
        key = f"binding {b.python_name} {b.function.loc}"
        if key in shown:
            out.append(f"- Python {b.python_name}: {b.function.name}  {b.function.loc} (parsers above)")
            continue
        shown.add(key)
        made = f"  [{b.template}]" if b.template else ""
        out.append(f"- Python {b.python_name}: {b.function.name}  {b.function.loc}{made}")
        for sig in b.signatures[:6]:
            out.append(f"    parser: {sig}")
    if g.ops_entry is not None:
        out.append(f"- {g.ops_entry.qualname}  {g.ops_entry.loc}")
    for w in g.wrappers:
        where = f"{w.dst.label.split('::')[-1]}  {w.dst.loc}" if w.dst.loc else w.dst.label
        out.append(f"- {w.key}: {where}  (m.impl at {w.site})")
    for a in g.autograd:
        fn = f"{a.wrapper.dst.label}  {a.wrapper.dst.loc}" if a.wrapper.dst.loc else a.wrapper.dst.label
        out.append(f"- {a.wrapper.key}: {fn}  (m.impl at {a.wrapper.site})")
        for n in a.nodes:
            where = f"  struct {n.dst.loc}" if n.dst.loc else ""
            apply = f"; {n.note}" if n.note else ""
            out.append(f"    grad_fn {n.dst.key}{where}{apply} (created at {n.site})")


def _render_handwritten(t: OpTrace, out: list[str], shown: set[str]) -> None:
    """Hand-written Python bindings (query/handbound.py), where they are written, and what linked them."""
    if not t.handwritten:
        return
    out.append("Hand-written Python bindings (binding templates and manual files; no generator writes these):")
    for b in t.handwritten:
        key = f"hand {b.python_name} {b.written}"
        copy = f" (indexed as {b.function.loc})" if b.template else ""
        declared = f", declared :{b.declared.line}" if b.declared else ""
        if key in shown:
            out.append(f"- Python {b.python_name}: {b.function.name}  {b.written} (above)")
            continue
        shown.add(key)
        out.append(f"- Python {b.python_name}: {b.function.name}  {b.written}{declared}{copy}; PyMethodDef {b.entry}"
                   f"  [linked by {b.how}]")


STRUCTURED_WHY = ("structured kernel{of}: the out= overload's meta function (TORCH_META_FUNC) checks the inputs and "
                  "sets the output's shape and dtype once; each backend's TORCH_IMPL_FUNC only computes into it, "
                  "and the functional and in-place overloads reuse both through structured_delegate")
STUB_WHY = ("DispatchStub{of}: the kernel calls a stub that picks the implementation at run time, per device and CPU "
            "capability (AVX2/AVX512); each backend registers its own with REGISTER_DISPATCH, so a change to the "
            "arithmetic goes in the registered kernel, not in the caller")
AUTOGEN_WHY = ("autogen{of}: torchgen generates this op from the autogen: line of the entry named, with a "
               "CompositeExplicitAutograd kernel it writes itself (an out= or functional variant)")
_WHY_NAMED = 4  # the overloads or kernels a Why line names when it is not about every one


def _context(r: TraceResult) -> list[str]:
    """The Why lines, each naming what it is about when that is not every overload of the answer (mul's autogen line
    is about mul.Scalar_out alone; hardtanh's stub line about its QuantizedCPU kernel)."""
    everything = [t.op.full_name for t in r.ops]

    def of(names: list[str]) -> str:
        names = list(dict.fromkeys(names))
        if names == everything:
            return ""
        more = f"; +{len(names) - _WHY_NAMED} more" if len(names) > _WHY_NAMED else ""
        return f" ({'; '.join(names[:_WHY_NAMED])}{more})"
    out = []
    if structured := [t.op.full_name for t in r.ops if t.op.structured or t.op.structured_delegate]:
        out.append(STRUCTURED_WHY.format(of=of(structured)))
    stubs: dict[str, list[str]] = {}
    for t in r.ops:
        for k in t.kernels:
            if k.stubs:
                stubs.setdefault(t.op.full_name, []).append(str(k.entry.key))
    if r.focus != "yaml" and stubs:
        every_kernel = sum(map(len, stubs.values())) == sum(len(t.kernels) for t in r.ops)
        kernels = [f"{o}: {', '.join(dict.fromkeys(keys))} kernel{'s' * (len(set(keys)) > 1)}"
                   for o, keys in stubs.items()]
        out.append(STUB_WHY.format(of="" if every_kernel else of(kernels)))
    if autogen := [t.op.full_name for t in r.ops if t.op.autogen_from]:
        out.append(AUTOGEN_WHY.format(of=of(autogen)))
    return out


def _same_as(seen: dict[tuple[str, tuple[str, ...]], str], key: str, value: Sequence[object],
             op_name: str) -> str | None:
    """The overload already shown with an identical ``key`` section, else None (and remember this one)."""
    marker = (key, tuple(map(str, value)))
    if marker in seen:
        return seen[marker]
    seen[marker] = op_name
    return None


def _facts(op: Op) -> str:
    facts = [f"variants: {', '.join(sorted(v.value for v in op.variants))}"] if op.variants else []
    if op.path and op.path != NATIVE_FUNCTIONS:  # Note [Hand-registered aten kernels]
        facts.append("defined by m.def in a TORCH_LIBRARY(aten) block, not in native_functions.yaml")
    for label, value in (("python_module", op.python_module), ("tags", ", ".join(op.tags)),
                         ("structured", "True" if op.structured else ""),
                         ("structured_delegate", op.structured_delegate),
                         ("structured_inherits", op.structured_inherits), ("precomputed", op.precomputed),
                         ("ufunc_inner_loop", "; ".join(f"{k}: {v}" for k, v in op.ufunc_inner_loop)),
                         ("autogen", ", ".join(op.autogen)), ("generated from the autogen: line of", op.autogen_from),
                         ("device_check", op.device_check), ("device_guard", op.device_guard),
                         ("manual_cpp_binding", "True" if op.manual_cpp_binding else ""),
                         ("category_override", op.category_override),
                         ("cpp_no_default_args", ", ".join(op.cpp_no_default_args))):
        if value:
            facts.append(f"{label}: {value}")
    return "    " + " | ".join(facts)


def _op_section(r: TraceResult, t: OpTrace, shown: set[str], sections: dict[tuple[str, tuple[str, ...]], str]) \
        -> Section:
    """One overload's detail: its registry entry, Python names, kernels per key, generated code, autograd."""
    op = t.op
    out: list[str] = []
    ranks: dict[int, int] = {}  # a kernel's detail lines' ranks (Note [Key order]); the top lines' are 0
    if r.focus == "full" and t.python:
        if same := _same_as(sections, "python", [p.name for p in t.python], op.full_name):
            out.append(f"Python: as {same}")
        else:
            out.append("Python: " + ", ".join(f"{p.name} ({p.kind.value})" for p in t.python))
    if r.focus == "full" and t.py_callers:
        shown_callers = [f"{e.src.key} ({e.site})" for e in t.py_callers[:6]]
        if same := _same_as(sections, "callers", shown_callers, op.full_name):
            out.append(f"Called from Python: as {same}")
        else:
            more = f" (+{len(t.py_callers) - 6} more)" if len(t.py_callers) > 6 else ""
            out.append("Called from Python: " + ", ".join(shown_callers) + more)
    if r.focus == "full" and t.py_refs and (same := _same_as(sections, "refs", list(t.py_refs), op.full_name)):
        out.append(f"Python decompositions / refs / lowerings: as {same}")
    elif r.focus == "full" and t.py_refs:
        out.append("Python decompositions / refs / lowerings:")
        for kind, func, loc in t.py_refs[:12]:
            out.append(f"- {kind}: {func or '(registration)'}  {loc}")
        if len(t.py_refs) > 12:
            out.append(f"- ... {showing(12, len(t.py_refs), IN_STRUCTURED)}")
    if t.kernels:
        out.append("Dispatch:" if r.focus == "yaml" else "Dispatch -> C++:")
        _render_kernels(t, r.focus, shown, out, r.cpp_indexed, ranks)
    elif op.dispatch_empty:
        out.append("Dispatch: `dispatch: {}` in native_functions.yaml: no kernel here and no implicit "
                   "CompositeImplicitAutograd one; its kernels are registered elsewhere (torch.library)")
    elif r.focus == "yaml" and op.structured_delegate:
        out.append(f"Dispatch: none of its own; structured_delegate {op.structured_delegate} "
                   "(use focus='dispatch' to follow it)")
    _render_generated(t, out, shown)
    _render_handwritten(t, out, shown)
    if r.focus in ("full", "yaml"):
        autograd_lines(t, out)
    focus = {} if r.focus == "full" else {"focus": r.focus}
    # the overload without a name: its own name asks for every overload again; X.default asks for it alone
    alone = tool_call("trace", op.full_name if "." in op.full_name else f"{op.full_name}{DEFAULT_OVERLOAD}", **focus)
    # The one overload asked about: its own call would be this answer again; the typed answer holds it whole.
    shows = alone if len(r.ops) > 1 else f"{STRUCTURED} of {tool_call('trace', r.query, **focus)}"
    rank = [0 if not line.startswith(" ") else ranks.get(k, OTHER_DETAIL) for k, line in enumerate(out)]
    return Section(["", f"## {op.full_name}  {op.loc}", f"    {op.schema}", _facts(op)], out,
                   what=f"overload {op.full_name}", shows=shows, outline=True, ranks=rank)


def render_trace(r: TraceResult) -> str:
    if r.library is not None:
        return "\n".join(_library_lines(r.library))
    if r.bindings and not r.ops:
        out = [f"# trace {r.query}: bound to C++ that is not an op"]
        binding_lines(r.bindings, out)
        return "\n".join(out + cut_lines(r.cuts))
    if r.entry is not None and not r.ops:
        out = [f"# trace {r.query}: a Python {r.entry.kind.noun}, not an op"]
        entry(r.entry, out)
        out += [f"Note: {n}" for n in r.notes]
        return "\n".join(out + cut_lines(r.cuts))
    out = [f"# trace {r.query} (focus: {r.focus}) — {len(r.ops)} overload{'s' if len(r.ops) != 1 else ''}"]
    if r.via:
        out.append(r.via)
    if r.bindings:
        out.append("")
        binding_lines(r.bindings, out)
    if r.entry is not None:
        out.append("")
        reached = reached_lines(r.entry)
        steps = entry_lines(r.entry)
        out += steps[:1] + (reached + cpp_call_lines(r.entry) if reached else steps[1:])
    shown: set[str] = set()
    sections: dict[tuple[str, tuple[str, ...]], str] = {}
    details = [_op_section(r, t, shown, sections) for t in by_relevance(r)]
    if r.entry is not None and reached and any(e.dst.kind is not NodeKind.OP for e in r.entry.calls):
        details.append(Section(["", f"Steps of {r.entry.name}:"], steps[1:],
                               what=f"the steps of {r.entry.name}", shows=STRUCTURED))
    tail: list[str] = []
    if r.composite_notes:
        tail += ["", "Composite keys:"] + [f"- {key}: {text}" for key, text in r.composite_notes.items()]
    context = _context(r)
    if context:
        tail += [""] + [f"Why: {line}" for line in context]
    if r.related:
        tail += ["", "Related ops: " + ", ".join(r.related)]
    for n in r.notes:
        tail += ["", f"Note: {n}"]
    return fitted(out, details, tail + cut_lines(r.cuts))


def _library_lines(lib: LibraryOp) -> list[str]:
    """A TORCH_LIBRARY op (Note [Library ops] in query/library_ops.py): each overload's schema, then each kernel."""
    out = [f"# trace {lib.namespace}::{lib.name}: a TORCH_LIBRARY op of namespace {lib.namespace} (defined in C++ "
           "with m.def, not in native_functions.yaml)"]
    out += [f"- m.def {schema}  {loc}" for schema, loc in lib.schemas]
    if lib.kernels:  # every one (a few per overload and dispatch key)
        out.append(f"Kernels (m.impl), {len(lib.kernels)}:")
        out += [f"- {lib.namespace}::{n} [{key}]: {target}  registered {loc}" for n, key, target, loc in lib.kernels]
    else:
        out.append("No kernel is registered for it in the tree (m.impl).")
    return out
