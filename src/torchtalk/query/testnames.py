"""The names PyTorch's test generators give a test, so users can run the real thing.

``instantiate_device_type_tests(TestFoo, globals())`` turns ``TestFoo.test_bar``
into ``TestFooCPU.test_bar_cpu`` (and CUDA, MPS when allowed), ``@dtypes``
appends a dtype (``test_bar_cpu_float32``), ``@ops(op_db)`` inserts the OpInfo
name (``test_bar_cumsum_cpu_float32``), ``@parametrize`` the parameters.
Mirrors common_device_type.py / common_utils.py naming, from decorator text.
"""

from __future__ import annotations

import json
import re
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


def _dtypes(decorators: list[str]) -> list[str]:
    for d in decorators:
        m = re.match(r"dtypes\((.*)\)$", d, re.S)
        if m:
            names = re.findall(r"torch\.(\w+)", m.group(1))
            if names and not m.group(1).lstrip().startswith("*"):
                return [DTYPE_NAMES.get(n, n) for n in names]
            return ["<dtype>"]
    return []


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
    return devices


def generator(decorator: str) -> str:
    """The test generator a decorator is, however written: ``ops`` for ``ops(op_db)`` and
    ``common_device_type.ops(...)``; ``parametrize`` for ``parametrize(...)``, ``common_utils.parametrize(...)`` and
    an alias that keeps the word (test_nn.py imports it ``as parametrize_test``); "" for any other decorator."""
    name = decorator.split("(", 1)[0].rsplit(".", 1)[-1] if "(" in decorator else ""
    if name == "ops":
        return "ops"
    return "parametrize" if name.startswith("parametrize") or name.endswith("parametrize") else ""


def generated_names(cls: str, method: str, decorators: list[str], instantiation: str | None,
                    opinfo: str | None = None) -> list[str]:
    """The runnable names (``Class.method``) the generators make, each device's dtypes in turn (every one: an answer
    that shows a few says how many more there are, never cuts them silently)."""
    ops = any(generator(d) == "ops" for d in decorators)
    params = any(generator(d) == "parametrize" for d in decorators)
    base = method
    if ops:
        base = f"{method}_{opinfo or '<op>'}"
    if params:
        base = f"{base}_<params>"
    if instantiation is None:
        return [f"{cls}.{base}" if cls else base]
    out = []
    dtypes = _dtypes(decorators) or (["<dtype>"] if ops else [])
    for device in devices_for(instantiation, decorators):
        dev_cls = f"{cls}{device.upper()}"
        if dtypes:
            out += [f"{dev_cls}.{base}_{device}_{dt}" for dt in dtypes]
        else:
            out.append(f"{dev_cls}.{base}_{device}")
    return out


def run_command(path: str, cls: str, name: str, decorators: list[str], instantiation: str | None) -> str:
    """The command that runs one test: its pytest node id (``pytest test/test_nn.py::TestNN::test_relu``) when no
    generator renames it, else ``-k`` with the names as written, which selects every name the generators make of it
    (``pytest test/test_foreach.py -k "TestForeach and test_parity"``: a substring, so other tests may match too)."""
    plain = f"{cls}.{name}" if cls else name
    if instantiation is None and generated_names(cls, name, decorators, None) == [plain]:
        return f"pytest {path}::{cls}::{name}" if cls else f"pytest {path}::{name}"
    if path.startswith("test/"):
        sel = f"{cls} and {name}" if cls else name
        return f'pytest {path} -k "{sel}"'
    return f"python -m pytest {path} -k {name}"
