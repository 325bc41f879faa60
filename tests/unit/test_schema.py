import pytest

from torchtalk.model.schema import SchemaError, parse_schema, split_top


def test_overload_kwarg_only_and_out_arguments():
    s = parse_schema("add.out(Tensor self, Tensor other, *, Scalar alpha=1, Tensor(a!) out) -> Tensor(a!)")
    assert (s.name, s.overload, s.full_name) == ("add", "out", "add.out")
    assert [a.name for a in s.arguments] == ["self", "other", "alpha", "out"]
    alpha, out = s.arguments[2], s.arguments[3]
    assert alpha.kwarg_only and alpha.default == "1" and not alpha.out
    assert out.out and out.annotation == "a!" and out.type == "Tensor"
    assert s.is_out and not s.is_inplace
    assert s.returns[0].annotation == "a!"


def test_inplace_and_named_tuple_returns():
    s = parse_schema("relu_(Tensor(a!) self) -> Tensor(a!)")
    assert s.is_inplace and s.overload == ""
    m = parse_schema("max.dim(Tensor self, int dim, bool keepdim=False) -> (Tensor values, Tensor indices)")
    assert [(r.name, r.type) for r in m.returns] == [("values", "Tensor"), ("indices", "Tensor")]


def test_list_types_defaults_and_alias_sets():
    s = parse_schema("split.Tensor(Tensor(a -> *) self, SymInt split_size, int[1] dim=[0, 1]) -> Tensor(a)[]")
    assert s.arguments[0].annotation == "a -> *"
    assert s.arguments[2].type == "int[1]" and s.arguments[2].default == "[0, 1]"
    assert s.returns[0].type == "Tensor[]" and s.returns[0].annotation == "a"


def test_dunder_inplace_follows_torchgen():
    # torchgen's BaseOperatorName.parse: __i<op>__ of an augmented assignment is in-place, __<op>__ is not
    # (checked against the schemas of the official wheel: __lshift__.Scalar_out is derived from __ilshift__).
    assert parse_schema("__iand__.Tensor(Tensor(a!) self, Tensor other) -> Tensor(a!)").is_inplace
    assert not parse_schema("__and__.Tensor(Tensor self, Tensor other) -> Tensor").is_inplace
    assert not parse_schema("__getitem__.str(str[] list, int idx) -> str").is_inplace


@pytest.mark.parametrize("func", [
    "add.out(Tensor self, Tensor other, *, Scalar alpha=1, Tensor(a!) out) -> Tensor(a!)",
    "max.dim(Tensor self, int dim, bool keepdim=False) -> (Tensor values, Tensor indices)",
    "cudnn_grid_sampler(Tensor self, Tensor grid) -> Tensor output",
    "_foreach_add_.List(Tensor(a!)[] self, Tensor[] other, *, Scalar alpha=1) -> ()",
    "split.Tensor(Tensor(a -> *) self, SymInt split_size, int dim=0) -> Tensor(a)[]",
])
def test_schema_text_round_trips(func):
    s = parse_schema(func)
    assert str(s) == func and parse_schema(str(s)) == s



@pytest.mark.parametrize("bad", ["relu", "relu(Tensor self)", "relu(Tensor self -> Tensor", "1x(Tensor a) -> Tensor",
                                 "f(Tensor) -> Tensor"])
def test_malformed_schemas_raise_schema_error(bad):
    with pytest.raises(SchemaError):
        parse_schema(bad)


def test_split_top_respects_brackets_and_quotes():
    assert split_top('a, b[1, 2], str c="x, y"') == ["a", "b[1, 2]", 'str c="x, y"']
