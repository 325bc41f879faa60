"""Tests of the codegen driver (source/codegen/driver.py) as code.

Its guards and helpers are called in-process on temporary paths and fake callables
(nothing here patches the test process's open or os); the driver itself is run as
the child process start_codegen runs, on the fixture tree with tiny generators.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
import time
import types
from pathlib import Path

import psutil
import pytest

from torchtalk.source.codegen import driver
from torchtalk.source.codegen.spec import RESTRICTED_SKIP, child_env, driver_argv

# --------------------------------------------------------------------------- write guards


@pytest.fixture
def work(tmp_path) -> str:
    w = tmp_path / "work"
    w.mkdir()
    return os.path.realpath(w)


def test_is_inside(tmp_path, work, monkeypatch):
    assert driver.is_inside(work, work)
    assert driver.is_inside(os.path.join(work, "a/b.cpp"), work)
    assert driver.is_inside(Path(work) / "x", work)
    assert driver.is_inside(os.fsencode(os.path.join(work, "x")), work)
    assert driver.is_inside(os.devnull, work)
    assert driver.is_inside(3, work)  # a file descriptor: opened through a guarded path
    assert not driver.is_inside(tmp_path / "elsewhere.cpp", work)
    assert not driver.is_inside(os.path.join(work, "../escape.cpp"), work)
    assert not driver.is_inside(work + "-sibling/x", work)  # a prefix is not a parent
    (Path(work) / "link").symlink_to(tmp_path)
    assert not driver.is_inside(os.path.join(work, "link/x.cpp"), work)
    monkeypatch.chdir(work)
    assert driver.is_inside("relative.cpp", work)
    monkeypatch.chdir(tmp_path)
    assert not driver.is_inside("relative.cpp", work)


def test_guard_open_refuses_only_writes_outside(tmp_path, work):
    calls = []

    def fake_open(file, mode="r", *a, **k):
        calls.append((file, mode))
        return "handle"

    g = driver.guard_open(fake_open, work)
    outside = str(tmp_path / "tree/file.py")
    assert g(outside) == "handle" and g(outside, "rb") == "handle"  # reading is fine
    for mode in ("w", "wb", "a", "x", "r+", "rb+"):
        with pytest.raises(PermissionError, match="refused a write outside its output directory: .*file.py"):
            g(outside, mode)
    inside = os.path.join(work, "out.cpp")
    assert g(inside, "w", encoding="utf-8") == "handle"
    assert calls == [(outside, "r"), (outside, "rb"), (inside, "w")]


def test_guard_flags(tmp_path, work):
    g = driver.guard_flags(lambda path, flags, *a: ("opened", path), work)
    outside = str(tmp_path / "x")
    assert g(outside, os.O_RDONLY) == ("opened", outside)
    for flags in (os.O_WRONLY, os.O_RDWR, os.O_WRONLY | os.O_CREAT, os.O_APPEND, os.O_TRUNC):
        with pytest.raises(PermissionError):
            g(outside, flags)
    assert g(os.path.join(work, "x"), os.O_WRONLY | os.O_CREAT) == ("opened", os.path.join(work, "x"))


def test_guard_paths_checks_the_first_n_arguments(tmp_path, work):
    rename = driver.guard_paths(lambda *a: "renamed", 2, work)
    inside, outside = os.path.join(work, "a"), str(tmp_path / "b")
    assert rename(inside, os.path.join(work, "b")) == "renamed"
    with pytest.raises(PermissionError):
        rename(inside, outside)  # moving our file into the tree
    with pytest.raises(PermissionError):
        rename(outside, inside)  # taking a file out of the tree
    chmod = driver.guard_paths(lambda *a: "done", 1, work)
    assert chmod(inside, 0o644) == "done"


def test_guarded_mkdir_lets_makedirs_walk_through_existing_parents(tmp_path, work):
    mkdir = driver.guard_paths(os.mkdir, 1, work, exists_error=True)
    with pytest.raises(FileExistsError):
        mkdir(str(tmp_path))  # exists outside: what makedirs(exist_ok=True) expects
    with pytest.raises(PermissionError):
        mkdir(str(tmp_path / "new"))
    assert not (tmp_path / "new").exists()
    mkdir(os.path.join(work, "new"))
    assert (Path(work) / "new").is_dir()


# --------------------------------------------------------------------------- helpers


def test_last_line_remembers_the_last_non_empty_line_across_writes():
    class Sink:
        def __init__(self):
            self.text = ""
            self.encoding = "utf-8"

        def write(self, s):
            self.text += s
            return len(s)

        def flush(self):
            pass

    sink = Sink()
    s = driver.LastLine(sink)
    s.write("usage: gen.py\ngen.py: error: unrec")
    s.write("ognized arguments: --mps\n\n  \n")
    assert s.last == "gen.py: error: unrecognized arguments: --mps"
    assert sink.text.startswith("usage: gen.py\n")
    assert s.encoding == "utf-8"  # everything else is the wrapped stream's


def test_watch_parent_exits_once_the_parent_changes():
    exits = []
    driver.watch_parent(os.getppid() + 1, interval=0.01, on_orphan=exits.append)
    assert exits == [driver.ORPHANED_EXIT]


def test_skips_match_relative_to_the_current_stage(tmp_path):
    skips = driver.Skips(list(RESTRICTED_SKIP), str(tmp_path / "stage-torchgen"))
    assert skips(str(tmp_path / "stage-torchgen/aten/src/ATen/Functions.h"))
    assert skips(str(tmp_path / "stage-torchgen/aten/src/ATen/OperatorsEverything.cpp"))
    assert not skips(str(tmp_path / "stage-torchgen/aten/src/ATen/RegisterCPU.cpp"))
    skips.stage = str(tmp_path / "stage-autograd")
    assert not skips(str(tmp_path / "stage-torchgen/aten/src/ATen/Functions.h"))
    assert skips(str(tmp_path / "stage-autograd/torch/csrc/autograd/generated/TraceType_0.cpp"))


def test_patch_file_manager_skips_before_computing_the_environment(tmp_path, monkeypatch):
    class FileManager:
        def __init__(self, install_dir):
            self.install_dir, self.filenames, self.written = install_dir, set(), []

        def write_with_template(self, filename, template_fn, env_callable):
            self.written.append((filename, env_callable()))

        def write_sharded(self, filename, items, *a, **k):
            self.written.append((filename, list(items)))

    utils = types.ModuleType("torchgen.utils")
    utils.FileManager = FileManager
    monkeypatch.setitem(sys.modules, "torchgen", types.ModuleType("torchgen"))
    monkeypatch.setitem(sys.modules, "torchgen.utils", utils)
    stage = tmp_path / "stage"
    skips = driver.Skips(list(RESTRICTED_SKIP), str(stage))
    driver.patch_file_manager(skips)
    driver.patch_file_manager(skips)  # a second generator in the same driver: patched once

    fm = FileManager(f"{stage}/aten/src/ATen")

    def costly():
        raise AssertionError("the environment of a skipped file was computed")

    assert fm.write_with_template("Functions.h", "Functions.h", costly) is None
    assert f"{stage}/aten/src/ATen/Functions.h" in fm.filenames
    fm.write_with_template("RegisterCPU.cpp", "RegisterDispatchKey.cpp", lambda: {"x": 1})
    fm.write_sharded("Operators.cpp", [1, 2])  # only OperatorsEverything.cpp is skipped
    assert fm.written == [("RegisterCPU.cpp", {"x": 1}), ("Operators.cpp", [1, 2])]
    fm = FileManager(f"{stage}/torch/csrc/autograd/generated")
    fm.write_sharded("TraceType.cpp", iter(costly, None))  # TraceType_0 and Everything: skipped
    assert fm.written == []


def test_patch_file_manager_without_torchgen_does_nothing(monkeypatch):
    monkeypatch.setitem(sys.modules, "torchgen", None)  # import raises ImportError
    driver.patch_file_manager(driver.Skips(["*"], "/"))


def test_patch_torchgen_eager_stubs_only_what_feeds_skipped_files(tmp_path):
    tg = types.SimpleNamespace(get_native_function_declarations=lambda *a: ["decl"],
                               get_native_function_schema_registrations=lambda *a: (["reg"], ["schema"]))
    aten = str(tmp_path / "aten/src/ATen")
    driver.patch_torchgen_eager(tg, aten, driver.Skips(["aten/src/ATen/NativeFunctions.h"], str(tmp_path)))
    assert tg.get_native_function_declarations(1, 2) == []
    assert tg.get_native_function_schema_registrations() == (["reg"], ["schema"])


def test_check_under_tree(tmp_path):
    mod = types.ModuleType("torchgen.gen")
    mod.__file__ = str(tmp_path / "tree/torchgen/gen.py")
    driver.check_under_tree(mod, str(tmp_path / "tree"))
    with pytest.raises(ImportError, match="torchgen.gen was imported from .*/other/torchgen/gen.py, not from the tree"):
        mod.__file__ = str(tmp_path / "other/torchgen/gen.py")
        driver.check_under_tree(mod, str(tmp_path / "tree"))


def _raise(exc: BaseException):
    def run():
        raise exc
    return run


def _usage_error():
    sys.stderr.write("gen.py: error: bad option\n")
    raise SystemExit(2)


@pytest.mark.parametrize(
    "run, ok, reason",
    [
        (lambda: None, True, ""),
        (_raise(SystemExit(0)), True, ""),
        (_raise(SystemExit(None)), True, ""),
        (_usage_error, False, "exited with status 2: gen.py: error: bad option"),
        (_raise(SystemExit(3)), False, "exited with status 3"),
        (_raise(RuntimeError("boom\nsecond line")), False, "RuntimeError: boom"),
        (_raise(KeyboardInterrupt()), False, "KeyboardInterrupt"),
    ],
)
def test_run_one_turns_every_outcome_into_a_record(run, ok, reason, monkeypatch, capsys):
    stderr = driver.LastLine(sys.stderr)
    stderr.last = "left over from the previous generator"
    monkeypatch.setattr(sys, "stderr", stderr)
    rec = driver.run_one(run, stderr)
    assert (rec["ok"], rec["reason"]) == (ok, reason)
    assert rec["seconds"] >= 0 and rec["cpu_seconds"] >= 0


# --------------------------------------------------------------------------- the driver as a process

# Reports what the generators see: sys.path, __main__.__file__, torchtalk modules.
PROBE = """
import json, os, sys
def main():
    out = sys.argv[sys.argv.index("-d") + 1]
    os.makedirs(out, exist_ok=True)
    with open(os.path.join(out, "probe.json"), "w") as f:
        json.dump({"path": sys.path, "main_file": sys.modules["__main__"].__file__, "cwd": os.getcwd(),
                   "torchtalk": sorted(m for m in sys.modules if m.split(".")[0] == "torchtalk")}, f)
    open("aten/src/ATen/native/native_functions.yaml", "a").write("# overwritten\\n")
"""

AUTOGRAD = """
import os
def generate_code(gen_dir, native_functions_path=None, tags_path=None, install_dir=None, subset=None, **kw):
    d = os.path.join(str(gen_dir), "torch/csrc/autograd/generated")
    os.makedirs(d, exist_ok=True)
    with open(os.path.join(d, "VariableType_%s.cpp" % subset), "w") as f:
        f.write("// %s\\n" % subset)
"""

# A FileManager in torchgen's shape, so restricted mode's patch has something to wrap.
UTILS = """
import os
class FileManager:
    def __init__(self, install_dir):
        self.install_dir, self.filenames = install_dir, set()
    def write_with_template(self, filename, template_fn, env_callable):
        path = "%s/%s" % (self.install_dir, filename)
        self.filenames.add(path)
        os.makedirs(self.install_dir, exist_ok=True)
        with open(path, "w") as f:
            f.write(str(env_callable()))
"""

TORCHGEN = """
import os, sys
from torchgen.utils import FileManager
def main():
    fm = FileManager(sys.argv[sys.argv.index("-d") + 1])
    def costly():
        os._exit(99)  # computing a skipped file's environment
    fm.write_with_template("Functions.h", "Functions.h", costly)
    fm.write_with_template("RegisterCPU.cpp", "RegisterDispatchKey.cpp", lambda: "wrapper_CPU_relu")
"""


def _add_generators(tree: Path, gen: str, utils: str = "") -> None:
    (tree / "torchgen").mkdir(exist_ok=True)
    (tree / "torchgen/__init__.py").write_text("")
    (tree / "torchgen/gen.py").write_text(textwrap.dedent(gen))
    (tree / "torchgen/utils.py").write_text(textwrap.dedent(utils))
    (tree / "tools/setup_helpers").mkdir(parents=True, exist_ok=True)
    for init in ("tools/__init__.py", "tools/setup_helpers/__init__.py"):
        (tree / init).write_text("")
    (tree / "tools/setup_helpers/generate_code.py").write_text(textwrap.dedent(AUTOGRAD))


def _spec(tree: Path, work: Path, names: list[str], skip: tuple[str, ...] = (), parent: int | None = None) -> dict:
    gens = []
    for name in names:
        stage = work / f"stage-{name}"
        stage.mkdir(parents=True)
        argv = (["-s", "aten/src/ATen", "-d", str(stage / "aten/src/ATen")] if name == "torchgen"
                else ["--gen-dir", str(stage)])
        gens.append({"name": name, "stage": str(stage), "full": not skip, "argv": argv,
                     "native_functions": "aten/src/ATen/native/native_functions.yaml",
                     "tags": "aten/src/ATen/native/tags.yaml", "aten_out": str(stage / "aten/src/ATen")})
    return {"tree": str(tree), "work": str(work), "status": str(work / "status.jsonl"),
            "parent": os.getpid() if parent is None else parent, "skip": list(skip), "generators": gens}


def _run_driver(tree: Path, spec: dict) -> tuple[subprocess.CompletedProcess, list[dict]]:
    env = child_env(tree, Path(spec["work"]) / "out")
    proc = subprocess.run(driver_argv(spec), cwd=tree, env=env, capture_output=True, text=True,
                          timeout=120, check=False)  # the caller asserts on the status
    status = Path(spec["status"])
    recs = [json.loads(ln) for ln in status.read_text().splitlines()] if status.exists() else []
    return proc, recs


def test_driver_runs_generators_from_the_tree_and_refuses_writes_into_it(tree, tmp_path):
    _add_generators(tree, PROBE)
    nf = tree / "aten/src/ATen/native/native_functions.yaml"
    before = nf.read_bytes()
    work = tmp_path / "work"
    proc, recs = _run_driver(tree, _spec(tree, work, ["autograd", "torchgen", "bogus"]))
    assert proc.returncode == 0, proc.stderr
    assert [(r["name"], r["ok"]) for r in recs] == [("autograd", True), ("torchgen", False), ("bogus", False)]
    assert recs[1]["reason"].startswith("PermissionError: torchtalk refused a write outside its output directory")
    assert "native_functions.yaml" in recs[1]["reason"]
    assert recs[2]["reason"] == "KeyError: 'bogus'"
    assert all(r["seconds"] >= 0 and r["cpu_seconds"] >= 0 for r in recs)
    assert nf.read_bytes() == before
    assert "Traceback" in proc.stderr  # the log keeps the whole story
    # full mode: generate_code once, without a subset
    assert [p.name for p in (work / "stage-autograd").rglob("*.cpp")] == ["VariableType_None.cpp"]

    probe = json.loads((work / "stage-torchgen/aten/src/ATen/probe.json").read_text())
    real_tree = os.path.realpath(tree)
    assert probe["torchtalk"] == []  # the child imports nothing of torchtalk
    assert probe["main_file"] == os.path.join(real_tree, "torchgen/gen.py")  # for "@generated by" comments
    assert probe["cwd"] == real_tree
    assert os.path.realpath(probe["path"][0]) == real_tree
    assert os.path.dirname(driver.__file__) not in [os.path.realpath(p) for p in probe["path"] if p]


def test_driver_restricted_mode_never_computes_a_skipped_files_environment(tree, tmp_path):
    _add_generators(tree, TORCHGEN, UTILS)
    work = tmp_path / "work"
    proc, recs = _run_driver(tree, _spec(tree, work, ["autograd", "torchgen"], skip=RESTRICTED_SKIP))
    assert proc.returncode == 0, proc.stderr  # 99 if costly() ran
    assert [(r["name"], r["ok"], r["reason"]) for r in recs] == [("autograd", True, ""), ("torchgen", True, "")]
    aten = work / "stage-torchgen/aten/src/ATen"
    assert sorted(p.name for p in aten.iterdir()) == ["RegisterCPU.cpp"]
    assert (aten / "RegisterCPU.cpp").read_text() == "wrapper_CPU_relu"
    assert sorted(p.name for p in (work / "stage-autograd").rglob("*.cpp")) == [
        "VariableType_libtorch.cpp", "VariableType_pybindings.cpp"]


def _gone(pid: int) -> bool:
    try:
        return psutil.Process(pid).status() == psutil.STATUS_ZOMBIE  # orphans may wait for a reaper
    except psutil.NoSuchProcess:
        return True


def test_driver_exits_when_its_parent_dies(tree, tmp_path):
    _add_generators(tree, "import time\ndef main():\n    time.sleep(60)\n")
    work = tmp_path / "work"
    spec = _spec(tree, work, ["torchgen"])
    # A middle process starts the driver as its child, then dies without killing it.
    middle = textwrap.dedent(f"""
        import json, os, subprocess, sys
        spec = json.loads(sys.argv[1])
        spec["parent"] = os.getpid()
        argv = {driver_argv({})[:2]!r} + [json.dumps(spec)]
        p = subprocess.Popen(argv, cwd=spec["tree"], start_new_session=True,
                             stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        print(p.pid, flush=True)
    """)
    out = subprocess.run([sys.executable, "-c", middle, json.dumps(spec)], cwd=tree, env=child_env(tree, work),
                         capture_output=True, text=True, timeout=60, check=True)
    pid = int(out.stdout)
    deadline = time.monotonic() + 15
    while not _gone(pid) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert _gone(pid), "the driver outlived its parent"
    assert not (work / "status.jsonl").exists()  # stopped mid-generator, nothing reported
