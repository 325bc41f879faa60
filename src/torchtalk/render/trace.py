"""Markdown for trace results: layers Python -> YAML -> C++ -> CUDA -> autograd."""

from __future__ import annotations

from collections import OrderedDict

from ..query.trace import KernelInfo, OpTrace, TraceResult


def _cpp_line(d) -> str:
    gen = " (generated)" if d.in_generated else ""
    params = d.params if d.params and len(d.params) <= 120 else ("(...)" if d.params else "")
    via = f" via {d.macro}" if d.macro else ""
    return f"{d.display}{params if d.kind not in ('impl_func', 'meta_func') else ''}  {d.loc}{via}{gen}"


def _kernel_groups(kernels: list[KernelInfo]) -> "OrderedDict[tuple[str, str], list[KernelInfo]]":
    groups: OrderedDict[tuple[str, str], list[KernelInfo]] = OrderedDict()
    for k in kernels:
        groups.setdefault((k.entry.kernel, k.entry.via), []).append(k)
    return groups


def _render_kernels(t: OpTrace, focus: str, shown: set, out: list[str], cpp: bool) -> None:
    for (kernel, via), infos in _kernel_groups(t.kernels).items():
        keys = ", ".join(i.entry.key for i in infos)
        info = infos[0]
        note = f"  [{via}]" if via else ""
        out.append(f"- {keys}: {kernel}{note}  (yaml {info.entry.loc})")
        if focus == "yaml" or not cpp:
            continue
        if kernel in shown:
            if info.defs:
                out.append(f"    C++: {info.defs[0].display}  {info.defs[0].loc} (details above)")
            continue
        shown.add(kernel)
        if not info.defs:
            out.append(f"    C++: no definition of {kernel} found in the indexed C++ (it may be generated or macro-built)")
        for d in info.defs[:4]:
            out.append(f"    C++: {_cpp_line(d)}")
        if len(info.defs) > 4:
            out.append(f"    C++: ... showing 4 of {len(info.defs)} definitions")
        for s in info.stubs:
            decl = f", declared {s.declared}" if s.declared else ""
            out.append(f"    DispatchStub {s.stub}: called at {s.site} by {s.via}{decl}")
            for r in s.registrations:
                where = f"defined {r.defs[0].loc}, " if r.defs else ""
                out.append(f"      {r.key}: {r.kernel}  ({where}registered {r.loc} {r.macro})")
        if info.op_calls:
            out.append(f"    calls ops: {', '.join(info.op_calls[:15])}" + (" ..." if len(info.op_calls) > 15 else ""))
        for g in info.gpu[:12]:
            if g.kind == "launch":
                where = f"__global__ at {g.defs[0].loc}, " if g.defs else ""
                out.append(f"    CUDA kernel {g.kernel}: {where}launched <<<>>> at {g.site} by {g.launcher}")
            else:
                out.append(f"    CUDA {g.helper}({g.kernel}) at {g.site} by {g.launcher}")
        if len(info.gpu) > 12:
            out.append(f"    CUDA: ... showing 12 of {len(info.gpu)} launches")


def _render_generated(g, out: list[str], shown: set) -> None:
    if not g.available:
        out.append(f"Generated code: not indexed ({g.status}).")
        return
    if not (g.bindings or g.ops_entry or g.wrappers or g.autograd):
        return
    head = "Generated code (TorchTalk ran the tree's generators; <generated>/ paths are in its cache):"
    out.append(head if head not in shown else "Generated code:")
    shown.add(head)
    for b in g.bindings:
        key = ("binding", b.python_name, str(b.function.loc))
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
        where = f"{w.function.name}  {w.function.loc}" if w.function else w.target
        out.append(f"- {w.key}: {where}  (m.impl at {w.registered})")
    for a in g.autograd:
        fn = f"{a.function.qualname}  {a.function.loc}" if a.function else a.target
        out.append(f"- {a.key}: {fn}  (m.impl at {a.registered})")
        for node, apply in a.nodes:
            where = f"  {apply.qualname} {apply.loc}" if apply else ""
            out.append(f"    grad_fn {node}{where}")


STRUCTURED_WHY = ("structured kernel: the out= overload's meta function (TORCH_META_FUNC) checks the inputs and "
                  "sets the output's shape and dtype once; each backend's TORCH_IMPL_FUNC only computes into it, "
                  "and the functional and in-place overloads reuse both through structured_delegate")
STUB_WHY = ("DispatchStub: the kernel calls a stub that picks the implementation at run time, per device and CPU "
            "capability (AVX2/AVX512); each backend registers its own with REGISTER_DISPATCH, so a change to the "
            "arithmetic goes in the registered kernel, not in the caller")


def _context(r: TraceResult) -> list[str]:
    out = []
    if any(t.op.structured or t.op.structured_delegate for t in r.ops):
        out.append(STRUCTURED_WHY)
    if r.focus != "yaml" and any(k.stubs for t in r.ops for k in t.kernels):
        out.append(STUB_WHY)
    return out


def _same_as(seen: dict, key: str, value: list, op_name: str) -> str | None:
    """The overload already shown with an identical ``key`` section, else None (and remember this one)."""
    marker = (key, tuple(map(str, value)))
    if marker in seen:
        return seen[marker]
    seen[marker] = op_name
    return None


def render_trace(r: TraceResult) -> str:
    out = [f"# trace {r.query} (focus: {r.focus}) — {len(r.ops)} overload{'s' if len(r.ops) != 1 else ''}"]
    shown: set = set()
    sections: dict = {}
    for t in r.ops:
        op = t.op
        out.append("")
        out.append(f"## {op.full_name}  {op.loc}")
        out.append(f"    {op.schema}")
        facts = [f"variants: {op.variants}"]
        for label, value in (("python_module", op.python_module), ("tags", op.tags),
                             ("structured", "True" if op.structured else ""),
                             ("structured_delegate", op.structured_delegate),
                             ("structured_inherits", op.structured_inherits), ("precomputed", op.precomputed),
                             ("ufunc_inner_loop", op.ufunc_inner_loop), ("autogen", op.autogen),
                             ("device_check", op.device_check), ("device_guard", op.device_guard),
                             ("manual_cpp_binding", "True" if op.manual_cpp_binding else ""),
                             ("category_override", op.category_override),
                             ("cpp_no_default_args", op.cpp_no_default_args)):
            if value:
                facts.append(f"{label}: {value}")
        out.append("    " + " | ".join(facts))
        if r.focus == "full" and t.python:
            if same := _same_as(sections, "python", t.python, op.full_name):
                out.append(f"Python: as {same}")
            else:
                out.append("Python: " + ", ".join(f"{name} ({kind})" for name, kind, _loc in t.python))
        if r.focus == "full" and t.py_refs and (same := _same_as(sections, "refs", t.py_refs, op.full_name)):
            out.append(f"Python decompositions / refs / lowerings: as {same}")
        elif r.focus == "full" and t.py_refs:
            out.append("Python decompositions / refs / lowerings:")
            for kind, func, loc in t.py_refs[:12]:
                out.append(f"- {kind}: {func or '(registration)'}  {loc}")
            if len(t.py_refs) > 12:
                out.append(f"- ... showing 12 of {len(t.py_refs)}")
        if t.kernels:
            out.append("Dispatch:" if r.focus == "yaml" else "Dispatch -> C++:")
            _render_kernels(t, r.focus, shown, out, r.cpp_indexed)
        elif r.focus == "yaml":
            if op.structured_delegate:
                out.append(f"Dispatch: none of its own; structured_delegate {op.structured_delegate} "
                           "(use focus='dispatch' to follow it)")
            else:
                out.append("Dispatch: no dispatch: entry, so CompositeImplicitAutograd (kernel "
                           f"at::native::{op.cpp_name})")
        if t.generated is not None:
            _render_generated(t.generated, out, shown)
        if r.focus == "full":
            for d in t.derivatives:
                out.append(f"Autograd: {d.loc}  {d.schema}")
                if d.output_differentiability:
                    out.append(f"- output_differentiability: {d.output_differentiability}")
                for variables, formula, loc, kind in d.formulas:
                    tag = "" if kind == "input" else f" [{kind}]"
                    out.append(f"- {variables}{tag}: {formula[:300]}  ({loc})")
            if not t.derivatives and not op.is_out:
                out.append("Autograd: no derivatives.yaml entry (composite ops differentiate through the ops they call)")
    if r.composite_notes:
        out.append("")
        out.append("Composite keys:")
        for key, text in r.composite_notes.items():
            out.append(f"- {key}: {text}")
    context = _context(r)
    if context:
        out.append("")
        out += [f"Why: {line}" for line in context]
    if r.related:
        out.append("")
        out.append("Related ops: " + ", ".join(r.related))
    for n in r.notes:
        out.append("")
        out.append(f"Note: {n}")
    return "\n".join(out)
