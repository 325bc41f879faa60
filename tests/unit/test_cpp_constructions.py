"""A variable declared with constructor arguments in a function body is a construction of its type (Note
[Constructions written as declarations] in extract/cpp_calls.py): ``CUDAGuard guard(device_index_);`` calls the
constructor the arguments choose, as ``new CUDAGuard(device_index_)`` does."""

from __future__ import annotations

from torchtalk.model import CallKind
from torchtalk.tools import get_tool, run

from ..conftest import indexed_with

_GUARD_H = """namespace c10 {
namespace cuda {
struct Device {
  int index;
};
class CUDAGuard {
 public:
  explicit CUDAGuard(int device_index);
  explicit CUDAGuard(Device device);
};
class OptionalCUDAGuard {
 public:
  OptionalCUDAGuard();
  explicit OptionalCUDAGuard(int device_index);
};
}  // namespace cuda
}  // namespace c10
namespace at {
namespace cuda {
using c10::cuda::CUDAGuard;
}  // namespace cuda
}  // namespace at
"""

_GUARD_CPP = """#include <c10/cuda/Guard.h>
namespace c10 {
namespace cuda {
CUDAGuard::CUDAGuard(int device_index) {}
CUDAGuard::CUDAGuard(Device device) {}
OptionalCUDAGuard::OptionalCUDAGuard() {}
OptionalCUDAGuard::OptionalCUDAGuard(int device_index) {}
}  // namespace cuda
}  // namespace c10
"""

_USER = """#include <c10/cuda/Guard.h>
namespace at {
namespace native {
void sync(int device_index_, c10::cuda::Device dev) {
  c10::cuda::CUDAGuard guard(device_index_);
  at::cuda::CUDAGuard by_device(dev);
  c10::cuda::OptionalCUDAGuard braced{device_index_};
  c10::cuda::CUDAGuard made(make_index(dev));
  std::lock_guard<std::mutex> lock(m);
  int plain(5);
  c10::cuda::CUDAGuard* none(nullptr);
}
int make_index(c10::cuda::Device d);
}  // namespace native
}  // namespace at
"""


def _callers(ix, where: str) -> list[tuple[str, int]]:
    res, text = run(get_tool("called_by"), ix, function_name=where)
    return sorted((e.src.label, e.site.line) for sec in res.sections for e in sec.callers)


def test_a_declaration_with_arguments_constructs_its_type(tree):
    """called_by of CUDAGuard's constructors found 1 of about 55 callers on 2.6.0: the `new` one."""
    with indexed_with(tree, {"c10/cuda/Guard.h": _GUARD_H, "c10/cuda/Guard.cpp": _GUARD_CPP,
                             "aten/src/ATen/native/cuda/Sync.cpp": _USER}) as ix:
        sites = ix.q("SELECT c.callee, c.qualifier, c.line, c.nargs FROM cpp_call c JOIN files f ON f.id = c.file_id "
                     "WHERE c.kind = ? AND f.path LIKE ?", (CallKind.CONSTRUCT.value, "%/Sync.cpp"))
        assert sorted(map(tuple, sites)) == [("CUDAGuard", "at::cuda", 6, 1), ("CUDAGuard", "c10::cuda", 5, 1),
                                 ("CUDAGuard", "c10::cuda", 8, 1), ("OptionalCUDAGuard", "c10::cuda", 7, 1),
                                 ("lock_guard", "std", 9, 1)]
        # CUDAGuard(int), CUDAGuard(Device) by the alias; the argument of :8 is untyped: both are candidates
        assert _callers(ix, "c10/cuda/Guard.cpp:4") == [("at::native::sync", 5), ("at::native::sync", 8)]
        assert _callers(ix, "c10/cuda/Guard.cpp:5") == [("at::native::sync", 6), ("at::native::sync", 8)]
        assert _callers(ix, "c10/cuda/Guard.cpp:7") == [("at::native::sync", 7)]  # OptionalCUDAGuard(int)
        assert _callers(ix, "c10/cuda/Guard.cpp:6") == []  # OptionalCUDAGuard()
        res, _ = run(get_tool("calls"), ix, function_name="at::native::sync")
        assert ("at::native::make_index", 8) in [(e.dst.label, e.site.line) for e in res.sections[0].calls]


_ITER_H = """namespace at {
class TensorIteratorBase {};
class TensorIterator final : public TensorIteratorBase {
 public:
  TensorIterator();
  TensorIterator(const TensorIteratorBase& iter);
  TensorIterator(int a, int b);
};
}  // namespace at
"""

_ITER_CPP = """#include <ATen/Iter.h>
namespace at {
TensorIterator::TensorIterator() {}
TensorIterator::TensorIterator(const TensorIteratorBase& iter) {}
TensorIterator::TensorIterator(int a, int b) {}
void split(const TensorIteratorBase& iter, int n) {
  auto copied = new TensorIterator(iter);
  auto fresh = new TensorIterator;
  auto many = new TensorIterator[n];
  auto unique = std::make_unique<TensorIterator>(n, n);
  auto intrusive = c10::make_intrusive<at::TensorIterator>();
  auto shared = std::make_shared<std::vector<int>>(n);
  auto ints = std::make_unique<int[]>(n);
}
template <typename T>
void made(int n) {
  auto p = std::make_unique<T>(n);
}
}  // namespace at
"""


def test_new_and_the_factories_construct_with_their_arguments_counted(tree):
    """``new TensorIterator(iter)`` (a copy) was a caller of every TensorIterator constructor, the default one among
    them: a new-expression recorded no argument count (Note [Argument counts]). And ``std::make_unique<T>(args)``
    ran no constructor at all (Note [Factories construct] in model/cpp.py)."""
    with indexed_with(tree, {"aten/src/ATen/Iter.h": _ITER_H, "aten/src/ATen/Iter.cpp": _ITER_CPP}) as ix:
        sites = ix.q("SELECT c.callee, c.qualifier, c.line, c.nargs FROM cpp_call c JOIN files f ON f.id = c.file_id "
                     "WHERE c.kind = ? AND f.path LIKE ?", (CallKind.CONSTRUCT.value, "%/Iter.cpp"))
        # no site for a standard library type, a builtin array or a template's parameter
        assert sorted(map(tuple, sites)) == [("TensorIterator", "", 7, 1), ("TensorIterator", "", 8, 0),
                                             ("TensorIterator", "", 9, 0), ("TensorIterator", "", 10, 2),
                                             ("TensorIterator", "at", 11, 0)]
        assert _callers(ix, "aten/src/ATen/Iter.cpp:3") == [("at::split", 8), ("at::split", 9), ("at::split", 11)]
        assert _callers(ix, "aten/src/ATen/Iter.cpp:4") == [("at::split", 7)]
        assert _callers(ix, "aten/src/ATen/Iter.cpp:5") == [("at::split", 10)]
