"""What the driver is asked to run: the generators, their arguments, the skipped outputs, the child's environment.

Two generators, run one after the other in a single child process (driver.py; they
share its interpreter start-up and torchgen's parsed-YAML cache):

* ``autograd``: ``tools/setup_helpers/generate_code.py`` (subsets ``pybindings`` and
  ``libtorch``; the ``python`` subset, ``annotated_fn_args.py``, is skipped).
* ``torchgen``: ``python -m torchgen.gen`` with ``--generate sources`` (no headers,
  no ``Declarations.yaml``), ``--mps`` and ``--backend_whitelist CPU CUDA MPS Meta``
  (torchgen always keeps the four Composite* keys), using only the options the
  tree's gen.py has.
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import Any

from ...model.codegen import AOTI_DIR, ATEN_DIR, AUTOGRAD_DIR
from ...model.paths import NATIVE_FUNCTIONS, TAGS, TORCHGEN_MAIN
from .manifest import GeneratorResult

__all__ = [
    "DEFAULT_BACKENDS",
    "DRIVER",
    "GENERATORS",
    "RESTRICTED_SKIP",
    "child_env",
    "driver_argv",
    "generator_spec",
    "new_results",
    "torchgen_argv",
    "torchgen_command",
]

#: The child's program, run by path (see driver.py for why not ``-m``).
DRIVER = Path(__file__).resolve().with_name("driver.py")

#: Backend dispatch keys whose Register<Key>.cpp is generated in restricted mode.
#: torchgen always adds the generic keys (CompositeImplicitAutograd,
#: CompositeImplicitAutogradNestedTensor, CompositeExplicitAutograd,
#: CompositeExplicitAutogradNonFunctional).
DEFAULT_BACKENDS: tuple[str, ...] = ("CPU", "CUDA", "MPS", "Meta")

#: The generators in the order the driver runs them.  autograd first: torchgen's
#: main() mutates torchgen.model.dispatch_keys, which must not leak into autograd.
GENERATORS: tuple[str, ...] = ("autograd", "torchgen")


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


def new_results(full: bool) -> dict[str, GeneratorResult]:
    """A result per generator, not run yet, with the equivalent command line."""
    return {
        "autograd": GeneratorResult(
            "autograd",
            f"python tools/setup_helpers/generate_code.py --native-functions-path {NATIVE_FUNCTIONS} "
            f"--tags-path {TAGS} --gen-dir OUT"
            + ("" if full else " (--subset pybindings, then libtorch)"),
        ),
        "torchgen": GeneratorResult("torchgen", "python -m torchgen.gen -s aten/src/ATen -d OUT/aten/src/ATen"),
    }


def torchgen_argv(gen_py_text: str, stage: Path, full: bool, backends: tuple[str, ...]) -> list[str]:
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


def generator_spec(name: str, tree: Path, stage: Path, full: bool, backends: tuple[str, ...]) -> dict[str, Any]:
    """The driver's instructions for one generator writing into ``stage``."""
    g: dict[str, Any] = {
        "name": name,
        "stage": str(stage),
        "full": full,
        "native_functions": NATIVE_FUNCTIONS,
        "tags": TAGS,
        "aten_out": str(stage / ATEN_DIR),
    }
    if name == "torchgen":
        try:
            text = (tree / TORCHGEN_MAIN).read_text(errors="replace")
        except OSError:
            text = ""
        g["argv"] = torchgen_argv(text, stage, full, backends)
    else:
        g["argv"] = ["--native-functions-path", NATIVE_FUNCTIONS, "--tags-path", TAGS, "--gen-dir", str(stage)]
    return g


def torchgen_command(g: dict[str, Any]) -> str:
    """The command line a user would type for the torchgen spec ``g`` (stage shown as OUT)."""
    return "python -m torchgen.gen " + " ".join(a.replace(g["stage"], "OUT") for a in g["argv"])


def child_env(tree: Path, out_dir: Path) -> dict[str, str]:
    """The driver's environment: imports from the tree, bytecode beside out_dir, fixed hash seed."""
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
    return env


def driver_argv(spec: dict[str, Any]) -> list[str]:
    return [sys.executable, str(DRIVER), json.dumps(spec)]
