"""search finds classes (query/search_classes.py): the Python classes of torch/ by their name, where they are defined
and the names their packages export them under (torch.nn.Linear); C++ classes, structs and enums with a body, grouped
per name (Note [Names that flood]); a class spelled as asked leads (Note [Classes by their spelling]); and a name
search does not find is answered with close names it finds, never the name itself (Note [Close matches search
finds])."""

from __future__ import annotations

import pytest

from torchtalk.model import HitKind, MatchKind
from torchtalk.query.results import NotFound
from torchtalk.render import budget
from torchtalk.tools import get_tool, run

from ..conftest import indexed_with, line_of

MODULE = "class Module:\n    def forward(self, x):\n        return x\n"
FILES = {
    "torch/__init__.py": "from torch._tensor import Tensor\n",
    "torch/_tensor.py": "class Tensor:\n    pass\n",
    "torch/nn/__init__.py": "from .modules import *\n",
    "torch/nn/modules/__init__.py": "from .module import Module\nfrom .linear import Linear\n",
    "torch/nn/modules/module.py": MODULE,
    "torch/nn/modules/linear.py": "from .module import Module\n\n\nclass Linear(Module):\n"
                                  "    def forward(self, x):\n        return x\n\n\nclass LinearHelper(Module):\n"
                                  "    pass\n",
    "torch/nn/functional.py": "def linear(input, weight):\n    return input\n",
    "torch/ao/nn/quantized/modules/linear.py": "from torch.nn.modules.module import Module\n\n\n"
                                               "class Linear(Module):\n    pass\n",
    # re-exported by a package that is not above it (torch.nn.quantized.Linear is the ao one)
    "torch/nn/quantized/__init__.py": "from torch.ao.nn.quantized.modules.linear import Linear\n",
    "torch/_decomp/helpers.py": "class Linear:\n    pass\n",  # private, exported by nothing
    "aten/src/ATen/cpu/vec/vec_base.h": "namespace at { namespace vec {\n"
                                        "template <class T> struct Vectorized {\n  Vectorized() {}\n};\n"
                                        "template <> struct Vectorized<float> {};\n"
                                        "template <> struct Vectorized<double> {};\n"
                                        "template <> struct Vectorized<int> {};\n"
                                        "template <> struct Vectorized<long> {};\n"
                                        "enum class Layout { Strided, Sparse };\n"
                                        "void only_declared_fn(int x);\n"
                                        "}}\n",
    "aten/src/ATen/native/Local.cpp": "namespace at { namespace native {\nstruct Vectorized {};\n}}\n",
}


@pytest.fixture
def ix(tree):
    with indexed_with(tree, FILES) as ix:
        yield ix


def _search(ix, q, **kw):
    return run(get_tool("search"), ix, query=q, **kw)


@pytest.mark.parametrize("q", ["torch.nn.Linear", "nn.Linear", "torch.nn.modules.Linear",
                               "torch.nn.modules.linear.Linear"])
def test_a_python_class_by_where_it_is_defined_and_by_the_names_its_packages_export(tree, ix, q):
    res, text = _search(ix, q)
    top = res.hits[0]
    assert (top.kind, top.name, str(top.loc), top.match) == (
        HitKind.PY_CLASS, "torch.nn.modules.linear.Linear",
        f"torch/nn/modules/linear.py:{line_of(tree, 'torch/nn/modules/linear.py', 'class Linear(')}", MatchKind.EXACT)
    assert "public as torch.nn.Linear; an nn.Module" in text, text
    # the other Linears are not torch.nn's: neither the ao one nor the private one
    assert [h.name for h in res.hits if h.kind is HitKind.PY_CLASS and h.match is MatchKind.EXACT] == [top.name]
    assert 'next: trace_module("torch.nn.modules.linear.Linear")' in text, text


def test_a_class_through_the_imports_of_a_package_not_above_it(ix):
    res, _ = _search(ix, "torch.nn.quantized.Linear")
    assert [(h.kind, h.name) for h in res.hits if h.match is MatchKind.EXACT] == [
        (HitKind.PY_CLASS, "torch.ao.nn.quantized.modules.linear.Linear")]


def test_a_private_module_s_class_a_public_package_exports(ix):
    res, text = _search(ix, "torch.Tensor")
    assert (res.hits[0].kind, res.hits[0].name) == (HitKind.PY_CLASS, "torch._tensor.Tensor"), text
    assert "public as torch.Tensor" in text


def test_a_class_spelled_as_asked_leads_the_op_of_its_name(ix):
    res, text = _search(ix, "Linear")
    first = [(h.kind, h.name) for h in res.hits[:3]]
    # the public ones first, torch.nn's before the ao one; the private Linear of torch._decomp does not lead
    assert first == [(HitKind.PY_CLASS, "torch.nn.modules.linear.Linear"),
                     (HitKind.PY_CLASS, "torch.ao.nn.quantized.modules.linear.Linear"), (HitKind.OP, "linear")], text
    names = [h.name for h in res.hits]
    assert names.index("torch._decomp.helpers.Linear") > names.index("linear")
    # spelled as the op is, the op leads and the class follows with the Python functions
    res, text = _search(ix, "linear")
    assert res.hits[0].kind is HitKind.OP and res.hits[0].name == "linear", text
    assert [h.kind for h in res.hits].index(HitKind.PY_CLASS) > 0


def test_cpp_classes_with_a_body_grouped_per_name(tree, ix):
    res, text = _search(ix, "TensorIterator")
    top = res.hits[0]
    line = line_of(tree, "aten/src/ATen/TensorIterator.h", "struct TensorIterator {")
    assert (top.kind, top.name, str(top.loc)) == (HitKind.CPP_CLASS, "at::TensorIterator",
                                                  f"aten/src/ATen/TensorIterator.h:{line}"), text
    assert [h.name for h in res.hits].count("at::TensorIterator") == 1  # not its forward declaration
    res, _ = _search(ix, "at::TensorIterator")
    assert res.hits[0].name == "at::TensorIterator"
    res, text = _search(ix, "TensorIteratorConfig")
    assert res.hits[0].kind is HitKind.CPP_CLASS
    assert 'called_by("at::TensorIteratorConfig::TensorIteratorConfig")' in text, text  # who constructs it
    res, _ = _search(ix, "Layout")
    assert (res.hits[0].kind, res.hits[0].name) == (HitKind.CPP_ENUM, "at::vec::Layout")


def test_a_cpp_class_name_that_floods(ix):
    """Vectorized and its 4 specializations, and a .cpp file's own Vectorized: the primary template and the header's
    first; past PER_NAME, after the other exact hits (Note [Names that flood]), and every one counted."""
    res, text = _search(ix, "Vectorized", limit=50)
    classes = [h.name for h in res.hits if h.kind is HitKind.CPP_CLASS]
    assert classes[:3] == ["at::vec::Vectorized", "at::vec::Vectorized<float>", "at::vec::Vectorized<double>"], text
    assert sorted(classes[3:]) == ["at::native::Vectorized", "at::vec::Vectorized<int>", "at::vec::Vectorized<long>"]
    assert res.total == len(res.hits)
    res, text = _search(ix, "Vectorized", limit=3)
    assert res.total == 6 and "showing 3 of 6" in text


@pytest.mark.parametrize("q", ["Vectorized<float>", "at::vec::Vectorized<float>", "vec::Vectorized< float >"])
def test_a_specialization_as_answers_print_it(ix, q):
    """Answers print a class template's specialization as ``at::vec::Vectorized<float>``; search answered "not
    found" for that spelling (Note [Search spellings] in query/search_match.py)."""
    res, text = _search(ix, q)
    assert [(h.kind, h.name) for h in res.hits] == [(HitKind.CPP_CLASS, "at::vec::Vectorized<float>")], text


def test_a_specialization_no_class_has_is_the_primary_template(ix):
    """Vectorized<short>: no specialization for short, so the primary template (the one C++ instantiates); the
    .cpp file's Vectorized is no template; no Python name is spelled with template arguments (a C++ function of the
    name is: a function template's instance)."""
    res, text = _search(ix, "Vectorized<short>")
    assert [h.name for h in res.hits] == ["at::vec::Vectorized"], text
    res, text = _search(ix, "Linear<float>")
    assert [(h.kind, h.name) for h in res.hits] == [(HitKind.CPP_FUNCTION, "at::native::linear")], text


def test_a_specialization_is_of_the_template_spelled_as_asked(tree):
    """A C++ name's case is part of it: ``Vectorized<double>`` listed ``policies::vectorized`` (another class, a
    primary template of three parameters) as an exact match, names being compared lower-cased."""
    files = dict(FILES)
    files["aten/src/ATen/native/cuda/MemoryAccess.cuh"] = (
        "namespace at { namespace native { namespace memory { namespace policies {\n"
        "template <int vec_size, typename data_t, int elems_per_thread> struct vectorized {};\n}}}}\n")
    with indexed_with(tree, files) as ix:
        res, text = _search(ix, "Vectorized<double>")
        assert [h.name for h in res.hits] == ["at::vec::Vectorized<double>"], text
        res, text = _search(ix, "vectorized<double>")
        assert [h.name for h in res.hits] == ["at::native::memory::policies::vectorized"], text


def test_close_matches_are_names_search_finds_never_the_query(ix):
    """only_declared_fn is a name of the index (a declaration) that no hit is: not found, and not a close match of
    itself; every close match is found."""
    res, text = _search(ix, "only_declared_fn")
    assert isinstance(res, NotFound), text
    assert "only_declared_fn" not in res.suggestions, text
    for name in res.suggestions:
        assert not isinstance(_search(ix, name)[0], NotFound), name
    res, text = _search(ix, "TensorIteratr")
    assert isinstance(res, NotFound) and res.suggestions[0] == "TensorIterator", text
    res, text = _search(ix, "TensorIterator", backend="CPU")  # a backend: ops only, so no class is suggested
    assert isinstance(res, NotFound) and "TensorIterator" not in res.suggestions, text
    assert "No op with a CPU kernel named 'TensorIterator'" in text, text


def test_hits_fit_the_answer_budget_every_hit_line_first(ix, monkeypatch):
    """Cut to the budget (Note [Answer budget]), the text keeps every hit's line and cuts the ops' kernels from the end,
    with a Cut: line naming the structured answer, which keeps them."""
    _, whole = _search(ix, "a", limit=100)
    lines = whole.splitlines()
    hit_lines = [ln for ln in lines if ln.startswith("- ")]
    detail = [ln for ln in lines if ln.startswith("    ")]
    assert len(detail) > 10, whole
    monkeypatch.setattr(budget, "BUDGET", len(whole) - budget.size(detail[len(detail) // 2:]))
    res, text = _search(ix, "a", limit=100)
    assert len(res.hits) == len(hit_lines) and all(h.kernels for h in res.hits if h.kind is HitKind.OP)
    kept = text.splitlines()
    assert all(ln in kept for ln in hit_lines), text
    assert [ln for ln in kept if ln.startswith("    ")] == detail[:len([ln for ln in kept if ln.startswith("    ")])]
    assert "Cut: the hits and their ops' kernels: showing" in text and budget.STRUCTURED in text, text
