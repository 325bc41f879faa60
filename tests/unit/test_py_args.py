# ruff: noqa: E501  (the signatures are copied whole from native_functions.yaml)
"""Which overloads a Python call reaches by the shape of its arguments (graph/py_args.py, Note [Overloads by
arguments]), on signatures copied from PyTorch 2.6.0's native_functions.yaml."""

import pytest

from torchtalk.extract.native_yaml import extract_native_functions
from torchtalk.graph.py_args import overloads_for
from torchtalk.model import Op

YAML = """\
- func: cat(Tensor[] tensors, int dim=0) -> Tensor
- func: cat.out(Tensor[] tensors, int dim=0, *, Tensor(a!) out) -> Tensor(a!)
- func: cat.names(Tensor[] tensors, Dimname dim) -> Tensor
- func: zeros.names(int[] size, *, Dimname[]? names, ScalarType? dtype=None, Layout? layout=None, Device? device=None, bool? pin_memory=None) -> Tensor
- func: zeros(SymInt[] size, *, ScalarType? dtype=None, Layout? layout=None, Device? device=None, bool? pin_memory=None) -> Tensor
- func: zeros.out(SymInt[] size, *, Tensor(a!) out) -> Tensor(a!)
- func: max.dim(Tensor self, int dim, bool keepdim=False) -> (Tensor values, Tensor indices)
- func: max.dim_max(Tensor self, int dim, bool keepdim=False, *, Tensor(a!) max, Tensor(b!) max_values) -> (Tensor(a!) values, Tensor(b!) indices)
- func: max(Tensor self) -> Tensor
- func: max.other(Tensor self, Tensor other) -> Tensor
- func: view(Tensor(a) self, SymInt[] size) -> Tensor(a)
- func: view.dtype(Tensor(a) self, ScalarType dtype) -> Tensor(a)
- func: sum(Tensor self, *, ScalarType? dtype=None) -> Tensor
- func: sum.dim_IntList(Tensor self, int[1]? dim, bool keepdim=False, *, ScalarType? dtype=None) -> Tensor
- func: sum.IntList_out(Tensor self, int[1]? dim, bool keepdim=False, *, ScalarType? dtype=None, Tensor(a!) out) -> Tensor(a!)
- func: sum.dim_DimnameList(Tensor self, Dimname[1] dim, bool keepdim=False, *, ScalarType? dtype=None) -> Tensor
- func: transpose.int(Tensor(a) self, int dim0, int dim1) -> Tensor(a)
- func: transpose.Dimname(Tensor(a) self, Dimname dim0, Dimname dim1) -> Tensor(a)
- func: pow.Tensor_Tensor(Tensor self, Tensor exponent) -> Tensor
- func: pow.Tensor_Scalar(Tensor self, Scalar exponent) -> Tensor
- func: pow.Scalar(Scalar self, Tensor exponent) -> Tensor
- func: size.int(Tensor self, int dim) -> int
- func: size.Dimname(Tensor self, Dimname dim) -> int
"""
OPS: dict[str, list[Op]] = {}
for _op in extract_native_functions("native_functions.yaml", YAML.encode())[Op]:
    OPS.setdefault(_op.name, []).append(_op)


@pytest.mark.parametrize(("call", "name", "nargs", "keywords", "method", "reached"), [
    ("torch.cat(xs, 1)", "cat", 2, (), False, ["cat"]),  # literals "": no argument is a literal, so no Dimname
    ("torch.cat(xs, 1, out=y)", "cat", 2, ("out",), False, ["cat.out"]),
    ("torch.zeros(2, 3)", "zeros", 2, (), False, ["zeros"]),  # an int list taken as varargs
    ("torch.zeros(n, names=('N',))", "zeros", 1, ("names",), False, ["zeros.names"]),
    ("torch.zeros(n, requires_grad=True)", "zeros", 1, ("requires_grad",), False, ["zeros"]),  # the parser's own
    ("torch.max(x)", "max", 1, (), False, ["max"]),
    ("torch.max(x, 1, out=(v, i))", "max", 2, ("out",), False, ["max.dim_max"]),  # outputs named max, max_values
    ("torch.max(input=x, dim=1)", "max", 0, ("input", "dim"), False, ["max.dim"]),
    ("x.max(1)", "max", 1, (), True, ["max.dim", "max.other"]),
    ("x.view(2, 3)", "view", 2, (), True, ["view"]),
    ("x.view(torch.float16)", "view", 1, (), True, ["view", "view.dtype"]),
    ("x.sum()", "sum", 0, (), True, ["sum"]),
    ("x.sum(d, keepdim=k)", "sum", 1, ("keepdim",), True, ["sum.dim_IntList"]),
    ("x.sum(*dims)", "sum", -1, (), True, ["sum", "sum.dim_IntList", "sum.IntList_out", "sum.dim_DimnameList"]),
    ("x.sum(**kw)", "sum", 0, ("**",), True, ["sum", "sum.dim_IntList", "sum.IntList_out", "sum.dim_DimnameList"]),
    ("x.sum(a, b, c, d)", "sum", 4, (), True, ["sum.dim_IntList"]),  # an int list also takes varargs
    ("x.view(a, b, c, bogus=d)", "view", 3, ("bogus",), True, ["view"]),  # a keyword no overload names
    ("torch.cat(a, b, c, d)", "cat", 4, (), False, ["cat", "cat.out", "cat.names"]),  # none takes it: all kept
])
def test_a_call_reaches_the_overloads_that_take_its_arguments(call, name, nargs, keywords, method, reached):
    assert [o.full_name for o in overloads_for(OPS[name], nargs, keywords, method)] == reached, call


@pytest.mark.parametrize(("call", "name", "nargs", "keywords", "method", "literals", "reached"), [
    ("torch.cat(xs, 1)", "cat", 2, (), False, ".i", ["cat"]),  # an int is no Dimname
    ("torch.cat(xs, 'N')", "cat", 2, (), False, ".s", ["cat.names"]),
    ("x.sum(1, keepdim=True)", "sum", 1, ("keepdim",), True, "ib", ["sum.dim_IntList"]),
    ("x.sum(dim='N')", "sum", 0, ("dim",), True, "s", ["sum.dim_DimnameList"]),
    ("x.transpose(0, -1)", "transpose", 2, (), True, "ii", ["transpose.int"]),
    ("x.transpose(a, b)", "transpose", 2, (), True, "", ["transpose.int"]),  # "": none is a literal
    ("torch.pow(x, 2)", "pow", 2, (), False, ".i", ["pow.Tensor_Tensor", "pow.Tensor_Scalar", "pow.Scalar"]),
    ("torch.pow(x, 0.5)", "pow", 2, (), False, ".f", ["pow.Tensor_Tensor", "pow.Tensor_Scalar", "pow.Scalar"]),
    ("torch.max(x, None)", "max", 2, (), False, ".n", []),  # none takes a None there: no op (the call is named)
    ("torch.zeros(n, dtype=None)", "zeros", 1, ("dtype",), False, ".n", ["zeros"]),
    ("x.view('a', 'b')", "view", 2, (), True, "ss", []),  # none takes two strings
    ("x.size(0)", "size", 1, (), True, "i", ["size.int"]),  # size.Dimname takes no int
    ("x.size(d)", "size", 1, (), True, "", ["size.int"]),
    # an expression is no Dimname where another overload takes it (conv.py:795: input.size(d + num_non_spatial_dims))
    ("x.size(d + n)", "size", 1, (), True, ".", ["size.int"]),
    ("x.size('N')", "size", 1, (), True, "s", ["size.Dimname"]),
    ("torch.cat(xs, dim)", "cat", 2, (), False, "..", ["cat"]),
    ("x.sum(dims, keepdim=k)", "sum", 1, ("keepdim",), True, "..", ["sum.dim_IntList"]),
    ("x.transpose(a, 'N')", "transpose", 2, (), True, ".s", ["transpose.Dimname"]),  # what is left is reached
])
def test_a_literal_argument_rules_out_the_parameters_that_cannot_take_it(call, name, nargs, keywords, method,
                                                                           literals, reached):
    assert [o.full_name for o in overloads_for(OPS[name], nargs, keywords, method, literals)] == reached, call


def test_a_call_no_overload_takes_reaches_none_where_the_caller_has_somewhere_else_to_go():
    """``grad.size()`` (optim/_functional.py:50): no overload of size takes no argument; Tensor.size's hand-written
    binding does, so its caller asks for none rather than all (keep_all=False)."""
    assert [o.full_name for o in overloads_for(OPS["size"], 0, (), True, "")] == ["size.int", "size.Dimname"]
    assert overloads_for(OPS["size"], 0, (), True, "", keep_all=False) == []
    assert overloads_for(OPS["size"][1:], 0, (), True, "", keep_all=False) == []
