"""The Python names through which an op or a hand-written binding is reached.

From the registry: ``variants: function`` gives ``torch.X`` (or the
``python_module`` namespace: ``torch._C._nn.X``, ``torch.linalg.X`` for
``linalg_X``...), ``variants: method`` gives ``Tensor.X``. From the C++ layer:
``PyMethodDef`` tables and pybind11 ``.def``. From the Python layer:
``torch.nn.functional`` names bound to ``torch._C._nn.X`` or ``torch.X``.
"""

from __future__ import annotations

import json
import sqlite3

from ..model import PY_MODULES, PyApiKind

Row = tuple[str, str, str, str, int, int]  # name, kind, op, target, file_id, line


def _op_rows(conn: sqlite3.Connection) -> list[Row]:
    rows: list[Row] = []
    for name, full, variants_json, module, tags_json, file_id, line in conn.execute(
            "SELECT name, full_name, variants, python_module, tags, file_id, line FROM op"):
        tags = json.loads(tags_json)
        if "generated" in tags and "view_copy" not in tags:
            continue  # gen_python_functions.py: ops torchgen generates whole get no Python binding
        variants = set(json.loads(variants_json))
        if "function" in variants:
            if module in PY_MODULES:
                c_mod, public, prefix = PY_MODULES[module]
                rows.append((f"{c_mod}.{name}", PyApiKind.PY_MODULE, full, "", file_id, line))
                if public and name.startswith(prefix):
                    rows.append((f"{public}.{name[len(prefix):]}", PyApiKind.PY_MODULE, full, "", file_id, line))
            else:
                rows.append((f"torch.{name}", PyApiKind.FUNCTION, full, "", file_id, line))
        if "method" in variants:
            rows.append((f"Tensor.{name}", PyApiKind.METHOD, full, "", file_id, line))
    return rows


def _functional_rows(conn: sqlite3.Connection, by_py: dict[str, list[str]]) -> list[Row]:
    """``torch.nn.functional.X = _add_docstr(torch._C._nn.X, ...)`` and the like."""
    rows: list[Row] = []
    if not conn.execute("SELECT 1 FROM sqlite_master WHERE name = 'py_assign'").fetchone():
        return rows
    for name, value, file_id, line, path in conn.execute(
            "SELECT a.name, a.value, a.file_id, a.line, f.path FROM py_assign a JOIN files f ON f.id = a.file_id "
            "WHERE f.path = 'torch/nn/functional.py'"):
        for full in by_py.get(value, ()):
            rows.append((f"torch.nn.functional.{name}", PyApiKind.FUNCTIONAL, full, value, file_id, line))
    return rows


# Generated binding files -> the Python namespace their method table fills.
GENERATED_NAMESPACES = (
    ("python_torch_functions", "torch"),
    ("python_variable_methods", "Tensor"),
    ("python_nn_functions", "torch._C._nn"),
    ("python_linalg_functions", "torch._C._linalg"),
    ("python_fft_functions", "torch._C._fft"),
    ("python_special_functions", "torch._C._special"),
    ("python_sparse_functions", "torch._C._sparse"),
    ("python_nested_functions", "torch._C._nested"),
)


def _generated_namespace(path: str) -> str | None:
    name = path.rsplit("/", 1)[-1]
    return next((ns for prefix, ns in GENERATED_NAMESPACES if name.startswith(prefix)), None)


def _generated_binding_rows(conn: sqlite3.Connection) -> list[Row]:
    """THPVariable_* bindings: one row per (Python name, op the binding calls), at the binding's definition."""
    binds: dict[int, list[str]] = {}
    for scope, value in conn.execute("SELECT scope, value FROM generated_fact WHERE kind = 'binds_op'"):
        binds.setdefault(scope, []).append(value)
    rows: list[Row] = []
    for name, target, file_id, line, path, sym_id, sym_line in conn.execute(
            "SELECT r.name, r.target, r.file_id, r.line, f.path, s.id, s.line FROM cpp_registration r "
            "JOIN files f ON f.id = r.file_id LEFT JOIN cpp_symbol s ON s.file_id = r.file_id "
            "AND s.name = r.target AND s.is_definition WHERE r.kind = 'pymethoddef' AND f.generated = 1"):
        ns = _generated_namespace(path)
        if ns is None:
            continue
        for op in dict.fromkeys(binds.get(sym_id, [""])):
            rows.append((f"{ns}.{name}", PyApiKind.GENERATED_BINDING, op, target, file_id, sym_line or line))
    return rows


def _binding_rows(conn: sqlite3.Connection) -> list[Row]:
    """Hand-written bindings: PyMethodDef entries and pybind11 .def."""
    rows: list[Row] = []
    for kind, name, target, key, file_id, line, path in conn.execute(
            "SELECT r.kind, r.name, r.target, r.key, r.file_id, r.line, f.path FROM cpp_registration r "
            "JOIN files f ON f.id = r.file_id WHERE r.kind IN ('pymethoddef', 'pybind_def') AND f.generated = 0"):
        if kind == "pymethoddef":
            # Tables of torch/csrc/Module.cpp are torch._C's own methods; the hand-written tables of the binding
            # files (python_torch_functions_manual.cpp) fill the same namespace as the generated ones; other
            # tables keep their name.
            owner = "torch._C" if path == "torch/csrc/Module.cpp" else (_generated_namespace(path) or key)
            rows.append((f"{owner}.{name}", PyApiKind.PYMETHODDEF, "", target, file_id, line))
        else:
            rows.append((name, PyApiKind.PYBIND, "", target, file_id, line))
    return rows


def python_api_rows(conn: sqlite3.Connection) -> list[Row]:
    rows = _op_rows(conn)
    by_py: dict[str, list[str]] = {}
    for name, _kind, op, *_ in rows:
        by_py.setdefault(name, []).append(op)
    rows += _functional_rows(conn, by_py)
    rows += _binding_rows(conn)
    rows += _generated_binding_rows(conn)
    return rows
