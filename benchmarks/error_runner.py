"""Run inside the torch venv by bench_error_origin.py: run each case, print what it raised as JSON.

Reads the cases as JSON on stdin; for each, the exception's class (as Python prints it), its
message (``str(e)``; with TORCH_SHOW_CPP_STACKTRACES=1 a C++ error's text ends with
"Exception raised from f at path:line"), the traceback's frames and the text
``traceback.format_exception`` prints; for a warning, the category, message and the stack at
the ``warnings.warn`` call (the frame that warned; a C++ warning says where it was raised in
its text instead). Imports nothing but the standard library and torch.
"""

from __future__ import annotations

import json
import sys
import traceback
import warnings


def main() -> None:
    cases = json.load(sys.stdin)
    import torch
    from torch import nn
    from torch.nn import functional as F  # noqa: N812

    stacks: dict[str, list[tuple[str, int, str]]] = {}
    original = warnings.warn

    def spy(message, *args, **kwargs):  # the stack at the warn call: its caller is the warning's site
        stacks.setdefault(str(message), [(f.filename, f.lineno or 0, f.name)
                                         for f in traceback.extract_stack()[:-1]])
        return original(message, *args, **kwargs)

    warnings.warn = spy
    out = []
    for name, category, code in cases:
        row = {"name": name, "category": category, "code": code}
        ns = {"torch": torch, "nn": nn, "F": F, "warnings": warnings}
        stacks.clear()
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            try:
                exec(code, ns)  # noqa: S102 - the benchmark's own cases
            except Exception as e:  # noqa: BLE001 - every error is what the benchmark wants
                cls = type(e)
                row["exception"] = cls.__name__ if cls.__module__ == "builtins" else f"{cls.__module__}.{cls.__name__}"
                row["message"] = str(e)
                row["frames"] = [(f.filename, f.lineno or 0, f.name) for f in traceback.extract_tb(e.__traceback__)]
                row["printed"] = "".join(traceback.format_exception(e))
        own = [w for w in caught if "numpy" not in str(w.message).lower()]
        if "message" not in row and own:
            w = own[0]
            row["exception"] = w.category.__name__
            row["message"] = str(w.message)
            row["frames"] = stacks.get(str(w.message), [])
            row["printed"] = f"{w.filename}:{w.lineno}: {w.category.__name__}: {w.message}"
        out.append(row)
    json.dump(out, sys.stdout)


if __name__ == "__main__":
    main()
