"""A picture as Mermaid flowchart text, to paste into a pull request or an issue (GitHub renders it).

Left to right, one colour per layer, every node with its ``path:line``, every edge
labelled with its kind and dispatch key or backend. Collapsed groups are one node
each ("+37 callers"), drawn dashed; edges to their members end on them.
Text goes into labels as Mermaid entity codes (``#60;``) for anything but plain
characters, so C++ names (``std::optional<T>``, ``operator()``) cannot break the syntax.
"""

from __future__ import annotations

import re

from .picture import LAYER_NAMES, LAYERS, REACHES, Picture

MAX_LABEL = 80

# Fill and stroke per layer; the web view uses the same colours (static/view.css).
COLOURS = {"python": ("#dbe9f7", "#3572a5"), "op": ("#fde7c2", "#b7791f"), "cpp": ("#d9f0d3", "#3f7f3a"),
           "generated": ("#eeeeee", "#777777"), "stub": ("#f3d9f2", "#8e4585"), "gpu": ("#fbd3cf", "#b83227"),
           "autograd": ("#e2dcf7", "#5b4a9e"), "test": ("#d6f2f0", "#2a7f78"), "unresolved": ("#ffffff", "#999999")}
_PLAIN = re.compile(r"[A-Za-z0-9 _.,:/+=@-]")


def text(s: str) -> str:
    """``s`` safe inside a quoted Mermaid label."""
    return "".join(ch if _PLAIN.fullmatch(ch) else f"#{ord(ch)};" for ch in s)


def _short(s: str, limit: int = MAX_LABEL) -> str:
    return s if len(s) <= limit else s[: limit // 2 - 1] + "…" + s[-(limit // 2) + 1:]


def _edge_label(kind: str, key: str, n: int) -> str:
    label = f"{kind} {key}" if key else kind
    return f"{label} ×{n}" if n > 1 else label


def mermaid(pic: Picture) -> str:
    """The picture (collapsed or not) as a ``flowchart LR``."""
    ids: dict[str, str] = {}
    lines = ["flowchart LR"]
    for n in pic.nodes.values():
        if n.group:
            continue
        ids[n.id] = f"n{len(ids)}"
        body = text(_short(n.label))
        if n.loc:
            body += "<br/><small>" + text(n.loc) + "</small>"
        shape = ('(["', '"])') if n.root else ('["', '"]')
        lines.append(f"  {ids[n.id]}{shape[0]}{body}{shape[1]}:::{n.layer}")
    for g in pic.groups.values():
        ids[g.id] = f"g{len(ids)}"
        lines.append(f'  {ids[g.id]}{{{{"{text(g.label)}"}}}}:::collapsed')
    counts: dict[tuple[str, str, str, str], int] = {}
    for e in pic.edges.values():
        src = pic.nodes[e.source].group or e.source
        dst = pic.nodes[e.target].group or e.target
        if src == dst:
            continue
        k = (ids[src], ids[dst], e.kind, e.key if (src, dst) == (e.source, e.target) else "")  # a group: per kind
        counts[k] = counts.get(k, 0) + 1
    for (src, dst, kind, key), count in counts.items():
        arrow = "-.->" if kind == REACHES else "-->"
        lines.append(f'  {src} {arrow}|"{text(_edge_label(kind, key, count))}"| {dst}')
    for g in pic.groups.values():  # a group whose members have no edge to a shown node still hangs from its anchor
        if g.anchor and not any(ids[g.id] in (s, d) for s, d, _k, _key in counts):
            src, dst = (ids[g.id], ids[g.anchor]) if g.direction == "in" else (ids[g.anchor], ids[g.id])
            lines.append(f"  {src} -.- {dst}")
    used = {n.layer for n in pic.nodes.values() if not n.group}
    for layer in LAYERS:
        if layer in used:
            fill, stroke = COLOURS[layer]
            lines.append(f"  classDef {layer} fill:{fill},stroke:{stroke},color:#1b1b1b")
    if pic.groups:
        lines.append("  classDef collapsed fill:#ffffff,stroke:#666666,stroke-dasharray:4 3,color:#333333")
    return "\n".join(lines)


def legend(pic: Picture) -> str:
    used = [layer for layer in LAYERS if any(n.layer == layer for n in pic.nodes.values())]
    return ", ".join(LAYER_NAMES[layer] for layer in used)


def mermaid_answer(pic: Picture) -> str:
    """The Markdown answer for format='mermaid': one line on what is drawn, then the diagram in a fence."""
    shown = sum(1 for n in pic.nodes.values() if not n.group)
    head = f"{pic.title} as a graph: {len(pic.nodes)} nodes, {len(pic.edges)} edges"
    if pic.groups:
        hidden = len(pic.nodes) - shown
        head += (f"; {shown} nodes drawn, {hidden} folded into {len(pic.groups)} counted groups "
                 "(format='text' lists every one)")
    if not pic.nodes:
        return head + " (nothing to draw: this answer has no graph; format='text' shows it)."
    return f"{head}.\nLayers: {legend(pic)}.\n\n```mermaid\n{mermaid(pic)}\n```"
