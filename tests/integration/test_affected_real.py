"""affected on the real PyTorch 2.6.0 tree: one edited line of each kind, as a patch not yet applied.

Each diff is made from the tree's own file with one line changed (the tree itself is
never written), so the tree holds the diff's old side, as for a patch under review.
The expected tests are the ones a PyTorch contributor would run: the op's OpInfo in
test_ops.py (and test_ops_gradients.py for a backward, test_decomp.py for a
decomposition), the op's own tests, ModuleInfo for a module.
"""

from __future__ import annotations

import difflib

import pytest

from torchtalk.tools import answer, get_tool

pytestmark = pytest.mark.integration


def _diff(ix, rel: str, line: int, old: str, new: str) -> str:
    text = (ix.source_root / rel).read_text(encoding="utf-8").split("\n")
    assert old in text[line - 1], f"{rel}:{line} is {text[line - 1]!r} in this tree"
    mod = list(text)
    mod[line - 1] = mod[line - 1].replace(old, new, 1)
    return "".join(x + "\n" for x in difflib.unified_diff(text, mod, f"a/{rel}", f"b/{rel}", lineterm=""))


def _ask(ix, rel, line, old, new, **kw):
    a = answer(get_tool("affected"), ix, diff=_diff(ix, rel, line, old, new), **kw)
    return a.result, a.text, a.next


def _ops(res) -> dict[str, int]:
    return {r.op.key: r.depth for r in res.ops}


def test_cpu_kernel_registered_with_register_dispatch(real_index):
    res, text, nxt = _ask(real_index, "aten/src/ATen/native/cpu/ReduceOpsKernel.cpp", 80,
                          "maybe_wrap_dim(dim, self.dim())", "maybe_wrap_dim(dim, self.dim(), true)")
    assert [c.node.label for c in res.changed] == ["at::native::(anonymous)::cumsum_cpu_kernel"]
    assert _ops(res)["cumsum"] == 1 and _ops(res)["cumsum.out"] == 1
    assert "registered for [CPU] cumsum_stub <- used by TORCH_IMPL_FUNC(cumsum_out)" in res.ops[0].path
    assert res.device == "cpu"
    assert res.tests[0].name == "OpInfo('cumsum')"
    # anchored on the underscores around the name, logcumsumexp's entry is not selected; masked.cumsum's, another
    # OpInfo entry holding "_cumsum_" (not cumsum's Python reference), is ruled out (Note [Exact -k selections])
    assert res.run_first[:2] == ['pytest test/test_ops.py -k "_cumsum_ and not _masked_cumsum_ and cpu"',
                                 'pytest test/test_torch.py -k "TestTorchDeviceType and test_cumsum and cpu"']
    named = next(t for t in res.tests if t.name == "TestTorchDeviceType.test_cumsum")
    assert named.generated == ["TestTorchDeviceTypeCPU.test_cumsum_cpu"]
    assert nxt[0] == 'trace("cumsum")'


def test_cuda_kernel(real_index):
    res, text, _ = _ask(real_index, "aten/src/ATen/native/cuda/BinaryGeometricKernels.cu", 19, "::atan2(a, b)",
                        "::atan2f(a, b)")
    assert res.device == "cuda" and "Only CUDA code changed" in text
    assert {"atan2", "atan2.out", "atan2_", "arctan2"} <= set(_ops(res))
    # the family suite whose @ops(binary_ufuncs) holds atan2's entry (Note [OpInfo lists]): in the same file as the
    # test named after it, and selecting it too
    # (the suite's own tests named after atan2 are ruled out of the entry's selection: they have their own line)
    assert res.run_first[:2] == ['pytest test/test_ops.py -k "_atan2_ and cuda"',
                                 'pytest test/test_binary_ufuncs.py -k "(_atan2_ and not test_atan2 or '
                                 'test_atan2_atan2_ or test_atan2_edgecases_atan2_) and cuda"']
    assert not any("TestMPS" in t.name for t in res.tests)
    named = next(t for t in res.tests if t.name == "TestBinaryUfuncs.test_atan2")
    assert named.generated == ["TestBinaryUfuncsCUDA.test_atan2_cuda"]


def test_structured_kernel(real_index):
    res, _, _ = _ask(real_index, "aten/src/ATen/native/SoftMax.cpp", 340, "not supported on CPU",
                     "not supported on the CPU")
    assert [c.node.label for c in res.changed] == ["TORCH_IMPL_FUNC(softmax_cpu_out)"]
    ops = _ops(res)
    assert ops["_softmax"] == 0 and ops["softmax.int"] == 1
    assert res.device == "cpu"  # softmax_cpu_out is registered for CPU only
    assert res.run_first[0].startswith('pytest test/test_ops.py -k "_softmax_ and not _log_softmax_ and ')
    assert res.run_first[0].endswith(' and cpu"')


def test_native_functions_dispatch_line(real_index):
    res, _, _ = _ask(real_index, "aten/src/ATen/native/native_functions.yaml", 9223, "CUDA: index_select_cuda",
                     "CUDA: index_select_cuda_v2")
    assert [c.node.key for c in res.changed] == ["index_select"]
    assert ("dispatch line 9223 changed (before the change: the tree holds the diff's old side): "
            "CUDA: index_select_cuda") in res.changed[0].why
    assert res.device == "cuda"
    assert res.tests[0].name == "OpInfo('index_select')"
    assert res.tests[0].command == 'pytest test/test_ops.py -k "_index_select_ and cuda"'
    assert _ops(res)["embedding"] == 1  # embedding's composite kernel calls index_select


def test_derivatives_formula(real_index):
    res, _, _ = _ask(real_index, "tools/autograd/derivatives.yaml", 1751, "tanh_backward(grad, result)",
                     "tanh_backward(grad, result.conj())")
    assert [(c.node.key, c.aspect) for c in res.changed] == [("tanh", "backward")]
    tanh = "_tanh_ and not __foreach_tanh_"  # atanh, hardtanh, tanhshrink hold no "_tanh_"
    assert res.run_first[:2] == [f'pytest test/test_ops.py -k "{tanh}"',
                                 f'pytest test/test_ops_gradients.py -k "{tanh}"']
    assert f'pytest test/test_ops_fwd_gradients.py -k "{tanh}"' in res.run_first
    assert "torch.nn.Tanh" in [m.name for m in res.modules]


def test_nn_module_forward(real_index):
    res, _, nxt = _ask(real_index, "torch/nn/modules/linear.py", 125, "F.linear(input, self.weight, self.bias)",
                       "F.linear(input, self.weight, bias=self.bias)")
    assert [c.node.key for c in res.changed] == ["torch.nn.modules.linear.Linear.forward"]
    assert res.modules[0].name == "torch.nn.Linear" and "torch.nn.LazyLinear" in [m.name for m in res.modules]
    assert res.tests[0].name == "ModuleInfo(nn.Linear)"
    assert res.tests[0].command == 'pytest test/test_modules.py -k "nn_Linear_"'
    assert nxt == ['trace_module("torch.nn.Linear")']


def test_decomposition(real_index):
    res, _, _ = _ask(real_index, "torch/_decomp/decompositions.py", 372, "(self - target) ** 2", "(target - self) ** 2")
    ops = {c.node.key: c.aspect for c in res.changed if c.node.kind.value == "op"}
    assert ops == {"mse_loss": "decomposition", "mse_loss.out": "decomposition"}
    assert res.run_first[:3] == ['pytest test/test_ops.py -k "_nn_functional_mse_loss_"',
                                 'pytest test/test_decomp.py -k "_nn_functional_mse_loss_"',
                                 'pytest test/inductor/test_torchinductor_opinfo.py -k "_nn_functional_mse_loss_"']


def test_header_only_helper_used_by_many_kernels_is_bounded(real_index):
    # c10::maybe_wrap_dim(int64_t, int64_t): ATen calls it through `using c10::maybe_wrap_dim;` in
    # WrapDimUtils.h (at::maybe_wrap_dim there is only the TensorImpl* / TensorList overloads).
    res, text, _ = _ask(real_index, "c10/core/WrapDimMinimal.h", 38, "wrap_scalar);", "wrap_scalar) ;",
                        limit=10)
    assert [c.node.label for c in res.changed] == ["c10::maybe_wrap_dim"]
    assert res.ops_total > 50 and len(res.ops) == 30 and len(res.tests) == 10
    assert any("not walked from" in c for c in res.cuts) and any("showing the 30 closest" in c for c in res.cuts)
    assert "Cut (bounded answer):" in text and len(text) < 40_000
