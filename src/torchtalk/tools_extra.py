"""Tools of the C++, Python and test layers (registered after the op-registry tools)."""

from __future__ import annotations


def extra_tools() -> list:
    from .query import callgraph, cuda, modules, tests
    from .render import callgraph as r_cg
    from .render import modules as r_mod
    from .render import tests as r_tests
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
        Tool("trace_module",
             "An nn.Module, optimizer or LR scheduler from its class down to native ops: class file:line, resolved "
             "bases, constructor and forward (or step) signatures, what forward/step calls (self methods, "
             "torch.nn.functional, module functions) and the ops reached with their YAML file:line and kernels. "
             "Accepts 'Linear', 'nn.Linear', 'torch.nn.Linear', 'torch.optim.Adam', 'torch.nn.modules.linear.Linear'.",
             (Param("module_name", str, REQUIRED, "class: Linear, nn.Conv2d, torch.optim.Adam"),),
             modules.trace_module, r_mod.render_trace_module),
        Tool("list_modules",
             "List PyTorch's Python building blocks with file:line: category 'nn' (nn.Module subclasses under "
             "torch.nn, grouped: activations, losses, normalization, containers, ...), 'optim' (Optimizer "
             "subclasses, and LR schedulers separately), 'all' (both); any other value searches class names.",
             (Param("category", str, "nn", "nn | optim | all | a name to search"),),
             modules.list_modules, r_mod.render_list_modules),
        Tool("find_similar_tests",
             "Tests for an op, function or concept, ranked: test names first, then the OpInfo entries that the "
             "generic op tests use, then test bodies that call it; each with file:line and a runnable command "
             "(and the names PyTorch's device/dtype generators give it). Use it to know what to run after a change.",
             (Param("query", str, REQUIRED, "op, function or concept: cumsum, softmax, torch.nn.Linear"),
              Param("limit", int, 20, "how many tests, 1..500")),
             tests.find_similar_tests, r_tests.render_similar_tests),
        Tool("list_test_utils",
             "Helpers in torch/testing/_internal, derived from the source, with file:line and a line on each: "
             "category 'fixtures', 'assertions', 'decorators', ... or 'all'.",
             (Param("category", str, "all", "all | fixtures | assertions | decorators | ..."),
              Param("limit", int, 25, "how many per category, most imported first, 1..500")),
             tests.list_test_utils, r_tests.render_test_utils),
        Tool("test_file_info",
             "One test file: its classes with test counts, device-type and parametrized instantiation, the "
             "decorators and torch.testing._internal utilities it uses, and the ops it exercises. Accepts "
             "'test_torch', 'test_nn.py' or 'test/test_nn.py'; paths outside the source tree are refused.",
             (Param("file_path", str, REQUIRED, "test file: test_torch, test_nn.py, test/test_nn.py"),),
             tests.test_file_info, r_tests.render_test_file),
    ]
