"""Run PyTorch's own code generators on a raw source tree, without a build.

A PyTorch build generates C++ that a source tree lacks: the per-backend operator
registrations (``RegisterCPU.cpp`` with ``wrapper_CPU_atan2``), the ``at::_ops``
entry points (``Operators_*.cpp``), the Python bindings
(``python_torch_functions_*.cpp`` with ``THPVariable_atan2``), the autograd kernels
(``VariableType_*.cpp``) and backward nodes (``Functions.h`` with ``Atan2Backward0``).
The generators are plain Python that needs only PyYAML (and typing_extensions), so
this module runs them, from the tree being indexed, into a directory of our own.

Two generators, run one after the other in a single subprocess (a "driver", see
``_DRIVER``; they share its interpreter start-up and torchgen's parsed-YAML cache) so
they cost as little CPU as possible while the indexer parses in parallel:

* ``autograd``: ``tools/setup_helpers/generate_code.py`` (subsets ``pybindings`` and
  ``libtorch``; the ``python`` subset, ``annotated_fn_args.py``, is skipped).
* ``torchgen``: ``python -m torchgen.gen`` with ``--generate sources`` (no headers,
  no ``Declarations.yaml``), ``--mps`` and ``--backend_whitelist CPU CUDA MPS Meta``
  (torchgen always keeps the four Composite* keys).

In the default "restricted" mode the driver also skips the outputs TorchTalk does not
index (see ``RESTRICTED_SKIP``): it wraps ``torchgen.utils.FileManager`` so a skipped
file's template environment (where the cost is) is never computed, and stubs the two
eager computations that only feed skipped files.  ``full=True`` runs the generators
as a build would (every output), for comparison or debugging.

Measured on PyTorch 2.6.0 (2 cores, other load present; CPU = user+sys):
restricted 6.6 s CPU / 7.1 s wall, 50 files (26.7 MB); full 15.4 s CPU, 119 files
(75 MB); the two command lines of a build, one after the other, ~17.5 s CPU.
1.13.1: restricted 6.2 s CPU, full 13.8 s CPU.  Output is deterministic
(``PYTHONHASHSEED=0``: 1.13's generators iterate string sets).

Safety: the driver runs with cwd = the tree and PYTHONPATH = the tree (so ``torchgen``
and ``tools`` import from it), bytecode goes to a cache directory beside ``out_dir``
(``PYTHONPYCACHEPREFIX``), and every file-system write (``open`` for writing,
``os.open``, ``mkdir``, ``rename``, ``unlink``...) outside the run's temporary
directory is refused, so the generators can never write into the user's tree (the
2.x default ``--aoti-install-dir`` points into it; we redirect it).

Layout of ``out_dir`` (paths as a real build's ``build/`` directory has them)::

    out_dir/
      .torchtalk-codegen.json                 manifest: inputs hash, per-generator results
      .torchtalk-codegen.log                  the generators' stdout/stderr
      aten/src/ATen/RegisterCPU.cpp            torchgen (a build: build/aten/src/ATen/)
      aten/src/ATen/RegisterCUDA.cpp, RegisterMPS.cpp, RegisterMeta.cpp,
                    RegisterComposite*.cpp, RegisterBackendSelect.cpp
      aten/src/ATen/Operators_{0..4}.cpp      (Operators.h etc.: full mode only)
      aten/src/ATen/UfuncCPU_add.cpp, UfuncCPUKernel_add.cpp, UfuncCUDA_add.cu
      aten/src/ATen/CompositeViewCopyKernels.cpp
      aten/src/ATen/core/...                   (full mode only: TensorBody.h etc.)
      torch/csrc/autograd/generated/...        autograd (a build: torch/csrc/autograd/generated/)
      torch/csrc/inductor/aoti_torch/generated/c_shim_{cpu,cuda}.cpp   (2.x torchgen)
      torch/testing/_internal/generated/annotated_fn_args.py           (full mode only)

Runs are atomic: the driver writes into a temporary directory beside ``out_dir``
(``.<name>.tmp-*``) and ``wait()`` renames the finished tree into place, so a killed
run never leaves half an output at ``out_dir`` (a killed run's leftovers are removed by
the next ``start_codegen`` beside the same ``out_dir``).
"""

from __future__ import annotations

import atexit
import dataclasses
import fnmatch
import hashlib
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import weakref
from pathlib import Path

from ..model.codegen import AOTI_DIR, ATEN_DIR, AUTOGRAD_DIR
from ..procs import pid_alive

__all__ = [
    "AOTI_DIR",
    "ATEN_DIR",
    "AUTOGRAD_DIR",
    "DEFAULT_BACKENDS",
    "LOG_NAME",
    "MANIFEST_NAME",
    "CodegenJob",
    "CodegenResult",
    "GeneratorResult",
    "codegen_inputs_hash",
    "generated_files_to_index",
    "read_manifest",
    "start_codegen",
]

MANIFEST_NAME = ".torchtalk-codegen.json"
LOG_NAME = ".torchtalk-codegen.log"

#: Backend dispatch keys whose Register<Key>.cpp is generated in restricted mode.
#: torchgen always adds the generic keys (CompositeImplicitAutograd,
#: CompositeImplicitAutogradNestedTensor, CompositeExplicitAutograd,
#: CompositeExplicitAutogradNonFunctional).
DEFAULT_BACKENDS: tuple[str, ...] = ("CPU", "CUDA", "MPS", "Meta")

#: The generators in the order the driver runs them.  autograd first: torchgen's
#: main() mutates torchgen.model.dispatch_keys, which must not leak into autograd.
GENERATORS: tuple[str, ...] = ("autograd", "torchgen")

#: Changing what the driver generates must invalidate earlier outputs: this string is
#: part of codegen_inputs_hash().
_SETTINGS_VERSION = "torchtalk-codegen-1"

#: Outputs skipped in restricted mode (fnmatch patterns on the path relative to
#: out_dir).  None of them is indexed; skipping them saves most of the CPU time.
RESTRICTED_SKIP: tuple[str, ...] = (
    # aggregates of the numbered shards
    "*Everything.*",
    # ATen headers: declarations and inline forwarders, derivable from the YAML
    f"{ATEN_DIR}/Functions.h",
    f"{ATEN_DIR}/Functions.cpp",
    f"{ATEN_DIR}/Operators.h",
    f"{ATEN_DIR}/MethodOperators.h",
    f"{ATEN_DIR}/NativeFunctions.h",
    f"{ATEN_DIR}/NativeMetaFunctions.h",
    f"{ATEN_DIR}/RedispatchFunctions.h",
    f"{ATEN_DIR}/RegistrationDeclarations.h",
    f"{ATEN_DIR}/VmapGeneratedPlumbing.h",
    f"{ATEN_DIR}/FunctionalInverses.h",
    f"{ATEN_DIR}/*Functions_inl.h",
    f"{ATEN_DIR}/*Functions.h",
    f"{ATEN_DIR}/core/*",
    f"{ATEN_DIR}/ops/*",
    # schema registrations (the schemas are in native_functions.yaml) and the
    # functionalization pass
    f"{ATEN_DIR}/RegisterSchema.cpp",
    f"{ATEN_DIR}/RegisterFunctionalization*.cpp",
    f"{ATEN_DIR}/Declarations.yaml",
    # autograd: tracer and small helpers
    f"{AUTOGRAD_DIR}/TraceType*.cpp",
    f"{AUTOGRAD_DIR}/variable_factories.h",
    f"{AUTOGRAD_DIR}/ViewFuncs.*",
)


# --------------------------------------------------------------------------- inputs


def _inputs(tree: Path) -> tuple[list[str], list[tuple[str, str | None]]]:
    """(single files, (directory, suffix filter)) that the generators read."""
    files = [
        "aten/src/ATen/native/native_functions.yaml",
        "aten/src/ATen/native/tags.yaml",
        "tools/autograd/derivatives.yaml",
        "tools/autograd/deprecated.yaml",
        "tools/setup_helpers/generate_code.py",
    ]
    dirs: list[tuple[str, str | None]] = [
        ("aten/src/ATen/templates", None),
        ("tools/autograd/templates", None),
        ("torchgen", ".py"),
        ("tools/autograd", ".py"),
    ]
    return files, dirs


def _walk_stats(root: Path, rel: str, suffix: str | None, out: list[str]) -> None:
    stack = [root / rel]
    while stack:
        d = stack.pop()
        try:
            it = os.scandir(d)
        except OSError:
            out.append(f"{d.relative_to(root).as_posix()}\0missing-dir")
            continue
        with it:
            for e in it:
                if e.is_dir(follow_symlinks=False):
                    if e.name != "__pycache__":
                        stack.append(Path(e.path))
                    continue
                if suffix is not None and not e.name.endswith(suffix):
                    continue
                try:
                    st = e.stat()
                except OSError:
                    continue
                rp = Path(e.path).relative_to(root).as_posix()
                out.append(f"{rp}\0{st.st_size}\0{st.st_mtime_ns}")


def codegen_inputs_hash(tree: Path) -> str:
    """A hash of everything the generators read, from (path, size, mtime_ns) records.

    Covers native_functions.yaml, tags.yaml, derivatives.yaml, deprecated.yaml, the
    ATen and autograd template directories, torchgen/**/*.py, tools/autograd/**/*.py,
    tools/setup_helpers/generate_code.py, and TorchTalk's own generation settings.
    No file content is read (a few milliseconds on the 2.6.0 tree).
    """
    tree = Path(tree)
    files, dirs = _inputs(tree)
    records: list[str] = [_SETTINGS_VERSION]
    for rel in files:
        try:
            st = os.stat(tree / rel)
            records.append(f"{rel}\0{st.st_size}\0{st.st_mtime_ns}")
        except OSError:
            records.append(f"{rel}\0missing")
    for rel, suffix in dirs:
        found: list[str] = []
        _walk_stats(tree, rel, suffix, found)
        records.extend(sorted(found))
    h = hashlib.sha256()
    for r in records:
        h.update(r.encode("utf-8", "surrogateescape"))
        h.update(b"\n")
    return h.hexdigest()


# --------------------------------------------------------------------------- results


@dataclasses.dataclass
class GeneratorResult:
    name: str  # "autograd" or "torchgen"
    command: str  # the equivalent command line, for messages
    ok: bool = False
    reason: str = ""  # one line; "" when ok
    seconds: float = 0.0  # wall time inside the driver
    cpu_seconds: float = 0.0  # CPU time (user+sys) inside the driver
    files: list[str] = dataclasses.field(default_factory=list)  # relative to out_dir


@dataclasses.dataclass
class CodegenResult:
    ok: bool  # every generator succeeded
    reason: str  # one line: why (some) generated code is unavailable; "" when ok
    seconds: float  # wall time from start_codegen() to the output being in place
    files: list[str]  # generated relpaths (relative to out_dir), all generators
    generators: dict[str, GeneratorResult]
    out_dir: Path
    inputs_hash: str = ""
    cpu_seconds: float = 0.0  # the driver process's CPU time (user+sys), all told
    full: bool = False

    def files_of(self, generator: str) -> list[str]:
        g = self.generators.get(generator)
        return list(g.files) if g else []


# --------------------------------------------------------------------------- the driver

# Runs in the subprocess (``python -c``), cwd = the tree.  Only the standard library
# and the tree's own generators are imported.  argv[1] is a JSON spec.
_DRIVER = r'''
import builtins, fnmatch, io, json, os, sys, time, traceback

spec = json.loads(sys.argv[1])
TREE = os.path.realpath(spec["tree"])
WORK = os.path.realpath(spec["work"])
SKIP = spec["skip"]
os.chdir(TREE)
if TREE not in sys.path:
    sys.path.insert(0, TREE)

def _watch_parent(ppid):
    # The driver leads its own session (so a terminal's Ctrl-C goes to TorchTalk,
    # which kills it): if TorchTalk dies without doing so, stop burning CPU.
    while True:
        if os.getppid() != ppid:
            os._exit(70)
        time.sleep(1.0)
import threading
threading.Thread(target=_watch_parent, args=(spec["parent"],), daemon=True).start()

class _LastLine:
    """stderr that remembers its last non-empty line (for one-line reasons)."""
    def __init__(self, s):
        self.s, self.last, self.buf = s, "", ""
    def write(self, x):
        self.buf = (self.buf + x)[-4000:]
        lines = [l.strip() for l in self.buf.splitlines() if l.strip()]
        if lines:
            self.last = lines[-1]
        return self.s.write(x)
    def flush(self):
        self.s.flush()
    def __getattr__(self, n):
        return getattr(self.s, n)
sys.stderr = _LastLine(sys.stderr)

# ---- refuse every write outside WORK
def _inside(p):
    if isinstance(p, int):
        return True
    try:
        p = os.fsdecode(os.fspath(p))
    except TypeError:
        return True
    rp = os.path.realpath(p)
    return rp == WORK or rp.startswith(WORK + os.sep) or rp == os.devnull

def _refuse(p):
    raise PermissionError("torchtalk refused a write outside its output directory: %s" % (p,))

_open = builtins.open
def _guarded_open(file, mode="r", *a, **k):
    if any(c in mode for c in "wax+") and not _inside(file):
        _refuse(file)
    return _open(file, mode, *a, **k)
builtins.open = io.open = _guarded_open

_WFLAGS = os.O_WRONLY | os.O_RDWR | os.O_CREAT | os.O_TRUNC | os.O_APPEND
def _guard_flags(fn):
    def g(path, flags, *a, **k):
        if flags & _WFLAGS and not _inside(path):
            _refuse(path)
        return fn(path, flags, *a, **k)
    return g
os.open = _guard_flags(os.open)

def _guard_paths(fn, n, exists_error=False):
    def g(*a, **k):
        for p in a[:n]:
            if not _inside(p):
                if exists_error and os.path.exists(p):
                    raise FileExistsError(17, "File exists", p)
                _refuse(p)
        return fn(*a, **k)
    return g
os.mkdir = _guard_paths(os.mkdir, 1, exists_error=True)
for _n, _k in (("rename", 2), ("replace", 2), ("remove", 1), ("unlink", 1),
               ("rmdir", 1), ("symlink", 2), ("link", 2), ("truncate", 1),
               ("chmod", 1), ("utime", 1)):
    if hasattr(os, _n):
        setattr(os, _n, _guard_paths(getattr(os, _n), _k))

# ---- skipping outputs that are not wanted (restricted mode)
STAGE = [WORK]
def _skipped(path):
    rel = os.path.relpath(os.path.realpath(path), STAGE[0]).replace(os.sep, "/")
    return any(fnmatch.fnmatchcase(rel, pat) for pat in SKIP)

def _patch_file_manager():
    try:
        from torchgen.utils import FileManager
    except Exception:
        return
    if getattr(FileManager, "_torchtalk_patched", False):
        return
    wwt = getattr(FileManager, "write_with_template", None)
    ws = getattr(FileManager, "write_sharded", None)
    if wwt is not None:
        def write_with_template(self, filename, template_fn, env_callable):
            full = "%s/%s" % (self.install_dir, filename)
            if _skipped(full):
                try:
                    self.filenames.add(full)
                except Exception:
                    pass
                return None
            return wwt(self, filename, template_fn, env_callable)
        FileManager.write_with_template = write_with_template
    if ws is not None:
        def write_sharded(self, filename, items, *a, **k):
            dot = filename.rfind(".")
            base, ext = (filename, "") if dot == -1 else (filename[:dot], filename[dot:])
            probe = ["%s/%s%s%s" % (self.install_dir, base, s, ext) for s in ("_0", "Everything")]
            if all(_skipped(p) for p in probe):
                return None
            return ws(self, filename, items, *a, **k)
        FileManager.write_sharded = write_sharded
    FileManager._torchtalk_patched = True

def _patch_torchgen_eager(tg, aten_out):
    # Results computed eagerly, before the (lazily rendered) files they feed.
    if hasattr(tg, "get_native_function_declarations") and _skipped(aten_out + "/NativeFunctions.h"):
        tg.get_native_function_declarations = lambda *a, **k: []
    if hasattr(tg, "get_native_function_schema_registrations") and _skipped(aten_out + "/RegisterSchema.cpp"):
        tg.get_native_function_schema_registrations = lambda *a, **k: ([], [])

def _under_tree(mod):
    f = os.path.realpath(getattr(mod, "__file__", "") or "")
    if not f.startswith(TREE + os.sep):
        raise ImportError("%s was imported from %s, not from the tree" % (mod.__name__, f))

def run_autograd(g):
    sys.argv = ["tools/setup_helpers/generate_code.py"] + g["argv"]
    sys.modules["__main__"].__file__ = os.path.join(TREE, "tools/setup_helpers/generate_code.py")
    if not g["full"]:
        _patch_file_manager()
    from tools.setup_helpers import generate_code as gc
    _under_tree(gc)
    from pathlib import Path
    nf, tags = g["native_functions"], g["tags"]
    if g["full"]:
        gc.generate_code(Path(g["stage"]), nf, tags)
    else:
        for subset in ("pybindings", "libtorch"):
            gc.generate_code(Path(g["stage"]), nf, tags, subset=subset)

def run_torchgen(g):
    sys.argv = ["torchgen/gen.py"] + g["argv"]
    sys.modules["__main__"].__file__ = os.path.join(TREE, "torchgen/gen.py")
    if not g["full"]:
        _patch_file_manager()
    import torchgen.gen as tg
    _under_tree(tg)
    if not g["full"]:
        _patch_torchgen_eager(tg, g["aten_out"])
    tg.main()

def _cpu():
    t = os.times()
    return t.user + t.system

def _report(rec):
    with _open(spec["status"], "a") as f:
        f.write(json.dumps(rec) + "\n")

for g in spec["generators"]:
    STAGE[0] = os.path.realpath(g["stage"])
    t0, c0 = time.monotonic(), _cpu()
    rec = {"name": g["name"], "ok": False, "reason": ""}
    sys.stderr.last = ""
    try:
        {"autograd": run_autograd, "torchgen": run_torchgen}[g["name"]](g)
        rec["ok"] = True
    except SystemExit as e:
        if e.code in (0, None):
            rec["ok"] = True
        else:
            rec["reason"] = "exited with status %s%s" % (
                e.code, (": " + sys.stderr.last) if sys.stderr.last else "")
    except BaseException as e:
        traceback.print_exc()
        msg = (str(e).strip().splitlines() or [""])[0]
        rec["reason"] = "%s: %s" % (type(e).__name__, msg) if msg else type(e).__name__
    rec["seconds"] = round(time.monotonic() - t0, 3)
    rec["cpu_seconds"] = round(_cpu() - c0, 3)
    _report(rec)
    sys.stdout.flush()
    sys.stderr.flush()
'''


# --------------------------------------------------------------------------- job


def _one_line(s: str, limit: int = 300) -> str:
    s = " ".join(s.split())
    return s if len(s) <= limit else s[: limit - 3] + "..."


def _last_line(path: Path) -> str:
    try:
        data = path.read_bytes()[-8000:].decode("utf-8", "replace")
    except OSError:
        return ""
    lines = [ln.strip() for ln in data.splitlines() if ln.strip()]
    return lines[-1] if lines else ""


def _torchgen_argv(gen_py_text: str, stage: Path, full: bool, backends: tuple[str, ...]) -> list[str]:
    """torchgen.gen arguments, using only the options this tree's gen.py has.

    1.13.1 has ``-d/--install_dir`` and ``--backend_whitelist`` only; 2.x accepts
    both spellings and adds ``--aoti-install-dir`` (whose default is inside the tree).
    """

    def has(*names: str) -> str | None:
        for n in names:
            if f'"{n}"' in gen_py_text or f"'{n}'" in gen_py_text:
                return n
        return None

    argv = ["-s", "aten/src/ATen", "-d", str(stage / ATEN_DIR)]
    aoti = has("--aoti-install-dir", "--aoti_install_dir")
    if aoti:
        argv += [aoti, str(stage / AOTI_DIR)]
    if has("--mps"):
        argv.append("--mps")
    if not full:
        if has("--generate"):
            # no headers: Operators.h alone costs ~2 s (an O(n^2) list filter in
            # gen_aggregated_headers) and every header is declarations only
            argv += ["--generate", "sources"]
        wl = has("--backend_whitelist", "--backend-whitelist")
        if wl and backends:
            argv += [wl, *backends]
    return argv


def _foreign(out_dir: Path) -> bool:
    """True if out_dir holds something other than an earlier output of ours."""
    if out_dir.is_symlink() or (out_dir.exists() and not out_dir.is_dir()):
        return True
    if not out_dir.is_dir() or (out_dir / MANIFEST_NAME).is_file():
        return False
    try:
        return next(out_dir.iterdir(), None) is not None
    except OSError:
        return True


_LIVE_JOBS: "weakref.WeakSet[CodegenJob]" = weakref.WeakSet()


@atexit.register
def _cancel_live_jobs() -> None:  # never leave generator processes behind
    for job in list(_LIVE_JOBS):
        try:
            job.cancel()
        except Exception:
            pass


def _remove_stale_tmp(out_dir: Path) -> None:
    """Remove temporary directories that killed runs left beside out_dir."""
    parent = out_dir.parent
    try:
        entries = list(parent.glob(f".{out_dir.name}.tmp-*"))
    except OSError:
        return
    for d in entries:
        try:
            pid = int((d / "pid").read_text().strip())
        except (OSError, ValueError):
            pid = 0
        if pid and pid != os.getpid() and pid_alive(pid):
            continue
        if pid == os.getpid() and any(j._tmp == d for j in _LIVE_JOBS):
            continue
        shutil.rmtree(d, ignore_errors=True)


class CodegenJob:
    """A running generation; ``wait()`` collects it and puts the output in place."""

    def __init__(
        self,
        tree: Path,
        out_dir: Path,
        timeout: float,
        full: bool,
        generators: dict[str, GeneratorResult],
        inputs_hash: str,
    ) -> None:
        self.tree = tree
        self.out_dir = out_dir
        self.timeout = timeout
        self.full = full
        self.inputs_hash = inputs_hash
        self._gens = generators
        self._t0 = time.monotonic()
        self._proc: subprocess.Popen[bytes] | None = None
        self._tmp: Path | None = None
        self._result: CodegenResult | None = None
        self._stderr_path: Path | None = None
        self._status_path: Path | None = None
        self._stages: dict[str, Path] = {}
        self._timed_out = False
        self._cancelled = False

    # -- state
    @property
    def pid(self) -> int | None:
        return self._proc.pid if self._proc else None

    def done(self) -> bool:
        return self._result is not None or self._proc is None or self._proc.poll() is not None

    def __enter__(self) -> "CodegenJob":
        return self

    def __exit__(self, *exc: object) -> None:
        if self._result is None:
            self.cancel()

    # -- control
    def _kill(self) -> None:
        p = self._proc
        if p is None or p.poll() is not None:
            return
        try:
            os.killpg(p.pid, signal.SIGKILL)  # the driver leads its own process group
        except (ProcessLookupError, PermissionError, OSError):
            try:
                p.kill()
            except OSError:
                pass
        try:
            p.wait(timeout=10)
        except subprocess.TimeoutExpired:
            pass

    def cancel(self) -> None:
        """Kill the generators and discard their output (out_dir is left as it was)."""
        if self._result is not None:
            return
        self._cancelled = True
        try:
            self._kill()
        finally:  # even if a second Ctrl-C lands here
            self._cleanup()
            _LIVE_JOBS.discard(self)
            self._fail_all("cancelled")
            self._result = self._make_result(seconds=time.monotonic() - self._t0, cpu=0.0)

    def _cleanup(self) -> None:
        if self._tmp is not None:
            shutil.rmtree(self._tmp, ignore_errors=True)
            self._tmp = None

    def wait(self) -> CodegenResult:
        """Wait (at most until the timeout), put the output in place, return the result.

        Never raises for a failing generator (ok=False with a one-line reason).
        KeyboardInterrupt kills the generators, then propagates.
        """
        if self._result is not None:
            return self._result
        try:
            return self._wait()
        except KeyboardInterrupt:
            self.cancel()
            raise
        except Exception as e:  # our own bug or a full disk: still no exception out
            self._kill()
            self._cleanup()
            _LIVE_JOBS.discard(self)
            self._fail_all(_one_line(f"codegen failed: {type(e).__name__}: {e}"))
            self._result = self._make_result(seconds=time.monotonic() - self._t0, cpu=0.0)
            return self._result

    def _wait(self) -> CodegenResult:
        assert self._proc is not None and self._tmp is not None
        remaining = self.timeout - (time.monotonic() - self._t0)
        try:
            rc = self._proc.wait(timeout=max(remaining, 0.01))
        except subprocess.TimeoutExpired:
            self._timed_out = True
            self._kill()
            rc = self._proc.returncode
        cpu = 0.0
        status: dict[str, dict] = {}
        if self._status_path is not None and self._status_path.exists():
            for line in self._status_path.read_text(errors="replace").splitlines():
                try:
                    rec = json.loads(line)
                except ValueError:
                    continue
                status[rec.get("name", "")] = rec
        last = _one_line(_last_line(self._stderr_path)) if self._stderr_path else ""
        for name, g in self._gens.items():
            if g.reason:  # failed before the driver started (missing generator)
                continue
            rec = status.get(name)
            if rec is None:
                if self._timed_out:
                    g.reason = f"timed out after {self.timeout:g} s (killed)"
                elif rc is not None and rc < 0:
                    g.reason = f"generator process killed by signal {-rc}" + (f" (last output: {last})" if last else "")
                elif rc not in (0, None):
                    g.reason = f"generator process exited with status {rc}" + (f": {last}" if last else "")
                else:
                    g.reason = "did not run"
                continue
            g.seconds = float(rec.get("seconds", 0.0))
            g.cpu_seconds = float(rec.get("cpu_seconds", 0.0))
            cpu += g.cpu_seconds
            if rec.get("ok"):
                g.ok = True
            else:
                g.reason = _one_line(rec.get("reason") or "failed")
        self._place()
        _LIVE_JOBS.discard(self)
        self._result = self._make_result(seconds=time.monotonic() - self._t0, cpu=cpu)
        return self._result

    def _place(self) -> None:
        """Assemble the successful generators' outputs and rename them into out_dir."""
        assert self._tmp is not None
        final = self._tmp / "out"
        final.mkdir()
        any_ok = False
        for name, g in self._gens.items():
            stage = self._stages.get(name)
            if not g.ok or stage is None or not stage.is_dir():
                continue
            any_ok = True
            files: list[str] = []
            for dirpath, _dirs, fnames in os.walk(stage):
                for fn in fnames:
                    src = Path(dirpath) / fn
                    rel = src.relative_to(stage).as_posix()
                    dst = final / rel
                    dst.parent.mkdir(parents=True, exist_ok=True)
                    os.replace(src, dst)
                    files.append(rel)
            g.files = sorted(files)
        if not any_ok:  # keep whatever out_dir had; report the failure
            self._cleanup()
            return
        manifest = {
            "tree": str(self.tree),
            "inputs_hash": self.inputs_hash,
            "full": self.full,
            "settings": _SETTINGS_VERSION,
            "created": time.time(),
            "generators": {n: dataclasses.asdict(g) for n, g in self._gens.items()},
        }
        (final / MANIFEST_NAME).write_text(json.dumps(manifest, indent=1))
        if self._stderr_path is not None and self._stderr_path.is_file():
            os.replace(self._stderr_path, final / LOG_NAME)  # the generators' output
        out = self.out_dir
        if _foreign(out):
            raise FileExistsError(f"{out} appeared meanwhile and was not made by torchtalk's codegen")
        if out.exists() or out.is_symlink():
            os.rename(out, self._tmp / "old")  # removed with the temp dir
        os.rename(final, out)
        self._cleanup()

    def _fail_all(self, reason: str) -> None:
        """Mark every generator failed (nothing was placed), keeping earlier reasons."""
        for g in self._gens.values():
            g.ok = False
            g.files = []
            g.reason = g.reason or reason

    def _make_result(self, seconds: float, cpu: float) -> CodegenResult:
        failed = [g for g in self._gens.values() if not g.ok]
        why = "; ".join(f"{g.name}: {g.reason}" for g in failed)
        files = sorted({f for g in self._gens.values() if g.ok for f in g.files})
        return CodegenResult(
            ok=not failed and bool(self._gens),
            reason=_one_line(why) if failed else ("" if self._gens else "no generator"),
            seconds=round(seconds, 3),
            files=files,
            generators=self._gens,
            out_dir=self.out_dir,
            inputs_hash=self.inputs_hash,
            cpu_seconds=round(cpu, 3),
            full=self.full,
        )


def start_codegen(
    tree: Path,
    out_dir: Path,
    timeout: float = 300,
    *,
    full: bool = False,
    backends: tuple[str, ...] | list[str] = DEFAULT_BACKENDS,
) -> CodegenJob:
    """Launch PyTorch's generators on ``tree`` into ``out_dir``; return at once.

    ``job.wait()`` returns a CodegenResult and renames the output into ``out_dir``.
    ``full=True`` generates everything a build would; the default restricted mode
    generates what TorchTalk indexes (see the module docstring).  Never raises for a
    broken tree or generator: the job then finishes with ok=False and a reason.
    """
    tree = Path(tree).resolve()
    out_dir = Path(out_dir).absolute()
    backends = tuple(backends)
    gens: dict[str, GeneratorResult] = {
        "autograd": GeneratorResult(
            "autograd",
            "python tools/setup_helpers/generate_code.py --native-functions-path "
            "aten/src/ATen/native/native_functions.yaml --tags-path "
            "aten/src/ATen/native/tags.yaml --gen-dir OUT"
            + ("" if full else " (--subset pybindings, then libtorch)"),
        ),
        "torchgen": GeneratorResult("torchgen", "python -m torchgen.gen -s aten/src/ATen -d OUT/aten/src/ATen"),
    }
    try:
        ihash = codegen_inputs_hash(tree)
    except Exception:
        ihash = ""
    job = CodegenJob(tree, out_dir, timeout, full, gens, ihash)

    def fail_all(reason: str) -> CodegenJob:
        job._fail_all(reason)
        job._result = job._make_result(seconds=time.monotonic() - job._t0, cpu=0.0)
        return job

    nf = tree / "aten/src/ATen/native/native_functions.yaml"
    if not nf.is_file():
        return fail_all(f"not a PyTorch source tree (no {nf})")
    if not (tree / "tools/setup_helpers/generate_code.py").is_file():
        gens["autograd"].reason = "generator missing: no tools/setup_helpers/generate_code.py in the tree"
    gen_py = tree / "torchgen/gen.py"
    if not gen_py.is_file():
        gens["torchgen"].reason = "generator missing: no torchgen/gen.py in the tree (torchgen appeared in PyTorch 1.12)"
    if _foreign(out_dir):
        return fail_all(f"{out_dir} exists and was not made by torchtalk's codegen (no {MANIFEST_NAME}); not replacing it")
    runnable = [n for n in GENERATORS if not gens[n].reason]
    if not runnable:
        return fail_all("no generator to run")

    try:
        out_dir.parent.mkdir(parents=True, exist_ok=True)
        _remove_stale_tmp(out_dir)
        tmp = Path(tempfile.mkdtemp(prefix=f".{out_dir.name}.tmp-", dir=out_dir.parent))
        (tmp / "pid").write_text(str(os.getpid()))
    except OSError as e:
        return fail_all(_one_line(f"cannot create a temporary directory beside {out_dir}: {e}"))
    job._tmp = tmp
    job._status_path = tmp / "status.jsonl"
    job._stderr_path = tmp / "driver.log"
    skip = [] if full else list(RESTRICTED_SKIP)
    spec_gens = []
    for name in runnable:
        stage = tmp / f"stage-{name}"
        stage.mkdir()
        job._stages[name] = stage
        g = {
            "name": name,
            "stage": str(stage),
            "full": full,
            "native_functions": "aten/src/ATen/native/native_functions.yaml",
            "tags": "aten/src/ATen/native/tags.yaml",
            "aten_out": str(stage / ATEN_DIR),
        }
        if name == "torchgen":
            try:
                text = gen_py.read_text(errors="replace")
            except OSError:
                text = ""
            g["argv"] = _torchgen_argv(text, stage, full, backends)
            gens[name].command = "python -m torchgen.gen " + " ".join(
                a.replace(str(stage), "OUT") for a in g["argv"]
            )
        else:
            g["argv"] = [
                "--native-functions-path", g["native_functions"],
                "--tags-path", g["tags"], "--gen-dir", str(stage),
            ]
        spec_gens.append(g)
    spec = {"tree": str(tree), "work": str(tmp), "status": str(job._status_path), "parent": os.getpid(),
            "skip": skip, "generators": spec_gens}

    env = dict(os.environ)
    env["PYTHONPATH"] = str(tree)
    env["PYTHONPYCACHEPREFIX"] = str(out_dir.parent / ".torchtalk-codegen-pycache")
    env.pop("PYTHONSAFEPATH", None)
    env.pop("PYTHONDONTWRITEBYTECODE", None)  # bytecode goes to our cache, not the tree
    env.pop("PYTHONSTARTUP", None)
    env["PYTHONIOENCODING"] = "utf-8"
    # 1.13.x iterates sets of strings when rendering: fix the hash seed so output
    # (and line numbers) are the same from run to run
    env["PYTHONHASHSEED"] = "0"
    try:
        log = open(job._stderr_path, "wb")
        try:
            job._proc = subprocess.Popen(
                [sys.executable, "-c", _DRIVER, json.dumps(spec)],
                cwd=str(tree),
                env=env,
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )
        finally:
            log.close()
    except OSError as e:
        job._cleanup()
        return fail_all(_one_line(f"cannot start {sys.executable}: {e}"))
    _LIVE_JOBS.add(job)
    return job


def read_manifest(out_dir: Path) -> dict | None:
    """The manifest of a finished run in out_dir (inputs_hash, per-generator files)."""
    try:
        return json.loads((Path(out_dir) / MANIFEST_NAME).read_text())
    except (OSError, ValueError):
        return None


# --------------------------------------------------------------------------- indexing

#: Generated files not worth indexing (fnmatch on the path relative to out_dir):
#: - ``*Everything.*``: the concatenation of the numbered shards (exact duplicates);
#: - ``templates/*``: an intermediate template (autograd's VariableType.cpp);
#: - big ATen headers that hold only declarations or one-line inline forwarders
#:   (``at::atan2`` -> ``at::_ops::atan2::call``), all derivable from
#:   native_functions.yaml and costly to parse: Functions.h (2.3 MB),
#:   RedispatchFunctions.h (2.2 MB), Operators.h (2.0 MB), MethodOperators.h
#:   (0.5 MB; Operators_*.cpp hold the definitions), VmapGeneratedPlumbing.h (1.7 MB),
#:   RegistrationDeclarations.h (0.8 MB), NativeFunctions.h, NativeMetaFunctions.h,
#:   <Key>Functions(_inl).h, core/TensorBody.h, core/aten_interned_strings.h, ops/*;
#: - RegisterSchema.cpp (``m.def`` of every schema string, as in the YAML),
#:   Declarations.yaml and annotated_fn_args.py (data, not code).
NOT_INDEXED: tuple[str, ...] = (
    "*Everything.*",
    "*/templates/*",
    f"{ATEN_DIR}/Functions.h",
    f"{ATEN_DIR}/RedispatchFunctions.h",
    f"{ATEN_DIR}/Operators.h",
    f"{ATEN_DIR}/MethodOperators.h",
    f"{ATEN_DIR}/VmapGeneratedPlumbing.h",
    f"{ATEN_DIR}/RegistrationDeclarations.h",
    f"{ATEN_DIR}/NativeFunctions.h",
    f"{ATEN_DIR}/NativeMetaFunctions.h",
    f"{ATEN_DIR}/*Functions_inl.h",
    f"{ATEN_DIR}/?*Functions.h",
    f"{ATEN_DIR}/core/*",
    f"{ATEN_DIR}/ops/*",
    f"{ATEN_DIR}/RegisterSchema.cpp",
    # Generated code nobody traces through: Python wrappers of autograd nodes, view
    # bookkeeping, AOTInductor C shims. Skipping them saves ~2 MB of parsing.
    f"{AUTOGRAD_DIR}/python_functions_*.cpp",
    f"{AUTOGRAD_DIR}/python_functions.h",
    f"{AUTOGRAD_DIR}/ADInplaceOrViewType_*.cpp",
    "torch/csrc/inductor/*",
    "*.yaml",
    "*.py",
    MANIFEST_NAME,
    LOG_NAME,
)

_CODE_SUFFIXES = (".cpp", ".cc", ".cu", ".h", ".hpp", ".cuh", ".mm")


def generated_files_to_index(out_dir: Path) -> list[str]:
    """Generated relpaths (relative to out_dir) worth indexing, sorted.

    Uses the manifest's file lists when present (only successful generators' files),
    else walks out_dir.  Skips duplicates and declaration-only headers (NOT_INDEXED).
    """
    out_dir = Path(out_dir)
    files: list[str] = []
    man = read_manifest(out_dir)
    if man and isinstance(man.get("generators"), dict):
        for g in man["generators"].values():
            if g.get("ok"):
                files.extend(g.get("files") or [])
    else:
        for dirpath, _dirs, fnames in os.walk(out_dir):
            for fn in fnames:
                files.append((Path(dirpath) / fn).relative_to(out_dir).as_posix())
    keep = []
    for rel in sorted(set(files)):
        if not rel.endswith(_CODE_SUFFIXES):
            continue
        if any(fnmatch.fnmatchcase(rel, p) for p in NOT_INDEXED):
            continue
        if not (out_dir / rel).is_file():
            continue
        keep.append(rel)
    return keep
