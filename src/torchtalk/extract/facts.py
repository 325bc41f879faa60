"""The facts extractors produce: one row type per store table.

Extractors are pure functions ``(relpath, bytes) -> FileFacts`` that run in worker
processes, so facts are plain NamedTuples (cheap to pickle, no database handles).
A ``FileFacts`` maps a row type's name to the rows found in one file.

Rows never hold database ids. Where a row points at another row *of the same
file* (a call inside a function), it holds that row's index in the file's list;
``REFS`` says which fields are such local references, and the store turns them
into ids when it inserts the file. Every line number is 1-based.
"""

from __future__ import annotations

from typing import NamedTuple

FileFacts = dict[str, list[tuple]]

# ---------------------------------------------------------------- op registry (YAML)


class Op(NamedTuple):
    """One ``- func:`` entry of native_functions.yaml (one overload)."""

    name: str  # base name: "add", "add_" (in-place keeps its underscore)
    overload: str  # "Tensor", "out", "" for the default overload
    full_name: str  # "add.Tensor", "relu"
    schema: str  # the func string as written
    line: int  # the "- func:" line
    end_line: int
    arguments: str  # JSON list of {name, type, default, kwarg_only, out, annotation}
    returns: str  # JSON list of {name, type, annotation}
    variants: str  # "function", "function, method", "method"
    python_module: str  # "", "nn", "linalg", "fft", "special", "sparse", "nested"
    structured: bool
    structured_delegate: str  # "cumsum.out" or ""
    structured_inherits: str
    precomputed: str  # JSON or ""
    ufunc_inner_loop: str  # JSON {key: loop} or ""
    autogen: str  # comma-joined
    tags: str  # comma-joined
    device_check: str
    device_guard: str
    manual_cpp_binding: bool
    category_override: str
    cpp_no_default_args: str  # comma-joined
    is_inplace: bool
    is_out: bool
    extra: str  # JSON of any other field, so nothing in the YAML is dropped


class OpDispatch(NamedTuple):
    """One (dispatch key, kernel) of an op; comma-joined keys become one row each."""

    op: int  # local ref -> Op
    key: str  # "CPU", "CompositeImplicitAutograd"
    kernel: str  # "relu", "at::native::foo" as written
    line: int


class Tag(NamedTuple):
    name: str
    desc: str
    line: int


class Derivative(NamedTuple):
    """One ``- name:`` entry of derivatives.yaml."""

    op_full_name: str  # "atan2", "add.Tensor" (matches Op.full_name)
    schema: str
    line: int
    output_differentiability: str  # "" or "[True, False]"
    dispatch: str  # JSON of dispatch-specific formulas, "" if none
    extra: str  # JSON of other fields (result, ...)


class DerivativeFormula(NamedTuple):
    derivative: int  # local ref -> Derivative
    variables: str  # "self, other", "result", "grad_output"
    formula: str
    line: int
    kind: str  # "input" | "result" | "dispatch:<Key>"


# ---------------------------------------------------------------- C++ / CUDA / ObjC++


class CppSymbol(NamedTuple):
    """A function, method, structured kernel or GPU kernel (definition or declaration)."""

    name: str  # last component users type: "index_select_cuda"; TORCH_IMPL_FUNC(x) -> "x"
    qualname: str  # "at::native::index_select_cuda"; anonymous namespaces as "(anonymous)";
    #                TORCH_IMPL_FUNC(x) -> "at::native::structured_x::impl"
    params: str  # normalised parameter list "(const Tensor& self, int64_t dim)": keeps overloads apart
    kind: str  # function | method | constructor | impl_func | meta_func | precompute_meta_func
    #            | global_kernel | device_function (__device__/C10_HOST_DEVICE free functions)
    #            | library_block (TORCH_LIBRARY*(...) { ... }, name "TORCH_LIBRARY_IMPL(aten, CPU)")
    #            | macro_block (other NAME(args) { ... } at namespace scope: TEST(Suite, Case))
    line: int  # line of the name (TORCH_IMPL_FUNC(...) line; for macro expansions, the invocation)
    end_line: int
    is_definition: bool
    macro: str  # "" or the macro whose expansion produced it ("CREATE_UNARY_TORCH_IMPL_FUNC")


class CppCall(NamedTuple):
    """A call site inside a function body. Never from comments or string literals."""

    caller: int  # local ref -> CppSymbol (the enclosing definition), -1 outside any (static initialisers)
    callee: str  # last identifier: "empty", "add_", "call" (for at::_ops::X::call)
    qualifier: str  # scope as written minus template args: "at", "at::_ops::add_Tensor", "", "::" (global);
    #                 receiver text for methods (first 80 chars)
    line: int
    kind: str  # call | method | launch (<<<>>>) | gpu_launch (gpu_kernel & kin) | construct
    detail: str  # launch: "grid, block[, smem, stream]"; gpu_launch: functor name or "lambda@LINE"


class CppRegistration(NamedTuple):
    """A registration macro or table entry that ties a name to a C++ function."""

    kind: str  # declare_dispatch | define_dispatch | register_dispatch | impl_func | meta_func
    #            | library_def | library_impl | library_fallback | pybind_def | pymethoddef
    name: str  # stub ("add_stub"), op ("add.Tensor" without "aten::"), or Python name
    target: str  # kernel/function as written, minus "&": "CPU_CAPABILITY::sign_kernel", "THPModule_setNumThreads";
    #              "lambda@LINE" for lambdas; declare_dispatch: the function-pointer type
    key: str  # backend / dispatch key / namespace: "CPU", "CUDA", "MPS", "aten", table name,
    #           pybind: receiver at the root of the .def chain ("m", 'py::class_<X>(m, "X")')
    line: int
    detail: str  # the macro or call as written (REGISTER_DISPATCH, m.impl, PyMethodDef table name, schema string,
    #              ".def"/".def_static"/... for pybind)
    scope: int  # local ref -> CppSymbol enclosing it, or -1


class CppUsing(NamedTuple):
    """``using namespace X;``: widens name resolution for the code after it."""

    namespace: str
    line: int
    scope: str  # qualname of the namespace/function it appears in, "" at file level


class GeneratedFact(NamedTuple):
    """What generated code says in strings and comments, which C++ facts do not carry."""

    kind: str  # parser_signature (THPVariable_x's PythonArgParser strings) | binds_op ("// aten::x.out(...)")
    #            | grad_fn (a VariableType kernel creating XBackward0)
    value: str  # the signature ("atan2(Tensor input, ...)|deprecated"), the op ("atan2.out"), the node class
    line: int
    scope: int  # local ref -> CppSymbol of the enclosing function, -1 if none


# ---------------------------------------------------------------- Python modules (torch/**)


class PyClass(NamedTuple):
    module: str  # "torch.nn.modules.linear"
    qualname: str  # "Linear", "Outer.Inner"
    name: str
    bases: str  # JSON list of base expressions as written: ["Module"], ["nn.Module"], ["_ConvNd"]
    line: int  # the "class" line
    end_line: int
    doc: str  # first line of the docstring
    decorators: str  # JSON list of decorator source texts


class PyFunction(NamedTuple):
    module: str
    qualname: str  # "Linear.forward", "linear"; nested defs: "outer.<locals>.inner"
    name: str
    cls: str  # enclosing class qualname or "" (also "" for defs nested in a def)
    signature: str  # "(self, input: Tensor) -> Tensor" with defaults, X | None, *args, kw-only
    line: int  # the "def" line
    end_line: int
    doc: str
    decorators: str  # JSON list of decorator source texts
    kind: str  # function | method | staticmethod | classmethod | property | async


class PyCall(NamedTuple):
    func: int  # local ref -> PyFunction, -1 for module level
    callee: str  # dotted as written: "F.linear", "torch._C._nn.linear", "self._conv_forward";
    #              a call through a local alias (func = _single_tensor_sgd; func()) names the target
    line: int


class PyImport(NamedTuple):
    alias: str  # local name bound: "F", "torch", "linear"; "*" for a star import
    target: str  # absolute dotted target (relative imports resolved): "torch.nn.functional";
    #              for "*", the module star-imported
    line: int


class PyAssign(NamedTuple):
    """Module-level ``name = <dotted>`` or ``name = wrapper(<dotted>, ...)`` (``_add_docstr``)."""

    name: str
    value: str  # dotted name it refers to: "torch._C._nn.linear"
    line: int


class PyOpRef(NamedTuple):
    """Where an op is given Python meaning: decompositions, refs, meta, Inductor lowerings."""

    kind: str  # decomposition | ref | meta | lowering | python_impl | fallback | fake (register_op_impl)
    op: str  # "aten.linear", "aten.add.Tensor", "aten.add"; other torch.ops namespaces as
    #          "prims.xor_sum"; Python callables lowered by path as "torch.as_tensor"
    func: int  # local ref -> PyFunction, -1 if not attached to a function
    line: int


# ---------------------------------------------------------------- tests (test/**, torch/testing/_internal/**)


class TestClass(NamedTuple):
    __test__ = False  # not a pytest class
    name: str
    bases: str  # JSON list as written
    line: int
    end_line: int
    decorators: str  # JSON list


class TestMethod(NamedTuple):
    __test__ = False  # not a pytest class
    cls: int  # local ref -> TestClass, -1 for module-level test functions
    name: str  # "test_softmax"
    line: int
    end_line: int
    decorators: str  # JSON list: ["dtypes(torch.float, torch.double)", "onlyCUDA", "ops(op_db)"]
    touches: str  # space-separated names the body uses: "torch.cumsum .cumsum F.softmax nn.Linear"


class TestInstantiation(NamedTuple):
    __test__ = False  # not a pytest class
    kind: str  # device_type | parametrized
    cls: str  # generic class name as passed
    line: int
    options: str  # JSON of keyword options (only_for, except_for, allow_mps, ...)


class OpInfoEntry(NamedTuple):
    name: str  # OpInfo('cumsum', ...) first argument
    ctor: str  # OpInfo | UnaryUfuncInfo | BinaryUfuncInfo | ReductionOpInfo | ...
    aten_name: str
    variant_test_name: str
    aliases: str  # space-separated
    line: int
    db: str  # the list it belongs to ("op_db", "python_ref_db", ...) or ""


class TestUtil(NamedTuple):
    """A helper defined in torch/testing/_internal, classified from its source."""

    __test__ = False  # not a pytest class
    name: str  # "instantiate_device_type_tests", "TestCase.assertEqual"
    kind: str  # function | class | method
    category: str  # fixtures | assertions | decorators | opinfo | other (rules: extract/testutils.py)
    line: int
    doc: str  # one line


# ---------------------------------------------------------------- registry of row types

ROW_TYPES: dict[str, type] = {
    t.__name__: t
    for t in (
        Op, OpDispatch, Tag, Derivative, DerivativeFormula,
        CppSymbol, CppCall, CppRegistration, CppUsing, GeneratedFact,
        PyClass, PyFunction, PyCall, PyImport, PyAssign, PyOpRef,
        TestClass, TestMethod, TestInstantiation, OpInfoEntry, TestUtil,
    )
}

# Fields that hold an index into another list of the same file's facts.
REFS: dict[str, dict[str, str]] = {
    "OpDispatch": {"op": "Op"},
    "DerivativeFormula": {"derivative": "Derivative"},
    "CppCall": {"caller": "CppSymbol"},
    "CppRegistration": {"scope": "CppSymbol"},
    "GeneratedFact": {"scope": "CppSymbol"},
    "PyCall": {"func": "PyFunction"},
    "PyOpRef": {"func": "PyFunction"},
    "TestMethod": {"cls": "TestClass"},
}
