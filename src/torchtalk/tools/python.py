"""Tools of the Python layer: trace_module, list_modules."""

from __future__ import annotations

from ..query import modules
from ..render import modules as r_mod
from ..render import next as nxt
from . import knows
from .table import FORMAT, REQUIRED, Param, Tool

TOOLS = [
    Tool("trace_module",
         "How does this nn.Module or optimizer reach native code? From its class down to native ops: class "
         "file:line, resolved bases, constructor and forward (or step) signatures, what forward/step calls (self "
         "methods, torch.nn.functional, module functions) and the ops reached with their YAML file:line and kernels. "
         "Accepts 'Linear', 'nn.Linear', 'torch.nn.Linear', 'torch.optim.Adam', 'torch.nn.modules.linear.Linear'. "
         "Example: trace_module(\"nn.Linear\")",
         (Param("module_name", str, REQUIRED, "class: Linear, nn.Conv2d, torch.optim.Adam", metavar="CLASS"), FORMAT),
         modules.trace_module, r_mod.render_trace_module, nxt.next_trace_module, knows.module),
    Tool("list_modules",
         "Which nn modules, optimizers and schedulers exist, and where? Lists them with file:line: category 'nn' "
         "(nn.Module subclasses under torch.nn, grouped: activations, losses, normalization, containers, ...), "
         "'optim' (Optimizer subclasses, and LR schedulers separately), 'all' (both); a module path "
         "(torch.nn.modules.loss) lists the classes defined under it; any other value searches class names. "
         "Example: list_modules(\"optim\")",
         (Param("category", str, "nn", "nn | optim | all | a module path | a name to search", metavar="CATEGORY"),),
         modules.list_modules, r_mod.render_list_modules, nxt.next_list_modules),
]
