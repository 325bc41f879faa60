"""The Python names through which an op or a hand-written binding is reached.

From the registry: ``variants: function`` gives ``torch.X`` (or the
``python_module`` namespace: ``torch._C._nn.X``, ``torch.linalg.X`` for
``linalg_X``...), ``variants: method`` gives ``Tensor.X``. From the C++ layer:
``PyMethodDef`` tables and pybind11 ``.def``. From the Python layer:
``torch.nn.functional`` names bound to ``torch._C._nn.X`` or ``torch.X``.
"""

from __future__ import annotations

import json
import re
import sqlite3
from collections.abc import Callable

from ..model import PY_MODULES, PyApiKind

Row = tuple[str, str, str, str, int, int]  # name, kind, op, target, file_id, line


def _op_rows(conn: sqlite3.Connection, bound: Callable[[str, str], bool] = lambda _n, _o: True) -> list[Row]:
    """The names native_functions.yaml gives an op (``variants``, ``python_module``) that ``bound`` (Python name,
    op) keeps: with the generated layer, the ones its bindings bind (Note [Bound names])."""
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
                if bound(f"{c_mod}.{name}", full):
                    rows.append((f"{c_mod}.{name}", PyApiKind.PY_MODULE, full, "", file_id, line))
                    if public and name.startswith(prefix):
                        rows.append((f"{public}.{name[len(prefix):]}", PyApiKind.PY_MODULE, full, "", file_id,
                                     line))
            elif bound(f"torch.{name}", full):
                rows.append((f"torch.{name}", PyApiKind.FUNCTION, full, "", file_id, line))
        if "method" in variants and bound(f"Tensor.{name}", full):
            rows.append((f"Tensor.{name}", PyApiKind.METHOD, full, "", file_id, line))
    return rows


def _functional_rows(conn: sqlite3.Connection, by_py: dict[str, list[str]]) -> list[Row]:
    """``torch.nn.functional.X = _add_docstr(torch._C._nn.X, ...)`` and the like."""
    rows: list[Row] = []
    if not conn.execute("SELECT 1 FROM sqlite_master WHERE name = 'py_assign'").fetchone():
        return rows
    for name, value, file_id, line in conn.execute(
            "SELECT a.name, a.value, a.file_id, a.line FROM py_assign a JOIN files f ON f.id = a.file_id "
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


def generated_namespace(path: str) -> str | None:
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
        ns = generated_namespace(path)
        if ns is None:
            continue
        for op in dict.fromkeys(binds.get(sym_id, [""])):
            rows.append((f"{ns}.{name}", PyApiKind.GENERATED_BINDING, op, target, file_id, sym_line or line))
    return rows


class PybindModules:
    """The Python module a pybind11 object of hand-written binding code is, from the PY_MODULE facts of
    extract/bindtext.py: ``import("torch")``, ``parent.def_submodule("_jit")``, a cast of another object,
    or of the function's ``PyObject*`` parameter, which is the object of that name its callers hold
    (``initJITBindings(module)`` called from Module.cpp's ``initModule``, where ``module`` is
    ``PyModule_Create`` of the PyModuleDef named "torch._C")."""

    MAX_DEPTH = 6

    def __init__(self, conn: sqlite3.Connection):
        self.conn = conn
        self.vars: dict[int, dict[str, list[tuple[int, list[str]]]]] = {}
        for value, scope, line in conn.execute(
                "SELECT value, scope, line FROM generated_fact WHERE kind = 'py_module' AND scope >= 0"):
            var, *how = value.split(" ")
            self.vars.setdefault(scope, {}).setdefault(var, []).append((line, how))
        self._params: dict[int, tuple[str, str]] = {}
        self._memo: dict[tuple[int, str], str | None] = {}

    def _symbol(self, scope: int) -> tuple[str, str]:
        if scope not in self._params:
            row = self.conn.execute("SELECT name, params FROM cpp_symbol WHERE id = ?", (scope,)).fetchone()
            self._params[scope] = (row[0], row[1] or "") if row else ("", "")
        return self._params[scope]

    def of(self, scope: int, var: str, depth: int = 0) -> str | None:
        """The dotted module ``var`` is inside the function ``scope``, or the dotted class for a class object
        (``torch._C._distributed_c10d.Backend``); None when the code does not say."""
        key = (scope, var)
        if key in self._memo:
            return self._memo[key]
        self._memo[key] = None  # cycles end here
        found = None
        if depth <= self.MAX_DEPTH:
            facts = sorted(self.vars.get(scope, {}).get(var, []))
            if facts:
                how = facts[-1][1]
                if how[0] == "import":
                    found = how[1]
                elif how[0] == "sub":
                    parent = self.of(scope, how[1], depth + 1)
                    found = f"{parent}.{how[2]}" if parent else None
                elif how[0] == "of" and how[1] != var:
                    found = self.of(scope, how[1], depth + 1)
                elif how[0] == "class" and how[1] != var:  # a class object: the class, in what holds it
                    parent = self.of(scope, how[1], depth + 1)
                    found = f"{parent}.{how[2]}" if parent else None
            elif re.search(rf"\bPyObject\s*\*\s*{re.escape(var)}\b", self._symbol(scope)[1]):
                found = self._passed(scope, var, depth + 1)
        self._memo[key] = found
        return found

    def is_class(self, scope: int, var: str) -> bool:
        """Whether ``var`` holds a class object (``py::class_<X> var(m, "X")``), not a module."""
        facts = sorted(self.vars.get(scope, {}).get(var, []))
        return bool(facts) and facts[-1][1][0] == "class"

    def _passed(self, scope: int, param: str, depth: int) -> str | None:
        """A ``PyObject*`` parameter: the module its callers hold under the same name, else under their own
        single ``PyObject*`` parameter (``initPythonIRBindings(module)`` inside ``initJITBindings(PyObject*
        module)`` for the parameter ``module_``)."""
        name = self._symbol(scope)[0]
        if not name:
            return None
        callers = [c for (c,) in self.conn.execute(
            "SELECT DISTINCT caller FROM cpp_call WHERE callee = ? AND caller >= 0 LIMIT 20", (name,))]
        for caller in callers:
            found = self.of(caller, param, depth)
            if not found:
                own = _PYOBJECT_PARAM.findall(self._symbol(caller)[1])
                found = self.of(caller, own[0], depth) if len(own) == 1 and own[0] != param else None
            if found:
                return found
        return None


_PYOBJECT_PARAM = re.compile(r"\bPyObject\s*\*\s*(\w+)")
_CLASS_ARG = re.compile(r"^[\w:]*(?:class_|enum_)\s*<.*?>\s*\(\s*(\w+)\s*,", re.S)


def _pybind_module(mods: PybindModules, scope: int, root: str) -> str | None:
    """The module of a .def chain's root: a module variable (``m.def``) or a class made on one
    (``py::class_<X>(m, "X").def``)."""
    if scope is None or scope < 0:
        return None
    m = _CLASS_ARG.match(root)
    var = m.group(1) if m else root
    if not var.isidentifier():
        return None
    found = mods.of(scope, var)
    if found and not m and mods.is_class(scope, var):  # reduce_op.def("op"): named ReduceOp.op, in ReduceOp's holder
        return found.rsplit(".", 1)[0]
    return found


# Python names the py_api table uses for classes whose methods users reach under another name:
# torch.Tensor derives from torch._C.TensorBase (torch/_tensor.py); torch/__init__.py copies the functions of
# torch._C._VariableFunctions into torch.
_TYPE_NAMESPACES = {"torch._C.TensorBase": "Tensor", "torch._C._TensorBase": "Tensor",
                    "torch._C._VariableFunctionsClass": "torch"}


def table_owners(conn: sqlite3.Connection) -> dict[tuple[int, str], str]:
    """(file, PyMethodDef or PyGetSetDef table) -> the Python module or class its entries become attributes of, from
    the PY_METHODS facts of extract/bindtext.py: a table (or a vector it is added to with THPUtils_addPyMethodDefs,
    directly or through ``PyMethodDef* python_functions() { return methods; }``) given to a PyModuleDef or as a
    PyTypeObject's tp_methods or tp_getset."""
    dest: dict[tuple[int, str], str] = {}
    adds: list[tuple[int, str, str, bool]] = []
    fns: dict[str, list[tuple[int, str]]] = {}
    for file_id, value in conn.execute("SELECT file_id, value FROM generated_fact WHERE kind = 'py_methods'"):
        how, a, b = value.split(" ", 2)
        if how in ("module", "type") and b != "?":
            dest[(file_id, a)] = _TYPE_NAMESPACES.get(b, b)
        elif how in ("add", "addfn"):
            adds.append((file_id, a, b, how == "addfn"))
        elif how == "fn":
            fns.setdefault(a, []).append((file_id, b))
    owners = dict(dest)
    for file_id, vector, source, is_fn in adds:
        owner = dest.get((file_id, vector))
        if owner is None:
            continue
        for table_file, table in (fns.get(source, []) if is_fn else [(file_id, source)]):
            owners.setdefault((table_file, table), owner)
    return owners


# Note [Attribute bindings]
# A PyTypeObject's tp_getset table (PyGetSetDef) binds attribute access, as its tp_methods table binds calls:
# ``{"volatile", (getter)THPVariable_get_volatile, (setter)THPVariable_set_volatile, nullptr, nullptr}`` in the table
# python_variable.cpp gives torch._C.TensorBase makes reading ``t.volatile`` call the getter and assigning it call the
# setter, and no C++ call reaches either. Each is a binding of the attribute's Python name (Tensor.volatile), of kind
# GETTER or SETTER; the table's owner is found as a method table's is (table_owners: the tp_getset it is given to).
_TABLE_KINDS = {"pymethoddef": PyApiKind.PYMETHODDEF, "py_getter": PyApiKind.GETTER, "py_setter": PyApiKind.SETTER}


def _binding_rows(conn: sqlite3.Connection) -> list[Row]:
    """Hand-written bindings: PyMethodDef entries and pybind11 .def (named in their module when the code says
    which it is, see PybindModules), and the aliases of PyMethodDef tables are linked in _alias_rows."""
    rows: list[Row] = []
    mods = PybindModules(conn)
    owners = table_owners(conn)
    for kind, name, target, key, file_id, line, path, scope in conn.execute(
            "SELECT r.kind, r.name, r.target, r.key, r.file_id, r.line, f.path, r.scope FROM cpp_registration r "
            "JOIN files f ON f.id = r.file_id WHERE r.kind IN ('pymethoddef', 'pybind_def', 'py_getter', 'py_setter') "
            "AND f.generated = 0"):
        if kind in _TABLE_KINDS:
            # Where the code installs the table (table_owners); else: tables of torch/csrc/Module.cpp are
            # torch._C's own methods, the hand-written tables of the binding files (python_torch_functions_manual.cpp)
            # fill the same namespace as the generated ones, and other tables keep their name.
            owner = owners.get((file_id, key)) or ("torch._C" if path == "torch/csrc/Module.cpp" else
                                                  (generated_namespace(path) or key))
            rows.append((f"{owner}.{name}", _TABLE_KINDS[kind], "", target, file_id, line))
        else:
            module = _pybind_module(mods, scope, key)
            rows.append((f"{module}.{name}" if module else name, PyApiKind.PYBIND, "", target, file_id, line))
    return rows + _exposed_rows(conn, mods, rows)


def _exposed_rows(conn: sqlite3.Connection, mods: PybindModules, rows: list[Row]) -> list[Row]:
    """The methods of a type under each name a module exposes it by (``PyModule_AddObject(module,
    "_ImperativeEngine", (PyObject*)&THPEngineType)``: torch._C._ImperativeEngine.run_backward is the method
    torch._C._EngineBase.run_backward), when that name is not its tp_name."""
    aliases: dict[str, set[str]] = {}
    for value, scope in conn.execute("SELECT value, scope FROM generated_fact WHERE kind = 'py_methods' "
                                     "AND value LIKE 'expose %'"):
        _how, var, name, tp_name = value.split(" ")
        module = mods.of(scope, var) if scope is not None and scope >= 0 else None
        # a type users reach under another name already (TensorBase's methods are Tensor's) keeps that one
        if module and tp_name not in _TYPE_NAMESPACES and f"{module}.{name}" != tp_name:
            aliases.setdefault(tp_name, set()).add(f"{module}.{name}")
    out: list[Row] = []
    for row in rows if aliases else ():
        owner, _, method = row[0].rpartition(".")
        for alias in sorted(aliases.get(owner, ())):
            out.append((f"{alias}.{method}", *row[1:]))
    return out


def _alias_rows(conn: sqlite3.Connection, by_py: dict[str, list[str]]) -> list[Row]:
    """``torch.spmm``: a PyMethodDef entry copied under a second name (PY_ALIAS facts), bound to what the entry
    it copies is bound to, in the namespace of the binding file that holds the table."""
    rows: list[Row] = []
    for value, file_id, line, path in conn.execute(
            "SELECT g.value, g.file_id, g.line, f.path FROM generated_fact g JOIN files f ON f.id = g.file_id "
            "WHERE g.kind = 'py_alias'"):
        ns = generated_namespace(path)
        if ns is None:
            continue
        canonical, alias = value.split(" ")
        for op in dict.fromkeys(by_py.get(f"{ns}.{canonical}", ())):
            rows.append((f"{ns}.{alias}", PyApiKind.ALIAS, op, f"{ns}.{canonical}", file_id, line))
    return rows


# Note [Bound names]
# native_functions.yaml's `variants: function, method` says which C++ API an op gets; its Python names are what
# tools/autograd/gen_python_functions.py binds, which leaves out its skip lists (`.*_backward`, `div.Scalar`,
# `index`, ...: SKIP_PYTHON_BINDINGS and SKIP_PYTHON_BINDINGS_SIGNATURES) and `manual_cpp_binding` ops. With the
# generated layer indexed, the bindings it wrote are the answer: a name the generator binds keeps the ops its
# parsers call (torch.div: not div.Scalar); a name it binds none of is kept only where hand-written binding code
# defines it (Tensor.size: THPVariable_size, written in the binding template). In a namespace no generated binding
# file fills, and without the generated layer, the YAML's names are all there is.


def python_api_rows(conn: sqlite3.Connection) -> list[Row]:
    generated = _generated_binding_rows(conn)
    hand = _binding_rows(conn)
    bound = None
    if generated:
        pairs = {(n, o) for n, _k, o, *_ in generated}
        names = {n for n, _k, o, *_ in generated if o}
        # hand-written: by binding code, or in a binding template (THPVariable_size: a generated file's entry
        # that calls no op)
        handwritten = {n for n, *_ in hand} | {n for n, _k, o, *_ in generated if not o}
        spaces = {n.rsplit(".", 1)[0] for n in names}  # the namespaces whose binding files were generated

        def bound(name: str, op: str) -> bool:
            return (name.rsplit(".", 1)[0] not in spaces or (name, op) in pairs
                    or (name not in names and name in handwritten))
    rows = _op_rows(conn, bound) if bound else _op_rows(conn)
    by_py: dict[str, list[str]] = {}
    for name, _kind, op, *_ in rows:
        by_py.setdefault(name, []).append(op)
    rows += _functional_rows(conn, by_py)
    rows += _alias_rows(conn, by_py)
    return rows + hand + generated
