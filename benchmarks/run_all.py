#!/usr/bin/env python3
"""TorchTalk benchmarks on a real PyTorch tree: one command, one table.

    python benchmarks/run_all.py --source "$(bash ../shared/get-pytorch-source | tail -n1)"

Works on a private hard-linked copy of the tree (edits replace files, never
write through the links), with a private cache dir, so nothing of the user's
is touched. Measures, on this machine:

- cold full index (wall, peak RSS of the whole process tree, index size,
  per-stage seconds), with and without the generated layer;
- the op-registry (YAML) layer alone;
- no-op refresh; refresh after editing one .cpp, one .cu, one .py, one YAML line;
- server start-to-ready on an existing index (MCP stdio initialize);
- per-tool latency p50/p95/max over a fixed mix of calls, in-process and over
  stdio (through the SDK client, and as plain JSON-RPC lines), and the server's RSS after the mix;
- baselines in the same run: universal-ctags over the C++/CUDA directories and over
  every file the index reads (index time) and ripgrep for the grep-equivalent of a few questions (answer time).

Figures print as a table, with the target and the ratio to the baseline.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import psutil

sys.path.insert(0, str(Path(__file__).resolve().parent))
import tt_adapter  # noqa: E402

CPP_DIRS = ("aten", "c10", "torch/csrc", "functorch")

# A fixed mix: every tool, common and awkward names, a few not-found and bad inputs.
MIX: list[tuple[str, dict]] = [
    ("trace", {"function_name": "relu"}),
    ("trace", {"function_name": "add.Tensor", "focus": "dispatch"}),
    ("trace", {"function_name": "softmax", "focus": "yaml"}),
    ("trace", {"function_name": "conv2d"}),
    ("trace", {"function_name": "index_select", "focus": "dispatch"}),
    ("trace", {"function_name": "sofmax"}),
    ("search", {"query": "conv", "backend": "CUDA"}),
    ("search", {"query": "index_select"}),
    ("search", {"query": "norm", "limit": 50}),
    ("calls", {"function_name": "index_select_cuda"}),
    ("calls", {"function_name": "cumsum_out"}),
    ("called_by", {"function_name": "index_select_out_cuda"}),
    ("called_by", {"function_name": "impl_func_cum_ops"}),
    ("impact", {"function_name": "index_select_out_cpu_", "depth": 2}),
    ("impact", {"function_name": "impl_func_cum_ops", "depth": 3}),
    ("cuda_kernels", {"function_name": "index_select"}),
    ("cuda_kernels", {"function_name": "avg_pool2d"}),
    ("cuda_kernels", {}),
    ("trace_module", {"module_name": "Linear"}),
    ("trace_module", {"module_name": "torch.optim.Adam"}),
    ("list_modules", {"category": "nn"}),
    ("list_modules", {"category": "optim"}),
    ("find_similar_tests", {"query": "cumsum"}),
    ("find_similar_tests", {"query": "index_select"}),
    ("list_test_utils", {"category": "decorators"}),
    ("test_file_info", {"file_path": "test_torch"}),
    ("get_status", {}),
]

# Questions answered with ripgrep instead: (question, rg args relative to the tree).
RG_QUESTIONS = [
    ("where is relu's CPU kernel defined", ["-n", r"^Tensor relu\(", "aten/src/ATen/native"]),
    ("who calls index_select_out_cuda", ["-n", r"index_select_out_cuda\(", "aten", "torch/csrc"]),
    ("which kernels are registered for atan2_stub", ["-n", r"REGISTER.*DISPATCH\(atan2_stub", "aten"]),
    ("tests named test_cumsum", ["-n", r"def test_cumsum", "test"]),
]

TARGETS = {
    "full index (s)": 45.0, "no-op refresh (s)": 1.0, "refresh: one .cpp (s)": 2.0, "refresh: one .cu (s)": 2.0,
    "refresh: one .py (s)": 2.0, "refresh: one YAML line (s)": 2.0, "server start-to-ready (s)": 1.0,
    "server RSS after mix (MB)": 500.0,
}


class PeakRSS:
    """Samples the RSS of a process and all its descendants; keeps the peak."""

    def __init__(self, pid: int):
        self.proc = psutil.Process(pid)
        self.peak = 0
        self._stop = threading.Event()
        self._t = threading.Thread(target=self._run, daemon=True)
        self._t.start()

    def _run(self):
        while not self._stop.is_set():
            try:
                procs = [self.proc] + self.proc.children(recursive=True)
                total = 0
                for p in procs:
                    try:
                        total += p.memory_info().rss
                    except psutil.Error:
                        pass
                self.peak = max(self.peak, total)
            except psutil.Error:
                break
            time.sleep(0.1)

    def stop(self) -> int:
        self._stop.set()
        self._t.join()
        return self.peak


class FirstPublish:
    """When the index file is first replaced (readers see the new version from then on)."""

    def __init__(self, path: Path | None, t0: float):
        self.path, self.t0, self.at = path, t0, None
        self._ino = self._stat()
        self._stop = threading.Event()
        self._t = threading.Thread(target=self._run, daemon=True)
        if path is not None:
            self._t.start()

    def _stat(self):
        try:
            return os.stat(self.path).st_ino if self.path else None
        except OSError:
            return None

    def _run(self):
        while not self._stop.is_set() and self.at is None:
            if self._stat() != self._ino:
                self.at = time.perf_counter() - self.t0
            time.sleep(0.01)

    def stop(self) -> float | None:
        self._stop.set()
        if self.path is not None:
            self._t.join()
        return self.at


def tt(args: list[str], env: dict, measure_rss: bool = False, watch: Path | None = None
       ) -> tuple[float, int, str, float | None]:
    t0 = time.perf_counter()
    first = FirstPublish(watch, t0)
    p = subprocess.Popen([sys.executable, "-m", "torchtalk", *args], env=env, stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, text=True)
    rss = PeakRSS(p.pid) if measure_rss else None
    out, err = p.communicate()
    dt = time.perf_counter() - t0
    peak = rss.stop() if rss else 0
    published = first.stop()
    if p.returncode != 0:
        raise SystemExit(f"torchtalk {' '.join(args)} failed:\n{err}")
    return dt, peak, out.strip(), published


def linked_copy(src: Path, dest: Path) -> None:
    subprocess.run(["cp", "-al", str(src), str(dest)], check=True)


def edit(path: Path, old: str, new: str) -> None:
    """Replace the file (never write through a hard link into the original tree)."""
    text = path.read_text()
    assert old in text, f"{old!r} not in {path}"
    path.unlink()
    path.write_text(text.replace(old, new, 1))


def meta(cache: Path, key: str) -> str:
    import sqlite3
    db = next(cache.glob("trees/*/index.db"))
    conn = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
    try:
        return dict(conn.execute("SELECT key, value FROM meta")).get(key, "")
    finally:
        conn.close()


def pct(values: list[float], q: float) -> float:
    s = sorted(values)
    return s[min(len(s) - 1, max(0, int(round(q / 100 * len(s) + 0.5)) - 1))]


def in_process_latency(tree: Path, cache: Path, calls: int) -> dict[str, list[float]]:
    os.environ["TORCHTALK_CACHE_DIR"] = str(cache)
    from torchtalk.server import _warm_up
    from torchtalk.source.tree import find_source
    from torchtalk.store.reader import Index
    from torchtalk.tools import answer, get_tool
    from torchtalk.tools.structured import structured

    st = find_source(tree)
    ix = Index(st.index_path, st.root)
    _warm_up(ix)  # what a server does in the background after it starts
    lat: dict[str, list[float]] = {}
    for i in range(calls):
        name, args = MIX[i % len(MIX)]
        t0 = time.perf_counter()
        tool = get_tool(name)
        a = answer(tool, ix, **args)
        structured(tool, a.result, a.next)  # the server also sends the typed answer
        lat.setdefault(name, []).append(time.perf_counter() - t0)
    return lat


async def stdio_latency(tree: Path, env: dict, calls: int) -> tuple[float, dict[str, list[float]], float]:
    from mcp import Client, StdioServerParameters

    params = StdioServerParameters(command=sys.executable, args=["-m", "torchtalk", "serve", "--source", str(tree)],
                                   env=env)
    t0 = time.perf_counter()
    lat: dict[str, list[float]] = {}
    async with Client(params, read_timeout_seconds=120) as c:
        ready = time.perf_counter() - t0
        for i in range(calls):
            name, args = MIX[i % len(MIX)]
            t1 = time.perf_counter()
            r = await c.call_tool(name, args)
            if r.is_error:
                raise SystemExit(f"{name}({args}) failed over stdio: {r.content}")
            lat.setdefault(name, []).append(time.perf_counter() - t1)
        server = [p for p in psutil.Process().children(recursive=True)
                  if "serve" in " ".join(p.cmdline())]
        rss = sum(p.memory_info().rss for p in server) / 2**20
    return ready, lat, rss


def stdio_raw_latency(tree: Path, env: dict, calls: int) -> list[float]:
    """Round trips of plain JSON-RPC lines over the server's stdio (tt_adapter.McpStdio): what the server costs,
    without the Python SDK client's own work."""
    lat = []
    with tt_adapter.McpStdio(tree, env) as server:
        for i in range(calls):
            name, args = MIX[i % len(MIX)]
            result, dt = server.call(name, args)
            lat.append(dt)
            if result.get("isError"):
                raise SystemExit(f"{name}({args}) failed over raw stdio: {result}")
    return lat


def baseline_ctags(tree: Path, tmp: Path) -> tuple[float, float] | None:
    """Seconds of universal-ctags (each run once before it is timed, so that it reads the tree from the page
    cache, as the index after it does): ``-R`` over the C++/CUDA directories, and over every file the index
    reads (its C++, CUDA, Python and YAML files, the generated ones aside: they do not exist before it)."""
    exe = shutil.which("ctags") or shutil.which("universal-ctags")
    if not exe:
        return None
    from torchtalk.source.files import list_files

    listed = tmp / "indexed-files.txt"
    listed.write_text("".join(f"{e.relpath}\n" for e in list_files(tree) if not e.skip))
    runs = ([exe, "-R", "--languages=C++,CUDA", "-f", str(tmp / "tags"), *CPP_DIRS],
            [exe, "-L", str(listed), "-f", str(tmp / "tags-all")])
    out = []
    for argv in runs:
        for _ in range(2):
            t0 = time.perf_counter()
            subprocess.run(argv, cwd=tree, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=False)
            dt = time.perf_counter() - t0
        out.append(dt)
    return out[0], out[1]


def _vs_ctags(dt: float, ctags: tuple[float, float] | None) -> str:
    if ctags is None:
        return "ctags not installed"
    cpp, same = ctags
    return (f"{dt / cpp:.1f}x ctags -R over the C++/CUDA dirs ({cpp:.1f}s); "
            f"{dt / same:.1f}x ctags over the same files ({same:.1f}s)")


def baseline_rg(tree: Path) -> list[tuple[str, float, int]]:
    exe = shutil.which("rg")
    if not exe:
        return []
    out = []
    for question, args in RG_QUESTIONS:
        subprocess.run([exe, *args], cwd=tree, capture_output=True)  # warm the page cache
        t0 = time.perf_counter()
        r = subprocess.run([exe, *args], cwd=tree, capture_output=True, text=True)
        out.append((question, time.perf_counter() - t0, len(r.stdout.splitlines())))
    return out


# (label, file, text, replacement): one edit each, refreshed after it.
REFRESHES = [
    ("refresh: one .cpp (s)", "aten/src/ATen/native/Activation.cpp", "namespace at::native {",
     "namespace at::native {\n// touched by the benchmark\n"),
    ("refresh: one .cu (s)", "aten/src/ATen/native/cuda/Indexing.cu", "namespace at::native {",
     "namespace at::native {\n// touched by the benchmark\n"),
    ("refresh: one .py (s)", "torch/nn/modules/linear.py", "class Linear(Module):",
     "# touched by the benchmark\nclass Linear(Module):"),
    ("refresh: one YAML line (s)", "aten/src/ATen/native/native_functions.yaml", "    MPS: relu_mps",
     "    MPS: relu_mps_bench"),
]


def _refreshes(tree: Path, env: dict, add, edits: list[tuple[str, str, str, str]]) -> None:
    """A no-op refresh, then one refresh after each edit."""
    db = next(Path(env["TORCHTALK_CACHE_DIR"]).glob("trees/*/index.db"))
    dt, _, out, _ = tt(["index", "--source", str(tree), "--progress", "never"], env)
    add("no-op refresh (s)", dt, out.split("(")[0].strip())
    for label, rel, old, new in edits:
        edit(tree / rel, old, new)
        dt, _, out, published = tt(["index", "--source", str(tree), "--progress", "never"], env, watch=db)
        if published is not None and published < dt - 0.5:
            # A YAML edit re-runs the generators: the edit is answerable once the first version lands.
            add(label, published, f"{out.split(' in ')[0]}; generated layer caught up after {dt:.1f}s")
        else:
            add(label, dt, out.split(" in ")[0])


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--source", required=True, help="a PyTorch source tree (not modified)")
    ap.add_argument("--calls", type=int, default=500, help="calls in the latency mix (default 500)")
    ap.add_argument("--skip-nocodegen", action="store_true", help="skip the index run without the generated layer")
    ap.add_argument("--index-only", action="store_true",
                    help="only ctags and the full index, back to back (their ratio), then a no-op refresh and "
                         "one after editing a .cpp and a .py (skips everything else)")
    ap.add_argument("--keep-index", type=Path, metavar="FILE",
                    help="with --index-only: copy the full index's database to FILE (to compare two builds' tables)")
    args = ap.parse_args()
    src = Path(args.source).resolve()
    rows: list[tuple[str, str, str]] = []

    def add(label: str, value: float | str, extra: str = "") -> None:
        target = TARGETS.get(label)
        if isinstance(value, float):
            shown = f"{value:.2f}" if value < 100 else f"{value:.0f}"
            if target is not None:
                verdict = "met" if value < target else "MISSED"
                extra = (extra + "; " if extra else "") + f"target < {target:g}: {verdict}"
        else:
            shown = value
        rows.append((label, shown, extra))
        print(f"  {label}: {shown} {extra}", file=sys.stderr, flush=True)

    with tempfile.TemporaryDirectory(prefix="tt-bench-") as tmpdir:
        tmp = Path(tmpdir)
        tree = tmp / "pytorch"
        print(f"bench: hard-linked copy of {src} ...", file=sys.stderr, flush=True)
        linked_copy(src, tree)
        cache = tmp / "cache"
        env = {**os.environ, "TORCHTALK_CACHE_DIR": str(cache)}

        ctags = baseline_ctags(tree, tmp)

        if args.index_only:
            load_before = os.getloadavg()[0]
            dt, peak, _, _ = tt(["index", "--source", str(tree), "--progress", "never"], env, measure_rss=True)
            add("full index (s)", dt, _vs_ctags(dt, ctags))
            add("full index peak RSS, all processes (MB)", f"{peak / 2**20:.0f}")
            add("per stage (s)", meta(cache, "layer_seconds"))
            add("CPU per stage (s)", meta(cache, "stage_cpu_seconds") or "not recorded by this version")
            add("load average (1 min) before / after", f"{load_before:.1f} / {os.getloadavg()[0]:.1f}")
            if args.keep_index:
                shutil.copy(next(cache.glob("trees/*/index.db")), args.keep_index)
            _refreshes(tree, env, add, [REFRESHES[0], REFRESHES[2]])
            return _table(rows)

        # The op-registry layer alone: a tree holding only the three YAML files.
        yaml_tree = tmp / "yaml-only"
        for rel in ("aten/src/ATen/native/native_functions.yaml", "aten/src/ATen/native/tags.yaml",
                    "tools/autograd/derivatives.yaml", "version.txt"):
            (yaml_tree / rel).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy(tree / rel, yaml_tree / rel)
        dt, _, _, _ = tt(["index", "--source", str(yaml_tree), "--no-codegen", "--progress", "never"],
                      {**env, "TORCHTALK_CACHE_DIR": str(tmp / "yaml-cache")})
        add("YAML-layer index (s)", dt, "target < 5: " + ("met" if dt < 5 else "MISSED"))

        if not args.skip_nocodegen:
            dt, peak, _, _ = tt(["index", "--source", str(tree), "--no-codegen", "--progress", "never"],
                             {**env, "TORCHTALK_CACHE_DIR": str(tmp / "nocodegen-cache")}, measure_rss=True)
            add("full index without generated layer (s)", dt, _vs_ctags(dt, ctags))
            shutil.rmtree(tmp / "nocodegen-cache", ignore_errors=True)

        dt, peak, _, _ = tt(["index", "--source", str(tree), "--progress", "never"], env, measure_rss=True)
        add("full index (s)", dt, _vs_ctags(dt, ctags))
        add("full index peak RSS, all processes (MB)", f"{peak / 2**20:.0f}")
        db = next(cache.glob("trees/*/index.db"))
        add("index file size (MB)", f"{db.stat().st_size / 2**20:.0f}")
        add("per stage (s)", meta(cache, "layer_seconds"))
        add("CPU per stage (s)", meta(cache, "stage_cpu_seconds") or "not recorded by this version")
        add("generated layer", f"{meta(cache, 'codegen_status')}; generators {meta(cache, 'codegen_cpu_seconds')}s CPU")

        _refreshes(tree, env, add, REFRESHES)

        lat = in_process_latency(tree, cache, args.calls)
        ready, stdio, rss = asyncio.run(stdio_latency(tree, env, args.calls))
        add("server start-to-ready (s)", ready)
        add("server RSS after mix (MB)", rss)

        allv = [v for vs in lat.values() for v in vs]
        add(f"in-process latency, all {len(allv)} calls (ms)",
            f"p50 {statistics.median(allv) * 1e3:.1f}  p95 {pct(allv, 95) * 1e3:.1f}  max {max(allv) * 1e3:.1f}")
        for name in sorted(lat):
            v = lat[name]
            p95 = pct(v, 95) * 1e3
            add(f"  {name} in-process (ms)",
                f"p50 {statistics.median(v) * 1e3:.1f}  p95 {p95:.1f}  max {max(v) * 1e3:.1f}",
                f"target p95 < 50: {'met' if p95 < 50 else 'MISSED'}")
        allv = [v for vs in stdio.values() for v in vs]
        add(f"stdio latency, SDK client, all {len(allv)} calls (ms)",
            f"p50 {statistics.median(allv) * 1e3:.1f}  p95 {pct(allv, 95) * 1e3:.1f}  max {max(allv) * 1e3:.1f}",
            "includes the client's jsonschema check of each structuredContent")
        raw = stdio_raw_latency(tree, env, args.calls)
        add(f"stdio latency, plain JSON-RPC, all {len(raw)} calls (ms)",
            f"p50 {statistics.median(raw) * 1e3:.1f}  p95 {pct(raw, 95) * 1e3:.1f}  max {max(raw) * 1e3:.1f}",
            "the server's cost: query, Markdown, typed answer, framing")

        for question, dt, n in baseline_rg(tree):
            add(f"ripgrep: {question} (ms)", f"{dt * 1e3:.0f}", f"{n} raw lines to read")

    return _table(rows)


def _table(rows: list[tuple[str, str, str]]) -> int:
    width = max(len(r[0]) for r in rows)
    print(f"\n{'measure':<{width}}  value  notes")
    for label, value, extra in rows:
        print(f"{label:<{width}}  {value}  {extra}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
