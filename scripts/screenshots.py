"""Screenshots of the web view for the README (docs/images/*.png), from a real tree in headless Chromium.

    python scripts/screenshots.py --source ~/pytorch-2.6.0 [--out docs/images]

Starts ``torchtalk view`` on a free port, opens three answers in Debian's chromium (through its
chromedriver and Selenium: pip install -e '.[test]'; apt-get install chromium chromium-driver), and saves
what a user sees. Nothing is fetched from the network.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from urllib.parse import urlencode

FLAGS = ("--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
         "--disable-background-networking", "--disable-component-update", "--disable-sync",
         "--window-size=1600,1000")


def start_view(source: str) -> tuple[subprocess.Popen, str]:
    proc = subprocess.Popen([sys.executable, "-m", "torchtalk", "view", "--source", source, "--port", "0",
                             "--no-browser"], stderr=subprocess.PIPE, text=True, start_new_session=True)
    assert proc.stderr is not None
    for line in proc.stderr:
        sys.stderr.write(line)
        m = re.search(r"is at (http://127\.0\.0\.1:\d+/view/)", line)
        if m:
            return proc, m.group(1)
    raise SystemExit("torchtalk view printed no address")


def wait_idle(driver, timeout: float = 120) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if driver.execute_script("return window.torchtalkView && window.torchtalkView.ready "
                                 "&& !window.torchtalkView.busy && document.body.dataset.state === 'idle'"):
            time.sleep(0.3)  # the layout's last frame
            return
        time.sleep(0.05)
    raise SystemExit("the page stayed busy")


def click(driver, node_id: str) -> None:
    from selenium.webdriver.common.actions.action_builder import ActionBuilder
    x, y = driver.execute_script(
        "const n = window.torchtalkView.cy.getElementById(arguments[0]);"
        "if (n.nonempty()) { const b = n.renderedBoundingBox(), c = window.torchtalkView.cy;"
        "  if (b.x1 < 0 || b.y1 < 0 || b.x2 > c.width() || b.y2 > c.height()) c.center(n); }"
        "const p = n.renderedPosition(), r = document.getElementById('graph').getBoundingClientRect();"
        "return [p.x + r.left, p.y + r.top];", node_id)
    taps = driver.execute_script("return window.torchtalkView.taps")
    actions = ActionBuilder(driver)
    actions.pointer_action.move_to_location(int(x), int(y))
    actions.pointer_action.click()
    actions.perform()
    deadline = time.monotonic() + 10  # the page takes the click (cytoscape's tap) a moment later
    while driver.execute_script("return window.torchtalkView.taps") == taps:
        assert time.monotonic() < deadline, f"the click on {node_id} reached no node"
        time.sleep(0.02)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--source", required=True, help="a PyTorch 2.6.0 source tree (indexed or not)")
    ap.add_argument("--out", default="docs/images", help="where the PNGs go (default docs/images)")
    args = ap.parse_args()
    os.environ["SE_OFFLINE"] = "true"
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    proc, base = start_view(args.source)
    opts = webdriver.ChromeOptions()
    opts.binary_location = "/usr/bin/chromium"
    for flag in FLAGS:
        opts.add_argument(flag)
    opts.add_argument(f"--user-data-dir={tempfile.mkdtemp(prefix='tt-shots-')}")
    driver = webdriver.Chrome(service=Service("/usr/bin/chromedriver"), options=opts)
    try:
        def open_answer(tool: str, **kw: object) -> None:
            driver.get(base + "?" + urlencode({"tool": tool, "args": json.dumps(kw)}))
            wait_idle(driver)

        # 1. trace softmax, expanded into _softmax (the op its composite kernel calls): down to the CUDA kernels.
        open_answer("trace", function_name="softmax")
        click(driver, "op:_softmax")
        wait_idle(driver)
        # Frame the way down: _softmax, its kernels, the stubs and the CUDA kernels with what launches them.
        driver.execute_script("const cy = window.torchtalkView.cy;"
                              "const down = cy.nodes('.gpu, .stub').union(cy.getElementById('op:_softmax'));"
                              "const near = down.union(down.incomers('node'))"
                              ".union(down.incomers('node').incomers('node.cpp'));"
                              "cy.fit(near, 16);")
        time.sleep(0.3)
        driver.save_screenshot(str(out / "view-trace-softmax.png"))
        # 2. a DispatchStub with each backend's kernel; the CUDA one clicked: what it launches, and its source.
        open_answer("trace", function_name="atan2", focus="dispatch")
        node = driver.execute_script("return window.torchtalkView.cy.nodes().filter("
                                     "n => n.data('label').startsWith('at::native::atan2_kernel_cuda'))[0].id()")
        click(driver, node)
        wait_idle(driver)
        driver.execute_script("const cy = window.torchtalkView.cy;"
                              "const n = cy.getElementById(arguments[0]);"
                              "const stub = n.incomers('node'), impl = stub.incomers('node');"
                              "cy.fit(n.closedNeighborhood().union(stub.outgoers('node')).union(impl)"
                              ".union(impl.incomers('node.op')), 24);", node)
        time.sleep(0.3)
        driver.save_screenshot(str(out / "view-trace-atan2.png"))
        # 3. impact of a kernel, folded by layer into counted groups.
        open_answer("impact", function_name="index_select_out_cpu_", depth=3)
        driver.execute_script("const cy = window.torchtalkView.cy, g = cy.nodes('.collapsed');"
                              "cy.fit(g.union(g.neighborhood('node')).union(cy.nodes('.root')), 16);")
        time.sleep(0.3)
        driver.save_screenshot(str(out / "view-impact.png"))
    finally:
        driver.quit()
        proc.send_signal(signal.SIGINT)
        proc.wait(timeout=30)
    for p in sorted(out.glob("view-*.png")):
        print(p)
    return 0


if __name__ == "__main__":
    sys.exit(main())
