"""The child process that runs a PyTorch tree's own code generators (see job.py).

Run by path, not with ``-m`` (which would import torchtalk's package modules first)::

    python .../source/codegen/driver.py SPEC_JSON      (cwd = the tree, PYTHONPATH = the tree)

so the child imports only the standard library and the tree's generators (torchgen,
tools.setup_helpers.generate_code), and its sys.path holds the tree, not this
directory.  Before the generators run it:

* refuses every file-system write outside the run's work directory (``open`` for
  writing, ``os.open``, ``mkdir``, ``rename``, ``unlink``, ...), so the generators can
  never write into the user's tree;
* watches its parent: it leads its own session (a terminal's Ctrl-C goes to TorchTalk,
  which kills it), so if TorchTalk dies without doing so it exits instead of burning CPU;
* in restricted mode, wraps ``torchgen.utils.FileManager`` so a skipped output's
  template environment (where the cost is) is never computed.

Each generator's outcome is appended to the spec's status file as one JSON line
(name, ok, one-line reason, seconds, cpu_seconds); its output and tracebacks go to
stdout/stderr, which the parent keeps as the log.  The functions below take what they
guard as arguments, so tests can exercise them without patching the test process.
"""

from __future__ import annotations

import builtins
import contextlib
import fnmatch
import functools
import io
import json
import os
import sys
import threading
import time
import traceback
from collections.abc import Callable
from pathlib import Path
from typing import Any, NoReturn, TextIO

# This file's directory, before _as_main() points __main__.__file__ elsewhere.
_HERE = os.path.dirname(os.path.realpath(__file__))

#: The exit status when the parent died (the parent never sees it; for tests and logs).
ORPHANED_EXIT = 70

_WRITE_FLAGS = os.O_WRONLY | os.O_RDWR | os.O_CREAT | os.O_TRUNC | os.O_APPEND

#: os functions that write, and how many leading arguments are paths.
_PATH_WRITERS: tuple[tuple[str, int], ...] = (
    ("rename", 2), ("replace", 2), ("remove", 1), ("unlink", 1), ("rmdir", 1), ("symlink", 2),
    ("link", 2), ("truncate", 1), ("chmod", 1), ("utime", 1),
)


# --------------------------------------------------------------------------- write guards


def is_inside(path: object, work: str) -> bool:
    """Whether writing to ``path`` is allowed: it resolves into ``work`` (a realpath) or is devnull.

    File descriptors and objects that are not paths pass: the call they reach fails or
    was opened through a guarded path.
    """
    if isinstance(path, int):
        return True
    try:
        p = os.fsdecode(os.fspath(path))  # type: ignore[call-overload]
    except TypeError:
        return True
    rp = os.path.realpath(p)
    return rp == work or rp.startswith(work + os.sep) or rp == os.devnull


def refuse(path: object) -> NoReturn:
    raise PermissionError(f"torchtalk refused a write outside its output directory: {path}")


def guard_open(open_fn: Callable[..., Any], work: str) -> Callable[..., Any]:
    """``open`` that refuses the write modes (w, a, x, +) outside ``work``."""

    def guarded_open(file: Any, mode: str = "r", *a: Any, **k: Any) -> Any:
        if any(c in mode for c in "wax+") and not is_inside(file, work):
            refuse(file)
        return open_fn(file, mode, *a, **k)

    return guarded_open


def guard_flags(fn: Callable[..., Any], work: str) -> Callable[..., Any]:
    """``os.open`` that refuses write/create flags outside ``work``."""

    def guarded(path: Any, flags: int, *a: Any, **k: Any) -> Any:
        if flags & _WRITE_FLAGS and not is_inside(path, work):
            refuse(path)
        return fn(path, flags, *a, **k)

    return guarded


def guard_paths(fn: Callable[..., Any], n: int, work: str, exists_error: bool = False) -> Callable[..., Any]:
    """``fn`` that refuses when any of its first ``n`` arguments lies outside ``work``.

    With ``exists_error`` an existing outside path raises FileExistsError instead, as
    ``mkdir`` would: ``os.makedirs(..., exist_ok=True)`` walks up through directories
    that exist outside ``work`` and must keep working.
    """

    def guarded(*a: Any, **k: Any) -> Any:
        for p in a[:n]:
            if not is_inside(p, work):
                if exists_error and os.path.exists(p):
                    raise FileExistsError(17, "File exists", p)
                refuse(p)
        return fn(*a, **k)

    return guarded


def install_write_guards(work: str) -> Callable[..., Any]:
    """Refuse, for the rest of this process, every write outside ``work``; return the unguarded open."""
    unguarded_open = builtins.open
    builtins.open = io.open = guard_open(unguarded_open, work)
    os.open = guard_flags(os.open, work)
    os.mkdir = guard_paths(os.mkdir, 1, work, exists_error=True)
    for name, n in _PATH_WRITERS:
        if hasattr(os, name):
            setattr(os, name, guard_paths(getattr(os, name), n, work))
    return unguarded_open


# --------------------------------------------------------------------------- process plumbing


def watch_parent(ppid: int, interval: float = 1.0, on_orphan: Callable[[int], object] = os._exit) -> None:
    """Exit (ORPHANED_EXIT) as soon as the parent is no longer ``ppid``; runs forever otherwise."""
    while True:
        if os.getppid() != ppid:
            on_orphan(ORPHANED_EXIT)
            return
        time.sleep(interval)


class LastLine:
    """A stream that remembers its last non-empty line (for one-line reasons)."""

    def __init__(self, stream: TextIO) -> None:
        self.stream, self.last, self._buf = stream, "", ""

    def write(self, text: str) -> int:
        self._buf = (self._buf + text)[-4000:]
        lines = [ln.strip() for ln in self._buf.splitlines() if ln.strip()]
        if lines:
            self.last = lines[-1]
        return self.stream.write(text)

    def flush(self) -> None:
        self.stream.flush()

    def __getattr__(self, name: str) -> Any:
        return getattr(self.stream, name)


def _cpu() -> float:
    t = os.times()
    return t.user + t.system


# --------------------------------------------------------------------------- restricted mode


class Skips:
    """Which outputs restricted mode skips: fnmatch patterns on the path relative to ``stage``.

    ``stage`` is the running generator's output root; the driver moves it on between
    generators (the FileManager patch is installed once and reads it at call time).
    """

    def __init__(self, patterns: list[str], stage: str) -> None:
        self.patterns = patterns
        self.stage = stage

    def __call__(self, path: str) -> bool:
        rel = os.path.relpath(os.path.realpath(path), self.stage).replace(os.sep, "/")
        return any(fnmatch.fnmatchcase(rel, pat) for pat in self.patterns)


def patch_file_manager(skipped: Skips) -> None:
    """Make torchgen's FileManager skip unwanted outputs before computing their environment."""
    try:
        from torchgen.utils import FileManager  # type: ignore[import-not-found]  # the tree's
    except ImportError:  # no torchgen (before 1.12): nothing to skip
        return
    if getattr(FileManager, "_torchtalk_patched", False):
        return
    wwt = getattr(FileManager, "write_with_template", None)
    ws = getattr(FileManager, "write_sharded", None)
    if wwt is not None:
        def write_with_template(self: Any, filename: str, template_fn: str, env_callable: Any) -> Any:
            full = f"{self.install_dir}/{filename}"
            if skipped(full):
                with contextlib.suppress(AttributeError):  # torchgen lists what it wrote
                    self.filenames.add(full)
                return None
            return wwt(self, filename, template_fn, env_callable)
        FileManager.write_with_template = write_with_template
    if ws is not None:
        def write_sharded(self: Any, filename: str, items: Any, *a: Any, **k: Any) -> Any:
            dot = filename.rfind(".")
            base, ext = (filename, "") if dot == -1 else (filename[:dot], filename[dot:])
            probe = [f"{self.install_dir}/{base}{s}{ext}" for s in ("_0", "Everything")]
            if all(skipped(p) for p in probe):
                return None
            return ws(self, filename, items, *a, **k)
        FileManager.write_sharded = write_sharded
    FileManager._torchtalk_patched = True


def patch_torchgen_eager(tg: Any, aten_out: str, skipped: Skips) -> None:
    """Stub the two results torchgen computes eagerly, before the (lazily rendered) files they feed."""
    if hasattr(tg, "get_native_function_declarations") and skipped(aten_out + "/NativeFunctions.h"):
        tg.get_native_function_declarations = lambda *a, **k: []
    if hasattr(tg, "get_native_function_schema_registrations") and skipped(aten_out + "/RegisterSchema.cpp"):
        tg.get_native_function_schema_registrations = lambda *a, **k: ([], [])


# --------------------------------------------------------------------------- the generators


def check_under_tree(mod: Any, tree: str) -> None:
    """Refuse a generator module imported from anywhere but the tree (a torchgen on sys.path)."""
    f = os.path.realpath(getattr(mod, "__file__", "") or "")
    if not f.startswith(tree + os.sep):
        raise ImportError(f"{mod.__name__} was imported from {f}, not from the tree")


def _as_main(tree: str, script: str, argv: list[str]) -> None:
    # torchgen names the generator in "@generated by ..." comments from __main__.__file__
    sys.argv = [script, *argv]
    sys.modules["__main__"].__file__ = os.path.join(tree, script)


def run_autograd(g: dict[str, Any], tree: str, skipped: Skips) -> None:
    _as_main(tree, "tools/setup_helpers/generate_code.py", g["argv"])
    if not g["full"]:
        patch_file_manager(skipped)
    from tools.setup_helpers import generate_code as gc  # type: ignore[import-not-found]  # the tree's

    check_under_tree(gc, tree)
    nf, tags = g["native_functions"], g["tags"]
    if g["full"]:
        gc.generate_code(Path(g["stage"]), nf, tags)
    else:  # the "python" subset (annotated_fn_args.py) is not indexed
        for subset in ("pybindings", "libtorch"):
            gc.generate_code(Path(g["stage"]), nf, tags, subset=subset)


def run_torchgen(g: dict[str, Any], tree: str, skipped: Skips) -> None:
    _as_main(tree, "torchgen/gen.py", g["argv"])
    if not g["full"]:
        patch_file_manager(skipped)
    import torchgen.gen as tg  # type: ignore[import-not-found]  # the tree's own

    check_under_tree(tg, tree)
    if not g["full"]:
        patch_torchgen_eager(tg, g["aten_out"], skipped)
    tg.main()


RUNNERS: dict[str, Callable[[dict[str, Any], str, Skips], None]] = {
    "autograd": run_autograd,
    "torchgen": run_torchgen,
}


def _run_named(g: dict[str, Any], tree: str, skipped: Skips) -> None:
    RUNNERS[g["name"]](g, tree, skipped)  # an unknown name is that generator's failure


def run_one(run: Callable[[], None], stderr: LastLine) -> dict[str, Any]:
    """Run one generator; its status record (ok, one-line reason, seconds, cpu_seconds)."""
    t0, c0 = time.monotonic(), _cpu()
    rec: dict[str, Any] = {"ok": False, "reason": ""}
    stderr.last = ""
    try:
        run()
        rec["ok"] = True
    except SystemExit as e:  # argparse errors and explicit exits
        if e.code in (0, None):
            rec["ok"] = True
        else:
            rec["reason"] = f"exited with status {e.code}" + (f": {stderr.last}" if stderr.last else "")
    except BaseException as e:  # noqa: BLE001  (whatever the tree's code raises is its result)
        traceback.print_exc()
        msg = (str(e).strip().splitlines() or [""])[0]
        rec["reason"] = f"{type(e).__name__}: {msg}" if msg else type(e).__name__
        if isinstance(e, OSError) and e.errno is not None:
            rec["errno"] = e.errno  # a full disk is the machine's problem, not the tree's (job.py tells them apart)
    rec["seconds"] = round(time.monotonic() - t0, 3)
    rec["cpu_seconds"] = round(_cpu() - c0, 3)
    return rec


def main(argv: list[str]) -> int:
    spec = json.loads(argv[1])
    tree = os.path.realpath(spec["tree"])
    work = os.path.realpath(spec["work"])
    # Run by path, sys.path[0] is this directory: the generators must not see its
    # modules as top-level ones (python -c would have put the cwd, the tree, there).
    if sys.path and os.path.realpath(sys.path[0] or ".") == _HERE:
        sys.path[0] = tree
    os.chdir(tree)
    if tree not in sys.path:
        sys.path.insert(0, tree)
    threading.Thread(target=watch_parent, args=(spec["parent"],), daemon=True).start()
    stderr = LastLine(sys.stderr)
    sys.stderr = stderr
    unguarded_open = install_write_guards(work)

    skipped = Skips(spec["skip"], work)
    for g in spec["generators"]:
        skipped.stage = os.path.realpath(g["stage"])
        rec = {"name": g["name"], **run_one(functools.partial(_run_named, g, tree, skipped), stderr)}
        with unguarded_open(spec["status"], "a") as f:
            f.write(json.dumps(rec) + "\n")
        sys.stdout.flush()
        sys.stderr.flush()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
