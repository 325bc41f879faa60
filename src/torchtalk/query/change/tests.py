"""The tests a change affects, ranked, each with the reason and a command that runs it.

Order: tests the change edits (they are affected themselves), then per op reached,
closest first: its OpInfo entries (the generic ``@ops`` tests: test_ops.py and, for
a backward, decomposition or lowering change, the suites that check exactly that),
the tests named after it, the tests whose bodies call its Python API; then nn
modules and optimizers (their ModuleInfo / OptimizerInfo tests and the tests that
build them), then the suites of generated layers. The per-op lookup is
``find_similar_tests`` itself, so its ranking is the one used here.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from ...model import Loc
from ...model.change import Aspect, TestReason
from ...model.dispatch import Device
from ...store.reader import Index
from ..moduledb import SUITES, entry_for
from ..testclasses import device_copy, runs_where
from ..testmatch import opinfo_command
from ..testnames import generated_names
from ..testquery import opinfo_names
from ..tests import FoundTest, device_instantiations, find_similar_tests
from .definitions import ChangedOpInfo, ChangedTest


def base_name(op: str) -> str:
    """The name tests use for an op: without its overload and an in-place op's trailing underscore (cumsum for
    cumsum.out and cumsum_; __iand__ keeps its underscores)."""
    base = op.split(".")[0]
    return base[:-1] if base.endswith("_") and not base.endswith("__") else base


MAX_OPS_FOR_TESTS = 6  # distinct ops whose tests are looked up (each is one find_similar_tests call)
PER_OP = 6  # tests taken per op from find_similar_tests
# Note [Tests of a device's change]: a change to one device's code (a .cu file) takes each op's PER_OP tests from
# ON_DEVICE_POOL of find_similar_tests' ranking, those shown to run on the device first: its 6 best for
# F.grid_sample are CPU and MPS tests, and the onlyCUDA test_grid_sample_large is its 9th.
ON_DEVICE_POOL = 4 * PER_OP
RUN_FIRST = 5
# The suites that check one aspect of every OpInfo op, by what the change touched.
ASPECT_SUITES: dict[Aspect, tuple[str, ...]] = {
    # test_ops_fwd_gradients.py also checks the forward-over-backward of a backward formula (fwgrad_bwgrad), and
    # auto_element_wise / auto_linear make the JVP from it; a forward-mode formula is that suite's alone.
    Aspect.BACKWARD: ("test/test_ops_gradients.py", "test/test_ops_fwd_gradients.py"),
    Aspect.FORWARD_AD: ("test/test_ops_fwd_gradients.py",),
    Aspect.DECOMPOSITION: ("test/test_decomp.py", "test/inductor/test_torchinductor_opinfo.py"),
    Aspect.REF: ("test/test_ops.py",),
    Aspect.LOWERING: ("test/inductor/test_torchinductor_opinfo.py",),
    Aspect.META: ("test/test_meta.py",),
}


@dataclass
class AffectedTest:
    name: str  # "TestReductionsCPU.test_cumsum", "OpInfo('cumsum')", "ModuleInfo(nn.Linear)", a suite's path
    loc: Loc | None
    kind: TestReason
    target: str  # the op, module or file it is for
    why: str
    command: str
    generated: list[str] = field(default_factory=list)  # names the device/dtype generators give it
    # False: the change runs on one device other than the CPU, and nothing says this test does (no variant for
    # the device, no decorator, class, file or name naming it): it exercises the change only if it moves
    # tensors to the device itself. Ranked after the others.
    on_device: bool = True


@dataclass
class OpForTests:
    base: str  # the name tests use: "cumsum" for cumsum.out and cumsum_
    op: str  # the op reached
    aspects: set[Aspect]  # what about it changed, when not its kernels
    path: str  # one line on how the change reaches it
    python: list[str] = field(default_factory=list)  # its Python names: OpInfo entries are named after them


def with_device(command: str, device: Device | None) -> str:
    """Narrow a pytest -k selection to one device type's generated tests (test_x_cuda, TestFooCUDA)."""
    if not device:
        return command
    m = re.match(r'^(.* -k )"(.*)"$', command)
    if m:
        return f'{m.group(1)}"{m.group(2)} and {device}"'
    m = re.match(r"^(.* -k )(\S+)$", command)
    return f'{m.group(1)}"{m.group(2)} and {device}"' if m else command


_DEVICE_TYPED = re.compile(rf"_({'|'.join(d.value for d in Device)})(_|$)")


def _on_device(names: list[str], device: Device | None) -> list[str]:
    return [n for n in names if re.search(rf"_{device}(_|$)", n.split(".")[-1])] if device else names


def _device_typed(names: list[str]) -> bool:
    return any(_DEVICE_TYPED.search(n.split(".")[-1]) for n in names)


def for_device(path: str, cls: str, generated: list[str],
                device: Device | None) -> tuple[bool, list[str], Device | None]:
    """(keep it, its generated names on the device, the device to narrow its command to) for a test
    found by name: a CUDA-only change keeps the CUDA variants of device-type tests, drops tests generated
    for other devices only, and tests written for another device (TestMPS, test_cuda.py for a CPU change)."""
    if not device:
        return True, generated, None
    if _device_typed(generated):
        on = _on_device(generated, device)
        return bool(on), on, device
    others = [d.value for d in Device if d is not device]
    foreign = any(f"test_{d}" in path.rsplit("/", 1)[-1] or cls.lower().startswith(f"test{d}") or
                  cls.endswith(d.upper()) for d in others)
    return not foreign, generated, None


def _shows_device(device: Device | None, *texts: str) -> bool:
    """Whether a test written without device variants says it runs on ``device`` (always, for no device or
    the CPU: tests run there unless they move tensors): its file, class, name, decorators (onlyCUDA,
    skipIf(not TEST_CUDA)) or run command name the device (CUDA tests also as GPU: GPUTests)."""
    if device is None or device is Device.CPU:
        return True
    text = " ".join(texts).lower()
    return device.value in text or (device is Device.CUDA and "gpu" in text)


def _command(path: str, cls: str, name: str) -> str:
    sel = f"{cls} and {name}" if cls and name else cls or name
    return f'pytest {path} -k "{sel}"' if sel else f"pytest {path}"


def _ops_command(ix: Index, sel: str) -> str:
    """The command running an entry's tests of test/test_ops.py (Note [Exact -k selections])."""
    return opinfo_command(ix, sel, "test/test_ops.py")


def _opinfo_sel(name: str, variant: str) -> str:
    return name.replace(".", "_") + (f"_{variant}" if variant else "")


def _present(ix: Index) -> set[str]:
    return ix.cached("test_paths", lambda: {p for p in ix.paths().values() if p.startswith("test/")})


def changed_tests(ix: Index, tests: list[ChangedTest], device: Device | None) -> list[AffectedTest]:
    out = []
    inst = device_instantiations(ix)
    ids = ix.file_ids()
    for t in tests:
        label = f"{t.cls}.{t.name}" if t.cls and t.name else t.cls or t.name or t.loc.path
        opts = inst.get((ids.get(t.loc.path, -1), t.cls))
        gen = generated_names(t.cls, t.name, t.decorators, opts) if t.name else []
        # A changed test is run whatever the device; a device-type one on the changed device when it has it.
        on = _on_device(gen, device) if _device_typed(gen) else []
        out.append(AffectedTest(label, t.loc, TestReason.CHANGED, t.loc.path, t.why,
                                with_device(_command(*runs_where(ix, t.loc.path, t.cls, t.name)),
                                            device if on else None), on or gen))
    return out


def changed_opinfos(ix: Index, infos: list[ChangedOpInfo], device: Device | None) -> list[AffectedTest]:
    return [AffectedTest(f"OpInfo('{o.name}')" + (f" variant {o.variant!r}" if o.variant else ""), o.loc,
                         TestReason.OPINFO,
                         o.name, f"OpInfo entry: {o.why}",
                         with_device(_ops_command(ix, _opinfo_sel(o.name, o.variant)), device))
            for o in infos]


def _opinfos_named(ix: Index, python: list[str], have: set[tuple[str, str]]) -> list[tuple[str, str, Loc]]:
    """OpInfo entries of op_db named after one of the op's Python names (opinfo_names: OpInfo('nn.functional.mse_loss'),
    OpInfo('linalg.svd')), beyond those already found."""
    names = opinfo_names(python)
    if not names:
        return []
    rows = ix.q(f"SELECT name, variant_test_name, file_id, line FROM op_info_entry WHERE db = 'op_db' AND name IN "
                f"({','.join('?' * len(names))}) ORDER BY file_id, line", names)
    return [(n, v, Loc(ix.path_of(f), ln)) for n, v, f, ln in rows if (n, v) not in have]


def _pool(device: Device | None) -> int:
    """How many of find_similar_tests' tests to choose an op's PER_OP from (Note [Tests of a device's change])."""
    return PER_OP if device is None or device is Device.CPU else ON_DEVICE_POOL


def op_tests(ix: Index, op: OpForTests, device: Device | None) -> list[AffectedTest]:
    found = find_similar_tests(ix, op.base, _pool(device))
    present = _present(ix)
    out = []
    hits = [(h.name, h.variant, h.loc, h.command, h.suites) for h in found.opinfos]
    hits += [(n, v, loc, _ops_command(ix, _opinfo_sel(n, v)), [])
             for n, v, loc in _opinfos_named(ix, op.python, {(h[0], h[1]) for h in hits})]
    for name, variant, loc, command, suites in hits:
        label = f"OpInfo('{name}')" + (f" variant {variant!r}" if variant else "")
        out.append(AffectedTest(label, loc, TestReason.OPINFO, op.op,
                                f"the generic @ops tests run op {op.op} through this OpInfo entry ({op.path})",
                                with_device(command, device)))
        sel = _opinfo_sel(name, variant)
        # The family suites whose @ops lists hold the entry (Note [OpInfo lists]: test_unary_ufuncs.py, test_sparse.py),
        # which run its kernels: not for a change of its backward, decomposition, ref, lowering or meta function, whose
        # aspect suites (below) check what changed.
        if not op.aspects:
            out += [AffectedTest(f"{f.path} for {sel}", Loc(f.path, 1), TestReason.OPINFO, op.op,
                                 f"its @ops({', '.join(f.lists)}) tests run op {op.op} through {label} ({op.path})",
                                 with_device(opinfo_command(ix, sel, f.path), device))
                    for f in suites]
    # The suites that check what changed for every OpInfo op; -k matches the op inside OpInfo names too
    # (mse_loss selects test_..._nn_functional_mse_loss_...).
    # (only through an OpInfo entry: an op without one is in none of these suites, and -k with its name selects
    # nothing there)
    sels = list(dict.fromkeys(_opinfo_sel(n, v) for n, v, _l, _c, _s in hits[:2]))
    for aspect in sorted(op.aspects):
        for suite in ASPECT_SUITES.get(aspect, ()):
            if suite in present and suite != "test/test_ops.py":
                for sel in sels:
                    out.append(AffectedTest(f"{suite} for {sel}", Loc(suite, 1), TestReason.OPINFO, op.op,
                                            f"its {aspect} changed: {suite} checks that for every OpInfo op "
                                            f"({op.path})",
                                            with_device(opinfo_command(ix, sel, suite), device)))
    out += _found(ix, found.tests, op.base, op.op, op.path, device)
    return out


def _found(ix: Index, tests: list[FoundTest], base: str, target: str, how: str,
           device: Device | None) -> list[AffectedTest]:
    out = []
    for t in tests:
        keep, generated, narrow = for_device(t.loc.path, t.cls, t.generated, device)
        if not keep:
            continue
        kind = TestReason.NAMED if t.by_name else TestReason.CALLS
        why = (f"named after {base}" if kind is TestReason.NAMED else t.why) + f" ({how})"
        # a template copied into a class per device (inductor's CommonTemplate: CpuTests, GPUTests) runs on the
        # device as that class's copy, which the command selects (find_similar_tests names the first copy)
        copy = device_copy(ix, t.loc.path, t.cls, t.name, device.value) if device and device is not Device.CPU else ""
        command = f"pytest {copy}" if copy else with_device(t.command, narrow)
        on = bool(copy) or narrow is not None or _shows_device(device, t.loc.path.rsplit("/", 1)[-1], t.cls, t.name,
                                                                t.command, *t.decorators)
        out.append(AffectedTest(f"{t.cls}.{t.name}" if t.cls else t.name, t.loc, kind, target, why, command,
                                generated, on))
    return sorted(out, key=lambda t: not t.on_device)[:PER_OP]  # in rank order, the device's first


def module_tests(ix: Index, public: str, why: str, device: Device | None) -> list[AffectedTest]:
    """Tests of an nn module or optimizer: its ModuleInfo / OptimizerInfo tests, tests named after it or
    building it."""
    short = public.rsplit(".", 1)[-1]
    spelled = public.removeprefix("torch.")
    entry = entry_for(ix, public)
    out = [AffectedTest(entry.label, entry.loc, TestReason.MODULE, public,
                        f"{SUITES[entry.kind].rsplit('/', 1)[-1]} runs every {entry.label.split('(')[0]} entry ({why})",
                        with_device(entry.command, device))] if entry is not None else []
    return out + _found(ix, find_similar_tests(ix, spelled, _pool(device)).tests, short, public, why, device)


def suite_tests(suites: list[tuple[str, str]]) -> list[AffectedTest]:
    return [AffectedTest(path, Loc(path, 1), TestReason.SUITE, path, why, f"pytest {path}") for path, why in suites]


def rank(groups: list[list[AffectedTest]]) -> tuple[list[AffectedTest], list[str]]:
    """All tests once (by command), in group order; and the first commands to run, favouring the first
    groups (changed tests, the closest op) without leaving out the next ones."""
    seen: set[str] = set()
    kept: list[list[AffectedTest]] = []
    for g in groups:
        fresh = []
        for t in g:
            if t.command not in seen:
                seen.add(t.command)
                fresh.append(t)
        if fresh:
            kept.append(fresh)
    # Tests not shown to run on the changed device go last, and are run first only when nothing else is.
    ordered = [t for g in kept for t in g if t.on_device] + [t for g in kept for t in g if not t.on_device]
    kept = [on for g in kept if (on := [t for t in g if t.on_device])] or kept
    # Item k of group i scores k + i: the closest op's first tests lead, the next ops' first tests follow.
    picks = sorted((k + i, i, t.command) for i, g in enumerate(kept) for k, t in enumerate(g))
    first = list(dict.fromkeys(c for _s, _i, c in picks))[:RUN_FIRST]
    return ordered, first
