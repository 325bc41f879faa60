"""Launches written through macros ``#define``d inside the launching function, on a fixture tree.

tests/fixtures/tree_cuda (over tests/fixtures/tree) holds TensorTopK.cu in the shape of PyTorch's:
launch_gather_topk_kernel defines RUN_K / RUN_MB / RUN_DIM / RUN_T in its body, with block comments on
continued lines, and calls mbtopk::launch and sbtopk::launch only through them. Every call such an expansion
writes is at the line of the outermost macro use (RUN_T(uint32_t), RUN_T(uint64_t)), in calls, called_by,
impact and cuda_kernels alike.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from torchtalk.tools import get_tool, run

OVERLAY = Path(__file__).parents[1] / "fixtures" / "tree_cuda"
TOPK_CU = "aten/src/ATen/native/cuda/TensorTopK.cu"
TOPK_OPS = """
- func: topk.values(Tensor self, SymInt k, int dim=-1, bool largest=True, bool sorted=True, *, Tensor(a!) values, \
Tensor(b!) indices) -> (Tensor(a!) values, Tensor(b!) indices)
  structured: True
  dispatch:
    CUDA: topk_out_cuda

- func: topk(Tensor self, SymInt k, int dim=-1, bool largest=True, bool sorted=True) -> (Tensor values, Tensor indices)
  variants: method, function
  structured_delegate: topk.values
"""


def _line_of(tree: Path, rel: str, text: str) -> int:
    lines = (tree / rel).read_text().splitlines()
    (n,) = [i for i, ln in enumerate(lines, 1) if text in ln]
    return n


@pytest.fixture
def topk(tree):
    """(tree, Index, {name: line}) of the fixture tree with TensorTopK and the topk ops."""
    from torchtalk.index.indexer import refresh
    from torchtalk.source.tree import find_source
    from torchtalk.store.reader import Index

    shutil.copytree(OVERLAY / "aten", tree / "aten", dirs_exist_ok=True)
    with open(tree / "aten/src/ATen/native/native_functions.yaml", "a") as f:
        f.write(TOPK_OPS)
    lines = {what: _line_of(tree, TOPK_CU, what) for what in (
        "RUN_T(uint32_t);", "RUN_T(uint64_t);", "#define RUN_K", "radixFindKthValues<T, IndexType><<<",
        "gatherTopK<T, IndexType, Dim><<<", "gatherTopK<T, IndexType, Dim, /* WithKthValues= */false><<<")}
    st = find_source(tree)
    refresh(st, workers=1, codegen=False)
    ix = Index(st.index_path, st.root)
    yield tree, ix, lines
    ix.close()


def test_calls_of_a_function_local_macro_are_at_the_line_it_is_used(topk):
    _, ix, at = topk
    uses = [at["RUN_T(uint32_t);"], at["RUN_T(uint64_t);"]]
    res, text = run(get_tool("calls"), ix, function_name="launch_gather_topk_kernel")
    sites = sorted((e.dst.label, e.site.line) for e in res.sections[0].calls if e.site.line in uses)
    # RUN_T -> RUN_DIM -> RUN_MB -> RUN_K: both launchers and the heuristic, once per use (RUN_DIM writes RUN_MB
    # twice, one call per distinct call at a line), never at the lines of the #defines
    assert sites == sorted((f"at::native::{fn}", line) for fn in ("mbtopk::launch", "sbtopk::launch",
                                                                 "should_use_multiblock") for line in uses)
    assert all(e.site.line not in range(at["#define RUN_K"], uses[0]) for e in res.sections[0].calls)
    assert f"at::native::sbtopk::launch  {TOPK_CU}:" in text and f"[called at {TOPK_CU}:{uses[1]}]" in text
    res, _ = run(get_tool("called_by"), ix, function_name="at::native::sbtopk::launch")
    assert [(e.src.label, e.site.path, e.site.line) for e in res.sections[0].callers] == [
        ("at::native::launch_gather_topk_kernel", TOPK_CU, line) for line in uses]


def test_impact_climbs_from_a_launcher_called_only_through_the_macros_to_the_op(topk):
    _, ix, at = topk
    res, text = run(get_tool("impact"), ix, function_name="at::native::mbtopk::launch", depth=3)
    sec = res.sections[0]
    assert [(e.src.label, e.site.line) for e in sec.levels[0].callers] == [
        ("at::native::launch_gather_topk_kernel", at["RUN_T(uint32_t);"])]
    assert [e.src.label for e in sec.levels[1].callers] == ["TORCH_IMPL_FUNC(topk_out_cuda)"]
    assert {op.key for op, _, _ in sec.ops} == {"topk", "topk.values"} and "torch.topk" in text


def test_cuda_kernels_of_the_op_reach_the_kernels_launched_through_the_macros(topk):
    tree, ix, at = topk
    res, text = run(get_tool("cuda_kernels"), ix, function_name="topk")
    got = {(k.definitions[0].qualname, k.definitions[0].line, launch.site.src.label, launch.site.site.line)
           for k in res.kernels for launch in k.launches}
    # two kernels named gatherTopK, one per namespace: each launcher launches its own
    assert got == {
        ("at::native::sbtopk::gatherTopK", 9, "at::native::sbtopk::launch",
         at["gatherTopK<T, IndexType, Dim, /* WithKthValues= */false><<<"]),
        ("at::native::mbtopk::radixFindKthValues", 26, "at::native::mbtopk::launch",
         at["radixFindKthValues<T, IndexType><<<"]),
        ("at::native::mbtopk::gatherTopK", 31, "at::native::mbtopk::launch", at["gatherTopK<T, IndexType, Dim><<<"]),
    }
    yaml_line = _line_of(tree, "aten/src/ATen/native/native_functions.yaml", "CUDA: topk_out_cuda")
    cpp_line = _line_of(tree, "aten/src/ATen/native/cuda/TensorTopK.cpp", "launch_gather_topk_kernel(self")
    chains = {tuple((e.dst.label, e.site.path, e.site.line) for e in launch.chain)
              for k in res.kernels for launch in k.launches}
    assert chains == {(("TORCH_IMPL_FUNC(topk_out_cuda)", "aten/src/ATen/native/native_functions.yaml", yaml_line),
                       ("at::native::launch_gather_topk_kernel", "aten/src/ATen/native/cuda/TensorTopK.cpp", cpp_line),
                       (f"at::native::{ns}::launch", TOPK_CU, at["RUN_T(uint32_t);"])) for ns in ("sbtopk", "mbtopk")}
    assert f"## __global__ gatherTopK  {TOPK_CU}:9\n" in text and f"## __global__ gatherTopK  {TOPK_CU}:31\n" in text
