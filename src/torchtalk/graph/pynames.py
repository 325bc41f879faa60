"""Python names as the interpreter would bind them, from the index's imports and definitions.

``F.linear`` inside torch/nn/modules/linear.py is ``torch.nn.functional.linear``
(``import torch.nn.functional as F``), which is bound to ``torch._C._nn.linear``
(``linear = _add_docstr(torch._C._nn.linear, ...)``), which is the op ``linear``.
Lookups are made on demand and memoised per index version.
"""

from __future__ import annotations

import functools
import json
from dataclasses import dataclass
from typing import NamedTuple

from ..link.pyclasses import follow_reexports
from ..model import Loc, PyDefKind
from ..store.reader import Index, like_literal


@dataclass(frozen=True)
class PyDef:
    kind: PyDefKind
    fq: str  # canonical dotted name
    module: str
    qualname: str
    loc: Loc
    row_id: int  # py_function.id / py_class_fq.id / 0
    signature: str = ""
    value: str = ""  # for assign: the dotted name it is bound to (the first, when several)
    values: tuple[str, ...] = ()  # for assign: every name it is bound to (boolean_dispatch(if_true=f, if_false=g))
    cls: str = ""  # for methods: class qualname


class Derived(NamedTuple):
    """A class naming another as a base (``PyNames.derived``)."""

    fq: str
    name: str
    file_id: int
    line: int
    roots: str  # link/pyclasses.py's roots, space-separated (testcase, module, ...)
    source: str  # py (torch/**) or test (test/**)


class PyNames:
    def __init__(self, ix: Index):
        self.ix = ix
        self._imports: dict[str, tuple[dict[str, str], list[str]]] = {}
        self._defs: dict[str, PyDef | None] = {}
        self._mros: dict[str, tuple[str, ...]] = {}
        self._c3_memo: dict[str, list[str] | None] = {}
        self._bases: dict[str, list[str] | None] = {}
        self._exports: dict[str, dict[str, str]] = {}  # package -> {object's full name: the name it exports}
        self.module_files = ix.cached("py_module_files", self._module_files)

    def _module_files(self) -> dict[str, int]:
        out = {}
        for fid, path in self.ix.paths().items():
            if path.endswith(".py") and not path.startswith("<"):
                mod = path[:-3]
                mod = mod[: -len("/__init__")] if mod.endswith("/__init__") else mod
                out[mod.replace("/", ".")] = fid
        return out

    def imports(self, module: str) -> tuple[dict[str, str], list[str]]:
        if module not in self._imports:
            fid = self.module_files.get(module)
            names: dict[str, str] = {}
            stars: list[str] = []
            if fid is not None:
                for alias, target in self.ix.q("SELECT alias, target FROM py_import WHERE file_id = ? ORDER BY id",
                                               (fid,)):
                    if alias == "*":
                        stars.append(target)
                    else:
                        names.setdefault(alias, target)
            self._imports[module] = (names, stars)
        return self._imports[module]

    def _split(self, dotted: str) -> tuple[str, str] | None:
        """('torch.nn.modules.linear', 'Linear.forward') for the longest module prefix."""
        parts = dotted.split(".")
        for i in range(len(parts) - 1, 0, -1):
            mod = ".".join(parts[:i])
            if mod in self.module_files:
                return mod, ".".join(parts[i:])
        return None

    def definition(self, dotted: str) -> PyDef | None:
        """What ``dotted`` is defined as in its own module (no re-export following)."""
        if dotted in self._defs:
            return self._defs[dotted]
        found = None
        split = self._split(dotted)
        if split:
            mod, qual = split
            fid = self.module_files[mod]
            row = self.ix.one("SELECT id, file_id, line FROM py_class_fq WHERE fq = ?", (dotted,))
            if row:
                found = PyDef(PyDefKind.CLASS, dotted, mod, qual, Loc(self.ix.path_of(row[1]), row[2]), row[0])
            else:
                # The last def binds the name (earlier ones are often @overload stubs).
                row = self.ix.one("SELECT id, line, signature, cls FROM py_function WHERE file_id = ? AND qualname = ? "
                                  "ORDER BY line DESC LIMIT 1", (fid, qual))
                if row:
                    found = PyDef(PyDefKind.FUNCTION, dotted, mod, qual, Loc(self.ix.path_of(fid), row[1]), row[0],
                                  signature=row[2], cls=row[3])
                else:
                    rows = self.ix.q("SELECT value, line FROM py_assign WHERE file_id = ? AND name = ? ORDER BY id",
                                     (fid, qual))
                    if rows:
                        found = PyDef(PyDefKind.ASSIGN, dotted, mod, qual, Loc(self.ix.path_of(fid), rows[0][1]), 0,
                                      value=rows[0][0], values=tuple(dict.fromkeys(r[0] for r in rows)),
                                      cls=qual.rsplit(".", 1)[0] if "." in qual else "")
        self._defs[dotted] = found
        return found

    def bases(self, fq: str) -> list[str] | None:
        """A class's bases as the link stage resolved them (as written when it could not), or None when ``fq`` is no
        class of the index."""
        if fq not in self._bases:
            row = self.ix.one("SELECT bases FROM py_class_fq WHERE fq = ?", (fq,))
            self._bases[fq] = json.loads(row[0] or "[]") if row is not None else None
        return self._bases[fq]

    def derived(self, fq: str) -> list[Derived]:
        """The classes that name ``fq`` as a base, as the link stage resolved it (one level), by full name."""
        return [Derived(*r[:6]) for r in self.ix.q(
            "SELECT fq, name, file_id, line, roots, source, bases FROM py_class_fq WHERE bases LIKE ? ESCAPE '\\' "
            "ORDER BY fq", ('%"' + like_literal(fq) + '"%',)) if fq in json.loads(r[6] or "[]")]

    def mro(self, fq: str, limit: int = 12) -> tuple[str, ...]:
        """A class and its bases (resolved full names) in Python's method resolution order (C3: ConvBn1d's
        _ConvBnNd, Conv1d, _ConvNd, _FusedModule, Sequential, Module), the classes the index defines only; breadth
        first when C3 finds no order (a hierarchy Python itself would refuse); at most ``limit``."""
        if fq not in self._mros:
            order = self._c3(fq, frozenset())
            self._mros[fq] = tuple((order if order is not None else self._breadth_first(fq))[:limit])
        return self._mros[fq]

    def _c3(self, cls: str, above: frozenset[str]) -> list[str] | None:
        """C3 linearization of ``cls`` over the classes the index defines (None: no consistent order, or a cycle)."""
        if cls in self._c3_memo:
            return self._c3_memo[cls]
        bases = self.bases(cls)
        if bases is None:
            return []
        if cls in above or len(above) > 40:
            return None
        known = [b for b in dict.fromkeys(bases) if self.bases(b) is not None]
        seqs = [self._c3(b, above | {cls}) for b in known]
        if any(q is None for q in seqs):
            return None
        todo = [list(q) for q in seqs if q] + ([list(known)] if known else [])
        out = [cls]
        while todo:
            head = next((q[0] for q in todo if not any(q[0] in r[1:] for r in todo)), None)
            if head is None:
                self._c3_memo[cls] = None
                return None
            out.append(head)
            todo = [r for q in todo if (r := q[1:] if q[0] == head else q)]
        self._c3_memo[cls] = out
        return out

    def _breadth_first(self, fq: str) -> list[str]:
        out: list[str] = []
        todo, seen = [fq], set()
        while todo:
            cls = todo.pop(0)
            if cls in seen:
                continue
            seen.add(cls)
            bases = self.bases(cls)
            if bases is None:
                continue
            out.append(cls)
            todo.extend(bases)
        return out

    def canonical(self, dotted: str) -> str | None:
        return follow_reexports(dotted, lambda d: self.definition(d) is not None,
                                lambda m: self.imports(m)[0], lambda m: self.imports(m)[1])

    def resolve_in(self, module: str, written: str) -> str:
        """The full dotted name that ``written`` denotes inside ``module`` (best effort)."""
        first, _, rest = written.partition(".")
        names, stars = self.imports(module)
        if self.definition(f"{module}.{first}") is not None:
            base = f"{module}.{first}"
        elif first in names:
            base = names[first]
        else:
            base = next((f"{star}.{first}" for star in stars if self.canonical(f"{star}.{first}")), first)
        full = f"{base}.{rest}" if rest else base
        return self.canonical(full) or full

    # Note [Objects a package exports]
    # ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
    # ``torch.ops`` is an object torch/_ops.py makes (``ops: _Ops = _Ops()``) and torch/__init__.py re-exports under
    # its own name (``from torch._ops import ops as ops``), so ``from torch._ops import ops; ops.quantized.x(...)``
    # (an ao module) calls what ``torch.ops.quantized.x`` names. A name under such an object (imported by the
    # package under the name it has, and neither a module nor a def or class the index holds) is spelled as the
    # package exports it, the spelling the rest of the graph knows (graph/library_impls.py, ops_of_python).

    def exported(self, full: str) -> str:
        """``full`` spelled through the object its package exports (Note [Objects a package exports]), or as it is."""
        pkg = full.partition(".")[0]
        if pkg not in self._exports:
            self._exports[pkg] = {
                target: alias for alias, target in self.imports(pkg)[0].items()
                if target.startswith(pkg + ".") and target != f"{pkg}.{alias}" and target.rsplit(".", 1)[1] == alias
                and target not in self.module_files and self.canonical(target) is None}
        table = self._exports[pkg]
        parts = full.split(".")
        for i in range(len(parts) - 1, 1, -1):
            head = ".".join(parts[:i])
            if head in table:
                return f"{pkg}.{table[head]}{full[len(head):]}"
        return full


@functools.lru_cache(maxsize=8192)  # asked for every call through a parameter a walk meets
def signature_params(signature: str) -> dict[str, str]:
    """Parameter name -> annotation as written ("" if none) of a signature
    "(self, input: Tensor, memo: Optional[Set[M]] = None)" (``PyDef.signature``); the result is shared: read only."""
    inner = signature[signature.find("(") + 1:signature.rfind(")")] if "(" in signature else ""
    parts, depth, cur = [], 0, ""
    for ch in inner:
        depth += ch in "[(" and 1 or ch in "])" and -1 or 0
        if ch == "," and depth == 0:
            parts.append(cur)
            cur = ""
        else:
            cur += ch
    parts.append(cur)
    out = {}
    for p in parts:
        name, _, ann = p.split("=", 1)[0].partition(":")
        name = name.strip().lstrip("*")
        if name.isidentifier():
            out[name] = ann.strip()
    return out


def pynames(ix: Index) -> PyNames:
    # One per index version: memoised imports and definitions stay valid until a new index lands.
    return ix.cached("pynames", lambda: PyNames(ix))
