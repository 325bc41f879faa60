#!/usr/bin/env python3
"""Test node ids against what pytest collects: the official torch wheel, on CPU, collecting the tree's test files.

    python benchmarks/bench_test_collection.py --source PATH [--files N] [--per-file K] [--seed S] [--json OUT]

bench_names.py asks about the test methods TorchTalk itself found; this census starts from the other side, the
node ids a contributor copies from a CI log. The official torch 2.6.0 wheel is installed into the benchmark's own
venv (bench_error_origin.torch_python, never a dependency of TorchTalk) with pytest 7.3 (the tree's
test/conftest.py uses the hook arguments pytest 8 removed), expecttest and hypothesis. For a seeded sample of the
tree's test files (``test/**/test_*.py``), ``pytest --collect-only`` runs from test/ (the wheel's torch, the
tree's tests) with a small plugin that records, for each item, its node id and the function that will run (its
``__wrapped__`` chain followed: the device-type and parametrize generators wrap the test as written). Then, over
MCP stdio, ``test_file_info(node id)`` for a seeded sample of each file's node ids:

- **located**: the answer's page lists the test where it is written (its path and ``def`` line);
- **named**: the node id is among the generated names the answer gives for that test (``runs[].generated``), or its
  pytest command selects it (a node id command, or a ``-k`` expression that selects it as pytest would).

Each file is also asked whole: its ``total_tests`` against the tests pytest runs as written (one per class and
function it collects, whatever the dtypes and parameters): equal, or within the tests the answer says run only when
a module-level condition holds (``HAS_GPU``, ``HAS_CPU``), which this CPU machine may not meet.

Misses print by reason: a file the wheel cannot collect here (a missing optional dependency) is left out and
counted; a test written outside test/ at run time (``add_test`` in test_nn.py writes the module tests of
common_nn.py through one inner function) is its own reason.
"""

from __future__ import annotations

import json
import os
import random
import re
import subprocess
import sys
import tempfile
from collections import Counter
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
import tt_adapter as tt  # noqa: E402
from bench_error_origin import torch_python  # noqa: E402
from bench_python_census import frac  # noqa: E402
from wheel import BenchError  # noqa: E402

TEST_DEPS = ["pytest==7.3.2", "expecttest", "hypothesis", "numpy<2.3", "pyyaml", "scipy"]
COLLECT_TIMEOUT_S = 240

_PLUGIN = '''
import inspect, json, os
def pytest_collection_modifyitems(session, config, items):
    out = []
    for it in items:
        path = line = None
        try:
            fn = inspect.unwrap(getattr(it, "obj", None))
            test = it.name.split("[")[0]
            # a wrapper that lost __wrapped__ (copy_tests' new_test, whose __dict__ is replaced; a decorator without
            # functools.wraps): the test it holds in a closure or a default argument
            seen = set()
            while id(fn) not in seen and (getattr(getattr(fn, "__code__", None), "co_name", test) != test
                                          and not test.startswith(fn.__code__.co_name + "_")):
                seen.add(id(fn))
                held = [c.cell_contents for c in (getattr(fn, "__closure__", None) or ())
                        if hasattr(c, "cell_contents")] + list(getattr(fn, "__defaults__", None) or ())
                inner = [f for f in held if callable(f) and hasattr(f, "__code__")
                         and test.startswith(getattr(f, "__name__", "@"))]
                if not inner:
                    break
                fn = inspect.unwrap(max(inner, key=lambda f: len(f.__name__)))
            code = getattr(fn, "__code__", None)
            if code is not None:
                path, line = code.co_filename, code.co_firstlineno
        except Exception:
            pass
        out.append([it.nodeid, path, line])
    with open(os.environ["TT_COLLECTED"], "w") as fh:
        json.dump(out, fh)
'''


def log(msg: str) -> None:
    print(f"[bench_test_collection] {msg}", file=sys.stderr, flush=True)


def test_python() -> Path:
    """The torch venv's python, with the test dependencies of the tree's test files."""
    py = torch_python()
    probe = subprocess.run([str(py), "-c", "import pytest, expecttest, hypothesis; assert pytest.__version__ < '8'"],
                           capture_output=True, text=True, check=False)
    if probe.returncode != 0:
        log(f"installing {' '.join(TEST_DEPS)}")
        r = subprocess.run([str(py), "-m", "pip", "install", "-q", "--disable-pip-version-check", *TEST_DEPS],
                           capture_output=True, text=True, check=False)
        if r.returncode != 0:
            raise BenchError(f"could not install the test dependencies: {(r.stderr.strip().splitlines() or ['?'])[-1]}")
    return py


def collect(py: Path, root: Path, rel: str, plugin_dir: Path) -> tuple[list[tuple[str, str, int]], str]:
    """(node id, path of the function relative to the tree, its def line) of every item pytest collects from
    ``rel``, or ([], why not)."""
    out = plugin_dir / "collected.json"
    out.unlink(missing_ok=True)
    env = {**os.environ, "PYTHONPATH": str(plugin_dir), "TT_COLLECTED": str(out)}
    try:
        r = subprocess.run([str(py), "-m", "pytest", "--collect-only", "-q", "-p", "no:cacheprovider", "-p",
                            "tt_collect", str(Path(rel).relative_to("test"))], cwd=root / "test", env=env,
                           capture_output=True, text=True, timeout=COLLECT_TIMEOUT_S, check=False)
    except subprocess.TimeoutExpired:
        return [], "collection timed out"
    if not out.exists():  # pytest stopped before collecting (a usage error, a plugin that failed): say why
        tail = (r.stderr.strip() or r.stdout.strip()).splitlines()
        return [], f"pytest exited {r.returncode}: {tail[-1][:100] if tail else 'no output'}"
    items = []
    for nodeid, path, line in json.loads(out.read_text()):
        if path and line and path.startswith(str(root) + "/"):
            rel_path = path[len(str(root)) + 1:]
            items.append((nodeid, rel_path, _def_line(root / rel_path, line)))
        else:
            items.append((nodeid, path or "", line or 0))
    if not items:
        errs = [ln for ln in r.stdout.splitlines() if ln.startswith(("E ", "ERROR"))]
        return [], (errs[0][:120] if errs else "no items")
    return items, ""


_DEF = re.compile(r"\s*(?:async\s+)?def\s")


def _def_line(path: Path, first: int) -> int:
    """The ``def`` line of a function whose code starts at ``first`` (its first decorator)."""
    try:
        lines = path.read_text(encoding="utf-8", errors="replace").splitlines()
    except OSError:
        return first
    for i in range(first - 1, min(len(lines), first + 60)):
        if _DEF.match(lines[i]):
            return i + 1
    return first


def _named(sc: dict, nodeid: str) -> bool:
    cls_test = "::".join(nodeid.split("::")[1:]).split("[")[0]
    dotted = cls_test.replace("::", ".")
    for run in (sc.get("result") or {}).get("page", {}).get("runs", []):
        if dotted in run.get("generated", []):
            return True
        cmd = run.get("command", "")
        if cmd.endswith("::" + cls_test) or cmd.split()[-1:] == [nodeid]:
            return True
        m = re.search(r'-k "([^"]+)"', cmd)
        if m and _selects(m.group(1), cls_test):
            return True
    return False


def _selects(expr: str, cls_test: str) -> bool:
    """Whether ``pytest -k expr`` selects the test (a conjunction of names and ``not`` names, matched as pytest
    does: case-insensitive substrings of the class's and the test's names)."""
    names = [n.lower() for n in cls_test.split("::")]
    for term in expr.split(" and "):
        negated = term.startswith("not ")
        word = term.removeprefix("not ").strip().lower()
        if any(word in n for n in names) == negated:
            return False
    return True


def census(server: tt.McpStdio, py: Path, root: Path, files: list[str], per_file: int, rnd: random.Random) -> dict:
    asked = located = named = 0
    skipped: Counter[str] = Counter()
    misses: Counter[str] = Counter()
    unnamed: Counter[str] = Counter()
    examples: list[str] = []
    collected_files = collected_items = 0
    counts: list[tuple[str, int, int]] = []  # file, the tests TorchTalk counts, pytest's (class, function) pairs
    with tempfile.TemporaryDirectory() as tmp:
        plugin_dir = Path(tmp)
        (plugin_dir / "tt_collect.py").write_text(_PLUGIN)
        for n, rel in enumerate(files, 1):
            items, why = collect(py, root, rel, plugin_dir)
            log(f"{n}/{len(files)} {rel}: {len(items)} items{' (' + why + ')' if why else ''}")
            if not items:
                skipped[why.split(":")[0][:60]] += 1
                continue
            collected_files += 1
            collected_items += len(items)
            # the tests pytest runs as written: one per (class, function), whatever the dtypes and parameters
            runs = len({(nodeid.split("::")[1] if nodeid.count("::") > 1 else "", path, line)
                        for nodeid, path, line in items})
            try:
                whole, _text = server.tool("test_file_info", file_path=rel)
                said = (whole.get("result") or {}).get("total_tests", -1)
                # tests of classes under a module-level ``if`` (HAS_GPU): the answer counts them and says how many
                # only run when it holds, which on this CPU machine they may not
                conditional = (whole.get("result") or {}).get("conditional", 0)
            except tt.AdapterError:
                said, conditional = -1, 0
            counts.append((rel, runs if said - conditional <= runs <= said else said, runs))
            for nodeid, path, line in rnd.sample(items, min(per_file, len(items))):
                asked += 1
                try:
                    sc, _text = server.tool("test_file_info", file_path=nodeid)
                except tt.AdapterError as exc:
                    sc, why = {}, f"error: {str(exc)[:80]}"
                tests = (sc.get("result") or {}).get("page", {}).get("tests", []) if sc.get("kind") == "result" \
                    else []
                if sc and sc.get("kind") != "result":
                    why = "not found"
                if any(t["loc"]["path"] == path and t["loc"]["line"] == line for t in tests):
                    located += 1
                    if _named(sc, nodeid):
                        named += 1
                    else:
                        unnamed["written test found, node id not among its names"] += 1
                        if len(examples) < 120:
                            examples.append(f"unnamed: {nodeid} ({path}:{line})")
                    continue
                if not sc or sc.get("kind") != "result":
                    reason = why
                elif (sc.get("result") or {}).get("added_at"):
                    reason = "added at import time (the answer names the call that adds tests to its class)"
                elif not path.startswith("test/"):
                    reason = "written outside test/ at run time"
                elif path != rel:
                    reason = "written in another file"
                else:
                    reason = "not on the page"
                misses[reason] += 1
                if len(examples) < 120:
                    examples.append(f"{reason}: {nodeid} ({path}:{line})")
    return {"files": len(files), "collected_files": collected_files, "collected_items": collected_items,
            "not_collectable": dict(skipped), "asked": asked, "located": located, "named": named,
            "misses": dict(misses), "unnamed": dict(unnamed), "examples": examples,
            "counts_equal": sum(a == b for _f, a, b in counts), "counts": counts}


def test_files(root: Path) -> list[str]:
    return sorted(str(p.relative_to(root)) for p in (root / "test").rglob("test_*.py"))


def main(argv: list[str] | None = None) -> int:
    args = tt.bench_args(__doc__, argv, lambda ap: (
        ap.add_argument("--files", type=int, default=60, help="test files sampled (default 60)"),
        ap.add_argument("--per-file", type=int, default=8, help="node ids asked per file (default 8)"),
        ap.add_argument("--seed", type=int, default=1)))
    root = Path(args.source).resolve()
    try:
        py = test_python()
    except BenchError as exc:
        print(f"bench_test_collection: {exc}", file=sys.stderr)
        return 2
    rnd = random.Random(args.seed)
    every = test_files(root)
    files = sorted(rnd.sample(every, min(args.files, len(every))))
    with tt.McpStdio(root) as server:
        out = census(server, py, root, files, args.per_file, rnd)
    out["test_files_in_tree"] = len(every)
    print(f"test files: {out['collected_files']} of {out['files']} sampled collect here "
          f"({out['collected_items']} items; not collectable: {out['not_collectable']})")
    print(f"node ids located where written: {frac(out['located'], out['asked'])}; misses {out['misses']}")
    print(f"node ids among the answer's names or selected by its command: {frac(out['named'], out['asked'])}; "
          f"{out['unnamed']}")
    print(f"files whose test count is pytest's (one per class and function it collects): "
          f"{frac(out['counts_equal'], out['collected_files'])}")
    for rel, said, runs in sorted(out["counts"], key=lambda c: -abs(c[1] - c[2]))[:25]:
        if said != runs:
            print(f"  {rel}: TorchTalk {said}, pytest {runs}")
    for ex in out["examples"]:
        print(f"  {ex}")
    if args.json:
        Path(args.json).write_text(json.dumps(out, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
