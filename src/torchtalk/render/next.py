"""The one to three calls worth making after an answer, named from that answer.

An agent that reads `trace("softmax")` should not have to guess the kernel's C++
name to go deeper: these are built from names the answer itself holds, so each
one resolves. Shown as a ``next:`` line in the text and as ``next`` in the
structured answer.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable
from typing import Any, TypeVar

from ..model import CppSymbol, CutKind, EdgeKind, HitKind, Node, NodeKind
from ..query.callgraph import MAX_DEPTH as IMPACT_MAX_DEPTH
from ..query.callgraph import CalledByResult, CallsResult, ImpactResult
from ..query.change.result import AffectedResult
from ..query.cuda import CudaKernelsResult, KernelLaunch, LibraryCall, near
from ..query.library_ops import first_kernel
from ..query.modules import ListModulesResult, TraceModuleResult
from ..query.results import NotFound
from ..query.search_results import SearchResult
from ..query.testfiles import TestFileInfo, TestUtilsResult
from ..query.tests import SimilarTestsResult
from ..query.trace_results import TraceResult
from .common import full_limit

T = TypeVar("T")

MAX_NEXT = 3


class NextCall(str):
    """A suggested call as text (``trace("softmax")``), remembering its tool and first argument so the
    tool table can check that the name is one the tool knows before suggesting it."""

    tool: str
    first: str | None

    def __new__(cls, tool: str, *args: Any, **kwargs: Any) -> NextCall:
        parts = [json.dumps(a) for a in args] + [f"{k}={json.dumps(v)}" for k, v in kwargs.items()]
        obj = super().__new__(cls, f"{tool}({', '.join(parts)})")
        obj.tool = tool
        obj.first = args[0] if args and isinstance(args[0], str) else None
        return obj


call = NextCall


def _first(items: Iterable[T], pred: Callable[[T], object] = bool) -> T | None:
    """The first item `pred` holds for (every item counts by default, none being falsy here)."""
    return next((x for x in items if pred(x)), None)


def not_found_next(r: NotFound, tool: str) -> list[str]:
    out: list[str] = [call(e.tool, e.arg) for e in r.elsewhere]
    if r.suggestions:
        arg = r.suggestions[0].split()[0]
        out.append(call(tool, arg))
    if tool in ("trace", "calls", "called_by", "impact", "cuda_kernels"):
        out.append(call("search", r.query))
    elif tool == "trace_module":
        out.append(call("list_modules", r.query))
    return out


def _qualname(node: Node, sym: CppSymbol | None) -> str:
    return sym.qualname if sym is not None else node.key


def next_trace(r: TraceResult) -> list[str]:
    out: list[str] = []
    if r.library is not None:  # its first kernel's code, and its tests
        first = first_kernel(r.library)
        if first:
            out.append(call("calls", first))
        out.append(call("find_similar_tests", r.library.name.split(".")[0]))
        return out
    if r.bindings and not r.ops:
        b = r.bindings[0]
        return [call("calls", b.function.qualname)] if b.function is not None else []
    kernels = [k for t in r.ops for k in t.kernels]
    native = _first(kernels, lambda k: k.definitions and k.entry.key in ("CPU", "CUDA", "CompositeExplicitAutograd",
                                                                         "CompositeImplicitAutograd"))
    if native is not None:
        out.append(call("calls", native.definitions[0].qualname))
    base = r.ops[0].op.name if r.ops else r.query
    if any(k.launches or k.entry.key == "CUDA" for k in kernels):
        out.append(call("cuda_kernels", base))
    elif r.related:
        out.append(call("trace", r.related[0]))
    out.append(call("find_similar_tests", base))
    return out


def next_search(r: SearchResult) -> list[str]:
    out: list[str] = []
    lead = r.hits[0] if r.hits else None
    if lead is not None and lead.kind is HitKind.PY_CLASS:  # its bases, constructor and forward/step to the ops
        out.append(call("trace_module", lead.name))
    elif lead is not None and lead.constructor:  # a C++ class: who constructs it
        out.append(call("called_by", lead.constructor))
    top = _first(r.hits, lambda h: h.kind is HitKind.OP)
    if top:
        out.append(call("trace", top.name))
    stub = _first(r.hits, lambda h: h.kind is HitKind.STUB)
    if stub and not top:
        out.append(call("called_by", stub.name))
    py = _first(r.hits, lambda h: h.kind is HitKind.PY_FUNCTION)
    if py and not top and r.hits[0] is py:
        out.append(call("trace", py.name))
    if r.total > len(r.hits):
        out.append(call("search", r.query, **({"backend": r.backend} if r.backend else {}),
                        limit=full_limit(r.total)))
    return out


def next_calls_of(r: CallsResult) -> list[str]:
    out: list[str] = []
    sec = r.sections[0]
    callee = _first(sec.calls, lambda e: e.dst.kind is NodeKind.CPP_FUNCTION)
    if callee is not None:
        out.append(call("calls", callee.dst.label))
    stub = _first(sec.stubs, lambda s: s.kernels and s.kernels[0].dst.kind is not NodeKind.UNRESOLVED)
    if stub is not None:
        out.append(call("calls", stub.kernels[0].dst.label))
    kernel = _first(sec.kernels, lambda e: e.dst.kind is not NodeKind.UNRESOLVED)
    if kernel is not None:
        out.append(call("calls", kernel.dst.label))
    out.append(call("called_by", _qualname(sec.function, sec.symbol)))
    return out


def next_called_by(r: CalledByResult) -> list[str]:
    sec = r.sections[0]
    out: list[str] = [call("impact", _qualname(sec.function, sec.symbol), depth=2)]
    op = _first(sec.registrations, lambda e: e.kind is EdgeKind.KERNEL)
    if op is not None:
        out.append(call("trace", op.src.key))
    return out


def next_impact(r: ImpactResult) -> list[str]:
    out: list[str] = []
    sec = r.sections[0]
    if sec.ops:
        op = sec.ops[0][0].key
        out.append(call("find_similar_tests", op.split(".")[0]))
        out.append(call("trace", op))
    if any(c.kind is not CutKind.DEPTH for c in sec.cuts) and r.depth < 5:
        out.append(call("impact", _qualname(sec.function, sec.symbol), depth=r.depth + 1))
    return out


def next_cuda(r: CudaKernelsResult) -> list[str]:
    if r.query is None:
        return [call("cuda_kernels", "softmax"), call("search", "conv", backend="CUDA")]
    # the function that does the nearest device work, whatever its kind (Note [Nearest first])
    found: list[KernelLaunch | LibraryCall] = [*(k.launches[0] for k in r.kernels if k.launches), *r.helpers[:1],
                                               *r.libraries[:1]]
    found = [x for x in found if x.site.src.kind is not NodeKind.UNRESOLVED]
    first = min(found, key=near, default=None)
    out: list[str] = [call("calls", first.site.src.label)] if first else [call("trace", r.query, focus="dispatch")]
    if r.matched_kind is NodeKind.OP:  # tests are found for an op; for a C++ function or path:line they would be noise
        out.append(call("find_similar_tests", r.query))
    return out


def next_trace_module(r: TraceModuleResult) -> list[str]:
    out: list[str] = [call("trace", name) for name in list(r.ops)[:2]]
    out.append(call("find_similar_tests", r.query))
    return out


def next_list_modules(r: ListModulesResult) -> list[str]:
    first = _first(c for classes in r.groups.values() for c in classes)
    return [call("trace_module", first.fq)] if first else []


def next_similar_tests(r: SimilarTestsResult) -> list[str]:
    out: list[str] = []
    if r.tests:
        out.append(call("test_file_info", r.tests[0].loc.path))
    if r.total > len(r.tests):
        out.append(call("find_similar_tests", r.query, limit=full_limit(r.total)))
    return out


NEXT_UTILS = 60  # helpers a suggested list_test_utils call lists: ~160 characters each, about the answer budget


def next_test_utils(r: TestUtilsResult) -> list[str]:
    """The categories cut, each with a limit whose answer an agent can read at once (all of a small category; the
    first NEXT_UTILS of a large one: "limit=N shows all" in the answer still names the whole list)."""
    cuts = [c for c in r.groups if r.counts.get(c, 0) > len(r.groups[c])]
    return [call("list_test_utils", c, limit=min(full_limit(r.counts[c]), NEXT_UTILS)) for c in cuts]


# Ops nearly every test calls to build inputs: tests "for" them would be noise.
_SETUP_OPS = {"randn", "rand", "randint", "zeros", "ones", "empty", "full", "tensor", "arange", "to", "device",
              "size", "item", "clone", "detach", "cpu", "cuda", "float", "double", "view", "reshape", "manual_seed"}


def next_test_file(r: TestFileInfo) -> list[str]:
    out: list[str] = []
    page = r.page
    if page is not None and page.next_call:  # the next page of the test list
        filters = {k: v for k, v in (("class_name", page.class_name), ("query", page.query)) if v}
        out.append(call("test_file_info", r.path, **filters, offset=page.offset + len(page.tests)))
    ops = [op for op, _n in r.ops if op.rsplit(".", 1)[-1] not in _SETUP_OPS]
    return out + [call("find_similar_tests", op) for op in ops[:2]]


def next_affected(r: AffectedResult) -> list[str]:
    out: list[str] = []
    if r.ops:
        out.append(call("trace", r.ops[0].op.key))
    fn = _first(r.changed, lambda c: c.node.kind in (NodeKind.CPP_FUNCTION, NodeKind.GPU_KERNEL, NodeKind.STUB))
    if fn is not None:
        n = fn.node
        # path:line names exactly the changed definition; a stub goes by its name.
        name = n.key if n.kind is NodeKind.STUB or n.loc is None else f"{n.loc.path}:{n.loc.line}"
        # No op reached within the depth walked: the call that shows more goes a level further.
        depth = r.walked_depth if r.ops else r.walked_depth + 1
        out.append(call("impact", name, depth=min(max(depth, 2), IMPACT_MAX_DEPTH)))
    if r.modules:
        out.append(call("trace_module", r.modules[0].name))
    if r.ops:
        out.append(call("find_similar_tests", r.ops[0].op.key.split(".")[0]))
    return out


def unique(calls: list[str]) -> list[str]:
    seen: dict[str, None] = {}
    for c in calls:
        seen.setdefault(c, None)
    return list(seen)


def next_line(calls: list[str]) -> str:
    return "next: " + " · ".join(calls) if calls else ""
