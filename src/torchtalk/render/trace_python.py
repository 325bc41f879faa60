"""Markdown for the Python side of a trace: the Python function asked about (its steps, the ops it reaches, which
of them to detail first) and the bindings a name is bound by."""

from __future__ import annotations

from ..model import Edge, EdgeKind, NodeKind, PyApiKind
from ..query.bound import BindingTrace, callee_name
from ..query.cuts import tool_call
from ..query.trace_results import OpTrace, PythonEntry, TraceResult
from .common import IN_STRUCTURED, choice_lines, showing


def entry(e: PythonEntry, out: list[str]) -> None:
    out += entry_lines(e)


def entry_lines(e: PythonEntry) -> list[str]:
    """A Python function asked about: its definition, then its steps toward the ops (the first 12)."""
    out = [f"Python {e.kind.noun} {e.name}{e.signature}  {e.loc}"]
    for edge in e.calls[:12]:
        if edge.kind is EdgeKind.BINDING or edge.src.kind is NodeKind.BINDING:
            out.append(f"- {edge.src.key} is bound to {_bound_target(edge)}  ({edge.site})")
        else:
            target = f"op {edge.dst.key}" if edge.dst.kind is NodeKind.OP else edge.dst.label
            how = f" ({edge.note})" if edge.note else ""
            out.append(f"- calls {edge.written}{how} -> {target}  (at {edge.site})")
    if len(e.calls) > 12:
        out.append(f"- ... {showing(12, len(e.calls), IN_STRUCTURED)} steps")
    out += choice_lines(e.choices)
    return out


def _bound_target(edge: Edge) -> str:
    """What a binding edge ends at: an op, C++ code (hand-written bindings: its function and where), or a name."""
    if edge.dst.kind is NodeKind.OP:
        return f"op {edge.dst.key}"
    if edge.dst.kind in (NodeKind.CPP_FUNCTION, NodeKind.GPU_KERNEL, NodeKind.WRAPPER):
        return f"C++ {edge.dst.label}" + (f" {edge.dst.loc}" if edge.dst.loc else "")
    if edge.dst.key.startswith("lambda@"):  # m.def("name", [](...) {...}): the lambda is where it is bound
        return f"a C++ lambda at {edge.site}"
    return edge.dst.key


_BINDING_KINDS = {PyApiKind.GENERATED_BINDING: "a generated binding (tools/autograd/gen_python_functions.py)",
                  PyApiKind.PYMETHODDEF: "a PyMethodDef entry", PyApiKind.PYBIND: "pybind11 .def",
                  PyApiKind.GETTER: "the getter of a PyGetSetDef entry",
                  PyApiKind.SETTER: "the setter of a PyGetSetDef entry"}


def binding_lines(bs: list[BindingTrace], out: list[str]) -> None:
    for b in bs:
        fn = f"{b.function.display}{b.function.params}  {b.function.loc}" if b.function else b.edge.dst.label
        kind = b.edge.binding_kind
        how = _BINDING_KINDS.get(kind, str(kind)) if kind else b.edge.note
        out.append(f"## {b.python_name}: bound by {how}" + ("" if b.reaches else ", not an op"))
        if b.module_unknown:
            out.append(f"- its module is not known: the binding code does not say which module this .def of "
                       f"`{b.python_name}` is in")
        out.append(f"- bound at {b.edge.site} to {fn}")
        # Calls at one site that several definitions could answer are one line (the call does not say which).
        sites: dict[tuple[str, str], list[Edge]] = {}
        for e in b.calls:
            target = f"op {e.dst.key}" if e.kind is EdgeKind.DISPATCH_CALL else e.dst.label
            sites.setdefault((str(e.site), target), []).append(e)
        # The rarest callees when not all fit (a common helper, c10::irange, says least), shown in line order.
        order = list(sites.items())
        kept = set(sorted(range(len(order)), key=lambda i: (
            order[i][1][0].kind is not EdgeKind.DISPATCH_CALL and b.callee_sites.get(callee_name(order[i][1][0]), 0),
            i))[:MAX_BINDING_CALLS])
        for (site, target), edges in (order[i] for i in sorted(kept)):
            where = f"  {edges[0].dst.loc}" if edges[0].dst.loc and len(edges) == 1 else \
                (f"  ({len(edges)} candidates: the call does not say which)" if len(edges) > 1 else "")
            out.append(f"    calls {target}{where}  [at {site}]")
        if len(sites) > MAX_BINDING_CALLS:
            left = list(dict.fromkeys(target for i, ((_site, target), _edges) in enumerate(order) if i not in kept))
            out.append(f"    ... showing {MAX_BINDING_CALLS} of {len(sites)} calls, the least common callees first "
                       f"(left out: {', '.join(left[:4])}{', ...' if len(left) > 4 else ''}); "
                       f"{tool_call('calls', b.function.qualname if b.function else b.edge.dst.label)} lists all")
        for e in b.reaches:
            if e.src.key != b.edge.dst.key:
                out.append(f"- reaches op {e.dst.key} through {e.src.label} (call at {e.site})")


def reached_lines(e: PythonEntry) -> list[str]:
    """Each op a Python function reaches, once, with the call that reaches it and the branch that picks it
    (the lead of a trace whose overloads the budget may cut: the question was which ops the function runs)."""
    reached: set[str] = set()  # every op the walk reached, also those without a section (the query names them)
    by_call: dict[tuple[str, str], list[str]] = {}
    # A name bound to a C function (logsigmoid = _add_docstr(torch._C._nn.log_sigmoid, ...)) reaches its op where
    # it is bound; the call that reaches the op is the function's call of the name (its line, its branch).
    into = {edge.dst.key: edge for edge in reversed(e.calls) if edge.dst.kind is NodeKind.BINDING
            and edge.kind is EdgeKind.PY_CALL}
    for edge in e.calls:
        if edge.dst.kind is NodeKind.OP and edge.dst.key not in reached:
            reached.add(edge.dst.key)
            call = into.get(edge.src.key) if edge.src.kind is NodeKind.BINDING else None
            written = edge.written or edge.src.key
            if call is not None and call.site is not None:
                written = f"{call.written or call.dst.key} (= {written} at {edge.site})"
            by_call.setdefault((written, str(call.site if call is not None else edge.site)), []).append(edge.dst.key)
    if len(by_call) < 2:
        return []
    out = [f"It reaches {len(reached)} overloads, by the call that reaches them:"]
    out += [f"- {written} at {site}" + (f" [{e.branches[site]}]" if site in e.branches else "")
            + f" -> {', '.join(names)}" for (written, site), names in by_call.items()]
    return out


def by_relevance(r: TraceResult) -> list[OpTrace]:
    """Note [A Python function's ops by relevance]: the overloads a Python function reaches are detailed in the order
    a reader asks about them, as far as the budget goes: those of the op named as the function is (F.embedding_bag's
    embedding_bag.padding_idx, before the is_floating_point its checks call), then those a call outside any branch
    reaches (or past a return, the code's way on: F.relu's ``return torch.relu(input)`` after ``if inplace: return
    torch.relu_(input)``), then the rest, each group in the order of the calls. The lead lists every op by the call
    reaching it, so the order decides which detail is cut, never which op is named."""
    e = r.entry
    if e is None:
        return r.ops
    own = e.name.rsplit(".", 1)[-1].strip("_")
    always = {c.dst.key for c in e.calls if c.dst.kind is NodeKind.OP and (c.branch is None or c.branch.past)}
    ranked = sorted(enumerate(r.ops), key=lambda it: (it[1].op.name.strip("_") != own,
                                                      it[1].op.full_name not in always, it[0]))
    return [t for _i, t in ranked]


MAX_BINDING_CALLS = 20  # calls of a bound C++ function listed under its binding (the rarest callees)
MAX_CPP_CALLS = 6  # hand-written bindings a Python function's lead names (its steps, and the structured answer, all)


def cpp_call_lines(e: PythonEntry) -> list[str]:
    """The C++ a Python function calls through hand-written bindings, no op (Tensor.backward: the autograd engine's
    THPEngine_run_backward), with the call that reaches each: part of the lead beside the ops it reaches."""
    called: dict[str, str] = {}
    for edge in e.calls:
        if edge.kind is EdgeKind.PY_CALL and edge.dst.kind is NodeKind.BINDING:
            called.setdefault(edge.dst.key, f"{edge.written or edge.dst.key} at {edge.site}")
    lines = [f"- {edge.src.key} -> {_bound_target(edge)}  (called: {called[edge.src.key]})" for edge in e.calls
             if edge.src.kind is NodeKind.BINDING and edge.src.key in called and edge.dst.kind is not NodeKind.OP]
    if not lines:
        return []
    more = [f"- ... {showing(MAX_CPP_CALLS, len(lines), 'the steps below and ' + IN_STRUCTURED)}"] \
        if len(lines) > MAX_CPP_CALLS else []
    return ["It calls C++ through hand-written bindings (no op):"] + lines[:MAX_CPP_CALLS] + more
