"""The op registry as the queries see it: lookup by any name a user types, and dispatch.

The whole registry (a few thousand rows) is loaded once per index version;
every op question after that is a dictionary lookup.
"""

from __future__ import annotations

import difflib
import json
from collections import defaultdict
from dataclasses import dataclass, field

from .index import Index
from .model import Loc, NotFound

COMPOSITE_KEYS = {
    "CompositeImplicitAutograd": "one kernel for every backend, written with other ops; autograd comes from those ops, so no derivatives.yaml entry is needed",
    "CompositeImplicitAutogradNestedTensor": "CompositeImplicitAutograd for nested tensors",
    "CompositeExplicitAutograd": "one kernel for every backend; autograd is given explicitly (derivatives.yaml), and the kernel is used for all backends unless one has its own",
    "CompositeExplicitAutogradNonFunctional": "like CompositeExplicitAutograd, but the kernel is not functional (it mutates or views), so functionalization cannot use it as a decomposition",
}

# python_module -> (torch._C submodule, public Python namespace, prefix stripped for the public name)
PY_MODULES = {
    "nn": ("torch._C._nn", "", ""),
    "linalg": ("torch._C._linalg", "torch.linalg", "linalg_"),
    "fft": ("torch._C._fft", "torch.fft", "fft_"),
    "special": ("torch._C._special", "torch.special", "special_"),
    "sparse": ("torch._C._sparse", "torch.sparse", "sparse_"),
    "nested": ("torch._C._nested", "torch.nested", "nested_"),
}


@dataclass
class DispatchEntry:
    key: str
    kernel: str
    loc: Loc  # the YAML line that names it
    via: str = ""  # "structured_delegate cumsum.out", "no dispatch: entry (implicit)", ""


@dataclass
class OpRecord:
    id: int
    name: str
    overload: str
    full_name: str
    schema: str
    loc: Loc
    end_line: int
    variants: str
    python_module: str
    structured: bool
    structured_delegate: str
    structured_inherits: str
    precomputed: str
    ufunc_inner_loop: str
    autogen: str
    tags: str
    device_check: str
    device_guard: str
    manual_cpp_binding: bool
    category_override: str
    cpp_no_default_args: str
    is_inplace: bool
    is_out: bool
    arguments_json: str = "[]"  # parsed on demand: few answers need them
    returns_json: str = "[]"
    extra_json: str = ""
    own_dispatch: list[DispatchEntry] = field(default_factory=list)

    @property
    def arguments(self) -> list:
        return json.loads(self.arguments_json or "[]")

    @property
    def returns(self) -> list:
        return json.loads(self.returns_json or "[]")

    @property
    def extra(self) -> dict:
        return json.loads(self.extra_json or "{}")

    @property
    def cpp_name(self) -> str:
        """torchgen's C++ name: the kernel an op without a dispatch table gets."""
        return f"{self.name}_out" if self.is_out and not self.name.endswith("_out") else self.name


class OpRegistry:
    def __init__(self, ix: Index):
        cols = [r[1] for r in ix.q("PRAGMA table_info(op)")]
        self.by_id: dict[int, OpRecord] = {}
        self.by_full: dict[str, OpRecord] = {}
        self.by_name: dict[str, list[OpRecord]] = defaultdict(list)
        for row in ix.q("SELECT * FROM op ORDER BY id"):
            r = dict(zip(cols, row))
            rec = OpRecord(
                id=r["id"], name=r["name"], overload=r["overload"], full_name=r["full_name"], schema=r["schema"],
                loc=Loc(ix.path_of(r["file_id"]), r["line"]), end_line=r["end_line"], variants=r["variants"],
                python_module=r["python_module"], structured=bool(r["structured"]),
                structured_delegate=r["structured_delegate"], structured_inherits=r["structured_inherits"],
                precomputed=r["precomputed"], ufunc_inner_loop=r["ufunc_inner_loop"], autogen=r["autogen"],
                tags=r["tags"], device_check=r["device_check"], device_guard=r["device_guard"],
                manual_cpp_binding=bool(r["manual_cpp_binding"]), category_override=r["category_override"],
                cpp_no_default_args=r["cpp_no_default_args"], is_inplace=bool(r["is_inplace"]),
                is_out=bool(r["is_out"]), arguments_json=r["arguments"], returns_json=r["returns"],
                extra_json=r["extra"],
            )
            self.by_id[rec.id] = rec
            self.by_full[rec.full_name] = rec
            self.by_name[rec.name].append(rec)
        for op_id, key, kernel, file_id, line in ix.q("SELECT op, key, kernel, file_id, line FROM op_dispatch ORDER BY id"):
            if op_id in self.by_id:
                self.by_id[op_id].own_dispatch.append(DispatchEntry(key, kernel, Loc(ix.path_of(file_id), line)))
        self.py_by_name: dict[str, list[str]] = defaultdict(list)
        self.py_by_op: dict[str, list[tuple[str, str, Loc]]] = defaultdict(list)
        for name, kind, op, target, file_id, line in ix.q("SELECT name, kind, op, target, file_id, line FROM py_api"):
            if op:
                self.py_by_name[name].append(op)
                self.py_by_op[op].append((name, kind, Loc(ix.path_of(file_id), line)))
        # kernel as the YAML writes it -> [(op, key, structured?)]: which ops a C++ function is a kernel of.
        self.kernel_ops: dict[str, list[tuple[OpRecord, str, bool]]] = defaultdict(list)
        for rec in self.by_id.values():
            for d in self.dispatch(rec):
                self.kernel_ops[d.kernel].append((rec, d.key, self.structured_entry(rec, d)))

    # ------------------------------------------------------------ lookup

    def lookup(self, text: str) -> list[OpRecord]:
        """Ops a user means by ``text``: "add.Tensor", "add", "aten::add", "torch.add", "F.relu"."""
        t = text.strip()
        for prefix in ("aten::", "torch.ops.aten.", "aten."):
            if t.startswith(prefix):
                t = t[len(prefix):]
        if t.endswith(".default"):
            t = t[: -len(".default")]
        if t in self.by_full and "." in t:
            return [self.by_full[t]]
        if t in self.by_name:
            return list(self.by_name[t])
        for alias in _py_aliases(t):
            if alias in self.py_by_name:
                seen, out = set(), []
                for full in self.py_by_name[alias]:
                    rec = self.by_full.get(full)
                    if rec and rec.full_name not in seen:
                        seen.add(rec.full_name)
                        out.append(rec)
                return out
        return []

    def suggest(self, text: str, n: int = 8) -> list[str]:
        t = text.strip().split("::")[-1].split(".")[-1] if "::" in text or text.startswith("torch.") else text.strip()
        names = list(self.by_name)
        close = difflib.get_close_matches(t, names, n=n, cutoff=0.6)
        contains = sorted((x for x in names if t and t in x and x not in close), key=len)[: max(0, n - len(close))]
        return close + contains

    def not_found(self, text: str) -> NotFound:
        return NotFound("op", text, self.suggest(text),
                        "Ops are named as in native_functions.yaml (e.g. 'softmax', 'add.Tensor') "
                        "or by their Python name ('torch.add', 'Tensor.add_', 'torch.nn.functional.relu').")

    # ------------------------------------------------------------ dispatch

    def dispatch(self, rec: OpRecord) -> list[DispatchEntry]:
        """Per key, the kernel: the op's own table, its structured delegate's, or the implicit default."""
        entries = list(rec.own_dispatch)
        if rec.ufunc_inner_loop:
            # CPU/CUDA kernels are generated from ufunc/<name>.h; there is no hand-written one.
            loops = json.loads(rec.ufunc_inner_loop)
            shown = "; ".join(f"{k}: {v}" for k, v in loops.items())
            loop = str(next(iter(loops.values()), rec.name)).split(" ")[0]
            for key in ("CPU", "CUDA"):
                if all(e.key != key for e in entries):
                    entries.append(DispatchEntry(key, f"ufunc::{loop}", rec.loc,
                                                 f"generated from ufunc_inner_loop ({shown}), "
                                                 f"aten/src/ATen/native/ufunc/{rec.name}.h"))
        if rec.structured_delegate:
            target = self.by_full.get(rec.structured_delegate)
            if target is not None and target is not rec:
                have = {e.key for e in entries}
                for d in self.dispatch(target):
                    if d.key not in have:
                        via = f"structured_delegate {target.full_name}" + (f"; {d.via}" if d.via else "")
                        entries.append(DispatchEntry(d.key, d.kernel, d.loc, via))
        if not entries and not rec.structured_delegate:
            entries.append(DispatchEntry("CompositeImplicitAutograd", rec.cpp_name, rec.loc,
                                         "no dispatch: entry (implicit default)"))
        return entries

    def structured_entry(self, rec: OpRecord, entry: DispatchEntry) -> bool:
        """Whether the entry's kernel is a TORCH_IMPL_FUNC: the op is structured, or the entry
        comes from the structured op it delegates to."""
        if rec.structured:
            return True
        if entry.via.startswith("structured_delegate"):
            target = self.by_full.get(rec.structured_delegate)
            return bool(target and target.structured)
        return False

    def python_names(self, rec: OpRecord) -> list[tuple[str, str, Loc]]:
        return self.py_by_op.get(rec.full_name, [])


def _py_aliases(t: str) -> list[str]:
    """Spellings of a Python name as py_api stores them."""
    out = [t]
    for short, long in (("F.", "torch.nn.functional."), ("nn.functional.", "torch.nn.functional."),
                        ("Tensor.", "Tensor."), ("torch.Tensor.", "Tensor."), ("linalg.", "torch.linalg."),
                        ("fft.", "torch.fft."), ("special.", "torch.special."), ("_C.", "torch._C.")):
        if t.startswith(short):
            out.append(long + t[len(short):])
    return out


def registry(ix: Index) -> OpRegistry:
    return ix.cached("ops", lambda: OpRegistry(ix))
