#!/usr/bin/env python3
"""An op's kernel among the overloads of its name, against torchgen: the signature the build declares.

    python benchmarks/bench_kernel_overloads.py --source PATH [--json OUT]

A dispatch table names a kernel by its C++ name (``CompositeExplicitAutograd: arange``), and
at::native often overloads that name: ``arange``, ``arange.start`` and ``arange.start_step``
each name ``arange``, and each takes a different one of its three overloads. The reference is
the tree's own torchgen (imported from the tree, as the build runs it): for every native function
and every backend whose kernel is not structured, ``NativeSignature(func).arguments()`` is the
declaration the build writes into ``<op>_native.h`` (the wheel's headers hold the same text). For
each dispatch entry whose kernel name has definitions of two or more signatures in the tree,
``trace(op, focus="dispatch")`` is asked over MCP stdio (tt_adapter.McpStdio) and its definitions
for that entry are compared by parameter types (namespaces, ``const`` and ``&`` left out):

- exact: the answer lists only definitions of torchgen's signature;
- holds it: it lists one of that signature and others its types did not tell apart;
- wrong: none it lists has that signature;
- no definition of the tree has that signature (the name's definitions differ in spelling: not scored).
"""

from __future__ import annotations

import json
import os
import re
import sys
import time
from collections import Counter, defaultdict
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
import tt_adapter as tt  # noqa: E402


def bare(t: str) -> str:
    """A C++ parameter type without namespaces, const, references or spaces (as both sides spell it)."""
    t = re.sub(r"\b(const|struct|typename)\b", "", t).replace("&", "").replace(" ", "")
    t = re.sub(r"(::)?\b(at|c10|std)::", "", t)
    t = t.replace("ArrayRef<int64_t>", "IntArrayRef").replace("ArrayRef<SymInt>", "SymIntArrayRef")
    t = t.replace("ArrayRef<Tensor>", "TensorList").replace("optional<IntArrayRef>", "OptionalIntArrayRef")
    return {"SparseTensor": "Tensor", "IntList": "IntArrayRef"}.get(t, t)


def param_types(params: str) -> list[str]:
    """``(const Tensor& self, IntArrayRef dim = {})`` -> ["Tensor", "IntArrayRef"] (names and defaults dropped)."""
    body = params.strip()[1:-1] if params.strip().startswith("(") else params
    out, depth, cur = [], 0, ""
    for ch in body + ",":
        if ch == "," and depth == 0:
            if cur.strip():
                decl = cur.split("=")[0].strip()
                m = re.match(r"(.*?)(\b\w+)\s*$", decl)
                out.append(bare(m.group(1) if m and m.group(1).strip() else decl))
            cur = ""
            continue
        depth += ch in "<([{"
        depth -= ch in ">)]}"
        cur += ch
    return out


def torchgen_entries(root: Path) -> list[tuple[str, str, str, list[str]]]:
    """(op full name, dispatch key, kernel, torchgen's native parameter types) of every non-structured kernel."""
    sys.path.insert(0, str(root))
    from torchgen import local
    from torchgen.api.types import NativeSignature
    from torchgen.gen import parse_native_yaml
    native = root / "aten/src/ATen/native"
    parsed = parse_native_yaml(str(native / "native_functions.yaml"), str(native / "tags.yaml"))
    out = []
    for f in parsed.native_functions:
        for key, index in parsed.backend_indices.items():
            m = index.get_kernel(f)
            if m is None or m.structured:
                continue
            sig = NativeSignature(f.func, prefix="", symint=m.supports_symint())
            with local.parametrize(use_const_ref_for_mutable_tensors=f.use_const_ref_for_mutable_tensors,
                                   use_ilistref_for_tensor_lists=f.part_of_structured_group):
                out.append((str(f.func.name), str(key), m.kernel, [bare(a.type) for a in sig.arguments()]))
    return out


def main(argv: list[str] | None = None) -> int:
    args = tt.bench_args(__doc__, argv)
    t0 = time.monotonic()
    try:
        h = tt.open_index(args.source)
    except tt.AdapterError as exc:
        print(f"bench_kernel_overloads: {exc}", file=sys.stderr)
        return 2
    entries = torchgen_entries(h.root)
    # the signatures each kernel name has among the tree's hand-written at::native definitions
    sigs: defaultdict[str, set[tuple[str, ...]]] = defaultdict(set)
    for name, params in h.ix.q("SELECT s.qualname, s.params FROM cpp_symbol s JOIN files f ON f.id = s.file_id "  # type: ignore[attr-defined]
                               "WHERE s.is_definition AND s.qualname LIKE 'at::native::%' "
                               "AND f.path NOT LIKE '<generated>%'"):
        sigs[name.removeprefix("at::native::")].add(tuple(param_types(params)))
    asked = [e for e in entries if len(sigs.get(e[2], ())) > 1]
    counts: Counter[str] = Counter()
    wrong: list[str] = []
    answers: dict[str, dict] = {}
    with tt.McpStdio(h.root, dict(os.environ)) as server:
        for op, key, kernel, want in asked:
            if op not in answers:
                answers[op] = server.tool("trace", function_name=op, focus="dispatch")[0]
            sc = answers[op]
            ops = sc.get("result", {}).get("ops", []) if sc.get("kind") == "result" else []
            mine = [o for o in ops if o["op"]["full_name"] == op]  # trace("full") answers full.names and full.out too
            defs = [param_types(d["params"]) for o in mine for k in o["kernels"]
                    if k["entry"]["key"] == key and k["entry"]["kernel"] == kernel for d in k["definitions"]
                    if not d.get("path", "").startswith("<generated>")]
            if tuple(want) not in sigs[kernel]:
                counts["no definition of the tree has torchgen's signature"] += 1
            elif defs and all(d == want for d in defs):
                counts["exact"] += 1
            elif want in defs:
                counts["holds it, with others its types did not tell apart"] += 1
            else:
                counts["wrong"] += 1
                wrong.append(f"{op} {key}: {kernel}{tuple(want)} -> {defs}")
    print(f"Kernel overloads vs torchgen's native signatures, over MCP stdio  ({tt.status_line(h)})")
    print(f"dispatch entries (not structured) {len(entries)}; whose kernel name has definitions of 2+ signatures "
          f"{len(asked)}")
    for what, n in counts.most_common():
        print(f"  {what:<55} {n}")
    for w in wrong[:20]:
        print(f"    {w}")
    print(f"time: {time.monotonic() - t0:.1f} s")
    if args.json:
        Path(args.json).write_text(json.dumps({"entries": len(entries), "asked": len(asked), "counts": counts,
                                               "wrong": wrong}, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
