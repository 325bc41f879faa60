"""Pictures of graph-shaped answers on the fixture tree: nodes, edges, folding, Mermaid text, format='mermaid'."""

from __future__ import annotations

import asyncio
import json
import re
from dataclasses import dataclass, field

import pytest
from mcp import Client

from torchtalk.cli import main
from torchtalk.errors import BadArgument
from torchtalk.graph.nodes import cpp_node, op_node
from torchtalk.graph.registry import registry
from torchtalk.graph.symbols import SYMBOL_COLS, to_symbol
from torchtalk.model import Edge, EdgeKind, Loc, Node, NodeKind
from torchtalk.render.collapse import collapse
from torchtalk.render.mermaid import mermaid, text
from torchtalk.render.picture import REACHES, PEdge, Picture, PNode, node_id, picture
from torchtalk.server import build_server
from torchtalk.server.arguments import check_arguments
from torchtalk.tools import all_tools, answer, draws, get_tool, to_json


def pic_of(ix, tool, **kw) -> Picture:
    a = answer(get_tool(tool), ix, **kw)
    return picture(a.result, tool)


def edges(pic: Picture) -> set[tuple[str, str, str, str]]:
    return {(pic.nodes[e.source].label, pic.nodes[e.target].label, e.kind, e.key) for e in pic.edges.values()}


def test_trace_draws_the_op_its_kernels_per_key_and_the_cuda_kernels(indexed):
    _, ix = indexed
    pic = pic_of(ix, "trace", function_name="index_select")
    op = pic.nodes["op:index_select"]
    assert op.root and op.layer == "op" and op.loc == "aten/src/ATen/native/native_functions.yaml:87"
    got = edges(pic)
    # the launches' shortest chain, from the op's .out overload (s29-gpuo: a launch reached twice keeps it)
    assert ("index_select.out", "at::native::index_select_out_cuda", "kernel", "CUDA") in got
    assert ("index_select", "at::native::index_select_cpu_", "kernel", "CPU") in got
    assert ("torch.index_select", "index_select", "binding", "") in got
    gpu = {n.label: n.loc for n in pic.nodes.values() if n.layer == "gpu"}
    assert gpu == {
        "__global__ at::native::(anonymous)::indexSelectSmallIndex": "aten/src/ATen/native/cuda/Indexing.cu:7",
        "__global__ at::native::(anonymous)::indexSelectLargeIndex": "aten/src/ATen/native/cuda/Indexing.cu:14"}
    assert ("at::native::index_select_out_cuda_impl", "__global__ at::native::(anonymous)::indexSelectSmallIndex",
            "launch", "") in got
    # The launcher is found a few calls below the CUDA kernel; the picture links them, marked as such.
    assert ("at::native::index_select_cuda", "at::native::index_select_out_cuda_impl", REACHES, "") in got
    # Every edge ends on nodes of the picture.
    assert all(e.source in pic.nodes and e.target in pic.nodes for e in pic.edges.values())
    kernel = next(e for e in pic.edges.values() if e.kind == "kernel" and e.key == "CUDA")
    assert kernel.site == "aten/src/ATen/native/native_functions.yaml:91"  # the CUDA line of its dispatch table


def test_trace_draws_stubs_with_each_backends_kernel(indexed):
    _, ix = indexed
    got = edges(pic_of(ix, "trace", function_name="atan2"))
    assert ("TORCH_IMPL_FUNC(atan2_out)", "atan2_stub", "stub_call", "") in got
    assert ("atan2_stub", "at::native::atan2_kernel_cuda", "stub_kernel", "CUDA") in got
    assert ("atan2_stub", "at::native::(anonymous)::atan2_kernel", "stub_kernel", "CPU") in got
    assert ("at::native::atan2_kernel_cuda", "gpu_kernel_with_scalars(lambda@7)", "launch", "") in got
    assert not any(kind == REACHES for *_x, kind, _k in got)  # the stub call is the kernel's own


def test_calls_called_by_and_impact_are_drawn_around_their_function(indexed):
    _, ix = indexed
    pic = pic_of(ix, "called_by", function_name="index_select_out_cpu_")
    assert [n.label for n in pic.nodes.values() if n.root] == ["at::native::index_select_out_cpu_"]
    assert edges(pic) == {("at::native::index_select_cpu_", "at::native::index_select_out_cpu_", "call", ""),
                          ("at::native::index_select_quantized_cpu_", "at::native::index_select_out_cpu_", "call", ""),
                          ("index_select.out", "at::native::index_select_out_cpu_", "kernel", "CPU"),
                          ("index_select.out", "at::native::index_select_out_cpu_", "kernel", "QuantizedCPU")}
    pic = pic_of(ix, "impact", function_name="index_select_out_cpu_")
    got = edges(pic)
    assert ("at::native::take_along", "index_select", "dispatch_call", "") in got  # through the dispatcher
    assert ("Tensor.index_select", "index_select", "binding", "") in got  # up to Python
    pic = pic_of(ix, "calls", function_name="index_select_out_cuda_impl")
    assert {n.layer for n in pic.nodes.values()} == {"cpp", "gpu", "unresolved"}


def test_cuda_kernels_are_drawn_from_the_op(indexed):
    _, ix = indexed
    got = edges(pic_of(ix, "cuda_kernels", function_name="index_select"))
    # the launches' shortest chain, from the op's .out overload (s29-gpuo: a launch reached twice keeps it)
    assert ("index_select.out", "at::native::index_select_out_cuda", "kernel", "CUDA") in got
    assert ("at::native::index_select_out_cuda", "at::native::index_select_out_cuda_impl", "call", "") in got


def test_trace_module_is_drawn_from_the_class(py_indexed):
    _, pix = py_indexed
    pic = pic_of(pix, "trace_module", module_name="Linear")
    got = edges(pic)
    assert ("torch.nn.modules.linear.Linear", "torch.nn.modules.linear.Linear.forward", "defines", "") in got
    assert any(src == "torch.nn.modules.linear.Linear.forward" and dst == "linear" and kind == "py_call"
               for src, dst, kind, _k in got)
    assert pic.nodes["py_class:torch.nn.modules.linear.Linear"].root


def test_affected_is_drawn_from_the_change_to_the_tests_to_run(py_indexed):
    _, pix = py_indexed
    pic = pic_of(pix, "affected", names="relu")
    got = edges(pic)
    assert ("relu", "TestNNDeviceType.test_relu", "tested_by", "") in got
    assert ("relu", "OpInfo('relu')", "tested_by", "") in got
    assert pic.nodes["op:relu"].root and pic.nodes["op:relu"].layer == "op"
    assert {n.layer for n in pic.nodes.values()} == {"op", "test"}


def test_fact_nodes_are_the_graphs_nodes(indexed):
    """A picture's nodes are the graph's (the web view merges expansions on their ids)."""
    _, ix = indexed
    op = registry(ix).by_full["index_select"]
    pic = pic_of(ix, "trace", function_name="index_select")
    assert node_id(op_node(op)) in pic.nodes
    syms = [to_symbol(ix, r) for r in ix.q(f"SELECT {SYMBOL_COLS} FROM cpp_symbol WHERE name IN "
                                           "('index_select_cpu_', 'index_select_cuda') AND is_definition")]
    assert len(syms) == 2
    for sym in syms:
        assert pic.nodes[node_id(cpp_node(sym))].label == sym.display


@dataclass
class _Affected:
    """A result type no code in render/ knows: its Edges and its subject are still drawn."""

    function: Node
    by_file: dict[str, list[tuple[Edge, int]]] = field(default_factory=dict)


def test_any_result_holding_edges_is_drawn_without_code_for_it():
    f = Node(NodeKind.CPP_FUNCTION, "1", "at::native::f", Loc("a.cpp", 3))
    g = Node(NodeKind.OP, "g", "g", Loc("native_functions.yaml", 9))
    t = Node(NodeKind.TEST, "test_g", "TestG.test_g", Loc("test/test_g.py", 5))
    result = _Affected(f, {"a.cpp": [(Edge(g, f, EdgeKind.KERNEL, Loc("native_functions.yaml", 10), "CPU"), 1)],
                           "test_g.py": [(Edge(t, g, EdgeKind.PY_CALL, Loc("test/test_g.py", 7)), 2)]})
    pic = picture(result, "affected")
    assert [n.id for n in pic.nodes.values() if n.root] == ["cpp_function:1"]
    assert edges(pic) == {("g", "at::native::f", "kernel", "CPU"), ("TestG.test_g", "g", "py_call", "")}
    assert pic.nodes["test:test_g"].layer == "test" and pic.nodes["test:test_g"].loc == "test/test_g.py:5"


def _star(callers: int, ops: int) -> Picture:
    pic = Picture("star")
    pic.nodes["f"] = PNode("f", "cpp_function", "cpp", "f", "f.cpp:1", root=True)
    for i in range(callers):
        pic.nodes[f"c{i}"] = PNode(f"c{i}", "cpp_function", "cpp", f"caller{i}", f"c.cpp:{i + 1}")
        pic.edges[f"c{i}"] = PEdge(f"c{i}", f"c{i}", "f", "call")
        pic.nodes[f"cc{i}"] = PNode(f"cc{i}", "cpp_function", "cpp", f"callers_caller{i}", f"d.cpp:{i + 1}")
        pic.edges[f"cc{i}"] = PEdge(f"cc{i}", f"cc{i}", f"c{i}", "call")
    for i in range(ops):
        pic.nodes[f"o{i}"] = PNode(f"o{i}", "op", "op", f"op{i}", f"n.yaml:{i + 1}")
        pic.edges[f"o{i}"] = PEdge(f"o{i}", f"o{i}", "f", "kernel", "CPU")
    return pic


def test_big_pictures_fold_into_counted_groups_and_small_ones_do_not():
    small = collapse(_star(10, 5))
    assert not small.groups and not any(n.group for n in small.nodes.values())
    pic = collapse(_star(100, 12), budget=60, fan=8)
    shown = [n for n in pic.nodes.values() if not n.group]
    hidden = [n for n in pic.nodes.values() if n.group]
    assert len(shown) <= 60 + 8 and pic.nodes["f"] in shown  # groups of one show their node, a fan at most
    assert sum(g.count for g in pic.groups.values()) == len(hidden)  # nothing dropped: every node is counted
    labels = {g.label for g in pic.groups.values() if g.anchor == "f"}
    assert any(re.fullmatch(r"\+\d+ callers", lbl) for lbl in labels), labels
    assert all(g.count > 1 for g in pic.groups.values())  # a group of one would hide nothing
    # The fan widens while budget is left: one hub does not leave the picture a third full.
    assert len(shown) >= 40


def test_mermaid_text_is_safe_for_any_name():
    assert text('a"b<c>&d|e#f(g)[h]{i};') == "a#34;b#60;c#62;#38;d#124;e#35;f#40;g#41;#91;h#93;#123;i#125;#59;"
    pic = Picture("t")
    pic.nodes["a"] = PNode("a", "cpp_function", "cpp", "std::optional<at::Tensor> operator()|\"x\"", "a.cpp:1", True)
    pic.nodes["b"] = PNode("b", "gpu_kernel", "gpu", "__global__ k", "b.cu:2")
    pic.edges["e"] = PEdge("e", "a", "b", "launch", "", "", "a.cpp:3")
    out = mermaid(pic)
    assert out.splitlines()[0] == "flowchart LR"
    assert ('n0(["std::optional#60;at::Tensor#62; operator#40;#41;#124;#34;x#34;'
            '<br/><small>a.cpp:1</small>"]):::cpp') in out
    assert '  n0 -->|"launch"| n1' in out and "classDef gpu" in out


def test_format_mermaid_draws_the_answer_and_keeps_the_typed_answer(indexed):
    _, ix = indexed
    tool = get_tool("trace")
    text_answer = answer(tool, ix, function_name="index_select")
    drawn = answer(tool, ix, function_name="index_select", format="mermaid")
    assert drawn.text.startswith('trace("index_select") as a graph: 12 nodes, 13 edges.')
    body = drawn.text.split("```mermaid\n", 1)[1].split("\n```", 1)[0]
    assert body.startswith("flowchart LR") and "indexSelectSmallIndex" in body
    assert drawn.text.endswith(text_answer.text.splitlines()[-1])  # the same next: line
    assert to_json(tool, drawn) == to_json(tool, text_answer)
    with pytest.raises(BadArgument, match="format 'svg' is not valid; choose one of: text, mermaid"):
        answer(tool, ix, function_name="index_select", format="svg")
    # Not found is answered in words, whatever the format.
    assert answer(tool, ix, function_name="sofmax", format="mermaid").text.startswith("No op named 'sofmax'")


def test_format_is_a_parameter_of_the_graph_tools_only(indexed):
    _, ix = indexed
    drawing = {t.name for t in all_tools() if draws(t)}
    assert drawing == {"trace", "calls", "called_by", "impact", "cuda_kernels", "trace_module", "affected",
                       "error_origin"}
    with pytest.raises(BadArgument, match="search has no argument 'format'"):
        check_arguments(get_tool("search"), {"query": "relu", "format": "mermaid"})

    async def go():
        async with Client(build_server(ix)) as c:
            tools = {t.name: t for t in (await c.list_tools()).tools}
            for name, t in tools.items():
                prop = t.input_schema["properties"].get("format")
                assert (prop is not None) == (name in drawing), name
                if prop:
                    assert prop["default"] == "text" and "mermaid" in prop["description"]
            r = await c.call_tool("calls", {"function_name": "index_select_out_cuda_impl", "format": "mermaid"})
            assert not r.is_error and "```mermaid\nflowchart LR" in r.content[0].text
            assert r.structured_content["result"]["sections"][0]["launches"]  # the typed answer is unchanged
    asyncio.run(go())


def test_cli_mermaid_flag(indexed, capsys):
    tree, _ = indexed
    assert main(["cuda-kernels", "index_select", "--mermaid", "--source", str(tree)]) == 0
    out = capsys.readouterr().out
    assert out.startswith('cuda_kernels("index_select") as a graph') and "```mermaid\nflowchart LR\n" in out
    assert main(["trace", "index_select", "--format", "svg", "--source", str(tree)]) == 2
    assert "choose one of: text, mermaid" in capsys.readouterr().err
    assert main(["trace", "index_select", "--mermaid", "--json", "--source", str(tree)]) == 0
    assert json.loads(capsys.readouterr().out)["kind"] == "result"  # --json prints the typed answer
