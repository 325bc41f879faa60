"""Where PyTorch's code generators put their output, and which generator and template wrote each file.

Pure data and pure functions (no I/O, nothing of torchtalk beyond model/ imported): the
directories of a build's generated tree, and ``template_for``, which names the
generator module and template behind a generated file so an answer can say
"written by tools/autograd/gen_python_functions.py from
tools/autograd/templates/python_torch_functions.cpp".  The tables are read off the
``write``/``write_with_template``/``write_sharded`` calls in torchgen/gen.py and
tools/autograd/gen_*.py (2.6.0; 1.13.1 writes a subset of the same names).
"""

from __future__ import annotations

import re

from .paths import ATEN_TEMPLATES, TORCHGEN_MAIN

__all__ = ["AOTI_DIR", "ATEN_DIR", "AUTOGRAD_DIR", "template_for"]

#: Where each generator's output goes, relative to the output root (as in a build).
ATEN_DIR = "aten/src/ATen"
AUTOGRAD_DIR = "torch/csrc/autograd/generated"
AOTI_DIR = "torch/csrc/inductor/aoti_torch/generated"

_TG = TORCHGEN_MAIN
_ATEN_T = ATEN_TEMPLATES
_AG_T = "tools/autograd/templates/"

# Generated basenames (shard suffix removed) -> (generator, template basename), for
# torchgen outputs whose template is not simply the same name.
_ATEN_SPECIAL: dict[str, tuple[str, str]] = {
    "Register{Key}.cpp": (_TG, "RegisterDispatchKey.cpp"),
    "{Key}Functions.h": (_TG, "DispatchKeyFunctions.h"),
    "{Key}Functions_inl.h": (_TG, "DispatchKeyFunctions_inl.h"),
}
# Files torchgen writes with fm.write(name) (template = same name), from gen.py.
_ATEN_SAME = frozenset({
    "ATenOpList.cpp", "CompositeViewCopyKernels.cpp", "FunctionalInverses.h",
    "Functions.cpp", "Functions.h", "MethodOperators.h", "NativeFunctions.h",
    "NativeMetaFunctions.h", "Operators.cpp", "Operators.h", "RedispatchFunctions.cpp",
    "RedispatchFunctions.h", "RegisterBackendSelect.cpp", "RegisterFunctionalization.cpp",
    "RegisterSchema.cpp", "RegistrationDeclarations.h", "TensorBody.h", "TensorMethods.cpp",
    "aten_interned_strings.h", "enum_tag.h", "VmapGeneratedPlumbing.h",
})
# Rendered in code, without a template file.
_ATEN_NO_TEMPLATE = frozenset({"VmapGeneratedPlumbing.h", "Declarations.yaml"})

# autograd generated basename (shard suffix removed) -> generator module.
_AG_GEN: dict[str, str] = {
    "python_torch_functions.cpp": "gen_python_functions.py",
    "python_variable_methods.cpp": "gen_python_functions.py",
    "python_nn_functions.cpp": "gen_python_functions.py",
    "python_fft_functions.cpp": "gen_python_functions.py",
    "python_linalg_functions.cpp": "gen_python_functions.py",
    "python_special_functions.cpp": "gen_python_functions.py",
    "python_sparse_functions.cpp": "gen_python_functions.py",
    "python_nested_functions.cpp": "gen_python_functions.py",
    "python_return_types.cpp": "gen_python_functions.py",
    "python_return_types.h": "gen_python_functions.py",
    "python_enum_tag.cpp": "gen_python_functions.py",
    "python_functions.cpp": "gen_autograd_functions.py",
    "python_functions.h": "gen_autograd_functions.py",
    "Functions.cpp": "gen_autograd_functions.py",
    "Functions.h": "gen_autograd_functions.py",
    "VariableType.cpp": "gen_variable_type.py",
    "VariableType.h": "gen_variable_type.py",
    "ADInplaceOrViewType.cpp": "gen_inplace_or_view_type.py",
    "TraceType.cpp": "gen_trace_type.py",
    "variable_factories.h": "gen_variable_factories.py",
    "ViewFuncs.cpp": "gen_view_funcs.py",
    "ViewFuncs.h": "gen_view_funcs.py",
}

# Per-operator headers (--per-operator-headers): ops/<op><suffix> -> template.
_OPS_SUFFIX_TEMPLATES: tuple[tuple[str, str], ...] = (
    ("_ops.h", "Operator.h"),
    ("_native.h", "NativeFunction.h"),
    ("_meta.h", "NativeMetaFunction.h"),
    ("_dispatch.h", "DispatchKeyFunction.h"),
)

_DISPATCH_KEY_NAMES: tuple[str, ...] = (
    # longest first so "CompositeExplicitAutogradNonFunctional" wins over its prefix
    "CompositeExplicitAutogradNonFunctional", "CompositeImplicitAutogradNestedTensor",
    "CompositeExplicitAutograd", "CompositeImplicitAutograd", "NestedTensorCPU",
    "NestedTensorCUDA", "NestedTensorXPU", "NestedTensorMeta", "SparseCsrCPU",
    "SparseCsrCUDA", "SparseCsrMeta", "QuantizedCPU", "QuantizedCUDA", "QuantizedMeta",
    "SparseCPU", "SparseCUDA", "SparseXPU", "SparseMeta", "MkldnnCPU", "ZeroTensor",
    "CPU", "CUDA", "HIP", "MPS", "XPU", "Meta", "Lazy", "XLA",
)

_NOT_FOUND = ("", "")


def _unshard(name: str) -> str:
    """'Operators_3.cpp' / 'OperatorsEverything.cpp' -> 'Operators.cpp'."""
    stem, dot, ext = name.rpartition(".")
    if not dot:
        stem, ext = name, ""
    m = re.fullmatch(r"(.+?)(?:_\d+|Everything)", stem)
    if m:
        stem = m.group(1)
    return f"{stem}.{ext}" if ext else stem


def template_for(gen_relpath: str) -> tuple[str, str]:
    """(generator, template relpath in the tree) for a generated file; ("", "") if unknown.

    Accepts a path relative to the output root (``aten/src/ATen/RegisterCPU.cpp``,
    ``torch/csrc/autograd/generated/python_torch_functions_2.cpp``, optionally under
    ``build/``) or a bare torchgen basename (``RegisterCPU.cpp``).  The template is ""
    when the generator renders the file without one (the AOTI C shims,
    VmapGeneratedPlumbing.h).
    """
    p = gen_relpath.replace("\\", "/").lstrip("/")
    p = p.removeprefix("build/")
    name = p.rsplit("/", 1)[-1]

    if p.startswith((AUTOGRAD_DIR + "/", "autograd/generated/")):
        return _autograd_template(p.split("/generated/", 1)[1])
    if p.startswith("torch/testing/_internal/generated/"):
        if name == "annotated_fn_args.py":
            return ("tools/autograd/gen_annotated_fn_args.py", _AG_T + "annotated_fn_args.py.in")
        return _NOT_FOUND
    if p.startswith(AOTI_DIR + "/"):
        return ("torchgen/gen_aoti_c_shim.py", "") if name.startswith("c_shim_") else _NOT_FOUND
    if p.startswith(ATEN_DIR + "/"):
        p = p[len(ATEN_DIR) + 1:]
    elif "/" in p and not p.startswith(("core/", "ops/")):
        return _NOT_FOUND

    if p.startswith("ops/"):
        for suffix, tmpl in _OPS_SUFFIX_TEMPLATES:
            if name.endswith(suffix):
                return (_TG, _ATEN_T + tmpl)
        return (_TG, _ATEN_T + "Function.h") if name.endswith(".h") else _NOT_FOUND
    if p.startswith("core/"):
        return (_TG, _ATEN_T + name) if name in _ATEN_SAME else _NOT_FOUND
    if "/" in p:
        return _NOT_FOUND
    return _aten_template(name)


def _autograd_template(sub: str) -> tuple[str, str]:
    """A file under torch/csrc/autograd/generated/ (``sub`` is the part after it)."""
    # gen_variable_type writes an intermediate template under templates/
    base = _unshard(sub.removeprefix("templates/"))
    gen = _AG_GEN.get(base)
    if gen is None:
        return _NOT_FOUND
    return (f"tools/autograd/{gen}", _AG_T + base)


def _aten_template(name: str) -> tuple[str, str]:
    """A file directly under aten/src/ATen/ (torchgen's install dir)."""
    if name.startswith("UfuncCPUKernel_") and name.endswith(".cpp"):
        return (_TG, _ATEN_T + "UfuncCPUKernel.cpp")
    if name.startswith("UfuncCPU_") and name.endswith(".cpp"):
        return (_TG, _ATEN_T + "UfuncCPU.cpp")
    if name.startswith("UfuncCUDA_") and name.endswith(".cu"):
        return (_TG, _ATEN_T + "UfuncCUDA.cu")
    base = _unshard(name)
    if base in _ATEN_NO_TEMPLATE:
        return (_TG, "")
    if base in _ATEN_SAME:
        return (_TG, _ATEN_T + base)
    if base.startswith("Register") and base.endswith(".cpp"):
        if base[len("Register"):-len(".cpp")] in _DISPATCH_KEY_NAMES:
            gen, tmpl = _ATEN_SPECIAL["Register{Key}.cpp"]
            return (gen, _ATEN_T + tmpl)
        return _NOT_FOUND
    for suffix, pattern in (("Functions_inl.h", "{Key}Functions_inl.h"), ("Functions.h", "{Key}Functions.h")):
        if base.endswith(suffix) and base[: -len(suffix)] in _DISPATCH_KEY_NAMES:
            gen, tmpl = _ATEN_SPECIAL[pattern]
            return (gen, _ATEN_T + tmpl)
    return _NOT_FOUND
