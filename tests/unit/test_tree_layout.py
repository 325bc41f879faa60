"""model/paths.py and model/dispatch.py: where PyTorch keeps a backend's code, and which device a key runs on.

The expectations are PyTorch's layout: what its build compiles for a backend, and what its tests call
the device (instantiate_device_type_tests).
"""

from __future__ import annotations

import pytest

from torchtalk.model import Layer
from torchtalk.model.change import FileKind, Language
from torchtalk.model.dispatch import DEVICE_OF_BACKEND, Device, DispatchKey, backend_of, device_of_key
from torchtalk.model.paths import NATIVE_FUNCTIONS, backend_of_path, device_of_path, file_kind


@pytest.mark.parametrize(("path", "backend"), [
    ("aten/src/ATen/native/cuda/SoftMax.cu", "CUDA"),
    ("aten/src/ATen/native/cudnn/Conv_v7.cpp", "CUDA"),
    # native/miopen/ is CUDA's: miopen_* ops dispatch under CUDA: and register with REGISTER_CUDA_DISPATCH.
    ("aten/src/ATen/native/miopen/Conv_miopen.cpp", "CUDA"),
    ("aten/src/ATen/native/mps/operations/Activation.mm", "MPS"),
    ("aten/src/ATen/native/mps/kernels/Gamma.metal", "MPS"),
    ("aten/src/ATen/native/transformers/hip/flash_attn/flash_api.hip", "HIP"),
    ("aten/src/ATen/native/mkldnn/xpu/Conv.cpp", "XPU"),  # xpu before mkldnn's CPU
    ("aten/src/ATen/native/mkldnn/Conv.cpp", "CPU"),
    ("aten/src/ATen/native/cpu/SoftMaxKernel.cpp", "CPU"),
    ("aten/src/ATen/native/SoftMax.cpp", ""),  # any backend, as far as the path says
])
def test_backend_of_path(path, backend):
    assert backend_of_path(path) == backend
    assert device_of_path(path) == (DEVICE_OF_BACKEND[backend] if backend else None)


def test_device_of_key_is_derived_from_the_keys():
    # The nine keys query/changes.py once listed by hand, and what derivation adds.
    assert {k: device_of_key(k) for k in ("CPU", "CUDA", "MPS", "QuantizedCPU", "QuantizedCUDA", "SparseCPU",
                                          "SparseCUDA", "NestedTensorCPU", "NestedTensorCUDA")} == {
        "CPU": "cpu", "CUDA": "cuda", "MPS": "mps", "QuantizedCPU": "cpu", "QuantizedCUDA": "cuda",
        "SparseCPU": "cpu", "SparseCUDA": "cuda", "NestedTensorCPU": "cpu", "NestedTensorCUDA": "cuda"}
    assert device_of_key("SparseCsrCUDA") is Device.CUDA and device_of_key("AutogradCPU") is Device.CPU
    assert device_of_key("XPU") is Device.XPU and device_of_key("HIP") is Device.CUDA  # ROCm's device is "cuda"
    for key in ("CompositeImplicitAutograd", "Meta", "SparseMeta", "MkldnnCPU", "Autograd", "PrivateUse1"):
        assert device_of_key(key) is None, key
    # Every per-backend key of the enum splits into a functionality and a backend component.
    assert backend_of(DispatchKey.QuantizedMPS) == "MPS" and backend_of("Dense") == ""


@pytest.mark.parametrize(("path", "layer", "kind"), [
    (NATIVE_FUNCTIONS, Layer.OPS, FileKind.NATIVE_FUNCTIONS),
    ("tools/autograd/derivatives.yaml", Layer.OPS, FileKind.DERIVATIVES),
    ("tools/autograd/gen_variable_type.py", None, FileKind.CODEGEN),
    ("aten/src/ATen/templates/RegisterDispatchKey.cpp", Layer.CPP, FileKind.CODEGEN),
    ("torch/testing/_internal/opinfo/definitions/linalg.py", Layer.PYTHON, FileKind.OPINFO),
    ("torch/nn/functional.py", Layer.PYTHON, FileKind.PYTHON),
    ("test/test_ops.py", Layer.TESTS, FileKind.TEST),
    ("<generated>/aten/src/ATen/RegisterCPU.cpp", Layer.GENERATED, FileKind.CPP),
    ("third_party/fmt/src/format.cc", None, FileKind.CPP),  # not indexed: told by its name
    ("CMakeLists.txt", None, FileKind.OTHER),
])
def test_file_kind(path, layer, kind):
    assert file_kind(path, layer) is kind


def test_language_follows_the_kind():
    assert FileKind.CPP.language is Language.CPP
    assert {k.language for k in (FileKind.PYTHON, FileKind.OPINFO, FileKind.TEST)} == {Language.PYTHON}
    assert FileKind.NATIVE_FUNCTIONS.language is None and FileKind.OTHER.language is None
