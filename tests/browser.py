"""Headless Chromium for the web view's tests: Debian's chromium and chromedriver, driven by Selenium.

Never a browser that downloads itself: the binaries are the system's (``.ci/run`` installs them with
apt-get), Selenium Manager is kept offline, and Chromium gets a fresh profile and no background
networking. Tests skip, saying what is missing, where any of this is not installed.
"""

from __future__ import annotations

import contextlib
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

CHROMIUM = os.environ.get("TORCHTALK_TEST_CHROMIUM", "/usr/bin/chromium")
CHROMEDRIVER = os.environ.get("TORCHTALK_TEST_CHROMEDRIVER", "/usr/bin/chromedriver")
FLAGS = ("--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
         "--disable-background-networking", "--disable-component-update", "--disable-sync",
         "--window-size=1500,1000")


def missing() -> str | None:
    """Why the browser tests cannot run here, or None."""
    try:
        import selenium  # noqa: F401
    except ImportError:
        return "selenium is not installed (pip install -e '.[test]')"
    for path in (CHROMIUM, CHROMEDRIVER):
        if not os.access(path, os.X_OK):
            return f"{path} is missing (apt-get install -y chromium chromium-driver; .ci/run does it)"
    return None


@contextlib.contextmanager
def chromium() -> Iterator[object]:
    why = missing()
    if why:
        pytest.skip(why)
    os.environ["SE_OFFLINE"] = "true"  # Selenium Manager must never try to fetch a driver
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    opts = webdriver.ChromeOptions()
    opts.binary_location = CHROMIUM
    for flag in FLAGS:
        opts.add_argument(flag)
    profile = tempfile.mkdtemp(prefix="tt-chromium-")
    opts.add_argument(f"--user-data-dir={profile}")
    opts.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    driver = webdriver.Chrome(service=Service(CHROMEDRIVER), options=opts)
    try:
        yield driver
    finally:
        driver.quit()
        shutil.rmtree(profile, ignore_errors=True)


def console_problems(driver) -> list[str]:
    """Console errors and warnings the page produced (the log is drained)."""
    return [f"{e['level']}: {e['message']}" for e in driver.get_log("browser") if e["level"] in ("SEVERE", "WARNING")]


def wait_idle(driver, timeout: float = 60) -> str:
    """Wait until the page is not busy (ready, idle or error); returns the state."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        st = driver.execute_script("return window.torchtalkView && window.torchtalkView.ready "
                                   "&& !window.torchtalkView.busy ? document.body.dataset.state : null")
        if st in ("idle", "error"):
            return st
        time.sleep(0.05)
    status = driver.execute_script("return document.getElementById('status').textContent")
    raise AssertionError(f"the page stayed busy for {timeout} s: {status}")


def node_labels(driver, selector: str = "node") -> list[str]:
    return driver.execute_script("return window.torchtalkView.cy.nodes(arguments[0]).map(n => n.data('label'))",
                                 selector)


def click_node(driver, node_id: str) -> None:
    """A real mouse click at the node's place on the canvas (panned into view first, as a user would)."""
    from selenium.webdriver.common.actions.action_builder import ActionBuilder
    x, y = driver.execute_script(
        "const n = window.torchtalkView.cy.getElementById(arguments[0]);"
        "if (n.nonempty()) { const b = n.renderedBoundingBox(), c = window.torchtalkView.cy;"
        "  if (b.x1 < 0 || b.y1 < 0 || b.x2 > c.width() || b.y2 > c.height()) c.center(n); }"
        "if (n.empty()) return null;"
        "const p = n.renderedPosition(), r = document.getElementById('graph').getBoundingClientRect();"
        "return [p.x + r.left, p.y + r.top];", node_id) or (None, None)
    assert x is not None, f"no node {node_id} on the page"
    taps = driver.execute_script("return window.torchtalkView.taps")
    actions = ActionBuilder(driver)
    actions.pointer_action.move_to_location(int(x), int(y))
    actions.pointer_action.click()
    actions.perform()
    deadline = time.monotonic() + 10  # the page takes the click (cytoscape's tap) a moment later
    while driver.execute_script("return window.torchtalkView.taps") == taps:
        assert time.monotonic() < deadline, f"the click on {node_id} reached no node"
        time.sleep(0.02)


class ViewServer:
    """``torchtalk view`` in a subprocess, on a free port, as a user starts it."""

    def __init__(self, tree: Path, log: Path, env: dict[str, str] | None = None, codegen: bool = False):
        self.log_path = log
        self._log = open(log, "w+")  # noqa: SIM115 - the server writes it until stop()
        args = [sys.executable, "-m", "torchtalk", "view", "--source", str(tree), "--port", "0", "--no-browser"]
        if not codegen:
            args.append("--no-codegen")
        self.proc = subprocess.Popen(args, stdin=subprocess.DEVNULL, stdout=self._log, stderr=subprocess.STDOUT,
                                     env={**os.environ, **(env or {})}, start_new_session=True)
        deadline = time.monotonic() + 300
        while time.monotonic() < deadline:
            m = re.search(r"is at (http://127\.0\.0\.1:\d+/view/)", self.log())
            if m:
                self.url = m.group(1)
                return
            assert self.proc.poll() is None, f"torchtalk view exited: {self.log()}"
            time.sleep(0.1)
        self.stop()
        pytest.fail(f"torchtalk view printed no address in 300 s: {self.log()}")

    def log(self) -> str:
        if not self._log.closed:
            self._log.flush()
        return self.log_path.read_text(errors="replace")

    def stop(self) -> int:
        import signal
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGINT)
        try:
            return self.proc.wait(timeout=30)
        finally:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(self.proc.pid, signal.SIGKILL)
            self._log.close()
