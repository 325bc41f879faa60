"""Markdown for calls, called_by, impact and cuda_kernels."""

from __future__ import annotations

from ..query.callgraph import CalledByResult, CallsResult, ImpactResult
from ..query.cuda import CudaKernelsResult
from .common import IN_STRUCTURED, ambiguous, showing


def _head(title: str, fn, amb) -> list[str]:
    out = [f"# {title} {fn.display}  {fn.loc}"]
    if fn.params and fn.kind != "impl_func":
        out.append(f"    {fn.qualname}{fn.params}")
    if not fn.is_definition:
        out.append("    (only a declaration was found; the definition may be generated or outside the index)")
    if amb:
        out.append("")
        out.append(ambiguous(amb))
    return out


def render_calls(r: CallsResult) -> str:
    out = _head("calls of", r.function, r.ambiguity)
    if r.resolved:
        out.append(f"\nCalls ({len(r.resolved)}):")
        for call, defs in r.resolved:
            target = defs[0]
            more = f" (+{len(defs) - 1} more)" if len(defs) > 1 else ""
            decl = " (declaration)" if not target.is_definition else ""
            out.append(f"- {target.display}  {target.loc}{decl}{more}  [called at {call.loc}]")
    if r.ops:
        out.append(f"\nOps through the dispatcher ({len(r.ops)}):")
        for call, recs in r.ops:
            where = f"{recs[0].loc}" if recs else "?"
            names = recs[0].name if recs else call.callee
            out.append(f"- {call.written} -> op {names}  (yaml {where})  [called at {call.loc}]")
    if r.stubs:
        out.append(f"\nDispatchStubs ({len(r.stubs)}):")
        for call, regs in r.stubs:
            kernels = "; ".join(f"{g.key}: {g.kernel} {g.loc}" for g in regs) or "no registrations found"
            out.append(f"- {call.callee} -> {kernels}  [called at {call.loc}]")
    if r.stub_refs:
        out.append("\nDispatchStubs passed on (not called here): " +
                   ", ".join(f"{c.callee} at {c.loc}" for c in r.stub_refs))
    if r.launches:
        out.append(f"\nGPU launches ({len(r.launches)}):")
        for call, defs in r.launches:
            if call.kind == "launch":
                where = f"  __global__ {defs[0].loc}" if defs else ""
                out.append(f"- {call.callee}<<<{call.detail}>>>{where}  [at {call.loc}]")
            else:
                out.append(f"- {call.callee}({call.detail})  [at {call.loc}]")
    if r.unresolved:
        out.append(f"\nUnresolved, by name ({len(r.unresolved)}):")
        for call in r.unresolved[:40]:
            out.append(f"- {call.written}  [at {call.loc}]")
        if len(r.unresolved) > 40:
            out.append(f"- ... {showing(40, len(r.unresolved), IN_STRUCTURED)}")
    if r.macros:
        out.append("\nMacros used: " + ", ".join(r.macros[:30]))
    if not (r.resolved or r.ops or r.stubs or r.launches or r.unresolved):
        out.append("\nNo calls found in its body.")
    return "\n".join(out)


def render_called_by(r: CalledByResult) -> str:
    out = _head("callers of", r.function, r.ambiguity)
    out.append(f"\nDirect callers ({r.total_callers}):")
    for c in r.callers[:100]:
        out.append(f"- {c.caller.display}  {c.caller.loc}  [call at {c.site}]")
    if r.total_callers > 100:
        out.append(f"- ... {showing(100, r.total_callers, IN_STRUCTURED)}")
    if not r.callers:
        out.append("- none found in the indexed C++ (it may be reached only through a registration below)")
    if r.registrations:
        out.append(f"\nRegistrations that point at it ({len(r.registrations)}):")
        for g in r.registrations:
            out.append(f"- {g.text}  {g.loc}")
    return "\n".join(out)


def render_impact(r: ImpactResult) -> str:
    out = _head(f"impact (depth {r.depth}) of", r.function, r.ambiguity)
    total = sum(lv.total for lv in r.levels)
    for lv in r.levels:
        out.append(f"\nLevel {lv.depth}: {showing(len(lv.callers), lv.total)} callers")
        for c in lv.callers:
            via = f" (through {c.via})" if c.via else ""
            out.append(f"- {c.caller.display}  {c.caller.loc}  [call at {c.site}]{via}")
    if not r.levels:
        out.append("\nNo callers found in the indexed C++.")
    if r.ops:
        out.append(f"\nOps reached ({len(r.ops)}):")
        for op, how, level in r.ops:
            out.append(f"- {op.full_name}  {op.loc}  ({how})")
    if r.python:
        out.append(f"\nPython entry points ({len(r.python)}):")
        for name, through, loc in r.python[:60]:
            out.append(f"- {name}  (via {through})")
        if len(r.python) > 60:
            out.append(f"- ... {showing(60, len(r.python), IN_STRUCTURED)}")
    stop = f"stopped at depth {r.stopped_at}" + (" (no further callers)" if r.stopped_at < r.depth else "")
    out.append(f"\n{total} callers in all, {stop}" + ("; levels were capped" if r.truncated else ""))
    return "\n".join(out)


def render_cuda(r: CudaKernelsResult) -> str:
    if r.query is None:
        s = r.summary
        out = [f"# GPU kernels: {s['global_kernels']:,} __global__ kernels in {s['files']:,} files; "
               f"{s['launch_sites']:,} <<<>>> launch sites, {s['helper_launch_sites']:,} launch-helper sites",
               "\nFiles with the most kernels:"]
        out += [f"- {path}: {n}" for path, n in s["top_files"]]
        out.append(f"\nA sample across the tree ({len(r.kernels)}):")
        out += [f"- __global__ {k.name}  {k.defs[0].loc}" for k in r.kernels]
        out.append("\nGive an op or function name (cuda_kernels('index_select')) to see its kernels and launch sites.")
        return "\n".join(out)
    out = [f"# GPU kernels for {r.query} ({r.matched}): {len(r.kernels)} __global__ kernels, "
           f"{len(r.helpers)} launch-helper sites"]
    for k in r.kernels:
        where = ", ".join(str(d.loc) for d in k.defs[:2]) or "definition not found"
        out.append(f"\n## __global__ {k.name}  {where}")
        for launch in k.launches[:10]:
            chain = f"  via {launch.chain}" if launch.chain else ""
            out.append(f"- launched at {launch.site} by {launch.launcher}{chain}")
        if len(k.launches) > 10:
            out.append(f"- ... {showing(10, len(k.launches), IN_STRUCTURED)} launch sites")
    if r.helpers:
        out.append("\n## Launch helpers (TensorIterator kernels: gpu_kernel & kin)")
        for h in r.helpers[:30]:
            out.append(f"- {h.helper}({h.functor}) at {h.site} in {h.launcher}  via {h.chain}")
        if len(r.helpers) > 30:
            out.append(f"- ... {showing(30, len(r.helpers), IN_STRUCTURED)}")
    for n in r.notes:
        out.append(f"\nNote: {n}")
    return "\n".join(out)
