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
             "What does this C++ function call? Resolved callees with file:line, ops it calls through the dispatcher "
             "(at::X, tensor.X()), DispatchStubs with each backend's kernel, GPU launches, and unresolved calls by "
             "name. Use it to read a kernel top-down. Example: calls(\"index_select_out_cuda\")",
             (fn,), callgraph.calls, r_cg.render_calls),
        Tool("called_by",
             "Who calls this C++ function, and what is registered to it? Direct callers with the call site file:line, plus the registrations that point at "
             "it (YAML dispatch, REGISTER_DISPATCH, TORCH_LIBRARY_IMPL, Python bindings). Use it before changing "
             "a function's signature. Example: called_by(\"at::native::index_select_out_cpu_\")",
             (fn,), callgraph.called_by, r_cg.render_called_by),
        Tool("impact",
             "What breaks if I change this C++ function? Its transitive callers, level by level up to `depth` (1..5), crossing the dispatcher "
             "(a kernel's op and whoever calls that op) and DispatchStubs, with the ops and Python entry points "
             "(torch.X, Tensor.X, torch._C.*) they reach. Example: impact(\"index_select_out_cpu_\", depth=2)",
             (fn, Param("depth", int, 3, "levels of callers, 1..5")), callgraph.impact, r_cg.render_impact),
        Tool("cuda_kernels",
             "Which CUDA kernels run for this op? The GPU kernels (__global__) an op or function reaches, each with its definition file:line, its launch "
             "sites and the chain from the op's CUDA kernel; also launch helpers (gpu_kernel...). Without a name: a "
             "summary of the tree's GPU kernels. Example: cuda_kernels(\"index_select\")",
             (Param("function_name", str, None, "op or C++ function (omit for a summary)"),),
             cuda.cuda_kernels, r_cg.render_cuda),
        Tool("trace_module",
             "How does this nn.Module or optimizer reach native code? From its class down to native ops: class file:line, resolved "
             "bases, constructor and forward (or step) signatures, what forward/step calls (self methods, "
             "torch.nn.functional, module functions) and the ops reached with their YAML file:line and kernels. "
             "Accepts 'Linear', 'nn.Linear', 'torch.nn.Linear', 'torch.optim.Adam', 'torch.nn.modules.linear.Linear'. "
             "Example: trace_module(\"nn.Linear\")",
             (Param("module_name", str, REQUIRED, "class: Linear, nn.Conv2d, torch.optim.Adam"),),
             modules.trace_module, r_mod.render_trace_module),
        Tool("list_modules",
             "Which nn modules, optimizers and schedulers exist, and where? Lists them with file:line: category 'nn' (nn.Module subclasses under "
             "torch.nn, grouped: activations, losses, normalization, containers, ...), 'optim' (Optimizer "
             "subclasses, and LR schedulers separately), 'all' (both); any other value searches class names. "
             "Example: list_modules(\"optim\")",
             (Param("category", str, "nn", "nn | optim | all | a name to search"),),
             modules.list_modules, r_mod.render_list_modules),
        Tool("find_similar_tests",
             "Which tests cover this, and how do I run them? Tests for an op, function or concept, ranked: test names first, then the OpInfo entries that the "
             "generic op tests use, then test bodies that call it; each with file:line and a runnable command "
             "(and the names PyTorch's device/dtype generators give it). Example: find_similar_tests(\"cumsum\")",
             (Param("query", str, REQUIRED, "op, function or concept: cumsum, softmax, torch.nn.Linear"),
              Param("limit", int, 20, "how many tests, 1..500")),
             tests.find_similar_tests, r_tests.render_similar_tests),
        Tool("list_test_utils",
             "Which test helpers exist (decorators, fixtures, assertions)? Helpers in torch/testing/_internal, derived "
             "from the source, with file:line and a line on each: "
             "category 'fixtures', 'assertions', 'decorators', ... or 'all'; most imported first. "
             "Example: list_test_utils(\"decorators\")",
             (Param("category", str, "all", "all | fixtures | assertions | decorators | ..."),
              Param("limit", int, 25, "how many per category, most imported first, 1..500")),
             tests.list_test_utils, r_tests.render_test_utils),
        Tool("test_file_info",
             "What is in this test file? Its classes with test counts, device-type and parametrized instantiation, the "
             "decorators and torch.testing._internal utilities it uses, and the ops it exercises. Accepts "
             "'test_torch', 'test_nn.py' or 'test/test_nn.py'; paths outside the source tree are refused. "
             "Example: test_file_info(\"test_torch\")",
             (Param("file_path", str, REQUIRED, "test file: test_torch, test_nn.py, test/test_nn.py"),),
             tests.test_file_info, r_tests.render_test_file),
    ]
