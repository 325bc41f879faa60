"""The web view and the Mermaid pictures on the real PyTorch 2.6.0 tree, in headless Chromium."""

from __future__ import annotations

import json
from urllib.parse import urlencode

import pytest

from tests.browser import ViewServer, chromium, click_node, console_problems, missing, node_labels, wait_idle
from torchtalk.tools import all_tools, answer, draws, get_tool

pytestmark = [pytest.mark.integration, pytest.mark.skipif(missing() is not None, reason=missing() or "")]

# At least one call per graph tool, and the big ones: every picture must be valid Mermaid.
MERMAID_CALLS = [
    ("trace", {"function_name": "softmax"}),
    ("trace", {"function_name": "_softmax"}),
    ("trace", {"function_name": "add.Tensor"}),
    ("trace", {"function_name": "torch.nn.functional.relu"}),
    ("trace", {"function_name": "torch.set_num_threads"}),
    ("calls", {"function_name": "index_select_out_cuda"}),
    ("calls", {"function_name": "add_stub"}),
    ("called_by", {"function_name": "index_select_out_cpu_"}),
    ("impact", {"function_name": "index_select_out_cpu_", "depth": 3}),
    ("impact", {"function_name": "add_stub", "depth": 5}),
    ("cuda_kernels", {"function_name": "softmax"}),
    ("cuda_kernels", {}),
    ("trace_module", {"module_name": "nn.Linear"}),
    ("trace_module", {"module_name": "torch.optim.Adam"}),
    ("affected", {"names": "aten/src/ATen/native/cpu/SoftMaxKernel.cpp:1208"}),
    ("affected", {"names": "cumsum, torch.nn.Linear"}),
    ("error_origin", {"message": "RuntimeError: mat1 and mat2 shapes cannot be multiplied (64x10 and 20x30)"}),
]


@pytest.fixture(scope="module")
def view(real_index, tmp_path_factory):
    cache = real_index.path.parent.parent.parent  # <cache>/trees/<tree>/index.db
    server = ViewServer(real_index.source_root, tmp_path_factory.mktemp("view") / "view.log",
                        env={"TORCHTALK_CACHE_DIR": str(cache)}, codegen=True)
    yield server
    assert server.stop() == 130, server.log()  # SIGINT
    assert "Traceback" not in server.log()


@pytest.fixture(scope="module")
def browser():
    with chromium() as driver:
        yield driver


def open_answer(driver, base: str, tool: str, **args) -> str:
    driver.get(base + "?" + urlencode({"tool": tool, "args": json.dumps(args)}))
    return wait_idle(driver, timeout=120)


def test_trace_softmax_shows_the_op_its_kernels_and_a_click_reaches_the_cuda_kernels(view, browser):
    assert open_answer(browser, view.url, "trace", function_name="softmax") == "idle"
    assert console_problems(browser) == []
    load_ms = browser.execute_script("const t = performance.getEntriesByType('navigation')[0];"
                                     "return t.loadEventEnd - t.startTime;")
    print(f"page load: {load_ms:.0f} ms")
    labels = set(node_labels(browser))
    assert "softmax.int\nnative_functions.yaml:5541" in labels
    assert {"at::native::softmax\nSoftMax.cpp:443", "at::native::softmax_out\nSoftMax.cpp:457"} <= labels
    assert "_softmax\nnative_functions.yaml:5552" in labels  # the op its composite kernel calls
    # softmax.int is CompositeImplicitAutograd: its CUDA kernels are those of _softmax, which the GPU walk reaches
    # through the dispatcher (one call per chain, Note [Calls through the dispatcher]), so they are drawn at once;
    # a click on _softmax opens that op's own answer.
    assert any("cunn_SoftMaxForward\nSoftMax.cu:663" in lbl for lbl in node_labels(browser, ".gpu"))
    click_node(browser, "op:_softmax")
    assert wait_idle(browser, timeout=120) == "idle"
    gpu = node_labels(browser, ".gpu")
    assert any("cunn_SoftMaxForward\nSoftMax.cu:663" in lbl for lbl in gpu), gpu
    assert "TORCH_IMPL_FUNC(softmax_cuda_out)\nSoftMax.cu:1091" in node_labels(browser)
    here = browser.find_element("css selector", "#source pre.source span.here")
    assert here.find_element("css selector", "b").text == "5552" and "- func: _softmax(" in here.text
    assert console_problems(browser) == []


def test_a_big_answer_is_folded_and_a_group_opens_when_clicked(view, browser):
    open_answer(browser, view.url, "impact", function_name="index_select_out_cpu_", depth=3)
    groups = browser.execute_script(
        "return window.torchtalkView.cy.nodes('.collapsed').map(n => [n.id(), n.data('label')])")
    assert groups and any(label.endswith(" callers") for _id, label in groups), groups
    shown = len(node_labels(browser))
    gid, label = max(groups, key=lambda g: int(g[1].split()[0].lstrip("+")))
    click_node(browser, gid)
    wait_idle(browser)
    count = int(label.split()[0].lstrip("+"))
    assert len(node_labels(browser)) == shown - 1 + count  # the group's node gives way to its members
    assert console_problems(browser) == []


@pytest.mark.parametrize("tool, args", MERMAID_CALLS, ids=[f"{t}-{'-'.join(map(str, a.values())) or 'summary'}"
                                                           for t, a in MERMAID_CALLS])
def test_mermaid_of_every_graph_tool_renders(real_index, view, browser, tool, args):
    assert {t for t, _a in MERMAID_CALLS} == {t.name for t in all_tools() if draws(t)}
    if not browser.execute_script("return !!window.torchtalkView"):
        browser.get(view.url)
        wait_idle(browser)
    text = answer(get_tool(tool), real_index, format="mermaid", **args).text
    diagram = text.split("```mermaid\n", 1)[1].split("\n```", 1)[0]
    out = browser.execute_async_script(
        "const [text, done] = arguments;"
        "window.torchtalkView.loadMermaid()"
        ".then(m => m.render('t' + Math.random().toString(36).slice(2), text))"
        ".then(r => done({svg: r.svg}), e => done({error: String(e && e.message || e)}));", diagram)
    assert "error" not in out, f"mermaid refused {tool}{args}: {out.get('error')}"
    drawn = out["svg"].count('class="node')
    assert drawn >= min(4, diagram.count(":::")), (tool, drawn)
    assert console_problems(browser) == []
