"""Counts per component, computed at build time so get_status never scans big tables."""

from __future__ import annotations

import sqlite3

from ..model import PyApiKind

# component -> {label: SQL returning one number}
COMPONENTS: dict[str, dict[str, str]] = {
    "op registry": {
        "ops (overloads)": "SELECT count(*) FROM op",
        "op base names": "SELECT count(DISTINCT name) FROM op",
        "dispatch entries": "SELECT count(*) FROM op_dispatch",
        "structured ops": "SELECT count(*) FROM op WHERE structured",
        "derivatives": "SELECT count(*) FROM derivative",
        "tags": "SELECT count(*) FROM tag",
    },
    "bindings": {
        "Python names of ops": f"SELECT count(*) FROM py_api WHERE op != '' AND kind != '{PyApiKind.GENERATED_BINDING}'",
        "generated bindings (THPVariable_*)":
            f"SELECT count(DISTINCT target) FROM py_api WHERE kind = '{PyApiKind.GENERATED_BINDING}'",
        "PyMethodDef entries": f"SELECT count(*) FROM py_api WHERE kind = '{PyApiKind.PYMETHODDEF}'",
        "pybind11 defs": f"SELECT count(*) FROM py_api WHERE kind = '{PyApiKind.PYBIND}'",
    },
    "C++ call graph": {
        "C++/CUDA files": "SELECT count(*) FROM files WHERE layer = 'cpp'",
        "functions": "SELECT count(*) FROM cpp_symbol WHERE is_definition",
        "declarations": "SELECT count(*) FROM cpp_symbol WHERE NOT is_definition",
        "call sites": "SELECT count(*) FROM cpp_call",
        "structured kernels (TORCH_IMPL_FUNC)": "SELECT count(*) FROM cpp_symbol WHERE kind = 'impl_func'",
        "DispatchStub registrations": "SELECT count(*) FROM cpp_registration WHERE kind = 'register_dispatch'",
        "TORCH_LIBRARY defs/impls": "SELECT count(*) FROM cpp_registration WHERE kind IN ('library_def', 'library_impl')",
        "GPU kernels (__global__)": "SELECT count(*) FROM cpp_symbol WHERE kind = 'global_kernel'",
        "kernel launch sites": "SELECT count(*) FROM cpp_call WHERE kind IN ('launch', 'gpu_launch')",
        "Metal kernels": "SELECT count(*) FROM cpp_symbol WHERE kind = 'metal_kernel'",
    },
    "generated code": {
        "generated files": "SELECT count(*) FROM files WHERE generated = 1",
        "generated functions": "SELECT count(*) FROM cpp_symbol WHERE is_definition AND file_id IN "
                               "(SELECT id FROM files WHERE generated = 1)",
        "dispatcher registrations (m.impl)": "SELECT count(*) FROM cpp_registration WHERE kind = 'library_impl' "
                                             "AND file_id IN (SELECT id FROM files WHERE generated = 1)",
        "autograd nodes created": "SELECT count(DISTINCT value) FROM generated_fact WHERE kind = 'grad_fn'",
    },
    "Python modules": {
        "Python files": "SELECT count(*) FROM files WHERE layer = 'python'",
        "classes": "SELECT count(*) FROM py_class",
        "functions": "SELECT count(*) FROM py_function",
        "decompositions/refs/lowerings": "SELECT count(*) FROM py_op_ref",
    },
    "tests": {
        "test files": "SELECT count(*) FROM files WHERE layer = 'tests'",
        "test classes": "SELECT count(*) FROM test_class",
        "test functions": "SELECT count(*) FROM test_method",
        "OpInfo entries": "SELECT count(*) FROM op_info_entry",
        "test utilities": "SELECT count(*) FROM test_util",
    },
}


def layer_counts(conn: sqlite3.Connection) -> dict[str, dict[str, int]]:
    out: dict[str, dict[str, int]] = {}
    for component, queries in COMPONENTS.items():
        out[component] = {}
        for label, sql in queries.items():
            out[component][label] = conn.execute(sql).fetchone()[0]
    return out
