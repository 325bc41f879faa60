"""The op registry as the graph sees it: every op by any name a user types, and its kernel per key.

The whole registry (a few thousand ops) is loaded once per index version; every op
question after that is a dictionary lookup.
"""

from __future__ import annotations

import difflib
from collections import defaultdict
from dataclasses import dataclass

from ..model import DispatchEntry, DispatchKey, EntryOrigin, Loc, Op, OpDispatch, PyApiKind, Variant
from ..model.cpp import TEMPLATE_ARGS
from ..model.dispatch import delegated
from ..model.ops import DEFAULT_OVERLOAD
from ..store.codec import codec, row_fact
from ..store.reader import Index
from .aten_library import AtenLibrary, read_aten_library

# Spellings of a Python name as the py_api table stores them.
_PY_PREFIXES = (("F.", "torch.nn.functional."), ("nn.functional.", "torch.nn.functional."),
                ("torch.Tensor.", "Tensor."), ("linalg.", "torch.linalg."), ("fft.", "torch.fft."),
                ("special.", "torch.special."), ("_C.", "torch._C."), ("nn.", "torch.nn."))
_OP_PREFIXES = ("aten::", "torch.ops.aten.", "aten.")


def _without_prefix(text: str) -> tuple[str, bool]:
    """``text`` without the aten namespace it is written in (torch.ops.aten., aten::, aten.), and whether it was."""
    t = text.strip()
    return next(((t[len(p):], True) for p in _OP_PREFIXES if t.startswith(p)), (t, False))


def _unnamed(by_full: dict[str, Op], text: str) -> list[Op]:
    """``X.default``: the overload of X without a name; [] when X has none (torch.ops refuses aten.add.default)."""
    base = text.removesuffix(DEFAULT_OVERLOAD)
    return [by_full[base]] if base in by_full and "." not in base else []


@dataclass(frozen=True, slots=True)
class PyName:
    """A Python name bound to an op (torch.add, Tensor.add, torch.nn.functional.relu)."""

    name: str
    kind: PyApiKind
    loc: Loc
    target: str = ""  # the C++ binding function, or the Python name an alias or F.x is bound to


class OpRegistry:
    def __init__(self, ix: Index) -> None:
        self.by_id: dict[int, Op] = {}
        self.by_full: dict[str, Op] = {}
        self.by_name: dict[str, list[Op]] = defaultdict(list)
        for row in ix.q(f"SELECT {codec(Op).select()} FROM op ORDER BY id"):
            op: Op = row_fact(Op, row, ix.path_of)
            self.by_id[op.id] = op
            self.by_full[op.full_name] = op
            self.by_name[op.name].append(op)
        # the aten ops and kernels of hand-written TORCH_LIBRARY blocks (Note [Hand-registered aten kernels])
        self.library: AtenLibrary = read_aten_library(ix, dict(self.by_full), min(self.by_id, default=0) - 1)
        for op in self.library.ops:
            self.by_id[op.id] = op
            self.by_full[op.full_name] = op
            self.by_name[op.name].append(op)
        self.own: dict[str, list[OpDispatch]] = defaultdict(list)
        for row in ix.q(f"SELECT {codec(OpDispatch).select()} FROM op_dispatch ORDER BY id"):
            d: OpDispatch = row_fact(OpDispatch, row, ix.path_of)
            if d.op in self.by_id:
                self.own[self.by_id[d.op].full_name].append(d)
        self.py_by_name: dict[str, list[str]] = defaultdict(list)
        self.py_by_op: dict[str, list[PyName]] = defaultdict(list)
        for name, kind, op_name, target, file_id, line in ix.q(
                "SELECT name, kind, op, target, file_id, line FROM py_api WHERE op != ''"):
            self.py_by_name[name].append(op_name)
            self.py_by_op[op_name].append(PyName(name, PyApiKind(kind), Loc(ix.path_of(file_id), line), target))
        self.delegating: dict[str, list[Op]] = defaultdict(list)  # cumsum.out -> [cumsum, cumsum_]
        for op in self.by_id.values():
            if op.structured_delegate:
                self.delegating[op.structured_delegate].append(op)
        self._dispatch: dict[str, list[DispatchEntry]] = {}
        # kernel as the YAML writes it -> [(op, entry)]: which ops a C++ function is a kernel of.
        self.kernel_ops: dict[str, list[tuple[Op, DispatchEntry]]] = defaultdict(list)
        for op in self.by_id.values():
            for entry in self.dispatch(op):
                # an m.impl's kernel by its name alone: written as its namespace lets it be (native::det)
                name = entry.kernel if entry.origin is not EntryOrigin.LIBRARY else \
                    TEMPLATE_ARGS.sub("", entry.kernel).rsplit("::", 1)[-1]
                self.kernel_ops[name].append((op, entry))

    # ------------------------------------------------------------ lookup

    def lookup(self, text: str) -> list[Op]:
        """Ops a user means by ``text``: "add.Tensor", "add", "aten::add", "torch.add", "F.relu"."""
        t = _without_prefix(text)[0]
        if t.endswith(DEFAULT_OVERLOAD):
            return _unnamed(self.by_full, t)
        if t in self.by_full and "." in t:
            return [self.by_full[t]]
        if t in self.by_name:
            return list(self.by_name[t])
        for alias in py_spellings(t):
            if alias in self.py_by_name:
                seen: dict[str, Op] = {}
                for full in self.py_by_name[alias]:
                    op = self.by_full.get(full)
                    if op is not None:
                        seen.setdefault(op.full_name, op)
                # A Python name is called for its result: the functional overloads first, out= ones last.
                return sorted(seen.values(), key=lambda o: o.is_out)
        return []

    def suggest(self, text: str, n: int = 8) -> list[str]:
        t = text.strip().removesuffix(DEFAULT_OVERLOAD)
        bare = _without_prefix(t)[0]
        # aten.add.default: add has no overload without a name; its overloads are the close matches
        if bare in self.by_name and text.strip().endswith(DEFAULT_OVERLOAD):
            return [o.full_name for o in self.by_name[bare]][:n]
        # an overload spelled in another case (add.tensor: add.Tensor), or one its op lacks (softmax.nonexist):
        # the op's overloads
        same = [f for f in self.by_full if f.lower() == bare.lower()]
        base = bare.split(".", 1)[0]
        if same or "." in bare and base in self.by_name:
            return list(dict.fromkeys(same + [o.full_name for o in self.by_name.get(base, [])]))[:n]
        if "::" in t or t.startswith(("torch.", "F.", "Tensor.")):
            t = t.split("::")[-1].split(".")[-1]
        # compared lower-cased, as op names are written (ADD: add)
        lowered: dict[str, str] = {}
        for x in self.by_name:
            lowered.setdefault(x.lower(), x)
        t = t.lower()
        close = [lowered[x] for x in difflib.get_close_matches(t, list(lowered), n=n, cutoff=0.6)]
        contains = sorted((x for x in self.by_name if t and t in x.lower() and x not in close),
                          key=len)[: max(0, n - len(close))]
        return close + contains

    def python_names(self, op: Op) -> list[PyName]:
        return self.py_by_op.get(op.full_name, [])

    def names_shown(self, op: Op | None, most: int = 4) -> list[str]:
        """The first ``most`` distinct Python names of an op, as an answer lists them beside it ([] for None)."""
        return list(dict.fromkeys(p.name for p in self.python_names(op)))[:most] if op is not None else []

    # ------------------------------------------------------------ dispatch

    def dispatch(self, op: Op) -> list[DispatchEntry]:
        """Per key, the kernel: the op's own table, its structured delegate's, or the implicit default."""
        cached = self._dispatch.get(op.full_name)
        if cached is None:
            cached = self._dispatch[op.full_name] = self._entries(op, set())
        return cached

    def _entries(self, op: Op, seen: set[str]) -> list[DispatchEntry]:
        seen = seen | {op.full_name}
        origin = EntryOrigin.AUTOGEN if op.autogen_from else EntryOrigin.TABLE
        entries = [DispatchEntry(d.key, d.kernel, d.loc, origin, structured=op.structured)
                   for d in self.own.get(op.full_name, [])]
        if op.ufunc_inner_loop:
            # torchgen writes the CPU/CUDA kernels from the loops in ufunc/<loop>.h (torchgen/dest/ufunc.py):
            # structured TORCH_IMPL_FUNC(ufunc_<op>_<key>) in UfuncCPU_<op>.cpp / UfuncCUDA_<op>.cu, named as
            # torchgen.api.ufunc.schema_kernel_name names them; no hand-written one exists.
            shown = "; ".join(f"{k}: {v}" for k, v in op.ufunc_inner_loop)
            for key in (DispatchKey.CPU, DispatchKey.CUDA):
                if all(e.key != key for e in entries):
                    entries.append(DispatchEntry(key, f"ufunc_{op.name}_{key}", op.loc, EntryOrigin.UFUNC,
                                                 structured=True, ufunc=shown))
        target = self.by_full.get(op.structured_delegate) if op.structured_delegate else None
        if target is not None and target.full_name not in seen:
            have = {e.key for e in entries}
            for d in self._entries(target, seen):
                if d.key not in have and delegated(d.key):  # Note [Delegated keys]
                    entries.append(DispatchEntry(d.key, d.kernel, d.loc, d.origin, delegate=target.full_name,
                                                 structured=d.structured, ufunc=d.ufunc))
        if not entries and not op.structured_delegate and not op.dispatch_empty:
            entries.append(DispatchEntry(DispatchKey.CompositeImplicitAutograd, op.cpp_name, op.loc,
                                         EntryOrigin.IMPLICIT))
        if not seen - {op.full_name}:  # the op's own m.impl lines, after the yaml's (not a structured delegate's)
            have = {e.key for e in entries}
            for e in self.library.entries.get(op.full_name, ()):
                if e.key in have:  # the yaml's kernel for that key stays (Note [Hand-registered aten kernels])
                    self.library.conflicts.append(f"{op.full_name} [{e.key}]: {e.kernel}  {e.loc}")
                    continue
                have.add(e.key)
                entries.append(e)
        return entries

    def has_method(self, name: str) -> bool:
        """Whether some overload of ``name`` is a Tensor method (``variants: method``)."""
        return any(Variant.METHOD in op.variants for op in self.by_name.get(name, ()))


def py_spellings(t: str) -> list[str]:
    """Spellings of a Python name as py_api stores them; a bare name (no op: spmm) may be torch's or Tensor's."""
    out = [t]
    for short, long in _PY_PREFIXES:
        if t.startswith(short):
            out.append(long + t[len(short):])
    if t and "." not in t and ":" not in t:
        out += [f"torch.{t}", f"Tensor.{t}"]
    return out


def registry(ix: Index) -> OpRegistry:
    reg: OpRegistry = ix.cached("ops", lambda: OpRegistry(ix))
    return reg


def registered_ops(reg: OpRegistry, text: str) -> list[Op]:
    """The aten ops a Python registration names (a py_op_ref's op: Note [Packet or overload] in extract/opregs.py):
    "aten.zeros.default" the overload zeros alone, "aten.add.Tensor" add.Tensor, "aten.zeros" the packet, every
    overload of zeros. [] for another namespace or a name no op has."""
    t, aten = _without_prefix(text)
    if not aten:
        return []
    if t.endswith(DEFAULT_OVERLOAD):
        return _unnamed(reg.by_full, t)
    if "." in t:
        return [reg.by_full[t]] if t in reg.by_full else []
    return list(reg.by_name.get(t, ()))
