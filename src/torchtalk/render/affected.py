"""Markdown for affected: what the change is, what it reaches, and which tests to run first."""

from __future__ import annotations

from ..model import NodeKind
from ..model.change import DiffSide
from ..query.change.result import AffectedResult, ChangedFile
from .common import IN_STRUCTURED, showing, some

MAX_CHANGED = 25
MAX_PATH = 220
MAX_CALLERS = 12
_KIND_WORD = {NodeKind.OP: "op", NodeKind.STUB: "DispatchStub", NodeKind.BINDING: "Python name",
              NodeKind.PY_FUNCTION: "Python", NodeKind.PY_CLASS: "Python class", NodeKind.GPU_KERNEL: "GPU kernel"}
_DEVICE = {"cuda": "CUDA", "cpu": "CPU", "mps": "MPS", "xpu": "XPU"}
WHY_DEPTH = ("Depth counts calls between the change and the op; registrations (op -> kernel, stub -> kernel, "
             "Python name -> op) cost none.")


def _cut(text: str, n: int = MAX_PATH) -> str:
    return text if len(text) <= n else text[: n - 3] + "..."


def _file_line(f: ChangedFile) -> str:
    side = {DiffSide.OLD: ", patch not applied: lines read on its old side", DiffSide.NEITHER: ", matches neither side"}
    what = ", ".join(x for x in (f.kind, f.status) if x) + (side.get(f.side, "") if f.side is not None else "")
    head = f"- {f.path or f.written}  [{what}]" + (f"  {f.found} found" if f.found else "")
    return head + (f"\n    {f.note}" if f.note else "")


def _walked_on(r: AffectedResult) -> str:
    """Note [Walk on to an op] in query/change/reach.py."""
    return (f"No op is within the asked depth {r.depth}: the walk went on to depth {r.walked_depth} (each C++ call "
            "between the change and a kernel an op registers costs a level, a GPU kernel's launch included).")


def _sample(r: AffectedResult) -> str:
    s = r.sample
    assert s is not None
    more = "; the walk's caps left more out, so it reaches further still" if s.capped else ""
    return (f"Wide reach: the change reaches {s.ops} ops ({s.names} op names) and {s.functions} C++ functions within "
            f"depth {s.depth}{more}. Tests were looked up for the {s.looked_up} closest op names only: the tests "
            "below are a sample of what it reaches, not coverage (run the suites of the ops it reaches, or the "
            "whole test suite).")


def render_affected(r: AffectedResult) -> str:
    n_files = len(r.files)
    out = [f"# affected: {r.source}: {n_files} file{'s' * (n_files != 1)}, {len(r.changed)} changed, "
           f"{r.ops_total} op{'s' * (r.ops_total != 1)} reached, {r.tests_total} test{'s' * (r.tests_total != 1)}"]
    if r.device:
        dev = _DEVICE.get(r.device, r.device)
        out.append(f"Only {dev} code changed: test commands are narrowed to the {dev} variants "
                   f"(`-k \"... and {r.device}\"`).")
    if r.sample is not None:
        out.append(_sample(r))
    if r.run_first:
        out.append("\nRun these first" + (" (a sample, not coverage):" if r.sample is not None else ":"))
        out += [f"    {c}" for c in r.run_first]
    if r.changed:
        out.append(f"\nChanged ({showing(min(len(r.changed), MAX_CHANGED), len(r.changed), IN_STRUCTURED)}):")
        for c in r.changed[:MAX_CHANGED]:
            word = _KIND_WORD.get(c.node.kind, "")
            gone = "  [removed by the change]" if c.deleted else ""
            out.append(f"- {word + ' ' if word else ''}{c.node}  {c.why}{gone}")
    if r.removed:
        out.append("\nDefinitions the change removes or renames (from its removed lines):")
        for rm in r.removed:
            where = ", ".join(str(loc) for loc in rm.still_named)
            more = f" (showing {len(rm.still_named)} of {rm.total})" if rm.total > len(rm.still_named) else ""
            out.append(f"- {rm.name}  ({rm.path}): " + (f"still named at {rm.total} place(s){more}: {where}"
                                                        if rm.total else "nothing in the index names it any more"))
    if r.unknown:
        out.append("\nNames not found:")
        out += [f"- {u.name}" + (f": close matches {', '.join(u.suggestions)}" if u.suggestions else "")
                for u in r.unknown]
    if any(f.note for f in r.files) or n_files > 1:
        out.append("\nFiles:")
        out += [_file_line(f) for f in r.files]
    if r.ops:
        out.append(f"\nOps reached ({showing(len(r.ops), r.ops_total, IN_STRUCTURED)}), closest first; "
                   f"{r.functions_reached} C++ function(s) on the way (depth {r.walked_depth}):")
        if r.walked_depth > r.depth:
            out.append(_walked_on(r))
        for op in r.ops:
            py = f"  Python: {', '.join(op.python)}" if op.python else ""
            out.append(f"- {op.op.label}  {op.op.loc}  depth {op.depth}{py}\n    {_cut(op.path)}")
        out.append(WHY_DEPTH)
        if r.compiled:
            out.append(f"Compiled only: {some(r.compiled, 4)} changed through a decomposition, ref, lowering, meta or "
                       "fake function, which only traced or compiled code runs (torch.compile, export, make_fx): "
                       "walked up only what tracing runs (CompositeImplicitAutograd kernels, backward formulas), "
                       "not the eager C++ callers of the op; its aspect's suites check the change.")
    elif r.changed and not r.tests_changed and all(c.node.kind in (NodeKind.PY_FUNCTION, NodeKind.PY_CLASS)
                                                   for c in r.changed):
        out.append("\nOnly Python code changed, and no op is given meaning by it (a decomposition, ref or lowering "
                   "would be): its Python callers are walked up the calls that name it (below); trace_module "
                   "shows the ops a module calls.")
    elif r.changed:
        out.append(f"\nNo op is reached within depth {r.walked_depth} ({r.functions_reached} C++ function(s) on the "
                   "way).")
        if r.walked_depth > r.depth:
            out.append(_walked_on(r))
    if r.python_callers:
        out.append(f"\nPython callers ({len(r.python_callers)}), closest first:")
        out += [f"- {fq}  {_cut(how)}" for fq, how in r.python_callers[:MAX_CALLERS]]
        if len(r.python_callers) > MAX_CALLERS:
            out.append(f"- ... {len(r.python_callers) - MAX_CALLERS} more ({IN_STRUCTURED})")
    if r.python:
        out.append(f"\nPython APIs: {', '.join(r.python)}")
    if r.modules:
        out.append(f"\nnn modules and optimizers ({len(r.modules)}):")
        out += [f"- {m.name}  {m.loc}  [{m.kind}] {m.why}" for m in r.modules]
    for gen in r.generators:
        out.append(f"\nGenerated code: {gen.source} is a {gen.role}; everything generated from it is affected:")
        for layer in gen.layers:
            suites = f"; suites: {', '.join(layer.suites)}" if layer.suites else ""
            out.append(f"- {layer.layer}: {len(layer.files)} indexed file(s) ({', '.join(layer.files[:3])}"
                       f"{', ...' if len(layer.files) > 3 else ''}), {layer.symbols:,} definitions{suites}")
        if not gen.layers:
            out.append("- no indexed generated file comes from it (the build writes more files than TorchTalk "
                       "generates; see get_status)")
    if r.tests:
        out.append(f"\nTests ({showing(len(r.tests), r.tests_total)}), ranked:")
        if r.tests_by:
            out.append(f"Found by import: nothing the change reaches has tests of its own, so these are the "
                       f"{r.tests_by}; a test file importing them may not run the changed lines.")
        for i, t in enumerate(r.tests):
            if not t.on_device and (i == 0 or r.tests[i - 1].on_device):
                out.append(f"Not shown to run on {r.device} (no {r.device} variant, decorator, class or name: they "
                           f"test the change only if they move tensors to {r.device} themselves):")
            out.append(f"- [{t.kind}] {t.name}" + (f"  {t.loc}" if t.loc else "") + f"\n    why: {_cut(t.why)}"
                       f"\n    run: {t.command}")
            if t.generated and t.generated[0] != t.name:
                out.append(f"    generated as: {some(t.generated, 4)}")
    elif r.changed or r.generators:
        out.append("\nNo test found for what the change reaches.")
    if not r.changed and not r.generators and not r.unknown and not r.tests_changed:
        out.append("\nNothing the index knows changed: no definition, op, test or generator is in the changed lines.")
    if r.cuts:
        out.append("\nCut (bounded answer):")
        out += [f"- {c}" for c in r.cuts]
    return "\n".join(out)
