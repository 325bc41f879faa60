"""Run PyTorch's own code generators on a raw source tree, without a build.

A PyTorch build generates C++ that a source tree lacks: the per-backend operator
registrations (``RegisterCPU.cpp`` with ``wrapper_CPU_atan2``), the ``at::_ops``
entry points (``Operators_*.cpp``), the Python bindings
(``python_torch_functions_*.cpp`` with ``THPVariable_atan2``), the autograd kernels
(``VariableType_*.cpp``) and backward nodes (``Functions.h`` with ``Atan2Backward0``).
The generators are plain Python that needs only PyYAML (and typing_extensions), so
this package runs them, from the tree being indexed, into a directory of our own.

* ``driver.py``: the child process that runs the generators under write guards;
* ``spec.py``: what it is asked to run (generators, arguments, skipped outputs);
* ``job.py``: ``start_codegen`` and ``CodegenJob`` (wait, cancel, atomic placement);
* ``inputs.py``: ``codegen_inputs_hash``, which says when an output is stale;
* ``manifest.py``: the results, the manifest, and which generated files to index.

Which generator and template wrote each file is model/codegen.py's ``template_for``.

In the default "restricted" mode the driver skips the outputs TorchTalk does not
index (``spec.RESTRICTED_SKIP``); ``full=True`` runs the generators as a build would
(every output), for comparison or debugging.  Measured on PyTorch 2.6.0 (2 cores,
other load present; CPU = user+sys): restricted 6.6 s CPU / 7.1 s wall, 50 files
(26.7 MB); full 15.4 s CPU, 119 files (75 MB); the two command lines of a build, one
after the other, ~17.5 s CPU.  1.13.1: restricted 6.2 s CPU, full 13.8 s CPU.  Output
is deterministic (``PYTHONHASHSEED=0``: 1.13's generators iterate string sets).

Safety: the driver runs with cwd = the tree and PYTHONPATH = the tree (so ``torchgen``
and ``tools`` import from it), bytecode goes to a cache directory beside ``out_dir``
(``PYTHONPYCACHEPREFIX``), and every file-system write outside the run's temporary
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
                                               (torchgen/dest/ufunc.py: the only CPU/CUDA kernels of
                                               an op with ufunc_inner_loop, add.out's, in 1.13 and 2.x)
      aten/src/ATen/CompositeViewCopyKernels.cpp
      aten/src/ATen/core/...                   (full mode only: TensorBody.h etc.)
      torch/csrc/autograd/generated/...        autograd (a build: torch/csrc/autograd/generated/)
      torch/csrc/inductor/aoti_torch/generated/c_shim_{cpu,cuda}.cpp   (2.x torchgen)
      torch/testing/_internal/generated/annotated_fn_args.py           (full mode only)
"""

from ...model.codegen import AOTI_DIR, ATEN_DIR, AUTOGRAD_DIR
from .inputs import codegen_inputs_hash
from .job import CodegenJob, start_codegen
from .manifest import (
    LOG_NAME,
    MANIFEST_NAME,
    CodegenResult,
    GeneratorResult,
    generated_files_to_index,
    read_manifest,
)
from .spec import DEFAULT_BACKENDS

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
