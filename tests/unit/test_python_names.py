"""Python names that are not op names, on the fixture tree: functions and assignments of torch.nn.functional,
members of torch.Tensor, alias tables, PyMethodDef tables and pybind11 modules, and the Python callers of ops."""

import re
import shutil

import pytest

from torchtalk.extract.bindtext import binding_text_facts
from torchtalk.extract.cpp import extract_cpp
from torchtalk.index.indexer import refresh
from torchtalk.model import CallSite, CppSymbol, GeneratedKind, PyDefKind
from torchtalk.source.tree import find_source
from torchtalk.store.reader import Index
from torchtalk.tools import get_tool, run

from ..conftest import FIXTURE_TREE, index_with, indexed_with, line_of


def call(ix, tool, **kw):
    return run(get_tool(tool), ix, **kw)


def ops_of(res) -> list[str]:
    return [t.op.full_name for t in res.ops]


def test_boolean_dispatch_assignment_reaches_both_functions(py_indexed):
    _, ix = py_indexed
    res, text = call(ix, "trace", function_name="F.cumulative", focus="yaml")
    # torch.cumsum(input, dim) passes no out=: the out= overloads are not reached (Note [Overloads by arguments])
    assert set(ops_of(res)) == {"cumsum", "cumprod"}
    assert res.entry.kind is PyDefKind.ASSIGN and res.entry.loc.path == "torch/nn/functional.py"
    line = res.entry.loc.line
    assert "cumulative = boolean_dispatch(" in (py_indexed[0] / "torch/nn/functional.py").read_text().splitlines()[
        line - 1]
    assert f"torch.nn.functional.cumulative is bound to torch.nn.functional._cumprod  (torch/nn/functional.py:{line})" \
        in text
    assert "calls torch.cumsum -> op cumsum" in text


def test_method_call_on_an_expression_is_a_tensor_method(py_indexed):
    _, ix = py_indexed
    res, text = call(ix, "trace", function_name="torch.nn.functional.softmin", focus="yaml")
    assert ops_of(res) == ["softmax.int"]
    assert "calls <expr>.softmax (receiver not typed; assumed a Tensor) -> op softmax.int" in text


def test_vf_assignment_and_python_only_function(py_indexed):
    _, ix = py_indexed
    res, _ = call(ix, "trace", function_name="F.relu_", focus="yaml")
    assert ops_of(res) == ["relu_"]
    res, text = call(ix, "trace", function_name="F.assert_int_or_pair")
    assert res.ops == [] and res.entry.name == "torch.nn.functional.assert_int_or_pair"
    assert text.startswith("# trace F.assert_int_or_pair: a Python function, not an op")
    assert "reaches no op" in text


def test_tensor_members_defined_in_python(py_indexed):
    _, ix = py_indexed
    res, text = call(ix, "trace", function_name="Tensor.__radd__", focus="yaml")  # __radd__ = _C.TensorBase.add
    assert set(ops_of(res)) >= {"add.Tensor"} and "Python name torch._tensor.Tensor.__radd__" in text
    res, _ = call(ix, "trace", function_name="torch.Tensor.__rsub__", focus="yaml")
    assert "add.Tensor" in ops_of(res) and res.entry.loc.path == "torch/_tensor.py"
    res, text = call(ix, "trace", function_name="Tensor.storage_type")
    assert res.ops == [] and "a Python function, not an op" in text


def test_a_python_function_over_a_binding_is_what_its_python_name_runs(py_indexed):
    """Note [Python functions over bindings]: torch.cumsum re-exported from torch/functional.py (as torch.stft is) and
    Tensor.cumsum defined in torch/_tensor.py (as Tensor.split is) are those functions, which reach the op; the op's
    own name is the op; a Python name no Python function defines is the binding's op."""
    tree, ix = py_indexed
    ix.close()
    init = (tree / "torch/__init__.py").read_text() + "from torch.functional import *  # noqa: F403\n"
    tensor = (tree / "torch/_tensor.py").read_text() + (
        "\n    def cumsum(self, dim):\n        return torch._VF.cumsum(self.contiguous(), dim)\n")
    ix = index_with(tree, {
        "torch/__init__.py": init, "torch/_tensor.py": tensor,
        "torch/functional.py": ('"""Fixture: torch.functional."""\nimport torch\nfrom torch import _VF\n\n'
                                '__all__ = ["cumsum"]\n\n\ndef cumsum(input, dim):\n'
                                '    """Padding, then the binding."""\n    return _VF.cumsum(input, dim)\n')})
    try:
        for name, fq, path in (("torch.cumsum", "torch.functional.cumsum", "torch/functional.py"),
                               ("Tensor.cumsum", "torch._tensor.Tensor.cumsum", "torch/_tensor.py"),
                               ("torch.Tensor.cumsum", "torch._tensor.Tensor.cumsum", "torch/_tensor.py")):
            res, text = call(ix, "trace", function_name=name, focus="yaml")
            assert res.entry is not None and res.entry.name == fq and res.entry.loc.path == path, text
            assert "cumsum" in ops_of(res), text
            assert text.splitlines()[2].startswith(f"Python function {fq}("), text
        res, text = call(ix, "trace", function_name="cumsum", focus="yaml")
        assert res.entry is None and ops_of(res)[0] == "cumsum", text
        res, text = call(ix, "trace", function_name="torch.cumprod", focus="yaml")
        assert res.entry is None and "cumprod" in ops_of(res), text
    finally:
        ix.close()


def test_a_python_function_that_reaches_no_op_is_walked_once(py_indexed, monkeypatch):
    """Tensor.storage_type is a Python function of torch/_tensor.py that reaches no op: asked first as a Python function
    over a binding, then as a Python function after no op is named so, its walk is made once."""
    import torchtalk.query.trace as trace_mod
    _, ix = py_indexed
    walks = []
    real = trace_mod.walk_to_ops

    def counted(*args, **kwargs):
        walks.append(args[1])
        return real(*args, **kwargs)

    monkeypatch.setattr(trace_mod, "walk_to_ops", counted)
    res, text = call(ix, "trace", function_name="Tensor.storage_type")
    assert res.ops == [] and "a Python function, not an op" in text
    assert len(walks) == 1, walks


def test_alias_table_is_read_not_listed():
    data = (b'void gatherTorchFunctions(std::vector<PyMethodDef>& f) {\n'
            b'  static std::array<std::pair<const char*, const char*>, 2> aliases'
            b'{{{"mm", "spmm"}, {"hspmm", "hsmm"}}};\n'
            b'  for (const auto& alias : aliases) {\n    PyMethodDef d = f[0];\n'
            b'    d.ml_name = alias.second;\n  }\n}\n')
    facts = extract_cpp("torch/csrc/autograd/python_torch_functions_manual.cpp", data)
    rows = binding_text_facts(data, facts[CppSymbol])
    assert [(r.kind, r.value, r.line) for r in rows] == [(GeneratedKind.PY_ALIAS, "mm spmm", 2),
                                                         (GeneratedKind.PY_ALIAS, "hspmm hsmm", 2)]
    flipped = data.replace(b"alias.second", b"alias.first")  # the member assigned to ml_name is the alias
    assert binding_text_facts(flipped, facts[CppSymbol])[0].value == "spmm mm"


@pytest.mark.parametrize("cast", [b"py::cast<py::module>(module)", b"py::reinterpret_borrow<py::module>(module)",
                                  b"py::handle(module).cast<py::module>()"])
def test_a_module_made_by_a_cast_is_read_in_a_file_with_nothing_else(cast):
    """torch/csrc/cuda/python_comm.cpp makes its module only by a cast of the PyObject* it is given (and imports,
    creates or lists nothing): that is enough for its .def bindings to be named in that module
    (torch._C._scatter_out)."""
    data = (b"void initCommMethods(PyObject* module) {\n  auto m = " + cast + b";\n"
            b'  m.def("_scatter_out", [](at::Tensor& t) { return scatter_out(t); });\n}\n')
    facts = extract_cpp("torch/csrc/cuda/python_comm.cpp", data)
    rows = binding_text_facts(data, facts[CppSymbol])
    assert [(r.kind, r.value, r.line) for r in rows] == [(GeneratedKind.PY_MODULE, "m of module", 2)]


def test_a_conditional_inside_a_def_chain_keeps_the_chain_whole():
    """torch/csrc/jit/python/init.cpp: an #if/#else group in the middle of a .def chain is no statement; tree-sitter
    split the chain there and every .def after it lost its receiver, so its module (cpp_prep's
    resolve_chain_conditionals). Every branch's .def is kept, each on the module variable, with its own line."""
    from torchtalk.model import Registration

    data = (b"void initJITBindings(PyObject* module) {\n"
            b"  auto m = py::handle(module).cast<py::module>();\n"
            b'  m.def("_jit_a", &a)\n'
            b"#if defined(BUILDING_TESTS) && !defined(USE_ROCM)\n"
            b'      .def("_jit_run_cpp_tests", []() { return runJITCPPTests(); })\n'
            b"#else\n"
            b'      .def("_jit_run_cpp_tests", []() { throw std::exception(); })\n'
            b'      .def("_run_tensorexpr_cpp_tests", []() { return false; })\n'
            b"#endif\n"
            b'      .def("_jit_flatten", &flatten);\n'
            b"}\n")
    facts = extract_cpp("torch/csrc/jit/python/init.cpp", data)
    defs = [(r.name, r.key, r.line) for r in facts[Registration] if r.kind.value == "pybind_def"]
    assert sorted(defs) == [("_jit_a", "m", 3), ("_jit_flatten", "m", 10), ("_jit_run_cpp_tests", "m", 5),
                            ("_jit_run_cpp_tests", "m", 7), ("_run_tensorexpr_cpp_tests", "m", 8)]
    assert not [c for c in facts[CallSite] if c.callee in ("defined", "def")]  # no directive text read as code


def test_alias_resolves_to_the_entry_it_copies(py_indexed):
    _, ix = py_indexed
    res, text = call(ix, "trace", function_name="torch.spmm", focus="yaml")
    assert ops_of(res) == ["mm"]
    assert ("torch.spmm is an alias of torch.mm: the binding table copies its entry under this name "
            "(torch/csrc/autograd/python_torch_functions_manual.cpp:17)") in text
    res, _ = call(ix, "trace", function_name="torch.hsmm")
    assert res.what == "op"  # not in this table: not found
    # a bare name that is no op is torch's Python name: spmm is torch.spmm
    res, text = call(ix, "trace", function_name="spmm", focus="yaml")
    assert ops_of(res) == ["mm"] and "torch.spmm is an alias of torch.mm" in text


def test_a_bare_name_of_a_binding_is_torchs(py_indexed):
    _, ix = py_indexed
    res, text = call(ix, "trace", function_name="is_grad_enabled")
    assert "## torch._C.is_grad_enabled: bound by a PyMethodDef entry, not an op" in text


def test_binding_followed_to_the_op_it_dispatches(py_indexed):
    _, ix = py_indexed
    res, text = call(ix, "trace", function_name="Tensor.__invert__", focus="yaml")
    assert ops_of(res) == ["bitwise_not"]
    assert "## Tensor.__invert__: bound by a PyMethodDef entry" in text
    assert "torch/csrc/autograd/python_variable.cpp:17" in text  # the extra_methods entry, installed on TensorBase
    assert re.search(r"reaches op bitwise_not through torch::autograd::dispatch_invert "
                     r"\(call at torch/csrc/autograd/python_variable.cpp:8\)", text)


def test_method_tables_and_pybind_modules_are_named_in_their_module(py_indexed):
    _, ix = py_indexed
    names = {r[0] for r in ix.q("SELECT name FROM py_api WHERE kind IN ('pymethoddef', 'pybind')")}
    # python_functions() returns the table; Module.cpp adds it to the PyModuleDef named "torch._C"
    assert "torch._C.is_grad_enabled" in names
    # _C.def_submodule("_functorch") on the PyObject* initModule passes (PyModule_Create of "torch._C")
    assert "torch._C._functorch.is_batchedtensor" in names
    assert "torch._is_functional_tensor" in names  # py::module::import("torch")
    assert "Tensor.__invert__" in names  # tp_methods of the type named "torch._C.TensorBase"
    res, text = call(ix, "trace", function_name="torch.is_grad_enabled")
    assert "## torch._C.is_grad_enabled: bound by a PyMethodDef entry, not an op" in text
    assert "torch/csrc/autograd/init.cpp:14" in text
    res, text = call(ix, "trace", function_name="torch._C._functorch.is_batchedtensor")
    assert "bound by pybind11 .def, not an op" in text and "torch/csrc/functorch/init.cpp:13" in text


def test_a_type_objects_methods_are_named_by_its_tp_name(py_indexed):
    """A PyTypeObject given its method table in its own initializer (CPython's ``table, /* tp_methods */``), and
    entries whose name is under a C cast (``{(char*)"run_backward", ...}``): each entry is a method of the type's
    tp_name, which trace answers with (before, such entries were dropped and the table kept its C++ name)."""
    tree, ix = py_indexed
    ix.close()
    ix = index_with(tree, {"torch/csrc/autograd/python_engine_methods.cpp": (
        "namespace torch::autograd::python {\n"
        "PyObject* THPEngine_queue_callback(PyObject* self, PyObject* fn) { return nullptr; }\n"
        "static struct PyMethodDef THPEngine_methods[] = {\n"
        "    {(char*)\"run_backward\",\n"
        "     castPyCFunctionWithKeywords(THPEngine_run_backward),\n"
        "     METH_VARARGS | METH_KEYWORDS,\n"
        "     nullptr},\n"
        "    {(char*)\"queue_callback\", THPEngine_queue_callback, METH_O, nullptr},\n"
        "    {nullptr}};\n"
        "PyTypeObject THPEngineType = {\n"
        "    PyVarObject_HEAD_INIT(nullptr, 0)\n"
        "    \"torch._C._EngineBase\", /* tp_name */\n"
        "    sizeof(THPEngine), /* tp_basicsize */\n"
        "    nullptr, /* tp_iternext */\n"
        "    THPEngine_methods, /* tp_methods */\n"
        "    nullptr, /* tp_members */\n"
        "};\n}\n")})
    try:
        names = {r[0]: r[1] for r in ix.q("SELECT name, line FROM py_api WHERE kind = 'pymethoddef'")}
        assert names["torch._C._EngineBase.run_backward"] == 4
        assert names["torch._C._EngineBase.queue_callback"] == 8
        res, text = call(ix, "trace", function_name="torch._C._EngineBase.run_backward")
        assert [(b.python_name, b.function.name) for b in res.bindings] == \
            [("torch._C._EngineBase.run_backward", "THPEngine_run_backward")]
        assert ("- bound at torch/csrc/autograd/python_engine_methods.cpp:4 to torch::autograd::python::"
                "THPEngine_run_backward(PyObject* "
                "self, PyObject* args)  torch/csrc/autograd/python_engine.cpp:7") in text
    finally:
        ix.close()


def test_a_types_slot_tables_bind_its_dunders(py_indexed):
    """Note [Slot tables]: ``t[i]`` runs the PyMappingMethods' mp_subscript; trace("Tensor.__getitem__") was "No op
    named ..., No close matches" (only tp_methods tables were read). By position, or by designated initializer."""
    tree, ix = py_indexed
    ix.close()
    ix = index_with(tree, {"torch/csrc/autograd/python_variable_slots.cpp": (
        "namespace torch::autograd {\n"
        "Py_ssize_t THPVariable_length(PyObject* self) { return 0; }\n"
        "PyObject* THPVariable_getitem(PyObject* self, PyObject* index) { return nullptr; }\n"
        "static PyMappingMethods THPVariable_as_mapping = {\n"
        "    THPVariable_length,\n"
        "    THPVariable_getitem, // mp_subscript\n"
        "    nullptr, /* mp_ass_subscript */\n"
        "};\n"
        "static PySequenceMethods THPSeq_as_sequence = {\n"
        "    .sq_contains = THPSeq_contains,\n"
        "    .sq_concat = wrap_fn<decltype(&sq_concat), &sq_concat>,\n"
        "};\n"
        "PyTypeObject THPSeqType = {\n"
        "    PyVarObject_HEAD_INIT(nullptr, 0)\n"
        "    \"torch._C._Seq\", /* tp_name */\n"
        "    &THPSeq_as_sequence, /* tp_as_sequence */\n"
        "};\n"
        "PyTypeObject THPVariableType = {\n"
        "    PyVarObject_HEAD_INIT(nullptr, 0)\n"
        "    \"torch._C.TensorBase\", /* tp_name */\n"
        "    nullptr, /* tp_as_number */\n"
        "    &THPVariable_as_mapping, /* tp_as_mapping */\n"
        "};\n}\n")})
    try:
        names = {r[0]: r[1] for r in ix.q("SELECT name, target FROM py_api WHERE kind = 'pymethoddef'")}
        assert names["Tensor.__getitem__"] == "THPVariable_getitem" and names["Tensor.__len__"] == "THPVariable_length"
        assert "Tensor.__setitem__" not in names  # a null slot binds nothing
        assert names["torch._C._Seq.__contains__"] == "THPSeq_contains"
        assert "torch._C._Seq.__add__" not in names  # not a function the tree names
        res, text = call(ix, "trace", function_name="Tensor.__getitem__")
        assert [(b.python_name, b.function.name) for b in res.bindings] == \
            [("Tensor.__getitem__", "THPVariable_getitem")], text
    finally:
        ix.close()


def test_python_calls_into_hand_written_bindings_reach_their_cpp(py_indexed):
    """A Python call of a name hand-written C++ binds (torch._C.is_grad_enabled, or torch.is_grad_enabled through
    torch/__init__.py's star import of torch._C) steps into that binding and on to its C++ function; a builtin
    named like a pybind11 .def of no known module (getattr) does not."""
    tree, ix = py_indexed
    ix.close()
    ix = index_with(tree, {
        "torch/csrc/jit/python/slots.cpp": 'void initSlots(py::module& m) {\n  m.def("getattr", &slot_getattr);\n}\n'
                                           "py::object slot_getattr(py::object o) { return o; }\n",
        "torch/autograd/modes.py": ("import torch\n\n\ndef grad_on():\n    return torch._C.is_grad_enabled()\n\n\n"
                                    "def grad_on_too():\n    return torch.is_grad_enabled()\n\n\n"
                                    "def attr(o):\n    return getattr(o, 'x')\n\n\n"
                                    "class Engine(torch._C._EngineBase):\n"
                                    "    def queue(self, cb):\n        return super().queue_callback(cb)\n\n"
                                    "    def again(self, cb):\n        return self.queue_callback(cb)\n"),
        "torch/csrc/autograd/python_engine_methods.cpp": (
            "PyObject* THPEngine_queue_callback(PyObject* self, PyObject* fn) { return nullptr; }\n"
            "static struct PyMethodDef THPEngine_methods[] = {\n"
            "    {(char*)\"queue_callback\", THPEngine_queue_callback, METH_O, nullptr},\n    {nullptr}};\n"
            "PyTypeObject THPEngineType = {\n    PyVarObject_HEAD_INIT(nullptr, 0)\n"
            "    \"torch._C._EngineBase\", /* tp_name */\n    THPEngine_methods, /* tp_methods */\n};\n")})
    try:
        for fn in ("torch.autograd.modes.grad_on", "torch.autograd.modes.grad_on_too"):
            res, text = call(ix, "trace", function_name=fn)
            assert [(e.src.key, e.dst.label) for e in res.entry.calls if e.src.kind.value == "binding"] == \
                [("torch._C.is_grad_enabled", "torch::autograd::is_grad_enabled")], fn
            assert ("- torch._C.is_grad_enabled is bound to C++ torch::autograd::is_grad_enabled "
                    "torch/csrc/autograd/init.cpp:6  "
                    "(torch/csrc/autograd/init.cpp:14)") in text
            assert "it calls C++ through hand-written bindings (torch._C.is_grad_enabled)" in text
        res, text = call(ix, "trace", function_name="torch.autograd.modes.attr")
        assert all(e.src.kind.value != "binding" for e in res.entry.calls) and "slot_getattr" not in text
        # impact of the C++ function names the Python code that calls its binding, public code first
        res, text = call(ix, "impact", function_name="torch::autograd::is_grad_enabled", depth=1)
        (sec,) = res.sections
        assert [e.src.key for e in sec.python_callers["torch._C.is_grad_enabled"]] == \
            ["torch.autograd.modes.grad_on", "torch.autograd.modes.grad_on_too"]
        assert ("    called from Python by torch.autograd.modes.grad_on (torch/autograd/modes.py:5), "
                "torch.autograd.modes.grad_on_too (torch/autograd/modes.py:9)") in text
        # a method a C++ base class (a PyTypeObject's tp_methods) gives, through super() or self
        for fn in ("torch.autograd.modes.Engine.queue", "torch.autograd.modes.Engine.again"):
            res, text = call(ix, "trace", function_name=fn)
            assert [(e.src.key, e.dst.label) for e in res.entry.calls if e.src.kind.value == "binding"] == \
                [("torch._C._EngineBase.queue_callback", "THPEngine_queue_callback")], fn
    finally:
        ix.close()


def test_a_class_attribute_holding_an_instance_of_a_native_type_reaches_its_cpp(py_indexed):
    """``Variable._execution_engine.run_backward(...)``: the class body's ``_execution_engine = ImperativeEngine()``
    holds an instance of ``torch._C._ImperativeEngine``, the name ``PyModule_AddObject`` gives the type whose tp_name
    is torch._C._EngineBase; its method is bound to THPEngine_run_backward (how Tensor.backward reaches the engine)."""
    tree, ix = py_indexed
    ix.close()
    module_cpp = (tree / "torch/csrc/Module.cpp").read_text()
    ix = index_with(tree, {
        "torch/csrc/Module.cpp": module_cpp.replace("  return module;\n", "  THPEngine_initModule(module);\n"
                                                                          "  return module;\n"),
        "torch/csrc/autograd/python_engine_methods.cpp": (
            "static struct PyMethodDef THPEngine_methods[] = {\n"
            "    {(char*)\"run_backward\", castPyCFunctionWithKeywords(THPEngine_run_backward),\n"
            "     METH_VARARGS, nullptr},\n"
            "    {nullptr}};\n"
            "PyTypeObject THPEngineType = {\n    PyVarObject_HEAD_INIT(nullptr, 0)\n"
            "    \"torch._C._EngineBase\", /* tp_name */\n    THPEngine_methods, /* tp_methods */\n};\n"
            "bool THPEngine_initModule(PyObject* module) {\n"
            "  PyModule_AddObject(module, \"_ImperativeEngine\", (PyObject*)&THPEngineType);\n  return true;\n}\n"),
        "torch/autograd/variable.py": ("import torch\nfrom torch._C import _ImperativeEngine as ImperativeEngine\n\n\n"
                                       "class Variable:\n    _execution_engine = ImperativeEngine()\n\n\n"
                                       "class Legacy:\n    pass\n\n\n"  # 1.13.1: set after the class
                                       "Legacy._execution_engine = ImperativeEngine()\n"),
        "torch/autograd/engine_run.py": ("from torch.autograd.variable import Variable\n\n\n"
                                         "def run(tensors):\n"
                                         "    return Variable._execution_engine.run_backward(tensors)\n\n\n"
                                         "def backward(t):\n    torch.relu(t)\n    torch.rsqrt(t)\n"
                                         "    return run([t])\n\n\n"
                                         "def legacy(t):\n    from torch.autograd.variable import Legacy\n"
                                         "    return Legacy._execution_engine.run_backward(t)\n")})
    try:
        names = {r[0] for r in ix.q("SELECT name FROM py_api WHERE kind = 'pymethoddef'")}
        assert {"torch._C._EngineBase.run_backward", "torch._C._ImperativeEngine.run_backward"} <= names
        res, text = call(ix, "trace", function_name="torch.autograd.engine_run.run")
        bound = [(e.src.key, e.dst.label) for e in res.entry.calls if e.src.kind.value == "binding"]
        assert [k for k, _ in bound] == ["torch._C._ImperativeEngine.run_backward"]
        assert bound[0][1].endswith("THPEngine_run_backward")
        assert ("- calls Variable._execution_engine.run_backward (ImperativeEngine(...) at "
                "torch/autograd/variable.py:6) -> torch._C._ImperativeEngine.run_backward  "
                "(at torch/autograd/engine_run.py:5)") in text
        res, text = call(ix, "trace", function_name="torch.autograd.engine_run.legacy")
        assert [e.src.key for e in res.entry.calls if e.src.kind.value == "binding"] == \
            ["torch._C._ImperativeEngine.run_backward"]
        assert "(ImperativeEngine(...) at torch/autograd/variable.py:13)" in text
        # a function that also reaches ops leads with them, and with the C++ it calls through bindings
        res, text = call(ix, "trace", function_name="torch.autograd.engine_run.backward")
        lead = text.split("\n## ")[0]
        assert "It reaches 2 overloads, by the call that reaches them:" in lead
        assert ("It calls C++ through hand-written bindings (no op):\n- torch._C._ImperativeEngine.run_backward -> "
                "C++ ") in lead
        assert "(called: Variable._execution_engine.run_backward at torch/autograd/engine_run.py:5)" in lead
    finally:
        ix.close()


def test_a_bound_functions_rarest_calls_are_listed_first(py_indexed, monkeypatch):
    """Under a binding, the calls of its C++ function that fit are those of the rarest callees (a common helper says
    least about what it does: c10::irange), in line order; the line that cuts names what it left out."""
    from torchtalk.render import trace_python as render_trace_mod
    tree, ix = py_indexed
    ix.close()
    ix = index_with(tree, {"torch/csrc/bound_rare.cpp": (
        "namespace c10 {\ninline int common() { return 0; }\ninline int rare() { return 1; }\n}\n"
        "int use1() { return c10::common(); }\nint use2() { return c10::common(); }\n"
        "static PyObject* bound_fn(PyObject* self, PyObject* noargs) {\n"
        "  c10::common();\n  c10::rare();\n  return nullptr;\n}\n"
        "static PyMethodDef bound_methods[] = {\n    {\"bound_fn\", bound_fn, METH_NOARGS, nullptr},\n"
        "    {nullptr}};\n")})
    try:
        monkeypatch.setattr(render_trace_mod, "MAX_BINDING_CALLS", 1)
        res, text = call(ix, "trace", function_name="bound_methods.bound_fn")
        (b,) = res.bindings
        assert b.callee_sites == {"common": 3, "rare": 1}
        assert "    calls c10::rare  torch/csrc/bound_rare.cpp:3  [at torch/csrc/bound_rare.cpp:9]" in text
        assert "calls c10::common" not in text
        assert ("    ... showing 1 of 2 calls, the least common callees first (left out: c10::common); "
                'calls("bound_fn") lists all') in text
    finally:
        ix.close()


def test_a_pybind_binding_of_no_known_module_is_answered_marked(py_indexed):
    """Note [Bindings of no known module]: a .def on a module the code does not say (here a py::module& parameter
    no caller passes a known module to) keeps its bare name; trace of its Python name or of that bare name answers
    with it, saying its module is not known, instead of "no op of that name"."""
    tree, ix = py_indexed
    ix.close()
    ix = index_with(tree, {"torch/csrc/jit/passes/mobile_init.cpp": (
        "namespace torch::jit {\nstatic void optimizeForMobile(bool on) {}\n"
        "void initMobileBindings(py::module& m) {\n"
        '  m.def("_jit_pass_optimize_for_mobile", &optimizeForMobile);\n}\n}\n')})
    try:
        for asked in ("torch._C._jit_pass_optimize_for_mobile", "_jit_pass_optimize_for_mobile"):
            res, text = call(ix, "trace", function_name=asked)
            assert [(b.python_name, b.module_unknown) for b in res.bindings] == \
                [("_jit_pass_optimize_for_mobile", True)], asked
            assert "## _jit_pass_optimize_for_mobile: bound by pybind11 .def, not an op" in text
            assert "its module is not known" in text
            assert "bound at torch/csrc/jit/passes/mobile_init.cpp:4 to torch::jit::optimizeForMobile" in text
        res, text = call(ix, "trace", function_name="torch._C._jit_pass_something_else")
        assert text.startswith("No op named 'torch._C._jit_pass_something_else'")
        res, text = call(ix, "trace", function_name="torch._C._functorch.is_batchedtensor")  # a known module
        assert "its module is not known" not in text and "torch/csrc/functorch/init.cpp:13" in text
        # a bare method name under a qualifier of its own is not that .def (torch/python.h's ModuleType::forward
        # answered trace("nn.Conv2d.forward") and trace("zzz.forward")): not found
        for asked in ("zzz._jit_pass_optimize_for_mobile", "nn.Conv2d._jit_pass_optimize_for_mobile"):
            res, text = call(ix, "trace", function_name=asked)
            assert text.startswith(f"No op named '{asked}'"), text
    finally:
        ix.close()


def test_methods_of_a_class_object_held_in_a_variable_are_named_in_its_module(py_indexed):
    """torch/csrc/distributed/c10d/init.cpp holds its classes in variables (``py::class_<ReduceOp> reduce_op(module,
    "ReduceOp")``, ``auto backend = py::class_<Backend>(module, "Backend")``) and defines their methods on them,
    and nests classes in classes (``intrusive_ptr_class_<Backend::Options>(backend, "Options")``): each method is
    named in the module the class is in, under the class (and the class it is nested in)."""
    tree, ix = py_indexed
    ix.close()
    ix = index_with(tree, {"torch/csrc/distributed/c10d/init.cpp": (
        "namespace torch::distributed::c10d {\nstatic int getRank() { return 0; }\n"
        "void initC10dBindings() {\n"
        '  auto module = py::module::import("torch._C._distributed_c10d");\n'
        '  py::class_<::c10d::ReduceOp> reduce_op(module, "ReduceOp");\n'
        '  reduce_op.def("op", &getRank);\n'
        '  auto backend = py::class_<::c10d::Backend>(module, "Backend").def("rank", &getRank);\n'
        '  auto backendOptions = intrusive_ptr_class_<::c10d::Backend::Options>(backend, "Options");\n'
        '  backendOptions.def("timeout", &getRank);\n'
        '  intrusive_ptr_class_<::c10d::Backend::Other>(backend, "Other").def("size", &getRank);\n'
        "}\n}\n")})
    try:
        names = {r[0] for r in ix.q("SELECT a.name FROM py_api a JOIN files f ON f.id = a.file_id "
                                    "WHERE f.path = 'torch/csrc/distributed/c10d/init.cpp'")}
        c10d = "torch._C._distributed_c10d"
        assert names == {f"{c10d}.ReduceOp.op", f"{c10d}.Backend.rank", f"{c10d}.Backend.Options.timeout",
                         f"{c10d}.Backend.Other.size"}
        res, text = call(ix, "trace", function_name=f"{c10d}.Backend.Options.timeout")
        assert "bound at torch/csrc/distributed/c10d/init.cpp:9 to torch::distributed::c10d::getRank" in text
    finally:
        ix.close()


def test_python_callers_of_an_op(py_indexed):
    _, ix = py_indexed
    _, text = call(ix, "trace", function_name="relu")
    assert "Called from Python: torch.nn.functional.relu (torch/nn/functional.py:" in text
    _, text = call(ix, "impact", function_name="at::native::relu", depth=1)
    assert "torch.nn.functional.relu  (via relu, calls it (torch.relu)" in text
    assert "torch.nn.modules.activation.ReLU.forward  (via torch.nn.functional.relu, calls it (F.relu)" in text


def test_a_python_caller_is_the_caller_of_the_overloads_its_arguments_fit(py_indexed):
    # torch.cumprod(input, dim) passes no out=: it was listed among cumprod.out's callers (as torch.sigmoid(x) among
    # sigmoid.out's); torch.cumsum(input, 0, out=total) is cumsum.out's
    from torchtalk.graph.nodes import op_node
    from torchtalk.graph.py_edges import bindings_into
    from torchtalk.graph.registry import registry
    from torchtalk.model import EdgeHow
    _, ix = py_indexed
    reg = registry(ix)

    def callers(op):
        return {e.src.key for e in bindings_into(ix, op_node(reg.by_full[op])) if e.how is EdgeHow.PY_CALLER}
    assert "torch.nn.functional._cumprod" in callers("cumprod")
    assert "torch.nn.functional._cumprod" not in callers("cumprod.out")
    assert "torch.nn.functional._add_all" in callers("cumsum.out") & callers("cumsum")
    assert "torch.nn.functional._cumsum" in callers("cumsum") - callers("cumsum.out")


def test_attribute_getters_and_setters_are_bindings_of_the_attribute(py_indexed):
    """Note [Attribute bindings]: the PyGetSetDef table python_variable.cpp gives torch._C.TensorBase as its
    tp_getset binds Tensor.volatile's getter and setter, and Tensor._base's getter (no setter: nullptr)."""
    _, ix = py_indexed
    rows = set(ix.q("SELECT name, kind, target FROM py_api WHERE kind IN ('getter', 'setter')"))
    assert rows == {("Tensor.volatile", "getter", "THPVariable_get_volatile"),
                    ("Tensor.volatile", "setter", "THPVariable_set_volatile"),
                    ("Tensor._base", "getter", "THPVariable_get_base")}
    res, text = call(ix, "called_by", function_name="THPVariable_set_volatile")
    assert "Python Tensor.volatile (setter)  torch/csrc/autograd/python_variable.cpp:" in text
    res, text = call(ix, "impact", function_name="THPVariable_get_base")
    assert "Tensor._base" in text


def test_no_registration_hint_without_registrations(py_indexed):
    """A function nothing calls and nothing registers: the answer does not point at a list that is not there."""
    _, ix = py_indexed
    res, text = call(ix, "called_by", function_name="dispatch_invert")
    assert "registration below" not in text or "Registrations that point at it" in text
    res, text = call(ix, "called_by", function_name="THPVariable_initModule")
    assert "none found in the indexed C++" in text and "registration below" not in text


INSTRUCTION_COUNTER = """\
// Fixture: torch/csrc/instruction_counter/Module.cpp binds its own free function start.
#include <torch/csrc/instruction_counter/Module.h>

namespace torch::instruction_counter {

static long start() {
  return 0;
}

void initModule(PyObject* module) {
  auto m = py::module::import("torch._C._instruction_counter");
  m.def("start", start);
  // ^ binds: start
}

} // namespace torch::instruction_counter
"""

KINETO_CLIENT = """\
// Fixture: a class with a method of the same name, elsewhere.
namespace torch::profiler::impl {
namespace {
class LibKinetoClient {
 public:
  void start() {
  }
};
} // namespace
} // namespace torch::profiler::impl
"""


def test_a_binding_names_its_function_as_written_in_its_file(tmp_path):
    """Note [Bound as written]: m.def("start", start) binds the file's own free function, not a method start."""
    tree = tmp_path / "pytorch"
    shutil.copytree(FIXTURE_TREE, tree)
    (tree / "torch/csrc/instruction_counter").mkdir(parents=True)
    (tree / "torch/csrc/instruction_counter/Module.cpp").write_text(INSTRUCTION_COUNTER)
    (tree / "torch/csrc/profiler").mkdir(parents=True, exist_ok=True)
    (tree / "torch/csrc/profiler/kineto_client_interface.cpp").write_text(KINETO_CLIENT)
    st = find_source(tree)
    refresh(st, workers=1, codegen=False)
    ix = Index(st.index_path, st.root)
    _, text = call(ix, "called_by", function_name="LibKinetoClient::start")
    assert "_instruction_counter.start" not in text
    _, text = call(ix, "called_by", function_name="torch::instruction_counter::start")
    assert "Python torch._C._instruction_counter.start" in text
    _, text = call(ix, "trace", function_name="torch._C._instruction_counter.start")
    assert "LibKinetoClient" not in text and "instruction_counter/Module.cpp:6" in text
    # called_by asks whether a function is one a binding names (``binds``) without listing what it names: the same
    # answer for every binding and every function of its name (both start's, the declarations too)
    from torchtalk.graph.py_edges import _bindings_by_target, binds, bound_functions
    from torchtalk.graph.symbols import _symbols
    pairs = []
    with ix.using():
        for name, rows in _bindings_by_target(ix).items():
            for fn in _symbols(ix, "name = ?", (name,), False):
                for _n, _kind, target, file_id, _line in rows:
                    pairs.append((binds(ix, target, file_id, fn),
                                  fn.id in {d.id for d in bound_functions(ix, target, file_id)}))
    assert pairs and all(a == b for a, b in pairs)
    assert (True, True) in pairs and (False, False) in pairs


def test_the_calls_naming_a_python_name_are_those_a_like_query_finds(py_indexed):
    """A Python function's (or an op's) callers are the calls whose callee is its name or ends with ``.name``, as
    SQLite's LIKE compares (ASCII case aside), read by id from a table of calls by their last name instead of a LIKE
    over every call: the same rows, in the same order, for every name the tree's calls end with."""
    from torchtalk.graph.py_call_index import _CALL_COLS
    from torchtalk.graph.py_call_index import calls_naming as _calls_naming
    from torchtalk.store.reader import like_literal
    tree, ix = py_indexed
    ix.close()
    with indexed_with(tree, {"torch/nn/called_by_case.py": (
        "import torch\n\ndef f(x):\n    torch.Add(x)\n    Add(x)\n    add(x)\n    torch.nn.functional.add(x)\n"
        "    x.add(1)\n")}) as ix:
        with ix.using():
            lasts = {c.rsplit(".", 1)[-1] for (c,) in ix.q("SELECT callee FROM py_call WHERE callee IS NOT NULL")}
            assert {"add", "Add", "relu"} <= lasts
            for last in sorted(lasts | {"ADD", "a.add", "functional.add", "nn.FUNCTIONAL.add"}):
                like = ix.q(f"SELECT {_CALL_COLS} WHERE (c.callee = ? OR c.callee LIKE ? ESCAPE '\\') AND c.recv = ''"
                            " ORDER BY c.file_id, c.line, c.id", (last, "%." + like_literal(last)))
                assert [tuple(r) for r in _calls_naming(ix, last)] == [tuple(r) for r in like], last
            names = [r[2] for r in _calls_naming(ix, "add")]
            assert "torch.Add" in names and "add" in names and "Add" not in names  # LIKE's case, = 's exactness
            assert [r[2] for r in _calls_naming(ix, "nn.FUNCTIONAL.add")] == ["torch.nn.functional.add"]  # dotted



def test_a_call_in_a_bound_lambda_is_the_python_names(py_indexed):
    """Note [Calls in a bound lambda] (graph/bound_lambdas.py): m.def("_jit_set_fusion_strategy", [](...) { ...
    setFusionStrategy(vec); }) made initJITBindings the caller of setFusionStrategy, and impact walked up to
    initModule, never naming torch._C._jit_set_fusion_strategy; the call is the Python name's."""
    tree, ix = py_indexed
    ix.close()
    init = "torch/csrc/functorch/init.cpp"
    src = (tree / init).read_text().replace(
        "void initFuncTorchBindings(PyObject* module) {",
        "static int depth_of(const at::Tensor& t) {\n  return 1;\n}\n\nvoid initFuncTorchBindings(PyObject* module) {")
    src = src.replace('  m.def("is_batchedtensor", &is_batchedtensor);\n',
                      '  m.def("is_batchedtensor", &is_batchedtensor);\n  m.def(\n      "maybe_depth",\n'
                      '      [](const at::Tensor& t) {\n        return depth_of(t);\n      });\n')
    with indexed_with(tree, {init: src}) as ix:
        at = line_of(tree, init, '"maybe_depth"') - 1  # the .def( line
        site = line_of(tree, init, "return depth_of(t);")
        res, text = call(ix, "called_by", function_name="torch::functorch::impl::depth_of")
        assert "initFuncTorchBindings" not in text, text
        assert (f"Python torch._C._functorch.maybe_depth (called in the lambda bound at {init}:{at})  "
                f"{init}:{site}") in text, text
        res, text = call(ix, "impact", function_name="torch::functorch::impl::depth_of")
        assert "torch._C._functorch.maybe_depth" in text and "initModule" not in text, text
