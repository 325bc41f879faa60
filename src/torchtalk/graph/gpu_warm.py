"""The GPU warm-up: the code most GPU walks pass, walked before the first question (Note [The GPU warm-up])."""

from __future__ import annotations

from ..store.reader import Index
from .gpu import gpu_reach, gpu_walk, is_cuda_path
from .nodes import cpp_node, op_node
from .op_spellings import op_named
from .registry import registry
from .symbols import defs_by_name

# Note [The GPU warm-up]
# A first GPU answer (cuda_kernels, trace's GPU lines) spent most of its time in code every GPU walk passes:
# TensorIterator, the launch families, the allocator, streams, the dispatch and check helpers. Measured on 2.6.0:
# cuda_kernels("softmax") 0.69 s CPU alone, 0.10 s after the walks below; group_norm 0.69 -> 0.20 s,
# trace("relu") 0.77 -> 0.17 s, conv2d 1.38 -> 0.65 s (its own cuDNN code stays). The shared code is found by
# mechanism, not by name: the WARM_NAMES names called by the most functions of CUDA sources, each definition of
# them (at most WARM_DEFS) walked as gpu_reach walks it, filling the memos every later walk reads. The server
# runs it in its background warm-up (2.5-3 s of CPU on 2.6.0 for 150 names); answers are byte-identical with
# or without it, only sooner.
#
# The same ranking, longer (WARM_OP_NAMES), also names the ops most CUDA code calls through the dispatcher
# (``empty``, ``copy_``, ``select``, ``zeros``, ``contiguous``: 83 ops of the first 400 names on 2.6.0): a walk
# below a kernel reaches them by DISPATCH_CALL edges and walks their kernels for CUDA, so their own op walks
# (as cuda_kernels walks an op) are walked too. Measured on 2.6.0, a first answer after the warm-up:
# cuda_kernels("conv2d") 336 -> 214 ms CPU, ("scaled_dot_product_attention") 347 -> 272 ms; the warm-up
# 4.35 -> 5.79 s of CPU and 17 MB more. Answers are byte-identical with or without it.
WARM_NAMES = 150
WARM_OP_NAMES = 400
WARM_DEFS = 4


def warm_shared(ix: Index, names: int = WARM_NAMES, op_names: int = WARM_OP_NAMES) -> int:
    """Walk the code most GPU walks share (Note [The GPU warm-up]); the number of functions and ops walked."""
    cuda_files = [fid for fid, path in ix.paths().items() if is_cuda_path(path)]  # 716 of 7,505 on 2.6.0
    marks = ",".join("?" * len(cuda_files))
    rows = ix.q(f"SELECT callee FROM cpp_call WHERE caller IS NOT NULL AND file_id IN ({marks}) "
                "GROUP BY callee ORDER BY COUNT(DISTINCT caller) DESC, callee LIMIT ?",
                (*cuda_files, max(names, op_names)))
    walked = 0
    for (name,) in rows[:names]:
        for fn in defs_by_name(ix, name)[:WARM_DEFS]:
            gpu_reach(ix, cpp_node(fn))
            walked += 1
    reg = registry(ix)
    ops = dict.fromkeys(full for (name,) in rows[:op_names] for full in op_named(reg, name))
    for full in ops:
        gpu_walk(ix, op_node(reg.by_full[full]))  # the node cuda_kernels starts an op's walk from
        walked += 1
    return walked
