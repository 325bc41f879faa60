"""TorchTalk's shared vocabulary: enums and frozen dataclasses every layer speaks.

Imports nothing else of the package. Extractors emit these facts, the store maps
them to rows (one table per fact type, ``FACT_TABLES``), the graph links them, the
queries return them inside their results.
"""

from __future__ import annotations

from typing import Any

from .cpp import CallSite, CppClass, CppField, CppSymbol, GeneratedFact, Registration, Using
from .dispatch import (
    COMPOSITE_KEYS,
    DispatchKey,
    KeyTier,
    is_composite,
    key_tier,
    parse_key,
    runs_on,
    traced_by_autograd,
)
from .facts import NO_REF
from .graph import Branch, Cut, Edge, Node
from .kinds import (
    TEMPLATE_ARGUMENT,
    ArmKind,
    CallKind,
    ClassKind,
    CodegenState,
    CutKind,
    DerivativeMatch,
    EdgeHow,
    EdgeKind,
    FileStatus,
    FormulaMode,
    GeneratedKind,
    HitKind,
    InstantiationKind,
    Layer,
    MatchKind,
    NodeKind,
    NoEntry,
    PyApiKind,
    PyDefKind,
    PyFunctionKind,
    PyOpRefKind,
    PyReceiver,
    RegistrationKind,
    StrEnum,
    SymbolKind,
    UsingKind,
    UtilKind,
    Variant,
)
from .loc import GENERATED_PREFIX, Loc
from .ops import (
    PY_MODULES,
    Derivative,
    DerivativeFormula,
    DispatchEntry,
    EntryOrigin,
    Op,
    OpDispatch,
    Tag,
    variant_base,
)
from .python import PyAssign, PyAttr, PyCall, PyClass, PyFunction, PyImport, PyOpRef
from .raises import RaiseKind, RaiseSite
from .schema import TENSOR_BINARY_OPERATORS, TENSOR_UNARY_OPERATORS, Argument, FunctionSchema, Return, SchemaError
from .tests import OpInfoEntry, OpInfoList, OpTestMark, TestClass, TestInstantiation, TestMethod, TestUtil

# One table per fact type, named as the index has always named them. Facts other rows
# point at (``ref``) come first, so their ids exist when the referrers are written.
FACT_TABLES: dict[str, type] = {
    "op": Op, "op_dispatch": OpDispatch, "tag": Tag, "derivative": Derivative,
    "derivative_formula": DerivativeFormula,
    "cpp_symbol": CppSymbol, "cpp_call": CallSite, "cpp_registration": Registration, "cpp_using": Using,
    "cpp_class": CppClass, "cpp_field": CppField,
    "generated_fact": GeneratedFact,
    "py_class": PyClass, "py_function": PyFunction, "py_call": PyCall, "py_import": PyImport,
    "py_assign": PyAssign, "py_attr": PyAttr, "py_op_ref": PyOpRef,
    "test_class": TestClass, "test_method": TestMethod, "test_instantiation": TestInstantiation,
    "op_info_entry": OpInfoEntry, "op_info_list": OpInfoList, "test_util": TestUtil, "op_test_mark": OpTestMark,
    "raise_site": RaiseSite,
}
TABLE_OF: dict[type, str] = {cls: table for table, cls in FACT_TABLES.items()}

# What an extractor returns for one file: facts by type, and under FileProblems the problems it met
# (strings "path:line: what"), which the index keeps with the file's status.
FileFacts = dict[type, list[Any]]


class FileProblems:
    """The key of ``FileFacts`` under which an extractor lists what it could not read in a file."""

__all__ = [
    "ArmKind", "Argument", "Branch", "COMPOSITE_KEYS", "CallKind", "CallSite", "ClassKind", "CodegenState", "CppClass",
    "CppField", "CppSymbol", "Cut", "CutKind", "Derivative", "DerivativeFormula", "DerivativeMatch", "DispatchEntry",
    "DispatchKey", "Edge", "EdgeHow", "EdgeKind", "EntryOrigin", "FACT_TABLES", "FileFacts", "FileProblems",
    "FileStatus", "FormulaMode", "FunctionSchema", "GENERATED_PREFIX", "GeneratedFact", "GeneratedKind", "HitKind",
    "InstantiationKind", "KeyTier", "Layer", "Loc", "MatchKind", "NO_REF", "NoEntry", "Node", "NodeKind", "Op",
    "OpDispatch", "OpInfoEntry", "OpInfoList", "OpTestMark",
    "PY_MODULES", "PyApiKind", "PyAssign", "PyAttr", "PyCall", "PyClass", "PyDefKind",
    "PyFunction", "PyFunctionKind", "PyImport", "PyOpRef", "PyOpRefKind", "PyReceiver", "RaiseKind", "RaiseSite",
    "Registration", "RegistrationKind", "Return", "SchemaError", "StrEnum", "SymbolKind", "TABLE_OF",
    "TEMPLATE_ARGUMENT", "TENSOR_BINARY_OPERATORS", "TENSOR_UNARY_OPERATORS", "Tag",
    "TestClass", "TestInstantiation", "TestMethod", "TestUtil", "Using", "UsingKind", "UtilKind", "Variant",
    "is_composite", "key_tier", "parse_key", "runs_on", "traced_by_autograd", "variant_base",
]
