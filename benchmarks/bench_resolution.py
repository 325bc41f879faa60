#!/usr/bin/env python3
"""Call resolution against a real C++ front-end: TorchTalk's `calls` vs libclang, per caller.

For a sample of ATen translation units, libclang (the real clang front-end, given the
tree's headers and the official wheel's generated ones) resolves every call in every
function whose body is in the TU's main file. TorchTalk's `calls` answer for the same
function (matched by file and line of the definition, within 2 lines) is compared with it:

- in-tree callees: a called function or method declared or defined under the tree (not std,
  not system, not a generated op entry point). Recall = share of libclang's distinct
  (caller, callee) pairs that TorchTalk lists among its resolved callees; precision = share
  of TorchTalk's distinct resolved (caller, callee) pairs that libclang confirms (callees
  libclang cannot check, i.e. calls that are dependent in an uninstantiated template, are
  left out of precision; so are, in a function template or a member of a class template,
  resolved callees libclang lists no call of, as it does not instantiate such code). Methods
  (non-static member functions) and free functions (incl. static members) are reported
  separately.
- dispatcher op calls: calls of the generated op entry points (at::X / at::X_out /
  at::X_symint / at::X_outf in ATen/ops/X.h, at::_ops::S::call / redispatch,
  at::redispatch::X, Tensor / TensorBase methods of the generated TensorBody.h whose body calls
  at::_ops::) mapped to the op (its base name, from the at::_ops struct they call); direct
  per-backend calls (at::cpu::X, at::meta::X, at::compositeexplicitautograd::X ... in
  ATen/ops/X_<key>_dispatch.h) count as calls of op X too (they skip the dispatcher but name
  the op). Header-only accessors (sizes(), dim(), options()) are not ops. Recall and precision
  against TorchTalk's "ops through the dispatcher", by op base name.
- op overloads: at the op call sites both sides name (same op base name, same line or the next), is
  libclang's overload (the at::_ops struct the entry point calls) among the ones TorchTalk lists (recall),
  what share of TorchTalk's listed overloads libclang calls (precision), and how often TorchTalk lists
  exactly libclang's.
- operators (Note [Operators] in extract/cpp_calls.py): calls of in-tree operator overloads
  (``a != b`` with Tensors is ``at::operator!=``), compared apart, by (caller, operator's
  qualified name, line of the operator token): recall = share of libclang's that TorchTalk
  resolves to the same operator, precision = share of TorchTalk's that libclang makes.
- overload right: for call sites both sides resolved to the same in-tree function where
  libclang knows the definition it chose (same TU), is TorchTalk's first-named definition the
  same file:line (within 1 line)? Reported over all such sites, and over those where TorchTalk
  named several candidates (it faced overloads).

What counts as a call: CALL_EXPR cursors whose referenced declaration is a function, method
or function template, and whose callee name is spelled in the main file, on the line where the
callee's name is written (a call of a chain written over several lines is on the line of its name)
(calls that come from a macro's body, e.g. TORCH_CHECK's c10::detail::torchCheckFail, and
implicit calls such as a range-for's begin()/end() are left out; calls written inside macro
arguments are kept). Excluded: constructors and destructors (TorchTalk models them as type
names, not calls), overloaded operators and conversion functions (never spelled as a
name). Calls in lambdas count for the enclosing function. Normalisation of qualified names
on both sides: template arguments dropped, `(anonymous)::` segments dropped (so
`at::native::(anonymous)::f` and `at::native::f` match; a wrong pick between the two shows
up in the overload check, which compares locations), and the CPU_CAPABILITY namespace
(`DEFAULT` here, from -DCPU_CAPABILITY=DEFAULT) dropped.

The sample (FILES) covers the kinds of code TorchTalk must handle:
  native/ReduceOps.cpp            structured kernels (TORCH_META_FUNC / TORCH_IMPL_FUNC), DispatchStubs
  native/cpu/SoftMaxKernel.cpp    a DispatchStub CPU kernel file: anonymous namespace, Vectorized templates
  native/TensorShape.cpp          the largest composite file: op calls of every spelling, symint
  native/TensorFactories.cpp      factories, macro-built kernels (_cast_##n), TensorOptions chains
  native/Normalization.cpp        batch norm: templates, tuples, many at:: op calls
  native/group_norm.cpp           a small composite file with a stub
  native/Activation.cpp           structured meta/impl pairs and stubs
  native/TensorAdvancedIndexing.cpp  index ops, TensorIterator config chains
  native/sparse/SparseTensor.cpp  sparse kernels (another subtree, other helpers)
  native/quantized/QTensor.cpp    quantized kernels, quantizer methods
  ATen/TensorIterator.cpp         not native: a class's own methods calling each other
  ATen/functorch/BatchRulesReduceOps.cpp  functorch batch rules: templates, macros, op calls
  torch/csrc/autograd/FunctionsManual.cpp autograd formulas: thousands of op calls, no kernels
Override with --files (paths relative to the tree), since TorchTalk must also do well on
files this list did not choose.

Run (after `torchtalk index --source TREE` with the same TORCHTALK_CACHE_DIR):

    python benchmarks/bench_resolution.py --source /path/to/pytorch-2.6.0 [--files a.cpp b.cpp] [--json out.json]

Dependencies (benchmark only, not TorchTalk's): `pip install 'libclang>=18.1,<19'` (or the
`bench` extra of pyproject.toml); the clang resource headers, e.g. Debian's
`apt-get install libclang-common-16-dev` (/usr/lib/llvm-16/lib/clang/16/include; --resource-dir
to point elsewhere); the torch wheel of the same release (fetched once by benchmarks/wheel.py
with pip download, ~766 MB, its torch/include extracted into the cache). libclang's facts per
file are cached in ~/.cache/torchtalk-bench/resolution/ keyed by tree path, file content,
flags and this script's extractor version, so reruns take seconds; a cold run parses each TU
in ~5-30 s (--jobs N processes, default 2).
"""

from __future__ import annotations

import argparse
import glob
import hashlib
import json
import os
import re
import sys
import time
from collections import Counter, defaultdict
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import tt_adapter as tt
from wheel import BenchError, cache_dir, include_dir

FILES = (
    "aten/src/ATen/native/ReduceOps.cpp",
    "aten/src/ATen/native/cpu/SoftMaxKernel.cpp",
    "aten/src/ATen/native/TensorShape.cpp",
    "aten/src/ATen/native/TensorFactories.cpp",
    "aten/src/ATen/native/Normalization.cpp",
    "aten/src/ATen/native/group_norm.cpp",
    "aten/src/ATen/native/Activation.cpp",
    "aten/src/ATen/native/TensorAdvancedIndexing.cpp",
    "aten/src/ATen/native/sparse/SparseTensor.cpp",
    "aten/src/ATen/native/quantized/QTensor.cpp",
    "aten/src/ATen/TensorIterator.cpp",
    "aten/src/ATen/functorch/BatchRulesReduceOps.cpp",
    "torch/csrc/autograd/FunctionsManual.cpp",
)
EXTRACTOR_VERSION = "14"
EXAMPLES = 3
DISPATCH_HEADER = re.compile(r"ATen/ops/(\w+?)_(cpu|cuda|meta|mps|compositeexplicitautograd|"
                             r"compositeexplicitautogradnonfunctional|compositeimplicitautograd|"
                             r"compositeimplicitautogradnestedtensor)_dispatch\.h$")
OPS_HEADER = re.compile(r"ATen/ops/(\w+)\.h$")


# ================================================================== libclang side (worker processes)

def _clang():
    try:
        import clang.cindex as ci
        ci.Index.create()
    except Exception as exc:  # noqa: BLE001 - ImportError, LibclangError: one line either way
        raise BenchError(f"libclang is not usable ({type(exc).__name__}: {str(exc).splitlines()[0][:120]}); "
                         "pip install 'libclang>=18.1,<19'") from None
    return ci


def resource_dir(explicit: str | None) -> str:
    if explicit:
        if not Path(explicit, "stddef.h").exists():
            raise BenchError(f"--resource-dir {explicit} has no stddef.h (want clang's resource include dir)")
        return explicit
    found = sorted(glob.glob("/usr/lib/llvm-*/lib/clang/*/include/stddef.h"),
                   key=lambda p: [int(x) for x in re.findall(r"\d+", p)[:2]])
    if not found:
        raise BenchError("no clang resource headers found (apt-get install libclang-common-16-dev, "
                         "or pass --resource-dir DIR containing stddef.h)")
    return str(Path(found[-1]).parent)


def stub_dir() -> Path:
    """Empty stand-ins for third-party headers the wheel does not ship (ideep)."""
    d = cache_dir() / "stubs"
    for rel in ("ideep.hpp", "ideep/tensor.hpp", "ideep/utils.hpp"):
        p = d / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        if not p.exists():
            p.write_text("#pragma once\n")
    return d


def clang_flags(tree: Path, wheel_inc: Path, resources: str) -> list[str]:
    return ["-x", "c++", "-std=c++17", "-DCPU_CAPABILITY=DEFAULT", "-DAT_PER_OPERATOR_HEADERS",
            f"-I{tree}/aten/src", f"-I{tree}", f"-I{tree}/torch/csrc/api/include", f"-I{tree}/functorch",
            f"-I{wheel_inc}", f"-I{wheel_inc}/torch/csrc/api/include", f"-I{stub_dir()}",
            "-isystem", resources, "-Wno-everything"]


_FUNC_KINDS = ("FUNCTION_DECL", "CXX_METHOD", "CONSTRUCTOR", "DESTRUCTOR", "FUNCTION_TEMPLATE",
               "CONVERSION_FUNCTION")
_SCOPE_KINDS = ("NAMESPACE", "CLASS_DECL", "STRUCT_DECL", "UNION_DECL", "CLASS_TEMPLATE",
                "CLASS_TEMPLATE_PARTIAL_SPECIALIZATION", "ENUM_DECL")


class _Extractor:
    def __init__(self, ci, tu, main: str, tree: Path, wheel_inc: Path):
        self.ci, self.tu, self.main = ci, tu, main
        self.tree, self.wheel_inc = str(tree) + "/", str(wheel_inc) + "/"
        self.lines = Path(main).read_text(encoding="utf-8", errors="replace").splitlines()
        self.op_cache: dict[str, list[str]] = {}
        self._text: dict[str, list[str]] = {}
        import ctypes
        self.ct = ctypes
        fn = ci.conf.lib.clang_getSpellingLocation
        fn.argtypes = [ci.SourceLocation, ctypes.POINTER(ci.c_object_p), ctypes.POINTER(ctypes.c_uint),
                       ctypes.POINTER(ctypes.c_uint), ctypes.POINTER(ctypes.c_uint)]
        self._spell = fn

    def spelling(self, loc) -> tuple[str, int]:
        ct = self.ct
        f, line, col, off = self.ci.c_object_p(), ct.c_uint(), ct.c_uint(), ct.c_uint()
        self._spell(loc, ct.byref(f), ct.byref(line), ct.byref(col), ct.byref(off))
        return (self.ci.File(f).name if f else ""), int(line.value)

    def qualname(self, c) -> str:
        parts = [c.spelling]
        p = c.semantic_parent
        while p is not None and p.kind.name != "TRANSLATION_UNIT":
            if p.kind.name in _SCOPE_KINDS:
                parts.append(p.spelling or "(anonymous)")
            p = p.semantic_parent
        return "::".join(reversed(parts))

    def template_line(self, gen_path: str, line: int) -> tuple[str, int] | None:
        """A line of a generated header (TensorBody.h, Functions.h) found verbatim in the tree's template."""
        tpl = f"{self.tree}aten/src/ATen/templates/{Path(gen_path).name}"
        if not os.path.exists(tpl):
            return None
        if gen_path not in self._text:
            self._text[gen_path] = Path(gen_path).read_text(encoding="utf-8", errors="replace").splitlines()
        if tpl not in self._text:
            self._text[tpl] = Path(tpl).read_text(encoding="utf-8", errors="replace").splitlines()
        gen, tpl_lines = self._text[gen_path], self._text[tpl]
        if not 0 < line <= len(gen) or not gen[line - 1].strip():
            return None
        want = gen[line - 1].strip()
        hits = [i for i, t in enumerate(tpl_lines, 1) if t.strip() == want]
        return (tpl[len(self.tree):], hits[0]) if len(hits) == 1 else None

    def where(self, path: str, line: int = 0) -> tuple[str, str]:
        """(area, path relative to its root [:line]): tree | generated | system. A line of a generated
        header copied from the tree's template (aten/src/ATen/templates/) is placed in the template."""
        if path.startswith(self.wheel_inc):
            rel = path[len(self.wheel_inc):]
            for pre in ("aten/src/", "", "torch/csrc/api/include/"):
                if os.path.exists(self.tree + pre + rel):
                    return "tree", pre + rel  # a copy of a tree header shipped in the wheel
            if line:
                t = self.template_line(path, line)
                if t:
                    return "tree", f"{t[0]}:{t[1]}"
            return "generated", rel
        if path.startswith(self.tree):
            return "tree", path[len(self.tree):]
        return "system", path

    def op_of(self, ref) -> tuple[list[str], str]:
        """(op full names, form) when ref is a generated op entry point, else ([], "")."""
        decl_file = ref.location.file.name if ref.location.file else ""
        area, rel = self.where(decl_file)
        if area != "generated":
            return [], ""
        parent = ref.semantic_parent
        pq = self.qualname(parent) if parent is not None else ""
        if pq.startswith("at::_ops::") and ref.spelling in ("call", "redispatch"):
            return [f"@struct:{parent.spelling}"], "at::_ops"
        m = DISPATCH_HEADER.search(rel)
        if m:
            return [f"@base:{m.group(1)}"], f"at::{m.group(2)}"
        if not (OPS_HEADER.search(rel) or rel.endswith(("ATen/core/TensorBody.h", "ATen/Functions.h",
                                                         "ATen/RedispatchFunctions.h"))):
            return [], ""
        usr = ref.get_usr()
        if usr not in self.op_cache:
            self.op_cache[usr] = self._ops_in_body(ref, depth=3)
        found = self.op_cache[usr]
        if not found:
            return [], ""
        form = ("Tensor method" if rel.endswith("TensorBody.h") else
                "at::redispatch" if "RedispatchFunctions" in rel else "at::X")
        return found, form

    def _ops_in_body(self, fn, depth: int) -> list[str]:
        """at::_ops structs this inline function calls; follows helpers named after it (contiguous ->
        __dispatch_contiguous) one level, so conditional dispatch counts as an op call."""
        body = fn.get_definition()
        found: list[str] = []
        if body is None:
            return found
        helpers = []
        for d in body.walk_preorder():
            if d.kind.name not in ("CALL_EXPR", "DECL_REF_EXPR", "MEMBER_REF_EXPR") or d.referenced is None:
                continue
            r = d.referenced
            if r.spelling in ("call", "redispatch") and r.semantic_parent is not None and \
                    self.qualname(r.semantic_parent).startswith("at::_ops::"):
                s = f"@struct:{r.semantic_parent.spelling}"
                if s not in found:
                    found.append(s)
            elif r.spelling.startswith("__dispatch_") and r.kind.name in _FUNC_KINDS:
                # TensorBase::contiguous -> __dispatch_contiguous, defined out of line in ATen/core/Tensor.cpp
                s = f"@base:{r.spelling.removeprefix('__dispatch_')}"
                if s not in found:
                    found.append(s)
            elif depth > 1 and r.kind.name in _FUNC_KINDS and fn.spelling in r.spelling and r != fn:
                helpers.append(r)
        if not found:
            for r in helpers:
                found += [s for s in self._ops_in_body(r, depth - 1) if s not in found]
        return found

    def line_has(self, line: int, name: str) -> bool:
        return 0 < line <= len(self.lines) and re.search(rf"\b{re.escape(name)}\b", self.lines[line - 1]) is not None

    def functions(self):
        """Function definitions in the main file (not nested in another function's body)."""
        def visit(c):
            for ch in c.get_children():
                f = ch.location.file
                if f is None or f.name != self.main:
                    continue
                k = ch.kind.name
                if k in _FUNC_KINDS and ch.is_definition():
                    yield ch
                elif k in _SCOPE_KINDS or k in ("LINKAGE_SPEC", "UNEXPOSED_DECL"):
                    yield from visit(ch)
        yield from visit(self.tu.cursor)

    def callee_token(self, call) -> str:
        """The name a dependent call calls, from its tokens: ``t.data_ptr<scalar_t>`` -> data_ptr (the last
        identifier outside template arguments of the callee expression)."""
        for callee in call.get_children():
            last, depth = "", 0
            for tok in callee.get_tokens():
                sp = tok.spelling
                if sp == "<":
                    depth += 1
                elif sp == ">" and depth:
                    depth -= 1
                elif sp == ">>" and depth:
                    depth = max(0, depth - 2)
                elif depth == 0 and tok.kind.name == "IDENTIFIER":
                    last = sp
            return last
        return ""

    def name_line(self, call, name: str) -> int:
        """Line (in the main file) where a call's callee name is written: a CALL_EXPR's own location is where
        the whole expression starts, which for ``TensorIteratorConfig()\n  .add_input(x)\n  .build()`` is not
        the line of ``build``. 0 if the name is not written in the main file (a macro's body)."""
        for callee in call.get_children():  # the callee expression comes first
            for x in callee.walk_preorder():
                if x.kind.name in ("MEMBER_REF_EXPR", "DECL_REF_EXPR", "OVERLOADED_DECL_REF") and x.spelling == name:
                    path, line = self.spelling(x.location)
                    return line if path == self.main else 0
            break
        return 0

    def caller_facts(self, fn) -> dict:
        calls, dependent = [], []
        for c in fn.walk_preorder():
            if c.kind.name != "CALL_EXPR":
                continue
            path, line = self.spelling(c.location)
            if path != self.main:
                continue  # from a macro's body
            ref = c.referenced
            if ref is None or ref.kind.name == "OVERLOADED_DECL_REF":
                name = c.spelling or self.callee_token(c)
                if name:
                    dependent.append({"line": line, "name": name})
                continue
            rk = ref.kind.name
            if rk not in _FUNC_KINDS:
                continue
            name = ref.spelling.split("<")[0]  # an explicit specialization is spelled "to<double>"
            if rk in ("CONSTRUCTOR", "DESTRUCTOR", "CONVERSION_FUNCTION") or name.startswith("operator"):
                kind = "ctor" if rk == "CONSTRUCTOR" else "operator"
                area = ""
                if kind == "operator":  # where the operator is written (its implicit reference), and whose it is
                    line = self.name_line(c, name) or line
                    area = self.where(ref.location.file.name if ref.location.file else "", ref.location.line)[0]
                    operands = len(list(ref.get_arguments())) + (rk == "CXX_METHOD" and not ref.is_static_method())
                    symbol = name[len("operator"):].strip()
                    text = self.lines[line - 1] if 0 < line <= len(self.lines) else ""
                    written = (symbol if symbol != "[]" else "[") in text
                    if not _modeled_operator(name, operands) or not written:
                        kind = "other_operator"  # assignment, dereference, ->, a range-for's implicit ones
                calls.append({"line": line, "name": name, "kind": kind, "qualname": self.qualname(ref),
                              "area": area, "decl": "", "def": "", "ops": [], "form": ""})
                continue
            at = self.name_line(c, name)
            if at:
                line = at  # a chain written over several lines: the line where this callee's name is
            if not self.line_has(line, name):
                continue  # implicit (range-for begin/end, ...)
            parent = ref.semantic_parent
            is_method = rk == "CXX_METHOD" and not ref.is_static_method() or (
                rk == "FUNCTION_TEMPLATE" and parent is not None and parent.kind.name != "NAMESPACE"
                and parent.kind.name in _SCOPE_KINDS)
            decl_file = ref.location.file.name if ref.location.file else ""
            area, rel = self.where(decl_file, ref.location.line)
            decl_loc = rel if re.search(r":\d+$", rel) else f"{rel}:{ref.location.line}"
            d = ref.get_definition()
            def_loc = ""
            if d is not None and d.location.file is not None:
                darea, drel = self.where(d.location.file.name, d.location.line)
                def_loc = drel if re.search(r":\d+$", drel) else f"{drel}:{d.location.line}"
                if area != "tree" and darea == "tree":
                    area, decl_loc = darea, def_loc
            ops, form = self.op_of(ref)
            if ops:
                area = "op"
            elif area == "generated" and re.search(r"ATen/ops/\w+_native\.h:|ATen/NativeFunctions\.h:|"
                                                   r"ATen/ops/\w+_meta\.h:", decl_loc):
                area = "tree"  # at::native kernels / meta classes: declared by torchgen, defined in the tree
            virtual = "pure" if rk == "CXX_METHOD" and ref.is_pure_virtual_method() else \
                "virtual" if rk == "CXX_METHOD" and ref.is_virtual_method() else ""
            calls.append({"line": line, "name": name, "kind": "method" if is_method else "function",
                          "qualname": self.qualname(ref), "area": area, "decl": decl_loc,
                          "def": def_loc, "ops": ops, "form": form, "virtual": virtual})
        ext = fn.extent
        return {"name": fn.spelling, "qualname": self.qualname(fn), "kind": fn.kind.name,
                "line": fn.location.line, "start": ext.start.line, "end": ext.end.line,
                "calls": calls, "dependent": dependent, "template": self.in_template(fn)}

    @staticmethod
    def in_template(fn) -> bool:
        """A function template, or a member of a class template: code libclang does not instantiate."""
        c = fn
        while c is not None and c.kind.name != "TRANSLATION_UNIT":
            if c.kind.name in ("FUNCTION_TEMPLATE", "CLASS_TEMPLATE", "CLASS_TEMPLATE_PARTIAL_SPECIALIZATION"):
                return True
            c = c.semantic_parent
        return False


# The operators TorchTalk records (extract/cpp_walk.QUERY): binary arithmetic and comparison, compound assignment,
# unary minus and complement, subscript. Not: assignment, dereference, ->, (), ++/--, !, && and ||, << and >>.
_BINARY = {"+", "-", "*", "/", "%", "^", "&", "|", "<", ">", "<=", ">=", "==", "!=",
           "+=", "-=", "*=", "/=", "%=", "^=", "&=", "|=", "[]"}


def _modeled_operator(name: str, operands: int) -> bool:
    symbol = name[len("operator"):].strip()
    return symbol in _BINARY and operands == 2 or symbol in ("-", "~") and operands == 1


def _op_structs(wheel_inc: Path) -> dict[str, str]:
    """at::_ops struct name -> op full name (name.overload), from the wheel's ATen/ops/*_ops.h (2.x writes
    ``static constexpr const char* name = "aten::fill_";``, 1.13 ``STATIC_CONSTEXPR_STR_INL_EXCEPT_WIN_CUDA(name,
    "aten::fill_")``)."""
    out = {}
    pat = re.compile(r'struct TORCH_API (\w+) \{.*?(?:name = |\(name, )"aten::(\w+)"\)?;?\s*'
                     r'(?:static constexpr const char\* overload_name = |STATIC_CONSTEXPR_STR_INL_EXCEPT_WIN_CUDA'
                     r'\(overload_name, )"(\w*)"', re.DOTALL)
    for p in (wheel_inc / "ATen" / "ops").glob("*_ops.h"):
        for m in pat.finditer(p.read_text(encoding="utf-8", errors="replace")):
            out[m.group(1)] = f"{m.group(2)}.{m.group(3)}" if m.group(3) else m.group(2)
    return out


def extract_file(tree: str, rel: str, flags: list[str], wheel_inc: str) -> dict:
    """Parse one TU with libclang and return its callers' facts (plain data, cacheable)."""
    ci = _clang()
    path = str(Path(tree) / rel)
    t0 = time.monotonic()
    tu = ci.Index.create().parse(path, args=flags)
    errors = [f"{d.location.file}:{d.location.line}: {d.spelling}" for d in tu.diagnostics if d.severity >= 3]
    t_parse = time.monotonic() - t0
    ex = _Extractor(ci, tu, path, Path(tree), Path(wheel_inc))
    callers = [ex.caller_facts(fn) for fn in ex.functions()]
    return {"file": rel, "errors": errors[:20], "n_errors": len(errors), "parse_s": round(t_parse, 1),
            "extract_s": round(time.monotonic() - t0 - t_parse, 1), "callers": callers}


def _extract_cached(args: tuple) -> dict:
    tree, rel, flags, wheel_inc, cache_path = args
    p = Path(cache_path)
    if p.exists():
        try:
            data = json.loads(p.read_text())
            data["cached"] = True
            return data
        except ValueError:
            pass
    data = extract_file(tree, rel, flags, wheel_inc)
    tmp = p.with_suffix(".tmp")
    tmp.write_text(json.dumps(data))
    tmp.replace(p)
    data["cached"] = False
    return data


def cache_key(tree: Path, rel: str, flags: list[str]) -> str:
    h = hashlib.sha256()
    h.update(f"{EXTRACTOR_VERSION}\0{tree}\0{rel}\0{' '.join(flags)}\0".encode())
    h.update((tree / rel).read_bytes())
    return h.hexdigest()[:24]


# ================================================================== comparison

def norm(q: str) -> str:
    q = re.sub(r"<[^<>]*(?:<[^<>]*>[^<>]*)*>", "", q)  # template arguments (two levels)
    parts = [p for p in q.strip(":").split("::") if p not in ("(anonymous)", "DEFAULT", "CPU_CAPABILITY", "")]
    return "::".join(parts)


def unpasted(q: str, called: list[str]) -> str:
    """A function a name-pasting macro makes is named by its pattern, each parameter between two '##'
    (c10::Scalar::to##name##); libclang names the instance the call reaches (toDouble, among ``called``,
    its calls on that line): the qualname with that name."""
    if "##" not in q:
        return q
    scope, _, last = q.rpartition("::")
    parts = last.split("##")
    regex = "".join(r"\w+" if i % 2 else re.escape(p) for i, p in enumerate(parts))
    name = next((n for n in called if re.fullmatch(regex, n)), "")
    return (f"{scope}::{name}" if scope else name) if name else q


def same_loc(a: str, b: str, slack: int = 1) -> bool:
    if not a or not b:
        return False
    pa, _, la = a.rpartition(":")
    pb, _, lb = b.rpartition(":")
    return pa.removeprefix("<generated>/") == pb.removeprefix("<generated>/") and abs(int(la) - int(lb)) <= slack


def match_callers(clang_callers: list[dict], tt_fns: list) -> dict[int, object]:
    """libclang caller index -> TorchTalk FunctionRef (definition line within 2 lines of its name or start)."""
    out = {}
    for i, c in enumerate(clang_callers):
        best = None
        for f in tt_fns:
            d = min(abs(f.line - c["line"]), abs(f.line - c["start"]))
            if d <= 2 and (best is None or d < best[0] or (d == best[0] and f.name == c["name"])):
                best = (d, f)
        if best:
            out[i] = best[1]
    return out


class Tally:
    def __init__(self):
        self.n = Counter()
        self.causes: dict[str, dict[str, list[str]]] = defaultdict(lambda: defaultdict(list))

    def miss(self, section: str, cause: str, example: str) -> None:
        self.causes[section][cause].append(example)

    def ratio(self, a: str, b: str) -> float | None:
        return round(self.n[a] / self.n[b], 3) if self.n[b] else None


def method_class(qualname: str) -> str:
    cls = norm(qualname).rsplit("::", 1)[0]
    if cls in ("at::TensorBase", "at::Tensor"):
        return "at::TensorBase / at::Tensor (accessors: sizes, dim, defined, scalar_type, ...)"
    if cls.startswith(("at::TensorIterator", "at::TensorIteratorBase", "at::TensorIteratorConfig")):
        return "at::TensorIterator* (config chains, iter.foo())"
    if cls.startswith("c10::"):
        return cls
    if cls.startswith("at::vec"):
        return "at::vec::Vectorized"
    return "other classes"


def using_declared(lines: list[str], name: str) -> bool:
    return any(re.match(rf"\s*using\s+[\w:]+::{re.escape(name)}\s*;", ln) for ln in lines)


def _operator_tally(tally: Tally, pairs: set[tuple[str, int]], other: set[tuple[str, int]], key: str,
                    section: str, cause: str, where: str) -> None:
    """Count ``pairs`` (operator, line) under ``key`` and those ``other`` has (within a line) under ``key``_ok;
    each one it has not is a miss of ``section``."""
    for q, line in pairs:
        tally.n[key] += 1
        if any((q, line + d) in other for d in (0, -1, 1)):
            tally.n[f"{key}_ok"] += 1
        else:
            tally.miss(section, cause, f"{where} line {line}: {q}")


def compare_caller(c: dict, cs: tt.CalleeSet, rel: str, src_lines: list[str], tally: Tally,
                   ops_of: dict[str, str]) -> dict:
    where = f"{rel}:{c['line']} {c['qualname']}"
    # ---- TorchTalk's side
    tt_resolved: dict[str, tuple] = {}  # norm qualname -> (site, defs)
    tt_operators: set[tuple[str, int]] = set()  # (norm qualname, line): compared apart
    for site, defs in cs.resolved:
        if defs and site.name.startswith("operator"):
            tt_operators.add((norm(defs[0].qualname), site.line))
        elif defs:
            near = [k["name"] for k in c["calls"] if abs(k["line"] - site.line) <= 1]
            tt_resolved.setdefault(unpasted(norm(defs[0].qualname), near), (site, defs))
    tt_ops: dict[str, tt.CallSite] = {}
    for site, names, _full in cs.ops:
        for n in names or [site.name]:
            tt_ops.setdefault(n, site)
    tt_sites_by_name = defaultdict(list)
    for site, defs in cs.resolved:
        tt_sites_by_name[site.name].append(("resolved", site, defs))
    for site, names, _f in cs.ops:
        tt_sites_by_name[site.name].append(("op", site, names))
    for site in cs.unresolved:
        tt_sites_by_name[site.name].append(("unresolved", site, None))
    for site, stub in cs.stubs:
        tt_sites_by_name[site.name].append(("stub", site, stub))

    def tt_view(name: str, line: int) -> tuple[str, object, object]:
        near = [v for v in tt_sites_by_name.get(name, []) if abs(v[1].line - line) <= 1]
        anywhere = tt_sites_by_name.get(name, [])
        return (near or anywhere or [("absent", None, None)])[0]

    # ---- libclang's side
    cl_tree: dict[str, dict] = {}
    cl_ops: dict[str, dict] = {}
    cl_all_names: dict[str, list[dict]] = defaultdict(list)
    for k in c["calls"]:
        cl_all_names[k["name"]].append(k)
        if k["kind"] in ("ctor", "operator", "other_operator"):
            continue
        if k["area"] == "tree":
            cl_tree.setdefault(norm(k["qualname"]), k)
        elif k["area"] == "op":
            for o in k["ops"]:
                base = (ops_of.get(o[8:], o[8:]) if o.startswith("@struct:") else o[6:]).split(".")[0]
                cl_ops.setdefault(base, k)
    dep_names = {d["name"] for d in c["dependent"]}
    detail = {"caller": where, "tt_caller": f"{cs.caller.qualname} {cs.caller.path}:{cs.caller.line}",
              "by_name": cs.by_name, "callee_misses": [], "callee_wrong": [], "op_misses": [], "op_wrong": [],
              "overload_misses": []}

    # ---- virtual calls (Note [Virtual calls]): a call of a pure virtual in-tree method runs an override; TorchTalk
    # lists the overrides of a method its class only declares, and those of a virtual method with a body (which may
    # have none); a method that is not virtual has none
    tt_virtual = {(site.name, site.line) for site, _defs in cs.overrides}
    for k in c["calls"]:
        if k.get("virtual") and k["area"] == "tree" and k["kind"] == "method":
            kind = "virtual_pure" if k["virtual"] == "pure" else "virtual_body"
            tally.n[kind] += 1
            if any((k["name"], k["line"] + d) in tt_virtual for d in (-1, 0, 1)):
                tally.n[f"{kind}_overrides"] += 1
            elif kind == "virtual_pure":
                tally.miss("virtual calls", "a call of a pure virtual method with no override listed",
                           f"{where} -> {k['qualname']} (line {k['line']})")
    for site, _defs in cs.overrides:
        tally.n["tt_virtual_sites"] += 1
        if any(k["name"] == site.name and abs(k["line"] - site.line) <= 1 and k.get("virtual")
               for k in c["calls"]):
            tally.n["tt_virtual_sites_ok"] += 1
        else:
            tally.miss("overrides libclang does not confirm", "the call's method is not virtual for libclang (or "
                       "libclang sees no call here)", f"{where} line {site.line}: {site.written}")

    # ---- in-tree callee recall
    for q, k in cl_tree.items():
        group = "method" if k["kind"] == "method" else "function"
        tally.n[f"tree_{group}"] += 1
        if q in tt_resolved:
            tally.n[f"tree_{group}_found"] += 1
            continue
        how, site, info = tt_view(k["name"], k["line"])
        ex = f"{where} -> {k['qualname']} (line {k['line']})"
        if how == "resolved":
            picked = info[0]
            cause = ("wrong pick: an internal-linkage (anonymous/static) function of another file"
                     if "(anonymous)" in picked.qualname and picked.path != rel else
                     "wrong pick: another function of the same name (namespace/class lookup)")
            ex += f"; TorchTalk: {picked.qualname} {picked.path}:{picked.line}"
        elif how == "op":
            cause = "taken for a dispatcher op (an in-tree function of an op's name)"
            ex += f"; TorchTalk: op {info}"
        elif how == "stub":
            cause = "taken for a DispatchStub"
        elif how == "unresolved":
            if group == "method":
                cause = "method call left unresolved (receiver's type not known)"
                tally.miss("unresolved method calls by the callee's class", method_class(k["qualname"]), ex)
            elif using_declared(src_lines, k["name"]):
                cause = "unresolved: name brought in by a using-declaration (using ns::f;)"
            elif site is not None and site.written.count("::") == 0 and k["qualname"].split("::")[0] not in \
                    c["qualname"].split("::"):
                cause = "unresolved: unqualified call found by argument-dependent lookup or a using-directive"
            elif site is not None and "::" in site.written and site.written.rsplit("::", 1)[0].split("::")[-1] \
                    != k["qualname"].rsplit("::", 1)[0].split("::")[-1] and site.written.split("::")[0] in (
                    "at", "c10", "torch", "native"):
                cause = ("unresolved: ns::f where f is declared in another namespace and re-exported by a "
                         "using-declaration (e.g. namespace at { using c10::f; })")
            elif site is not None and "::" in site.written and site.written.split("::")[0] not in \
                    ("at", "c10", "torch", "std"):
                cause = "unresolved: qualified through a class or namespace alias (X::f)"
            else:
                cause = "unresolved: other"
            if site is not None:
                ex += f"; written {site.written}"
        elif k["name"] in cs.macros:
            cause = "taken for a macro (all-caps or AT_/C10_/TORCH_ name)"
        else:
            cause = "call site not in TorchTalk's call list"
        tally.miss(f"in-tree callee misses ({group}s)", cause, ex)
        detail["callee_misses"].append({"callee": k["qualname"], "line": k["line"], "cause": cause})

    # ---- operators
    cl_operators = {(norm(k["qualname"]), k["line"]) for k in c["calls"] if k["kind"] == "operator"
                    and k["area"] == "tree"}
    checkable = {(q, line) for q, line in tt_operators if not c.get("template") or any(
        k["kind"] == "operator" and abs(k["line"] - line) <= 1 for k in c["calls"])}  # libclang made the call
    _operator_tally(tally, cl_operators, tt_operators, "operators", "operator misses",
                    "libclang's in-tree operator call not resolved to it", where)
    _operator_tally(tally, checkable, cl_operators, "tt_operators", "operators libclang does not confirm",
                    "TorchTalk's operator call not libclang's", where)

    # ---- in-tree callee precision
    for q, (site, defs) in tt_resolved.items():
        if q in cl_tree:
            tally.n["tt_resolved"] += 1
            tally.n["tt_resolved_ok"] += 1
            continue
        same = [k for k in cl_all_names.get(site.name, []) if abs(k["line"] - site.line) <= 1] or \
            cl_all_names.get(site.name, [])
        if not same and (site.name in dep_names or c.get("template")):
            # in an uninstantiated template libclang leaves calls unresolved, or out of its AST: not checkable
            tally.n["tt_resolved_unverifiable"] += 1
            continue
        if any(k["kind"] == "ctor" and q in (norm(k["qualname"]), norm(k["qualname"]).rsplit("::", 1)[0])
               for k in same):
            # `Tensor(...)` resolved to its class's constructor (or named as its class): constructor calls are
            # left out on both sides (see the docstring)
            tally.n["tt_resolved_ctor"] += 1
            continue
        tally.n["tt_resolved"] += 1
        ex = f"{where} line {site.line}: {site.written} -> TorchTalk {defs[0].qualname} {defs[0].path}:{defs[0].line}"
        if same:
            k = same[0]
            ex += f"; libclang: {k['qualname']} ({k['area'] or k['kind']})"
            if k["kind"] in ("ctor", "operator", "other_operator"):
                cause = "libclang: a constructor or operator call, not a function call"
            elif k["area"] == "op":
                cause = "an op entry point (at::X) resolved as a direct call to an in-tree helper of that name"
            elif k["area"] == "system":
                cause = ("wrong pick: libclang calls a std/system function (TorchTalk picked a same-named "
                         "overload or specialization in the tree)")
            elif norm(k["qualname"]) == q:
                cause = "libclang agrees on the name but the callee is declared only in a generated header"
            elif "(anonymous)" in defs[0].qualname and defs[0].path != rel:
                cause = "wrong pick: an internal-linkage (anonymous/static) function of another file"
            elif k["kind"] == "method":
                cause = "wrong pick: a method taken for another function or method of the same name"
            else:
                cause = "wrong pick: another function of the same name (namespace/class lookup)"
        else:
            cause = "libclang sees no call of that name here (code in a disabled #if branch, macro text, template)"
        tally.miss("resolved callees libclang does not confirm", cause, ex)
        detail["callee_wrong"].append({"written": site.written, "line": site.line, "tt": defs[0].qualname,
                                       "cause": cause})

    # ---- overload / location agreement
    for q, k in cl_tree.items():
        if q not in tt_resolved or not k["def"]:
            continue
        site, defs = tt_resolved[q]
        several = len(defs) > 1
        tally.n["loc_sites"] += 1
        tally.n["loc_multi"] += several
        if same_loc(f"{defs[0].path}:{defs[0].line}", k["def"]):
            tally.n["loc_ok"] += 1
            tally.n["loc_multi_ok"] += several
        else:
            listed = any(same_loc(f"{d.path}:{d.line}", k["def"]) for d in defs)
            cause = ("libclang's choice is listed, but not first" if listed else
                     "libclang's choice is not among TorchTalk's candidates")
            tally.miss("overload / definition picked", cause,
                       f"{where} line {site.line}: {site.written} -> TorchTalk {defs[0].path}:{defs[0].line}"
                       f" ({len(defs)} listed); libclang {k['def']}")
            detail["overload_misses"].append({"written": site.written, "line": site.line, "cause": cause,
                                              "tt": [f"{d.path}:{d.line}" for d in defs], "libclang": k["def"]})

    # ---- op calls
    for op, k in cl_ops.items():
        tally.n["ops"] += 1
        if op in tt_ops:
            tally.n["ops_found"] += 1
            continue
        how, site, info = tt_view(k["name"], k["line"])
        ex = f"{where} line {k['line']}: {k['qualname']} -> op {op} ({k['form']})"
        if how == "op" and k["name"] in (info or []):
            cause = ("hand-written C++ entry point (manual_cpp_binding, e.g. Tensor::conj) that calls other ops "
                     "directly; TorchTalk names the op of the method's own name")
            ex += f"; TorchTalk: {info}"
        elif how == "op":
            cause = "mapped to another op"
            ex += f"; TorchTalk: {info}"
        elif how == "resolved":
            cause = f"resolved as a direct call instead of the op ({k['form']})"
            ex += f"; TorchTalk: {info[0].qualname}"
        elif how == "unresolved":
            if k["form"] == "Tensor method":
                cause = "Tensor method call unresolved (receiver not recognised as a Tensor)"
            elif k["name"].endswith("_symint"):
                cause = "unresolved: at::X_symint spelling"
            elif k["form"] in ("at::_ops", "at::redispatch") or k["form"].startswith("at::c"):
                cause = f"unresolved: {k['form']} spelling"
            else:
                cause = f"unresolved: {k['form']} call"
            if site is not None:
                ex += f"; written {site.written}"
        elif how == "stub":
            cause = "taken for a DispatchStub"
        else:
            cause = "call site not in TorchTalk's call list"
        tally.miss("op call misses", cause, ex)
        detail["op_misses"].append({"op": op, "line": k["line"], "cause": cause})
    for op, site in tt_ops.items():
        tally.n["tt_ops"] += 1
        if op in cl_ops:
            tally.n["tt_ops_ok"] += 1
            continue
        same = [k for k in cl_all_names.get(site.name, []) if abs(k["line"] - site.line) <= 1] or \
            cl_all_names.get(site.name, [])
        ex = f"{where} line {site.line}: {site.written} -> TorchTalk op {op}"
        if same:
            k = same[0]
            ex += f"; libclang: {k['qualname']} ({k['area'] or k['kind']})"
            if k["area"] == "op" and op == k["name"]:
                cause = ("hand-written C++ entry point (manual_cpp_binding, e.g. Tensor::conj) that calls other ops "
                         "directly; TorchTalk names the op of the method's own name")
            elif k["area"] == "op":
                cause = "libclang: another op"
            elif k["area"] == "generated" and "TensorBody.h" in k["decl"]:
                cause = "a header-only Tensor accessor (TensorBody.h, no dispatch) reported as an op"
            elif k["area"] == "tree" and k["kind"] == "method":
                cause = "an in-tree method (TensorBase accessor, TensorIterator, Vectorized, ...) reported as an op"
            elif k["area"] == "tree":
                cause = "an in-tree function of an op's name reported as an op"
            else:
                cause = f"libclang: a {k['area'] or k['kind']} function, not an op"
        elif site.name in dep_names or c.get("template"):
            tally.n["tt_ops"] -= 1
            tally.n["tt_ops_unverifiable"] += 1
            continue
        else:
            cause = "libclang sees no call of that name here (disabled #if branch, macro text)"
        tally.miss("ops TorchTalk reports that libclang does not confirm", cause, ex)
        detail["op_wrong"].append({"op": op, "line": site.line, "cause": cause})
    compare_op_overloads(c, cs, where, tally, ops_of, detail)
    return detail


def compare_op_overloads(c: dict, cs: tt.CalleeSet, where: str, tally: Tally, ops_of: dict[str, str],
                         detail: dict) -> None:
    """Op overloads, per call site both sides see as a call of the same op (same base name, the same line or
    the next): libclang's overload (its at::_ops struct) among TorchTalk's listed ones (recall), and the share
    of the overloads TorchTalk lists there that libclang calls (precision)."""
    cl: dict[tuple[int, str], set[str]] = defaultdict(set)
    for k in c["calls"]:
        if k["area"] == "op" and k["ops"] and all(o.startswith("@struct:") for o in k["ops"]):
            for o in k["ops"]:
                full = ops_of.get(o[8:])
                if full:
                    cl[(k["line"], full.split(".")[0])].add(full)
    ours: dict[tuple[int, str], set[str]] = defaultdict(set)
    for site, _names, full in cs.ops:
        for f in full:
            ours[(site.line, f.split(".")[0])].add(f)
    for (line, base), theirs in cl.items():
        listed = ours.get((line, base)) or ours.get((line - 1, base)) or ours.get((line + 1, base))
        if not listed:
            continue
        tally.n["ovl_ops"] += 1
        tally.n["ovl_ops_found"] += bool(theirs & listed)
        tally.n["tt_ovl_ops"] += len(listed)
        tally.n["tt_ovl_ops_ok"] += len(listed & theirs)
        tally.n["ovl_ops_exact"] += listed == theirs
        if listed != theirs:
            cause = "libclang's overload not listed" if not theirs & listed else "other overloads listed too"
            tally.miss("op overloads", cause, f"{where} line {line}: {base}: TorchTalk {sorted(listed)}; "
                       f"libclang {sorted(theirs)}")
            detail.setdefault("op_overload_misses", []).append(
                {"line": line, "tt": sorted(listed), "libclang": sorted(theirs)})


# ================================================================== run

def run(args) -> dict:
    t0 = time.monotonic()
    h = tt.open_index(args.source)
    tree = h.root
    _clang()
    wheel_inc = include_dir(args.version)
    flags = clang_flags(tree, wheel_inc, resource_dir(args.resource_dir))
    files = args.files or list(FILES)
    for rel in files:
        if not (tree / rel).is_file():
            raise BenchError(f"{rel} is not a file of {tree}")
    cdir = cache_dir() / "resolution"
    cdir.mkdir(parents=True, exist_ok=True)
    jobs = [(str(tree), rel, flags, str(wheel_inc), str(cdir / f"{cache_key(tree, rel, flags)}.json"))
            for rel in files]
    t1 = time.monotonic()
    if args.jobs > 1 and len(jobs) > 1:
        with ProcessPoolExecutor(max_workers=args.jobs) as pool:
            facts = list(pool.map(_extract_cached, jobs))
    else:
        facts = [_extract_cached(j) for j in jobs]
    t_clang = time.monotonic() - t1
    ops_of = _op_structs(wheel_inc)

    t2 = time.monotonic()
    overall = Tally()
    per_file, callers_out = [], []
    unmatched: list[str] = []
    not_by_name = 0
    for f in facts:
        rel = f["file"]
        tally = Tally()
        src_lines = (tree / rel).read_text(encoding="utf-8", errors="replace").splitlines()
        tt_fns = tt.functions_in_file(h, rel)
        matched = match_callers(f["callers"], tt_fns)
        for i, c in enumerate(f["callers"]):
            relevant = any(k["area"] in ("tree", "op") and k["kind"] not in ("ctor", "operator", "other_operator")
                           for k in c["calls"])
            if i not in matched:
                if relevant:
                    tally.n["callers_unmatched"] += 1
                    unmatched.append(f"{rel}:{c['line']} {c['qualname']}")
                continue
            tally.n["callers"] += 1
            cs = tt.calls_of(h, matched[i])
            not_by_name += not cs.by_name
            d = compare_caller(c, cs, rel, src_lines, tally, ops_of)
            callers_out.append(d)
        for key, v in tally.n.items():
            overall.n[key] += v
        for sec, causes in tally.causes.items():
            for cause, exs in causes.items():
                overall.causes[sec][cause] += exs
        per_file.append({"file": rel, "clang_errors": f["n_errors"], "parse_s": f["parse_s"],
                         "cached": f["cached"], "callers": tally.n["callers"],
                         "callers_unmatched": tally.n["callers_unmatched"], **figures(tally)})
    t_cmp = time.monotonic() - t2
    return {"source": str(tree), "version": args.version, "index": tt.status_line(h), "flags": flags,
            "files": per_file, "overall": {"callers": overall.n["callers"],
                                           "callers_unmatched": overall.n["callers_unmatched"],
                                           "callers_not_addressable_by_name": not_by_name, **figures(overall)},
            "causes": {sec: {c: {"count": len(v), "examples": v} for c, v in
                             sorted(causes.items(), key=lambda kv: -len(kv[1]))}
                       for sec, causes in overall.causes.items()},
            "unmatched_callers": unmatched, "callers": callers_out,
            "clang_errors": {f["file"]: f["errors"] for f in facts if f["errors"]},
            "seconds": {"libclang": round(t_clang, 1), "compare": round(t_cmp, 1),
                        "total": round(time.monotonic() - t0, 1),
                        "libclang_parse_cold": {f["file"]: f["parse_s"] for f in facts}}}


def figures(t: Tally) -> dict:
    n = t.n
    tree_all = n["tree_method"] + n["tree_function"]
    found_all = n["tree_method_found"] + n["tree_function_found"]
    return {
        "callee_recall": round(found_all / tree_all, 3) if tree_all else None,
        "callee_pairs": tree_all,
        "callee_recall_methods": t.ratio("tree_method_found", "tree_method"), "method_pairs": n["tree_method"],
        "callee_recall_functions": t.ratio("tree_function_found", "tree_function"),
        "function_pairs": n["tree_function"],
        "callee_precision": t.ratio("tt_resolved_ok", "tt_resolved"), "tt_resolved_pairs": n["tt_resolved"],
        "tt_resolved_unverifiable": n["tt_resolved_unverifiable"], "tt_resolved_ctor": n["tt_resolved_ctor"],
        "op_recall": t.ratio("ops_found", "ops"), "op_pairs": n["ops"],
        "op_precision": t.ratio("tt_ops_ok", "tt_ops"), "tt_op_pairs": n["tt_ops"],
        "tt_ops_unverifiable": n["tt_ops_unverifiable"],
        "op_overload_recall": t.ratio("ovl_ops_found", "ovl_ops"), "op_overload_sites": n["ovl_ops"],
        "op_overload_precision": t.ratio("tt_ovl_ops_ok", "tt_ovl_ops"), "tt_op_overloads": n["tt_ovl_ops"],
        "op_overload_exact": t.ratio("ovl_ops_exact", "ovl_ops"),
        "definition_agreement": t.ratio("loc_ok", "loc_sites"), "definition_sites": n["loc_sites"],
        "overload_right": t.ratio("loc_multi_ok", "loc_multi"), "overload_sites": n["loc_multi"],
        "operator_recall": t.ratio("operators_ok", "operators"), "operator_pairs": n["operators"],
        "operator_precision": t.ratio("tt_operators_ok", "tt_operators"), "tt_operator_pairs": n["tt_operators"],
        "virtual_pure_recall": t.ratio("virtual_pure_overrides", "virtual_pure"), "virtual_pure": n["virtual_pure"],
        "virtual_body": n["virtual_body"], "virtual_body_overrides": n["virtual_body_overrides"],
        "virtual_precision": t.ratio("tt_virtual_sites_ok", "tt_virtual_sites"),
        "tt_virtual_sites": n["tt_virtual_sites"],
    }


def print_report(r: dict) -> None:
    def f(v: float | None) -> str:
        return "  -  " if v is None else f"{v:5.3f}"

    print(f"TorchTalk call resolution vs libclang  ({r['index']})")
    head = (f"{'file':44} {'callers':>7} {'recall':>6} {'meth':>6} {'func':>6} {'prec':>6} "
            f"{'opRec':>6} {'opPrec':>6} {'ovl':>6}  pairs(tree/ops)")
    print(head)
    print("-" * len(head))
    rows = [*r["files"], {"file": "OVERALL", **r["overall"]}]
    for x in rows:
        name = x["file"].removeprefix("aten/src/ATen/")
        print(f"{name[-44:]:44} {x['callers']:7} {f(x['callee_recall'])} {f(x['callee_recall_methods'])} "
              f"{f(x['callee_recall_functions'])} {f(x['callee_precision'])} {f(x['op_recall'])} "
              f"{f(x['op_precision'])} {f(x['overload_right'])}  {x['callee_pairs']}/{x['op_pairs']}")
    o = r["overall"]
    print(f"in-tree callee pairs: {o['callee_pairs']} ({o['method_pairs']} methods, {o['function_pairs']} functions);"
          f" TorchTalk resolved pairs: {o['tt_resolved_pairs']} (not counted: {o['tt_resolved_unverifiable']} "
          f"dependent in templates, {o['tt_resolved_ctor']} constructor calls)")
    print(f"op pairs: {o['op_pairs']}; TorchTalk op pairs: {o['tt_op_pairs']} (+{o['tt_ops_unverifiable']} "
          f"unverifiable)")
    print(f"op overloads at {o['op_overload_sites']} op call sites both name: libclang's listed at "
          f"{f(o['op_overload_recall'])}, precision {f(o['op_overload_precision'])} of the {o['tt_op_overloads']} "
          f"TorchTalk lists, exactly libclang's at {f(o['op_overload_exact'])}")
    print(f"operators (in-tree overloads): recall {f(o['operator_recall'])} of {o['operator_pairs']}, precision "
          f"{f(o['operator_precision'])} of {o['tt_operator_pairs']}")
    print(f"virtual calls: overrides listed at {f(o['virtual_pure_recall'])} of {o['virtual_pure']} calls of pure "
          f"virtual in-tree methods; {f(o['virtual_precision'])} of TorchTalk's {o['tt_virtual_sites']} sites with "
          f"overrides call a virtual method; calls of virtual methods with a body: overrides listed at "
          f"{o['virtual_body_overrides']} of {o['virtual_body']} (a method no class of the tree overrides has none)")
    print(f"definition picked = libclang's: {f(o['definition_agreement'])} of {o['definition_sites']} sites; "
          f"where TorchTalk listed several: {f(o['overload_right'])} of {o['overload_sites']}")
    print(f"callers: {o['callers']} matched, {o['callers_unmatched']} with in-tree/op calls not found in TorchTalk; "
          f"{o['callers_not_addressable_by_name']} not reachable by calls(<qualname>) (another overload answers)")
    for sec, causes in r["causes"].items():
        total = sum(v["count"] for v in causes.values())
        print(f"\n{sec}: {total}")
        for c, v in causes.items():
            print(f"  {v['count']:5}  {c}")
            for ex in v["examples"][:EXAMPLES]:
                print(f"           e.g. {ex[:220]}")
    s = r["seconds"]
    print(f"\ntime: {s['total']} s (libclang {s['libclang']} s, compare {s['compare']} s); cold parse per file: "
          + ", ".join(f"{Path(k).name} {v}s" for k, v in s["libclang_parse_cold"].items()))


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--source", default=os.environ.get("TORCHTALK_SOURCE"),
                    help="the PyTorch tree TorchTalk indexed (default $TORCHTALK_SOURCE)")
    ap.add_argument("--version", default="2.6.0", help="torch release whose wheel gives the generated headers")
    ap.add_argument("--files", nargs="+", help="translation units to measure, relative to the tree")
    ap.add_argument("--resource-dir", help="clang resource include dir (default: newest /usr/lib/llvm-*/...)")
    ap.add_argument("--jobs", type=int, default=2, help="libclang processes (default 2)")
    ap.add_argument("--json", metavar="OUT", help="write per-caller details and all miss lists here")
    args = ap.parse_args(argv)
    if not args.source:
        print("bench_resolution: give --source /path/to/pytorch (or set TORCHTALK_SOURCE)", file=sys.stderr)
        return 2
    try:
        r = run(args)
    except (BenchError, tt.AdapterError) as exc:
        print(f"bench_resolution: {exc}", file=sys.stderr)
        return 2
    print_report(r)
    if args.json:
        Path(args.json).write_text(json.dumps(r, indent=1))
        print(f"wrote {args.json}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
