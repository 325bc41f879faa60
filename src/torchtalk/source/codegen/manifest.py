"""What a finished generation left in its output directory, and which of it to index.

A run's ``out_dir`` holds the generated tree (paths as in a build's ``build/``
directory), the generators' log, and a manifest: the inputs hash it was made from and
each generator's result, including the files it wrote.  The result dataclasses are
what ``CodegenJob.wait()`` returns and what the manifest stores.
"""

from __future__ import annotations

import dataclasses
import fnmatch
import json
import os
import time
from pathlib import Path
from typing import Any

from ...model.codegen import ATEN_DIR, AUTOGRAD_DIR
from .inputs import SETTINGS_VERSION

__all__ = [
    "LOG_NAME",
    "MANIFEST_NAME",
    "NOT_INDEXED",
    "CodegenResult",
    "GeneratorResult",
    "generated_files_to_index",
    "read_manifest",
    "write_manifest",
]

MANIFEST_NAME = ".torchtalk-codegen.json"
LOG_NAME = ".torchtalk-codegen.log"


@dataclasses.dataclass
class GeneratorResult:
    name: str  # "autograd" or "torchgen"
    command: str  # the equivalent command line, for messages
    ok: bool = False
    reason: str = ""  # one line; "" when ok
    seconds: float = 0.0  # wall time inside the driver
    cpu_seconds: float = 0.0  # CPU time (user+sys) inside the driver
    files: list[str] = dataclasses.field(default_factory=list)  # relative to out_dir
    errno: int = 0  # the OSError's errno when it failed on one (ENOSPC: the disk, not the tree)


@dataclasses.dataclass
class CodegenResult:
    ok: bool  # every generator succeeded
    reason: str  # one line: why (some) generated code is unavailable; "" when ok
    seconds: float  # wall time from start_codegen() to the output being in place
    files: list[str]  # generated relpaths (relative to out_dir), all generators
    generators: dict[str, GeneratorResult]
    out_dir: Path
    inputs_hash: str = ""
    cpu_seconds: float = 0.0  # the driver process's CPU time (user+sys), all told
    full: bool = False
    write_error: str = ""  # set when the output could not be written (a full disk...): not the tree's fault

    def files_of(self, generator: str) -> list[str]:
        g = self.generators.get(generator)
        return list(g.files) if g else []


def one_line(s: str, limit: int = 300) -> str:
    s = " ".join(s.split())
    return s if len(s) <= limit else s[: limit - 3] + "..."


def last_line(path: Path) -> str:
    try:
        data = path.read_bytes()[-8000:].decode("utf-8", "replace")
    except OSError:
        return ""
    lines = [ln.strip() for ln in data.splitlines() if ln.strip()]
    return lines[-1] if lines else ""


def foreign(out_dir: Path) -> bool:
    """True if out_dir holds something other than an earlier output of ours."""
    if out_dir.is_symlink() or (out_dir.exists() and not out_dir.is_dir()):
        return True
    if not out_dir.is_dir() or (out_dir / MANIFEST_NAME).is_file():
        return False
    try:
        return next(out_dir.iterdir(), None) is not None
    except OSError:
        return True


def write_manifest(out_dir: Path, tree: Path, inputs_hash: str, full: bool,
                   generators: dict[str, GeneratorResult]) -> None:
    manifest = {
        "tree": str(tree),
        "inputs_hash": inputs_hash,
        "full": full,
        "settings": SETTINGS_VERSION,
        "created": time.time(),
        "generators": {n: dataclasses.asdict(g) for n, g in generators.items()},
    }
    (out_dir / MANIFEST_NAME).write_text(json.dumps(manifest, indent=1))


def read_manifest(out_dir: Path) -> dict[str, Any] | None:
    """The manifest of a finished run in out_dir (inputs_hash, per-generator files)."""
    try:
        return json.loads((Path(out_dir) / MANIFEST_NAME).read_text())  # type: ignore[no-any-return]
    except (OSError, ValueError):
        return None


#: Generated files not worth indexing (fnmatch on the path relative to out_dir):
#: - ``*Everything.*``: the concatenation of the numbered shards (exact duplicates);
#: - ``templates/*``: an intermediate template (autograd's VariableType.cpp);
#: - big ATen headers that hold only declarations or one-line inline forwarders
#:   (``at::atan2`` -> ``at::_ops::atan2::call``), all derivable from
#:   native_functions.yaml and costly to parse: Functions.h (2.3 MB),
#:   RedispatchFunctions.h (2.2 MB), Operators.h (2.0 MB), MethodOperators.h
#:   (0.5 MB; Operators_*.cpp hold the definitions), VmapGeneratedPlumbing.h (1.7 MB),
#:   RegistrationDeclarations.h (0.8 MB), NativeFunctions.h, NativeMetaFunctions.h,
#:   <Key>Functions(_inl).h, core/TensorBody.h, core/aten_interned_strings.h, ops/*;
#: - RegisterSchema.cpp (``m.def`` of every schema string, as in the YAML),
#:   Declarations.yaml and annotated_fn_args.py (data, not code).
NOT_INDEXED: tuple[str, ...] = (
    "*Everything.*",
    "*/templates/*",
    f"{ATEN_DIR}/Functions.h",
    f"{ATEN_DIR}/RedispatchFunctions.h",
    f"{ATEN_DIR}/Operators.h",
    f"{ATEN_DIR}/MethodOperators.h",
    f"{ATEN_DIR}/VmapGeneratedPlumbing.h",
    f"{ATEN_DIR}/RegistrationDeclarations.h",
    f"{ATEN_DIR}/NativeFunctions.h",
    f"{ATEN_DIR}/NativeMetaFunctions.h",
    f"{ATEN_DIR}/*Functions_inl.h",
    f"{ATEN_DIR}/?*Functions.h",
    f"{ATEN_DIR}/core/*",
    f"{ATEN_DIR}/ops/*",
    f"{ATEN_DIR}/RegisterSchema.cpp",
    # Generated code nobody traces through: Python wrappers of autograd nodes, view
    # bookkeeping, AOTInductor C shims. Skipping them saves ~2 MB of parsing.
    f"{AUTOGRAD_DIR}/python_functions_*.cpp",
    f"{AUTOGRAD_DIR}/python_functions.h",
    f"{AUTOGRAD_DIR}/ADInplaceOrViewType_*.cpp",
    "torch/csrc/inductor/*",
    "*.yaml",
    "*.py",
    MANIFEST_NAME,
    LOG_NAME,
)

_CODE_SUFFIXES = (".cpp", ".cc", ".cu", ".h", ".hpp", ".cuh", ".mm")


def generated_files_to_index(out_dir: Path) -> list[str]:
    """Generated relpaths (relative to out_dir) worth indexing, sorted.

    Uses the manifest's file lists when present (only successful generators' files),
    else walks out_dir.  Skips duplicates and declaration-only headers (NOT_INDEXED).
    """
    out_dir = Path(out_dir)
    files: list[str] = []
    man = read_manifest(out_dir)
    if man and isinstance(man.get("generators"), dict):
        for g in man["generators"].values():
            if g.get("ok"):
                files.extend(g.get("files") or [])
    else:
        for dirpath, _dirs, fnames in os.walk(out_dir):
            for fn in fnames:
                files.append((Path(dirpath) / fn).relative_to(out_dir).as_posix())
    keep = []
    for rel in sorted(set(files)):
        if not rel.endswith(_CODE_SUFFIXES):
            continue
        if any(fnmatch.fnmatchcase(rel, p) for p in NOT_INDEXED):
            continue
        if not (out_dir / rel).is_file():
            continue
        keep.append(rel)
    return keep
