"""The kinds of things TorchTalk records and links, as enums shared by every layer.

Each enum's values are what the index stores, so renaming a value is a schema
change (bump ``store.schema.SCHEMA_VERSION``). Enums are ``str`` subclasses: a
value compares equal to its text, which keeps SQL parameters and JSON plain.

Size: one enum per kind, each with a comment per value, and nothing else; kept in one module so that every string
a layer decides on is found in one place (the enums of one area, dispatch keys or tests, have modules of their own).
"""

from __future__ import annotations

import sys
from enum import Enum

if sys.version_info >= (3, 11):
    from enum import StrEnum as StrEnum
else:  # pragma: no cover - Python 3.10

    class StrEnum(str, Enum):
        def __str__(self) -> str:
            return str(self.value)


class Layer(StrEnum):
    """Which extractor a file goes to (and which component of get_status it feeds)."""

    OPS = "ops"  # native_functions.yaml, tags.yaml, derivatives.yaml
    CPP = "cpp"  # C/C++/CUDA/ObjC++/Metal under aten/ c10/ torch/csrc/ functorch/
    PYTHON = "python"  # torch/**.py
    TESTS = "tests"  # test/**.py
    GENERATED = "generated"  # what the tree's own generators write (<generated>/...)


class FileStatus(StrEnum):
    OK = "ok"
    SKIPPED = "skipped"  # not read or not parsed at all (unreadable, not UTF-8, too big, ...)
    ERROR = "error"  # parsed, with the facts that could be read; the reason says what failed


class Variant(StrEnum):
    """``variants:`` of a native_functions.yaml entry: ``torch.X`` and/or ``Tensor.X``."""

    FUNCTION = "function"
    METHOD = "method"


class SymbolKind(StrEnum):
    """What a C++/CUDA/ObjC++/Metal symbol is."""

    FUNCTION = "function"
    METHOD = "method"
    CONSTRUCTOR = "constructor"
    IMPL_FUNC = "impl_func"  # TORCH_IMPL_FUNC(x): at::native::structured_x::impl
    META_FUNC = "meta_func"  # TORCH_META_FUNC(x): at::meta::structured_x::meta
    PRECOMPUTE_META_FUNC = "precompute_meta_func"
    GLOBAL_KERNEL = "global_kernel"  # __global__ (CUDA)
    DEVICE_FUNCTION = "device_function"  # __device__ / C10_HOST_DEVICE free functions
    METAL_KERNEL = "metal_kernel"  # kernel void f(...) in .metal shaders
    LIBRARY_BLOCK = "library_block"  # TORCH_LIBRARY*(ns, m) { ... }
    MACRO_BLOCK = "macro_block"  # NAME(args) { ... } at namespace scope (TEST(Suite, Case))
    REGISTRATION_LAMBDA = "registration_lambda"  # a lambda given to a registration macro

    @property
    def is_gpu_kernel(self) -> bool:
        return self in (SymbolKind.GLOBAL_KERNEL, SymbolKind.METAL_KERNEL)

    @property
    def is_structured(self) -> bool:
        return self in (SymbolKind.IMPL_FUNC, SymbolKind.META_FUNC, SymbolKind.PRECOMPUTE_META_FUNC)


class CallKind(StrEnum):
    """How a call site is written."""

    CALL = "call"  # f(...), ns::f(...)
    METHOD = "method"  # x.f(...), x->f(...)
    CONSTRUCT = "construct"  # T(...), T{...}, new T(...)
    LAUNCH = "launch"  # kernel<<<grid, block>>>(...)
    GPU_LAUNCH = "gpu_launch"  # gpu_kernel(iter, functor) and its kin: the functor runs on the GPU
    REF = "ref"  # a function or DispatchStub named without being called (passed on, &f)
    OPERATOR = "operator"  # an operator on an operand that may be a class: a != b, -a, a += b, a[i] (Note [Operators])

    @property
    def is_launch(self) -> bool:
        return self in (CallKind.LAUNCH, CallKind.GPU_LAUNCH)


# CallSite.detail of a REF site written as a template argument: f<g>(...) (Note [References] in extract/cpp_calls.py)
TEMPLATE_ARGUMENT = "template argument"


class RegistrationKind(StrEnum):
    """A macro or table entry that ties a name to a C++ function."""

    DECLARE_DISPATCH = "declare_dispatch"  # DECLARE_DISPATCH(fn_type, stub): target is the fn type
    DEFINE_DISPATCH = "define_dispatch"
    REGISTER_DISPATCH = "register_dispatch"  # REGISTER_*DISPATCH(stub, &kernel): key is the backend
    IMPL_FUNC = "impl_func"
    META_FUNC = "meta_func"
    LIBRARY_DEF = "library_def"  # m.def("schema") in TORCH_LIBRARY
    LIBRARY_IMPL = "library_impl"  # m.impl("op", fn) in TORCH_LIBRARY_IMPL: key is the dispatch key
    LIBRARY_FALLBACK = "library_fallback"
    PYBIND_DEF = "pybind_def"  # .def("name", &fn) on a pybind11 module or class
    PYMETHODDEF = "pymethoddef"  # {"name", fn, ...} in a PyMethodDef table
    PY_GETTER = "py_getter"  # {"name", (getter)get, (setter)set, ...} in a PyGetSetDef table: the getter
    PY_SETTER = "py_setter"  # ... and the setter (Note [Attribute bindings])

    @property
    def is_stub(self) -> bool:
        return self in (RegistrationKind.DECLARE_DISPATCH, RegistrationKind.DEFINE_DISPATCH,
                        RegistrationKind.REGISTER_DISPATCH)

    @property
    def is_python(self) -> bool:
        return self in (RegistrationKind.PYBIND_DEF, RegistrationKind.PYMETHODDEF, RegistrationKind.PY_GETTER,
                        RegistrationKind.PY_SETTER)


class ClassKind(StrEnum):
    """What a type with a body is: a class (``class``, ``struct``, ``union``), or an enum (a type with no members:
    ``ScalarType::Long`` is a value of it, not a member)."""

    CLASS = "class"
    ENUM = "enum"


class UsingKind(StrEnum):
    NAMESPACE = "namespace"  # using namespace at::native;
    DECLARATION = "declaration"  # using c10::maybe_wrap_dim;
    ALIAS = "alias"  # type aliases: using T = ...; / typedef ... T;  (name: the type as written)
    NAMESPACE_ALIAS = "namespace_alias"  # namespace fx = at::native::fx;


class GeneratedKind(StrEnum):
    """What generated code (and hand-written binding code) says in strings and comments, which C++ facts
    do not carry."""

    PARSER_SIGNATURE = "parser_signature"  # THPVariable_x's PythonArgParser strings
    BINDS_OP = "binds_op"  # "// aten::x.out(...)" above a dispatch lambda
    GRAD_FN = "grad_fn"  # a VariableType kernel creating XBackward0
    NODE_STRUCT = "node_struct"  # struct TORCH_API XBackward0 in autograd/generated/Functions.h
    PY_MODULE = "py_module"  # hand-written bindings: "m sub _C _functorch" (the module a pybind11 variable is)
    PY_METHODS = "py_methods"  # hand-written bindings: where a PyMethodDef table goes ("add methods extra_methods")
    PY_ALIAS = "py_alias"  # hand-written bindings: "mm spmm" (a PyMethodDef entry copied under a second name)


class FormulaMode(StrEnum):
    """Which mode of automatic differentiation a derivatives.yaml formula is for (Note [Formula modes]).

    Note [Formula modes]
    ~~~~~~~~~~~~~~~~~~~~
    An entry's keys other than ``name``, ``output_differentiability`` and ``dispatch`` each name the variables their
    formula is for, and torchgen's ``load_derivatives.py`` (``is_forward_derivative_definition``) decides its mode by
    the first of them: a name among the op's arguments (``self``, ``other``, ``grad_output``) gets a backward
    formula, the gradient of that input (compiled into the ``XBackward0`` node's ``apply``); any other name, an output
    (``result``, ``result0``, a named return such as ``values``), gets a forward-mode formula, the JVP of that output
    from the inputs' tangents (``self_t``) and primals (``self_p``), run only when a dual tensor reaches the op
    (``auto_element_wise`` and ``auto_linear`` are forward-mode markers that torchgen expands). A formula under
    ``dispatch:`` (``AutogradNestedTensor:``) follows the same rule and keeps its key. So only backward formulas are
    what an op's backward calls; the forward-mode ones are its JVP's calls (``EdgeKind.FORWARD_AD``), and a change
    to one is checked by the forward-mode suite (test/test_ops_fwd_gradients.py), not the backward one.
    """

    BACKWARD = "backward"  # the gradient of the named inputs
    FORWARD = "forward-mode AD"  # the JVP of the named outputs


class DerivativeMatch(StrEnum):
    """How an op comes by the derivatives.yaml entry its autograd kernel uses: torchgen's
    ``match_differentiability_info`` (torchgen/api/autograd.py) and ``add_view_copy_derivatives``."""

    EXACT = "exact"  # the entry is the op's own schema
    VIEW_COPY = "view_copy"  # a view_copy op without one: its view op's entry (alias_copy -> alias)
    FUNCTIONAL = "functional"  # an in-place or mutable op without one: the functional op's of the same signature
    MUTABLE = "mutable"  # a generated (autogen) functional variant: its mutable op's entry of the same signature
    FOREACH = "foreach"  # a _foreach_ op without one: the entry of the op it applies to each tensor


class NoEntry(StrEnum):
    """What autograd does with an op that has no derivatives.yaml entry, own or given (torchgen's gen_variable_type,
    Note [Registering AutogradNotImplemented boxed kernel]), as its Autograd registration shows."""

    COMPOSITE = "composite"  # a CompositeImplicitAutograd kernel: differentiated through the ops it calls
    NOT_IMPLEMENTED = "not_implemented"  # autogradNotImplementedFallback or a NotImplemented node: backward raises
    MANUAL = "manual"  # a hand-written Autograd kernel (torch/csrc/autograd/VariableTypeManual.cpp)
    NOT_DIFFERENTIABLE = "not_differentiable"  # a generated Autograd kernel that records no node
    UNREGISTERED = "unregistered"  # no Autograd kernel: the dispatcher's Autograd fallback runs
    UNKNOWN = "unknown"  # the generated layer, which holds the Autograd kernels, is not indexed


class PyFunctionKind(StrEnum):
    FUNCTION = "function"
    METHOD = "method"
    STATICMETHOD = "staticmethod"
    CLASSMETHOD = "classmethod"
    PROPERTY = "property"
    ASYNC = "async"


class PyReceiver(StrEnum):
    """What a Python method call's receiver is known to hold (Note [Builtin receivers] in model/python.py)."""

    UNKNOWN = ""  # anything: a Tensor method is assumed when the name is one
    SET = "set"
    FROZENSET = "frozenset"
    DICT = "dict"  # dict, collections.defaultdict / OrderedDict / Counter
    LIST = "list"
    TUPLE = "tuple"
    STR = "str"
    BYTES = "bytes"
    DEQUE = "deque"
    BUILTINS = "builtins"  # bound to builtins of more than one kind (a dict, later a list of its items)


class ArmKind(StrEnum):
    """What makes a span of a Python function's body an arm of a choice (Note [Branch arms] in model/python.py)."""

    IF = "if"  # the body of an ``if``, or ``a`` of ``a if c else b``
    ELIF = "elif"  # the body of an ``elif``
    ELSE = "else"  # an if chain's ``else``, ``b`` of ``a if c else b``, a try's ``else`` (its body did not raise)
    EXCEPT = "except"  # a handler of a ``try``: one alternative each
    PAST = "past"  # the rest of a block past a statement that may return (the way on when it did not)


class PyOpRefKind(StrEnum):
    """Where an op is given Python meaning."""

    DECOMPOSITION = "decomposition"
    REF = "ref"  # torch._refs
    META = "meta"  # torch._meta_registrations
    LOWERING = "lowering"  # torch._inductor.lowering
    PYTHON_IMPL = "python_impl"  # @impl / torch.library
    FALLBACK = "fallback"
    FAKE = "fake"  # register_op_impl (FakeTensor)


class InstantiationKind(StrEnum):
    DEVICE_TYPE = "device_type"  # instantiate_device_type_tests
    PARAMETRIZED = "parametrized"  # instantiate_parametrized_tests


class UtilKind(StrEnum):
    FUNCTION = "function"
    CLASS = "class"
    METHOD = "method"
    BOUND = "bound"  # a name a module-level assignment binds: requires_gpu = functools.partial(unittest.skipIf, ...)


class PyApiKind(StrEnum):
    """How a Python name reaches native code (the py_api link table)."""

    FUNCTION = "function"  # torch.X from variants: function
    METHOD = "method"  # Tensor.X from variants: method
    PY_MODULE = "python_module"  # torch._C._nn.X, torch.linalg.X, ... from python_module:
    FUNCTIONAL = "nn.functional"  # torch.nn.functional.X bound to a torch / torch._C name
    ALIAS = "alias"  # a Python name assigned to another that reaches an op (torch.spmm = torch.mm)
    DUNDER = "dunder"  # Tensor.__invert__ and kin, bound in torch/_tensor.py
    GENERATED_BINDING = "generated_binding"  # THPVariable_X in the generated python_*_functions.cpp
    PYMETHODDEF = "pymethoddef"  # a hand-written PyMethodDef entry (torch._C.X)
    PYBIND = "pybind"  # a pybind11 .def
    GETTER = "getter"  # reading an attribute: a PyGetSetDef entry's getter (Tensor.volatile)
    SETTER = "setter"  # assigning an attribute: a PyGetSetDef entry's setter (Note [Attribute bindings])
    LIBRARY = "library"  # torch.ops.ns.op: m.impl in a TORCH_LIBRARY_IMPL block outside aten (Note [Library ops])


class PyDefKind(StrEnum):
    """What a dotted Python name is defined as in its own module (graph/pynames.py)."""

    CLASS = "class"
    FUNCTION = "function"  # a def (the last one, when @overload stubs come first)
    ASSIGN = "assign"  # a name bound by assignment: linear = _add_docstr(torch._C._nn.linear, ...)

    @property
    def noun(self) -> str:
        """How answers call it: "class", "function", or "name" (bound by assignment)."""
        return "name" if self is PyDefKind.ASSIGN else self.value


class HitKind(StrEnum):
    """What a search hit is (values are how answers say it)."""

    OP = "op"
    BINDING = "binding"  # a Python name bound to native code
    PY_FUNCTION = "Python function"  # a function or method of the tree's torch/ package
    PY_CLASS = "Python class"  # a class of the tree's torch/ package
    CPP_FUNCTION = "C++ function"
    CPP_CLASS = "C++ class"  # a class, struct or union with a body
    CPP_ENUM = "C++ enum"  # an enum with a body
    GPU_KERNEL = "GPU kernel"
    STUB = "DispatchStub"
    AUTOGRAD_NODE = "autograd node"


class MatchKind(StrEnum):
    """How a search hit matched the query (best first)."""

    EXACT = "exact"
    PREFIX = "prefix"
    SUBSTRING = "substring"
    KERNEL = "kernel"  # an op found through the name of one of its kernels


class CodegenState(StrEnum):
    """What an index build does with the tree's code generators (index/generated.py)."""

    DISABLED = "disabled"  # --no-codegen, or their inputs cannot be read
    REUSE = "reuse"  # their output for the same inputs is there
    RUNNING = "running"  # started in parallel with parsing
    FAILED = "failed"  # the same inputs failed before: not retried


class NodeKind(StrEnum):
    """Typed nodes of the graph (graph/): what an answer can start from or reach."""

    OP = "op"  # a native_functions.yaml overload (or one torchgen autogenerates)
    CPP_FUNCTION = "cpp_function"
    STUB = "stub"  # a DispatchStub
    GPU_KERNEL = "gpu_kernel"  # __global__ / Metal kernel, or the functor of a launch helper
    PY_FUNCTION = "py_function"
    PY_CLASS = "py_class"
    BINDING = "binding"  # a Python name bound to native code
    WRAPPER = "wrapper"  # a generated Register<Key>.cpp wrapper
    AUTOGRAD_NODE = "autograd_node"  # XBackward0 and its apply()
    TEST = "test"
    UNRESOLVED = "unresolved"  # a call whose target is not in the index (kept by name)


class EdgeKind(StrEnum):
    """Typed edges of the graph; each is defined (and crossed) in one place in graph/.

    Note [Edge direction]: every edge points the way execution goes (caller to
    callee, op to kernel, stub to registered kernel), so ``down`` follows calls and
    ``up`` finds what reaches a node.
    """

    CALL = "call"  # C++ function -> C++ function it calls
    DISPATCH_CALL = "dispatch_call"  # C++ function -> op it calls through the dispatcher
    KERNEL = "kernel"  # op -> its kernel for one dispatch key (structured_delegate, ufunc, implicit)
    OP_CALL = "op_call"  # op -> op its composite kernel calls
    BACKWARD = "backward"  # op -> op its derivatives.yaml backward formula calls (Note [Formula modes])
    FORWARD_AD = "forward_ad"  # op -> op its derivatives.yaml forward-mode (JVP) formula calls
    STUB_CALL = "stub_call"  # C++ function -> DispatchStub it calls (or passes on)
    STUB_KERNEL = "stub_kernel"  # DispatchStub -> kernel registered for one backend
    LAUNCH = "launch"  # host function -> GPU kernel (<<<>>> or a launch helper's functor)
    BINDING = "binding"  # Python name -> op or C++ function it is bound to
    WRAPPER = "wrapper"  # op -> generated wrapper the dispatcher calls for one key
    ENTRY = "entry"  # op -> its dispatcher entry (at::_ops::S::call / redispatch): every C++ call of the op
    AUTOGRAD = "autograd"  # op -> the autograd node its Autograd kernel creates
    PY_CALL = "py_call"  # Python function -> Python function, class or op it calls
    UNRESOLVED = "unresolved"  # C++ function -> a call target not found in the index

    @property
    def crosses_dispatcher(self) -> bool:
        return self in (EdgeKind.DISPATCH_CALL, EdgeKind.KERNEL, EdgeKind.OP_CALL, EdgeKind.WRAPPER)


class EdgeHow(StrEnum):
    """How the graph made an edge, where its kind alone does not say (Note [Edge provenance]).

    Note [Edge provenance]: an edge is a claim, and how sure it is depends on how it was made: a call
    resolved to the one definition it names is plain; a call several overloads could answer is a
    candidate; a call that found only a declaration, a name passed on without a call, a call through an
    untyped receiver or a use found in the source text say so. Code decides on this field, never on
    ``Edge.note`` (display text).
    """

    DIRECT = "direct"  # the plain case of its kind: a call resolved to its definition, a registration as read
    DECLARATION = "declaration"  # CALL: only a declaration was found (the definition is not indexed)
    CANDIDATE = "candidate"  # CALL: one of several overloads the call's arguments do not decide between
    CANDIDATE_DECLARATION = "candidate_declaration"  # both: a candidate of which only a declaration was found
    OVERRIDE = "override"  # CALL: a call of a method its class only declares runs this override in a derived class,
    #                        one of several the object's class chooses between (Note [Virtual calls] in
    #                        graph/overrides.py)
    OVERRIDE_OF_BODY = "override_of_body"  # CALL: a call of a virtual method with a body may run this override
    #                                        instead of that body (the GPU walk follows the body alone)
    PASSED_ON = "passed_on"  # STUB_CALL: the stub is named without being called (handed to a helper)
    TEXT = "text"  # STUB_CALL: found in the source text, where no call site is recorded (Note [Stub uses])
    HELPER = "helper"  # OP_CALL: the composite kernel calls the op through a file-local helper
    AUTOGEN_COPY = "autogen_copy"  # OP_CALL: an autogen'd variant's kernel (torchgen's) copies its result with another
    #                                op (copy_ into out=, clone): bookkeeping around the variant it runs
    MACRO = "macro"  # UNRESOLVED: a macro (AT_DISPATCH_..., TORCH_CHECK), not a function
    STD = "std"  # UNRESOLVED: the standard library's (::abs, std::max), not in the tree
    UNTYPED_RECEIVER = "untyped_receiver"  # PY_CALL: ``x.f()`` with x of unknown type, taken for a Tensor method
    ATTRIBUTE = "attribute"  # PY_CALL: ``self.linear1(x)``, an instance the class made (Note [Submodules])
    FUNCTION_APPLY = "function_apply"  # PY_CALL: ``C.apply(...)`` of a torch.autograd.Function subclass: C.forward
    BOUND_NAME = "bound_name"  # PY_CALL into an op: a call of a name bound to its function (F.gelu = _add_docstr(
    #                            torch._C._nn.gelu, ...)), the overloads its arguments take; the note is the name's fq
    LOCAL = "local"  # PY_CALL: ``mod(x)``, ``self.layers[i](x)``, a callable a local (a loop variable, a parameter) or
    #                  a container holds: named, not followed (Note [Loop callables] in extract/pyrecv.py)
    PY_CALLER = "py_caller"  # BINDING into an op or function: a public Python function whose body calls it
    META = "meta"  # KERNEL into a TORCH_META_FUNC: the structured op's meta function, which its wrappers run first
    AUTOGEN = "autogen"  # KERNEL into the kernel torchgen writes for an autogen'd variant (it runs the variant the
    #                      entry names, then copies the result: into out=, or a clone)
    REFERENCED = "referenced"  # CALL: the function is named without being called (put in a table, handed to a
    #                            helper, TORCH_FN(f), &f): it runs where what holds it is called (Note [References]
    #                            in extract/cpp_calls.py)
    PARAMETER = "parameter"  # CALL: a call of a parameter that holds a function, of a function a caller passes
    #                          in its place (Note [Calls of a function parameter] in graph/param_calls.py)
    BOUND_LAMBDA = "bound_lambda"  # BINDING: a call in the lambda a pybind11 .def binds the Python name to (Note
    #                                [Calls in a bound lambda] in graph/bound_lambdas.py)
    HANDED = "handed"  # CALL: a method a template calls on an object this call hands it (Note [Handed objects]);
    #                    LAUNCH: a kernel handed to the lambda whose parameter it launches (Note [Kernels handed to a
    #                    launching lambda])

    @property
    def is_candidate(self) -> bool:
        return self in (EdgeHow.CANDIDATE, EdgeHow.CANDIDATE_DECLARATION, EdgeHow.OVERRIDE, EdgeHow.OVERRIDE_OF_BODY)

    @property
    def is_override(self) -> bool:
        return self is EdgeHow.OVERRIDE or self is EdgeHow.OVERRIDE_OF_BODY

    @property
    def is_declaration(self) -> bool:
        return self in (EdgeHow.DECLARATION, EdgeHow.CANDIDATE_DECLARATION)


class CutKind(StrEnum):
    """Which limit of a walk (graph/walk.py) left something out (Note [No silent cut])."""

    FAN_OUT = "fan_out"  # one node had more new edges than a node may add: the best-ranked were followed
    DEPTH = "depth"  # nodes reached at the last level were not walked from
    NODES = "nodes"  # the walk stopped at its node budget
    LEVEL = "level"  # a level had more nodes than a level may expand (LevelCap): the rest were kept, not walked from
    # the GPU walk's limit of calls through the dispatcher per chain (graph/gpu.py HOPS): the ops that an op reached
    # that way calls in turn were kept as reached, not walked into; ``at`` is the op whose calls were not followed
    HOPS = "hops"
    # a Python function reached outside the modules the answer expands (query/pywalk.py): kept as reached, not walked
    # into; ``at`` is the first of them, ``left`` how many
    SCOPE = "scope"
