"""The answer budget (Note [Answer budget] in render/budget.py): the lead always, detail by relevance, and a
Cut: line with the call that shows it for every section left out, whole or in part."""

import re

import pytest

from torchtalk.render import budget
from torchtalk.render.budget import Section, fit
from torchtalk.tools import get_tool, run

from ..conftest import index_with


def section(name: str, n: int, width: int = 40, keep: int = 0) -> Section:
    return Section([f"## {name}"], [f"- {name} item {i} ".ljust(width, ".") for i in range(n)],
                   what=f"section {name}", shows=f'show("{name}")', noun="items", keep=keep)


def test_everything_fits_whole_without_cut_lines():
    out = fit(["# lead"], [section("a", 3), section("b", 2)], ["tail"], budget=10_000)
    assert out.cuts == [] and out.lines[0] == "# lead" and out.lines[-1] == "tail"
    assert "## a" in out.lines and "## b" in out.lines and not any(line.startswith("Cut:") for line in out.lines)


def test_lead_first_sections_in_order_then_one_cut_line_each_with_its_call():
    sections = [section("a", 5), section("b", 50), section("c", 5), section("d", 0)]
    out = fit(["# lead", "the answer"], sections, ["Note: kept"], budget=1_500)
    text = out.text
    assert len(text) <= 1_500
    assert out.lines[:2] == ["# lead", "the answer"] and "Note: kept" in out.lines
    assert all(f"- a item {i}" in text for i in range(5))  # the first section whole
    shown_b = sum(f"- b item {i} " in text for i in range(50))
    assert 0 < shown_b < 50 and all(f"- b item {i} " in text for i in range(shown_b))  # a prefix of the next
    assert "## c" not in text and "## d" not in text  # nothing after the first section cut in part
    assert out.cuts == [f'Cut: section b: showing {shown_b} of 50 items; show("b") shows all',
                        'Cut: section c (5 items); show("c") shows it', 'Cut: section d; show("d") shows it']
    assert text.endswith("\n".join(out.cuts))


def test_keep_shows_a_few_of_each_section_before_filling_any():
    sections = [section("near", 60, keep=5), section("ops", 60, keep=5), section("far", 60, keep=2)]
    out = fit(["# lead"], sections, budget=2_000)
    assert len(out.text) <= 2_000
    for name, least in (("near", 5), ("ops", 5), ("far", 2)):
        assert all(f"- {name} item {i} " in out.text for i in range(least))
    assert len(out.cuts) == 3 and all("showing" in c and c.endswith("shows all") for c in out.cuts)


def test_an_outline_cut_in_part_keeps_every_top_item_before_any_detail_in_order():
    """A trace's overload: each dispatch key at the top, its C++ indented below it, a stub's kernels below that; cut
    in part it shows every key (and the autograd line after them) before the detail of any, in their order."""
    items = []
    for key in ("CPU", "CUDA", "MPS"):
        items.append(f"- {key}: kernel_{key.lower()}")
        for j in range(6):
            items.append(f"    C++ line {key} {j} ".ljust(60, "."))
            items.append(f"      stub line {key} {j} ".ljust(60, "."))
    items.append("Autograd: derivatives.yaml:10")
    flat = Section(["## op"], items, what="overload op", shows='trace("op")')
    outline = Section(["## op"], items, what="overload op", shows='trace("op")', outline=True)
    cut_flat, cut_outline = (fit(["# trace op"], [s], budget=1_200) for s in (flat, outline))
    assert "- MPS: kernel_mps" not in cut_flat.text and "Autograd" not in cut_flat.text  # a prefix: the CPU key's
    lines = cut_outline.lines
    assert [ln for ln in lines if ln and not ln.startswith((" ", "#", "Cut:"))] == \
        [ln for ln in items if not ln.startswith(" ")]  # every key and the autograd line
    shown = [ln for ln in lines if ln in items]
    assert shown == sorted(shown, key=items.index), "in their order"
    assert any(ln.startswith("    C++ line") for ln in shown), "the detail the budget leaves room for"
    assert not any(ln.startswith("      stub") for ln in shown) or \
        all(ln in shown for ln in items if ln.startswith("    ")), "the less indented detail first"
    assert len(cut_outline.text) <= 1_200
    n = len(shown)
    assert cut_outline.cuts == [f'Cut: overload op: showing {n} of {len(items)} lines; trace("op") shows all']
    whole = fit(["# trace op"], [outline], budget=100_000)
    assert whole.lines[1:] == ["## op", *items] and whole.cuts == []


def test_a_section_that_would_show_too_few_items_is_cut_whole():
    out = fit(["# lead"], [section("a", 5, width=300)], budget=400)
    assert "## a" not in out.text and out.cuts == ['Cut: section a (5 items); show("a") shows it']


def test_a_section_must_say_what_it_is_and_the_call_that_shows_it():
    with pytest.raises(ValueError, match="the call that shows it"):
        Section(["## x"], ["- y"], what="x", shows="")


def test_no_silent_cut_in_any_fitted_answer_on_the_fixture_tree(indexed, monkeypatch):
    """With a tiny budget every tool answer is cut; each section it does not show whole has its Cut: line."""
    _, ix = indexed
    seen: list[tuple[list[Section], budget.Fitted]] = []
    real_fit = budget.fit

    def spy(lead, sections, tail=(), limit=budget.BUDGET):
        out = real_fit(lead, sections, tail, limit)
        seen.append((list(sections), out))
        return out

    monkeypatch.setattr(budget, "fit", spy)
    monkeypatch.setattr(budget, "BUDGET", 400)
    questions = [("trace", {"function_name": "cumsum"}), ("trace", {"function_name": "index_select"}),
                 ("calls", {"function_name": "index_select_out_cuda_impl"}),
                 ("called_by", {"function_name": "impl_func_cum_ops"}),
                 ("impact", {"function_name": "index_select_out_cpu_", "depth": 3}),
                 ("cuda_kernels", {"function_name": "index_select"})]
    cut_any = 0
    for tool, kwargs in questions:
        seen.clear()
        _, text = run(get_tool(tool), ix, **kwargs)
        assert seen, f"{tool} does not fit its answer to the budget"
        for sections, out in seen:
            for s in sections:
                lines = [*s.head, *s.items]
                if all(line in out.lines for line in lines):
                    continue
                cut_any += 1
                named = [c for c in out.cuts if c.startswith(f"Cut: {s.what}") and s.shows in c]
                assert named and named[0] in text, f"{tool}: {s.what} was cut without a line naming {s.shows}"
    assert cut_any, "the tiny budget cut nothing: the test would not see a silent cut"


def test_trace_module_fits_its_call_tree_and_ops_to_the_budget_and_names_each_cut(py_indexed, monkeypatch):
    """trace_module's call tree and ops reached are sections of the budget (a TransformerEncoderLayer's answer was
    23,570 characters): with a small one, the lead stays, the forward's own calls come before deeper ones, each cut
    is named."""
    tree, ix = py_indexed
    ix.close()
    helpers = "".join(f"\n\ndef helper_{i}(x):\n    y = torch.cumsum(x, {i})\n    z = torch.relu(y)\n"
                      f"    return torch.add(z, y)\n" for i in range(12))
    calls = "".join(f"        x = helper_{i}(x)\n" for i in range(12))
    ix = index_with(tree, {"torch/nn/modules/big.py": (
        "import torch\nfrom .module import Module\n" + helpers + "\n\nclass Big(Module):\n"
        "    def forward(self, x):\n" + calls + "        return x\n")})
    try:
        _, whole = run(get_tool("trace_module"), ix, module_name="torch.nn.modules.big.Big")
        assert "forward calls:" in whole and "Native ops reached" in whole and "Cut: the" not in whole, whole
        monkeypatch.setattr(budget, "BUDGET", len(whole) // 2)
        _, text = run(get_tool("trace_module"), ix, module_name="torch.nn.modules.big.Big")
        assert len(text) < len(whole)
        lead = whole.split("\n\nforward calls:")[0]
        assert text.startswith(lead), "the class, its constructor and forward stay"
        cuts = [ln for ln in text.splitlines() if ln.startswith("Cut: the calls of forward")]
        assert cuts and cuts[0].endswith(f"{budget.STRUCTURED} shows all"), text
        tree_lines = whole.split("forward calls:\n")[1].split("\n\n")[0].splitlines()
        kept = [ln for ln in text.splitlines() if ln in tree_lines]
        own = [ln for ln in tree_lines if ln.startswith("- ")]
        assert len(own) == 12 and kept[:1] == own[:1] and len(kept) < len(tree_lines)
        assert all(ln in kept for ln in own) or not any(ln.startswith(" ") for ln in kept), \
            "forward's own calls before what they call"
        assert "Native ops reached" in text or f"Cut: the native ops reached (3 ops); {budget.STRUCTURED}" in text
        monkeypatch.setattr(budget, "BUDGET", len(whole) * 3 // 4)
        _, text = run(get_tool("trace_module"), ix, module_name="torch.nn.modules.big.Big")
        kept = [ln for ln in text.splitlines() if ln in tree_lines]
        assert all(ln in kept for ln in own) and len(kept) < len(tree_lines), text
    finally:
        ix.close()


def test_two_hundred_sections_cut_whole_share_one_line_that_names_each():
    sections = [section(f"op{i}", 20) for i in range(200)]
    out = fit(["# lead"], sections, budget=12_000)
    assert len(out.text) <= 12_000 + budget.CUT_ROOM
    last = out.cuts[-1]
    assert last.startswith("Cut: ") and "more: " in last and 'show("op' in last
    named = [s.what for s in sections if f"## {s.head[0][3:]}" not in out.lines]
    assert all(what in "\n".join(out.cuts) for what in named)


def test_long_names_cut_whole_are_named_as_far_as_the_room_goes_then_counted():
    """200 kernels of mem-efficient attention (``__global__ fmha_cutlassF_f32_notaligned_32x128_gmem_sm50``, ...)
    cut whole: naming each made the one line 10k characters, the answer twice its budget."""
    sections = [section("fmha_cutlassF_f32_notaligned_32x128_gmem_sm" + str(i), 20) for i in range(200)]
    out = fit(["# lead"], sections, budget=12_000)
    assert len(out.text) <= 12_000 + budget.CUT_ROOM
    last = out.cuts[-1]
    whole, rest = re.match(r"Cut: (\d+) more: ", last), re.search(r", and (\d+) more;", last)
    named = [s for s in sections if f"{s.what}," in last]
    assert whole and rest and len(named) > 10 and len(named) + int(rest.group(1)) == int(whole.group(1))
    assert "holds all" in last


def test_a_stub_kernel_registered_once_per_cpu_capability_is_one_line_naming_each_registration():
    from torchtalk.model import Edge, EdgeKind, Loc, Node, NodeKind
    from torchtalk.render.common import stub_kernels

    stub = Node(NodeKind.STUB, "fill_stub", "fill_stub")
    cpu = Node(NodeKind.CPP_FUNCTION, "7", "at::native::fill_cpu", Loc("aten/src/ATen/native/mkl/F.cpp", 12))
    cuda = Node(NodeKind.CPP_FUNCTION, "8", "at::native::fill_cuda", Loc("aten/src/ATen/native/cuda/F.cu", 5))
    macros = ("REGISTER_ARCH_DISPATCH", "REGISTER_AVX2_DISPATCH", "REGISTER_AVX512_DISPATCH")
    regs = [Edge(stub, cpu, EdgeKind.STUB_KERNEL, Loc("aten/src/ATen/native/mkl/F.cpp", 40 + i), "CPU", m)
            for i, m in enumerate(macros)]
    regs.insert(1, Edge(stub, cuda, EdgeKind.STUB_KERNEL, Loc("aten/src/ATen/native/cuda/F.cu", 9), "CUDA",
                        "REGISTER_DISPATCH"))
    assert stub_kernels(regs) == [
        "CPU: fill_cpu  (defined aten/src/ATen/native/mkl/F.cpp:12, registered aten/src/ATen/native/mkl/F.cpp:40-42 "
        "(REGISTER_ARCH_DISPATCH, REGISTER_AVX2_DISPATCH, REGISTER_AVX512_DISPATCH))",
        "CUDA: fill_cuda  (defined aten/src/ATen/native/cuda/F.cu:5, registered aten/src/ATen/native/cuda/F.cu:9 "
        "REGISTER_DISPATCH)"]
    apart = [regs[0], Edge(stub, cpu, EdgeKind.STUB_KERNEL, Loc("aten/src/ATen/native/mkl/F.cpp", 90), "CPU",
                           "REGISTER_AVX2_DISPATCH")]
    assert stub_kernels(apart) == [
        "CPU: fill_cpu  (defined aten/src/ATen/native/mkl/F.cpp:12, registered aten/src/ATen/native/mkl/F.cpp:40 "
        "REGISTER_ARCH_DISPATCH, aten/src/ATen/native/mkl/F.cpp:90 REGISTER_AVX2_DISPATCH)"]


def test_a_section_holding_the_first_of_its_items_counts_them_all_in_its_cut():
    """``total``: a section given only its first items (trace_module's first 40 ops of 52) names all of them when
    the budget cuts it, and names the cut when every item given is shown (before: "showing 40 of 52" in its title
    and "showing 8 of 40" in its cut line)."""
    items = [f"- op{i}" for i in range(40)]
    s = Section(["", "Native ops reached (52):"], items, what="the native ops reached", shows="x", noun="ops",
                total=52)
    out = fit(["# lead"], [s], budget=200)
    assert any(c.startswith("Cut: the native ops reached: showing ") and c.endswith(" of 52 ops; x shows all")
               for c in out.cuts), out.cuts
    out = fit(["# lead"], [s], budget=100_000)
    assert out.cuts == ["Cut: the native ops reached: showing 40 of 52 ops; x shows all"]
    assert fit(["# lead"], [Section([""], items, what="w", shows="x")], budget=100_000).cuts == []


def test_the_cut_of_the_overload_without_a_name_names_a_call_of_it_alone(indexed, monkeypatch):
    # trace("triangular_solve") cut its overload triangular_solve and named trace("triangular_solve") to show it:
    # the same answer, cut the same way. X.default is that overload alone.
    _, ix = indexed
    monkeypatch.setattr(budget, "BUDGET", 400)
    _, text = run(get_tool("trace"), ix, function_name="cumsum")
    cut = [line for line in text.splitlines() if line.startswith("Cut: overload cumsum ")]
    assert cut and cut[0].endswith('trace("cumsum.default") shows it'), text
    res, _ = run(get_tool("trace"), ix, function_name="cumsum.default")
    assert [t.op.full_name for t in res.ops] == ["cumsum"]
