"""Facts of the tests (test/**, torch/testing/_internal/**), one file at a time."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Annotated

from .facts import Ref, Stored, check_enum, check_line
from .kinds import InstantiationKind, UtilKind
from .loc import Loc


@dataclass(frozen=True, slots=True)
class TestClass:
    __test__ = False  # not a pytest class
    name: str
    bases: str  # JSON list as written
    line: int
    end_line: int
    decorators: str  # JSON list
    # Note [Classes pytest may not collect]: the line of a module-level ``del`` of it (0: none), and the condition
    # of the module-level ``if`` arms it is defined in ("": none), ``and``-joined, an ``else`` arm as ``not (...)``
    deleted: int
    guard: str
    id: Annotated[int, Stored.ID] = field(default=0, compare=False)
    path: Annotated[str, Stored.PATH] = field(default="", compare=False)

    def __post_init__(self) -> None:
        check_line("TestClass", self.line, self.end_line)

    @property
    def loc(self) -> Loc:
        return Loc(self.path, self.line)


@dataclass(frozen=True, slots=True)
class TestMethod:
    __test__ = False  # not a pytest class
    cls: Annotated[int, Ref("TestClass")]  # NO_REF for module-level test functions
    name: str  # "test_softmax"
    line: int
    end_line: int
    decorators: str  # JSON list: ["dtypes(torch.float, torch.double)", "onlyCUDA", "ops(op_db)"]
    touches: str  # space-separated names the body uses: "torch.cumsum .cumsum F.softmax nn.Linear"
    id: Annotated[int, Stored.ID] = field(default=0, compare=False)
    path: Annotated[str, Stored.PATH] = field(default="", compare=False)

    def __post_init__(self) -> None:
        check_line("TestMethod", self.line, self.end_line)

    @property
    def loc(self) -> Loc:
        return Loc(self.path, self.line)


# Note [Classes pytest may not collect]
# ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
# pytest collects the TestCases of a module's namespace as it is when the module has run. A class a module-level
# ``del`` removes is not there (test/test_proxy_tensor.py: ``del TestGenericProxyTensor`` after deriving
# TestGenericProxyTensorReal/Fake/Symbolic from it), though the classes derived from it, and those generated from it
# before the ``del``, run its tests. A class defined in the arm of a module-level ``if`` is there only when that
# arm runs (test/distributed/test_c10d_spawn_ucc.py: ``if sys.version_info < (3, 9):``, which PyTorch 2.6's Python
# never takes). The extractor records both as written; the queries say so (query/testclasses.py).


# Note [Instantiation options]
# ~~~~~~~~~~~~~~~~~~~~~~~~~~~~
# TestInstantiation.options holds each option's value as JSON: the literal written, or the value of a module-level
# constant it names (``only_for = ("cpu")`` then ``only_for=only_for``: "cpu"; test/test_proxy_tensor.py). A value
# the file does not give as such (a call, a name bound twice, an import) is ``{UNREAD: "<its source text>"}``: the
# option is unknown, never a device named by its text.
UNREAD = "unread"

# Words after an op's name in a test's name that say how the op is run, not which other name the test is of
# (Note [Named after another name] in query/testmatch.py): test_linear_backward is linear's test, though
# linear_backward is an op too.
TEST_FLAG_WORDS = ("backward", "forward", "grad", "gradgrad", "out", "inplace", "autograd", "errors", "error")

# The class every test parametrizer of common_utils derives from (@parametrize, @ops, @modules, @optims, swap, ...):
# a decorator whose class has it in its MRO renames the tests it decorates (Note [Parametrizers rename tests] in
# query/parametrizers.py)
PARAMETRIZER_BASE = "torch.testing._internal.common_utils._TestParametrizer"


@dataclass(frozen=True, slots=True)
class TestInstantiation:
    __test__ = False  # not a pytest class
    kind: InstantiationKind
    cls: str  # generic class name as passed
    line: int
    options: str  # JSON of keyword options (only_for, except_for, allow_mps, ...)
    id: Annotated[int, Stored.ID] = field(default=0, compare=False)
    path: Annotated[str, Stored.PATH] = field(default="", compare=False)

    def __post_init__(self) -> None:
        check_enum("TestInstantiation", "kind", self.kind, InstantiationKind)


# Note [OpInfo names set after construction]
# An OpInfo subclass may rename its entry: ForeachFuncInfo("neg") is the entry "_foreach_neg"
# (torch/testing/_internal/opinfo/core.py, ForeachFuncInfo.__post_init__: ``self.name = f"_foreach_{name}"``), which
# is also the name its generated tests carry (test_foreach.py's test_unary_op__foreach_neg_...). Constructor -> the
# prefix its __post_init__ puts before the name written.
OPINFO_NAME_PREFIXES = {"ForeachFuncInfo": "_foreach_"}

# A test suffix made at run time from torch.testing._internal.inductor_utils' GPU_TYPE ("cuda" or "xpu" when the
# tests run; copy_tests(CommonTemplate, GPUTests, GPU_TYPE)), as test names show it: a CUDA copy among others.
GPU_TYPE_SUFFIX = "<GPU_TYPE>"


@dataclass(frozen=True, slots=True)
class OpInfoEntry:
    name: str  # OpInfo('cumsum', ...) first argument
    ctor: str  # OpInfo | UnaryUfuncInfo | BinaryUfuncInfo | ReductionOpInfo | ...
    aten_name: str
    variant_test_name: str
    aliases: str  # space-separated
    line: int
    db: str  # the list it belongs to ("op_db", "python_ref_db", ...) or ""
    flags: str = ""  # the keywords it passes as True, space-separated ("supports_sparse supports_sparse_csr")
    # aten_backward_name='hardtanh_backward': the backward op its gradient tests run and test_decomp checks
    aten_backward_name: str = ""
    id: Annotated[int, Stored.ID] = field(default=0, compare=False)
    path: Annotated[str, Stored.PATH] = field(default="", compare=False)

    @property
    def loc(self) -> Loc:
        return Loc(self.path, self.line)


@dataclass(frozen=True, slots=True)
class OpInfoList:
    """A module-level list of OpInfo entries drawn from other lists (Note [OpInfo lists] in query/opinfo_lists.py):
    ``sparse_unary_ufuncs = [op for op in op_db if isinstance(op, UnaryUfuncInfo) and op.supports_sparse]``,
    ``ops_and_refs = op_db + python_ref_db``, ``list(filter(lambda op: op.ref is not None, unary_ufuncs))``.
    Conditions other than isinstance and a true attribute are not kept, only counted (``dropped``)."""

    name: str
    sources: str  # the lists it draws from, space-separated
    isa: str  # the classes an entry must be an instance of (any of them), space-separated ("" any)
    flags: str  # the attributes an entry must have true, space-separated (op.supports_sparse)
    dropped: int  # conditions not kept (op.ref is not None, _op_supports_any_sparse(op)): which entries pass is unknown
    line: int
    id: Annotated[int, Stored.ID] = field(default=0, compare=False)
    path: Annotated[str, Stored.PATH] = field(default="", compare=False)


@dataclass(frozen=True, slots=True)
class OpTestMark:
    """A skip, xfail or decorator that names one op's generic (@ops) tests: a ``DecorateInfo`` in an OpInfo
    entry's ``skips=`` / ``decorators=``, or an ``xfail("op")`` / ``skip("op")`` / ``decorate("op", ...)``
    in a test file's lists (functorch's ``skipOps('TestOperators', 'test_grad', {xfail('cumsum')})``)."""

    __test__ = False  # not a pytest class
    op: str  # the OpInfo name it applies to: "nn.functional.group_norm" (for PythonRefInfo: torch_opinfo_name)
    variant: str  # the OpInfo variant_test_name, "" for the default one
    entry: str  # the OpInfo entry that holds it ("_refs.cumsum"), "" for a test file's list
    # how it is marked: "unittest.expectedFailure", "unittest.skip('Skipped!')", "xfail", "toleranceOverride(...)"
    mark: str
    test_class: str  # "TestJit", "" for every class
    test_name: str  # "test_variant_consistency_jit", "" for every test
    device_type: str  # "cpu", "cuda", ""
    dtypes: str  # "torch.float32 torch.float64", ""
    line: int
    id: Annotated[int, Stored.ID] = field(default=0, compare=False)
    path: Annotated[str, Stored.PATH] = field(default="", compare=False)

    def __post_init__(self) -> None:
        check_line("OpTestMark", self.line)

    @property
    def loc(self) -> Loc:
        return Loc(self.path, self.line)


@dataclass(frozen=True, slots=True)
class TestUtil:
    """A helper defined in torch/testing/_internal, classified from its source."""

    __test__ = False  # not a pytest class
    name: str  # "instantiate_device_type_tests", "TestCase.assertEqual"
    kind: UtilKind
    category: str  # fixtures | assertions | decorators | opinfo | other (rules: extract/testutils.py)
    line: int
    doc: str  # one line
    id: Annotated[int, Stored.ID] = field(default=0, compare=False)
    path: Annotated[str, Stored.PATH] = field(default="", compare=False)

    def __post_init__(self) -> None:
        check_enum("TestUtil", "kind", self.kind, UtilKind)

    @property
    def loc(self) -> Loc:
        return Loc(self.path, self.line)
