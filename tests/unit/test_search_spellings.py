"""Note [Search spellings] (query/search_match.py): search takes a name as answers print it and code writes it
(qualified C++ names, aten::/torch.Tensor./F. spellings, Python functions, words), ranks an op's and a stub's name
before helpers that share it, and answers a typo with close matches (not found, exit 3), never an empty list."""

from __future__ import annotations

import pytest

from torchtalk.model import HitKind, MatchKind
from torchtalk.query.results import NotFound
from torchtalk.tools import get_tool, run

from ..conftest import index_with

FILES = {
    "torch/nn/functional.py": "def layer_norm(input, normalized_shape):\n    return input\n\n\n"
                              "def cumsum_twice(input):\n    return input\n",
    "torch/_refs/__init__.py": "def layer_norm(a, shape):\n    return a\n",
    # a helper named like the stub (PaddingKernel.cpp's add_stub beside BinaryOps.h's DispatchStub)
    "aten/src/ATen/native/cpu/Helper.cpp": "namespace at { namespace native { namespace {\n"
                                           "static inline void cumsum_stub(float* x) {}\n"
                                           "void cumsum_cpu_helper_one() {}\n}}}\n",
    "aten/src/ATen/native/cpu/Other.cpp": "namespace at { namespace cpu {\nvoid index_select_cuda() {}\n}}\n",
}


@pytest.fixture
def spelled(tree):
    ix = index_with(tree, FILES)
    try:
        yield tree, ix
    finally:
        ix.close()


def _search(ix, q, **kw):
    return run(get_tool("search"), ix, query=q, **kw)


def test_a_typo_is_not_found_with_close_matches(spelled):
    _, ix = spelled
    res, text = _search(ix, "cumsun")
    assert isinstance(res, NotFound) and res.suggestions[0] in ("cumsum", "cumsum.out"), text
    assert "Close matches: cumsum" in text and 'search("cumsum")' in text, text  # the next call finds something


def test_a_qualified_cpp_name_finds_that_function_only(spelled):
    _, ix = spelled
    res, _ = _search(ix, "at::native::index_select_cuda")
    cpp = [h.name for h in res.hits if h.kind is HitKind.CPP_FUNCTION]
    assert cpp == ["at::native::index_select_cuda"], cpp  # not at::cpu::index_select_cuda
    assert res.hits[0].kind is HitKind.OP and res.hits[0].name == "index_select"  # its op, by the kernel's name
    res, _ = _search(ix, "native::index_select_cuda")
    assert "at::native::index_select_cuda" in [h.name for h in res.hits]
    res, _ = _search(ix, "at::cpu::index_select_cuda")
    assert [h.name for h in res.hits if h.kind is HitKind.CPP_FUNCTION] == ["at::cpu::index_select_cuda"]


@pytest.mark.parametrize("q", ["aten::cumsum", "torch.ops.aten.cumsum", "at::cumsum"])
def test_op_spellings(spelled, q):
    _, ix = spelled
    res, _ = _search(ix, q)
    assert [h.name for h in res.hits[:2]] == ["cumsum", "cumsum.out"] and res.hits[0].match is MatchKind.EXACT


@pytest.mark.parametrize("q", ["torch.nn.functional.layer_norm", "F.layer_norm", "nn.functional.layer_norm"])
def test_a_python_function_by_its_dotted_name(spelled, q):
    _, ix = spelled
    res, _ = _search(ix, q)
    assert [(h.kind, h.name, str(h.loc)) for h in res.hits] == [
        (HitKind.PY_FUNCTION, "torch.nn.functional.layer_norm", "torch/nn/functional.py:1")]


def test_python_functions_of_public_modules_before_private_ones(spelled):
    _, ix = spelled
    res, text = _search(ix, "layer_norm")
    py = [h.name for h in res.hits if h.kind is HitKind.PY_FUNCTION]
    assert py == ["torch.nn.functional.layer_norm", "torch._refs.layer_norm"], text


def test_words_find_a_name_holding_each(spelled):
    _, ix = spelled
    res, _ = _search(ix, "index select")
    assert res.hits[0].name == "index_select" and res.hits[0].match is MatchKind.EXACT
    res, _ = _search(ix, "cpu helper cumsum")
    assert [h.name for h in res.hits] == ["at::native::(anonymous)::cumsum_cpu_helper_one"]


def test_a_stub_and_an_ops_name_lead_the_helpers_that_share_them(spelled):
    _, ix = spelled
    res, _ = _search(ix, "cumsum_stub")
    assert [(h.kind, h.match) for h in res.hits[:2]] == [(HitKind.STUB, MatchKind.EXACT),
                                                         (HitKind.CPP_FUNCTION, MatchKind.EXACT)]
    res, _ = _search(ix, "softmax")  # _softmax: the op past its underscore, with the prefixes, before C++ ones
    names = [h.name for h in res.hits]
    assert res.hits[names.index("_softmax")].match is MatchKind.PREFIX
    assert names.index("_softmax") < min(i for i, h in enumerate(res.hits)
                                         if h.kind is HitKind.CPP_FUNCTION and h.match is MatchKind.PREFIX)


def test_an_op_spelled_as_the_dispatcher_names_it_is_that_op_alone(spelled):
    # aten::add answered 18 KB: every op starting with add (addmm, addr, ...) and the C++ functions named add*
    _, ix = spelled
    res, _ = _search(ix, "aten::cumsum")
    assert [h.name for h in res.hits] == ["cumsum", "cumsum.out"]
    res, text = _search(ix, "torch.ops.aten.cumsum.ot")
    assert isinstance(res, NotFound) and res.suggestions[:2] == ["cumsum", "cumsum.out"], text


def test_a_method_by_its_classs_public_path(spelled):
    # torch.nn.Linear.forward is torch.nn.modules.linear.Linear.forward (torch.nn re-exports the class)
    tree, ix = spelled
    ix.close()
    ix = index_with(tree, {"torch/nn/modules/linear.py": "class Linear:\n    def forward(self, x):\n"
                                                         "        return x\n"})
    try:
        for q in ("torch.nn.Linear.forward", "nn.Linear.forward", "torch.nn.modules.linear.Linear.forward"):
            res, _ = _search(ix, q)
            assert [(h.name, h.match) for h in res.hits] == [
                ("torch.nn.modules.linear.Linear.forward", MatchKind.EXACT)], q
    finally:
        ix.close()


def test_close_matches_of_every_kind_by_closeness(spelled):
    # CatBakward0 offered op names ending in _backward; mean_sutb offered mean, mean_out ... before mean_stub
    _, ix = spelled
    res, _ = _search(ix, "cumsum_stb")
    assert res.suggestions[0] == "cumsum_stub", res.suggestions


def test_a_binding_named_as_asked_is_exact_and_words_run_together_find_an_op(spelled):
    # torch.add and Tensor.add ranked as substrings of 'add' (not in its first 500); torch.softmax was 87th
    _, ix = spelled
    res, _ = _search(ix, "cumsum")
    assert [(h.name, h.match) for h in res.hits if h.kind is HitKind.BINDING][:1] == [("torch.cumsum",
                                                                                       MatchKind.EXACT)]
    res, _ = _search(ix, "indexselect")  # layernorm: layer_norm
    assert "index_select" in [h.name for h in res.hits if h.kind is HitKind.OP]
    # the words run together are the whole name: exact (layernorm's layer_norm fell off the first page, a
    # substring behind the LayerNorm classes), and a prefix as a prefix
    assert [(h.name, h.match) for h in res.hits][0] == ("index_select", MatchKind.EXACT)
    res, _ = _search(ix, "indexsel")
    assert ("index_select", MatchKind.PREFIX) in [(h.name, h.match) for h in res.hits]


def test_a_query_of_no_letter_or_digit_is_not_found_at_once(spelled):
    # "::" and "." listed every class as a prefix hit, in 0.6 s on 2.6.0
    _, ix = spelled
    for q in ("::", ".", "<>", "()"):
        res, text = _search(ix, q)
        assert isinstance(res, NotFound) and not res.suggestions and "no letter or digit" in res.hint, text
