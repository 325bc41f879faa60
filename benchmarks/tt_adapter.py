"""The ONE place the benchmarks touch TorchTalk. Re-point these functions when its API changes.

bench_coverage.py and bench_resolution.py import nothing from ``torchtalk`` themselves:
they ask these functions and get plain data back (tuples, sets, small dataclasses
defined here). Where a tool answers the question, its structured JSON (the object
``torchtalk <tool> --json`` prints and MCP clients get) is read rather than the
query's dataclasses.

What each function uses today:

- open_index:          torchtalk.source.tree.find_source + torchtalk.query.index.Index
- trace_json:          the `trace` tool, structured JSON
- trace_resolves:      the `trace` tool: kind == "result"
- trace_kernels:       the `trace` tool (focus=dispatch): kernel name -> definitions it names
- kernel_definition:   torchtalk.query.cppdefs.kernel_definitions (the lookup `trace` uses per
                       dispatch entry; asked directly by kernel name so kernels that no dispatch
                       table names, e.g. autogen'd ones, can be asked too)
- function_lookup:     the `calls` tool: which definition a bare name finds, and the other candidates
- functions_in_file:   SQL over the index's cpp_symbol table (no tool lists a file's functions)
- calls_of:            the `calls` tool, structured JSON; when the tool's name lookup picks another
                       definition than the one at (path, line) (overloads, same-named helpers), the
                       tool's own query is run for that definition (its name lookup stubbed out), so
                       every definition can be asked; CalleeSet.by_name says which route was taken.
"""

from __future__ import annotations

import contextlib
from dataclasses import dataclass, field
from pathlib import Path


@dataclass
class Handle:
    ix: object  # torchtalk.query.index.Index
    root: Path
    index_path: Path


@dataclass(frozen=True)
class Def:
    qualname: str
    path: str  # relative to the tree, or "<generated>/..."
    line: int
    kind: str = ""  # function | method | impl_func | ... as TorchTalk names them
    is_definition: bool = True


@dataclass(frozen=True)
class FunctionRef:
    """A function definition TorchTalk indexed: enough to ask calls_of about it."""
    id: int
    name: str
    qualname: str
    kind: str
    path: str
    line: int
    end_line: int


@dataclass
class CallSite:
    line: int
    written: str  # callee as written: "f", "at::f", "self.f" ...
    name: str  # short callee name
    kind: str  # call | method | ...


@dataclass
class CalleeSet:
    caller: FunctionRef
    by_name: bool  # True when the calls tool, asked by qualname, picked this very definition
    resolved: list[tuple[CallSite, list[Def]]] = field(default_factory=list)  # first Def = TorchTalk's pick
    ops: list[tuple[CallSite, list[str], list[str]]] = field(default_factory=list)  # (site, op base names, full)
    stubs: list[tuple[CallSite, str]] = field(default_factory=list)
    unresolved: list[CallSite] = field(default_factory=list)
    macros: list[str] = field(default_factory=list)


class AdapterError(Exception):
    """TorchTalk could not be opened on the tree (message in one line)."""


def open_index(source: str | Path) -> Handle:
    try:
        from torchtalk.query.index import Index
        from torchtalk.source.tree import find_source
    except ImportError as exc:
        raise AdapterError(f"torchtalk is not importable ({exc}); run `pip install -e .` in the repo") from None
    try:
        tree = find_source(str(source))
    except Exception as exc:  # noqa: BLE001 - SourceError and friends: one line is enough
        raise AdapterError(f"not a usable PyTorch tree: {source} ({exc})") from None
    if not Path(tree.index_path).exists():
        raise AdapterError(f"no TorchTalk index for {tree.root}; run `torchtalk index --source {tree.root}` "
                           "(with the same TORCHTALK_CACHE_DIR) first")
    return Handle(Index(tree.index_path, tree.root), Path(tree.root), Path(tree.index_path))


def _tool_json(h: Handle, tool_name: str, **kwargs) -> dict:
    from torchtalk.structured import structured
    from torchtalk.tools import answer, get_tool
    tool = get_tool(tool_name)
    a = answer(tool, h.ix, **kwargs)
    return structured(tool, a.result, a.next)


def status_line(h: Handle) -> str:
    meta = h.ix.meta  # type: ignore[attr-defined]
    return (f"index {h.index_path} (PyTorch {meta.get('pytorch_version', '?')}, indexer "
            f"{meta.get('indexer_version', '?')}, generated layer {meta.get('codegen_status', '?')})")


# ------------------------------------------------------------------ trace

def trace_json(h: Handle, name: str, focus: str = "full") -> dict:
    return _tool_json(h, "trace", function_name=name, focus=focus)


def trace_resolves(h: Handle, python_name: str) -> bool:
    """Does trace("torch.X") give an answer (not not_found)?"""
    return trace_json(h, python_name, focus="yaml")["kind"] == "result"


def trace_kernels(h: Handle, op_name: str) -> dict[str, list[Def]] | None:
    """trace(op, focus=dispatch): every kernel name its dispatch tables show -> the definitions it names.

    None when trace does not know the op. A kernel shown without a definition maps to [].
    """
    js = trace_json(h, op_name, focus="dispatch")
    if js["kind"] != "result":
        return None
    out: dict[str, list[Def]] = {}
    for op in js["result"]["ops"]:
        for k in op["kernels"]:
            defs = out.setdefault(k["entry"]["kernel"], [])
            for d in k["defs"]:
                dd = Def(d["qualname"], d["loc"]["path"], d["loc"]["line"], d["kind"], d["is_definition"])
                if dd not in defs:
                    defs.append(dd)
    return out


def kernel_definition(h: Handle, kernel_name: str, structured: bool) -> list[Def]:
    """The definitions TorchTalk names for a kernel as a dispatch table would name it."""
    from torchtalk.query.cppdefs import kernel_definitions
    return [Def(d.qualname, d.loc.path, d.loc.line, d.kind, d.is_definition)
            for d in kernel_definitions(h.ix, kernel_name, structured)]


def function_lookup(h: Handle, name: str) -> tuple[Def | None, list[Def]]:
    """What the calls tool finds for a bare name: (its pick, the other candidates); (None, []) if not found."""
    js = _tool_json(h, "calls", function_name=name)
    if js["kind"] != "result":
        return None, []
    f = js["result"]["function"]
    pick = Def(f["qualname"], f["loc"]["path"], f["loc"]["line"], f["kind"], f["is_definition"])
    others = []
    amb = js["result"].get("ambiguity")
    if amb:
        for text, loc in amb["candidates"][1:]:
            if loc:
                others.append(Def(text.split("(")[0], loc["path"], loc["line"]))
    return pick, others


# ------------------------------------------------------------------ calls

def functions_in_file(h: Handle, rel_path: str) -> list[FunctionRef]:
    """Function definitions TorchTalk indexed in one file of the tree."""
    ix = h.ix
    rows = ix.q("SELECT s.id, s.name, s.qualname, s.kind, s.line, s.end_line FROM cpp_symbol s "  # type: ignore[attr-defined]
                "JOIN files f ON f.id = s.file_id WHERE f.path = ? AND s.is_definition ORDER BY s.line", (rel_path,))
    return [FunctionRef(i, n, q, k, rel_path, ln, end) for i, n, q, k, ln, end in rows]


def _site(call: dict) -> CallSite:
    q, callee, kind = call["qualifier"], call["callee"], call["kind"]
    if kind == "method":
        written = f"{q}.{callee}" if q else f".{callee}"
    else:
        written = f"{q}::{callee}" if q and q != "::" else (f"::{callee}" if q == "::" else callee)
    return CallSite(call["loc"]["line"], written, callee, kind)


@contextlib.contextmanager
def _pinned_function(fn_id: int):
    """Make the calls query answer for the definition with this id (its name lookup stubbed out)."""
    from torchtalk.query import callgraph
    from torchtalk.query.cppdefs import symbol
    saved = callgraph.find_function

    def pinned(ix, text, arg="function_name"):
        return symbol(ix, fn_id), []
    callgraph.find_function = pinned
    try:
        yield
    finally:
        callgraph.find_function = saved


def calls_of(h: Handle, fn: FunctionRef) -> CalleeSet:
    """What TorchTalk's calls tool says this definition calls: resolved in-tree callees, dispatcher ops, stubs,
    unresolved names. Asked by qualified name; see the module docstring for overloaded names."""
    js = _tool_json(h, "calls", function_name=fn.qualname)
    got = js["result"].get("function") if js["kind"] == "result" else None
    by_name = bool(got) and got["id"] == fn.id
    if not by_name:
        with _pinned_function(fn.id):
            js = _tool_json(h, "calls", function_name=fn.qualname)
    r = js["result"]
    out = CalleeSet(fn, by_name)
    for call, defs in r.get("resolved", []):
        out.resolved.append((_site(call), [Def(d["qualname"], d["loc"]["path"], d["loc"]["line"], d["kind"],
                                               d["is_definition"]) for d in defs]))
    for call, recs in r.get("ops", []):
        site = _site(call)
        names = sorted({rec["name"] for rec in recs})
        out.ops.append((site, names, sorted({rec["full_name"] for rec in recs})))
    for call, _regs in r.get("stubs", []):
        out.stubs.append((_site(call), call["callee"]))
    for call, _defs in r.get("launches", []):
        out.unresolved.append(_site(call))  # GPU launches: not part of these benchmarks
    out.unresolved += [_site(c) for c in r.get("unresolved", [])]
    out.macros = list(r.get("macros", []))
    return out


# ------------------------------------------------------------------ search

def binding_hits(h: Handle, name: str) -> list[tuple[str, str, int, str]]:
    """Python bindings the search tool finds under exactly this name: (name, path, line, detail)."""
    js = _tool_json(h, "search", query=name, limit=200)
    if js["kind"] != "result":
        return []
    return [(hit["name"], hit["loc"]["path"] if hit.get("loc") else "", hit["loc"]["line"] if hit.get("loc") else 0,
             hit.get("detail", "")) for hit in js["result"]["hits"]
            if hit["kind"] == "binding" and hit["name"].split(".")[-1] == name]
