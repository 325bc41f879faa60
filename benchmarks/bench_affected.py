#!/usr/bin/env python3
"""How fast `affected` answers a 10-file change on a real PyTorch tree.

    python benchmarks/bench_affected.py --source "$(bash ../shared/get-pytorch-source | tail -n1)"

The change edits one line in each of ten files of every kind (a CPU kernel behind a
DispatchStub, a CUDA kernel, a structured kernel, a native_functions.yaml dispatch
line, a derivatives.yaml formula, an nn module's forward twice, a decomposition, a
vectorized CPU kernel and a header helper used by hundreds of kernels). The diff is
made in memory from the tree's own files (nothing is written to the tree), so the
tree holds its old side, as for a patch under review.

Printed: the first answer in this process (cold: the op registry, graph and test
tables are loaded on the way), then the median and maximum of warm answers; as a
baseline in the same process, the calls a user would make without `affected` (impact
on each changed C++ function and find_similar_tests on each op it reports, with the
caches `affected` warmed). Target: a 10-file diff answers in under 2 s on the 2-core machine.
"""

from __future__ import annotations

import argparse
import difflib
import statistics
import sys
import time
from pathlib import Path

EDITS = [  # (file, line, text, replacement)
    ("aten/src/ATen/native/cpu/ReduceOpsKernel.cpp", 80, "maybe_wrap_dim(dim, self.dim())",
     "maybe_wrap_dim(dim, self.dim(), true)"),
    ("aten/src/ATen/native/cuda/BinaryGeometricKernels.cu", 19, "::atan2(a, b)", "::atan2f(a, b)"),
    ("aten/src/ATen/native/SoftMax.cpp", 340, "not supported on CPU", "not supported on the CPU"),
    ("aten/src/ATen/native/native_functions.yaml", 9223, "CUDA: index_select_cuda", "CUDA: index_select_cuda_v2"),
    ("tools/autograd/derivatives.yaml", 1751, "tanh_backward(grad, result)", "tanh_backward(grad, result.conj())"),
    ("torch/nn/modules/linear.py", 125, "F.linear(input, self.weight, self.bias)",
     "F.linear(input, self.weight, bias=self.bias)"),
    ("torch/_decomp/decompositions.py", 372, "(self - target) ** 2", "(target - self) ** 2"),
    ("aten/src/ATen/WrapDimUtils.h", 18, "tensor->dim()", "tensor->dim(), true"),
    ("aten/src/ATen/native/cpu/SoftMaxKernel.cpp", 1212, "apply(result, self)", "apply(result, self.contiguous())"),
    ("torch/nn/modules/activation.py", 1672, "_stacklevel=5", "_stacklevel=6"),
]


def make_diff(root: Path) -> str:
    out = []
    for rel, line, old, new in EDITS:
        text = (root / rel).read_text(encoding="utf-8").split("\n")
        if old not in text[line - 1]:
            sys.exit(f"{rel}:{line} does not hold {old!r} in this tree (the edits are for PyTorch 2.6.0)")
        mod = list(text)
        mod[line - 1] = mod[line - 1].replace(old, new, 1)
        out += [x + "\n" for x in difflib.unified_diff(text, mod, f"a/{rel}", f"b/{rel}", lineterm="")]
    return "".join(out)


def timed(fn) -> tuple[float, object]:
    t0 = time.perf_counter()
    value = fn()
    return time.perf_counter() - t0, value


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--source", required=True, help="a PyTorch 2.6.0 source tree")
    ap.add_argument("--repeat", type=int, default=5, help="warm answers to time (default 5)")
    args = ap.parse_args()

    from torchtalk.index.indexer import refresh
    from torchtalk.source.tree import find_source
    from torchtalk.store.reader import Index
    from torchtalk.tools import answer, get_tool

    tree = find_source(args.source)
    refresh(tree, log=lambda m: print(m, file=sys.stderr))  # a no-op when the index is up to date
    diff = make_diff(tree.root)
    affected = get_tool("affected")

    ix = Index(tree.index_path, tree.root)
    cold, a = timed(lambda: answer(affected, ix, diff=diff))
    res = a.result
    warm = [timed(lambda: answer(affected, ix, diff=diff))[0] for _ in range(args.repeat)]

    # Without affected: impact on each changed C++ function, find_similar_tests on each op it reports.
    fns = [c.node for c in res.changed if c.node.kind.value in ("cpp_function", "gpu_kernel") and c.node.loc]
    ops = list(dict.fromkeys(r.op.key.split(".")[0] for r in res.ops))

    def manual() -> int:
        n = 0
        for node in fns:
            answer(get_tool("impact"), ix, function_name=f"{node.loc.path}:{node.loc.line}", depth=3)
            n += 1
        for op in ops:
            answer(get_tool("find_similar_tests"), ix, query=op, limit=20)
            n += 1
        return n

    manual_s, calls = timed(manual)
    ix.close()

    p50 = statistics.median(warm)
    print(f"affected on a {len(EDITS)}-file diff ({len(diff):,} characters), PyTorch tree {tree.root}")
    print(f"  answer: {len(res.files)} files, {len(res.changed)} changed, {res.ops_total} ops reached, "
          f"{res.tests_total} tests ranked, {len(res.cuts)} cut notes")
    print(f"  {'measure':<52} {'seconds':>8}  {'ratio':>8}")
    print(f"  {'first answer in this process (cold)':<52} {cold:8.3f}  {'':>8}  target < 2 s: "
          f"{'ok' if cold < 2 else 'MISSED'}")
    print(f"  {'warm answer, median of ' + str(args.repeat):<52} {p50:8.3f}  {'1.00x':>8}  target < 2 s: "
          f"{'ok' if p50 < 2 else 'MISSED'}")
    print(f"  {'warm answer, max':<52} {max(warm):8.3f}")
    print(f"  {f'baseline: {calls} impact/find_similar_tests calls, warm':<52} {manual_s:8.3f}  "
          f"{manual_s / p50:7.2f}x")
    return 0 if max(cold, p50) < 2 else 1


if __name__ == "__main__":
    sys.exit(main())
