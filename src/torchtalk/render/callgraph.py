"""Markdown for calls, called_by, impact and cuda_kernels."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from ..model import CppSymbol, Edge, EdgeHow, EdgeKind, Node, NodeKind, PyApiKind
from ..query.callgraph import CalledByResult, CalledBySection, CallsResult, CallsSection, ImpactResult, ImpactSection
from ..query.cuts import node_arg, tool_call
from ..query.results import Ambiguous
from .budget import BUDGET, STRUCTURED, Section, fitted, size
from .common import (
    IN_STRUCTURED,
    PASSED,
    ambiguous,
    cut_lines,
    first,
    kernel_groups,
    registered_at,
    showing,
    stub_kernels,
)

MAX_UNRESOLVED = 40
MAX_PY_CALLERS = 4  # Python calls of one hand-written binding named on its line (the structured answer has all)
KEEP = 10  # an impact shows this many of the closest callers, the ops and the Python names before the rest


def _head(title: str, node: Node, sym: CppSymbol | None) -> list[str]:
    if sym is None:
        where = f"  declared {node.loc}" if node.loc else ""
        return [f"# {title} DispatchStub {node.key}{where}"]
    out = [f"# {title} {sym.display}  {sym.loc}"]
    if sym.params and not sym.kind.is_structured:
        out.append(f"    {sym.qualname}{sym.params}")
    if not sym.is_definition:
        out.append("    (only a declaration was found; the definition may be generated or outside the index)")
    return out


Body = Callable[[Any], tuple[list[str], list[Section]]]


def _sections(title: str, tool: str, sections: Sequence[CalledBySection | CallsSection | ImpactSection],
              amb: Ambiguous | None, body: Body) -> str:
    """Each function's head and the lead of its body, then its detail, fitted to the budget: a name several
    functions share answers the first in the lead and each other as a section of its own."""
    lead: list[str] = [ambiguous(amb), ""] if amb else []
    detail: list[Section] = []
    for i, sec in enumerate(sections):
        head = _head(title, sec.function, sec.symbol)
        first, more = body(sec)
        if i == 0:
            lead += head + first
        else:
            detail.append(Section(["", *head], first, what=f"{title} {sec.function.label}",
                                  shows=tool_call(tool, node_arg(sec.function))))
        detail += more
    return fitted(lead, detail)


def _by_site(edges: list[Edge]) -> list[list[Edge]]:
    """Edges grouped per call site: several edges at one site are candidates for one call (the same call
    written twice on a line, ``self.dim() ... self.dim()``, reaches one function: listed once)."""
    groups: dict[tuple[str, int, str, bool], dict[tuple[NodeKind, str], Edge]] = {}
    for e in edges:
        # the method a template runs on an object the call hands it (Note [Handed objects]) is no candidate for the
        # call itself: run_launcher(..., KthValueLauncher(k)) calls run_launcher, and run_launcher calls launch
        handed = e.how is EdgeHow.HANDED
        key = (e.site.path, e.site.line, e.written, handed) if e.site else ("", id(e), "", handed)
        groups.setdefault(key, {}).setdefault((e.dst.kind, e.dst.key), e)
    first_at: dict[tuple[object, ...], int] = {}
    for i, k in enumerate(groups):
        first_at.setdefault(k[:2], i)
    order = sorted(groups, key=lambda k: (first_at[k[:2]], k[3]))  # at one site, the call before what it runs
    return [list(groups[k].values()) for k in order]


def _calls_body(sec: CallsSection) -> tuple[list[str], list[Section]]:
    if sec.symbol is None:
        return ([f"\nRegistered kernels ({len(sec.kernels)}), one per backend and CPU capability:"]
                + [f"- {e.key}: {e.dst}  [registered {e.site} {e.note}]" for e in sec.kernels], [])
    shows = f"{STRUCTURED} of {tool_call('calls', node_arg(sec.function))}"
    out: list[Section] = []
    if sec.calls:
        groups = _by_site(sec.calls)
        lines = []
        for g in groups:
            named = [x for x in g if not x.how.is_override]  # what the call resolves to, then overrides
            e, virtual = (named or g)[0], [x.dst.label for x in g if x.how.is_override]
            more = f" (+{len(named) - 1} candidates: the call does not say which)" * (len(named) > 1)
            decl = " (declaration)" if e.how is EdgeHow.DECLARATION else ""
            more += (f" (virtual: runs {'an override' if decl else 'this body or an override'}, {len(virtual)} in"
                     f" derived classes: {first(virtual, 3)})") if virtual and named else ""
            via = f" (through its function parameter {e.written}, {e.note})" if e.how is EdgeHow.PARAMETER else ""
            at = f"run by {e.written}, which the call at {e.site} hands the object" if e.how is EdgeHow.HANDED \
                else f"called at {e.site}"
            lines.append(f"- {e.dst}{decl}{more}{via}  [{at}]")
        out.append(Section([f"\nCalls ({len(groups)}):"], lines, "calls", shows, "calls"))
    if sec.ops:
        groups = _by_site(sec.ops)
        lines = []
        for g in groups:
            e = g[0]
            names = first([x.dst.key for x in g], 4)
            lines.append(f"- {e.note} -> op {names}  (yaml {e.dst.loc})  [called at {e.site}]")
        out.append(Section([f"\nOps through the dispatcher ({len(groups)}):"], lines, "ops through the dispatcher",
                           shows, "calls"))
    if sec.stubs:
        lines = []
        for s in sec.stubs:
            kernels = "; ".join(stub_kernels(s.kernels)) or "no registrations found"
            how = PASSED.get(s.call.how, "called")
            lines.append(f"- {s.call.dst.key} -> {kernels}  [{how} at {s.call.site}]")
        out.append(Section([f"\nDispatchStubs ({len(sec.stubs)}):"], lines, "DispatchStubs", shows, "stubs"))
    if sec.launches:
        lines = []
        for e in sec.launches:
            if e.dst.key.isdigit():
                name = e.dst.label.removeprefix("__global__ ").split("::")[-1]
                lines.append(f"- {name}<<<{e.note}>>>  __global__ {e.dst.loc}  [at {e.site}]")
            else:
                lines.append(f"- {e.dst.label}  [at {e.site}]")
        out.append(Section([f"\nGPU launches ({len(sec.launches)}):"], lines, "GPU launches", shows, "launches"))
    if sec.unresolved:
        lines = [f"- {e.dst.label}  [at {e.site}]" for e in sec.unresolved[:MAX_UNRESOLVED]]
        if len(sec.unresolved) > MAX_UNRESOLVED:
            lines.append(f"- ... {showing(MAX_UNRESOLVED, len(sec.unresolved), IN_STRUCTURED)}")
        out.append(Section([f"\nUnresolved, by name ({len(sec.unresolved)}):"], lines, "unresolved calls", shows,
                           "calls"))
    if sec.references:  # Note [References]: after what it calls
        groups = _by_site(sec.references)
        lines = [f"- {g[0].dst}{f' (+{len(g) - 1} overloads)' * (len(g) > 1)}  [referenced at {g[0].site}]"
                 for g in groups]
        out.append(Section([f"\nFunctions it names without calling ({len(groups)}: run by what it hands them to):"],
                           lines, "functions named without a call", shows, "references"))
    if sec.macros:  # the index expands a macro in its own file only: what these expand to is not listed above
        out.append(Section(["\nMacros used, not expanded here (what their definitions call is not listed): " +
                            ", ".join(sec.macros[:30])], (), "macros used", shows))
    if not (sec.calls or sec.ops or sec.stubs or sec.launches or sec.unresolved or sec.references):
        # Adam::serialize's one line is _TORCH_OPTIM_SERIALIZE_WITH_TEMPLATE_ARG(...), a call of serialize<...>
        return ["\nNo calls found in its body" + (" outside the macros it uses (below)." if sec.macros else ".")], out
    return [], out


def render_calls(r: CallsResult) -> str:
    return _sections("calls of", "calls", r.sections, r.ambiguity, _calls_body)


def _registration(e: Edge) -> str:
    if e.kind is EdgeKind.KERNEL and e.how is EdgeHow.META:  # Note [Meta functions]: no dispatch key, every backend
        return f"{e.src.key}: its meta function, run first by every backend's generated wrapper  {e.site}"
    if e.kind is EdgeKind.KERNEL:
        note = f"  [{e.note}]" if e.note else ""
        return f"{e.src.key} dispatch {e.key}: {e.dst.label.split('::')[-1]}  {e.site}{note}"
    if e.kind is EdgeKind.STUB_KERNEL:
        return f"REGISTER_DISPATCH({e.src.key}, {e.dst.label.split('::')[-1]}) for {e.key}  {e.site}  [{e.note}]"
    if e.kind is EdgeKind.WRAPPER:
        return f"generated m.impl({e.src.key!r}) for {e.key}  {e.site}"
    if e.kind is EdgeKind.ENTRY:  # Note [Dispatcher entries]
        return (f"the dispatcher entry of op {e.src.key}: every C++ call of the op goes through it, and "
                f"{tool_call('impact', node_arg(e.dst))} walks up through the op to its callers")
    return f"Python {e.src.key} ({e.note or e.key})  {e.site}"


# a caller found by a call that names several overloads, its arguments deciding none (params() and params() const),
# or by a virtual call, which runs one of the overrides
CANDIDATE = " (maybe: the call's arguments fit other overloads of the name too)"
OVERRIDE = " (maybe: a virtual call, which runs this override or another)"


def _maybe(e: Edge) -> str:
    return (OVERRIDE if e.how.is_override else CANDIDATE) if e.how.is_candidate else ""


def _called_by_body(sec: CalledBySection) -> tuple[list[str], list[Section]]:
    shows = f"{STRUCTURED} of {tool_call('called_by', node_arg(sec.function))}"
    lines = []
    for e in sec.callers:  # the budget cuts the list, and names the rest
        if e.how in PASSED:
            how = f" (passes it on{', found in the source text' if e.how is EdgeHow.TEXT else ''})"
        elif e.how.is_candidate:  # the JSON says so by its how; so does the text
            how = _maybe(e)
        else:
            how = " (recursive: it calls itself)" if e.src == sec.function else ""
        lines.append(f"- {e.src}  [call at {e.site}]{how}")
    if not sec.callers:
        below = " (it may be reached only through a registration below)" if sec.registrations else ""
        below = " (it is named without a call below)" if sec.references else below
        lines.append(f"- none found in the indexed C++{below}")
    refs = [f"\nReferenced without a call ({len(sec.references)}: put in a table or handed on, run by what holds it):"]
    refs += [f"- {e.src}  [referenced at {e.site}]" for e in sec.references]
    if sec.symbol is None:
        kernels = [f"- {g[0].key}: {g[0].dst}  [registered {registered_at(g)}]"
                   for g in kernel_groups(sec.registrations)]
        n = len(kernels) + len(sec.no_kernel)
        times = len(sec.registrations) + len(sec.no_kernel)
        regs = [f"\nKernels registered for it ({n}{f', in {times} registrations' if times != n else ''}):"]
        regs += kernels
        regs += [f"- {r.key}: none ({r.detail})  [registered {r.loc}]" for r in sec.no_kernel]
    elif sec.registrations:
        regs = [f"\nRegistrations that point at it ({len(sec.registrations)}):"]
        regs += [f"- {_registration(e)}" for e in sec.registrations]
    else:
        regs = []
    head = [f"\nDirect callers ({sec.total_callers}):"]
    if not sec.references:
        refs = []
    if size(regs) + size(head) + size(lines) + size(refs) <= BUDGET // 2:  # short: as it reads, callers first
        return head + lines + refs + regs, []
    # Long: what points at it (few lines, the entry points) first, then the callers as far as the budget goes,
    # then the functions naming it without a call.
    out = [Section(head, lines, "direct callers", shows, "callers")]
    if refs:
        out.append(Section(refs[:1], refs[1:], "references", shows, "references"))
    return regs, out


def render_called_by(r: CalledByResult) -> str:
    return _sections("callers of", "called_by", r.sections, r.ambiguity, _called_by_body)


def _kinds(callers: list[Edge]) -> str:
    """How a level's callers reach the level below: '12 C++ calls, 3 through op add.Tensor, ...'."""
    counts: dict[str, int] = {}
    for e in callers:
        how = "references" if e.how is EdgeHow.REFERENCED else \
            "C++ calls" if e.kind is EdgeKind.CALL else "kernel launches" if e.kind is EdgeKind.LAUNCH else (
            f"through op {e.dst.key}" if e.dst.kind is NodeKind.OP else f"through {e.kind.value} {e.dst.key}")
        counts[how] = counts.get(how, 0) + 1
    ranked = sorted(counts.items(), key=lambda kv: -kv[1])
    shown = ", ".join(f"{n} {how}" for how, n in ranked[:4])
    return shown + (f", {len(ranked) - 4} more kinds" if len(ranked) > 4 else "")


def _impact_body(sec: ImpactSection, depth: int) -> tuple[list[str], list[Section]]:
    """Counts by level and kind first (what breaks, at a glance), then the closest callers, the ops and Python
    entry points they reach, then the farther levels."""
    shows = f"{STRUCTURED} of {tool_call('impact', node_arg(sec.function), depth=depth)}"
    total = sum(lv.total for lv in sec.levels)
    stop = f"stopped at depth {sec.stopped_at}" + (" (no further callers)" if sec.stopped_at < depth else "")
    lead = [f"\n{total} callers in all, {stop}; {len(sec.ops)} ops and {len(sec.python)} Python entry points "
            "reached:"]
    lead += [f"- level {lv.depth}: {lv.total} caller{'s' if lv.total != 1 else ''} ("
             + ("" if len(lv.callers) == lv.total else f"of the {len(lv.callers)} the walk kept: ")
             + f"{_kinds(lv.callers)})" for lv in sec.levels]
    if not sec.levels:
        lead.append("\nNo callers found in the indexed C++.")
    levels = []
    for lv in sec.levels:
        lines = []
        for e in lv.callers:
            via = "" if e.kind in (EdgeKind.CALL, EdgeKind.LAUNCH) else (
                f" (calls op {e.dst.key})" if e.dst.kind is NodeKind.OP else f" (through {e.kind.value} {e.dst.key})")
            at = "launch" if e.kind is EdgeKind.LAUNCH else "referenced" if e.how is EdgeHow.REFERENCED else "call"
            lines.append(f"- {e.src}  [{at} at {e.site}]{via}{_maybe(e)}")
        # the title counts them all (and those the walk took, when it took fewer); a cut line, of those, the ones shown
        taken = f", {len(lv.callers)} of them walked (a level's walk is bounded)" if lv.total > len(lv.callers) else ""
        noun = "caller" if lv.total == 1 else "callers"
        levels.append(Section([f"\nLevel {lv.depth}: {lv.total} {noun}{taken}"], lines, f"level {lv.depth} callers",
                              shows, "callers", KEEP if lv.depth == 1 else KEEP // 2))
    detail = levels[:1]
    if sec.ops:
        lines = []
        for op, edge, level in sec.ops:
            how = (f"{edge.dst.label} is its meta function" if edge.how is EdgeHow.META else  # Note [Meta functions]
                   f"{edge.dst.label} is its {edge.key} kernel" if edge.kind is EdgeKind.KERNEL else edge.kind.value)
            lines.append(f"- {op.key}  {op.loc}  ({how}; level {level})")
        detail.append(Section([f"\nOps reached ({len(sec.ops)}):"], lines, "ops reached", shows, "ops", KEEP))
    if sec.python:
        lines = []
        for node, edge in sec.python:
            if edge.binding_kind is PyApiKind.GENERATED_BINDING:
                lines.append(f"- {node.key}  (via op {edge.dst.key}, binding {edge.site})")
            else:
                lines.append(f"- {node.key}  (via {edge.dst.label}, {edge.key or edge.note} {edge.site})")
                callers = sec.python_callers.get(node.key, [])
                if callers:
                    shown = ", ".join(f"{e.src.key} ({e.site})" for e in callers[:MAX_PY_CALLERS])
                    more = (f"; {showing(MAX_PY_CALLERS, len(callers), IN_STRUCTURED)}"
                            if len(callers) > MAX_PY_CALLERS else "")
                    lines.append(f"    called from Python by {shown}{more}")
        detail.append(Section([f"\nPython entry points ({len(sec.python)}):"], lines, "Python entry points", shows,
                              "names", KEEP))
    return lead + cut_lines(sec.cuts), detail + levels[1:]


def render_impact(r: ImpactResult) -> str:
    return _sections(f"impact (depth {r.depth}) of", "impact", r.sections, r.ambiguity,
                     lambda s: _impact_body(s, r.depth))
