"""Tools of a change: affected."""

from __future__ import annotations

from ..query.change import affected
from ..query.change.diff import MAX_DIFF_CHARS, MAX_FILES
from ..query.change.lines import MAX_NAMES
from ..render import affected as r_affected
from ..render import next as nxt
from ..source.git import REV_HELP
from .table import FORMAT, Param, Tool

TOOLS = [
    Tool("affected",
         "What does this change touch, and which tests should I run? From a change to the ops, Python APIs, nn "
         "modules and tests it reaches, without a build: the changed definitions (C++/CUDA functions, kernels, "
         "DispatchStub registrations, native_functions.yaml entries, derivatives.yaml formulas, Python functions "
         "and classes, tests, OpInfo entries; code generators and templates by the layers they write), then up "
         "the graph across callers, stubs, the dispatcher, composite and backward ops and bindings, each op with "
         "its path from the change; tests ranked with the reason and a runnable command (OpInfo-driven tests, "
         "tests named after the op or module, tests calling its Python API, changed tests), CUDA variants for a "
         "CUDA-only change. Give a unified diff (`diff`), a git revision or range of the tree's checkout (`rev`), "
         "or `names`; in a checkout, nothing given means the working tree against HEAD. Limits: "
         f"{MAX_DIFF_CHARS:,} characters of diff, {MAX_FILES} files, {MAX_NAMES} names; per-file problems "
         "(binary, outside the tree, missing) are reported per file. "
         "Example: affected(\"aten/src/ATen/native/ReduceOps.cpp:491\")",
         (Param("names", str, None, "path:line, path:start-end, file paths, ops, C++ functions or Python names, "
                                    "comma-separated: 'aten/src/ATen/native/ReduceOps.cpp:495, cumsum'",
                metavar="NAMES"),
          Param("diff", str, None, "unified diff text (`git diff`, `diff -u`); the CLI reads it from --diff FILE "
                                   "or stdin", metavar="DIFF"),
          Param("rev", str, None, REV_HELP, metavar="REV"),
          Param("depth", int, 2, "levels of callers to walk up, 1..5 (calls; registrations cost none)",
                metavar="N"),
          Param("limit", int, 20, "how many tests, 1..500", metavar="N"), FORMAT),
         affected.affected, r_affected.render_affected, nxt.next_affected),
]
