"""search's classes: the Python classes of the tree's torch/ and the C++ classes, structs, unions and enums with a
body, by name, ranked with the other hits (Note [Classes by their spelling] in search_match.py)."""

from __future__ import annotations

from typing import NamedTuple

from ..graph.cpp_types import all_classes, is_header
from ..graph.op_edges import autograd_nodes
from ..graph.pynames import pynames
from ..model import ClassKind, CppClass, HitKind, Loc, MatchKind, SymbolKind
from ..store.reader import Index
from .search_match import Group, Query, args_key, rank, rank_qualified
from .search_results import MATCHES, PER_NAME, Scored, SearchHit

# What a Python class derives from (link/pyclasses.py ROOTS), as its hit says it
_ROOT_SAYS = {"module": "an nn.Module", "optimizer": "an optimizer", "lr_scheduler": "an LR scheduler",
              "testcase": "a TestCase"}


class _PyClass(NamedTuple):
    name: str
    name_l: str
    fq: str  # module.qualname: torch.nn.modules.linear.Linear
    fq_l: str
    loc: Loc
    exported: tuple[str, ...]  # the names the packages above its module export it under, shortest first
    exported_l: tuple[str, ...]
    public: bool  # in a public module, or exported by a package above it (torch._tensor.Tensor is torch.Tensor)
    detail: str

    @property
    def shown(self) -> str:
        """The name it is known by: its shortest public one (torch.nn.Linear), else where it is defined."""
        return self.exported[0] if self.exported else self.fq


def _python_classes(ix: Index) -> list[_PyClass]:
    """Per class of torch/, those of public modules first and by their public name's length (each name's first
    PER_NAME hits are theirs: "Linear" is torch.nn.Linear before the quantized ones), once per index version."""
    def build() -> list[_PyClass]:
        rows = []
        for name, fq, module, file_id, line, roots, exported in ix.q(
                "SELECT name, fq, module, file_id, line, roots, exported FROM py_class_fq WHERE source = 'py'"):
            names = tuple(exported.split())
            public = bool(names) or not any(p.startswith("_") for p in module.split("."))
            says = [f"public as {names[0]}"] if names else []
            says += [_ROOT_SAYS[r] for r in roots.split() if r in _ROOT_SAYS]
            rows.append(_PyClass(name, name.lower(), fq, fq.lower(), Loc(ix.path_of(file_id), line), names,
                                 tuple(n.lower() for n in names), public, "; ".join(says)))
        rows.sort(key=lambda r: (not r.public, len(r.shown), r.fq))
        return rows
    return ix.cached("search_py_classes", build)


class _CppClass(NamedTuple):
    name_l: str
    qualname_l: str  # without a specialization's arguments (what a qualified query is matched on)
    public: bool  # in a header (a class of a .cpp file is that file's own)
    cls: CppClass

    def hit(self, match: MatchKind) -> SearchHit:
        """at::vec::Vectorized<float> for a specialization; the detail says its template parameters and bases."""
        c = self.cls
        says = [f"template <{c.tparams.replace(',', ', ')}>"] if c.tparams else []
        says += [f"bases {c.bases.replace(';', ', ')}"] if c.bases else []
        return SearchHit(HitKind.CPP_ENUM if c.kind is ClassKind.ENUM else HitKind.CPP_CLASS,
                         c.qualname + (f"<{c.spec}>" if c.spec else ""), c.loc, match, "; ".join(says))


def _cpp_classes(ix: Index) -> list[_CppClass]:
    """Per C++ class with a body: headers before source files, primary templates before specializations, in file
    order (each name's first PER_NAME hits are theirs), once per index version. An autograd node's struct is not
    one: it is its autograd node's hit (AddBackward0, with its apply() and the ops that create it)."""
    def build() -> list[_CppClass]:
        nodes = {(n.struct.path, n.struct.line) for n in autograd_nodes(ix).values() if n.struct is not None}
        rows = [_CppClass(c.name.lower(), c.qualname.lower(), is_header(c.path), c)
                for cs in all_classes(ix).values() for c in cs if c.name and (c.path, c.line) not in nodes]
        rows.sort(key=lambda r: (not r.public, r.cls.spec != "", r.cls.id))
        return rows
    return ix.cached("search_cpp_classes", build)


def class_hits(ix: Index, pq: Query) -> list[Scored]:
    """The Python and the C++ classes the query names: a class spelled as asked first (Note [Classes by their
    spelling]), the others with the functions of their language; a name's definitions past PER_NAME after every
    hit of their match kind (Note [Names that flood])."""
    out: list[Scored] = []
    per_name: dict[str, int] = {}
    reexport: list[str | None] = []  # what the query names through the packages' imports, once asked
    part = pq.last if len(pq.words) == 1 else ""  # a one-word query's name is part of every name it matches
    for py in _python_classes(ix) if not pq.targs else ():  # Vectorized<float> is no Python name
        if part not in py.name_l:
            continue
        rank_ = _py_rank(ix, pq, py, reexport)
        if rank_ is not None:
            seen = per_name[py.name] = per_name.get(py.name, 0) + 1
            group = _group(pq, rank_, py.name, seen, py.public, Group.PUBLIC_PY if py.public else Group.PRIVATE_PY)
            out.append(((rank_, group, len(py.shown), py.fq),
                        SearchHit(HitKind.PY_CLASS, py.fq, py.loc, MATCHES[rank_], py.detail), None))
    per_name.clear()
    cpp = [(c, rank_) for c in _cpp_classes(ix) if part in c.name_l
           and (rank_ := rank_qualified(pq, c.name_l, c.qualname_l, "::")) is not None]
    if pq.targs:  # Vectorized<float>: the specializations for those arguments, else the primary template
        # a template is named as spelled: a C++ name's case is part of it (policies::vectorized is another class)
        cpp = [(c, r) for c, r in cpp if c.cls.name == pq.spelled]
        specialized = {c.qualname_l for c, _r in cpp if c.cls.spec and args_key(c.cls.spec) == pq.targs}
        cpp = [(c, r) for c, r in cpp if r == 0 and (args_key(c.cls.spec) == pq.targs if c.cls.spec else
                                                     c.cls.tparams and c.qualname_l not in specialized)]
    for c, rank_ in cpp:
        hit, name = c.hit(MATCHES[rank_]), c.cls.name
        seen = per_name[name] = per_name.get(name, 0) + 1
        out.append(((rank_, _group(pq, rank_, name, seen, c.public, Group.CPP), len(hit.name), hit.name), hit, None))
    return out


def _group(pq: Query, rank_: int, name: str, seen: int, public: bool, group: Group) -> Group:
    if seen > PER_NAME:
        return Group.FLOOD
    return Group.NAMED_CLASS if rank_ == 0 and public and name == pq.spelled else group


def _py_rank(ix: Index, pq: Query, c: _PyClass, reexport: list[str | None]) -> int | None:
    """A Python class by its name, or by a dotted name: where it is defined (torch.nn.modules.linear.Linear), a name
    a package above it exports (torch.nn.Linear, nn.Linear), or any other the packages' imports bind to it."""
    found = rank_qualified(pq, c.name_l, c.fq_l, ".")
    if found is not None or not pq.py_scope or len(pq.words) > 1:
        return found
    found = min((r for e in c.exported_l if (r := rank_qualified(pq, c.name_l, e, ".")) is not None), default=None)
    if found is None and rank(pq, c.name_l) == 0:  # torch.nn.quantized.Linear: through another package's imports
        if not reexport:
            reexport.append(pynames(ix).canonical(pq.dotted))
        found = 0 if reexport[0] == c.fq else None
    return found


def constructor_of(ix: Index, hit: SearchHit) -> str:
    """A C++ class hit's constructor when one has a definition (called_by answers who constructs the class)."""
    if hit.kind is not HitKind.CPP_CLASS:
        return ""
    qualname = hit.name.split("<", 1)[0]
    ctor = f"{qualname}::{qualname.rsplit('::', 1)[-1]}"
    row = ix.one("SELECT 1 FROM cpp_symbol WHERE qualname = ? AND kind = ? AND is_definition LIMIT 1",
                 (ctor, SymbolKind.CONSTRUCTOR.value))
    return ctor if row else ""


def class_names(ix: Index) -> list[str]:
    """Every class's name, once (the close matches of a name search does not find)."""
    return ix.cached("search_class_names", lambda: sorted(
        {c.name for c in _python_classes(ix)} | {c.cls.name for c in _cpp_classes(ix)}))


def warm(ix: Index) -> None:
    """The classes' tables, off a first answer's path (search.warm, the server's warm-up)."""
    _python_classes(ix)
    _cpp_classes(ix)
