"""The generated layer: run the tree's own code generators, in parallel with parsing.

The generators are re-run only when their inputs change (a hash of the YAMLs,
templates and generator sources); their output lives in the index's cache
directory, never in the user's tree, and is indexed like hand-written C++
under paths starting with ``<generated>/``. If they fail, the index is built
without this layer and the reason is recorded for get_status.
"""

from __future__ import annotations

import os
from dataclasses import dataclass

from ..model import CodegenState, Layer
from ..source.codegen import CodegenJob, codegen_inputs_hash, generated_files_to_index, read_manifest, start_codegen
from ..source.files import FileEntry, stamp_of
from ..source.tree import SourceTree
from ..store.db import WriteFailed

PREFIX = "<generated>/"
TIMEOUT_S = 300.0


@dataclass
class GeneratedPlan:
    state: CodegenState
    inputs_hash: str = ""
    job: CodegenJob | None = None
    status: str = ""  # one line for get_status
    seconds: float = 0.0
    cpu_seconds: float = 0.0


def begin(tree: SourceTree, enabled: bool, meta: dict[str, str]) -> GeneratedPlan:
    """Decide whether the generators must run, and start them if so (returns at once).

    Their output is deterministic, so it is reused whenever the inputs hash matches,
    even for a forced rebuild of the index; a failure with the same inputs is not
    retried either (it would fail again, and a no-op refresh must stay cheap).
    """
    if not enabled:
        return GeneratedPlan(CodegenState.DISABLED, status="disabled (--no-codegen)")
    try:
        inputs = codegen_inputs_hash(tree.root)
    except OSError as exc:
        return GeneratedPlan(CodegenState.DISABLED, status=f"unavailable: cannot read the generators' inputs ({exc})")
    manifest = read_manifest(tree.generated_dir)
    if manifest and manifest.get("inputs_hash") == inputs:
        return GeneratedPlan(CodegenState.REUSE, inputs, status=_status_of(manifest))
    if meta.get("codegen_hash") == inputs and meta.get("codegen_status", "").startswith("unavailable"):
        return GeneratedPlan(CodegenState.FAILED, inputs, status=meta["codegen_status"])
    job = start_codegen(tree.root, tree.generated_dir, timeout=TIMEOUT_S)
    return GeneratedPlan(CodegenState.RUNNING, inputs, job=job)


def _status_of(manifest: dict) -> str:
    gens = manifest.get("generators") or {}
    failed = [f"{name}: {g.get('reason', '?')}" for name, g in gens.items() if not g.get("ok")]
    if not gens:
        return "unavailable: no generator ran"
    if failed and len(failed) == len(gens):
        return "unavailable: " + "; ".join(failed)
    return "ok" + (f" (partly: {'; '.join(failed)})" if failed else "")


def finish(tree: SourceTree, plan: GeneratedPlan) -> list[FileEntry]:
    """Wait for the generators if they run; the generated files to index (stat only)."""
    if plan.state in (CodegenState.DISABLED, CodegenState.FAILED):
        return []
    if plan.job is not None:
        result = plan.job.wait()
        plan.seconds, plan.cpu_seconds = result.seconds, result.cpu_seconds
        if result.write_error:
            # The machine's fault (a full disk), not the tree's: an error, never a silently emptied layer, and
            # not remembered as "these inputs fail", so the next build runs the generators again.
            raise WriteFailed(f"the tree's generators could not write their output under {tree.generated_dir.parent} "
                              f"({result.write_error}); the index was left as it was. Free space there (or set "
                              "TORCHTALK_CACHE_DIR to a directory with room), then run `torchtalk index`")
        manifest = read_manifest(tree.generated_dir)
        if not result.ok and not any(g.ok for g in result.generators.values()):
            plan.status = f"unavailable: {result.reason}"
            return []
        plan.status = _status_of(manifest) if manifest else ("ok" if result.ok else f"partly: {result.reason}")
    out = []
    for rel in generated_files_to_index(tree.generated_dir):
        path = tree.generated_dir / rel
        try:
            st = os.stat(path)
        except OSError:
            continue
        out.append(FileEntry(PREFIX + rel, str(path), Layer.GENERATED, stamp_of(st)))
    return out
