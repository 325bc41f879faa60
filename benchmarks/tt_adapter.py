"""The ONE place the benchmarks touch TorchTalk. Re-point these functions when its API changes.

bench_coverage.py and bench_resolution.py import nothing from ``torchtalk`` themselves:
they ask these functions and get plain data back (tuples, sets, small dataclasses
defined here). Where a tool answers the question, its structured JSON (the object
``torchtalk <tool> --json`` prints and MCP clients get) is read rather than the
query's dataclasses.

What each function uses today:

- open_index:          torchtalk.source.tree.find_source + torchtalk.store.reader.Index
- generated_dir:       where the index keeps the code the tree's generators wrote (<generated>/ paths)
- trace_json:          the `trace` tool, structured JSON
- trace_resolves:      the `trace` tool: kind == "result"
- trace_kernels:       the `trace` tool (focus=dispatch): kernel name -> definitions it names
- kernel_definition:   torchtalk.graph.symbols.kernel_definitions (the lookup `trace` uses per
                       dispatch entry; asked directly by kernel name so kernels that no dispatch
                       table names can be asked too)
- function_lookup:     the `calls` tool: which definition a bare name finds first, and the others
- functions_in_file:   SQL over the index's cpp_symbol table (no tool lists a file's functions)
- calls_of:            the `calls` tool, structured JSON, asked by the definition's path:line (so every
                       overload and same-named helper can be asked); CalleeSet.by_name says whether the
                       qualified name alone would have answered for it first.
- definitions, test_methods, op_python_names, pybind_names: SQL over the index (what bench_names asks about)
- McpStdio:            `torchtalk serve` over stdio, spoken as plain JSON-RPC lines (what any MCP client sends):
                       each tool call's result (structuredContent, text) and its round-trip time.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path


@dataclass
class Handle:
    ix: object  # torchtalk.store.reader.Index
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
    overrides: list[tuple[CallSite, list[Def]]] = field(default_factory=list)  # what a virtual call may run
    ops: list[tuple[CallSite, list[str], list[str]]] = field(default_factory=list)  # (site, op base names, full)
    stubs: list[tuple[CallSite, str]] = field(default_factory=list)
    unresolved: list[CallSite] = field(default_factory=list)
    macros: list[str] = field(default_factory=list)


def bench_args(doc: str, argv: list[str] | None, add: Callable[[argparse.ArgumentParser], None] | None = None
               ) -> argparse.Namespace:
    """The command line of a census over MCP: --source (default $TORCHTALK_SOURCE), the bench's own flags
    (``add``), --json OUT. Without a source, argparse says so and exits with status 2."""
    ap = argparse.ArgumentParser(description=doc.split("\n")[0])
    ap.add_argument("--source", default=os.environ.get("TORCHTALK_SOURCE"))
    if add is not None:
        add(ap)
    ap.add_argument("--json", metavar="OUT")
    args = ap.parse_args(argv)
    if not args.source:
        ap.error("give --source /path/to/pytorch (or set TORCHTALK_SOURCE)")
    return args


class AdapterError(Exception):
    """TorchTalk could not be opened on the tree (message in one line)."""


def open_index(source: str | Path) -> Handle:
    try:
        from torchtalk.source.tree import find_source
        from torchtalk.store.reader import Index
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


def generated_dir(source: str | Path) -> Path:
    """The directory holding the files answers cite as ``<generated>/...``."""
    from torchtalk.source.tree import find_source
    return Path(find_source(str(source)).generated_dir)


def _tool_json(h: Handle, tool_name: str, **kwargs) -> dict:
    from torchtalk.tools import answer, get_tool
    from torchtalk.tools.structured import structured
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
            for d in k["definitions"]:
                dd = Def(d["qualname"], d["path"], d["line"], d["kind"], d["is_definition"])
                if dd not in defs:
                    defs.append(dd)
    return out


def kernel_definition(h: Handle, kernel_name: str, structured: bool) -> list[Def]:
    """The definitions TorchTalk names for a kernel as a dispatch table would name it."""
    from torchtalk.graph.symbols import kernel_definitions
    return [Def(d.qualname, d.path, d.line, d.kind.value, d.is_definition)
            for d in kernel_definitions(h.ix, kernel_name, structured)]


def function_lookup(h: Handle, name: str) -> tuple[Def | None, list[Def]]:
    """What the calls tool finds for a bare name: (its pick, the other candidates); (None, []) if not found."""
    js = _tool_json(h, "calls", function_name=name)
    if js["kind"] != "result":
        return None, []
    sections = js["result"]["sections"]
    f = sections[0]["symbol"]
    if f is None:
        return None, []  # a DispatchStub
    pick = Def(f["qualname"], f["path"], f["line"], f["kind"], f["is_definition"])
    others = []
    amb = js["result"].get("ambiguity")
    if amb:
        for c in amb["candidates"][1:]:
            if c["loc"]:
                others.append(Def(c["label"].split("(")[0], c["loc"]["path"], c["loc"]["line"]))
    return pick, others


# ------------------------------------------------------------------ calls

def functions_in_file(h: Handle, rel_path: str) -> list[FunctionRef]:
    """Function definitions TorchTalk indexed in one file of the tree."""
    ix = h.ix
    rows = ix.q("SELECT s.id, s.name, s.qualname, s.kind, s.line, s.end_line FROM cpp_symbol s "  # type: ignore[attr-defined]
                "JOIN files f ON f.id = s.file_id WHERE f.path = ? AND s.is_definition ORDER BY s.line", (rel_path,))
    return [FunctionRef(i, n, q, k, rel_path, ln, end) for i, n, q, k, ln, end in rows]


def definitions(h: Handle) -> list[Def]:
    """Every C++ definition TorchTalk indexed (bench_names asks for each by the name the index gives it)."""
    rows = h.ix.q("SELECT s.qualname, f.path, s.line, s.kind FROM cpp_symbol s JOIN files f "  # type: ignore[attr-defined]
                  "ON f.id = s.file_id WHERE s.is_definition AND s.qualname != '' ORDER BY s.id")
    return [Def(q, p, ln, k) for q, p, ln, k in rows]


def test_methods(h: Handle) -> list[tuple[str, str, str, int]]:
    """(path, class or "", test name, line) of every test TorchTalk indexed."""
    return h.ix.q("SELECT f.path, coalesce(c.name, ''), m.name, m.line FROM test_method m "  # type: ignore[attr-defined]
                  "LEFT JOIN test_class c ON c.id = m.cls JOIN files f ON f.id = m.file_id ORDER BY m.id")


def op_python_names(h: Handle) -> list[str]:
    """The Python names TorchTalk binds to an op (torch.add, Tensor.add_, torch.nn.functional.relu)."""
    return [r[0] for r in h.ix.q("SELECT DISTINCT name FROM py_api WHERE op != '' ORDER BY name")]  # type: ignore[attr-defined]


def pybind_names(h: Handle) -> list[str]:
    """The Python name of every pybind11 .def binding (its bare name where the code does not say its module)."""
    return [r[0] for r in h.ix.q("SELECT name FROM py_api WHERE kind = 'pybind' ORDER BY name")]  # type: ignore[attr-defined]


def _site(edge: dict) -> CallSite:
    """A call site from an edge of the calls answer (its site, and the callee as the answer names it)."""
    dst = edge["dst"]
    label = edge.get("note") or dst["label"] if edge["kind"] == "dispatch_call" else dst["label"]
    written = edge.get("written") or label
    return CallSite(edge["site"]["line"], written, dst["label"].split("::")[-1].split(".")[-1], edge["kind"])


def calls_of(h: Handle, fn: FunctionRef) -> CalleeSet:
    """What TorchTalk's calls tool says this definition calls: resolved in-tree callees, dispatcher ops, stubs,
    unresolved names. Asked by path:line, which names exactly this definition."""
    first = _tool_json(h, "calls", function_name=fn.qualname)
    sections = first["result"].get("sections", []) if first["kind"] == "result" else []
    by_name = bool(sections) and (sections[0]["symbol"] or {}).get("id") == fn.id
    js = _tool_json(h, "calls", function_name=f"{fn.path}:{fn.line}")
    r = js["result"]["sections"][0] if js["kind"] == "result" else {}
    out = CalleeSet(fn, by_name)
    by_site: dict[tuple[int, str], list[dict]] = {}
    overriding: dict[tuple[int, str], list[dict]] = {}
    for e in r.get("calls", []):  # one call's candidates share its site and the call as written; the methods a
        # template calls on what the call hands it (how: handed, Note [Handed objects]) are calls of their own
        if e.get("how") in ("override", "override_of_body"):  # what a virtual call may run (Note [Virtual calls]),
            overriding.setdefault((e["site"]["line"], e.get("written", "")), []).append(e)  # not what it names
            continue
        by_site.setdefault((e["site"]["line"], e.get("written", ""), e.get("how") == "handed"), []).append(e)
    for edges in by_site.values():
        defs = [_def(h, e["dst"]) for e in edges]
        out.resolved.append((_site(edges[0]), [d for d in defs if d is not None]))
    for edges in overriding.values():
        out.overrides.append((_site(edges[0]), [d for e in edges if (d := _def(h, e["dst"])) is not None]))
    ops_by_site: dict[tuple[int, str], list[dict]] = {}
    for e in r.get("ops", []):
        ops_by_site.setdefault((e["site"]["line"], e.get("written", "")), []).append(e)
    for edges in ops_by_site.values():
        full = sorted({e["dst"]["key"] for e in edges})
        out.ops.append((_site(edges[0]), sorted({f.split(".")[0] for f in full}), full))
    for s in r.get("stubs", []):
        out.stubs.append((_site(s["call"]), s["call"]["dst"]["key"]))
    out.unresolved += [_site(e) for e in r.get("launches", [])]  # GPU launches: not part of these benchmarks
    out.unresolved += [_site(e) for e in r.get("unresolved", [])]
    out.macros = list(r.get("macros", []))
    return out


def _def(h: Handle, node: dict) -> Def | None:
    """The definition a C++ node of an answer stands for (nodes carry the symbol's row id)."""
    from torchtalk.graph.symbols import symbol
    if not node["key"].isdigit():
        return None
    d = symbol(h.ix, int(node["key"]))
    return Def(d.qualname, d.path, d.line, d.kind.value, d.is_definition) if d else None


# ------------------------------------------------------------------ search

def binding_hits(h: Handle, name: str) -> list[tuple[str, str, int, str]]:
    """Python bindings the search tool finds under exactly this name: (name, path, line, detail)."""
    js = _tool_json(h, "search", query=name, limit=200)
    if js["kind"] != "result":
        return []
    return [(hit["name"], hit["loc"]["path"] if hit.get("loc") else "", hit["loc"]["line"] if hit.get("loc") else 0,
             hit.get("detail", "")) for hit in js["result"]["hits"]
            if hit["kind"] == "binding" and hit["name"].split(".")[-1] == name]


# ------------------------------------------------------------------ autograd nodes

def autograd_links(h: Handle) -> dict[str, list[tuple[str, str]]]:
    """Autograd node name -> [(op full name, dispatch key)] for every op whose generated Autograd kernel creates
    it: the AUTOGRAD edges trace shows under "Generated code" (grad_fn lines)."""
    from torchtalk.graph import graph
    from torchtalk.graph.nodes import op_node
    from torchtalk.graph.registry import registry
    from torchtalk.model import EdgeKind
    g = graph(h.ix)
    out: dict[str, list[tuple[str, str]]] = {}
    for op in registry(h.ix).by_full.values():
        for e in g.out(op_node(op), [EdgeKind.AUTOGRAD]):
            out.setdefault(e.dst.key, []).append((op.full_name, e.key))
    return out


def autograd_search_hit(h: Handle, name: str) -> tuple[str, int] | None:
    """The search tool's exact "autograd node" hit for a node name: (path, line), or None."""
    js = _tool_json(h, "search", query=name, limit=5)
    if js["kind"] != "result":
        return None
    for hit in js["result"]["hits"]:
        if hit["kind"] == "autograd node" and hit["name"] == name and hit.get("loc"):
            return hit["loc"]["path"], hit["loc"]["line"]
    return None


# ------------------------------------------------------------------ Python entry points

@dataclass
class PyTrace:
    kind: str  # result | not_found
    ops: list[str]  # op full names the answer shows
    entry: tuple[str, int] | None  # the Python function's definition (path, line), when trace went through one
    via: str  # how a name that is not an op's was resolved (alias, dunder, autograd node), as the answer says
    bindings: list[str]  # for a name bound to C++ that is not an op: the bound C++ function


def trace_python(h: Handle, name: str) -> PyTrace:
    """What trace answers for a Python name: the ops, the Python definition it went through, the binding."""
    js = trace_json(h, name, focus="yaml")
    if js["kind"] != "result":
        return PyTrace(js["kind"], [], None, "", [])
    r = js["result"]
    entry = r.get("entry")
    loc = (entry["loc"]["path"], entry["loc"]["line"]) if entry and entry.get("loc") else None
    binds = [(b.get("function") or {}).get("qualname") or b["edge"]["dst"]["label"] for b in r.get("bindings", [])]
    return PyTrace("result", [o["op"]["full_name"] for o in r.get("ops", [])], loc, r.get("via", ""), binds)


# ------------------------------------------------------------------ MCP over stdio

class McpStdio:
    """A `torchtalk serve` process over stdio, spoken as plain JSON-RPC lines: what the server costs, without
    the Python SDK client's own work (it re-validates every structuredContent against the outputSchema with
    jsonschema, 5-45 ms for the larger answers; other clients do this differently or not at all).

    ``command`` is the server's command line (default: this interpreter's ``-m torchtalk serve --source``);
    ``env`` its environment (TORCHTALK_CACHE_DIR says which index it serves)."""

    def __init__(self, source: str | Path, env: dict | None = None, command: list[str] | None = None) -> None:
        from mcp.types import LATEST_PROTOCOL_VERSION
        cmd = command or [sys.executable, "-m", "torchtalk", "serve", "--source", str(source)]
        self.proc = subprocess.Popen(cmd, env=env, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                     stderr=subprocess.DEVNULL, text=True)
        self.next_id = 0
        self.request("initialize", {"protocolVersion": LATEST_PROTOCOL_VERSION, "capabilities": {},
                                    "clientInfo": {"name": "bench", "version": "0"}})
        self._send({"jsonrpc": "2.0", "method": "notifications/initialized"})

    def _send(self, msg: dict) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write(json.dumps(msg) + "\n")
        self.proc.stdin.flush()

    def request(self, method: str, params: dict) -> dict:
        """The reply to one request (the whole JSON-RPC message)."""
        self.next_id += 1
        self._send({"jsonrpc": "2.0", "id": self.next_id, "method": method, "params": params})
        assert self.proc.stdout is not None
        while True:
            line = self.proc.stdout.readline()
            if not line:
                raise AdapterError(f"the server closed its stdout (exit status {self.proc.poll()})")
            msg = json.loads(line)
            if msg.get("id") == self.next_id:
                return msg

    def call(self, tool: str, arguments: dict) -> tuple[dict, float]:
        """(the tools/call result: structuredContent, content, isError; seconds). A JSON-RPC error raises."""
        t0 = time.perf_counter()
        msg = self.request("tools/call", {"name": tool, "arguments": arguments})
        dt = time.perf_counter() - t0
        if "error" in msg:
            raise AdapterError(f"{tool}({arguments}) failed: {msg['error']}")
        return msg["result"], dt

    def tool(self, tool: str, **args: object) -> tuple[dict, str]:
        """(structuredContent, text) of one call, as an agent gets them; AdapterError when the tool answered
        with an error."""
        result, _dt = self.call(tool, args)
        text = "".join(c.get("text", "") for c in result.get("content", []))
        if result.get("isError"):
            raise AdapterError(f"{tool}({args}) answered with an error: {text[:300]}")
        return result.get("structuredContent") or {}, text

    def close(self) -> None:
        if self.proc.stdin is not None:
            self.proc.stdin.close()
        self.proc.terminate()
        try:
            self.proc.wait(timeout=30)
        except subprocess.TimeoutExpired:  # never lose a benchmark's answers to a slow exit
            print("tt_adapter: the server had not ended 30 s after SIGTERM: killed", file=sys.stderr)
            self.proc.kill()
            self.proc.wait()

    def __enter__(self) -> McpStdio:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
