"""get_status: which tree, which index, how fresh, and what each layer holds."""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

from ..source.files import list_files
from ..store.integrity import reported_damage
from ..store.reader import Index


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


# A freshness check walks the tree (~0.15 s). Agents poll get_status, so a recent answer is reused,
# and an older one is answered at once while a thread checks again (stale-while-revalidate).
FRESHNESS_TTL_S = 2.0
FRESHNESS_MAX_STALE_S = 30.0  # older than this, an answer is not trusted: check before answering
_freshness: dict[str, tuple[float, list[str]]] = {}
_checking: set[str] = set()
_lock = threading.Lock()


def _check(ix: Index, root: Path, key: str) -> list[str]:
    indexed = {p: (s, m) for p, s, m in ix.q("SELECT path, size, mtime_ns FROM files WHERE generated = 0")}
    entries = list_files(root)
    current = {e.relpath for e in entries}
    changed = [e.relpath for e in entries if indexed.get(e.relpath) != (e.size, e.mtime_ns)]
    changed += [p for p in indexed if p not in current]
    with _lock:
        _freshness[key] = (time.monotonic(), changed)
        _checking.discard(key)
    return changed


def changed_files(ix: Index, root: Path) -> tuple[list[str], float]:
    """Indexed files whose size or mtime differ on disk (plus new and deleted ones), and the age of that answer."""
    key = f"{ix.path}:{ix.meta.get('built_at')}"
    with _lock:
        hit = _freshness.get(key)
        start_thread = hit is not None and time.monotonic() - hit[0] >= FRESHNESS_TTL_S and key not in _checking
        if start_thread:
            _checking.add(key)
    if hit is None or time.monotonic() - hit[0] >= FRESHNESS_MAX_STALE_S:
        return _check(ix, root, key), 0.0
    if start_thread:
        threading.Thread(target=_check, args=(ix, root, key), daemon=True).start()
    return hit[1], time.monotonic() - hit[0]


def status(ix: Index) -> StatusResult:
    meta = ix.meta
    counts = ix.meta_json("counts", {})
    root = meta.get("source_root", "")
    changed: list[str] = []
    fresh = None
    age = 0.0
    if ix.source_root is not None:
        changed, age = changed_files(ix, ix.source_root)
        fresh = not changed
    readiness = {}
    for comp, values in counts.items():
        readiness[comp] = "ready" if any(values.values()) else "not indexed"
    if "generated code" in readiness:
        codegen = meta.get("codegen_status", "not run")
        cpu = meta.get("codegen_cpu_seconds")
        cpu_note = f", {cpu}s CPU" if cpu and cpu != "0.0" else ""
        readiness["generated code"] = (f"ready (generators: {codegen}{cpu_note})" if codegen.startswith("ok")
                                       else codegen)
    built = meta.get("built_at")
    built_at = time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(float(built))) if built else "?"
    skipped = ix.meta_json("skipped", [])
    return StatusResult(
        source_root=root, pytorch_version=meta.get("pytorch_version", "unknown"), index_path=str(ix.path),
        built_at=built_at, fresh=fresh, changed_files=changed, components=counts, readiness=readiness,
        skipped_count=int(meta.get("skipped_count", "0") or 0), skipped=skipped,
        last_build=f"{meta.get('last_mode', '?')} build in {meta.get('last_seconds', '?')}s",
        checked_seconds_ago=round(age, 1),
        notes=_damage_notes(ix),
        stage_seconds=ix.meta_json("layer_seconds", {}),
    )


def _damage_notes(ix: Index) -> list[str]:
    damage = reported_damage(ix.path)
    if damage is None:
        return []
    return [f"The index is damaged ({damage}); answers may be wrong or fail until it is rebuilt. A running "
            "server rebuilds it by itself; by hand: `torchtalk index --force`."]
