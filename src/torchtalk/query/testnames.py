"""The names PyTorch's test generators give a test, so users can run the real thing.

``instantiate_device_type_tests(TestFoo, globals())`` turns ``TestFoo.test_bar``
into ``TestFooCPU.test_bar_cpu`` (and CUDA, MPS when allowed), ``@dtypes``
appends a dtype (``test_bar_cpu_float32``), ``@ops(op_db)`` inserts the OpInfo
name (``test_bar_cumsum_cpu_float32``), ``@parametrize`` the parameters.
Mirrors common_device_type.py / common_utils.py naming, from decorator text.
"""

from __future__ import annotations

import itertools
import json
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from ..model.tests import UNREAD

DTYPE_NAMES = {
    "float": "float32", "float32": "float32", "double": "float64", "float64": "float64", "half": "float16",
    "float16": "float16", "bfloat16": "bfloat16", "cfloat": "complex64", "complex64": "complex64",
    "cdouble": "complex128", "complex128": "complex128", "chalf": "complex32", "complex32": "complex32",
    "long": "int64", "int64": "int64", "int": "int32", "int32": "int32", "short": "int16", "int16": "int16",
    "int8": "int8", "uint8": "uint8", "bool": "bool", "uint16": "uint16", "uint32": "uint32", "uint64": "uint64",
}
# Note [Devices of a generic class]
# ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
# instantiate_device_type_tests(TestFoo, globals(), ...) makes one class per device type it runs on: TestFooCPU,
# TestFooCUDA (common_device_type.py's get_device_type_test_bases), MPS and XPU only when ``allow_mps`` /
# ``allow_xpu`` admit them, then keeps those ``only_for`` names and drops those ``except_for`` names. An option
# whose value the file does not give (Note [Instantiation options] in model/tests.py: ``only_for=get_devices()``)
# filters nothing we can know: the classes listed are the usual devices, as when it is absent, a class of any
# device type is one it may make (``possible_devices``), and the answer says which option was not read.
DEFAULT_DEVICES = ("cpu", "cuda")
OPTIONAL_DEVICES = {"mps": "allow_mps", "xpu": "allow_xpu"}
ONLY_DECORATORS = {"onlyCPU": "cpu", "onlyCUDA": "cuda", "onlyMPS": "mps", "onlyXPU": "xpu"}
DEVICE_OPTIONS = ("only_for", "except_for", *OPTIONAL_DEVICES.values())


# Note [Dtypes per device type]
# ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
# ``@dtypes(...)`` gives a test's dtypes on every device type; ``@dtypesIfCUDA(...)`` (dtypesIfCPU, dtypesIfMPS, ...)
# and ``@dtypes(..., device_type="cuda")`` give them on one, and win there (common_device_type.py:
# ``test.dtypes.get(device_type, test.dtypes.get("all"))``): ``@dtypes(torch.float) @dtypesIfCUDA(torch.half)``
# makes test_x_cpu_float32 and test_x_cuda_float16.
_DTYPES = re.compile(r"dtypes(?:If(\w+))?\((.*)\)$", re.S)
_DEVICE_TYPE = re.compile(r",?\s*device_type\s*=\s*['\"](\w+)['\"]\s*")


def _dtypes(decorators: list[str], device: str = "") -> list[str]:
    """The dtype suffixes of a test's dtype decorators on ``device`` (Note [Dtypes per device type]); [] if none."""
    general: list[str] | None = None
    for d in decorators:
        m = _DTYPES.match(d)
        if not m:
            continue
        body, which = m.group(2), (m.group(1) or "").lower()
        kw = _DEVICE_TYPE.search(body)
        if kw:
            which, body = kw.group(1).lower(), body[:kw.start()] + body[kw.end():]
        which = "" if which == "all" else which
        names = re.findall(r"torch\.(\w+)", body)
        got = [DTYPE_NAMES.get(n, n) for n in names] if names and not body.lstrip().startswith("*") else ["<dtype>"]
        if which and which == device:
            return got
        if not which and general is None:
            general = got
    return general or []


def _options(options_json: str) -> dict[str, Any]:
    try:
        options = json.loads(options_json or "{}")
    except ValueError:
        return {}
    return options if isinstance(options, dict) else {}


def _unread(value: object) -> bool:
    return isinstance(value, dict) and UNREAD in value


def unread_options(options_json: str) -> dict[str, str]:
    """The device options of an instantiation whose value the file does not give -> their source text."""
    return {k: v[UNREAD] for k, v in _options(options_json).items() if k in DEVICE_OPTIONS and _unread(v)}


def possible_devices(options_json: str, decorators: list[str]) -> list[str]:
    """``devices_for``, and when a device option is unread every device type, which it may name
    (Note [Devices of a generic class])."""
    devices = devices_for(options_json, decorators)
    if unread_options(options_json):
        devices += [d for d in (*DEFAULT_DEVICES, *OPTIONAL_DEVICES) if d not in devices]
    return devices


def devices_for(options_json: str, decorators: list[str]) -> list[str]:
    """The device types a generic class's tests are instantiated for (Note [Devices of a generic class])."""
    options = {k: v for k, v in _options(options_json).items() if not _unread(v)}
    devices = list(DEFAULT_DEVICES) + [d for d, flag in OPTIONAL_DEVICES.items() if options.get(flag)]
    only = options.get("only_for")
    if only:
        only = [only] if isinstance(only, str) else list(only)
        devices = [d for d in devices if d in [str(o).lower() for o in only]] or [str(o).lower() for o in only]
    except_for = options.get("except_for")
    if except_for:
        except_for = [except_for] if isinstance(except_for, str) else list(except_for)
        devices = [d for d in devices if d not in [str(o).lower() for o in except_for]]
    for dec, device in ONLY_DECORATORS.items():
        if any(d == dec or d.startswith(dec + "(") for d in decorators):
            devices = [d for d in devices if d == device]
    # @skipCUDAIf(True, "...") skips the device's variant whatever the machine (LossCTC's test_ctc_loss): it runs
    # nowhere there, like a device onlyX leaves out
    skipped = {m.group(1).lower() for d in decorators if (m := _ALWAYS_SKIPPED.match(d))}
    return [dev for dev in devices if dev not in skipped]


_ALWAYS_SKIPPED = re.compile(r"skip(CPU|CUDA|MPS|XPU)If\(\s*True\s*[,)]")


def generator(decorator: str) -> str:
    """The test generator a decorator is, however written: ``ops`` for ``ops(op_db)`` and
    ``common_device_type.ops(...)``; ``parametrize`` for ``parametrize(...)``, ``common_utils.parametrize(...)`` and
    an alias that keeps the word (test_nn.py imports it ``as parametrize_test``); "" for any other decorator."""
    name = decorator.split("(", 1)[0].rsplit(".", 1)[-1]
    if name == "ops" and "(" in decorator:
        return "ops"
    if "(" not in decorator:  # a bare name is a parametrize(...) bound to a name of its own: parametrize_axis =
        #                       parametrize("axis", [...]) in test/torch_np/test_reductions.py
        return "parametrize" if name.startswith("parametrize_") else ""
    return "parametrize" if name.startswith("parametrize") or name.endswith("parametrize") else ""


@dataclass(frozen=True)
class Renamer:
    """How a parametrizer other than @ops / @parametrize renames a test (Note [Parametrizers rename tests] in
    query/parametrizers.py): every suffix it makes when the tree gives them, else a placeholder for them."""

    name: str  # the decorator's name ("swap", "optims")
    suffixes: tuple[str, ...]  # ("swap_True", "swap_False"); () when not computable
    placeholder: str  # "<optim_info.name>": stands for the suffixes when they are not computed
    dtype: bool  # it puts a dtype after the device


def callable_of(decorator: str) -> str:
    """The dotted name a decorator (as written, without the @) calls or is: ``swap`` for ``swap([True, False])``."""
    m = re.match(r"^\s*([A-Za-z_][\w.]*)\s*(?:\(|$)", decorator)
    return m.group(1) if m else ""


def _parts(decorators: list[str], opinfo: str | None, renamers: Mapping[str, Renamer]) -> list[list[str]]:
    """The suffixes each generator adds, top to bottom as compose_parametrize_fns joins them: the @ops entry, the
    @parametrize values (one placeholder for adjacent ones), each other parametrizer's suffixes."""
    parts: list[list[str]] = []
    for d in decorators:
        g = generator(d)
        if g == "ops":
            parts.append([opinfo or "<op>"])
        elif g == "parametrize":
            if not parts or parts[-1] != ["<params>"]:
                parts.append(["<params>"])
        elif d in renamers:
            part = list(renamers[d].suffixes) or [renamers[d].placeholder]
            if part != ["<params>"] or not parts or parts[-1] != ["<params>"]:  # one placeholder for adjacent ones
                parts.append(part)
    return parts


def generated_names(cls: str, method: str, decorators: list[str], instantiation: str | None,
                    opinfo: str | None = None, renamers: Mapping[str, Renamer] | None = None) -> list[str]:
    """The runnable names (``Class.method``) the generators make, each device's dtypes in turn (every one: an answer
    that shows a few says how many more there are, never cuts them silently). ``renamers``: the test's decorators
    that are other parametrizers (query/parametrizers.py) -> how they rename it."""
    renamers = renamers or {}
    bases = ["_".join((method, *combo)) for combo in itertools.product(*_parts(decorators, opinfo, renamers))]
    if instantiation is None:
        return [f"{cls}.{b}" if cls else b for b in bases]
    out = []
    dated = any(generator(d) == "ops" or (d in renamers and renamers[d].dtype) for d in decorators)
    for device in devices_for(instantiation, decorators):
        dtypes = _dtypes(decorators, device) or (["<dtype>"] if dated else [])
        dev_cls = f"{cls}{device.upper()}"
        for base in bases:
            if dtypes:
                out += [f"{dev_cls}.{base}_{device}_{dt}" for dt in dtypes]
            else:
                out.append(f"{dev_cls}.{base}_{device}")
    return out


# Note [Selecting one test's family]
# ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
# pytest's ``-k "TestFoo and test_x"`` matches substrings (case-insensitively) of the names of an item and its
# parents: it also selects test_x_atol, the tests test_x_independent_output's generators make, and the tests of a
# class TestFooBar. The command of one test names its node ids when every name it runs as is known and few
# (``MAX_NODE_IDS``); else it selects by ``-k`` and excludes each other test of its class and each other class of its
# file that the terms match (``and not test_x_atol``), as long as none of the test's own known names contains it.
# Only such a selector is "run one" (``Selector.exact``); one that cannot be made so says it may select more.
MAX_NODE_IDS = 4


@dataclass(frozen=True)
class Selector:
    command: str
    exact: bool  # selects the test's generated family and nothing else


def run_command(path: str, cls: str, name: str, decorators: list[str], instantiation: str | None,
                renamers: Mapping[str, Renamer] | None = None, others: Iterable[str] = ()) -> str:
    """The command that runs one test (``select_one``'s)."""
    return select_one(path, cls, name, decorators, instantiation, renamers, others).command


def select_one(path: str, cls: str, name: str, decorators: list[str], instantiation: str | None,
               renamers: Mapping[str, Renamer] | None = None, others: Iterable[str] = ()) -> Selector:
    """The command that runs one test and the tests its generators make of it: their pytest node ids when all are
    known (``pytest test/test_nn.py::TestNN::test_relu``), else ``-k`` with the names as written, less the other
    tests and classes ``others`` (of its class and file) that the terms also match (Note [Selecting one test's
    family])."""
    names = generated_names(cls, name, decorators, instantiation, None, renamers)
    # -k matches the module's name too: test_sort in test_sort_and_select.py would select every test of the file,
    # so its device copies are named by their node ids when they are known
    in_file_name = name.lower() in path.rsplit("/", 1)[-1].lower()
    if (instantiation is None or in_file_name) and len(names) <= MAX_NODE_IDS and not any("<" in n for n in names):
        return Selector("pytest " + " ".join(f"{path}::{n.replace('.', '::')}" for n in names), True)
    if not path.startswith("test/"):
        return Selector(f"python -m pytest {path} -k {name}", False)
    own = [n.lower() for n in names] + [n.split(".")[0].lower() for n in names if "." in n]
    terms = [t for t in (cls, name) if t]
    exact = not in_file_name
    excluded: list[str] = []
    others = list(dict.fromkeys(others))  # none given: the siblings are not known, so neither is what it selects
    for other in others:
        low = other.lower()
        if low in (cls.lower(), name.lower()) or not any(t.lower() in low for t in terms):
            continue
        if any(low in n for n in own):
            exact = False  # it cannot be told apart from the test's own names
        else:
            excluded.append(other)
    sel = " and ".join([*terms, *(f"not {o}" for o in excluded)])
    return Selector(f'pytest {path} -k "{sel}"', exact and bool(others))
