"""The web view in headless Chromium, on the fixture tree: `torchtalk view` as a user starts it, a real browser.

The page must load with nothing in the console, draw an answer, expand a node when it is clicked, show
the source around a node, and every graph tool's Mermaid must render with the vendored mermaid library.
"""

from __future__ import annotations

import json
from urllib.parse import urlencode

import pytest

from tests.browser import ViewServer, chromium, click_node, console_problems, missing, node_labels, wait_idle
from torchtalk.tools import all_tools, answer, draws, get_tool

pytestmark = pytest.mark.skipif(missing() is not None, reason=missing() or "")


@pytest.fixture
def view(py_indexed, tmp_path):
    tree, _ix = py_indexed
    server = ViewServer(tree, tmp_path / "view.log")
    yield server
    assert server.stop() == 130, server.log()  # SIGINT
    assert "Traceback" not in server.log()


@pytest.fixture
def browser():
    with chromium() as driver:
        yield driver


def open_answer(driver, base: str, tool: str, **args) -> str:
    driver.get(base + "?" + urlencode({"tool": tool, "args": json.dumps(args)}))
    return wait_idle(driver)


def test_the_page_loads_clean_and_draws_the_answer(view, browser):
    assert open_answer(browser, view.url, "trace", function_name="index_select") == "idle"
    assert console_problems(browser) == []
    labels = node_labels(browser)
    assert "index_select\nnative_functions.yaml:87" in labels
    assert "at::native::index_select_cuda\nIndexing.cu:41" in labels
    assert any(lbl.startswith("__global__") and "indexSelectSmallIndex" in lbl for lbl in node_labels(browser, ".gpu"))
    assert browser.find_element("id", "answer").text.startswith("# trace index_select")
    assert browser.find_element("id", "answer-title").text == 'trace("index_select")'
    # Nothing was fetched from anywhere but the view's own server.
    urls = browser.execute_script("return performance.getEntriesByType('resource').map(e => e.name)")
    assert urls and all(u.startswith(view.url) for u in urls), urls


def test_clicking_a_node_expands_it_and_shows_its_source(view, browser):
    open_answer(browser, view.url, "trace", function_name="index_select.out")
    before = set(node_labels(browser))
    assert not any("index_select_out_cpu_dim1_" in lbl for lbl in before)
    node = browser.execute_script("return window.torchtalkView.cy.nodes().filter(n => "
                                  "n.data('label').startsWith('at::native::index_select_out_cpu_\\n'))[0].id()")
    click_node(browser, node)
    wait_idle(browser)
    after = set(node_labels(browser))
    # Expanded with calls(...) of the kernel, named by its path:line: its callee joins the picture.
    assert before < after and "at::native::index_select_out_cpu_dim1_\nTensorAdvancedIndexing.cpp:3" in after
    assert browser.execute_script(
        f"return window.torchtalkView.cy.getElementById({json.dumps(node)}).hasClass('expanded')")
    here = browser.find_element("css selector", "#source pre.source span.here")
    assert here.find_element("css selector", "b").text == "7" and "index_select_out_cpu_(" in here.text
    panel = browser.find_element("id", "panel").text
    assert 'Expanded with calls("aten/src/ATen/native/TensorAdvancedIndexing.cpp:7")' in panel
    assert console_problems(browser) == []


def test_the_search_box_answers_and_a_name_not_there_says_so(view, browser):
    browser.get(view.url)
    wait_idle(browser)
    from selenium.webdriver.support.ui import Select
    Select(browser.find_element("id", "tool")).select_by_value("cuda_kernels")
    box = browser.find_element("id", "name")
    box.send_keys("index_select")
    browser.find_element("css selector", "#ask button[type=submit]").click()
    assert wait_idle(browser) == "idle"
    assert len(node_labels(browser, ".gpu")) == 2
    assert "tool=cuda_kernels" in browser.current_url
    box.clear()
    box.send_keys("sofmax")
    browser.find_element("css selector", "#ask button[type=submit]").click()
    wait_idle(browser)
    assert browser.find_element("id", "answer").text.startswith("No op, function or GPU kernel named 'sofmax'")
    assert node_labels(browser) == []
    assert console_problems(browser) == []


def test_every_graph_tools_mermaid_renders_with_the_vendored_library(py_indexed, view, browser):
    _tree, ix = py_indexed
    calls = {"trace": {"function_name": "atan2"}, "calls": {"function_name": "index_select_out_cuda_impl"},
             "called_by": {"function_name": "index_select_out_cpu_"},
             "impact": {"function_name": "index_select_out_cpu_"},
             "cuda_kernels": {"function_name": "index_select"}, "trace_module": {"module_name": "Linear"},
             "affected": {"names": "relu"},
             "error_origin": {"message": "RuntimeError: mat1 and mat2 shapes cannot be multiplied (64x10 and 20x30)"}}
    assert set(calls) == {t.name for t in all_tools() if draws(t)}
    browser.get(view.url)
    wait_idle(browser)
    for tool, args in calls.items():
        text = answer(get_tool(tool), ix, format="mermaid", **args).text
        diagram = text.split("```mermaid\n", 1)[1].split("\n```", 1)[0]
        svg = render_mermaid(browser, diagram)
        assert svg.startswith("<svg") and svg.count('class="node') >= 2, (tool, svg[:300])
    assert console_problems(browser) == []


def render_mermaid(driver, diagram: str) -> str:
    """The SVG mermaid makes of ``diagram`` in the page, or an AssertionError with mermaid's message."""
    out = driver.execute_async_script(
        "const [text, done] = arguments;"
        "window.torchtalkView.loadMermaid()"
        ".then(m => m.render('t' + Math.random().toString(36).slice(2), text))"
        ".then(r => done({svg: r.svg}), e => done({error: String(e && e.message || e)}));", diagram)
    assert "error" not in out, f"mermaid refused the diagram: {out['error']}\n{diagram}"
    return out["svg"]
