"""What a worker process does with one file: read, hash, pick the extractor, extract.

Runs in a pool, so it takes and returns plain tuples. A file that cannot be
read or decoded is reported with a status instead of facts; an extractor bug
on one file is reported the same way and never stops the build.
"""

from __future__ import annotations

import hashlib
import os
from typing import NamedTuple

from .facts import FileFacts


class Task(NamedTuple):
    relpath: str  # as stored: relative to the source root, or "<generated>/..."
    abspath: str
    layer: str
    old_hash: str  # "" when the index has no version of this file


class Result(NamedTuple):
    relpath: str
    layer: str
    size: int
    mtime_ns: int
    hash: str
    status: str  # "ok", "unchanged" (same hash as before), or why it was skipped
    facts: FileFacts | None


def _extract(relpath: str, layer: str, data: bytes) -> FileFacts:
    """Choose extractors by layer and path. Imports are local: workers load only what they use."""
    name = relpath.rsplit("<generated>/", 1)[-1]
    if layer == "ops":
        from . import native_yaml as y
        if name.endswith("native_functions.yaml"):
            return y.extract_native_functions(relpath, data)
        if name.endswith("tags.yaml"):
            return y.extract_tags(relpath, data)
        return y.extract_derivatives(relpath, data)
    if layer == "generated":
        from .generated import extract_generated
        return extract_generated(relpath, data)
    if layer == "cpp":
        if name.endswith(".metal"):
            from .metal import extract_metal
            return extract_metal(relpath, data)
        from .cpp import extract_cpp
        return extract_cpp(relpath, data)
    import ast

    from .pymodules import extract_python
    from .pytests import extract_tests

    try:
        tree = ast.parse(data, filename=relpath)
    except (SyntaxError, ValueError) as exc:
        line = getattr(exc, "lineno", None) or 0
        return {"errors": [f"{relpath}:{line}: Python syntax error: {getattr(exc, 'msg', exc)}"]}
    if layer == "tests":
        return extract_tests(relpath, data, tree)
    facts = extract_python(relpath, data, tree)
    if name.startswith("torch/testing/_internal/"):
        for key, rows in extract_tests(relpath, data, tree).items():
            facts.setdefault(key, []).extend(rows)
    return facts


def run_task(task: Task) -> Result:
    try:
        st = os.stat(task.abspath)
        with open(task.abspath, "rb") as f:
            data = f.read()
    except OSError as exc:
        return Result(task.relpath, task.layer, 0, 0, "", f"skipped: unreadable ({exc.strerror or exc})", None)
    digest = hashlib.blake2b(data, digest_size=16).hexdigest()
    if digest == task.old_hash:
        return Result(task.relpath, task.layer, st.st_size, st.st_mtime_ns, digest, "unchanged", None)
    if not data.strip():
        return Result(task.relpath, task.layer, st.st_size, st.st_mtime_ns, digest, "ok", {})
    try:
        data.decode("utf-8")
    except UnicodeDecodeError as exc:
        return Result(task.relpath, task.layer, st.st_size, st.st_mtime_ns, digest,
                      f"skipped: not UTF-8 (byte {exc.start})", None)
    if b"\x00" in data:
        return Result(task.relpath, task.layer, st.st_size, st.st_mtime_ns, digest, "skipped: contains NUL bytes", None)
    try:
        facts = _extract(task.relpath, task.layer, data)
    except Exception as exc:  # an extractor bug must cost one file, not the index
        return Result(task.relpath, task.layer, st.st_size, st.st_mtime_ns, digest,
                      f"skipped: extractor failed ({type(exc).__name__}: {exc})"[:300], None)
    errors = facts.pop("errors", None)
    status = "ok" if not errors else "error: " + "; ".join(errors)[:500]
    return Result(task.relpath, task.layer, st.st_size, st.st_mtime_ns, digest, status, facts)
