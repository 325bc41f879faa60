#!/usr/bin/env python3
"""The web view's speed on a real tree, in headless Chromium: page load, first graph, expansion, API.

    python benchmarks/bench_view.py --source "$(bash ../shared/get-pytorch-source | tail -n1)" [--runs 5]

Starts `torchtalk view` on a free port (over the index in $TORCHTALK_CACHE_DIR, built first when
missing) and Debian's chromium through Selenium (pip install -e '.[test]'; apt-get install chromium
chromium-driver). Over --runs fresh page loads (a new browser profile each, so nothing is cached) it
prints, as the page itself times them (performance.now(), from the start of the navigation): the load
event (HTML, styles, cytoscape), the answer of trace("softmax") received, its graph drawn, and from a
click on _softmax until its expansion is drawn. The first run (a cold browser and server) is shown
apart. Then, for each graph tool, the answer API's latency next to the same answer computed in this
process (query + Markdown only): the ratio is what the picture, the JSON and HTTP add.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import signal
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
from urllib.parse import urlencode

CALLS = [("trace", {"function_name": "softmax"}), ("calls", {"function_name": "index_select_out_cuda"}),
         ("called_by", {"function_name": "index_select_out_cpu_"}),
         ("impact", {"function_name": "index_select_out_cpu_", "depth": 3}),
         ("cuda_kernels", {"function_name": "softmax"}), ("trace_module", {"module_name": "nn.Linear"})]
FLAGS = ("--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
         "--disable-background-networking", "--disable-component-update", "--disable-sync", "--window-size=1500,1000")


def start_view(source: str) -> tuple[subprocess.Popen, str]:
    proc = subprocess.Popen([sys.executable, "-m", "torchtalk", "view", "--source", source, "--port", "0",
                             "--no-browser"], stderr=subprocess.PIPE, text=True, start_new_session=True)
    assert proc.stderr is not None
    for line in proc.stderr:
        m = re.search(r"is at (http://127\.0\.0\.1:\d+/view/)", line)
        if m:
            return proc, m.group(1)
        sys.stderr.write(line)
    raise SystemExit("torchtalk view printed no address")


def browser():
    os.environ["SE_OFFLINE"] = "true"
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service
    opts = webdriver.ChromeOptions()
    opts.binary_location = "/usr/bin/chromium"
    for flag in FLAGS:
        opts.add_argument(flag)
    opts.add_argument(f"--user-data-dir={tempfile.mkdtemp(prefix='tt-bench-')}")
    return webdriver.Chrome(service=Service("/usr/bin/chromedriver"), options=opts)


def wait_idle(driver, since: float) -> float:
    """Seconds from ``since`` (time.perf_counter) until the page is idle with a graph drawn."""
    while True:
        if driver.execute_script("return !!(window.torchtalkView && window.torchtalkView.ready && "
                                 "!window.torchtalkView.busy && document.body.dataset.state === 'idle')"):
            return time.perf_counter() - since
        if time.perf_counter() - since > 120:
            raise SystemExit("the page stayed busy for 120 s")
        time.sleep(0.005)


def click(driver, node_id: str) -> None:
    from selenium.webdriver.common.actions.action_builder import ActionBuilder
    x, y = driver.execute_script(
        "const n = window.torchtalkView.cy.getElementById(arguments[0]), c = window.torchtalkView.cy;"
        "const b = n.renderedBoundingBox();"
        "if (b.x1 < 0 || b.y1 < 0 || b.x2 > c.width() || b.y2 > c.height()) c.center(n);"
        "const p = n.renderedPosition(), r = document.getElementById('graph').getBoundingClientRect();"
        "return [p.x + r.left, p.y + r.top];", node_id)
    taps = driver.execute_script("return window.torchtalkView.taps")
    actions = ActionBuilder(driver)
    actions.pointer_action.move_to_location(int(x), int(y))
    actions.pointer_action.click()
    actions.perform()
    while driver.execute_script("return window.torchtalkView.taps") == taps:
        time.sleep(0.005)
    wait_idle(driver, time.perf_counter())


def fmt(xs: list[float]) -> str:
    """Milliseconds: the first run, then the median and range of the others."""
    rest = sorted(xs[1:]) or xs
    return (f"first {xs[0]:5.0f} ms; then median {statistics.median(rest):5.0f} ms "
            f"({rest[0]:.0f}-{rest[-1]:.0f})")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--source", required=True)
    ap.add_argument("--runs", type=int, default=5)
    args = ap.parse_args()
    from torchtalk.server import prepare
    from torchtalk.tools import answer, get_tool

    _tree, ix = prepare(args.source)
    proc, base = start_view(args.source)
    runs: list[dict[str, float]] = []
    try:
        for _ in range(args.runs):
            driver = browser()
            try:
                t0 = time.perf_counter()
                driver.get(base + "?" + urlencode({"tool": "trace", "args": json.dumps({"function_name": "softmax"})}))
                wait_idle(driver, t0)
                first_nodes = driver.execute_script("return window.torchtalkView.cy.nodes().length")
                click(driver, "op:_softmax")
                m = driver.execute_script("const t = performance.getEntriesByType('navigation')[0];"
                                          "return {...window.torchtalkView.marks, load: t.loadEventEnd, "
                                          "html: t.responseEnd, nodes: window.torchtalkView.cy.nodes().length};")
                runs.append({**m, "first_nodes": first_nodes})
            finally:
                driver.quit()
        print(f"{args.runs} page loads, fresh browser profile each (times from the start of the navigation):")
        print(f"  HTML received:                    {fmt([m['html'] for m in runs])}")
        print(f"  load event (scripts, styles):     {fmt([m['load'] for m in runs])}")
        print(f'  trace("softmax") answer received: {fmt([m["answered"] for m in runs])}')
        print(f"  its graph drawn ({runs[0]['first_nodes']} nodes):         {fmt([m['drawn'] for m in runs])}")
        print(f"  click on _softmax to its expansion drawn ({runs[-1]['nodes']} nodes): "
              f"{fmt([m['expanded'] - m['tap'] for m in runs])}")
        print("answer API against the same answer in-process (median of 5, warm):")
        for tool, kw in CALLS:
            t = get_tool(tool)
            local, remote = [], []
            for _ in range(5):
                t0 = time.perf_counter()
                answer(t, ix, **kw)
                local.append(time.perf_counter() - t0)
                t0 = time.perf_counter()
                with urllib.request.urlopen(base + "api/answer?" + urlencode({"tool": tool, "args": json.dumps(kw)}),
                                            timeout=120) as r:
                    size = len(r.read())
                remote.append(time.perf_counter() - t0)
            lm, rm = statistics.median(local), statistics.median(remote)
            print(f"  {tool:13s} in-process {lm * 1000:6.1f} ms   view API {rm * 1000:6.1f} ms   "
                  f"x{rm / lm:4.1f}   {size / 1024:6.1f} KiB")
    finally:
        proc.send_signal(signal.SIGINT)
        proc.wait(timeout=30)
        ix.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
