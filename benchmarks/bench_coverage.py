#!/usr/bin/env python3
"""Coverage of every op against the official wheel: kernel definitions and Python names.

What it measures (TorchTalk reached only through benchmarks/tt_adapter.py):

1. Native kernels. Every ``torch/include/ATen/ops/*_native.h`` in the official wheel declares
   the ``at::native`` kernels a build of that release expects: ``TORCH_API <ret> NAME(...);``
   and, for structured kernels, ``struct TORCH_API structured_NAME : public at::meta::structured_X
   { void impl(...); };``. The unit counted is one (header, kernel name, structured?) triple:
   overloads of a name in one header count once (they are one name to look up); the same
   name declared in two headers (e.g. a kernel shared by two ops) counts once per header.
   That gives 3,352 for 2.6.0 (3,727 declarations; 3,323 distinct (name, structured)).
   For each, TorchTalk is asked for the definition it names for that kernel (the lookup
   trace does per dispatch entry: ``kernel_definition``). A hit is a definition with file:line,
   hand-written in the tree or ``<generated>/...``. The same is also measured the way a user
   sees it: ``trace(<op of the header>, focus=dispatch)`` lists the kernel with a definition.
   Misses are broken down by cause, using the wheel's own native_functions.yaml (which names
   the kernel? an explicit dispatch entry, the implicit CompositeImplicitAutograd default,
   an ``autogen:`` line, a ufunc) and the tree's text (is the name spelled anywhere, in which
   kind of file, does TorchTalk hold a definition of that name in another namespace?).

2. Python names. Every function ``def X(`` in the wheel's ``torch/_C/_VariableFunctions.pyi``
   (overloads deduplicated) is asked as ``trace("torch.X")``; a hit is an answer, not
   not_found. Also ``torch/_C/_nn.pyi`` as ``torch._C._nn.X`` and the methods of
   ``class TensorBase`` in ``torch/_C/__init__.pyi`` as ``Tensor.X`` (dunders skipped),
   reported separately. Failures are grouped by cause.

Run (after `torchtalk index --source TREE` with the same TORCHTALK_CACHE_DIR):

    python benchmarks/bench_coverage.py --source /path/to/pytorch-2.6.0 [--version 2.6.0] [--json out.json]

Dependencies: the torchtalk package (this repo, `pip install -e .`), PyYAML (a torchtalk
dependency), pip (to fetch the wheel once: `pip download --no-deps torch==2.6.0`, ~766 MB,
cached in ~/.cache/torchtalk-bench or $TORCHTALK_BENCH_CACHE; never installed). Runtime:
about a minute with the wheel cached.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import sys
import time
from collections import Counter, defaultdict
from dataclasses import asdict, dataclass, field
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import tt_adapter as tt  # noqa: I001
from wheel import BenchError, open_wheel, read_text

NATIVE_H = re.compile(r"^torch/include/ATen/ops/(\w+)_native\.h$")
DECL = re.compile(r"^TORCH_API\s+(.+?)\b(\w+)\s*\((.*)\);\s*$")
STRUCT = re.compile(r"^struct TORCH_API structured_(\w+) : public at::meta::structured_(\w+) \{")
CPP_DIRS = ("aten", "c10", "torch/csrc", "functorch")
CPP_EXT = (".cpp", ".cc", ".c", ".h", ".hpp", ".cuh", ".cu", ".mm", ".m")
EXAMPLES = 3


@dataclass
class Kernel:
    header: str  # op base name of the header (relu for relu_native.h)
    name: str
    structured: bool
    declarations: int = 1
    origin: str = ""  # explicit | implicit | autogen | ufunc | other (from the wheel's YAML)
    defs: list[str] = field(default_factory=list)  # what TorchTalk names, "path:line"
    generated: bool = False  # every def named is under <generated>/
    by_trace: bool = False  # trace(header op) lists this kernel with a definition
    cause: str = ""  # for misses

    @property
    def display(self) -> str:
        return f"structured_{self.name}::impl" if self.structured else f"at::native::{self.name}"


# ------------------------------------------------------------------ the wheel

def read_kernels(z) -> tuple[list[Kernel], int, int]:
    kernels: dict[tuple[str, str, bool], Kernel] = {}
    decls = 0
    headers = sorted(n for n in z.namelist() if NATIVE_H.match(n))
    if not headers:
        raise BenchError("the wheel has no torch/include/ATen/ops/*_native.h")
    for h in headers:
        op = NATIVE_H.match(h).group(1)
        for line in read_text(z, h).splitlines():
            m = DECL.match(line)
            s = STRUCT.match(line)
            if not m and not s:
                continue
            decls += 1
            key = (op, s.group(1), True) if s else (op, m.group(2), False)
            if key in kernels:
                kernels[key].declarations += 1
            else:
                kernels[key] = Kernel(op, key[1], key[2])
    return list(kernels.values()), len(headers), decls


def yaml_entries(z) -> list[dict]:
    """The wheel's own copy of native_functions.yaml (torchgen/packaged/...)."""
    import yaml
    loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
    return yaml.load(read_text(z, "torchgen/packaged/ATen/native/native_functions.yaml"), Loader=loader)


def yaml_origins(entries: list[dict]) -> dict[str, str]:
    """kernel name -> how native_functions.yaml brings it about."""
    out: dict[str, str] = {}
    autogen: set[str] = set()
    for e in entries:
        func = e["func"]
        full = func.split("(")[0]
        base, _, overload = full.partition(".")
        for v in (e.get("dispatch") or {}).values():
            out.setdefault(str(v), "explicit")
        if not e.get("dispatch") and "structured_delegate" not in e:
            is_out = "(a!" in func.split("->")[0] and overload.endswith("out") or overload == "out"
            out.setdefault(base + ("_out" if is_out else ""), "implicit")
        for a in str(e.get("autogen", "") or "").split(","):
            a = a.strip()
            if a:
                b, _, o = a.partition(".")
                autogen.add(f"{b}_{o}" if o else b)
    for name in autogen:
        out.setdefault(name, "autogen")
    return out


def origin_of(name: str, origins: dict[str, str]) -> str:
    if name in origins:
        return origins[name]
    if name.startswith("ufunc_"):
        return "ufunc"
    if name.endswith("_symint") and origins.get(name.removesuffix("_symint")) == "autogen":
        return "autogen"
    if name.endswith("_symint"):
        return "autogen"  # torchgen's SymInt spelling of an autogen'd out= kernel (2.6.0: all of them)
    return "other"


def python_names(z) -> dict[str, list[str]]:
    """{'torch': [...], 'torch._C._nn': [...], 'Tensor': [...]} from the wheel's .pyi stubs."""
    out: dict[str, list[str]] = {}
    top = re.compile(r"^def (\w+)\(", re.MULTILINE)
    out["torch"] = sorted(set(top.findall(read_text(z, "torch/_C/_VariableFunctions.pyi"))))
    out["torch._C._nn"] = sorted(set(top.findall(read_text(z, "torch/_C/_nn.pyi"))))
    init = read_text(z, "torch/_C/__init__.pyi")
    m = re.search(r"^class TensorBase\b.*?:\n(.*?)(?=^\S)", init, re.MULTILINE | re.DOTALL)
    methods = set(re.findall(r"^    def (\w+)\(", m.group(1), re.MULTILINE)) if m else set()
    out["Tensor"] = sorted(n for n in methods if not n.startswith("__"))
    return out


# ------------------------------------------------------------------ the tree's text

def spelled_in_tree(root: Path, names: set[str]) -> dict[str, list[tuple[str, int]]]:
    """Where each name occurs as a whole word in the tree's C/C++/CUDA/ObjC++ files (path, line)."""
    hits: dict[str, list[tuple[str, int]]] = defaultdict(list)
    word = re.compile(r"\w+")
    for d in CPP_DIRS:
        for dirpath, _dirs, files in os.walk(root / d):
            for f in files:
                if not f.endswith(CPP_EXT):
                    continue
                p = Path(dirpath) / f
                try:
                    text = p.read_text(encoding="utf-8", errors="replace")
                except OSError:
                    continue
                found = names.intersection(word.findall(text))
                if not found:
                    continue
                rel = str(p.relative_to(root))
                for i, line in enumerate(text.splitlines(), 1):
                    for n in found.intersection(word.findall(line)):
                        hits[n].append((rel, i))
    return hits


_STRING = re.compile(r'"(?:[^"\\\n]|\\.)*"')


def looks_like_definition(root: Path, name: str, path: str, line: int) -> bool:
    """`name(...)` on this line is a function definition: a type or qualifier before the name (not
    `return`, `=`, `.`, `->`, `,`, `(`), and `{` right after the balanced parameter list."""
    try:
        lines = (root / path).read_text(encoding="utf-8", errors="replace").splitlines()[line - 1:line + 30]
    except OSError:
        return False
    text = _STRING.sub('""', "\n".join(lines))
    for m in re.finditer(rf"(?<![\w.>])((?:\w+::)*){re.escape(name)}\s*\(", text.split("\n", 1)[0]):
        before = text[:m.start()].rstrip()
        if not before or before.endswith(("return", "=", ",", "(", "!", "&&", "||", "?", ":")) and not \
                before.endswith("::"):
            continue
        depth, k = 0, m.end() - 1
        while k < len(text):
            depth += {"(": 1, ")": -1}.get(text[k], 0)
            if depth == 0:
                break
            k += 1
        rest = text[k + 1:].lstrip()
        if rest.startswith(("{", "const {", "const{", "override", "noexcept")) or re.match(r"^:\s*\w", rest):
            return True
    return False


def body_ends_with_bare_macro(root: Path, path: str, line: int) -> bool:
    """The definition's body holds a macro statement without its ';' (``TORCH_CHECK(false, "...")``
    as the last line), which tree-sitter cannot parse as a statement."""
    try:
        lines = (root / path).read_text(encoding="utf-8", errors="replace").splitlines()[line - 1:line + 80]
    except OSError:
        return False
    for text in lines[1:]:
        if text.startswith("}"):
            break
        if re.match(r"^\s*[A-Z][A-Z0-9_]+\(.*\)\s*$", text):
            return True
    return False


def token_pastes(root: Path) -> list[tuple[str, str, str, int]]:
    """`prefix##` / `##suffix` fragments of macros under aten/: (prefix, suffix, path, line)."""
    out = []
    paste = re.compile(r"(\w*)\s*##\s*\w+\s*##\s*(\w*)|(\w+)\s*##\s*\w+|\w+\s*##\s*(\w+)")
    for dirpath, _dirs, files in os.walk(root / "aten"):
        for f in files:
            if not f.endswith(CPP_EXT):
                continue
            p = Path(dirpath) / f
            text = p.read_text(encoding="utf-8", errors="replace")
            if "##" not in text:
                continue
            for i, line in enumerate(text.splitlines(), 1):
                if "##" in line:
                    for m in paste.finditer(line):
                        pre = m.group(1) or m.group(3) or ""
                        suf = m.group(2) or m.group(4) or ""
                        out.append((pre, suf, str(p.relative_to(root)), i))
    return out


def pasted_at(pastes: list[tuple[str, str, str, int]], name: str) -> str:
    best = [(len(pre) + len(suf), path, line) for pre, suf, path, line in pastes
            if len(pre) + len(suf) >= 3 and name.startswith(pre) and name.endswith(suf)]
    if not best:
        return ""
    _n, path, line = max(best, key=lambda b: (b[0], "native" in b[1]))
    return f"(## macro) {path}:{line}"


def classify_misses(h, root: Path, misses: list[Kernel]) -> None:
    plain = {k.name for k in misses}
    where = spelled_in_tree(root, plain)
    pastes = token_pastes(root) if misses else []
    for k in misses:
        if k.origin == "autogen":
            k.cause = "autogen'd op: torchgen writes this kernel (CompositeViewCopyKernels.cpp / Register*.cpp)"
            continue
        if k.origin == "ufunc":
            k.cause = "ufunc structured kernel generated from native/ufunc/*.h (UfuncCPU_*.cpp)"
            continue
        spots = where.get(k.name, [])
        def_spots = [(p, ln) for p, ln in spots if looks_like_definition(root, k.name, p, ln)]
        if not def_spots:
            k.cause = ("name never spelled as a definition in the tree: built by a macro (token pasting, "
                       "e.g. `Tensor _cast_##n(...)`)")
            evidence = pasted_at(pastes, k.name)
            if evidence:
                k.defs = [evidence]
            elif spots:
                k.defs = [f"(text) {spots[0][0]}:{spots[0][1]}"]
            continue
        pick, others = tt.function_lookup(h, k.name)
        tree_defs = [d for d in ([pick] if pick else []) + others if not d.path.startswith("<generated>/")]
        if any(not d.qualname.startswith("at::native") for d in tree_defs):
            d = next(d for d in tree_defs if not d.qualname.startswith("at::native"))
            k.cause = "defined outside at::native (namespace or class mismatch)"
            k.defs = [f"{d.qualname} {d.path}:{d.line}"]
            continue
        exts = {Path(p).suffix for p, _ in def_spots}
        loc = def_spots[0]
        k.defs = [f"(text) {loc[0]}:{loc[1]}"]
        if exts <= {".mm", ".m"}:
            k.cause = "defined in Objective-C++ (.mm, MPS) only"
        elif exts <= {".h", ".cuh", ".hpp"}:
            k.cause = "defined in a header"
        elif body_ends_with_bare_macro(root, *loc):
            k.cause = ("definition lost by the extractor: its body has a macro statement without ';' "
                       "(e.g. `TORCH_CHECK(false, \"...\")` as the last line)")
        else:
            k.cause = "definition lost by the extractor (other)"


# ------------------------------------------------------------------ run

def run(source: str, version: str) -> dict:
    t0 = time.monotonic()
    h = tt.open_index(source)
    with open_wheel(version) as z:
        kernels, n_headers, n_decls = read_kernels(z)
        entries = yaml_entries(z)
        origins = yaml_origins(entries)
        ops = op_bases(entries)
        pynames = python_names(z)
    t_wheel = time.monotonic() - t0

    t1 = time.monotonic()
    trace_cache: dict[str, dict | None] = {}
    for k in kernels:
        k.origin = origin_of(k.name, origins)
        defs = [d for d in tt.kernel_definition(h, k.name, k.structured) if d.is_definition]
        k.defs = [f"{d.path}:{d.line}" for d in defs]
        k.generated = bool(defs) and all(d.path.startswith("<generated>/") for d in defs)
        shown: dict = {}
        # A header serves the op, its in-place twin (relu, relu_), dunder ops (and_native.h: __and__, __iand__)
        # and ops of another base name (normal_native.h: normal_functional); the kernel's own name covers those.
        for op in (k.header, k.header + "_", f"__{k.header}__", f"__i{k.header}__", k.name):
            if op == k.name and shown.get(k.name):
                break  # asking trace by the kernel's name is slow when it is not an op name: only if needed
            if op not in trace_cache:
                trace_cache[op] = tt.trace_kernels(h, op)
            for name, ds in (trace_cache[op] or {}).items():
                shown.setdefault(name, []).extend(ds)
        k.by_trace = bool(shown.get(k.name))  # a ufunc op's entries carry torchgen's name too (ufunc_add_CPU)
    found = [k for k in kernels if k.defs]
    misses = [k for k in kernels if not k.defs]
    classify_misses(h, h.root, misses)
    t_kernels = time.monotonic() - t1

    t2 = time.monotonic()
    py: dict[str, dict] = {}
    for prefix, names in pynames.items():
        fails = [n for n in names if not tt.trace_resolves(h, f"{prefix}.{n}")]
        py[prefix] = {"names": len(names), "resolved": len(names) - len(fails),
                      "failures": classify_py_failures(h, fails, ops)}
    t_py = time.monotonic() - t2

    causes: dict[str, list[Kernel]] = defaultdict(list)
    for k in misses:
        causes[k.cause].append(k)
    by_origin = Counter(k.origin for k in kernels)
    hit_origin = Counter(k.origin for k in found)
    distinct = {(k.name, k.structured) for k in kernels}
    distinct_hit = {(k.name, k.structured) for k in found}
    return {
        "source": str(h.root), "version": version, "index": tt.status_line(h),
        "kernels": {
            "headers": n_headers, "declarations": n_decls, "unit": "(header, kernel name, structured)",
            "total": len(kernels), "with_definition": len(found),
            "hand_written": sum(1 for k in found if not k.generated),
            "generated_only": sum(1 for k in found if k.generated),
            "named_by_trace": sum(1 for k in kernels if k.by_trace),
            "distinct_name_structured": len(distinct), "distinct_with_definition": len(distinct_hit),
            "by_origin": {o: {"total": by_origin[o], "with_definition": hit_origin[o]} for o in sorted(by_origin)},
            "miss_causes": {c: {"count": len(ks), "kernels": [f"{k.display} ({k.header}_native.h)"
                                                              + (f" -> {k.defs[0]}" if k.defs else "") for k in ks]}
                            for c, ks in sorted(causes.items(), key=lambda kv: -len(kv[1]))},
            "not_by_trace_by_origin": dict(Counter(k.origin for k in kernels if not k.by_trace)),
            "found_but_not_by_trace": [f"{k.display} ({k.header}, {k.origin})" for k in found if not k.by_trace],
        },
        "python": py,
        "seconds": {"wheel": round(t_wheel, 1), "kernels": round(t_kernels, 1), "python": round(t_py, 1),
                    "total": round(time.monotonic() - t0, 1)},
    }


def op_bases(entries: list[dict]) -> set[str]:
    return {e["func"].split("(")[0].split(".")[0] for e in entries}


def classify_py_failures(h, fails: list[str], ops: set[str]) -> dict[str, list[str]]:
    out: dict[str, list[str]] = defaultdict(list)
    for n in fails:
        if n in ops:
            out["an op of native_functions.yaml under this name, but trace does not find it"].append(n)
        elif n.rstrip("_") in ops or n + "_" in ops:
            out["in-place/out spelling of an op (no YAML entry of this exact name)"].append(n)
        elif tt.binding_hits(h, n):
            out["no op of this name: a hand-written binding that search() finds (PyMethodDef/pybind), "
                "but trace answers only for ops"].append(n)
        else:
            out["no op of this name, and search() finds no binding of it either (templates, alias tables, "
                "methods of Tensor written in python_variable_methods.cpp)"].append(n)
    return dict(out)


def print_table(r: dict) -> None:
    k = r["kernels"]
    def pct(a: int, b: int) -> str:
        return f"{100.0 * a / b:5.1f}%" if b else "  n/a"

    print(f"TorchTalk coverage vs the torch {r['version']} wheel  ({r['index']})")
    print(f"native kernels: {k['headers']} *_native.h, {k['declarations']} declarations, "
          f"{k['total']} {k['unit']} ({k['distinct_name_structured']} distinct (name, structured))")
    for label, col in (("with a definition (file:line)", "with_definition"),
                       ("  hand-written in the tree", "hand_written"),
                       ("  only <generated>/", "generated_only"),
                       ("named by trace(op, focus=dispatch)", "named_by_trace")):
        print(f"  {label:44} {k[col]:5}/{k['total']:<5} {pct(k[col], k['total'])}")
    print(f"  {'distinct (name, structured) with a def':44} {k['distinct_with_definition']:5}/"
          f"{k['distinct_name_structured']:<5} {pct(k['distinct_with_definition'], k['distinct_name_structured'])}")
    print(f"  {'  not named by trace, by origin':44} " + ", ".join(
        f"{o} {n}" for o, n in sorted(k["not_by_trace_by_origin"].items(), key=lambda kv: -kv[1])))
    print("  by origin in native_functions.yaml:")
    for o, v in k["by_origin"].items():
        print(f"    {o:42} {v['with_definition']:5}/{v['total']:<5} {pct(v['with_definition'], v['total'])}")
    print("  misses by cause:")
    for c, v in k["miss_causes"].items():
        print(f"    {v['count']:5}  {c}")
        for ex in v["kernels"][:EXAMPLES]:
            print(f"           e.g. {ex}")
    for prefix, v in r["python"].items():
        label = {"torch": "torch.X (_VariableFunctions.pyi)", "torch._C._nn": "torch._C._nn.X (_nn.pyi)",
                 "Tensor": "Tensor.X (TensorBase in __init__.pyi)"}[prefix]
        print(f"python names {label:40} {v['resolved']:5}/{v['names']:<5} {pct(v['resolved'], v['names'])}")
        for c, names in v["failures"].items():
            print(f"    {len(names):5}  {c}: {', '.join(names[:8])}{' ...' if len(names) > 8 else ''}")
    s = r["seconds"]
    print(f"time: {s['total']} s (wheel {s['wheel']}, kernels {s['kernels']}, python {s['python']})")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--source", default=os.environ.get("TORCHTALK_SOURCE"),
                    help="the PyTorch tree TorchTalk indexed (default $TORCHTALK_SOURCE)")
    ap.add_argument("--version", default="2.6.0", help="torch release whose wheel is the reference")
    ap.add_argument("--json", metavar="OUT", help="write the full results (all miss lists) here")
    args = ap.parse_args(argv)
    if not args.source:
        print("bench_coverage: give --source /path/to/pytorch (or set TORCHTALK_SOURCE)", file=sys.stderr)
        return 2
    try:
        r = run(args.source, args.version)
    except (BenchError, tt.AdapterError) as exc:
        print(f"bench_coverage: {exc}", file=sys.stderr)
        return 2
    print_table(r)
    if args.json:
        Path(args.json).write_text(json.dumps(r, indent=1, default=asdict))
        print(f"wrote {args.json}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
