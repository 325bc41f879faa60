"""Tools of the op registry: get_status, trace, search."""

from __future__ import annotations

from ..query import search as q_search
from ..query import status as q_status
from ..query import trace as q_trace
from ..render import basic
from ..render import next as nxt
from ..render import trace as r_trace
from . import knows
from .table import FORMAT, REQUIRED, Param, Tool

TOOLS = [
    Tool("get_status",
         "What is indexed, from which tree, and is it fresh? The PyTorch source tree and version, the index file, "
         "when it was built and whether it is fresh, and per layer (op registry, bindings, C++ call graph, "
         "Python modules, tests) its counts and readiness. Use it first, or when answers look incomplete. "
         "Example: get_status()",
         (), q_status.status, basic.render_status, lambda _r: []),
    Tool("trace",
         "Where and how is this op implemented? Follows one op from Python to kernels: its native_functions.yaml "
         "entries (every overload, or the one named like 'add.Tensor'; ops torchgen autogenerates too), the "
         "kernel per dispatch key (following structured_delegate), the C++ definitions with file:line, the "
         "DispatchStubs with each backend's kernel, the ops a composite kernel calls, CUDA kernels, generated "
         "bindings and wrappers, and the derivatives.yaml formulas with the backward ops they call. Python names "
         "work too: torch.add, Tensor.add_, F.relu (through its body), torch.set_num_threads (a C++ binding). "
         "focus='yaml' shows the registry entries and derivatives, 'dispatch' the kernels per key with stubs, "
         "'full' everything. Example: trace(\"softmax\", focus=\"dispatch\")",
         (Param("function_name", str, REQUIRED, "op or Python name: softmax, add.Tensor, aten::add, torch.add, F.relu",
                metavar="NAME"),
          Param("focus", str, "full", "yaml | dispatch | full", q_trace.FOCUS), FORMAT),
         q_trace.trace, r_trace.render_trace, nxt.next_trace, knows.op),
    Tool("search",
         "What is the exact name of the op, kernel or class I mean? Finds ops, their kernels, Python bindings, "
         "functions and classes, C++ functions and classes, GPU kernels, DispatchStubs and autograd nodes by name "
         "(exact, then prefix, then substring), spelled as code writes it (at::native::add_out, aten::add, "
         "torch.Tensor.add_, F.layer_norm, torch.nn.Linear, at::TensorIterator) or as words ('flash attention'); a "
         "name nothing contains is not found, with close matches. Optionally "
         "only ops with a kernel for one dispatch key (backend='CUDA', 'MPS', 'QuantizedCPU'...). Use it when you "
         "do not know the exact name. Example: search(\"conv\", backend=\"CUDA\")",
         (Param("query", str, REQUIRED, "name or part of a name", metavar="TEXT"),
          Param("backend", str, None, "dispatch key to filter on, case-insensitive (CPU, CUDA, MPS, ...)",
                metavar="KEY"),
          Param("limit", int, 20, "how many results, 1..500", metavar="N")),
         q_search.search, basic.render_search, nxt.next_search, knows.search_finds),
]
