"""Note [Every caller of an op] (graph/cpp_callers.py): an op's callers are every site reaching it, the same from the
store of resolved calls (Note [Resolved calls]) as resolved as asked: none left out past a count, none missed for
the name it is written with."""

from __future__ import annotations

from torchtalk.graph.cpp_callers import op_callers
from torchtalk.graph.registry import registry
from torchtalk.graph.resolved import stored, without_store
from torchtalk.graph.resolved_build import build
from torchtalk.model import Node, NodeKind
from torchtalk.source.tree import find_source
from torchtalk.store.reader import Index

from ..conftest import indexed_with, line_of

CALLERS = 450  # more than the 400 an op's callers were once cut at
MANY = "aten/src/ATen/native/ManyCumsumCallers.cpp"
SPELLED = "aten/src/ATen/native/CumsumSpelled.cpp"
FILES = {
    # a functional op called from more functions than any count would keep
    MANY: "#include <ATen/ATen.h>\nnamespace at { namespace native {\n" + "".join(
        f"Tensor cumsum_caller_{i}(const Tensor& self) {{\n  return at::cumsum(self, 0);\n}}\n"
        for i in range(CALLERS)) + "}} // namespace at::native\n",
    # torchgen's SymInt out= spelling of an out= overload (VariableType's at::redispatch::X_symint_outf)
    SPELLED: """#include <ATen/ATen.h>
namespace at { namespace native {
Tensor& cumsum_symint_outf_caller(const Tensor& self, Tensor& result) {
  return at::cumsum_symint_outf(self, 0, std::nullopt, result);
}
}} // namespace at::native
""",
}


def _callers(ix: Index, full: str) -> list[tuple[str, str, int, str]]:
    with ix.using():
        op = registry(ix).by_full[full]
        return [(e.src.label, e.site.path, e.site.line, e.written) for e in op_callers(ix, Node(NodeKind.OP, full, full,
                                                                                                 op.loc))
                if e.site is not None]


def test_an_ops_callers_are_every_site_reaching_it_the_same_with_and_without_the_store(tree):
    with indexed_with(tree, FILES) as ix:
        without_store(ix)
        live = {full: _callers(ix, full) for full in ("cumsum", "cumsum.out")}
        st = find_source(tree)
        assert build(st.index_path, st.root, workers=1) is not None
        fresh = Index(st.index_path, st.root)
        try:
            with fresh.using():
                assert stored(fresh) is not None
            read = {full: _callers(fresh, full) for full in ("cumsum", "cumsum.out")}
        finally:
            fresh.close()
    assert read == live, "the store and resolving as asked give the same callers, in the same order"
    many = [c for c in live["cumsum"] if c[1] == MANY]
    assert len(many) == CALLERS, "every caller, however many"
    assert live["cumsum"] == sorted(live["cumsum"], key=lambda c: (c[1], c[2], c[0], c[3]))
    site = line_of(tree, SPELLED, "at::cumsum_symint_outf(")
    assert ("at::native::cumsum_symint_outf_caller", SPELLED, site, "at::cumsum_symint_outf") in live["cumsum.out"]


def test_an_ops_callers_put_the_trees_own_code_before_generated_wrappers():
    """A walk's fan-out keeps an op's first callers: by path alone, ``<generated>/`` sorted first and the generated
    structured wrappers' ``outputs_[0].get().copy_(...)`` filled the 400 an impact of op copy_ keeps."""
    from torchtalk.graph.cpp_callers import _by_site
    from torchtalk.model import Edge, EdgeKind, Loc

    op = Node(NodeKind.OP, "copy_", "copy_")

    def caller(path: str, line: int) -> Edge:
        return Edge(Node(NodeKind.CPP_FUNCTION, f"{path}:{line}", f"f{line}"), op, EdgeKind.DISPATCH_CALL,
                    Loc(path, line))

    edges = [caller("<generated>/aten/src/ATen/RegisterCPU.cpp", 9), caller("aten/src/ATen/native/Copy.cpp", 5),
             caller("<generated>/aten/src/ATen/RegisterCPU.cpp", 3), caller("aten/src/ATen/native/Blas.cpp", 7)]
    assert [(e.site.path.split("/")[-1], e.site.line) for e in _by_site(edges)] == [
        ("Blas.cpp", 7), ("Copy.cpp", 5), ("RegisterCPU.cpp", 3), ("RegisterCPU.cpp", 9)]
