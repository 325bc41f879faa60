"""The first ten minutes on the real tree: `torchtalk setup` without `claude`, then the printed
registration started as Claude Code would start it, and every tool called over MCP stdio."""

import asyncio
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from mcp import Client, StdioServerParameters

from torchtalk.tools import all_tools

pytestmark = pytest.mark.integration

# One real question per tool, and a string its answer must hold on PyTorch 2.6.0.
CALLS = {
    "get_status": ({}, "PyTorch version: 2.6.0"),
    "trace": ({"function_name": "softmax", "focus": "dispatch"}, "aten/src/ATen/native/native_functions.yaml:5541"),
    "search": ({"query": "conv", "backend": "CUDA", "limit": 5}, "showing 5 of"),
    "calls": ({"function_name": "index_select_cuda"}, "at::native::index_select_out_cuda"),
    "called_by": ({"function_name": "index_select_out_cpu_"}, "index_select.out dispatch CPU"),
    "impact": ({"function_name": "index_select_out_cpu_", "depth": 2}, "Level 2:"),
    "cuda_kernels": ({"function_name": "index_select"}, "__global__"),
    "trace_module": ({"module_name": "nn.Linear"}, "torch/nn/modules/linear.py:50"),
    "list_modules": ({"category": "optim"}, "torch/optim/sgd.py"),
    "find_similar_tests": ({"query": "cumsum", "limit": 5}, "run: "),
    "list_test_utils": ({"category": "decorators", "limit": 5}, "torch/testing/_internal/common_utils.py:594"),
    "test_file_info": ({"file_path": "test_torch"}, "test/test_torch.py"),
    "affected": ({"names": "aten/src/ATen/native/ReduceOps.cpp:495"}, "pytest test/test_ops.py"),
    "error_origin": ({"message": "RuntimeError: mat1 and mat2 shapes cannot be multiplied (64x10 and 20x30)"},
                     "aten/src/ATen/native/LinearAlgebra.cpp:191"),
}


def test_setup_prints_a_registration_that_serves_every_tool(real_index, tmp_path):
    assert set(CALLS) == {t.name for t in all_tools()}
    cache = Path(real_index.path).parents[2]  # <cache>/trees/<tree>/index.db: reuse the session's index
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    path = os.pathsep.join([str(bin_dir), "/usr/bin", "/bin"])
    assert shutil.which("claude", path=path) is None
    env = {**os.environ, "PATH": path, "TORCHTALK_CACHE_DIR": str(cache)}
    r = subprocess.run([sys.executable, "-m", "torchtalk", "setup", "--source", str(real_index.source_root)],
                       capture_output=True, text=True, env=env, cwd=tmp_path, timeout=900, check=False)
    assert r.returncode == 0, r.stdout + r.stderr
    assert "verify: get_status ok, trace softmax ok" in r.stdout
    start = r.stdout.index('{\n  "mcpServers"')
    entry = json.JSONDecoder().raw_decode(r.stdout[start:])[0]["mcpServers"]["torchtalk"]
    assert entry["type"] == "stdio" and os.path.isabs(entry["command"])

    # As Claude Code starts it: the pasted command and args, no venv on PATH, from another directory.
    params = StdioServerParameters(command=entry["command"], args=entry["args"], env={**env, **entry["env"]},
                                   cwd=str(tmp_path))

    async def go():
        async with Client(params, read_timeout_seconds=300) as c:
            tools = (await c.list_tools()).tools
            assert {t.name for t in tools} == set(CALLS)
            assert all(t.output_schema and t.annotations.read_only_hint for t in tools)
            for name, (args, expect) in CALLS.items():
                res = await c.call_tool(name, args)
                text = "\n".join(getattr(b, "text", "") for b in res.content)
                assert not res.is_error, (name, text[:500])
                assert expect in text, (name, text[:1500])
                assert res.structured_content["kind"] == "result", name

    asyncio.run(asyncio.wait_for(go(), 600))
