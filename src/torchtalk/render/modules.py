"""Markdown for trace_module and list_modules."""

from __future__ import annotations

from ..query.modules import CallNode, ListModulesResult, TraceModuleResult
from .budget import STRUCTURED, Section, fitted
from .common import IN_STRUCTURED, choice_lines, cut_lines, showing

MAX_OTHERS = 12  # other classes of the name listed in the text (the structured answer holds all)

MAX_TREE_LINES = 60  # lines of the call tree; the structured answer holds the whole tree
MAX_OPS = 40  # ops reached the text may show (the budget may show fewer: its cut line counts them all)
KEEP_CALLS = 20  # lines of the call tree kept before the ops reached fill the budget (the shallowest calls)
KEEP_OPS = 8  # ops reached kept before the rest of the call tree


def _chosen(roots: list[CallNode], lines: int) -> set[int]:
    """``id``s of the calls the tree shows within ``lines``, level by level: a function's own calls before the
    calls of what it calls, so what a budget cuts is the deepest detail. A function's calls of what the tree shows
    at another call (Note [Calls shown once]) take one line together; their ids are chosen with it."""
    chosen: set[int] = set()
    level = [roots]
    while level and lines > 0:
        below = []
        for nodes in level:
            again = [n for n in nodes if n.shown_above]
            for n in nodes:
                if n.shown_above or lines <= 0:
                    continue
                chosen.add(id(n))
                lines -= 1
                below.append(n.children)
            if again and lines > 0:
                chosen.update(id(n) for n in again)
                lines -= 1
        level = below
    return chosen


def _calls(nodes: list[CallNode], out: list[str], indent: int, chosen: set[int]) -> None:
    pad = "  " * indent
    for n in nodes:
        if n.shown_above or id(n) not in chosen:
            continue
        where = f"  {n.target_loc}" if n.target_loc else ""
        target = f" -> {n.target}" if n.target and n.target != n.written else ""
        ops = f" -> op {', '.join(o.full_name for o in n.ops[:3])}" if n.ops else ""
        note = f"  ({n.note})" if n.note else ""
        out.append(f"{pad}- {n.written}{target}{where}{ops}  [at {n.site}]{note}")
        _calls(n.children, out, indent + 1, chosen)
    again = [n for n in nodes if n.shown_above and id(n) in chosen]
    if again:
        out.append(f"{pad}- also calls, each shown at another call: "
                   + ", ".join(f"{n.written} (line {n.site.line})" for n in again))


def _count(nodes: list[CallNode]) -> int:
    return sum(1 + _count(n.children) for n in nodes)


def render_trace_module(r: TraceModuleResult) -> str:
    """The class and its entry point (the lead), then its call tree and the ops it reaches within the answer budget
    (Note [Answer budget]: the shallowest calls and the first ops of each before the rest), then the notes."""
    c = r.cls
    kind = ", ".join(c.roots) or "class"
    out = [f"# {c.fq}  {c.loc}  ({kind})"]
    if c.doc:
        out.append(f"    {c.doc}")
    if r.base_chain:
        out.append("Bases: " + " -> ".join(f"{fq} ({loc})" if loc else fq for fq, loc in r.base_chain))
    if r.init:
        owner = "" if r.init.owner == c.fq else f"  (inherited from {r.init.owner})"
        out.append(f"Constructor: __init__{r.init.signature}  {r.init.loc}{owner}")
    sections: list[Section] = []
    if r.entry:
        owner = "" if r.entry.owner == c.fq else f"  (inherited from {r.entry.owner})"
        out.append(f"{r.entry.name}{r.entry.signature}  {r.entry.loc}{owner}")
        out += choice_lines(r.choices, r.common)
        if r.entry.calls:
            chosen = _chosen(r.entry.calls, MAX_TREE_LINES)
            tree: list[str] = []
            _calls(r.entry.calls, tree, 0, chosen)
            whole: list[str] = []  # the lines of the whole tree, counted for the cut line
            _calls(r.entry.calls, whole, 0, _chosen(r.entry.calls, _count(r.entry.calls)))
            # an outline: cut in part, a function's own calls stay before the calls of what it calls
            sections.append(Section(["", f"{r.entry.name} calls:"], tree,
                                    what=f"the calls of {r.entry.name} (the deepest left out first)",
                                    shows=STRUCTURED, keep=KEEP_CALLS, outline=True, total=len(whole)))
        else:
            out.append(f"\n{r.entry.name} makes no call TorchTalk could resolve.")
    else:
        out.append("No forward/step method found on the class or its bases.")
    if r.ops or r.library_ops:
        total = len(r.ops) + len(r.library_ops)
        lines = [(f"- {full}  {op.loc}  [{r.op_kernels.get(full, '')}]", paths[0]) for full, (op, paths) in
                 r.ops.items()] + [(f"- {name}  [TORCH_LIBRARY op; first m.impl at {loc}]", paths[0])
                                   for name, (loc, paths) in r.library_ops.items()]
        items = [f"{line}\n    via {via}" for line, via in lines[:MAX_OPS]]  # an op with the call reaching it
        sections.append(Section(["", f"Native ops reached ({total}):"], items, what="the native ops reached",
                                shows=STRUCTURED, noun="ops", keep=KEEP_OPS, total=total))
    tail: list[str] = []
    if r.others:
        shown = r.others[:MAX_OTHERS]
        more = f" ({showing(len(shown), len(r.others), IN_STRUCTURED)}; trace_module of a full name traces one)" \
            if len(r.others) > len(shown) else ""
        tail += ["", f"Other classes with this name{more}: " + "; ".join(f"{fq} ({loc})" for fq, loc in shown)]
    return fitted(out, sections, tail + cut_lines(r.cuts))


def render_list_modules(r: ListModulesResult) -> str:
    out = [f"# list_modules {r.category}: {r.total} classes"]
    for n in r.notes:
        out.append(f"Note: {n}")
    for group, classes in r.groups.items():
        out.append(f"\n## {group} ({len(classes)})")
        for c in classes[:300]:
            out.append(f"- {c.name}  {c.loc}")
        if len(classes) > 300:
            out.append(f"- ... {showing(300, len(classes), IN_STRUCTURED)}")
    if not r.total:
        out.append("No class matches.")
    return "\n".join(out)
