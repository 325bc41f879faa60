"""Markdown for calls, called_by, impact and cuda_kernels."""

from __future__ import annotations

from collections.abc import Sequence

from ..model import CppSymbol, Edge, EdgeHow, EdgeKind, Node, NodeKind, PyApiKind
from ..query.callgraph import CalledByResult, CalledBySection, CallsResult, CallsSection, ImpactResult, ImpactSection
from ..query.cuda import CudaKernelsResult
from ..query.results import Ambiguous
from .common import IN_STRUCTURED, ambiguous, cut_lines, showing

MAX_UNRESOLVED = 40
MAX_CALLERS = 100
_PASSED = {EdgeHow.PASSED_ON: "passed on", EdgeHow.TEXT: "passed on, found in the source text"}


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


def _sections(title: str, sections: Sequence[CalledBySection | CallsSection | ImpactSection], amb: Ambiguous | None,
              body: object) -> str:
    out: list[str] = []
    if amb:
        out += [ambiguous(amb), ""]
    for i, sec in enumerate(sections):
        if i:
            out.append("")
        out += _head(title, sec.function, sec.symbol)
        out += body(sec)  # type: ignore[operator]
    return "\n".join(out)


def _by_site(edges: list[Edge]) -> list[list[Edge]]:
    """Edges grouped per call site: several edges at one site are candidates for one call (the same call
    written twice on a line, ``self.dim() ... self.dim()``, reaches one function: listed once)."""
    groups: dict[tuple[str, int, str], dict[tuple[NodeKind, str], Edge]] = {}
    for e in edges:
        key = (e.site.path, e.site.line, e.written) if e.site else ("", id(e), "")
        groups.setdefault(key, {}).setdefault((e.dst.kind, e.dst.key), e)
    return [list(g.values()) for g in groups.values()]


def _calls_body(sec: CallsSection) -> list[str]:
    out: list[str] = []
    if sec.symbol is None:
        out.append(f"\nRegistered kernels ({len(sec.kernels)}), one per backend and CPU capability:")
        out += [f"- {e.key}: {e.dst}  [registered {e.site} {e.note}]" for e in sec.kernels]
        return out
    if sec.calls:
        groups = _by_site(sec.calls)
        out.append(f"\nCalls ({len(groups)}):")
        for g in groups:
            e = g[0]
            more = f" (+{len(g) - 1} candidates: the call does not say which)" if len(g) > 1 else ""
            decl = " (declaration)" if e.how is EdgeHow.DECLARATION else ""
            out.append(f"- {e.dst}{decl}{more}  [called at {e.site}]")
    if sec.ops:
        groups = _by_site(sec.ops)
        out.append(f"\nOps through the dispatcher ({len(groups)}):")
        for g in groups:
            e = g[0]
            names = ", ".join(x.dst.key for x in g[:4]) + (" ..." if len(g) > 4 else "")
            out.append(f"- {e.note} -> op {names}  (yaml {e.dst.loc})  [called at {e.site}]")
    if sec.stubs:
        out.append(f"\nDispatchStubs ({len(sec.stubs)}):")
        for s in sec.stubs:
            kernels = "; ".join(f"{k.key}: {k.dst.label.split('::')[-1]} {k.site}" for k in s.kernels) or \
                "no registrations found"
            how = _PASSED.get(s.call.how, "called")
            out.append(f"- {s.call.dst.key} -> {kernels}  [{how} at {s.call.site}]")
    if sec.launches:
        out.append(f"\nGPU launches ({len(sec.launches)}):")
        for e in sec.launches:
            if e.dst.key.isdigit():
                name = e.dst.label.removeprefix("__global__ ").split("::")[-1]
                out.append(f"- {name}<<<{e.note}>>>  __global__ {e.dst.loc}  [at {e.site}]")
            else:
                out.append(f"- {e.dst.label}  [at {e.site}]")
    if sec.unresolved:
        out.append(f"\nUnresolved, by name ({len(sec.unresolved)}):")
        out += [f"- {e.dst.label}  [at {e.site}]" for e in sec.unresolved[:MAX_UNRESOLVED]]
        if len(sec.unresolved) > MAX_UNRESOLVED:
            out.append(f"- ... {showing(MAX_UNRESOLVED, len(sec.unresolved), IN_STRUCTURED)}")
    if sec.macros:
        out.append("\nMacros used: " + ", ".join(sec.macros[:30]))
    if not (sec.calls or sec.ops or sec.stubs or sec.launches or sec.unresolved):
        out.append("\nNo calls found in its body.")
    return out


def render_calls(r: CallsResult) -> str:
    return _sections("calls of", r.sections, r.ambiguity, _calls_body)


def _registration(e: Edge) -> str:
    if e.kind is EdgeKind.KERNEL:
        note = f"  [{e.note}]" if e.note else ""
        return f"{e.src.key} dispatch {e.key}: {e.dst.label.split('::')[-1]}  {e.site}{note}"
    if e.kind is EdgeKind.STUB_KERNEL:
        return f"REGISTER_DISPATCH({e.src.key}, {e.dst.label.split('::')[-1]}) for {e.key}  {e.site}  [{e.note}]"
    if e.kind is EdgeKind.WRAPPER:
        return f"generated m.impl({e.src.key!r}) for {e.key}  {e.site}"
    return f"Python {e.src.key} ({e.key or e.note})  {e.site}"


def _called_by_body(sec: CalledBySection) -> list[str]:
    out = [f"\nDirect callers ({sec.total_callers}):"]
    for e in sec.callers[:MAX_CALLERS]:
        how = f" (passes it on{', found in the source text' if e.how is EdgeHow.TEXT else ''})" \
            if e.how in _PASSED else ""
        out.append(f"- {e.src}  [call at {e.site}]{how}")
    if sec.total_callers > MAX_CALLERS:
        out.append(f"- ... {showing(MAX_CALLERS, sec.total_callers, IN_STRUCTURED)}")
    if not sec.callers:
        out.append("- none found in the indexed C++ (it may be reached only through a registration below)")
    if sec.symbol is None:
        out.append(f"\nKernels registered for it ({len(sec.registrations)}):")
        out += [f"- {e.key}: {e.dst}  [registered {e.site} {e.note}]" for e in sec.registrations]
    elif sec.registrations:
        out.append(f"\nRegistrations that point at it ({len(sec.registrations)}):")
        out += [f"- {_registration(e)}" for e in sec.registrations]
    return out


def render_called_by(r: CalledByResult) -> str:
    return _sections("callers of", r.sections, r.ambiguity, _called_by_body)


def _impact_body(sec: ImpactSection, depth: int) -> list[str]:
    out: list[str] = []
    total = sum(lv.total for lv in sec.levels)
    for lv in sec.levels:
        out.append(f"\nLevel {lv.depth}: {showing(len(lv.callers), lv.total)} callers")
        for e in lv.callers:
            via = "" if e.kind is EdgeKind.CALL else (f" (calls op {e.dst.key})" if e.dst.kind is NodeKind.OP
                                                      else f" (through {e.kind.value} {e.dst.key})")
            out.append(f"- {e.src}  [call at {e.site}]{via}")
    if not sec.levels:
        out.append("\nNo callers found in the indexed C++.")
    if sec.ops:
        out.append(f"\nOps reached ({len(sec.ops)}):")
        for op, edge, level in sec.ops:
            how = f"{edge.dst.label} is its {edge.key} kernel" if edge.kind is EdgeKind.KERNEL else edge.kind.value
            out.append(f"- {op.key}  {op.loc}  ({how}; level {level})")
    if sec.python:
        out.append(f"\nPython entry points ({len(sec.python)}):")
        for node, edge in sec.python[:60]:
            if edge.binding_kind is PyApiKind.GENERATED_BINDING:
                out.append(f"- {node.key}  (via op {edge.dst.key}, binding {edge.site})")
            else:
                out.append(f"- {node.key}  (via {edge.dst.label}, {edge.key or edge.note} {edge.site})")
        if len(sec.python) > 60:
            out.append(f"- ... {showing(60, len(sec.python), IN_STRUCTURED)}")
    stop = f"stopped at depth {sec.stopped_at}" + (" (no further callers)" if sec.stopped_at < depth else "")
    out.append(f"\n{total} callers in all, {stop}")
    out += cut_lines(sec.cuts)
    return out


def render_impact(r: ImpactResult) -> str:
    return _sections(f"impact (depth {r.depth}) of", r.sections, r.ambiguity, lambda s: _impact_body(s, r.depth))


def render_cuda(r: CudaKernelsResult) -> str:
    if r.query is None:
        s = r.summary
        out = [f"# GPU kernels: {s['global_kernels']:,} __global__ kernels in {s['files']:,} files; "
               f"{s['launch_sites']:,} <<<>>> launch sites, {s['helper_launch_sites']:,} launch-helper sites",
               "\nFiles with the most kernels:"]
        out += [f"- {path}: {n}" for path, n in s["top_files"]]  # type: ignore[attr-defined]
        out.append(f"\nA sample across the tree ({len(r.kernels)}):")
        out += [f"- __global__ {k.name}  {k.definitions[0].loc}" for k in r.kernels if k.definitions]
        out.append("\nGive an op or function name (cuda_kernels('index_select')) to see its kernels and launch sites.")
        return "\n".join(out)
    out = [f"# GPU kernels for {r.query} ({r.matched}): {len(r.kernels)} __global__ kernels, "
           f"{len(r.helpers)} launch-helper sites"]
    for k in r.kernels:
        where = ", ".join(str(d.loc) for d in k.definitions[:2]) or "definition not found"
        tag = "  [backward]" if k.backward else ""
        out.append(f"\n## __global__ {k.name}  {where}{tag}")
        for launch in k.launches[:10]:
            chain = _chain(launch.chain)
            via = f"  via {chain}" if chain else ""
            out.append(f"- launched at {launch.site.site} by {launch.site.src.label}{via}")
        if len(k.launches) > 10:
            out.append(f"- ... {showing(10, len(k.launches), IN_STRUCTURED)} launch sites")
    if r.helpers:
        out.append("\n## Launch helpers (TensorIterator kernels: gpu_kernel & kin)")
        for h in r.helpers[:30]:
            tag = " [backward]" if h.backward else ""
            out.append(f"- {h.site.dst.label} at {h.site.site} in {h.site.src.label}  via {_chain(h.chain)}{tag}")
        if len(r.helpers) > 30:
            out.append(f"- ... {showing(30, len(r.helpers), IN_STRUCTURED)}")
    for n in r.notes:
        out.append(f"\nNote: {n}")
    out += cut_lines(r.cuts)
    return "\n".join(out)


def _chain(chain: list[Edge]) -> str:
    """'softmax.int [CompositeImplicitAutograd] -> at::native::softmax -> _softmax [op] -> ...'."""
    if not chain:
        return ""
    parts = [chain[0].src.label]
    for e in chain:
        if e.kind is EdgeKind.KERNEL:
            parts[-1] += f" [{e.key}]"
            parts.append(e.dst.label)
        elif e.kind is EdgeKind.STUB_KERNEL:
            parts.append(f"{e.src.key} [{e.key}]")
            parts.append(e.dst.label)
        elif e.kind is EdgeKind.BACKWARD:
            parts.append(f"backward {e.dst.label}")
        elif e.kind is EdgeKind.STUB_CALL:
            continue
        else:
            parts.append(e.dst.label)
    return " -> ".join(parts)
