"""Tools of the C++, Python and test layers (registered after the op-registry tools)."""

from __future__ import annotations


def extra_tools() -> list:
    from .query import callgraph, cuda
    from .render import callgraph as r_cg
    from .tools import REQUIRED, Param, Tool

    fn = Param("function_name", str, REQUIRED,
               "C++ function: index_select_cuda, at::native::add_out, TORCH_IMPL_FUNC(cumsum_out)")
    return [
        Tool("calls",
             "What a C++ function calls: resolved callees with file:line, ops it calls through the dispatcher "
             "(at::X, tensor.X()), DispatchStubs with each backend's kernel, GPU launches, and unresolved calls by "
             "name. Use it to read a kernel top-down.",
             (fn,), callgraph.calls, r_cg.render_calls),
        Tool("called_by",
             "Direct callers of a C++ function with the call site file:line, plus the registrations that point at "
             "it (YAML dispatch, REGISTER_DISPATCH, TORCH_LIBRARY_IMPL, Python bindings). Use it before changing "
             "a function's signature.",
             (fn,), callgraph.called_by, r_cg.render_called_by),
        Tool("impact",
             "Transitive callers of a C++ function, level by level up to `depth` (1..5), crossing the dispatcher "
             "(a kernel's op and whoever calls that op) and DispatchStubs, with the ops and Python entry points "
             "(torch.X, Tensor.X, torch._C.*) they reach. Use it to see what a change can break.",
             (fn, Param("depth", int, 3, "levels of callers, 1..5")), callgraph.impact, r_cg.render_impact),
        Tool("cuda_kernels",
             "GPU kernels (__global__) an op or function reaches, each with its definition file:line, its launch "
             "sites and the chain from the op's CUDA kernel; also launch helpers (gpu_kernel...). Without a name: a "
             "summary of the tree's GPU kernels.",
             (Param("function_name", str, None, "op or C++ function (omit for a summary)"),),
             cuda.cuda_kernels, r_cg.render_cuda),
    ]
