#!/usr/bin/env python3
"""error_origin on real messages: run failing calls with the official torch 2.6.0 wheel, ask where each was raised.

    python benchmarks/bench_error_origin.py --source PATH_TO_PYTORCH_2.6.0

1. The official torch 2.6.0 wheel is installed from PyPI into this benchmark's own venv
   (under $TORCHTALK_BENCH_CACHE or ~/.cache/torchtalk-bench; never a dependency of
   TorchTalk): ``pip install --no-deps torch==2.6.0`` and its small pure-Python
   dependencies; the CUDA libraries its shared objects link against are added only when
   ``import torch`` needs them (it does for the PyPI wheel; no GPU is used).
2. Each case of error_cases.py runs in that venv, CPU only, with TORCH_SHOW_CPP_STACKTRACES=1:
   the message as Python shows it, and where it was really raised: a C++ error's
   "Exception raised from f at path:line" (when that line prints a message handed to it, as
   at::_assert_async's check does, the lines writing its text count too), a C++ warning's "(Triggered internally at
   path:line.)", else the innermost traceback frame in torch/ whose lines hold a piece of
   the message's text (the frame that wrote it, not a helper such as torch._check_with),
   else (an error set with PyErr_SetString) the one to three lines of the tree that write
   its text. Cases where none of these tells are skipped, and listed.
3. error_origin is asked over MCP stdio (`torchtalk serve`), without what gives the answer
   away ("Exception raised from", "Triggered internally at"): every case as
   "Class: message", and every fourth also with its Python traceback.
   The server is started and left to finish its warm-up (as a running server has) before the
   calls are timed.
4. Printed: top-1 and top-3 accuracy of the raise site, strict (the site that raised) and
   by text (a site printing exactly the same text counts: the message cannot tell such sites
   apart and the answer lists them all), per category, p50/p95 latency, and the misses.
   Latency is that of the call a user makes (the default limit), wall clock and the server's CPU
   (the figure a busy machine does not inflate); accuracy is scored on a second call listing up
   to 50 sites. Targets: top-1 >= 0.9, top-3 >= 0.97, p95 <= 300 ms.
"""

from __future__ import annotations

import argparse
import json
import os
import queue
import random
import re
import shlex
import statistics
import subprocess
import sys
import threading
import time
import venv
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from error_cases import CASES  # noqa: E402
from tt_adapter import generated_dir  # noqa: E402
from wheel import BenchError, cache_dir  # noqa: E402

TORCH = "2.6.0"
LIMIT = 50  # sites asked for: every site printing the same text is listed, so the one that raised can be found
PURE_DEPS = ["filelock", "typing-extensions>=4.10.0", "sympy==1.13.1", "networkx", "jinja2", "fsspec", "mpmath",
             "MarkupSafe"]
_RAISED_FROM = re.compile(r"\nException raised from (?P<func>.*?) at (?P<path>\S+?):(?P<line>\d+) "
                          r"\(most recent call first\):.*", re.S)
_TRIGGERED = re.compile(r" \(Triggered internally at (?P<path>\S+?):(?P<line>\d+)\.\)")
_ROOTS = ("aten/", "c10/", "torch/", "functorch/")


def log(msg: str) -> None:
    print(f"[bench_error_origin] {msg}", file=sys.stderr, flush=True)


# ------------------------------------------------------------------ the torch venv

def torch_python() -> Path:
    """The venv's python with torch 2.6.0 importable on CPU (created on first use)."""
    root = cache_dir() / f"torch-{TORCH}-venv"
    py = root / "bin" / "python"
    if not py.exists():
        log(f"creating {root}")
        venv.create(root, with_pip=True)
    if _imports(py):
        return py
    pip = [str(py), "-m", "pip", "install", "-q", "--disable-pip-version-check"]
    log(f"installing torch=={TORCH} (--no-deps) and its pure-Python dependencies")
    _run(pip + ["--no-deps", f"torch=={TORCH}", *PURE_DEPS])
    if not _imports(py):
        # The PyPI wheel's shared objects link against the CUDA runtime libraries: install the nvidia-*
        # packages its metadata names (no GPU is needed to load them), never triton.
        req = subprocess.run([str(py), "-c", "import importlib.metadata as m; print('\\n'.join("
                              "m.requires('torch') or []))"], capture_output=True, text=True, check=False)
        nvidia = [r.split(";")[0].replace(" ", "").replace("(", "").replace(")", "")
                  for r in req.stdout.splitlines() if r.startswith("nvidia-")]
        log(f"import torch needs the CUDA libraries: installing {len(nvidia)} nvidia-* packages")
        _run(pip + ["--no-deps", *nvidia])
    if not _imports(py):
        raise BenchError(f"torch {TORCH} does not import in {root}; remove it to start over")
    return py


def _imports(py: Path) -> bool:
    r = subprocess.run([str(py), "-c", "import torch; assert torch.__version__.startswith('2.6.0')"],
                       capture_output=True, text=True, check=False)
    return r.returncode == 0


def _run(cmd: list[str]) -> None:
    r = subprocess.run(cmd, capture_output=True, text=True, check=False)
    if r.returncode:
        tail = (r.stderr.strip().splitlines() or ["no output"])[-1]
        raise BenchError(f"{shlex.join(cmd[:6])} ... failed: {tail}")


def run_cases(py: Path) -> list[dict]:
    env = {**os.environ, "TORCH_SHOW_CPP_STACKTRACES": "1", "TORCH_DISABLE_ADDR2LINE": "1",
           "CUDA_VISIBLE_DEVICES": ""}
    r = subprocess.run([str(py), str(Path(__file__).with_name("error_runner.py"))], input=json.dumps(CASES),
                       capture_output=True, text=True, env=env, check=False, timeout=1800)
    if r.returncode:
        raise BenchError(f"the cases did not run: {(r.stderr.strip().splitlines() or ['?'])[-1]}")
    return list(json.loads(r.stdout))


# ------------------------------------------------------------------ ground truth

def tree_path(printed: str) -> str:
    p = printed.replace("\\", "/")
    if "site-packages/" in p:
        return p.rsplit("site-packages/", 1)[1]
    if "/build/" in p:  # written by the build: TorchTalk's generated layer
        return "<generated>/" + tree_path(p.rsplit("/build/", 1)[1])
    hits = [p.find("/" + r) for r in _ROOTS if "/" + r in p]
    return p[min(hits) + 1:] if hits else p


def _chunks(message: str) -> list[str]:
    """Literal-looking runs of a message (letters, spaces and light punctuation, 14+ characters): text a
    source line holds when it wrote the message (values sit between such runs)."""
    return [w.strip() for w in re.findall(r"[A-Za-z][A-Za-z ,'`._-]{13,}", message) if len(w.strip()) >= 14]


class Grep:
    """Where a text is written in the tree's C++ and Python sources and its generated code (tests aside)."""

    def __init__(self, tree: Path, generated: Path) -> None:
        self.generated = generated
        self.files: list[tuple[str, list[str]]] = []
        roots = [(tree / r, r) for r in ("aten", "c10", "torch", "functorch")] + [(generated, "<generated>")]
        for base, label in roots:
            for f in sorted(base.rglob("*")):
                if f.suffix in (".cpp", ".h", ".cu", ".cuh", ".py", ".mm", ".hpp") and "/test" not in f.as_posix():
                    try:
                        lines = f.read_text("utf-8").splitlines()
                    except (OSError, UnicodeDecodeError):
                        continue
                    self.files.append((f"{label}/{f.relative_to(base).as_posix()}", lines))

    def find(self, text: str) -> list[tuple[str, int]]:
        return [(rel, i) for rel, lines in self.files for i, ln in enumerate(lines, 1) if text in ln]


def truth(case: dict, tree: Path, grep: Grep) -> tuple[list[tuple[str, int]], str] | None:
    """(the places it was raised, how that is known), or None when it cannot be told."""
    m = _RAISED_FROM.search(case["message"])
    if m:
        path = tree_path(m.group("path"))
        copied = tree / "aten/src/ATen/templates" / path.rsplit("/", 1)[-1]
        if path.startswith("<generated>/") and not (grep.generated / path[len("<generated>/"):]).exists() \
                and copied.exists():  # a template the build copies as it is (core/TensorMethods.cpp)
            return [(copied.relative_to(tree).as_posix(), int(m.group("line")))], "Exception raised from (template)"
        raised = [(path, int(m.group("line")))]
        if _writes_text(tree, path, int(m.group("line")), case["message"]):
            return raised, "Exception raised from"
        # The line raised a message handed to it (at::_assert_async(cond, "text") ends in a TORCH_CHECK printing
        # its argument): the site is also where the message's text is written, as the issue defines it.
        written = _written_at(_chunks(case["message"][:m.start()]), grep)
        return (raised + written, "Exception raised from; text written at") if written else \
            (raised, "Exception raised from")
    t = _TRIGGERED.search(case["message"])
    if t:
        return [(tree_path(t.group("path")), int(t.group("line")))], "Triggered internally at"
    chunks = _chunks(case["message"])
    for path, line, _func in reversed(case.get("frames", [])):
        rel = tree_path(path)
        if not rel.startswith("torch/"):
            continue
        try:
            lines = (tree / rel).read_text(encoding="utf-8").splitlines()
        except OSError:
            continue
        window = "\n".join(lines[max(0, line - 16):line + 15])
        if any(c[:14] in window for c in chunks):
            return [(rel, line)], "traceback frame"
    # No trace names it (an error set with PyErr_SetString, or raised where no Python frame shows): the
    # lines of the tree that write the message's text, when they are few.
    written = _written_at(chunks, grep)
    return (written, "the only line(s) writing its text") if written else None


def _writes_text(tree: Path, path: str, line: int, message: str) -> bool:
    """Whether the statement at path:line (the line and the next few) holds a run of the message's text."""
    try:
        lines = (tree / path).read_text(encoding="utf-8").splitlines()
    except (OSError, UnicodeDecodeError):
        return True  # cannot tell (a generated file): take the line as the site
    window = "\n".join(lines[max(0, line - 1):line + 5])
    return any(c[:14] in window for c in _chunks(message.split("\nException raised from", 1)[0]))


def _written_at(chunks: list[str], grep: Grep) -> list[tuple[str, int]]:
    """The one to three lines of the tree that write the most of these runs of text (none when more)."""
    # A source line holds at most one of its runs whole, often cut where the literal is split: the longest
    # start of each run that some line holds, and the lines holding the most of them.
    votes: dict[tuple[str, int], int] = {}
    for c in chunks:
        for k in (len(c), 40, 24, 14):
            hits = grep.find(c[:k]) if k <= len(c) else []
            if hits:
                for h in hits:
                    votes[h] = votes.get(h, 0) + 1
                break
    if votes:
        top = max(votes.values())
        found = sorted(h for h, v in votes.items() if v == top)
        if len(found) <= 3:
            return found
    return []


def asked(case: dict, with_traceback: bool) -> str:
    """The text a user would paste: without the parts that name the site."""
    msg = _RAISED_FROM.sub("", case["message"])
    msg = _TRIGGERED.sub("", msg)
    if with_traceback and case["category"] != "warning":
        printed = _RAISED_FROM.sub("", case["printed"])
        return printed.rstrip()
    return f"{case['exception']}: {msg}"


def fragment(case: dict) -> str | None:
    """The message cut at a word boundary at both ends (the same cut on every run): what a user pastes after
    dropping a printed value or a prefix, or from the middle of a wrapped line. None for a message of fewer than six
    words (a cut would leave too little to tell a site by)."""
    words = asked(case, False).split(": ", 1)[-1].split()
    n = len(words)
    if n < 6:
        return None
    rng = random.Random(case["name"])
    start = rng.randint(1, max(1, n // 4))
    end = n - rng.randint(1, max(1, n // 4))
    return " ".join(words[start:end]) if end - start >= 4 else None


# ------------------------------------------------------------------ MCP stdio

class Server:
    def __init__(self, cmd: list[str]) -> None:
        self.proc = subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                                     text=True, bufsize=1)
        self.lines: queue.Queue[str] = queue.Queue()
        threading.Thread(target=self._read, daemon=True).start()
        self.next_id = 0

    def _read(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            self.lines.put(line)

    def request(self, method: str, params: dict, timeout: float = 600) -> dict:
        self.next_id += 1
        rid = self.next_id
        self._send({"jsonrpc": "2.0", "id": rid, "method": method, "params": params})
        end = time.monotonic() + timeout
        while True:
            msg = json.loads(self.lines.get(timeout=max(0.1, end - time.monotonic())))
            if msg.get("id") == rid:
                return dict(msg)

    def _send(self, msg: dict) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write(json.dumps(msg) + "\n")
        self.proc.stdin.flush()

    def cpu_ms(self) -> float:
        """CPU the server process has used (user + system), in ms: a figure a busy machine does not inflate."""
        try:
            fields = Path(f"/proc/{self.proc.pid}/stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            return 0.0
        return (int(fields[11]) + int(fields[12])) * 1000 / os.sysconf("SC_CLK_TCK")

    def start(self) -> None:
        self.request("initialize", {"protocolVersion": "2025-06-18", "capabilities": {},
                                    "clientInfo": {"name": "bench_error_origin", "version": "1"}})
        self._send({"jsonrpc": "2.0", "method": "notifications/initialized"})

    def settle(self, quiet_s: float = 3.0, limit_s: float = 600.0) -> float:
        """Wait until the server's start-up work (its warm-up, the background index check) is done: its CPU
        clock stands still for ``quiet_s``. Returns the seconds waited."""
        t0 = time.monotonic()
        last, still = self.cpu_ms(), time.monotonic()
        while time.monotonic() - t0 < limit_s:
            time.sleep(0.5)
            now = self.cpu_ms()
            if now - last > 20:
                last, still = now, time.monotonic()
            elif time.monotonic() - still >= quiet_s:
                break
        return time.monotonic() - t0

    def close(self) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.close()  # end of input: the server exits
        try:
            self.proc.wait(timeout=60)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()


# ------------------------------------------------------------------ scoring

def rank_of(result: dict, where: tuple[list[tuple[str, int]], str]) -> tuple[int | None, int | None]:
    """(strict rank, by-text rank), 1-based, of the true site among the answer's sites."""
    sites = result.get("sites", [])
    strict = None
    for i, s in enumerate(sites, 1):
        if any(s["loc"]["path"] == path and s["loc"]["line"] <= line <= max(s["end_line"], s["loc"]["line"])
               for path, line in where[0]):
            strict = i
            break
    if strict is None:
        return None, None
    pieces = [p["piece"] for p in sites[strict - 1]["pieces"]]
    text = next(i for i, s in enumerate(sites, 1) if [p["piece"] for p in s["pieces"]] == pieces)
    return strict, text


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--source", required=True, help="a PyTorch 2.6.0 source tree")
    ap.add_argument("--server-cmd", default=None, help="the MCP server command (default: torchtalk serve of this "
                                                       "Python's environment)")
    ap.add_argument("--show", type=int, default=0, help="print this many answers in full, to check by hand")
    ap.add_argument("--json", default=None, help="write every case, its truth and its ranks to this file")
    args = ap.parse_args()
    tree = Path(args.source).resolve()
    try:
        py = torch_python()
        log(f"running {len(CASES)} failing calls with torch {TORCH} on CPU")
        cases = run_cases(py)
    except BenchError as exc:
        print(f"bench_error_origin: {exc}", file=sys.stderr)
        return 2
    usable = []
    grep = Grep(tree, generated_dir(tree))
    for c in cases:
        if "message" not in c:
            log(f"skipped {c['name']}: it did not raise or warn with torch {TORCH}")
            continue
        where = truth(c, tree, grep)
        if where is None:
            log(f"skipped {c['name']}: where it was raised cannot be told ({c['exception']}: {c['message'][:80]})")
            continue
        usable.append((c, where))
    log(f"{len(usable)} messages with a known raise site")
    cmd = shlex.split(args.server_cmd) if args.server_cmd else [str(Path(sys.executable).with_name("torchtalk")),
                                                                 "serve", "--source", str(tree)]
    server = Server(cmd)
    server.start()
    log(f"server started; its warm-up took {server.settle():.0f} s")
    rows = []
    for k, (c, where) in enumerate(usable):
        forms: list[bool | None] = [False, True] if k % 4 == 0 and c["category"] != "warning" else [False]
        cut = fragment(c)
        if cut:
            forms.append(None)  # the message cut at both ends
        for tb in forms:
            text = asked(c, tb) if tb is not None else cut
            # Timed: the call as a user makes it (the default limit). Scored: the same message with every
            # site printing the same text listed, so the one that raised can be found among them.
            t0, c0 = time.perf_counter(), server.cpu_ms()
            server.request("tools/call", {"name": "error_origin", "arguments": {"message": text}})
            ms = (time.perf_counter() - t0) * 1000
            cpu = server.cpu_ms() - c0
            reply = server.request("tools/call", {"name": "error_origin", "arguments": {"message": text,
                                                                                         "limit": LIMIT}})
            result = reply.get("result", {})
            data = (result.get("structuredContent") or {}).get("result", {})
            strict, by_text = rank_of(data, where)
            rows.append({"name": c["name"], "category": c["category"], "traceback": tb, "ms": ms, "cpu": cpu,
                         "strict": strict, "text": by_text, "truth": where, "asked": text,
                         "top": [f"{s['loc']['path']}:{s['loc']['line']}" for s in data.get("sites", [])[:3]],
                         "verdict": data.get("verdict")})
            if args.show and len([r for r in rows if r["traceback"] is False]) <= args.show and tb is False:
                print(f"\n===== {c['name']}: raised at {_places(where)}")
                print("".join(x.get("text", "") for x in result.get("content", [])))
    server.close()
    _report(rows)
    if args.json:
        Path(args.json).write_text(json.dumps(rows, indent=1), encoding="utf-8")
    return 0


def _report(rows: list[dict]) -> None:
    def acc(rs: list[dict], key: str, k: int) -> float:
        return sum(1 for r in rs if r[key] is not None and r[key] <= k) / max(1, len(rs))

    plain = [r for r in rows if r["traceback"] is False]
    tb = [r for r in rows if r["traceback"] is True]
    cut = [r for r in rows if r["traceback"] is None]
    ms = sorted(r["ms"] for r in rows if r["traceback"] is not None)
    p95 = ms[min(len(ms) - 1, int(round(0.95 * len(ms))) - 1)]
    print(f"\nerror_origin on {len(plain)} real messages (torch {TORCH}, CPU), {len(tb)} of them also with their "
          "Python traceback")
    print(f"{'':28}{'top-1':>8}{'top-3':>8}   (by text / strict)")
    for label, rs in (("messages", plain), ("with traceback", tb), ("cut at both ends", cut)):
        if rs:
            print(f"{label:28}{acc(rs, 'text', 1):8.3f}{acc(rs, 'text', 3):8.3f}   "
                  f"strict {acc(rs, 'strict', 1):.3f} / {acc(rs, 'strict', 3):.3f}")
    cats = sorted({r["category"] for r in plain})
    for cat in cats:
        rs = [r for r in plain if r["category"] == cat]
        print(f"  {cat:26}{acc(rs, 'text', 1):8.3f}{acc(rs, 'text', 3):8.3f}   ({len(rs)} messages)")
    cpu = sorted(r["cpu"] for r in rows if r["traceback"] is not None)
    load = os.getloadavg()[0]
    print(f"latency over MCP stdio (default limit), {len(ms)} calls: p50 {statistics.median(ms):.0f} ms, "
          f"p95 {p95:.0f} ms, max {ms[-1]:.0f} ms (first call {rows[0]['ms']:.0f} ms); load average {load:.1f} on "
          f"{os.cpu_count()} cores")
    print(f"server CPU per call: p50 {statistics.median(cpu):.0f} ms, "
          f"p95 {cpu[min(len(cpu) - 1, int(round(0.95 * len(cpu))) - 1)]:.0f} ms")
    misses = [r for r in rows if r["text"] != 1]
    if misses:
        print(f"\nnot first ({len(misses)}):")
        for r in misses:
            got = ", ".join(r["top"]) or "no site"
            form = {True: " (traceback)", None: f" (cut: {r['asked']!r})"}.get(r["traceback"], "")
            print(f"- {r['name']}{form}: raised at {_places(r['truth'])}; "
                  f"rank {r['text']}; answer: {got}")


def _places(where) -> str:
    return " or ".join(f"{p}:{n}" for p, n in where[0]) + f" ({where[1]})"


if __name__ == "__main__":
    sys.exit(main())
