"""What a worker process does with one file: read, hash, pick the extractor, extract, encode.

Runs in a pool, so it takes and returns plain tuples: the facts go back as rows per
table (``store.codec.encode_facts``), cheaper to pickle than objects. Files are read
by ``source.files.read_limited`` (regular files only, within a size and a time limit);
a file that cannot be read is reported with its status and reason instead of facts,
and bytes that are not UTF-8 are read as U+FFFD (noted as the file's reason).
An extractor that raises is a bug: it is recorded against the file (status ERROR,
the exception as the reason) so one file never stops an index run, and get_status
shows it.
"""

from __future__ import annotations

import ast
import hashlib
import time
from typing import NamedTuple

from ..model import FileFacts, FileProblems, FileStatus, Layer
from ..model.paths import NATIVE_FUNCTIONS, TAGS, TESTING_INTERNAL
from ..source.files import NO_STAMP, Stamp, Unreadable, read_limited, stamp_of
from ..store.codec import Row, encode_facts
from . import native_yaml
from .bindtext import add_binding_text
from .cpp import extract_cpp
from .generated import extract_generated
from .metal import extract_metal
from .pymodules import extract_python
from .pytests import extract_tests


class Task(NamedTuple):
    relpath: str  # as stored: relative to the source root, or "<generated>/..."
    abspath: str
    layer: Layer
    old_hash: str  # "" when the index has no version of this file


class Result(NamedTuple):
    relpath: str
    layer: Layer
    stamp: Stamp  # what the file was read at (Note [File stamps])
    hash: str
    status: FileStatus | None  # None: same hash as before, nothing to write
    reason: str  # why a file was skipped, or what failed in it
    facts: dict[str, list[Row]] | None
    cpu: float = 0.0  # CPU seconds the worker spent on the file (read, hash, extract, encode)


def extract(relpath: str, layer: Layer, data: bytes) -> FileFacts:
    """The facts of one file, by layer and path."""
    name = relpath.rsplit("<generated>/", 1)[-1]
    if layer is Layer.OPS:
        if relpath == NATIVE_FUNCTIONS:
            return native_yaml.extract_native_functions(relpath, data)
        if relpath == TAGS:
            return native_yaml.extract_tags(relpath, data)
        return native_yaml.extract_derivatives(relpath, data)
    if layer is Layer.GENERATED:
        return extract_generated(relpath, data)
    if layer is Layer.CPP:
        if name.endswith(".metal"):
            return extract_metal(relpath, data)
        return add_binding_text(extract_cpp(relpath, data), data)
    try:
        tree = ast.parse(data, filename=relpath)
    except (SyntaxError, ValueError) as exc:
        line = getattr(exc, "lineno", None) or 0
        return {FileProblems: [f"{relpath}:{line}: Python syntax error: {getattr(exc, 'msg', exc)}"]}
    if layer is Layer.TESTS:
        return extract_tests(relpath, data, tree)
    facts = extract_python(relpath, data, tree)
    if name.startswith(TESTING_INTERNAL):
        for key, rows in extract_tests(relpath, data, tree).items():
            facts.setdefault(key, []).extend(rows)
    return facts


def run_task(task: Task) -> Result:
    t = time.process_time()
    return _run_task(task)._replace(cpu=time.process_time() - t)


def _run_task(task: Task) -> Result:
    def result(status: FileStatus | None, reason: str = "", facts: dict[str, list[Row]] | None = None) -> Result:
        return Result(task.relpath, task.layer, stamp_of(st), digest, status, reason, facts)

    try:
        st, data = read_limited(task.abspath)
    except Unreadable as exc:  # a FIFO, a file grown past the limit, a read that never ends
        return Result(task.relpath, task.layer, NO_STAMP, "", FileStatus.SKIPPED, str(exc), None)
    except OSError as exc:
        return Result(task.relpath, task.layer, NO_STAMP, "", FileStatus.SKIPPED,
                      f"unreadable ({exc.strerror or exc})", None)
    digest = hashlib.blake2b(data, digest_size=16).hexdigest()
    if digest == task.old_hash:
        return result(None)
    if not data.strip():
        return result(FileStatus.OK, "", {})
    note = ""
    try:
        data.decode("utf-8")
    except UnicodeDecodeError as exc:
        # A stray byte (a Latin-1 comment) must not cost the whole file, as it costs no compiler or grep: it is
        # read as U+FFFD; line numbers are unchanged (a newline is never part of a bad sequence).
        note = f"bytes that are not UTF-8 (the first at byte {exc.start}) were read as U+FFFD"
        data = data.decode("utf-8", "replace").encode("utf-8")
    if b"\x00" in data:
        return result(FileStatus.SKIPPED, "contains NUL bytes")
    try:
        facts = extract(task.relpath, task.layer, data)
        problems = facts.pop(FileProblems, None)
        rows = encode_facts(facts)
    except RecursionError:
        return result(FileStatus.ERROR, "nested too deeply to extract (RecursionError)")
    except Exception as exc:  # an extractor bug: recorded against this file, visible in get_status
        return result(FileStatus.ERROR, f"extractor failed ({type(exc).__name__}: {exc})"[:300])
    if problems:
        return result(FileStatus.ERROR, "; ".join([*problems, note] if note else problems)[:500], rows)
    return result(FileStatus.OK, note, rows)
