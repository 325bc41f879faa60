"""Tests of torchtalk.source.codegen (the job, inputs hash and manifest) and model.codegen.

Unit tests use small fake trees whose "generators" succeed, fail, hang or misbehave.
The integration tests at the end run PyTorch's real generators and are skipped unless
TORCHTALK_TEST_SOURCE (2.6.0) / TORCHTALK_TEST_SOURCE_1131 (1.13.1) name real trees.
"""

from __future__ import annotations

import json
import os
import textwrap
import time
from pathlib import Path

import pytest

from torchtalk.model.codegen import template_for
from torchtalk.source import codegen
from torchtalk.source.codegen import (
    MANIFEST_NAME,
    codegen_inputs_hash,
    generated_files_to_index,
    read_manifest,
    start_codegen,
)
from torchtalk.source.codegen.spec import torchgen_argv

# --------------------------------------------------------------------------- fakes

TORCHGEN_OK = """
import sys
def main():
    out = sys.argv[sys.argv.index("-d") + 1]
    import os
    os.makedirs(out, exist_ok=True)
    with open(os.path.join(out, "RegisterCPU.cpp"), "w") as f:
        f.write("void wrapper_CPU_atan2() {}\\n")
    with open(os.path.join(out, "OperatorsEverything.cpp"), "w") as f:
        f.write("// everything\\n")
"""

AUTOGRAD_OK = """
import os
def generate_code(gen_dir, native_functions_path=None, tags_path=None, install_dir=None,
                  subset=None, **kw):
    d = os.path.join(str(gen_dir), "torch/csrc/autograd/generated")
    os.makedirs(d, exist_ok=True)
    name = {"pybindings": "python_torch_functions_0.cpp", "libtorch": "VariableType_0.cpp",
            None: "all.cpp"}[subset]
    with open(os.path.join(d, name), "w") as f:
        f.write("// %s\\n" % subset)
"""


def make_tree(root: Path, torchgen: str | None = TORCHGEN_OK, autograd: str | None = AUTOGRAD_OK) -> Path:
    tree = root / "tree"
    (tree / "aten/src/ATen/native").mkdir(parents=True)
    (tree / "aten/src/ATen/native/native_functions.yaml").write_text(
        "- func: atan2(Tensor self, Tensor other) -> Tensor\n")
    (tree / "aten/src/ATen/native/tags.yaml").write_text("- tag: core\n")
    (tree / "aten/src/ATen/templates").mkdir()
    (tree / "aten/src/ATen/templates/RegisterDispatchKey.cpp").write_text("// ${generated_comment}\n")
    (tree / "tools/autograd/templates").mkdir(parents=True)
    (tree / "tools/autograd/derivatives.yaml").write_text("- name: atan2\n")
    (tree / "tools/autograd/deprecated.yaml").write_text("[]\n")
    (tree / "tools/autograd/__init__.py").write_text("")
    (tree / "tools/__init__.py").write_text("")
    (tree / "torch").mkdir()
    (tree / "torch/unrelated.py").write_text("x = 1\n")
    if torchgen is not None:
        (tree / "torchgen").mkdir()
        (tree / "torchgen/__init__.py").write_text("")
        (tree / "torchgen/gen.py").write_text(textwrap.dedent(torchgen))
    if autograd is not None:
        (tree / "tools/setup_helpers").mkdir(parents=True)
        (tree / "tools/setup_helpers/__init__.py").write_text("")
        (tree / "tools/setup_helpers/generate_code.py").write_text(textwrap.dedent(autograd))
    return tree


def snapshot(tree: Path) -> dict[str, tuple[int, int]]:
    out = {}
    for dirpath, dirs, files in os.walk(tree):
        for name in dirs + files:
            p = Path(dirpath) / name
            st = p.lstat()
            out[p.relative_to(tree).as_posix()] = (st.st_size, st.st_mtime_ns if p.is_file() else 0)
    return out


def leftovers(out_dir: Path) -> list[str]:
    return sorted(p.name for p in out_dir.parent.glob(f".{out_dir.name}.tmp-*"))


# --------------------------------------------------------------------------- success path


def test_fake_generators_succeed_and_output_is_placed(tmp_path):
    tree = make_tree(tmp_path)
    before = snapshot(tree)
    out = tmp_path / "gen"
    job = start_codegen(tree, out, timeout=60)
    res = job.wait()
    assert res.ok, res.reason
    assert res.reason == ""
    assert (out / "aten/src/ATen/RegisterCPU.cpp").read_text().startswith("void wrapper_CPU_atan2")
    # restricted mode: the two subsets, not the "python" one
    assert res.generators["autograd"].files == [
        "torch/csrc/autograd/generated/VariableType_0.cpp",
        "torch/csrc/autograd/generated/python_torch_functions_0.cpp",
    ]
    assert "aten/src/ATen/RegisterCPU.cpp" in res.generators["torchgen"].files
    assert set(res.files) >= {"aten/src/ATen/RegisterCPU.cpp", "torch/csrc/autograd/generated/VariableType_0.cpp"}
    assert res.seconds > 0 and res.cpu_seconds >= 0
    man = read_manifest(out)
    assert man["inputs_hash"] == codegen_inputs_hash(tree) == res.inputs_hash
    assert man["generators"]["torchgen"]["ok"] is True
    # indexing skips the Everything duplicate
    idx = generated_files_to_index(out)
    assert "aten/src/ATen/RegisterCPU.cpp" in idx
    assert "aten/src/ATen/OperatorsEverything.cpp" not in idx
    assert snapshot(tree) == before, "the tree was modified"
    assert not leftovers(out)
    assert not (tree / "torchgen/__pycache__").exists()
    assert job.wait() is res  # idempotent


def test_full_mode_runs_generate_code_once_without_subset(tmp_path):
    tree = make_tree(tmp_path)
    res = start_codegen(tree, tmp_path / "gen", full=True).wait()
    assert res.ok, res.reason
    assert res.generators["autograd"].files == ["torch/csrc/autograd/generated/all.cpp"]


def test_rerun_replaces_previous_output_atomically(tmp_path):
    tree = make_tree(tmp_path)
    out = tmp_path / "gen"
    assert start_codegen(tree, out).wait().ok
    (out / "stale.cpp").write_text("old")
    res = start_codegen(tree, out).wait()
    assert res.ok
    assert not (out / "stale.cpp").exists()
    assert (out / "aten/src/ATen/RegisterCPU.cpp").is_file()
    assert not leftovers(out)


def test_a_foreign_out_dir_is_never_replaced(tmp_path):
    tree = make_tree(tmp_path)
    out = tmp_path / "gen"
    out.mkdir()
    (out / "mine.txt").write_text("precious")
    res = start_codegen(tree, out).wait()
    assert not res.ok and "not made by torchtalk" in res.reason
    assert (out / "mine.txt").read_text() == "precious"
    empty = tmp_path / "empty"
    empty.mkdir()
    assert start_codegen(tree, empty).wait().ok


def test_torchgen_argv_adapts_to_the_trees_options(tmp_path):
    old = '"-d", "--install_dir"  "--mps" "--backend_whitelist" "--generate"'
    new = ('"--install-dir" "--aoti-install-dir" "--aoti_install_dir" "--mps" "--backend-whitelist" '
           '"--backend_whitelist" "--generate"')
    a_old = torchgen_argv(old, tmp_path, False, ("CPU",))
    assert "--aoti-install-dir" not in a_old and "--backend_whitelist" in a_old
    assert a_old[:4] == ["-s", "aten/src/ATen", "-d", str(tmp_path / "aten/src/ATen")]
    a_new = torchgen_argv(new, tmp_path, False, ("CPU",))
    assert a_new[a_new.index("--aoti-install-dir") + 1] == str(tmp_path / codegen.AOTI_DIR)
    assert a_new[a_new.index("--generate") + 1] == "sources"
    a_full = torchgen_argv(new, tmp_path, True, ("CPU",))
    assert "--generate" not in a_full and "--backend_whitelist" not in a_full


# --------------------------------------------------------------------------- failures


def test_missing_generator_gives_reason_and_others_still_run(tmp_path):
    tree = make_tree(tmp_path, autograd=None)
    out = tmp_path / "gen"
    res = start_codegen(tree, out).wait()
    assert not res.ok
    assert "autograd" in res.reason and "generate_code.py" in res.reason
    assert "\n" not in res.reason
    assert res.generators["torchgen"].ok
    assert (out / "aten/src/ATen/RegisterCPU.cpp").is_file()
    assert res.files == res.generators["torchgen"].files


def test_no_generator_at_all(tmp_path):
    tree = make_tree(tmp_path, torchgen=None, autograd=None)
    out = tmp_path / "gen"
    res = start_codegen(tree, out).wait()
    assert not res.ok and res.files == []
    assert "torchgen/gen.py" in res.reason
    assert not out.exists()


def test_not_a_tree(tmp_path):
    res = start_codegen(tmp_path / "nothing", tmp_path / "gen").wait()
    assert not res.ok
    assert "not a PyTorch source tree" in res.reason


def test_generator_exception_is_a_one_line_reason(tmp_path):
    tree = make_tree(tmp_path, torchgen="def main():\n    raise RuntimeError('boom\\nsecond line')\n")
    out = tmp_path / "gen"
    res = start_codegen(tree, out).wait()
    assert not res.ok
    assert res.generators["torchgen"].reason == "RuntimeError: boom"
    assert res.reason == "torchgen: RuntimeError: boom"
    assert res.generators["autograd"].ok  # the other generator's output is kept
    assert (out / "torch/csrc/autograd/generated/VariableType_0.cpp").is_file()
    assert "Traceback" in (out / codegen.LOG_NAME).read_text()


def test_missing_module_reason(tmp_path):
    tree = make_tree(tmp_path, torchgen="import torchtalk_no_such_module_xyz\ndef main(): pass\n")
    res = start_codegen(tree, tmp_path / "gen").wait()
    assert not res.ok
    assert "ModuleNotFoundError" in res.generators["torchgen"].reason
    assert "torchtalk_no_such_module_xyz" in res.generators["torchgen"].reason


def test_nonzero_exit_reports_last_stderr_line(tmp_path):
    tree = make_tree(
        tmp_path,
        torchgen="import sys\ndef main():\n"
                 "    sys.stderr.write('usage: gen.py\\ngen.py: error: unrecognized arguments: --mps\\n')\n"
                 "    sys.exit(2)\n",
    )
    res = start_codegen(tree, tmp_path / "gen").wait()
    r = res.generators["torchgen"].reason
    assert r.startswith("exited with status 2")
    assert "unrecognized arguments: --mps" in r


def test_driver_crash_reports_status(tmp_path):
    tree = make_tree(tmp_path, torchgen="import os\ndef main():\n    print('dying now', flush=True)\n    os._exit(3)\n")
    res = start_codegen(tree, tmp_path / "gen").wait()
    assert not res.ok
    r = res.generators["torchgen"].reason
    assert "exited with status 3" in r and "dying now" in r
    assert res.generators["autograd"].ok  # ran first, reported before the crash


def test_writes_into_the_tree_are_refused(tmp_path):
    evil = """
    import os, pathlib
    def main():
        os.makedirs("torch/csrc/inductor/aoti_torch/generated", exist_ok=True)
        with open("torch/csrc/inductor/aoti_torch/generated/c_shim_cpu.cpp", "w") as f:
            f.write("x")
    """
    tree = make_tree(tmp_path, torchgen=evil)
    before = snapshot(tree)
    res = start_codegen(tree, tmp_path / "gen").wait()
    assert not res.ok
    assert "refused a write outside its output directory" in res.generators["torchgen"].reason
    assert snapshot(tree) == before


@pytest.mark.parametrize(
    "code",
    [
        "import pathlib\ndef main():\n    pathlib.Path('x.txt').write_text('x')\n",
        "import os\ndef main():\n    os.close(os.open('x.txt', os.O_WRONLY | os.O_CREAT))\n",
        "import os\ndef main():\n    os.rename('torch/unrelated.py', 'torch/moved.py')\n",
        "import os\ndef main():\n    os.unlink('torch/unrelated.py')\n",
        "import shutil\ndef main():\n    shutil.copy('torch/unrelated.py', 'copy.py')\n",
    ],
)
def test_every_kind_of_write_outside_is_refused(tmp_path, code):
    tree = make_tree(tmp_path, torchgen=code)
    before = snapshot(tree)
    res = start_codegen(tree, tmp_path / "gen").wait()
    assert not res.generators["torchgen"].ok
    assert "PermissionError" in res.generators["torchgen"].reason
    assert snapshot(tree) == before


def test_timeout_kills_the_generators(tmp_path):
    tree = make_tree(tmp_path, torchgen="import time\ndef main():\n    time.sleep(60)\n")
    out = tmp_path / "gen"
    t0 = time.monotonic()
    job = start_codegen(tree, out, timeout=3)
    pid = job.pid
    res = job.wait()
    assert time.monotonic() - t0 < 20
    assert not res.ok
    assert res.generators["torchgen"].reason.startswith("timed out after 3 s")
    assert res.generators["autograd"].ok  # finished before the timeout: kept
    with pytest.raises(ProcessLookupError):
        os.kill(pid, 0)
    assert not leftovers(out)


def test_cancel_and_keyboard_interrupt_kill_and_leave_out_dir_alone(tmp_path, monkeypatch):
    tree = make_tree(tmp_path, torchgen="import time\ndef main():\n    time.sleep(60)\n")
    out = tmp_path / "gen"
    out.mkdir()
    (out / "previous.cpp").write_text("kept")
    (out / MANIFEST_NAME).write_text("{}")  # an earlier output of ours

    job = start_codegen(tree, out, timeout=60)
    pid = job.pid
    job.cancel()
    with pytest.raises(ProcessLookupError):
        os.kill(pid, 0)
    res = job.wait()
    assert not res.ok and "cancelled" in res.reason
    assert (out / "previous.cpp").read_text() == "kept"
    assert not leftovers(out)

    job = start_codegen(tree, out, timeout=60)
    pid = job.pid

    real_wait = job._proc.wait
    calls = []

    def interrupted(*a, **k):  # Ctrl-C while waiting for the generators
        calls.append(1)
        if len(calls) == 1:
            raise KeyboardInterrupt
        return real_wait(*a, **k)

    monkeypatch.setattr(job._proc, "wait", interrupted)
    with pytest.raises(KeyboardInterrupt):
        job.wait()
    assert job._proc.returncode == -9  # killed (and reaped) by wait()'s handler
    with pytest.raises(ProcessLookupError):
        os.kill(pid, 0)
    assert (out / "previous.cpp").read_text() == "kept"
    assert not leftovers(out)


def test_context_manager_cancels_an_unwaited_job(tmp_path):
    tree = make_tree(tmp_path, torchgen="import time\ndef main():\n    time.sleep(60)\n")
    with start_codegen(tree, tmp_path / "gen") as job:
        pid = job.pid
    time.sleep(0.2)
    with pytest.raises(ProcessLookupError):
        os.kill(pid, 0)


def test_stale_temp_dirs_of_dead_runs_are_removed(tmp_path):
    tree = make_tree(tmp_path)
    out = tmp_path / "gen"
    stale = tmp_path / ".gen.tmp-dead"
    stale.mkdir()
    (stale / "pid").write_text("999999999")
    (stale / "half.cpp").write_text("x")
    res = start_codegen(tree, out).wait()
    assert res.ok
    assert not stale.exists()


def test_generator_imports_come_from_the_tree(tmp_path, monkeypatch):
    # A torchgen elsewhere on PYTHONPATH must not shadow the tree's.
    other = tmp_path / "other"
    (other / "torchgen").mkdir(parents=True)
    (other / "torchgen/__init__.py").write_text("")
    (other / "torchgen/gen.py").write_text("def main():\n    raise SystemExit('wrong torchgen')\n")
    monkeypatch.setenv("PYTHONPATH", str(other))
    tree = make_tree(tmp_path)
    res = start_codegen(tree, tmp_path / "gen").wait()
    assert res.ok, res.reason


# --------------------------------------------------------------------------- inputs hash


def test_inputs_hash_changes_only_with_inputs(tmp_path):
    tree = make_tree(tmp_path)
    h0 = codegen_inputs_hash(tree)
    assert h0 == codegen_inputs_hash(tree)
    assert len(h0) == 64

    # unrelated files do not count
    (tree / "torch/unrelated.py").write_text("x = 2  # changed\n")
    (tree / "README.md").write_text("hello")
    (tree / "torchgen/notes.txt").write_text("not python")
    (tree / "torchgen/__pycache__").mkdir()
    (tree / "torchgen/__pycache__/gen.cpython-311.pyc").write_bytes(b"\0")
    assert codegen_inputs_hash(tree) == h0

    seen = {h0}

    def changed() -> str:
        h = codegen_inputs_hash(tree)
        assert h not in seen
        seen.add(h)
        return h

    nf = tree / "aten/src/ATen/native/native_functions.yaml"
    nf.write_text(nf.read_text() + "- func: relu(Tensor self) -> Tensor\n")
    changed()
    st = nf.stat()
    os.utime(nf, ns=(st.st_atime_ns, st.st_mtime_ns + 10_000_000))  # touched, same size
    changed()
    (tree / "aten/src/ATen/templates/NewTemplate.h").write_text("x")
    changed()
    (tree / "tools/autograd/templates/python_torch_functions.cpp").write_text("x")
    changed()
    (tree / "torchgen/api").mkdir()
    (tree / "torchgen/api/types.py").write_text("x = 1\n")
    changed()
    (tree / "tools/autograd/gen_python_functions.py").write_text("x = 1\n")
    changed()
    (tree / "tools/autograd/derivatives.yaml").write_text("- name: atan2\n- name: relu\n")
    changed()
    (tree / "tools/autograd/deprecated.yaml").unlink()
    changed()
    (tree / "tools/setup_helpers/generate_code.py").write_text("# changed\n")
    changed()
    (tree / "aten/src/ATen/native/tags.yaml").write_text("- tag: core\n- tag: pointwise\n")
    changed()


def test_inputs_hash_is_fast_on_a_fake_tree(tmp_path):
    tree = make_tree(tmp_path)
    for i in range(300):
        (tree / "torchgen" / f"m{i}.py").write_text("x = 1\n")
    t = time.perf_counter()
    codegen_inputs_hash(tree)
    assert time.perf_counter() - t < 0.3


# --------------------------------------------------------------------------- templates & index


@pytest.mark.parametrize(
    "gen, expected",
    [
        ("torch/csrc/autograd/generated/python_torch_functions_2.cpp",
         ("tools/autograd/gen_python_functions.py", "tools/autograd/templates/python_torch_functions.cpp")),
        ("torch/csrc/autograd/generated/python_torch_functionsEverything.cpp",
         ("tools/autograd/gen_python_functions.py", "tools/autograd/templates/python_torch_functions.cpp")),
        ("torch/csrc/autograd/generated/python_variable_methods.cpp",
         ("tools/autograd/gen_python_functions.py", "tools/autograd/templates/python_variable_methods.cpp")),
        ("torch/csrc/autograd/generated/python_functions_3.cpp",
         ("tools/autograd/gen_autograd_functions.py", "tools/autograd/templates/python_functions.cpp")),
        ("torch/csrc/autograd/generated/Functions.h",
         ("tools/autograd/gen_autograd_functions.py", "tools/autograd/templates/Functions.h")),
        ("torch/csrc/autograd/generated/VariableType_4.cpp",
         ("tools/autograd/gen_variable_type.py", "tools/autograd/templates/VariableType.cpp")),
        ("torch/csrc/autograd/generated/ADInplaceOrViewType_1.cpp",
         ("tools/autograd/gen_inplace_or_view_type.py", "tools/autograd/templates/ADInplaceOrViewType.cpp")),
        ("torch/csrc/autograd/generated/TraceType_0.cpp",
         ("tools/autograd/gen_trace_type.py", "tools/autograd/templates/TraceType.cpp")),
        ("RegisterCPU.cpp", ("torchgen/gen.py", "aten/src/ATen/templates/RegisterDispatchKey.cpp")),
        ("aten/src/ATen/RegisterCPU.cpp", ("torchgen/gen.py", "aten/src/ATen/templates/RegisterDispatchKey.cpp")),
        ("aten/src/ATen/RegisterCompositeExplicitAutogradNonFunctional.cpp",
         ("torchgen/gen.py", "aten/src/ATen/templates/RegisterDispatchKey.cpp")),
        ("aten/src/ATen/RegisterBackendSelect.cpp",
         ("torchgen/gen.py", "aten/src/ATen/templates/RegisterBackendSelect.cpp")),
        ("aten/src/ATen/RegisterSchema.cpp", ("torchgen/gen.py", "aten/src/ATen/templates/RegisterSchema.cpp")),
        ("aten/src/ATen/RegisterFunctionalization_2.cpp",
         ("torchgen/gen.py", "aten/src/ATen/templates/RegisterFunctionalization.cpp")),
        ("aten/src/ATen/Operators_3.cpp", ("torchgen/gen.py", "aten/src/ATen/templates/Operators.cpp")),
        ("aten/src/ATen/Operators.h", ("torchgen/gen.py", "aten/src/ATen/templates/Operators.h")),
        ("aten/src/ATen/Functions.h", ("torchgen/gen.py", "aten/src/ATen/templates/Functions.h")),
        ("aten/src/ATen/CPUFunctions.h", ("torchgen/gen.py", "aten/src/ATen/templates/DispatchKeyFunctions.h")),
        ("aten/src/ATen/CUDAFunctions_inl.h",
         ("torchgen/gen.py", "aten/src/ATen/templates/DispatchKeyFunctions_inl.h")),
        ("aten/src/ATen/UfuncCPU_add.cpp", ("torchgen/gen.py", "aten/src/ATen/templates/UfuncCPU.cpp")),
        ("aten/src/ATen/UfuncCPUKernel_add.cpp", ("torchgen/gen.py", "aten/src/ATen/templates/UfuncCPUKernel.cpp")),
        ("aten/src/ATen/UfuncCUDA_add.cu", ("torchgen/gen.py", "aten/src/ATen/templates/UfuncCUDA.cu")),
        ("aten/src/ATen/core/TensorBody.h", ("torchgen/gen.py", "aten/src/ATen/templates/TensorBody.h")),
        ("aten/src/ATen/ops/atan2_ops.h", ("torchgen/gen.py", "aten/src/ATen/templates/Operator.h")),
        ("torch/csrc/inductor/aoti_torch/generated/c_shim_cpu.cpp", ("torchgen/gen_aoti_c_shim.py", "")),
        ("torch/testing/_internal/generated/annotated_fn_args.py",
         ("tools/autograd/gen_annotated_fn_args.py", "tools/autograd/templates/annotated_fn_args.py.in")),
        ("aten/src/ATen/RegisterNoSuchKey.cpp", ("", "")),
        ("torch/csrc/autograd/generated/mystery.cpp", ("", "")),
        ("some/other/file.cpp", ("", "")),
        ("", ("", "")),
    ],
)
def test_template_for(gen, expected):
    assert template_for(gen) == expected


def test_generated_files_to_index_without_manifest(tmp_path):
    out = tmp_path / "gen"
    files = [
        "aten/src/ATen/RegisterCPU.cpp",
        "aten/src/ATen/Operators_0.cpp",
        "aten/src/ATen/OperatorsEverything.cpp",
        "aten/src/ATen/Operators.h",
        "aten/src/ATen/Functions.h",
        "aten/src/ATen/CPUFunctions_inl.h",
        "aten/src/ATen/CPUFunctions.h",
        "aten/src/ATen/RegisterSchema.cpp",
        "aten/src/ATen/Declarations.yaml",
        "aten/src/ATen/core/TensorBody.h",
        "aten/src/ATen/UfuncCUDA_add.cu",
        "torch/csrc/autograd/generated/Functions.h",
        "torch/csrc/autograd/generated/python_torch_functions_1.cpp",
        "torch/csrc/autograd/generated/python_torch_functionsEverything.cpp",
        "torch/csrc/autograd/generated/templates/VariableType.cpp",
        "torch/testing/_internal/generated/annotated_fn_args.py",
    ]
    for f in files:
        (out / f).parent.mkdir(parents=True, exist_ok=True)
        (out / f).write_text("x")
    assert generated_files_to_index(out) == [
        "aten/src/ATen/Operators_0.cpp",
        "aten/src/ATen/RegisterCPU.cpp",
        "aten/src/ATen/UfuncCUDA_add.cu",
        "torch/csrc/autograd/generated/Functions.h",
        "torch/csrc/autograd/generated/python_torch_functions_1.cpp",
    ]


def test_generated_files_to_index_uses_only_successful_generators(tmp_path):
    out = tmp_path / "gen"
    for f in ("aten/src/ATen/RegisterCPU.cpp", "torch/csrc/autograd/generated/VariableType_0.cpp"):
        (out / f).parent.mkdir(parents=True, exist_ok=True)
        (out / f).write_text("x")
    (out / MANIFEST_NAME).write_text(json.dumps({"generators": {
        "torchgen": {"ok": True, "files": ["aten/src/ATen/RegisterCPU.cpp"]},
        "autograd": {"ok": False, "files": ["torch/csrc/autograd/generated/VariableType_0.cpp"]},
    }}))
    assert generated_files_to_index(out) == ["aten/src/ATen/RegisterCPU.cpp"]


# --------------------------------------------------------------------------- integration


def _real_tree(var: str) -> Path:
    p = os.environ.get(var)
    if not p or not (Path(p) / "aten/src/ATen/native/native_functions.yaml").is_file():
        pytest.skip(f"{var} does not point at a PyTorch source tree")
    return Path(p)


def _check_real_output(tree: Path, tmp_path: Path, wrapper: str, full: bool = False) -> codegen.CodegenResult:
    before = snapshot(tree)
    out = tmp_path / "generated"
    res = start_codegen(tree, out, timeout=600, full=full).wait()
    assert res.ok, res.reason
    reg = (out / "aten/src/ATen/RegisterCPU.cpp").read_text()
    assert wrapper in reg
    pys = sorted((out / "torch/csrc/autograd/generated").glob("python_torch_functions_*.cpp"))
    assert pys and any("THPVariable_atan2" in p.read_text() for p in pys)
    assert "Atan2Backward0" in (out / "torch/csrc/autograd/generated/Functions.h").read_text()
    idx = generated_files_to_index(out)
    assert "aten/src/ATen/RegisterCPU.cpp" in idx
    for name in ("UfuncCPU_add.cpp", "UfuncCPUKernel_add.cpp", "UfuncCUDA_add.cu"):  # torchgen/dest/ufunc.py
        assert f"aten/src/ATen/{name}" in idx
    assert "TORCH_IMPL_FUNC(ufunc_add_CUDA)" in (out / "aten/src/ATen/UfuncCUDA_add.cu").read_text()
    assert not any("Everything" in f for f in idx)
    for f in idx:
        gen, tmpl = template_for(f)
        assert gen and (tree / gen).is_file(), f
        assert not tmpl or (tree / tmpl).is_file(), f
    assert snapshot(tree) == before, "the generators modified the source tree"
    assert not list(tree.rglob("__pycache__"))
    assert not leftovers(out)
    return res


@pytest.mark.integration
def test_real_codegen_260(tmp_path):
    tree = _real_tree("TORCHTALK_TEST_SOURCE")
    res = _check_real_output(tree, tmp_path, "wrapper_CPU_atan2")
    assert "aten/src/ATen/RegisterMPS.cpp" in res.files
    assert "aten/src/ATen/Operators_0.cpp" in res.files
    assert "torch/csrc/autograd/generated/python_variable_methods.cpp" in res.files
    assert not any(f.endswith("Declarations.yaml") for f in res.files)
    # deterministic output: a second run gives identical files
    res2 = start_codegen(tree, tmp_path / "again").wait()
    assert res2.files == res.files
    for f in ("aten/src/ATen/RegisterCPU.cpp", "torch/csrc/autograd/generated/VariableType_0.cpp"):
        assert (tmp_path / "again" / f).read_bytes() == (tmp_path / "generated" / f).read_bytes()


@pytest.mark.integration
def test_real_codegen_1131(tmp_path):
    tree = _real_tree("TORCHTALK_TEST_SOURCE_1131")
    # 1.13 names the generated wrappers without the backend: wrapper_atan2
    res = _check_real_output(tree, tmp_path, "wrapper_atan2")
    assert "aten/src/ATen/RegisterMPS.cpp" in res.files
