#!/usr/bin/env python3
"""Names as users write them: everything of the tree that has a name, asked by that name, over MCP stdio.

    python benchmarks/bench_names.py --source PATH [--sample N] [--seed S] [--json OUT]

Users and agents copy names from where they meet them: a C++ name from a stack trace or a
header (``BernoulliKernel::operator()``, ``TEST_F(atest, add_operators)``, a destructor), a
file:line from an answer, a pytest node id from a CI log
(``test/test_nn.py::TestNNDeviceTypeCPU::test_relu_cpu_float32``), a Python name in any of its
spellings (``F.relu``, ``torch.Tensor.add``, a bare ``spmm``). For each kind, this census lists
from the index everything that can be asked about, asks `torchtalk serve` (tt_adapter.McpStdio)
and prints the fraction the answer names, with the misses by reason:

1. C++ definitions by qualified name (``calls``): every definition whose name is not a plain
   identifier path (operators, destructors, call operators, macro-named bodies, scopes written
   with parentheses), and a seeded sample of the plain ones; answered when a section of the
   answer, or a candidate it lists, is that definition.
2. C++ definitions by path:line (``calls``), the same sample: answered when the answer is that
   definition.
3. Test node ids (``test_file_info``): a seeded sample of test methods, as ``path::Class::test``;
   answered when the page lists that test.
4. Python names bound to ops (``trace``), every one, in each spelling: answered when the answer
   is a trace (not "not found").
5. pybind11 bindings: how many are named in their Python module (the rest keep a bare name),
   and each asked by that name (``trace``): answered when the answer is its binding, or the op of that
   name for a bare name an op has too (``clone`` of a class the code does not name).
6. OpInfo entries (``find_similar_tests``), every one, read from the tree's text with ``ast`` (the
   constructor calls, with a name, of every class of torch/testing/_internal deriving from OpInfo):
   asked by its name as the entry writes it (``nn.functional.relu``, ``linalg.svd``) and by its
   formatted name as test names and ``pytest -k`` spell it (``nn_functional_relu``,
   ``normal_in_place``); answered when the answer lists that entry.
7. DispatchStubs (``impact``): every ``DECLARE_DISPATCH`` of aten/ in the tree's text, asked by its name as C++
   qualifies it in its namespace (``at::native::sort_stub``, the namespace read by brace matching) and bare;
   answered when the answer is that stub.
"""

from __future__ import annotations

import argparse
import ast
import json
import os
import random
import re
import sys
import time
from collections import Counter
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
import tt_adapter as tt  # noqa: E402
from bench_python_census import frac  # noqa: E402


def _answers_definition(sc: dict, path: str, line: int) -> bool:
    if sc.get("kind") != "result":
        return False
    res = sc["result"]
    locs = [(s["function"]["loc"]["path"], s["function"]["loc"]["line"]) for s in res.get("sections", [])
            if s.get("function", {}).get("loc")]
    amb = res.get("ambiguity") or {}
    locs += [(c["loc"]["path"], c["loc"]["line"]) for c in amb.get("candidates", []) if c.get("loc")]
    return (path, line) in locs


def _shape(qualname: str) -> str:
    last = qualname.split("::")[-1]
    if "operator" in last:
        return "operator"
    if last.startswith("~"):
        return "destructor"
    if "(" in qualname:
        return "parentheses (macro-named, or a scope)"
    if "<" in qualname:
        return "template arguments"
    return "plain"


def census_definitions(server: tt.McpStdio, h: tt.Handle, sample: int, rnd: random.Random) -> dict:
    defs = tt.definitions(h)
    odd = [d for d in defs if _shape(d.qualname) != "plain"]
    plain = [d for d in defs if _shape(d.qualname) == "plain"]
    asked = odd + rnd.sample(plain, min(sample, len(plain)))
    by_name: Counter[str] = Counter()
    by_name_ok: Counter[str] = Counter()
    missed: list[str] = []
    for d in asked:
        shape = _shape(d.qualname)
        by_name[shape] += 1
        sc, _text = server.tool("calls", function_name=d.qualname)
        if _answers_definition(sc, d.path, d.line):
            by_name_ok[shape] += 1
        elif len(missed) < 30:
            missed.append(f"{d.qualname}  {d.path}:{d.line}: {sc.get('kind')}")
    at_line = at_line_ok = 0
    for d in rnd.sample(defs, min(sample, len(defs))):
        at_line += 1
        sc, _text = server.tool("calls", function_name=f"{d.path}:{d.line}")
        if _answers_definition(sc, d.path, d.line):
            at_line_ok += 1
        elif len(missed) < 60:
            missed.append(f"{d.path}:{d.line} ({d.qualname}): {sc.get('kind')}")
    return {"definitions": len(defs), "by_shape": {k: [by_name_ok[k], n] for k, n in by_name.items()},
            "path_line": [at_line_ok, at_line], "missed": missed}


def census_node_ids(server: tt.McpStdio, h: tt.Handle, sample: int, rnd: random.Random) -> dict:
    tests = tt.test_methods(h)
    asked = ok = 0
    misses: Counter[str] = Counter()
    missed: list[str] = []
    for path, cls, name, line in rnd.sample(tests, min(sample, len(tests))):
        node = f"{path}::{cls}::{name}" if cls else f"{path}::{name}"
        asked += 1
        sc, _text = server.tool("test_file_info", file_path=node)
        if sc.get("kind") != "result":
            why = "not found"
        else:
            page = sc["result"].get("page") or {"tests": []}
            if any(t["name"] == name and t["loc"]["line"] == line for t in page["tests"]):
                ok += 1
                continue
            why = "not on the page"
        misses[why] += 1
        if len(missed) < 20:
            missed.append(f"{node} (line {line}): {why}")
    return {"tests": len(tests), "asked": asked, "ok": ok, "misses": dict(misses), "missed": missed}


def _spellings(name: str) -> list[str]:
    out = [name]
    if name.startswith("Tensor."):
        out.append("torch." + name)
    if name.startswith("torch.nn.functional."):
        out.append("F." + name[len("torch.nn.functional."):])
    if name.startswith("torch.") and name.count(".") == 1:
        out.append(name[len("torch."):])
    return out


def census_python_names(server: tt.McpStdio, h: tt.Handle) -> dict:
    asked = ok = 0
    missed: list[str] = []
    for name in tt.op_python_names(h):
        for spelling in _spellings(name):
            asked += 1
            sc, _text = server.tool("trace", function_name=spelling, focus="yaml")
            if sc.get("kind") == "result":
                ok += 1
            elif len(missed) < 20:
                missed.append(f"{spelling}: {sc.get('kind')}")
    return {"asked": asked, "ok": ok, "missed": missed}


def census_pybind(server: tt.McpStdio, h: tt.Handle) -> dict:
    names = tt.pybind_names(h)
    named = sum(1 for n in names if n.startswith("torch."))
    asked = ok = as_op = 0
    missed: list[str] = []
    # a special method of a class the code does not name (`__init__` alone) has no name to be asked by
    unnamed = sorted({n for n in names if n.startswith("__")})
    for name in sorted(set(names) - set(unnamed)):
        asked += 1
        sc, text = server.tool("trace", function_name=name, focus="yaml")
        if sc.get("kind") == "result":
            ok += 1
            as_op += "bound by pybind11" not in text  # a bare `clone` of no known class: the op clone answers
        elif len(missed) < 20:
            missed.append(f"{name}: {sc.get('kind')}")
    return {"bindings": len(names), "named": named, "asked": asked, "ok": ok, "missed": missed,
            "special_methods_of_no_class": len(unnamed), "answered_as_the_op": as_op}


def opinfo_entries(root: Path) -> list[tuple[str, int, str, str]]:
    """(path, line, name, variant) of every OpInfo entry the tree's test library constructs, from its text."""
    trees = {}
    for p in sorted((root / "torch/testing/_internal").rglob("*.py")):
        try:
            trees[str(p.relative_to(root))] = ast.parse(p.read_text(encoding="utf-8"))
        except (SyntaxError, UnicodeDecodeError, OSError):
            continue
    bases = {n.name: {b.id if isinstance(b, ast.Name) else b.attr for b in n.bases
                      if isinstance(b, (ast.Name, ast.Attribute))}
             for t in trees.values() for n in ast.walk(t) if isinstance(n, ast.ClassDef)}
    def derived(root_class: str) -> set[str]:
        kinds = {root_class}
        while grown := {c for c, bs in bases.items() if c not in kinds and bs & kinds}:
            kinds |= grown
        return kinds
    kinds = derived("OpInfo")
    # ForeachFuncInfo('exp') is the entry _foreach_exp: its __post_init__ sets self.name = f"_foreach_{name}"
    # (torch/testing/_internal/opinfo/core.py), and test names spell it so
    foreach = derived("ForeachFuncInfo")
    out = []
    for path, t in trees.items():
        for n in ast.walk(t):
            if not isinstance(n, ast.Call):
                continue
            ctor = n.func.id if isinstance(n.func, ast.Name) else n.func.attr if isinstance(n.func, ast.Attribute) \
                else ""
            if ctor not in kinds:
                continue
            kw = {k.arg: k.value.value for k in n.keywords if isinstance(k.value, ast.Constant)}
            name = n.args[0].value if n.args and isinstance(n.args[0], ast.Constant) else kw.get("name")
            if isinstance(name, str):
                name = f"_foreach_{name}" if ctor in foreach else name
                out.append((path, n.lineno, name, str(kw.get("variant_test_name") or "")))
    return sorted(out)


def census_opinfos(server: tt.McpStdio, h: tt.Handle) -> dict:
    entries = opinfo_entries(h.root)
    asked = ok = 0
    by: Counter[str] = Counter()
    missed: list[str] = []
    for path, line, name, variant in entries:
        formatted = (name + (f".{variant}" if variant else "")).replace(".", "_")
        for how, query in (("name", name), ("formatted", formatted)):
            if how == "formatted" and formatted == name:
                continue
            asked += 1
            by[how + " asked"] += 1
            sc, _text = server.tool("find_similar_tests", query=query, limit=1)
            hits = sc.get("result", {}).get("opinfos", []) if sc.get("kind") == "result" else []
            if any(o["loc"]["path"] == path and o["loc"]["line"] == line for o in hits):
                ok += 1
                by[how] += 1
            elif len(missed) < 20:
                missed.append(f"{query} ({path}:{line}): {len(hits)} other entries")
    return {"entries": len(entries), "asked": asked, "ok": ok, "by": dict(by), "missed": missed}


_NS_OPEN = re.compile(r"\bnamespace\s*([\w:]*)\s*\{|[{}]|//[^\n]*|/\*.*?\*/|\"(?:[^\"\\\n]|\\.)*\"", re.S)
_DECLARE = re.compile(r"^\s*DECLARE_DISPATCH\s*\((.*),\s*(\w+)\s*\)", re.M)


def declared_stubs(root: Path) -> list[tuple[str, str, str]]:
    """(namespace, stub, path) of every DECLARE_DISPATCH of aten/ in the tree's text, the namespace read by brace
    matching (an unnamed namespace adds no part), independently of the index's C++ parser."""
    out = []
    for path in sorted((root / "aten").rglob("*")):
        if path.suffix not in (".h", ".cuh", ".cpp", ".cu") or not path.is_file():
            continue
        text = path.read_text(errors="replace")
        if "DECLARE_DISPATCH" not in text:
            continue
        stack: list[str | None] = []  # a namespace's name, or None for another brace
        marks = [(m.start(), m.group(0), m.group(1) or "") for m in _NS_OPEN.finditer(text)]
        for d in _DECLARE.finditer(text):
            if d.group(1).startswith("fn_type"):  # the macro's own definition
                continue
            stack.clear()
            for pos, token, name in marks:
                if pos >= d.start():
                    break
                if token.startswith("namespace"):
                    stack.append(name)
                elif token == "{":
                    stack.append(None)
                elif token == "}" and stack:
                    stack.pop()  # comments and strings: skipped
            ns = "::".join(n for n in stack if n)
            out.append((ns, d.group(2), str(path.relative_to(root))))
    return out


def census_stubs(server: tt.McpStdio, h: tt.Handle) -> dict:
    """Every DispatchStub asked by impact as C++ qualifies it (``at::native::sort_stub``) and bare: answered when the
    answer is that stub."""
    asked = ok = 0
    missed: list[str] = []
    for ns, stub, path in sorted(set(declared_stubs(h.root))):
        for name in ([f"{ns}::{stub}"] if ns else []) + [stub]:
            asked += 1
            _sc, text = server.tool("impact", function_name=name, depth=1)
            if text.startswith(f"# impact (depth 1) of DispatchStub {stub} "):
                ok += 1
            elif len(missed) < 20:
                missed.append(f"{name} ({path}): {text.splitlines()[0][:120] if text else ''}")
    return {"asked": asked, "ok": ok, "missed": missed}


def main(argv: list[str] | None = None) -> int:
    def flags(ap: argparse.ArgumentParser) -> None:
        ap.add_argument("--sample", type=int, default=1000,
                        help="plain C++ names, path:line and tests asked (1000)")
        ap.add_argument("--seed", type=int, default=1)

    args = tt.bench_args(__doc__, argv, flags)
    t0 = time.monotonic()
    rnd = random.Random(args.seed)
    try:
        h = tt.open_index(args.source)  # the index must exist: the server would otherwise build it first
        with tt.McpStdio(h.root, dict(os.environ)) as server:
            defs = census_definitions(server, h, args.sample, rnd)
            nodes = census_node_ids(server, h, args.sample, rnd)
            py = census_python_names(server, h)
            pyb = census_pybind(server, h)
            opi = census_opinfos(server, h)
            stubs = census_stubs(server, h)
    except tt.AdapterError as exc:
        print(f"bench_names: {exc}", file=sys.stderr)
        return 2
    print(f"Names as users write them, over MCP stdio  ({tt.status_line(h)})")
    print(f"C++ definitions by qualified name (calls), of {defs['definitions']}:")
    for shape, (ok, n) in sorted(defs["by_shape"].items()):
        print(f"  {shape:<40} {frac(ok, n)}" + ("  (a seeded sample)" if shape == "plain" else "  (all)"))
    print(f"C++ definitions by path:line (calls), a seeded sample  {frac(*defs['path_line'])}")
    for m in defs["missed"][:20]:
        print(f"    {m}")
    print(f"test node ids path::Class::test (test_file_info), a seeded sample of {nodes['tests']}  "
          f"{frac(nodes['ok'], nodes['asked'])}")
    for why, n in nodes["misses"].items():
        print(f"  missed, {why}: {n}")
    for m in nodes["missed"][:10]:
        print(f"    {m}")
    print(f"Python names bound to ops, in each spelling (trace)  {frac(py['ok'], py['asked'])}")
    for m in py["missed"][:10]:
        print(f"    {m}")
    print(f"pybind11 bindings named in their Python module  {frac(pyb['named'], pyb['bindings'])}; each asked by "
          f"its name (trace)  {frac(pyb['ok'], pyb['asked'])}  (not asked: "
          f"{pyb['special_methods_of_no_class']} special methods of a class the code does not name; answered as the "
          f"op of that name: {pyb['answered_as_the_op']}, a bare name of no known class that an op has too)")
    for m in pyb["missed"][:20]:
        print(f"    {m}")
    print(f"OpInfo entries (find_similar_tests), all {opi['entries']}: by the name the entry writes  "
          f"{frac(opi['by'].get('name', 0), opi['by'].get('name asked', 0))}; by the formatted name pytest -k takes  "
          f"{frac(opi['by'].get('formatted', 0), opi['by'].get('formatted asked', 0))}")
    for m in opi["missed"][:20]:
        print(f"    {m}")
    print(f"DispatchStubs (impact), every DECLARE_DISPATCH of aten/, by its namespace-qualified name and bare  "
          f"{frac(stubs['ok'], stubs['asked'])}")
    for m in stubs["missed"][:20]:
        print(f"    {m}")
    print(f"time: {time.monotonic() - t0:.1f} s")
    if args.json:
        Path(args.json).write_text(json.dumps({"definitions": defs, "node_ids": nodes, "python_names": py,
                                               "pybind": pyb, "opinfos": opi, "stubs": stubs}, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
