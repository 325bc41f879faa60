"""A running generation: start it, wait for it or cancel it; output put in place atomically.

``start_codegen`` launches the driver (driver.py) in its own session and returns at
once, so the indexer parses while the generators run.  The driver writes into a
temporary directory beside ``out_dir`` (``.<name>.tmp-*``, holding the owner's pid);
``wait()`` renames the finished tree into place, so a killed run never leaves half an
output at ``out_dir``, and the next ``start_codegen`` beside the same ``out_dir``
removes a dead run's leftovers.  Jobs still running when the interpreter exits are
killed (``_LIVE_JOBS``).
"""

from __future__ import annotations

import atexit
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import weakref
from pathlib import Path
from typing import Any

from ...errors import no_space
from ...model.paths import AUTOGRAD_MAIN, NATIVE_FUNCTIONS, TORCHGEN_MAIN
from ...procs import pid_alive
from .inputs import codegen_inputs_hash
from .manifest import (
    LOG_NAME,
    MANIFEST_NAME,
    CodegenResult,
    GeneratorResult,
    foreign,
    last_line,
    one_line,
    write_manifest,
)
from .spec import (
    DEFAULT_BACKENDS,
    GENERATORS,
    RESTRICTED_SKIP,
    child_env,
    driver_argv,
    generator_spec,
    new_results,
    torchgen_command,
)

__all__ = ["CodegenJob", "start_codegen"]


_LIVE_JOBS: weakref.WeakSet[CodegenJob] = weakref.WeakSet()


@atexit.register
def _cancel_live_jobs() -> None:  # never leave generator processes behind
    for job in list(_LIVE_JOBS):
        try:
            job.cancel()
        except Exception:  # noqa: BLE001, S110  (at exit: the other jobs and hooks still run)
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
        self._write_error = ""  # the output could not be written (a full disk): the machine's fault, not the tree's

    # -- state
    @property
    def pid(self) -> int | None:
        return self._proc.pid if self._proc else None

    def done(self) -> bool:
        return self._result is not None or self._proc is None or self._proc.poll() is not None

    def __enter__(self) -> CodegenJob:  # noqa: PYI034  (typing.Self is 3.11+; never subclassed)
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
        except Exception as e:  # noqa: BLE001  (our own bug or a full disk: still no exception out)
            self._kill()
            self._cleanup()
            _LIVE_JOBS.discard(self)
            if isinstance(e, OSError) and no_space(e.errno):
                self._write_error = one_line(f"placing the output in {self.out_dir}: {no_space(e.errno)} ({e})")
            self._fail_all(one_line(f"codegen failed: {type(e).__name__}: {e}"))
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
        status = self._read_status()
        last = one_line(last_line(self._stderr_path)) if self._stderr_path else ""
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
                    found = re.search(r"\[Errno (\d+)\]", last)  # the driver itself failed to write
                    g.errno = int(found.group(1)) if found else 0
                else:
                    g.reason = "did not run"
                continue
            g.seconds = float(rec.get("seconds", 0.0))
            g.cpu_seconds = float(rec.get("cpu_seconds", 0.0))
            cpu += g.cpu_seconds
            if rec.get("ok"):
                g.ok = True
            else:
                g.reason = one_line(rec.get("reason") or "failed")
                g.errno = int(rec.get("errno") or 0)
        self._place()
        _LIVE_JOBS.discard(self)
        self._result = self._make_result(seconds=time.monotonic() - self._t0, cpu=cpu)
        return self._result

    def _read_status(self) -> dict[str, dict[str, Any]]:
        """The driver's per-generator records (one JSON line each), by generator name."""
        status: dict[str, dict[str, Any]] = {}
        if self._status_path is not None and self._status_path.exists():
            for line in self._status_path.read_text(errors="replace").splitlines():
                try:
                    rec = json.loads(line)
                except ValueError:
                    continue
                status[rec.get("name", "")] = rec
        return status

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
        write_manifest(final, self.tree, self.inputs_hash, self.full, self._gens)
        if self._stderr_path is not None and self._stderr_path.is_file():
            os.replace(self._stderr_path, final / LOG_NAME)  # the generators' output
        out = self.out_dir
        if foreign(out):
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
        full = [f"{g.name}: {no_space(g.errno)} ({g.reason})" for g in failed if no_space(g.errno)]
        write_error = self._write_error or one_line("; ".join(full))
        files = sorted({f for g in self._gens.values() if g.ok for f in g.files})
        return CodegenResult(
            ok=not failed and bool(self._gens),
            reason=one_line(why) if failed else ("" if self._gens else "no generator"),
            seconds=round(seconds, 3),
            files=files,
            generators=self._gens,
            out_dir=self.out_dir,
            inputs_hash=self.inputs_hash,
            cpu_seconds=round(cpu, 3),
            full=self.full,
            write_error=write_error,
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
    generates what TorchTalk indexes (see spec.RESTRICTED_SKIP).  Never raises for a
    broken tree or generator: the job then finishes with ok=False and a reason.
    """
    tree = Path(tree).resolve()
    out_dir = Path(out_dir).absolute()
    backends = tuple(backends)
    gens = new_results(full)
    try:
        ihash = codegen_inputs_hash(tree)
    except Exception:  # noqa: BLE001  (the run goes on; its output is then never reused)
        ihash = ""
    job = CodegenJob(tree, out_dir, timeout, full, gens, ihash)

    def fail_all(reason: str) -> CodegenJob:
        job._fail_all(reason)
        job._result = job._make_result(seconds=time.monotonic() - job._t0, cpu=0.0)
        return job

    nf = tree / NATIVE_FUNCTIONS
    if not nf.is_file():
        return fail_all(f"not a PyTorch source tree (no {nf})")
    if not (tree / AUTOGRAD_MAIN).is_file():
        gens["autograd"].reason = f"generator missing: no {AUTOGRAD_MAIN} in the tree"
    if not (tree / TORCHGEN_MAIN).is_file():
        gens["torchgen"].reason = (f"generator missing: no {TORCHGEN_MAIN} in the tree "
                                   "(torchgen appeared in PyTorch 1.12)")
    if foreign(out_dir):
        return fail_all(f"{out_dir} exists and was not made by torchtalk's codegen (no {MANIFEST_NAME}); "
                        "not replacing it")
    runnable = [n for n in GENERATORS if not gens[n].reason]
    if not runnable:
        return fail_all("no generator to run")

    try:
        out_dir.parent.mkdir(parents=True, exist_ok=True)
        _remove_stale_tmp(out_dir)
        tmp = Path(tempfile.mkdtemp(prefix=f".{out_dir.name}.tmp-", dir=out_dir.parent))
        (tmp / "pid").write_text(str(os.getpid()))
    except OSError as e:
        if no_space(e.errno):
            job._write_error = one_line(f"creating a temporary directory beside {out_dir}: {no_space(e.errno)}")
        return fail_all(one_line(f"cannot create a temporary directory beside {out_dir}: {e}"))
    job._tmp = tmp
    job._status_path = tmp / "status.jsonl"
    job._stderr_path = tmp / "driver.log"
    spec_gens = []
    for name in runnable:
        stage = tmp / f"stage-{name}"
        stage.mkdir()
        job._stages[name] = stage
        g = generator_spec(name, tree, stage, full, backends)
        if name == "torchgen":
            gens[name].command = torchgen_command(g)
        spec_gens.append(g)
    spec = {"tree": str(tree), "work": str(tmp), "status": str(job._status_path), "parent": os.getpid(),
            "skip": [] if full else list(RESTRICTED_SKIP), "generators": spec_gens}
    try:
        with open(job._stderr_path, "wb") as log:  # the child keeps its own descriptor
            job._proc = subprocess.Popen(
                driver_argv(spec),
                cwd=str(tree),
                env=child_env(tree, out_dir),
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=subprocess.STDOUT,
                start_new_session=True,  # Ctrl-C reaches us, not the generators: we kill them
            )
    except OSError as e:
        job._cleanup()
        return fail_all(one_line(f"cannot start {sys.executable}: {e}"))
    _LIVE_JOBS.add(job)
    return job
