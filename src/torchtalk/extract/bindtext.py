"""What hand-written Python binding code says only in strings: which Python module a pybind11
object is, the alias tables that copy a PyMethodDef entry under a second name, and the Python
signatures a hand-written binding parses (its PythonArgParser strings, as in generated code).

``auto m = _C.def_submodule("_functorch"); m.def("_add_batch_dim", ...)`` binds
``torch._C._functorch._add_batch_dim``, but the C++ facts keep only the receiver ``m`` of the
``.def``. ``gatherTorchFunctions`` (python_torch_functions_manual.cpp) makes ``torch.spmm``
from ``torch.mm`` with a table of string pairs and ``alias_def.ml_name = alias.second``.
These are regular, so a scan of the text finds them; each is attached to the enclosing
function, like the facts of generated code (GeneratedFact), and linked in link/pyapi.py.
"""

from __future__ import annotations

import bisect
import re

from ..model import CppSymbol, FileFacts, GeneratedFact, GeneratedKind
from .generated import Enclosing, parser_signatures

# auto m = <module expression>;  (also py::module m = ..., over several lines)
_MODULE_VAR = re.compile(
    rb"(?:\bauto|\bpy(?:bind11)?::module_?|\bpy::object)\s*&?\s+(\w+)\s*=\s*"
    rb"(?:"
    rb"(?:py|pybind11|mpy)::(?:module_?::)?import\(\s*\"([\w.]+)\"\s*\)\s*;"  # 2: import("torch")
    rb"|(?:THPObjectPtr\()?PyImport_ImportModule\(\s*\"([\w.]+)\"\s*\)\)?\s*;"  # 3: PyImport_ImportModule("torch._C")
    rb"|(\w+)\.def_submodule\(\s*\"(\w+)\""  # 4, 5: parent.def_submodule("_jit")
    rb"|(?:py::handle|py::cast<py(?:bind11)?::module_?>|py::reinterpret_borrow<py(?:bind11)?::module_?>)"
    rb"\(\s*(\w+)(?:\.ptr\(\))?\s*\)"  # 6: py::handle(module).cast<py::module>()
    rb")"
)
# A class object held in a variable: py::class_<X> reduce_op(module, "ReduceOp", ...), or
# auto backend = py::class_<X, ...>(module, "Backend"), intrusive_ptr_class_<Y>(backend, "Options"): its methods
# (reduce_op.def("op", ...)) are the class's, and the class is in what its first argument is (a module or a class).
_CLASS_OBJECT = re.compile(
    rb"(?:\bauto\s*&?\s+(\w+)\s*=\s*)?(?:[\w:]*::)?\b\w*class_\s*<[^;{]*?>\s*(\w+)?\s*[({]\s*(\w+)\s*,\s*\"(\w+)\""
)
# static struct PyModuleDef torchmodule = {PyModuleDef_HEAD_INIT, "torch._C", ...};
# module = PyModule_Create(&torchmodule);
_MODULE_DEF = re.compile(rb"PyModuleDef\s+(\w+)\s*=\s*\{\s*PyModuleDef_HEAD_INIT\s*,\s*\"([\w.]+)\"")
_MODULE_CREATE = re.compile(rb"\b(\w+)\s*=\s*PyModule_Create\(\s*&(\w+)\s*\)")
# Where a PyMethodDef table ends up: THPUtils_addPyMethodDefs(methods, extra_methods | python_functions()),
# PyMethodDef* python_functions() { return methods; }, a PyModuleDef's or a PyTypeObject's method list.
_ADD_DEFS = re.compile(rb"THPUtils_addPyMethodDefs\(\s*(\w+)\s*,\s*(?:std::data\()?([\w:]+)\s*(\(\s*\))?\s*\)?\s*\)")
_TABLE_FN = re.compile(rb"PyMethodDef\s*\*\s*([\w:]+)\s*\(\s*\)\s*\{\s*return\s+(?:std::data\()?(\w+)\)?\s*;")
_MODULE_METHODS = re.compile(rb"PyModuleDef\s+\w+\s*=\s*\{\s*PyModuleDef_HEAD_INIT\s*,\s*\"([\w.]+)\"\s*,"
                             rb"[^,{}]*,[^,{}]*,\s*(?:std::data\()?(\w+)")
_TYPE_NAME = re.compile(rb"PyTypeObject\s+([\w:]+)\s*=\s*\{\s*PyVarObject_HEAD_INIT\([^)]*\)\s*\"([\w.]+)\"")
_TABLE_SLOTS = rb"tp_(?:methods|getset|as_mapping|as_sequence|as_number)"  # the type's slots holding a table
_TYPE_METHODS = re.compile(rb"\b(\w+)\." + _TABLE_SLOTS + rb"\s*=\s*&?\s*(?:std::data\()?(\w+)")
# The table given in the initializer itself, in CPython's commented style: THPEngine_methods, /* tp_methods */, or
# const_cast<PyMethodDef*>(std::data(THPDevice_methods)), /* tp_methods */ (the type is the PyTypeObject around it);
# its PyGetSetDef table so too: THPVariable_properties, /* tp_getset */ (Note [Attribute bindings]).
# A slot table so too: &THPVariable_as_mapping, /* tp_as_mapping */ (Note [Slot tables] in cpp_regs.py).
_TYPE_INIT_METHODS = re.compile(rb"(?:const_cast<\s*Py(?:MethodDef|GetSetDef)\s*\*\s*>\(\s*)?(?:std::data\(\s*)?"
                                rb"&?\s*(\w+)\s*\)?\s*\)?\s*,\s*/\*\s*" + _TABLE_SLOTS + rb"\s*\*/")
# PyModule_AddObject(module, "_ImperativeEngine", (PyObject*)&THPEngineType): the type is an attribute of that module
# under that name, whatever its tp_name says (torch._C._ImperativeEngine is the type named torch._C._EngineBase).
_ADD_TYPE = re.compile(rb"PyModule_AddObject\(\s*(\w+)\s*,\s*\"(\w+)\"\s*,\s*\(\s*PyObject\s*\*\s*\)\s*&(\w+)\s*\)")
_STRING_PAIR = re.compile(rb"\{\s*\"(\w+)\"\s*,\s*\"(\w+)\"\s*\}")
_RENAME = re.compile(rb"\bml_name\s*=\s*\w+\.(first|second)\b")
# A file none of the patterns above can match in holds none of these: each pattern's fixed text (a module made by a
# cast, ``auto m = py::cast<py::module>(module)`` in torch/csrc/cuda/python_comm.cpp, is one).
_TOKENS = (b"def_submodule", b"import(", b"PyImport_ImportModule", b"py::handle(", b"py::cast<py",
           b"reinterpret_borrow<py", b"class_", b"PyModule_Create", b"PyModuleDef", b"PyMethodDef",
           b"THPUtils_addPyMethodDefs", b"tp_methods", b"tp_getset", b"tp_as_", b"ml_name", b"PythonArgParser")


def binding_text_facts(data: bytes, symbols: list[CppSymbol]) -> list[GeneratedFact]:
    """PY_MODULE facts (``var import torch``, ``var sub parent name``, ``var of other``, ``var class parent Name``),
    PY_METHODS facts
    (``add vector table``, ``addfn vector fn``, ``fn fn table``, ``module vector name``, ``type vector tp_name``,
    ``expose module_var name tp_name``),
    PY_ALIAS facts (``canonical alias``) and PARSER_SIGNATURE facts of one C++ file."""
    if not any(token in data for token in _TOKENS):
        return []
    starts = [0] + [m.end() for m in re.finditer(rb"\n", data)]

    def line_at(offset: int) -> int:
        return bisect.bisect_right(starts, offset)

    # The Python signatures of hand-written bindings (THPVariable_nonzero's "nonzero(Tensor input, *, ...)").
    rows: list[GeneratedFact] = parser_signatures(data, symbols, line_at) if b"PythonArgParser" in data else []
    inside = Enclosing(symbols)
    for m in _MODULE_VAR.finditer(data):
        var = m.group(1).decode()
        if m.group(2) or m.group(3):
            value = f"{var} import {(m.group(2) or m.group(3)).decode()}"
        elif m.group(4):
            value = f"{var} sub {m.group(4).decode()} {m.group(5).decode()}"
        else:
            value = f"{var} of {m.group(6).decode()}"
        line = line_at(m.start(1))
        rows.append(GeneratedFact(GeneratedKind.PY_MODULE, value, line, inside(line)))
    for m in _CLASS_OBJECT.finditer(data) if b"class_" in data else ():
        var = m.group(1) or m.group(2)
        if var:
            line = line_at(m.start())
            rows.append(GeneratedFact(GeneratedKind.PY_MODULE,
                                      f"{var.decode()} class {m.group(3).decode()} {m.group(4).decode()}", line,
                                      inside(line)))
    defs = {m.group(1): m.group(2).decode() for m in _MODULE_DEF.finditer(data)}
    for m in _MODULE_CREATE.finditer(data):
        if m.group(2) in defs:
            line = line_at(m.start(1))
            rows.append(GeneratedFact(GeneratedKind.PY_MODULE, f"{m.group(1).decode()} import {defs[m.group(2)]}",
                                      line, inside(line)))
    def methods(pattern: re.Pattern, fmt) -> None:
        for m in pattern.finditer(data):
            line = line_at(m.start())
            rows.append(GeneratedFact(GeneratedKind.PY_METHODS, fmt(m), line, inside(line)))

    last = lambda b: b.decode().split("::")[-1]  # noqa: E731
    methods(_ADD_DEFS, lambda m: f"{'addfn' if m.group(3) else 'add'} {m.group(1).decode()} {last(m.group(2))}")
    methods(_TABLE_FN, lambda m: f"fn {last(m.group(1))} {m.group(2).decode()}")
    methods(_MODULE_METHODS, lambda m: f"module {m.group(2).decode()} {m.group(1).decode()}")
    type_defs = list(_TYPE_NAME.finditer(data))
    types = {m.group(1): m.group(2).decode() for m in type_defs}
    methods(_TYPE_METHODS, lambda m: f"type {m.group(2).decode()} {types.get(m.group(1), '?')}")
    if type_defs and (b"tp_methods */" in data or b"tp_getset */" in data or b"tp_as_" in data):
        starts_of = [m.start() for m in type_defs]
        for m in _TYPE_INIT_METHODS.finditer(data):
            i = bisect.bisect_right(starts_of, m.start()) - 1
            if i >= 0 and m.group(1) not in (b"nullptr", b"NULL", b"0"):
                line = line_at(m.start(1))
                rows.append(GeneratedFact(GeneratedKind.PY_METHODS,
                                          f"type {m.group(1).decode()} {type_defs[i].group(2).decode()}", line,
                                          inside(line)))
    for m in _ADD_TYPE.finditer(data) if type_defs and b"PyModule_AddObject" in data else ():
        if m.group(3) in types:
            line = line_at(m.start())
            rows.append(GeneratedFact(GeneratedKind.PY_METHODS,
                                      f"expose {m.group(1).decode()} {m.group(2).decode()} {types[m.group(3)]}", line,
                                      inside(line)))
    for r in _RENAME.finditer(data):
        # The alias is the member assigned to ml_name; the other member of each pair names the entry copied.
        line = line_at(r.start())
        scope = inside(line)
        if scope < 0:
            continue
        fn = symbols[scope]
        lo, hi = starts[fn.line - 1], starts[min(fn.end_line, len(starts) - 1)]
        alias_is_second = r.group(1) == b"second"
        for p in _STRING_PAIR.finditer(data, lo, hi):
            canonical, alias = (p.group(1), p.group(2)) if alias_is_second else (p.group(2), p.group(1))
            rows.append(GeneratedFact(GeneratedKind.PY_ALIAS, f"{canonical.decode()} {alias.decode()}",
                                      line_at(p.start()), scope))
    return rows


def add_binding_text(facts: FileFacts, data: bytes) -> FileFacts:
    rows = binding_text_facts(data, facts.get(CppSymbol, []))
    if rows:
        facts.setdefault(GeneratedFact, []).extend(rows)
    return facts
