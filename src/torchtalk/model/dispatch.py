"""Dispatch keys as native_functions.yaml and the DispatchStub macros write them.

Mirrors ``torchgen.model.DispatchKey`` (the per-backend keys are the product of
functionalities and backend components, as torchgen generates them). A key that
is not here is an error with the valid keys named, as in torchgen: the extractor
records it against the YAML line and keeps the rest of the file.
"""

from __future__ import annotations

import difflib
from enum import IntEnum

from .kinds import StrEnum

BACKEND_COMPONENTS = ("CPU", "CUDA", "HIP", "XLA", "MTIA", "MPS", "IPU", "XPU", "HPU", "VE", "Lazy", "Meta",
                      "PrivateUse1", "PrivateUse2", "PrivateUse3")
FUNCTIONALITIES = ("", "Quantized", "Sparse", "SparseCsr", "NestedTensor", "Autograd")


class DispatchKey(StrEnum):
    """A dispatch key, spelled as in native_functions.yaml (CPU, QuantizedCUDA, CompositeImplicitAutograd).

    The keys are torchgen's (2.6.0 and 1.13.1), plus ``Default`` which derivatives.yaml's
    per-key formulas use. The per-backend keys are FUNCTIONALITIES x BACKEND_COMPONENTS.
    """

    Undefined = "Undefined"
    CatchAll = "CatchAll"
    FPGA = "FPGA"
    MAIA = "MAIA"
    Vulkan = "Vulkan"
    Metal = "Metal"
    MKLDNN = "MKLDNN"
    OpenGL = "OpenGL"
    OpenCL = "OpenCL"
    IDEEP = "IDEEP"
    CustomRNGKeyId = "CustomRNGKeyId"
    MkldnnCPU = "MkldnnCPU"
    Sparse = "Sparse"
    SparseCsr = "SparseCsr"
    NestedTensor = "NestedTensor"
    Dense = "Dense"
    PythonTLSSnapshot = "PythonTLSSnapshot"
    PreDispatch = "PreDispatch"
    PythonDispatcher = "PythonDispatcher"
    Python = "Python"
    FuncTorchDynamicLayerBackMode = "FuncTorchDynamicLayerBackMode"
    ZeroTensor = "ZeroTensor"
    Conjugate = "Conjugate"
    Negative = "Negative"
    BackendSelect = "BackendSelect"
    Named = "Named"
    AutogradOther = "AutogradOther"
    AutogradFunctionality = "AutogradFunctionality"
    AutogradNestedTensor = "AutogradNestedTensor"
    Tracer = "Tracer"
    Autocast = "Autocast"
    AutocastCPU = "AutocastCPU"
    AutocastCUDA = "AutocastCUDA"
    Batched = "Batched"
    VmapMode = "VmapMode"
    FuncTorchGradWrapper = "FuncTorchGradWrapper"
    FuncTorchBatched = "FuncTorchBatched"
    BatchedNestedTensor = "BatchedNestedTensor"
    FuncTorchVmapMode = "FuncTorchVmapMode"
    FuncTorchDynamicLayerFrontMode = "FuncTorchDynamicLayerFrontMode"
    Functionalize = "Functionalize"
    TESTING_ONLY_GenericWrapper = "TESTING_ONLY_GenericWrapper"
    TESTING_ONLY_GenericMode = "TESTING_ONLY_GenericMode"
    ADInplaceOrView = "ADInplaceOrView"
    Autograd = "Autograd"
    CompositeImplicitAutograd = "CompositeImplicitAutograd"
    CompositeImplicitAutogradNestedTensor = "CompositeImplicitAutogradNestedTensor"
    CompositeExplicitAutograd = "CompositeExplicitAutograd"
    CompositeExplicitAutogradNonFunctional = "CompositeExplicitAutogradNonFunctional"
    FuncTorchBatchedDecomposition = "FuncTorchBatchedDecomposition"
    Default = "Default"
    CPU = "CPU"
    CUDA = "CUDA"
    HIP = "HIP"
    XLA = "XLA"
    MTIA = "MTIA"
    MPS = "MPS"
    IPU = "IPU"
    XPU = "XPU"
    HPU = "HPU"
    VE = "VE"
    Lazy = "Lazy"
    Meta = "Meta"
    PrivateUse1 = "PrivateUse1"
    PrivateUse2 = "PrivateUse2"
    PrivateUse3 = "PrivateUse3"
    QuantizedCPU = "QuantizedCPU"
    QuantizedCUDA = "QuantizedCUDA"
    QuantizedHIP = "QuantizedHIP"
    QuantizedXLA = "QuantizedXLA"
    QuantizedMTIA = "QuantizedMTIA"
    QuantizedMPS = "QuantizedMPS"
    QuantizedIPU = "QuantizedIPU"
    QuantizedXPU = "QuantizedXPU"
    QuantizedHPU = "QuantizedHPU"
    QuantizedVE = "QuantizedVE"
    QuantizedLazy = "QuantizedLazy"
    QuantizedMeta = "QuantizedMeta"
    QuantizedPrivateUse1 = "QuantizedPrivateUse1"
    QuantizedPrivateUse2 = "QuantizedPrivateUse2"
    QuantizedPrivateUse3 = "QuantizedPrivateUse3"
    SparseCPU = "SparseCPU"
    SparseCUDA = "SparseCUDA"
    SparseHIP = "SparseHIP"
    SparseXLA = "SparseXLA"
    SparseMTIA = "SparseMTIA"
    SparseMPS = "SparseMPS"
    SparseIPU = "SparseIPU"
    SparseXPU = "SparseXPU"
    SparseHPU = "SparseHPU"
    SparseVE = "SparseVE"
    SparseLazy = "SparseLazy"
    SparseMeta = "SparseMeta"
    SparsePrivateUse1 = "SparsePrivateUse1"
    SparsePrivateUse2 = "SparsePrivateUse2"
    SparsePrivateUse3 = "SparsePrivateUse3"
    SparseCsrCPU = "SparseCsrCPU"
    SparseCsrCUDA = "SparseCsrCUDA"
    SparseCsrHIP = "SparseCsrHIP"
    SparseCsrXLA = "SparseCsrXLA"
    SparseCsrMTIA = "SparseCsrMTIA"
    SparseCsrMPS = "SparseCsrMPS"
    SparseCsrIPU = "SparseCsrIPU"
    SparseCsrXPU = "SparseCsrXPU"
    SparseCsrHPU = "SparseCsrHPU"
    SparseCsrVE = "SparseCsrVE"
    SparseCsrLazy = "SparseCsrLazy"
    SparseCsrMeta = "SparseCsrMeta"
    SparseCsrPrivateUse1 = "SparseCsrPrivateUse1"
    SparseCsrPrivateUse2 = "SparseCsrPrivateUse2"
    SparseCsrPrivateUse3 = "SparseCsrPrivateUse3"
    NestedTensorCPU = "NestedTensorCPU"
    NestedTensorCUDA = "NestedTensorCUDA"
    NestedTensorHIP = "NestedTensorHIP"
    NestedTensorXLA = "NestedTensorXLA"
    NestedTensorMTIA = "NestedTensorMTIA"
    NestedTensorMPS = "NestedTensorMPS"
    NestedTensorIPU = "NestedTensorIPU"
    NestedTensorXPU = "NestedTensorXPU"
    NestedTensorHPU = "NestedTensorHPU"
    NestedTensorVE = "NestedTensorVE"
    NestedTensorLazy = "NestedTensorLazy"
    NestedTensorMeta = "NestedTensorMeta"
    NestedTensorPrivateUse1 = "NestedTensorPrivateUse1"
    NestedTensorPrivateUse2 = "NestedTensorPrivateUse2"
    NestedTensorPrivateUse3 = "NestedTensorPrivateUse3"
    AutogradCPU = "AutogradCPU"
    AutogradCUDA = "AutogradCUDA"
    AutogradHIP = "AutogradHIP"
    AutogradXLA = "AutogradXLA"
    AutogradMTIA = "AutogradMTIA"
    AutogradMPS = "AutogradMPS"
    AutogradIPU = "AutogradIPU"
    AutogradXPU = "AutogradXPU"
    AutogradHPU = "AutogradHPU"
    AutogradVE = "AutogradVE"
    AutogradLazy = "AutogradLazy"
    AutogradMeta = "AutogradMeta"
    AutogradPrivateUse1 = "AutogradPrivateUse1"
    AutogradPrivateUse2 = "AutogradPrivateUse2"
    AutogradPrivateUse3 = "AutogradPrivateUse3"


def parse_key(text: str) -> DispatchKey:
    """The key ``text`` names; ValueError naming the closest valid keys otherwise."""
    try:
        return DispatchKey(text.strip())
    except ValueError:
        lower = {k.value.lower(): k.value for k in DispatchKey}
        close = [lower[c] for c in difflib.get_close_matches(text.strip().lower(), list(lower), n=5)]
        raise ValueError(f"unknown dispatch key {text.strip()!r}" +
                         (f"; did you mean {', '.join(close)}?" if close else "")) from None


# Note [Composite keys]: one kernel registered under a composite key serves every
# backend. Implicit ones are written with other ops, so autograd comes from those
# ops (no derivatives.yaml entry); explicit ones run below autograd, so the op's own
# autograd kernel decides: its derivatives.yaml formula where it has one, else what
# torchgen registers for it (query/no_entry.py: 154 of 2.6.0's 490 such ops that are
# not out= variants have no entry; a backward through 116 of them raises). They
# explain why an op has "no CUDA kernel" yet runs on CUDA.
COMPOSITE_KEYS: dict[str, str] = {
    "CompositeImplicitAutograd": "one kernel for every backend, written with other ops; autograd comes from those "
                                 "ops, so no derivatives.yaml entry is needed",
    "CompositeImplicitAutogradNestedTensor": "CompositeImplicitAutograd for nested tensors",
    "CompositeExplicitAutograd": "one kernel for every backend, run below autograd: the op's own autograd "
                                 "kernel decides (its derivatives.yaml entry, or without one the autograd line "
                                 "above), never the ops the kernel calls; used for all backends unless one has "
                                 "its own",
    "CompositeExplicitAutogradNonFunctional": "like CompositeExplicitAutograd, but the kernel is not functional "
                                              "(it mutates or views), so functionalization cannot use it as a "
                                              "decomposition",
}


# Note [Delegated keys]
# A `structured_delegate: foo.out` op (foo, foo_) has no dispatch table of its own: torchgen writes its kernel for
# each key of foo.out's table that is structured (torchgen/model.py STRUCTURED_DISPATCH_KEYS: CPU, CUDA, MPS, and
# from 2.x XPU; the Meta kernel every structured op gets), and the composite keys. A key of foo.out's own kernel
# that is not structured (QuantizedCPU: ge_out_quantized_cpu, SparseCsrCUDA: ...) is registered for foo.out
# alone (dest/register_dispatch_key.py gen_unstructured): foo_ has no kernel there.
STRUCTURED_KEYS = frozenset({"CPU", "CUDA", "MPS", "XPU", "Meta"})


def delegated(key: str) -> bool:
    """Whether an op delegating to a structured out= op gets the out= op's kernel for ``key`` (Note [Delegated
    keys])."""
    return key in STRUCTURED_KEYS or is_composite(key)


def is_composite(key: str) -> bool:
    return key in COMPOSITE_KEYS


def traced_by_autograd(key: str) -> bool:
    """Whether the ops a kernel registered under ``key`` calls are themselves seen by autograd: only a
    CompositeImplicitAutograd kernel runs above it (its calls get their own derivative formulas); every other
    kernel, CompositeExplicitAutograd included, runs below its op's autograd kernel, so its calls' formulas never
    run (Note [Backward of called ops] in graph/gpu.py)."""
    return key in (DispatchKey.CompositeImplicitAutograd, DispatchKey.CompositeImplicitAutogradNestedTensor)


def runs_on(key: str, backend: str) -> bool:
    """Whether a kernel registered under ``key`` runs for tensors of ``backend`` (CPU, CUDA, ...)."""
    return key == backend or key.endswith(backend) and key[: -len(backend)] in FUNCTIONALITIES or is_composite(key)


class Device(StrEnum):
    """A torch device type PyTorch's tests are generated for (``instantiate_device_type_tests``:
    test_x_cuda, TestFooCUDA): what a change can be narrowed to."""

    CPU = "cpu"
    CUDA = "cuda"
    MPS = "mps"
    XPU = "xpu"


# The device type a backend component's kernels run on. HIP is ROCm's CUDA: PyTorch on ROCm calls the
# device "cuda" and runs the CUDA tests.
DEVICE_OF_BACKEND: dict[str, Device] = {"CPU": Device.CPU, "CUDA": Device.CUDA, "HIP": Device.CUDA,
                                        "MPS": Device.MPS, "XPU": Device.XPU}


def backend_of(key: str) -> str:
    """The backend component of a per-backend key (``QuantizedCUDA`` -> ``CUDA``, ``CPU`` -> ``CPU``); ""
    for keys that are not one backend's (composite, Autograd alone, MkldnnCPU, Meta ...)."""
    for backend in BACKEND_COMPONENTS:
        if key.endswith(backend) and key[: -len(backend)] in FUNCTIONALITIES:
            return backend
    return ""


def device_of_key(key: str) -> Device | None:
    """The one device a kernel registered under ``key`` runs on (None: any, or none of the tests' devices)."""
    return DEVICE_OF_BACKEND.get(backend_of(key))


# Note [Key order]
# ~~~~~~~~~~~~~~~~
# An op's kernels are listed, and kept when an answer is cut, most common first: the tensors most code runs on are
# dense (strided) CPU and CUDA ones, so that path (through structured_delegate or a ufunc) and the DispatchStub
# kernels below it are what a contributor reads and edits first; then the composite kernels that serve every
# backend; then dense tensors on the other devices (MPS, XPU, Meta ...); then the other layouts (sparse, sparse
# compressed, nested), quantized tensors, and the rest (Mkldnn, ZeroTensor, Vulkan, Metal, batching rules ...).
# native_functions.yaml writes the explicit keys in no such order, and a structured_delegate op's dense keys come
# from its out= op's table after its own, so without this order a cut took the dense path's detail first.
class KeyTier(IntEnum):
    """How common the tensors a key's kernel runs for are, most common first (Note [Key order])."""

    DENSE = 0  # CPU and CUDA (HIP: ROCm's CUDA) strided tensors
    COMPOSITE = 1  # one kernel for every backend
    DEVICE = 2  # strided tensors on another backend component (MPS, XPU, Meta, XLA ...)
    LAYOUT = 3  # sparse, sparse compressed and nested tensors
    QUANTIZED = 4
    OTHER = 5  # MkldnnCPU, ZeroTensor, Vulkan, Metal, batching rules, autograd and other wrappers


DENSE_BACKENDS = frozenset({"CPU", "CUDA", "HIP"})
TIER_OF_FUNCTIONALITY = {"": KeyTier.DEVICE, "Sparse": KeyTier.LAYOUT, "SparseCsr": KeyTier.LAYOUT,
                         "NestedTensor": KeyTier.LAYOUT, "Quantized": KeyTier.QUANTIZED, "Autograd": KeyTier.OTHER}


def key_tier(key: str) -> KeyTier:
    """Where a kernel registered under ``key`` comes in an op's kernels (Note [Key order])."""
    if key in DENSE_BACKENDS:
        return KeyTier.DENSE
    if key == DispatchKey.CompositeImplicitAutogradNestedTensor:
        return KeyTier.LAYOUT
    if is_composite(key):
        return KeyTier.COMPOSITE
    backend = backend_of(key)
    return TIER_OF_FUNCTIONALITY[key[: -len(backend)]] if backend else KeyTier.OTHER
