"""Markdown for search and get_status."""

from __future__ import annotations

from ..model import HitKind
from ..query.search_results import SearchResult
from ..query.status import StatusResult
from .budget import STRUCTURED, Section, fitted
from .common import IN_STRUCTURED, first, raise_limit, showing

_DETAILED = (HitKind.AUTOGRAD_NODE, HitKind.PY_CLASS, HitKind.CPP_CLASS, HitKind.CPP_ENUM)  # their detail is shown


def render_search(r: SearchResult) -> str:
    scope = f" (backend {r.backend})" if r.backend else ""
    lead = [f"# search {r.query}{scope}: {showing(len(r.hits), r.total, raise_limit(r.total))}"]
    if not r.hits and r.other_backends:
        lead.append(f"No op with a {r.backend} kernel matches it (ops without one do: below).")
    elif not r.hits:
        lead.append("No op, kernel, binding, Python function or class, C++ function or class name contains it.")
    # One outline within the budget (Note [Answer budget]): cut, every hit's line stays before any op's detail.
    out: list[str] = []
    for h in r.hits:
        if h.kind is HitKind.OP:
            out.append(f"- op {h.name}  {h.loc}  [{h.match}]")
            out.append(f"    {h.detail}")
            for kh in h.kernels[:12]:
                where = "  ".join(f"{d.display} {d.loc}" for d in kh.defs[:2])
                via = f" [{kh.entry.via}]" if kh.entry.via else ""
                out.append(f"    {kh.entry.key}: {kh.entry.kernel}{via}" + (f"  -> {where}" if where else ""))
            if len(h.kernels) > 12:
                out.append(f"    ... {showing(12, len(h.kernels), IN_STRUCTURED)} dispatch entries")
        elif h.kind is HitKind.BINDING:
            out.append(f"- binding {h.name}  {h.loc}  [{h.match}]  {h.detail}")
        else:
            detail = f"  {h.detail}" if h.detail and h.kind in _DETAILED else ""
            out.append(f"- {h.kind} {h.name}  {h.loc}  [{h.match}]{detail}")
    hits = Section([], out, what="the hits and their ops' kernels", shows=STRUCTURED, outline=True)
    return fitted(lead, [hits], [f"Note: {n}" for n in r.notes])


def render_status(r: StatusResult) -> str:
    fresh = {True: "fresh", False: f"stale ({len(r.changed_files)} files changed since the build)",
             None: "unknown"}[r.fresh]
    if r.fresh is not None and r.checked_seconds_ago >= 1:
        fresh += f" (checked {r.checked_seconds_ago:.0f}s ago)"
    out = [
        "# TorchTalk status",
        f"- source: {r.source_root}",
        f"- PyTorch version: {r.pytorch_version}",
        f"- index: {r.index_path}",
        f"- built: {r.built_at} ({r.last_build}); {fresh}",
    ]
    if r.resolved_calls:
        out.append(f"- call resolution: {r.resolved_calls}")
    if r.changed_files:
        out.append("  changed: " + first(r.changed_files, 10))
    for comp, values in r.components.items():
        out.append(f"## {comp}: {r.readiness.get(comp, '?')}")
        for label, count in values.items():
            out.append(f"- {label}: {count:,}")
    if r.skipped_count:
        out.append(f"## skipped files: {r.skipped_count:,}")
        for s in r.skipped[:20]:
            out.append(f"- {s}")
        if r.skipped_count > 20:
            out.append(f"- ... {showing(20, r.skipped_count)}")
    for n in r.notes:
        out.append(f"Note: {n}")
    return "\n".join(out)
