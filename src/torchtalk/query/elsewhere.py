"""Where a name one tool does not know is known: the other tool, and the call, that answers it.

Note [Names of another kind]
An agent asks ``trace("nn.Conv2d")`` (a module class: trace_module), ``calls("torch.nn.functional.relu")`` (a Python
function: trace), ``cuda_kernels("torch.optim.AdamW")``, ``test_file_info("relu")``, or gives ``path:line`` of a
Python file to a C++ tool. Each tool's "not found" then names the tool whose resolver does know the name, with the
exact call, before its close matches (which are names of its own kind and can only be near misses). The check is
each other tool's own resolver, asked without its suggestions, so the two cannot disagree about a name; it runs
only for a "not found".
"""

from __future__ import annotations

from collections.abc import Callable

from ..errors import BadArgument
from ..store.reader import Index
from .functions import PATH_LINE, find_targets
from .modules import find_class
from .results import Elsewhere, NotFound


def _module_class(ix: Index, name: str) -> Elsewhere | None:
    found = find_class(ix, name)
    if isinstance(found, NotFound) or not found[0].roots:
        return None
    kind = "an optimizer" if "optimizer" in found[0].roots else "an LR scheduler" \
        if "lr_scheduler" in found[0].roots else "an nn module class"
    return Elsewhere("trace_module", name, f"{kind} ({found[0].fq})")


def _traced(ix: Index, name: str) -> Elsewhere | None:
    from .trace import trace  # trace's own resolver (trace.py imports nothing of this module)
    if PATH_LINE.match(name):
        return None
    found = trace(ix, name, "yaml")
    if isinstance(found, NotFound):
        return None
    # F.relu names the op it reaches; Module._apply reaches ops of other names on its way: a Python function
    named_op = found.entry is None or any(t.op.name == name.rsplit(".", 1)[-1] for t in found.ops)
    return Elsewhere("trace", name, "an op, or a Python name of one" if named_op
                     else "a Python function (trace follows it to the ops it reaches)")


def _cpp_function(ix: Index, name: str) -> Elsewhere | None:
    if name.endswith(".py") or ".py:" in name:
        return None
    found = find_targets(ix, name)
    if isinstance(found, NotFound):
        return None
    targets, _ = found
    return Elsewhere("calls", name, "a DispatchStub" if targets[0].is_stub else "a C++ function")


def _python_line(ix: Index, name: str) -> Elsewhere | None:
    """path:line inside a Python function of the tree: that function, by the name trace takes."""
    path, _, line = name.rpartition(":")
    if not path.endswith(".py") or not line.isdigit():
        return None
    fid = ix.file_ids().get(path)
    if fid is None:
        return None
    row = ix.one("SELECT module, qualname FROM py_function WHERE file_id = ? AND line <= ? AND end_line >= ? "
                 "ORDER BY line DESC LIMIT 1", (fid, int(line), int(line)))
    if row is None:
        return None
    return Elsewhere("trace", f"{row[0]}.{row[1]}", f"in the Python function {row[0]}.{row[1]}")


def _test_name(ix: Index, name: str) -> Elsewhere | None:
    from .tests import find_similar_tests
    if name.endswith(".py") or "/" in name or "::" in name:
        return None
    return Elsewhere("find_similar_tests", name, "a name tests are named after") if find_similar_tests(
        ix, name, 1, by_body=False).total else None


_TESTS = frozenset({"test_file_info"})  # a name a test tool does not know is first of all a name of tests
_NOT_TESTS = frozenset({"trace", "trace_module", "calls", "called_by", "impact", "cuda_kernels"})
# The checks, in the order their calls are offered: (the resolver it runs, the check, the tools it is run for; None:
# every tool whose own resolver it is not). A tool never runs its own resolver again, nor one it shares (_SHARED).
_CHECKS: tuple[tuple[str, Callable[[Index, str], Elsewhere | None], frozenset[str] | None], ...] = (
    ("find_similar_tests", _test_name, _TESTS), ("trace_module", _module_class, _NOT_TESTS),
    ("trace", _traced, _NOT_TESTS), ("calls", _cpp_function, _NOT_TESTS), ("python path:line", _python_line, None))
# Tools whose resolver answers what another's does (cuda_kernels takes an op or a C++ function; called_by and impact
# read names as calls does).
_SHARED = {"cuda_kernels": {"trace", "calls"}, "called_by": {"calls"}, "impact": {"calls"}}


def elsewhere(ix: Index, name: str, asked: str) -> list[Elsewhere]:
    """The other tools that know ``name``, which ``asked`` did not find (Note [Names of another kind])."""
    own = {asked} | _SHARED.get(asked, set())
    out: list[Elsewhere] = []
    for resolver, check, only in _CHECKS:
        if resolver in own or only is not None and asked not in only:
            continue
        try:
            found = check(ix, name)
        except BadArgument:  # not a name that tool takes at all ('.' as a test query)
            continue
        if found is not None and found not in out:
            out.append(found)
    return out
