"""Note [Stored GPU walks] (store/resolved.py): the store of resolved calls keeps each op's GPU walk, walked from the
calls it stores; cuda_kernels reads it instead of walking, and reads exactly what the walk finds."""

from __future__ import annotations

import shutil
import sqlite3

import pytest

import torchtalk.graph.gpu as gpu_mod
from torchtalk.graph.gpu import GPU_BACKENDS, HOPS, MAX_DEPTH, NOTHING_DEPTH, NOTHING_HOPS, gpu_reach, gpu_walk
from torchtalk.graph.graph import graph
from torchtalk.graph.nodes import CPP_KINDS, op_node
from torchtalk.graph.registry import registry
from torchtalk.graph.resolved import stored, without_store
from torchtalk.graph.resolved_build import build
from torchtalk.model import EdgeKind, runs_on
from torchtalk.source.tree import find_source
from torchtalk.store.reader import Index
from torchtalk.store.resolved import resolved_path
from torchtalk.tools import get_tool, run

from ..conftest import overlay_index
from .test_gpu_ops import NATIVE, OPS, OVERLAY

# An op whose kernel launches seven calls down: past MAX_DEPTH, found by the walk cuda_kernels looks further with
DEEP_OP = """
- func: deep_chain(Tensor self) -> Tensor
  dispatch:
    CUDA: deep_chain_cuda
"""
DEEP_CU = "namespace at { namespace native {\n__global__ void deep_chain_kernel(float* x) {}\n" + \
    "void deep_7(float* x) { deep_chain_kernel<<<1, 1>>>(x); }\n" + \
    "".join(f"void deep_{i}(float* x) {{ deep_{i + 1}(x); }}\n" for i in range(6, 0, -1)) + \
    "Tensor deep_chain_cuda(const Tensor& self) { deep_1(nullptr); return self; }\n}}\n"


@pytest.fixture
def gpu(tree):
    shutil.copytree(OVERLAY / "c10", tree / "c10", dirs_exist_ok=True)
    (tree / NATIVE / "cuda").mkdir(parents=True, exist_ok=True)
    (tree / NATIVE / "cuda/DeepChain.cu").write_text(DEEP_CU)
    ix = overlay_index(tree, OVERLAY, {f"{NATIVE}/native_functions.yaml": OPS + DEEP_OP})
    yield tree, ix
    ix.close()


def _walks(ix: Index) -> dict[tuple[str, str, int, int], object]:
    """Every op's walk at the default depth, the further one of deep_chain (found nothing, cut), and the walk below
    each kernel of an op for a key that runs on a GPU."""
    with ix.using():
        reg, g = registry(ix), graph(ix)
        out: dict[tuple[str, str, int, int], object] = {}
        for full, op in reg.by_full.items():
            out[("op", full, MAX_DEPTH, HOPS)] = gpu_walk(ix, op_node(op))
            for e in g.out(op_node(op), [EdgeKind.KERNEL]):
                if e.dst.kind in CPP_KINDS and any(runs_on(e.key, b) for b in GPU_BACKENDS):
                    out[(e.dst.kind.value, e.dst.key, MAX_DEPTH, HOPS)] = gpu_reach(ix, e.dst)
        for op in reg.lookup("deep_chain"):
            out[("op", op.full_name, NOTHING_DEPTH, NOTHING_HOPS)] = gpu_walk(ix, op_node(op), NOTHING_DEPTH,
                                                                              NOTHING_HOPS)
    return out


def _stored_keys(index_path) -> set[tuple[str, str, int, int]]:
    conn = sqlite3.connect(resolved_path(index_path))
    try:
        return set(conn.execute("SELECT kind, key, depth, hops FROM gpu_walk"))
    finally:
        conn.close()


def _answers(ix: Index) -> dict[tuple[str, str], str]:
    return {(tool, op): run(get_tool(tool), ix, function_name=op, **({"focus": "full"} if tool == "trace" else {}))[1]
            for op in ("deep_chain", "angle", "coalesce", "_coalesce") for tool in ("cuda_kernels", "trace")}


@pytest.fixture
def walked(gpu):
    tree, ix = gpu
    st = find_source(tree)
    without_store(ix)
    walks = _walks(ix)
    answers = _answers(ix)
    assert any("deep_chain_kernel" in text for text in answers.values()), "the further walk found the launch"
    assert sum(k[0] != "op" for k in walks) >= 3, "kernels of ops for GPU keys"
    return tree, st.index_path, walks, answers


@pytest.mark.parametrize("workers", [1, 2])
def test_each_op_reads_back_the_walk_it_would_make_and_no_walk_is_made(walked, workers, monkeypatch):
    tree, path, walks, answers = walked
    assert build(path, tree, workers=workers) is not None
    keys = _stored_keys(path)
    assert set(walks) == keys, "every op's walk, the further one where it is looked for, every GPU kernel's walk"
    assert ("op", "deep_chain", NOTHING_DEPTH, NOTHING_HOPS) in keys, \
        "deep_chain found nothing within the limits (and was cut): its further walk too"
    assert any(w.launches for w in walks.values()), "the fixture's walks find launches"  # type: ignore[attr-defined]

    def walked_again(*args, **kw):
        raise AssertionError("a walk was made, not read")

    monkeypatch.setattr(gpu_mod, "_op_walk", walked_again)
    monkeypatch.setattr(gpu_mod, "_reach", walked_again)
    fresh = Index(path, tree)
    with fresh.using():
        assert stored(fresh) is not None
    assert _walks(fresh) == walks
    assert _answers(fresh) == answers
    fresh.close()


def test_a_damaged_walk_is_walked_again_and_the_store_dropped(walked):
    tree, path, walks, answers = walked
    assert build(path, tree, workers=1) is not None
    conn = sqlite3.connect(resolved_path(path))
    conn.execute("UPDATE gpu_walk SET data = x'0badf00d'")
    conn.commit()
    conn.close()
    fresh = Index(path, tree)
    assert _answers(fresh) == answers
    assert not resolved_path(path).exists(), "dropped: the next background run computes it again"
    assert _walks(fresh) == walks
    fresh.close()


def test_a_walk_that_fails_while_stored_is_left_out_and_walked_when_asked(walked, monkeypatch, caplog):
    tree, path, _walks_made, answers = walked
    import torchtalk.graph.resolved_build as rb
    real = rb.gpu_walk

    def failing(ix, op, *args):
        if op.key == "angle":
            raise RuntimeError("a walk that fails")
        return real(ix, op, *args)

    monkeypatch.setattr(rb, "gpu_walk", failing)
    assert build(path, tree, workers=1) is not None, "the store is built without that walk"
    keys = _stored_keys(path)
    assert ("op", "angle", MAX_DEPTH, HOPS) not in keys and ("op", "angle.out", MAX_DEPTH, HOPS) in keys
    assert "the GPU walk of op angle failed; it is walked when asked" in caplog.text
    monkeypatch.undo()
    fresh = Index(path, tree)
    assert _answers(fresh) == answers
    fresh.close()
