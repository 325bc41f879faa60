"""Two DispatchStubs of one name in two namespaces (PyTorch's ``at::native::copy_stub`` of Copy.h and
``at::native::cpublas::copy_stub`` of CPUBlas.h, registered as ``cpublas::copy_stub``): a call of the bare name is the
stub its registrations write bare, declared where no qualified spelling claims it, never the first declaration of the
name in file order (CPUBlas.h sorts before Copy.h)."""

from __future__ import annotations

from contextlib import closing

import pytest

from torchtalk.graph.stubs import stub_declared, stub_qualnames
from torchtalk.tools import get_tool, run

from ..conftest import line_of, overlay_index

FILES = {
    "aten/src/ATen/native/CPUBlas.h": """#pragma once
namespace at::native::cpublas {
using copy_fn = void (*)(int64_t n, const void* x, void* y);
DECLARE_DISPATCH(copy_fn, copy_stub);
}  // namespace at::native::cpublas
""",
    "aten/src/ATen/native/Copy.h": """#pragma once
namespace at {
namespace native {
using copy_fn = void (*)(TensorIterator&, bool non_blocking);
DECLARE_DISPATCH(copy_fn, copy_stub);
using scale_fn = void (*)(TensorIterator&);
DECLARE_DISPATCH(scale_fn, scale_stub);
}  // namespace native
}  // namespace at
""",
    "aten/src/ATen/native/Copy.cpp": """#include <ATen/native/Copy.h>
namespace at::native {
DEFINE_DISPATCH(copy_stub);
void copy_impl(TensorIterator& iter, bool non_blocking) {
  copy_stub(iter.device_type(), iter, non_blocking);
}
}  // namespace at::native
""",
    "aten/src/ATen/native/cpu/CopyKernel.cpp": """namespace at::native {
namespace {
void copy_kernel(TensorIterator& iter, bool non_blocking) {}
}  // namespace
REGISTER_DISPATCH(copy_stub, &copy_kernel);
}  // namespace at::native
""",
    "aten/src/ATen/native/cpu/ScaleKernel.cpp": """namespace at::native {
namespace {
template <bool relu>
void scale_kernel(TensorIterator& iter) {}
}  // namespace
REGISTER_DISPATCH(scale_stub, &scale_kernel<false>);
}  // namespace at::native
""",
    "aten/src/ATen/native/cuda/Copy.cu": """namespace at::native {
void copy_kernel(TensorIterator& iter, bool non_blocking) {}
REGISTER_DISPATCH(native::copy_stub, &copy_kernel);
}  // namespace at::native
""",
    "aten/src/ATen/native/cpu/BlasKernel.cpp": """namespace at::native {
namespace cpublas {
namespace {
void cpublas_copy_impl(int64_t n, const void* x, void* y) {}
}  // namespace
}  // namespace cpublas
REGISTER_DISPATCH(cpublas::copy_stub, &cpublas::cpublas_copy_impl);
}  // namespace at::native
""",
}


@pytest.fixture
def stubs(tree, tmp_path):
    overlay = tmp_path / "overlay"
    (overlay / "aten").mkdir(parents=True)
    for rel, text in FILES.items():
        (tree / rel).parent.mkdir(parents=True, exist_ok=True)
        (tree / rel).write_text(text)
    with closing(overlay_index(tree, overlay, {})) as ix:
        yield tree, ix


def test_a_bare_stub_name_is_declared_where_no_qualified_spelling_claims_it(stubs):
    tree, ix = stubs
    copy_h = line_of(tree, "aten/src/ATen/native/Copy.h", "DECLARE_DISPATCH(copy_fn, copy_stub);")
    blas_h = line_of(tree, "aten/src/ATen/native/CPUBlas.h", "DECLARE_DISPATCH(copy_fn, copy_stub);")
    assert str(stub_declared(ix, "copy_stub")) == f"aten/src/ATen/native/Copy.h:{copy_h}"
    assert str(stub_declared(ix, "cpublas::copy_stub")) == f"aten/src/ATen/native/CPUBlas.h:{blas_h}"
    assert stub_qualnames(ix, "copy_stub") == ["at::native::copy_stub"]
    _res, text = run(get_tool("called_by"), ix, function_name="copy_stub")
    assert "copy_kernel" in text and "cpublas_copy_impl" not in text, text
    assert f"aten/src/ATen/native/Copy.h:{copy_h}" in text and "CPUBlas.h" not in text, text


def test_a_template_kernel_registered_as_an_instance_is_its_template(stubs):
    # QuantizedOpKernels.cpp: REGISTER_DISPATCH(qbatch_norm_stub, &q_batch_norm_kernel<false>)
    tree, ix = stubs
    _res, text = run(get_tool("called_by"), ix, function_name="scale_stub")
    line = line_of(tree, "aten/src/ATen/native/cpu/ScaleKernel.cpp", "void scale_kernel(TensorIterator& iter) {}")
    kernel = f"- CPU: at::native::(anonymous)::scale_kernel  aten/src/ATen/native/cpu/ScaleKernel.cpp:{line}  ["
    assert kernel in text, text


def test_a_registration_names_its_own_files_kernel_not_a_same_named_one_elsewhere(stubs):
    # cpu/IndexKernel.cpp's REGISTER_DISPATCH(put_stub, &put_kernel) names its file-local put_kernel; called_by of
    # cuda/IndexKernel.cu's put_kernel (external linkage) listed that CPU registration too
    tree, ix = stubs
    _res, text = run(get_tool("called_by"), ix, function_name="aten/src/ATen/native/cuda/Copy.cu:2")
    assert "for CUDA" in text and "cpu/CopyKernel.cpp" not in text, text
    _res, text = run(get_tool("called_by"), ix, function_name="aten/src/ATen/native/cpu/CopyKernel.cpp:3")
    assert "for CPU" in text and "cuda/Copy.cu" not in text, text
