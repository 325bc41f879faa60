"""Which overload of an op a C++ call binds, as C++ picks among the viable ones (``Resolver._binding``):
the best-scoring overloads only, where a Scalar, a string or an optional<Scalar> binds no Tensor parameter
(Note [Op argument kinds]) and at::X's parameters are those of torchgen's signatures for it: SymInt as int64_t,
the TensorOptions group gathered or scattered (Note [Op call signatures]). Where the arguments' types do not
decide, every overload they may bind stays, marked as a candidate.

The calls are annotated in tests/fixtures/tree_overloads (PyTorch 2.6.0's cases: BinaryOps.cpp's special_xlogy,
ForeachOpsKernels.cpp's clamp_min, LinearAlgebra.cpp's linalg_matrix_norm, at::empty(sizes, options)), copied
over the fixture tree with the ops of tree_overloads_ops.yaml."""

from __future__ import annotations

import shutil
from contextlib import closing
from pathlib import Path

from torchtalk.graph.cpp_types import Ty
from torchtalk.graph.overloads import compat

from ..annotations import Expectations, read_tree
from ..conftest import overlay_index
from .test_cpp_resolution import mismatches

FIXTURES = Path(__file__).parent.parent / "fixtures"
OVERLAY = FIXTURES / "tree_overloads"
OPS = (FIXTURES / "tree_overloads_ops.yaml").read_text()
CALLS = Expectations(read_tree(OVERLAY))


def _index(tree: Path):
    shutil.copytree(OVERLAY / "c10", tree / "c10", dirs_exist_ok=True)
    return overlay_index(tree, OVERLAY, {"aten/src/ATen/native/native_functions.yaml": OPS})


def test_each_call_binds_the_overloads_its_annotation_names(tree):
    assert len(list(CALLS.uses())) == 11  # the annotations are read
    with closing(_index(tree)) as ix:
        assert mismatches(ix, CALLS) == {}


def test_op_argument_kinds_never_convert_to_one_another():
    scalar, tensor, view = Ty("c10::Scalar"), Ty("at::Tensor"), Ty("c10::string_view")
    optional_scalar, literal = Ty("std::optional", (scalar,)), Ty("char", (), 1)
    ix = None  # no lookup is needed between these types
    for arg, param in [(scalar, tensor), (optional_scalar, tensor), (Ty("std::string_view"), tensor),
                       (literal, tensor), (tensor, scalar), (Ty("std::string_view"), scalar), (literal, scalar),
                       (scalar, view), (optional_scalar, scalar), (tensor, view)]:
        assert compat(ix, arg, param) is None, (str(arg), str(param))  # type: ignore[arg-type]
    assert compat(ix, Ty("std::string_view"), view) == 2  # type: ignore[arg-type]  # one type since 2.1
    assert compat(ix, literal, view) == 0  # type: ignore[arg-type]  # a constructor
    assert compat(ix, Ty("int"), scalar) == 0  # type: ignore[arg-type]  # a number makes a Scalar
    assert compat(ix, scalar, Ty("std::optional", (scalar,))) == 1  # type: ignore[arg-type]
    # a number to optional<another number>: a user-defined conversion, below int to int64_t's standard one
    assert compat(ix, Ty("int"), Ty("std::optional", (Ty("bool"),))) == 0  # type: ignore[arg-type]
    assert compat(ix, Ty("int"), Ty("int64_t")) == 1  # type: ignore[arg-type]
