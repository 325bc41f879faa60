"""The call sites the GPU walk skips (Note [Sites the GPU walk skips] in graph/device_reach.py), on a fixture tree.

tests/fixtures/tree_gpu_skip (over tests/fixtures/tree): skipper's CUDA kernel calls TORCH_CHECK (a macro the
tree does not define: skipped), CHECK_AND_LAUNCH (written like a macro, defined: kept), a template handed an
object whose method launches, and a local functor whose operator() launches.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from torchtalk.graph.cpp_edges import out_edges
from torchtalk.graph.device_reach import device_out_edges, skips
from torchtalk.graph.nodes import cpp_node
from torchtalk.graph.symbols import calls_from, defs_by_name
from torchtalk.model import EdgeHow, EdgeKind
from torchtalk.tools import get_tool, run

from ..conftest import overlay_index

OVERLAY = Path(__file__).parents[1] / "fixtures" / "tree_gpu_skip"
OPS = """
- func: skipper(Tensor self) -> Tensor
  dispatch:
    CUDA: skipper_cuda
"""


@pytest.fixture
def ix(tree):
    yield overlay_index(tree, OVERLAY, {"aten/src/ATen/native/native_functions.yaml": OPS})


def _kernel(ix):
    (sym,) = [s for s in defs_by_name(ix, "skipper_cuda") if s.is_definition]
    return sym


def test_an_undefined_macro_is_skipped_and_nothing_else(ix):
    calls = calls_from(ix, _kernel(ix).id)
    assert {c.callee for c in calls if skips(ix, c)} == {"TORCH_CHECK"}
    # kept: a defined function written like a macro, a template handed an object, a local functor called
    assert {c.callee for c in calls if not skips(ix, c)} == {"dim", "apply_launcher", "op", "CHECK_AND_LAUNCH"}


def test_the_skip_drops_only_edges_the_walk_never_takes(ix):
    node = cpp_node(_kernel(ix))
    full, kept = out_edges(ix, node), device_out_edges(ix, node)
    dropped = [e for e in full if e not in kept]
    assert [e.written for e in dropped] == ["TORCH_CHECK"]
    assert all(e.kind is EdgeKind.UNRESOLVED and e.how is EdgeHow.MACRO for e in dropped)
    assert [e for e in full if e not in dropped] == kept


def test_launches_behind_sites_that_do_not_name_them_are_reached(ix):
    kept = device_out_edges(ix, cpp_node(_kernel(ix)))
    assert any(e.how is EdgeHow.HANDED and "Launcher::run" in e.dst.label for e in kept), kept
    assert any(e.written == "op" and "operator()" in e.dst.label for e in kept), kept
    _, text = run(get_tool("cuda_kernels"), ix, function_name="skipper")
    for kernel in ("handed_kernel", "functor_kernel", "macro_named_kernel"):
        assert kernel in text, text
