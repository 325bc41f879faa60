"""get_status: which tree, which index, how fresh, and what each layer holds."""

from __future__ import annotations

import time
import weakref
from dataclasses import dataclass, field
from pathlib import Path

from ..index.freshness import Freshness, walk_changes
from ..store.builds import building, failure_summary, reported_failure
from ..store.integrity import reported_damage
from ..store.reader import Index
from ..store.resolved import resolved_path, serving


@dataclass
class StatusResult:
    source_root: str
    pytorch_version: str
    index_path: str
    built_at: str
    fresh: bool | None
    changed_files: list[str]
    components: dict[str, dict[str, int]]
    readiness: dict[str, str]
    skipped_count: int
    skipped: list[str]
    last_build: str
    checked_seconds_ago: float = 0.0
    notes: list[str] = field(default_factory=list)
    stage_seconds: dict[str, float] = field(default_factory=dict)  # where the last build's time went
    resolved_calls: str = ""  # whether the store of resolved calls serves this build (Note [Resolved calls])


# Indexes asked about before, without a server's watch (in-process use): from the second ask on they get a
# watch of their own, so a caller polling get_status pays a walk once, not at every call.
_asked: weakref.WeakKeyDictionary[Index, bool] = weakref.WeakKeyDictionary()


def changed_files(ix: Index, root: Path) -> tuple[list[str], float]:
    """(changed files, 0.0): from the tree's watch (``ix.changes``: the server's, or one made here at the second
    ask; microseconds, Note [Freshness]), else from a walk. Always exact: the second value, the age of the
    answer, is always 0 (an answer is never reused)."""
    if ix.changes is None:
        if ix not in _asked:
            _asked[ix] = True
            return walk_changes(ix, root), 0.0
        codegen = not ix.meta.get("codegen_status", "").startswith("disabled")
        fresh = Freshness(root, codegen)
        ix.changes = lambda: fresh.changed(ix)
    return ix.changes(), 0.0


def status(ix: Index) -> StatusResult:
    meta = ix.meta
    counts = ix.meta_json("counts", {})
    root = meta.get("source_root", "")
    changed: list[str] = []
    fresh = None
    age = 0.0
    if ix.source_root is not None:
        changed, age = changed_files(ix, ix.source_root)
        fresh = not changed and not meta.get("codegen_status", "").startswith("updating")
    readiness = {}
    for comp, values in counts.items():
        readiness[comp] = "ready" if any(values.values()) else "not indexed"
    if "generated code" in readiness:
        codegen = meta.get("codegen_status", "not run")
        cpu = meta.get("codegen_cpu_seconds")
        cpu_note = f", {cpu}s CPU" if cpu and cpu != "0.0" else ""
        readiness["generated code"] = (f"ready (generators: {codegen}{cpu_note})" if codegen.startswith("ok")
                                       else codegen)
        if codegen.startswith("updating") and building(ix.path) is None:
            readiness["generated code"] = ("incomplete: the build that was re-running the generators stopped before "
                                           "their output was indexed; the next refresh completes it")
    built = meta.get("built_at")
    built_at = time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(float(built))) if built else "?"
    skipped = ix.meta_json("skipped", [])
    return StatusResult(
        source_root=root, pytorch_version=meta.get("pytorch_version", "unknown"), index_path=str(ix.path),
        built_at=built_at, fresh=fresh, changed_files=changed, components=counts, readiness=readiness,
        skipped_count=int(meta.get("skipped_count", "0") or 0), skipped=skipped,
        last_build=f"{meta.get('last_mode', '?')} build in {meta.get('last_seconds', '?')}s",
        checked_seconds_ago=round(age, 1),
        notes=_damage_notes(ix) + _build_notes(ix),
        stage_seconds=ix.meta_json("layer_seconds", {}),
        resolved_calls=_resolved_calls(ix),
    )


def _resolved_calls(ix: Index) -> str:
    held = serving(ix.path, ix.meta.get("build_id"))
    if held is not None:
        return (f"stored for this build ({int(held.get('sites', '0') or 0):,} call sites, "
                f"{int(held.get('walks', '0') or 0):,} GPU walks of ops and their kernels): answers read each call's "
                "target and each op's GPU walk")
    slower = "answers resolve calls as asked meanwhile (the same answers; first ones take longer)"
    running = building(resolved_path(ix.path))
    if running:
        return f"being stored in the background ({running}); {slower}"
    return (f"not stored for this build: {slower.replace(' meanwhile', '')}; a server stores it in the background, "
            "`torchtalk resolve` does it at once")


def _build_notes(ix: Index) -> list[str]:
    """A build running now, and builds that keep failing (``store.builds``)."""
    out = []
    running = building(ix.path)
    if running:
        out.append(f"A build of this index is running ({running}); answers switch to it when it lands.")
    failed = reported_failure(ix.path)
    if failed:
        out.append(f"Refreshing the index fails: {failure_summary(failed)}. Answers come from the index as it "
                   "is; `torchtalk index` shows the error, and `torchtalk doctor` checks the setup.")
    return out


def _damage_notes(ix: Index) -> list[str]:
    damage = reported_damage(ix.path)
    if damage is None:
        return []
    return [f"The index is damaged ({damage}); answers may be wrong or fail until it is rebuilt. A running "
            "server rebuilds it by itself; by hand: `torchtalk index --force`."]
