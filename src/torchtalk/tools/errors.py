"""Tools of error messages: error_origin."""

from __future__ import annotations

from ..query import errors
from ..query.error_text import EXAMPLE, MAX_INPUT
from ..render import errors as r_errors
from .table import FORMAT, REQUIRED, Param, Tool

TOOLS = [
    Tool("error_origin",
         "Where was this error raised, and what leads there? From an error message as PyTorch printed it (the "
         "exception line, or a whole traceback: the Python frames, 'Exception raised from ...' and C++ frames "
         "are stripped) to the line that raised it: the raise site (TORCH_CHECK and its variants, "
         "TORCH_INTERNAL_ASSERT, TORCH_WARN, throw, Python raise/warn/torch._check) with the check that failed, "
         "the enclosing function, then up the graph the ops and Python APIs that reach it (closest first, with "
         "the path) and tests to run. Sites printing the same text are all listed; a message no site prints "
         "well is answered with the pieces that matched where. "
         f"Example: error_origin({EXAMPLE!r})",
         (Param("message", str, REQUIRED, f"the error message or traceback as printed (up to {MAX_INPUT:,} "
                                          "characters are read); the CLI reads it from stdin when given '-'",
                metavar="MESSAGE"),
          Param("limit", int, errors.DEFAULT_LIMIT, f"how many raise sites, 1..{errors.MAX_SITES}", metavar="N"),
          FORMAT),
         errors.error_origin, r_errors.render_error_origin, r_errors.next_error_origin),
]
