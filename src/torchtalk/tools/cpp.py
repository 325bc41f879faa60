"""Tools of the C++ layer: calls, called_by, impact, cuda_kernels."""

from __future__ import annotations

from ..query import callgraph, cuda
from ..render import callgraph as r_cg
from ..render import cuda as r_cuda
from ..render import next as nxt
from . import knows
from .table import FORMAT, REQUIRED, Param, Tool

_FN = Param("function_name", str, REQUIRED,
            "C++ function or DispatchStub: index_select_cuda, at::native::add_out, TORCH_IMPL_FUNC(cumsum_out), "
            "add_stub, or path:line of a definition", metavar="FUNCTION")

TOOLS = [
    Tool("calls",
         "What does this C++ function call? Resolved callees with file:line, ops it calls through the dispatcher "
         "(at::X, at::X_symint, at::_ops::X::call, tensor.X()), DispatchStubs with each backend's kernel, GPU "
         "launches, and unresolved calls by name. A name several functions share gets a section each; a "
         "DispatchStub gets its kernel per backend. Use it to read a kernel top-down. "
         "Example: calls(\"index_select_out_cuda\")",
         (_FN, FORMAT), callgraph.calls, r_cg.render_calls, nxt.next_calls_of, knows.function),
    Tool("called_by",
         "Who calls this C++ function or DispatchStub, and what is registered to it? Direct callers with the call "
         "site file:line, plus the registrations that point at it (YAML dispatch, REGISTER_DISPATCH, "
         "TORCH_LIBRARY_IMPL, Python bindings); for a stub, its callers and the kernel each backend registers. "
         "Use it before changing a function's signature. Example: called_by(\"at::native::index_select_out_cpu_\")",
         (_FN, FORMAT), callgraph.called_by, r_cg.render_called_by, nxt.next_called_by, knows.function),
    Tool("impact",
         "What breaks if I change this C++ function or DispatchStub? Its transitive callers, level by level up to "
         "`depth` (1..5), crossing the dispatcher (a kernel's op and whoever calls that op) and DispatchStubs, "
         "with the ops and Python entry points (torch.X, Tensor.X, torch._C.*) they reach. "
         "Example: impact(\"index_select_out_cpu_\", depth=2)",
         (_FN, Param("depth", int, 3, "levels of callers, 1..5", metavar="N"), FORMAT),
         callgraph.impact, r_cg.render_impact, nxt.next_impact, knows.function),
    Tool("cuda_kernels",
         "Which CUDA kernels run for this op? The GPU kernels (__global__) an op or function reaches, each with its "
         "definition file:line, its launch sites and the chain from the op, following composite kernels into the "
         "ops they call and the op's backward (marked [backward] with the formula's line); launch families "
         "(gpu_kernel, gpu_reduce_kernel, multi_tensor_apply...: the lambda or functor and the __global__ template "
         "they launch) and library calls (cuBLAS, cuDNN, CUB, ...). The op's own code first; another op's is "
         "marked. Without a name: a summary of the tree's GPU kernels. Example: cuda_kernels(\"softmax\")",
         (Param("function_name", str, None, "op, C++ function or GPU kernel (omit for a summary)", metavar="NAME"),
          FORMAT),
         cuda.cuda_kernels, r_cuda.render_cuda, nxt.next_cuda, knows.op_or_function),
]
