"""The answer budget (Note [Answer budget] in render/budget.py): the lead always, detail by relevance, and a
Cut: line with the call that shows it for every section left out, whole or in part."""

import re

import pytest

from torchtalk.render import budget
from torchtalk.render.budget import Section, fit
from torchtalk.tools import get_tool, run


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
