import pytest

from torchtalk.extract.schema import SchemaError, parse_schema, split_top


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


def test_dunder_is_not_inplace():
    assert not parse_schema("__iand__.Tensor(Tensor(a!) self, Tensor other) -> Tensor(a!)").is_inplace


@pytest.mark.parametrize("bad", ["relu", "relu(Tensor self)", "relu(Tensor self -> Tensor", "1x(Tensor a) -> Tensor",
                                 "f(Tensor) -> Tensor"])
def test_malformed_schemas_raise_schema_error(bad):
    with pytest.raises(SchemaError):
        parse_schema(bad)


def test_split_top_respects_brackets_and_quotes():
    assert split_top('a, b[1, 2], str c="x, y"') == ["a", "b[1, 2]", 'str c="x, y"']
