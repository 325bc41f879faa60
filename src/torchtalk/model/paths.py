"""Where PyTorch keeps what TorchTalk reads, written once: the tree's fixed files, which backend a path's
code is for, and what a changed file is.

Paths are relative to the tree's root, with ``/`` separators, as the index stores them.
"""

from __future__ import annotations

from .change import FileKind, Language
from .dispatch import DEVICE_OF_BACKEND, Device
from .kinds import Layer

NATIVE_FUNCTIONS = "aten/src/ATen/native/native_functions.yaml"  # the op registry; marks a PyTorch tree
TAGS = "aten/src/ATen/native/tags.yaml"
DERIVATIVES = "tools/autograd/derivatives.yaml"
OPS_FILES = (NATIVE_FUNCTIONS, TAGS, DERIVATIVES)  # the ops layer (Layer.OPS)
ATEN_TEMPLATES = "aten/src/ATen/templates/"  # torchgen's templates: their code is generated code's
AUTOGRAD_TOOLS = "tools/autograd/"  # the autograd generators, their templates and derivatives.yaml
GENERATOR_DIRS = ("torchgen/", AUTOGRAD_TOOLS, "tools/jit/", ATEN_TEMPLATES)
TORCHGEN_AUTOGRAD = "torchgen/api/autograd.py"  # match_differentiability_info: which derivatives.yaml entry an op uses
TORCHGEN_MAIN = "torchgen/gen.py"  # the ATen generator (source/codegen/driver.py, a stdlib-only child, spells it too)
AUTOGRAD_MAIN = "tools/setup_helpers/generate_code.py"  # the autograd generators' entry point
TESTING_INTERNAL = "torch/testing/_internal/"
OPINFO_FILES = (TESTING_INTERNAL + "common_methods_invocations.py", TESTING_INTERNAL + "opinfo/")
MODULE_DB = TESTING_INTERNAL + "common_modules.py"  # ModuleInfo entries
OPTIM_DB = TESTING_INTERNAL + "common_optimizers.py"  # OptimizerInfo entries
CPP_FRONTEND = "torch/csrc/api/"  # libtorch's C++ API (torch::nn, torch::optim): what C++ programs call, not Python
SOURCE_ROOTS = ("aten/", "c10/", "torch/", "functorch/", "caffe2/", "third_party/")  # a path under one is the tree's
CPP_EXTENSIONS = (".cpp", ".cc", ".cu", ".cuh", ".h", ".hpp", ".mm", ".m", ".metal", ".c")


# Note [Backend of a path]: PyTorch keeps a backend's code in directories (and file types) named after it;
# a plain REGISTER_DISPATCH registers for the backend its file is compiled for. The MIOpen (ROCm) kernels
# under native/miopen/ are CUDA's: native_functions.yaml dispatches the miopen_* ops under ``CUDA:`` and
# their files register with REGISTER_CUDA_DISPATCH (2.6.0 and 1.13.1), since ROCm builds hipify CUDA code.

def backend_of_path(path: str) -> str:
    """The backend (a ``model.dispatch`` backend component) a file's code is for, from where it is; ""
    when the path does not say (a plain REGISTER_DISPATCH there registers for CPU)."""
    p = path.replace("\\", "/").lower()
    if p.endswith((".cu", ".cuh")) or "/cuda/" in p or "/cudnn/" in p or "/miopen/" in p:
        return "CUDA"
    if p.endswith((".mm", ".metal")) or "/mps/" in p:
        return "MPS"
    if rocm_only_path(p):
        return "HIP"
    if "/xpu/" in p:
        return "XPU"
    if "/native/cpu/" in p or "/mkldnn/" in p:
        return "CPU"
    return ""


def rocm_only_path(path: str) -> bool:
    """Code only a ROCm build compiles: a ``hip/`` directory's (aten/src/ATen/hip/impl/, transformers/hip/), never
    what CUDA or CPU code calls (Note [ROCm-only code] in graph/pp_branches.py)."""
    return "/hip/" in path


def device_of_path(path: str) -> Device | None:
    """The one device a file's code runs on (None: any, as far as its path says)."""
    return DEVICE_OF_BACKEND.get(backend_of_path(path))


def is_codegen(path: str) -> bool:
    """A code generator, one of its templates, or data only generators read (derivatives.yaml is per-op data,
    mapped op by op instead)."""
    if path == DERIVATIVES or not path.startswith(GENERATOR_DIRS):
        return False
    return "/templates/" in path or path.endswith((".py", ".yaml"))


def language_of(path: str) -> Language | None:
    """The language of a file's definitions, from its name."""
    if path.endswith(".py"):
        return Language.PYTHON
    return Language.CPP if path.endswith(CPP_EXTENSIONS) else None


def file_kind(path: str, layer: Layer | None) -> FileKind:
    """What a changed file is. ``layer`` is the index's layer for it (None: not indexed), which decides for
    indexed files; others are told by their name."""
    if is_codegen(path):
        return FileKind.CODEGEN
    if path == NATIVE_FUNCTIONS:
        return FileKind.NATIVE_FUNCTIONS
    if path == DERIVATIVES:
        return FileKind.DERIVATIVES
    if path == TAGS:
        return FileKind.TAGS
    if path.startswith(OPINFO_FILES):
        return FileKind.OPINFO
    if layer is None:
        lang = language_of(path)
        return FileKind.OTHER if lang is None else FileKind.CPP if lang is Language.CPP else FileKind.PYTHON
    return _KIND_OF_LAYER.get(layer, FileKind.OTHER)


_KIND_OF_LAYER = {Layer.CPP: FileKind.CPP, Layer.GENERATED: FileKind.CPP, Layer.PYTHON: FileKind.PYTHON,
                  Layer.TESTS: FileKind.TEST}
