#!/usr/bin/env python3
"""Census of the GPU answers: every __global__ kernel of ATen's native code, every op that runs on CUDA.

Enumerated from the tree itself, independently of TorchTalk (benchmarks/cuda_text.py reads the text,
PyYAML reads native_functions.yaml), then TorchTalk is asked over MCP stdio, as an agent would:

1. Kernels: every ``__global__`` definition under aten/src/ATen/native (over lines, templates,
   ``__launch_bounds__``/``C10_LAUNCH_BOUNDS_*``, kernels a same-file macro defines per invocation;
   not declarations, not kernels inside code strings such as jiterator sources), except the generated
   CUTLASS instantiations in transformers/cuda/mem_eff_attention/kernels/. The unit is one
   (file, kernel name). A kernel is *reached* when some op's ``cuda_kernels`` answer names it.
2. Ops: every op base name of native_functions.yaml with a CUDA-family dispatch key (CUDA,
   SparseCUDA, SparseCsrCUDA, NestedTensorCUDA, QuantizedCUDA), or a structured_delegate to one, or
   a ufunc_inner_loop (torchgen writes its CUDA code), or a composite kernel that calls one of those
   through the dispatcher (its body as text: ``at::x(``, ``at::_ops::x::call``, ``t.x(`` for a method
   op; transitively through composites).
   An op is *answered* when ``cuda_kernels(<op>)`` names at least one kernel, launch helper or library,
   and answered *by its own code* when one of them is reached without going into another op's code (the
   answer's ``via`` is empty: not through a composite call or a direct call to another op's kernel, such
   as at::native::copy_ deep in addmm's code). Both figures are printed.

   An op is answered *no device work* when its answer says so (Note [No device work] in query/cuda.py: the
   walk from its kernels for CUDA, composite calls, calls through the dispatcher and backward is complete,
   with no cut, and reaches no launch, family, library or CUDA runtime call). Such answers are printed on a
   line of their own and never counted in the kernel/library figure; "in all" adds them.

   The denominator, checked against the issue's definition ("every op with a CUDA-family key, and
   composites that reach one"): the ops the text finds no device work for (``_fw_primal``, ``rename``,
   ``alias``, ``detach``, ``sparse_dim``, ``indices``, ``q_scale``, ``set_``, ``record_stream``, ...) each have
   a CUDA-family key of their own (``alias``: NestedTensorCUDA; ``sparse_dim``: SparseCUDA; ``q_scale``:
   QuantizedCUDA) or a composite kernel that calls one (``_fw_primal`` -> ``at::alias``; ``rename`` ->
   ``alias``), so they belong to it; what runs for them on a GPU is a view, metadata or host code, or a
   CUDA runtime / caching-allocator call (``record_stream`` -> ``CUDACachingAllocator::recordStream``,
   ``_local_scalar_dense`` -> ``cudaMemcpyAsync`` in ``c10::cuda::memcpy_and_sync``), which model/cuda.py's
   library table names. Some that the text calls "no launch" do device work through a function handed on
   (``abs_`` -> ``unary_op_impl_(self, at::abs_out)``, Note [Op references]): their answers name it.

Kernels not counted: dead ones (named nowhere but at their definition) and those whose every ``<<<`` launch is on
a line only a ROCm build compiles (``#ifdef USE_ROCM``, the ``#else`` of ``#ifndef USE_ROCM``, a HIP version test:
layer_norm_kernel.cu's ``cuComputeGradInput``), read from the text here; no CUDA build runs them (Note [ROCm-only
code] in graph/pp_branches.py is TorchTalk's own reading).

Misses are classified from the text (never from TorchTalk): who launches a missed kernel (``<<<``,
a same-file macro, a reference passed to a launcher) and whether any op's CUDA code reaches that
launcher by name (a crude call graph that over-approximates: "non-op code" is said only when not
even that reaches it); for a missed op, what its CUDA kernels lead to by name (launches, through
which header or macro; libraries; nothing).

Run (it builds or refreshes the index in TORCHTALK_CACHE_DIR first):

    python benchmarks/bench_cuda_census.py --source /path/to/pytorch [--json out.json] [--limit N]

Prints the two fractions, the misses by reason and by file, and the latency of cuda_kernels over the
census (p50/p95/max over every call). Runtime: a few minutes on 2.6.0 (the text scan ~20 s CPU).
"""

from __future__ import annotations

import argparse
import json
import os
import re
import statistics
import subprocess
import sys
from collections import Counter, defaultdict, deque
from pathlib import Path

import yaml

sys.path.insert(0, str(Path(__file__).resolve().parent))

import cuda_text as ct  # noqa: I001
import tt_adapter as tt
from torchtalk.model.paths import NATIVE_FUNCTIONS

NATIVE = "aten/src/ATen/native"
EXCLUDED = (f"{NATIVE}/transformers/cuda/mem_eff_attention/kernels/",)
#: Where the text scan looks for launchers and callers: ATen's native code without the backends that never
#: run for CUDA tensors, ATen's CUDA helpers, and ATen's C++ tests (test helpers launch kernels too).
SCANNED = (NATIVE, "aten/src/ATen/cuda", "aten/src/ATen/test")
NOT_CUDA = tuple(f"{NATIVE}/{d}/" for d in ("cpu", "mps", "vulkan", "metal", "mkldnn", "xnnpack", "mkl",
                                             "kleidiai", "quantized/cpu", "ao_sparse/quantized/cpu"))
CUDA_KEYS = frozenset({"CUDA", "SparseCUDA", "SparseCsrCUDA", "NestedTensorCUDA", "QuantizedCUDA"})
COMPOSITE_KEYS = frozenset({"CompositeImplicitAutograd", "CompositeExplicitAutograd",
                            "CompositeExplicitAutogradNonFunctional"})
UP_DEPTH = 8  # callers by name looked through to find an op's CUDA code above a launcher
DOWN_DEPTH = 6  # callees by name looked through below an op's CUDA kernels
EXAMPLES = 4


# ------------------------------------------------------------------ ops, from native_functions.yaml

class Ops:
    """Op base names that run on CUDA, by group, and the C++ functions their CUDA (or composite) entries name."""

    def __init__(self, root: str, text: ct.Tree) -> None:
        with open(os.path.join(root, NATIVE_FUNCTIONS), encoding="utf-8") as f:
            entries = yaml.load(f, Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader))
        self.all: list[str] = []
        self.group: dict[str, str] = {}
        self.entries: dict[str, set[str]] = defaultdict(set)  # base name -> kernel function names (CUDA)
        self.dense: dict[str, set[str]] = defaultdict(set)  # base name -> its CUDA key's kernel function names
        composite: dict[str, set[str]] = defaultdict(set)  # base name -> composite kernel function names
        cuda_full: set[str] = set()
        for e in entries:
            full = e["func"].split("(")[0]
            base = full.split(".")[0]
            if base not in self.group and base not in self.all:
                self.all.append(base)
            keys = {k.strip(): v for ks, v in (e.get("dispatch") or {}).items() for k in ks.split(",")}
            cuda = {k: v for k, v in keys.items() if k in CUDA_KEYS}
            if cuda:
                cuda_full.add(full)
                self.group.setdefault(base, "dispatch key")
                self.entries[base].update(v.split("::")[-1] for v in cuda.values())
                if "CUDA" in cuda:
                    self.dense[base].add(cuda["CUDA"].split("::")[-1])
            if e.get("ufunc_inner_loop"):
                self.group.setdefault(base, "ufunc_inner_loop")
            comp = [v for k, v in keys.items() if k in COMPOSITE_KEYS]
            if not keys and not e.get("structured_delegate"):
                comp = [base]  # the implicit CompositeImplicitAutograd kernel
            composite[base].update(c.split("::")[-1] for c in comp)
        for e in entries:
            full = e["func"].split("(")[0]
            base = full.split(".")[0]
            d = e.get("structured_delegate")
            if d and d in cuda_full:
                self.group.setdefault(base, "structured_delegate")
                self.entries[base].update(self.entries[d.split(".")[0]])
                self.dense[base].update(self.dense[d.split(".")[0]])
        self.composite = composite
        method = {e["func"].split("(")[0].split(".")[0] for e in entries if "method" in str(e.get("variants", ""))}
        call = re.compile(r"(\bat::(?:_ops::)?|\bnative::|\.|->)\s*(\w+?)(?:_symint)?\s*(?:\(|::call)")
        changed = True
        while changed:  # composites that call one of those ops through the dispatcher, transitively
            changed = False
            for base, names in composite.items():
                if base in self.group or not names:
                    continue
                for fn in (f for n in names for f in text.funcs.get(n, ())):
                    hit = next((m.group(2) for m in call.finditer(text.body(fn)) if self.group.get(m.group(2)) and
                                (m.group(1) not in (".", "->") or m.group(2) in method)), None)
                    if hit:
                        self.group[base] = "composite"
                        self.entries[base].update(names)
                        changed = True
                        break
        self.cuda = [b for b in self.all if b in self.group]


# ------------------------------------------------------------------ asking TorchTalk

def gpu_names(obj: object, out: set[tuple[str, str]]) -> None:
    """(path, short name) of every GPU kernel an answer names, wherever it sits in the structured result."""
    if isinstance(obj, dict):
        loc = obj.get("loc")
        if obj.get("kind") in ("gpu_kernel", "global_kernel") and isinstance(loc, dict) or \
                obj.get("kind") == "global_kernel" and obj.get("path"):
            label = obj.get("name") or str(obj.get("label", "")).removeprefix("__global__ ")
            path = loc["path"] if isinstance(loc, dict) else obj["path"]
            out.add((path, label.split("(")[0].split("<")[0].split("::")[-1]))
        elif isinstance(obj.get("defined"), dict) and obj.get("name"):  # a launch family's kernel template
            out.add((obj["defined"]["path"], str(obj["name"]).split("<")[0].split("::")[-1]))
        for v in obj.values():
            gpu_names(v, out)
    elif isinstance(obj, list):
        for v in obj:
            gpu_names(v, out)


def own_answer(r: dict) -> bool:
    """Whether an answer names a launch, launch family or library call reached from the op's own code (``via``
    empty), not only ones in other ops' code (at::native::copy_ reached deep in a composite: copy_'s launches)."""
    sites = [launch for k in r.get("kernels") or [] for launch in k.get("launches") or []]
    sites += list(r.get("helpers") or []) + list(r.get("libraries") or [])
    return any(not s.get("via") for s in sites)


def ask(server: tt.McpStdio, names: list[str]) -> tuple[dict[str, dict], list[float]]:
    answers: dict[str, dict] = {}
    lat: list[float] = []
    for i, name in enumerate(names):
        res, dt = server.call("cuda_kernels", {"function_name": name})
        lat.append(dt)
        sc = res.get("structuredContent") or {}
        r = sc.get("result") or {}
        kernels: set[tuple[str, str]] = set()
        gpu_names(r, kernels)
        answers[name] = {"kind": sc.get("kind", "error" if res.get("isError") else "?"),
                         "answered": bool(r.get("kernels") or r.get("helpers") or r.get("libraries")),
                         "own": own_answer(r),
                         "no_device_work": str(r.get("no_device_work") or ""),
                         "kernels": sorted(kernels)}
        if res.get("isError") or not sc:  # said apart from a miss: the tool failed to answer
            answers[name]["error"] = " ".join(c.get("text", "") for c in res.get("content", []))[:300]
        if (i + 1) % 100 == 0:
            print(f"census: asked {i + 1}/{len(names)}", file=sys.stderr, flush=True)
    return answers, lat


# ------------------------------------------------------------------ classifying misses, from the text

class Reach:
    """What an op's CUDA code leads to by name (callees, same-file macros, stubs, ops it calls through the
    dispatcher), and who launches a kernel."""

    def __init__(self, text: ct.Tree, ops: Ops) -> None:
        self.text, self.ops = text, ops

    def entry_funcs(self, name: str, dense: bool = False) -> list[ct.Func]:
        """The functions an op's entries name; with ``dense``, those of its CUDA key when it has one (what a call
        from dense code runs), not its sparse or nested ones."""
        if dense:  # its CUDA kernel, else its composite one (never its sparse or nested ones)
            names = self.ops.dense.get(name) or self.ops.composite.get(name) or set()
        else:
            names = self.ops.entries.get(name, set())
        return [f for n in names for f in self.text.funcs.get(n, ())]

    def down(self, starts: list[ct.Func]) -> tuple[str, str]:
        """(reason, detail): the first launch found breadth first, else the libraries, else nothing."""
        text = self.text
        seen = {id(f) for f in starts}
        q = deque([(f, [f]) for f in starts])
        libs: dict[str, list[ct.Func]] = {}
        while q:
            f, path = q.popleft()
            in_macro = text.launched_in_macros(f)
            if f.launches or in_macro:
                via = " -> ".join(c.name for c in path)
                name, line = (f.launches or [(n, ln) for n, _m, ln in in_macro])[0]
                where = f"{via} -> {name}<<<>>> ({f.path}:{line})"
                if in_macro and not f.launches:
                    return "a launch reached by text through a same-file macro", where
                hdr = next((c for c in path if c.path.endswith((".cuh", ".h"))), None)
                if hdr is not None:
                    return f"a launch reached by text through a header ({os.path.basename(hdr.path)})", where
                return "a launch reached by text", where
            for lib in f.libs:
                libs.setdefault(lib, path)
            if len(path) > DOWN_DEPTH or len(seen) > 4000:
                continue
            nxt = [c for _how, c in text.callees(f)]
            for op in (f.calls | f.mcalls) & self.ops.entries.keys():  # through the dispatcher: its dense kernel
                nxt += self.entry_funcs(op, dense=True)
            for c in nxt:
                if id(c) not in seen:
                    seen.add(id(c))
                    q.append((c, path + [c]))
        if libs:
            _lib, path = min(libs.items(), key=lambda kv: len(kv[1]))
            return "library calls only (" + ", ".join(sorted(libs)) + ")", " -> ".join(c.name for c in path)
        return "no launch or library reached by text (allocation, view, metadata, host code)", ""

    def launchers(self, k: ct.Kernel) -> list[tuple[str, ct.Func]]:
        """(how, function) of everything that launches kernel ``k`` by its name, closest first."""
        out = []
        for f in (f for fs in self.text.files.values() for f in fs.funcs):
            if f.name == k.name:
                continue
            macro = next((m for n, m, _ln in self.text.launched_in_macros(f) if n == k.name), None)
            if any(n == k.name for n, _ln in f.launches):
                out.append(("<<<", f))
            elif macro is not None:
                out.append((f"<<< in macro {macro}", f))
            elif k.name in f.ids:
                out.append(("passed by name", f))
        out.sort(key=lambda t: (t[1].path != k.path, t[0] != "<<<", t[1].path, t[1].line))
        return out

    def op_above(self, start: ct.Func, entry_of: dict[int, str]) -> list[ct.Func] | None:
        """The shortest chain of callers by name from ``start`` up to a function an op's entry names, or None."""
        callers = self.text.callers()
        seen = {id(start)}
        q = deque([(start, [start])])
        while q:
            f, path = q.popleft()
            if id(f) in entry_of:
                return path
            if len(path) > UP_DEPTH:
                continue
            for c in callers.get(id(f), ()):
                if id(c) not in seen:
                    seen.add(id(c))
                    q.append((c, path + [c]))
        return None

    def kernel_miss(self, k: ct.Kernel, entry_of: dict[int, str], lib_of: dict[int, str]) -> tuple[str, str]:
        found = self.launchers(k)
        if not found:
            return NEVER, ""
        if not any(self.op_above(f, entry_of) for _how, f in found):
            for how, f in found:
                chain = self.op_above(f, lib_of)
                if chain is not None:
                    return ("launched only from ops of other libraries (TORCH_LIBRARY m.impl)",
                            f"{how} in {f.name} ({f.path}:{f.line}); {lib_of[id(chain[-1])]}: "
                            + " <- ".join(c.name for c in chain))
        for how, f in found:
            chain = self.op_above(f, entry_of)
            if chain is None:
                continue
            via = " <- ".join(c.name for c in chain)
            at = f"{how} in {f.name} ({f.path}:{f.line}); op {entry_of[id(chain[-1])]}: {via}"
            if how.startswith("<<< in macro"):
                return "launched through a same-file macro", at
            if how == "passed by name":
                return "handed to a launcher by name, no <<< at the site", at
            hdr = next((c for c in chain if c.path.endswith((".cuh", ".h")) and c.path != chain[-1].path), None)
            if hdr is not None:
                return f"launched through a header template ({os.path.basename(hdr.path)})", at
            return "launched from an op's CUDA code, not in its answer", at
        how, f = found[0]
        return "launched only from non-op code", f"{how} in {f.qual} ({f.path}:{f.line})"

    def op_miss(self, base: str) -> tuple[str, str]:
        starts = self.entry_funcs(base)
        if not starts:
            if self.ops.group[base] == "ufunc_inner_loop":
                return "CUDA code written by torchgen (ufunc), not in the tree", ""
            return "no definition of its CUDA kernel found by text", ", ".join(sorted(self.ops.entries[base]))[:120]
        return self.down(starts)


NEVER = "never launched in the scanned code"
#: Where a kernel never launched is looked for by name before it is called dead (not counted): any C, C++ or
#: CUDA source of these directories, comments and strings aside.
TREE_CODE = ("aten", "c10", "torch", "caffe2")


def named_only_at_definition(root: str, k: ct.Kernel) -> bool:
    """Whether the kernel's name appears in the tree's code only on its definition's line (dead code: no launch,
    no pointer taken, no reference from anywhere, its own file included)."""
    found = subprocess.run(["grep", "-rlw", "--include=*.[ch]*", "--include=*.cu*", k.name,
                            *(d for d in TREE_CODE if os.path.isdir(os.path.join(root, d)))],
                           cwd=root, capture_output=True, text=True).stdout.split()
    word = re.compile(rf"\b{re.escape(k.name)}\b")
    for rel in found:
        with open(os.path.join(root, rel), encoding="latin-1") as f:
            code = ct.strip(f.read())
        lines = {code.count("\n", 0, m.start()) + 1 for m in word.finditer(code)}
        if lines - ({k.line} if rel == k.path else set()):
            return False
    return True


_DIRECTIVE = re.compile(r"^\s*#\s*(ifdef|ifndef|if|elif|else|endif)\b(.*)$")
_ROCM_WORDS = re.compile(r"\bUSE_ROCM\b|__HIP_PLATFORM_(AMD|HCC)__|defined\s*\(?\s*((TORCH_)?HIP|ROCM)_VERSION\b")
_ROCM_NEGATED = re.compile(r"!\s*(defined\s*\(?\s*)?(USE_ROCM|__HIP_PLATFORM_(AMD|HCC)__)")


def rocm_lines(code: str) -> set[int]:
    """The lines a CUDA build never compiles because a ROCm-only condition holds around them: the ``#if`` part of
    ``#ifdef USE_ROCM`` / ``#if defined(USE_ROCM) [&& ...]`` (or a HIP version test), the ``#else`` part of
    ``#ifndef USE_ROCM`` / ``#if !defined(USE_ROCM)``. The census's own reading, independent of TorchTalk's."""
    out: set[int] = set()
    stack: list[list[bool]] = []  # per open #if: [this part is ROCm-only, the #else part would be]
    for n, line in enumerate(code.split("\n"), 1):
        m = _DIRECTIVE.match(line)
        if m is None:
            if any(part[0] for part in stack):
                out.add(n)
            continue
        word, cond = m.group(1), m.group(2).split("//")[0]
        rocm = bool(_ROCM_WORDS.search(cond)) and "||" not in cond  # a bare HIP version test holds in CUDA too
        negated = rocm and (bool(_ROCM_NEGATED.search(cond)) or word == "ifndef")
        if word in ("ifdef", "ifndef", "if"):
            stack.append([rocm and not negated, negated and "&&" not in cond])
        elif word == "elif" and stack:
            stack[-1] = [rocm and not negated, False]
        elif word == "else" and stack:
            stack[-1] = [stack[-1][1], False]
        elif word == "endif" and stack:
            stack.pop()
    return out


def launched_only_for_rocm(root: str, k: ct.Kernel) -> bool:
    """Whether every ``<<<`` launch of the kernel in the tree's code is on a ROCm-only line (no CUDA build runs
    it: layer_norm_kernel.cu's cuComputeGradInput, Indexing.cu's indexing_backward_kernel_rocm)."""
    found = subprocess.run(["grep", "-rlw", "--include=*.[ch]*", "--include=*.cu*", k.name,
                            *(d for d in TREE_CODE if os.path.isdir(os.path.join(root, d)))],
                           cwd=root, capture_output=True, text=True).stdout.split()
    launch = re.compile(rf"\b{re.escape(k.name)}\s*(<[^;{{}}]*?>)?\s*<<<")
    lines = 0
    for rel in found:
        with open(os.path.join(root, rel), encoding="latin-1") as f:
            code = ct.strip(f.read())
        rocm = rocm_lines(code)
        for m in launch.finditer(code):
            lines += 1
            if code.count("\n", 0, m.start()) + 1 not in rocm:
                return False
    return lines > 0


def library_ops(text: ct.Tree) -> dict[int, str]:
    """id(Func) -> the op of another library it implements (``m.impl("quantized::x", fn)``)."""
    out: dict[int, str] = {}
    for fs in text.files.values():
        for op, name in fs.impls:
            fns = text.funcs.get(name, [])
            for f in [f for f in fns if f.path == fs.path] or fns:
                out.setdefault(id(f), op)
    return out


def op_functions(text: ct.Tree, ops: Ops) -> dict[int, str]:
    """id(Func) -> an op whose CUDA or composite entry names it (the places an op's CUDA code starts)."""
    out: dict[int, str] = {}
    for base in ops.cuda:
        for n in ops.entries[base]:
            for f in text.funcs.get(n, ()):
                out.setdefault(id(f), base)
    return out


# ------------------------------------------------------------------ report

def pct(values: list[float], q: float) -> float:
    s = sorted(values)
    return s[min(len(s) - 1, max(0, int(round(q / 100 * len(s) + 0.5)) - 1))]


def show(title: str, groups: dict[str, list[tuple[str, str]]], total: int) -> None:
    print(f"\n{title} ({total}):")
    for reason, items in sorted(groups.items(), key=lambda kv: -len(kv[1])):
        print(f"  {len(items):4d}  {reason}")
        for name, detail in items[:EXAMPLES]:
            print(f"          {name}" + (f"  [{detail}]" if detail else ""))
        if len(items) > EXAMPLES:
            print(f"          ... {len(items) - EXAMPLES} more (--json lists all)")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--source", required=True, help="the PyTorch tree (indexed with the same TORCHTALK_CACHE_DIR)")
    ap.add_argument("--server-cmd", help="the MCP server's command line (default: python -m torchtalk serve "
                                         "--source SOURCE)")
    ap.add_argument("--limit", type=int, default=0, help="ask only the first N ops (a quick look)")
    ap.add_argument("--json", help="write every figure, hit, miss and answer to this file")
    ap.add_argument("--answers-from", help="reuse the answers of an earlier run's --json file (no server: to "
                                           "re-read the misses after a change to this census itself)")
    args = ap.parse_args(argv)
    root = str(Path(args.source).resolve())
    print("census: scanning the tree's text ...", file=sys.stderr, flush=True)
    text = ct.Tree(root, SCANNED, exclude=NOT_CUDA)
    kernels = {k.key: k for k in text.kernels() if k.path.startswith(NATIVE + "/") and
               not k.path.startswith(EXCLUDED)}
    ops = Ops(root, text)
    names = ops.all[: args.limit] if args.limit else ops.all
    cmd = args.server_cmd.split() if args.server_cmd else None
    print(f"census: asking cuda_kernels about {len(names)} ops over MCP stdio ...", file=sys.stderr, flush=True)
    if args.answers_from:
        old = json.loads(Path(args.answers_from).read_text())
        answers, lat = old["answers"], old["latency_s"]
    else:
        if cmd is None:  # the index first (a no-op when it is fresh): calls made while it builds would fail
            subprocess.run([sys.executable, "-m", "torchtalk", "index", "--source", str(root), "--progress", "never"],
                           check=True, stdout=subprocess.DEVNULL)
        with tt.McpStdio(root, dict(os.environ), cmd) as server:
            answers, lat = ask(server, names)

    reached_by: dict[tuple[str, str], str] = {}
    for name, a in answers.items():
        for key in a["kernels"]:
            reached_by.setdefault(tuple(key), name)
    hit_k = [k for k in kernels if k in reached_by]
    cuda_ops = [b for b in ops.cuda if b in answers]
    hit_o = [b for b in cuda_ops if answers[b]["answered"]]
    own_o = [b for b in hit_o if answers[b].get("own")]
    # Note [No device work] in query/cuda.py: said apart, never mixed into the kernel/library figure
    none_o = [b for b in cuda_ops if not answers[b]["answered"] and answers[b].get("no_device_work")]

    entry_of = op_functions(text, ops)
    lib_of = library_ops(text)
    reach = Reach(text, ops)
    k_miss: dict[str, list[tuple[str, str]]] = defaultdict(list)
    k_by_file: Counter[str] = Counter()
    dead: list[tuple[str, str]] = []
    rocm: list[tuple[str, str]] = []
    for key, k in sorted(kernels.items()):
        if key in reached_by:
            continue
        reason, detail = reach.kernel_miss(k, entry_of, lib_of)
        if reason == NEVER and named_only_at_definition(root, k):
            dead.append((f"{k.name}  {k.path}:{k.line}", f"no other mention of {k.name} in {', '.join(TREE_CODE)}"))
            continue
        if launched_only_for_rocm(root, k):
            rocm.append((f"{k.name}  {k.path}:{k.line}", "every <<< launch of it is under a ROCm-only #if"))
            continue
        k_miss[reason].append((f"{k.name}  {k.path}:{k.line}", detail))
        k_by_file[k.path] += 1
    o_miss: dict[str, list[tuple[str, str]]] = defaultdict(list)
    for b in cuda_ops:
        if not answers[b]["answered"] and b not in none_o:
            reason, detail = reach.op_miss(b)
            o_miss[reason].append((f"{b} ({ops.group[b]})", detail))

    n_k, n_o = len(kernels) - len(dead) - len(rocm), len(cuda_ops)
    print(f"CUDA census of {root}")
    print(f"kernels reached: {len(hit_k)}/{n_k} ({len(hit_k) / max(n_k, 1):.3f})  [__global__ definitions "
          f"under {NATIVE}, {len({p for p, _ in kernels})} files, without {EXCLUDED[0]}; without {len(dead)} "
          f"dead ones: named nowhere but at their definition; without {len(rocm)} launched only under a ROCm-only "
          "#if]")
    print(f"ops answered: {len(hit_o)}/{n_o} ({len(hit_o) / max(n_o, 1):.3f})  [op base names that run on CUDA; "
          "any launch, family or library]")
    print(f"ops answered: no device work (complete walk): {len(none_o)}/{n_o} ({len(none_o) / max(n_o, 1):.3f})  "
          "[no launch, family, library or runtime call, and no cut: views, metadata, host code]")
    print(f"ops answered in all: {len(hit_o) + len(none_o)}/{n_o} ({(len(hit_o) + len(none_o)) / max(n_o, 1):.3f})")
    print(f"ops answered by their own code: {len(own_o)}/{n_o} ({len(own_o) / max(n_o, 1):.3f})  [a launch, family "
          "or library reached without going into another op's code]")
    for grp in ("dispatch key", "structured_delegate", "ufunc_inner_loop", "composite"):
        g = [b for b in cuda_ops if ops.group[b] == grp]
        if g:
            print(f"  {grp}: {sum(answers[b]['answered'] for b in g)}/{len(g)} any, "
                  f"{sum(bool(answers[b].get('own')) for b in g)}/{len(g)} own")
    errors = {n: a["error"] for n, a in answers.items() if "error" in a}
    if errors:
        first = next(iter(errors.items()))
        print(f"ERRORS: {len(errors)} calls failed (counted as misses), e.g. {first[0]}: {first[1][:200]}")
    print(f"cuda_kernels latency over {len(lat)} calls (ms): p50 {statistics.median(lat) * 1e3:.1f}  "
          f"p95 {pct(lat, 95) * 1e3:.1f}  max {max(lat) * 1e3:.1f}")
    show("Kernel misses by reason", k_miss, n_k - len(hit_k))
    if dead:
        show("Kernels not counted: dead code, never launched or named anywhere in the tree", {"dead": dead},
             len(dead))
    if rocm:
        show("Kernels not counted: launched only where a ROCm build compiles (no CUDA build runs them)",
             {"ROCm only": rocm}, len(rocm))
    print("\nKernel misses by file:")
    for path, n in k_by_file.most_common(15):
        print(f"  {n:4d}  {path}")
    show("Op misses by reason", o_miss, n_o - len(hit_o) - len(none_o))
    print(f"\nOps answered 'no device work' ({len(none_o)}): " + ", ".join(none_o[:30])
          + (" ..." if len(none_o) > 30 else ""))
    if args.json:
        Path(args.json).write_text(json.dumps({
            "kernels": {"reached": len(hit_k), "defined": n_k, "misses": k_miss, "dead": dead, "rocm_only": rocm,
                        "reached_by": {f"{p}:{n}": op for (p, n), op in reached_by.items() if (p, n) in kernels}},
            "ops": {"answered": len(hit_o), "own": len(own_o), "cuda_ops": n_o, "no_device_work": none_o,
                    "other_ops_code_only": sorted(set(hit_o) - set(own_o)),
                    "groups": {b: ops.group[b] for b in cuda_ops},
                    "misses": o_miss},
            "latency_ms": {"p50": statistics.median(lat) * 1e3, "p95": pct(lat, 95) * 1e3, "max": max(lat) * 1e3},
            "answers": answers, "latency_s": lat,
        }, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
