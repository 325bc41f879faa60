"""The C++ op-API spellings of an op and back (graph/op_spellings.py, Note [Op call spellings]), on the fixture
tree's registry: ``at::add`` is add's functional overloads, ``at::add_out`` / ``at::add_outf`` (and torchgen's
``at::add_symint_out`` for a SymInt overload) its out= one."""

from __future__ import annotations

from torchtalk.graph.op_spellings import op_named, op_spellings
from torchtalk.graph.registry import registry


def test_each_spelling_of_an_overload_names_it_back(indexed):
    _tree, ix = indexed
    reg = registry(ix)
    out = reg.by_full["add.out"]
    assert op_named(reg, "add") == ("add.Tensor",)  # never the out= overload
    assert set(op_spellings(out)) == {"add_out", "add_outf", "add_symint_out", "add_symint_outf"}
    for name in op_spellings(out):
        assert op_named(reg, name) == ("add.out",), name
    assert op_spellings(reg.by_full["add.Tensor"]) == ("add", "add_symint")
    assert op_named(reg, "add_symint") == ("add.Tensor",)
