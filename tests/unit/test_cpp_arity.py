"""A C++ call reaches only a function whose parameters can take its argument count (Note [Argument counts] in
graph/signatures.py): defaults, parameter packs and varargs counted, a count a macro or a pack expansion writes
left unknown, and a class's overload set joined with what its ``using Base::f;`` brings in."""

from __future__ import annotations

from torchtalk.graph.signatures import signature
from torchtalk.tools import get_tool, run

from ..conftest import indexed_with

_HASH_MAP = """namespace ska {
template <typename K, typename V>
class table {
 public:
  template <typename... Args>
  int emplace(K&& key, Args&&... args) { return 0; }
};
template <typename K, typename V>
class hash_map : public table<K, V> {
  using Table = table<K, V>;
 public:
  using Table::emplace;
  int emplace() { return emplace(K(), V()); }
};
}  // namespace ska
"""

_USER = """#include <c10/util/hash_map.h>
#include <c10/util/shapes.h>
namespace c10 {
int two_args(ska::hash_map<int, int>& m) {
  return m.emplace(1, 2);
}
int no_args(ska::hash_map<int, int>& m) {
  return m.emplace();
}
int one(int a);
int wrong_count() {
  return one(1, 2);
}
int with_defaults() {
  return defaulted(1) + packed(1) + packed(1, 2, 3) + varargs(1, 2, 3) + gemm(1, 2) + gemm(MY_ARGS(x));
}
int captures(int n) {
  return wrap([pf(n), x{n}](int y) { return y; });
}
template <typename... A>
int forwards(A&&... a) {
  return two(std::forward<A>(a)...);
}
}  // namespace c10
"""

_SHAPES = """#define GEMM_ARGTYPES int a, int b
namespace c10 {
int defaulted(int a, int b = 0);
template <typename... Ts>
int packed(int a, Ts&&... ts) { return a; }
int varargs(int a, ...);
int gemm(GEMM_ARGTYPES);
int two(int a, int b);
template <typename F>
int wrap(F f) { return 0; }
}  // namespace c10
"""

_SHAPES_CPP = """#include <c10/util/shapes.h>
namespace c10 {
int defaulted(int a, int b) { return a + b; }
int varargs(int a, ...) { return a; }
int gemm(int a, int b) { return a; }
int two(int a, int b) { return a; }
}  // namespace c10
"""


def _callers(ix, name: str) -> list[str]:
    res, text = run(get_tool("called_by"), ix, function_name=name)
    return sorted(e.src.label for sec in res.sections for e in sec.callers)


def test_signatures_count_packs_varargs_defaults_and_macro_lists():
    assert signature("(K&& key, Args&&... args)").takes(1)
    assert signature("(K&& key, Args&&... args)").takes(4)
    assert not signature("(K&& key, Args&&... args)").takes(0)
    assert signature("(std::tuple<Args...>&& t)").takes(1)
    assert not signature("(std::tuple<Args...>&& t)").takes(2)
    assert signature("(int a, int b = 0)").takes(1) and not signature("(int a, int b = 0)").takes(3)
    assert signature("(CUDABLAS_GEMM_ARGTYPES(float))").takes(13)
    assert signature("(TORCH_DSA_KERNEL_ARGS)").takes(2)
    assert not signature("()").takes(2)
    assert signature("(int a, void* b #ifdef HAVE_X, void* c #endif)").takes(3)  # #ifdef branches: not known


def test_a_call_reaches_no_function_its_argument_count_does_not_fit(tree):
    """flat_hash_map::emplace() (no parameters) had 29 callers on 2.6.0, each passing arguments: they call the
    emplace(Key&&, Args&&...) its ``using Table::emplace;`` brings in. And a lone candidate of another count is
    no call of it (``one(1, 2)``)."""
    with indexed_with(tree, {"c10/util/hash_map.h": _HASH_MAP, "c10/util/shapes.h": _SHAPES,
                             "c10/util/shapes.cpp": _SHAPES_CPP, "c10/core/user.cpp": _USER}) as ix:
        assert _callers(ix, "ska::hash_map::emplace") == ["c10::no_args"]
        assert _callers(ix, "ska::table::emplace") == ["c10::two_args", "ska::hash_map::emplace"]
        assert _callers(ix, "c10::one") == []
        res, _ = run(get_tool("calls"), ix, function_name="c10::wrong_count")
        assert [e.dst.label for e in res.sections[0].calls] == []


def test_defaults_packs_varargs_and_counts_a_macro_writes_still_fit(tree):
    with indexed_with(tree, {"c10/util/hash_map.h": _HASH_MAP, "c10/util/shapes.h": _SHAPES,
                             "c10/util/shapes.cpp": _SHAPES_CPP, "c10/core/user.cpp": _USER}) as ix:
        res, _ = run(get_tool("calls"), ix, function_name="c10::with_defaults")
        got = [(e.dst.label, e.site.line) for e in res.sections[0].calls]
        assert sorted({label for label, _ in got}) == ["c10::defaulted", "c10::gemm", "c10::packed", "c10::varargs"]
        assert len([label for label, _ in got if label == "c10::packed"]) == 2  # with the pack empty and not
        assert _callers(ix, "c10::two") == ["c10::forwards"]
        assert _callers(ix, "c10::wrap") == ["c10::captures"]  # a list the parser does not read: count unknown


def test_an_ops_kernel_takes_fewer_arguments_only_where_no_overload_takes_them(tree):
    """at::native::copy_(self, src, non_blocking): its declaration with the op's default is generated at build time,
    so ``copy_(self, src)`` in at::native still calls it; ``pin_memory<T>(size)`` calls the template of one
    parameter, not the kernel ``pin_memory(self, device)`` (a Tensor where a Storage is: its .mutable_data() was
    lost)."""
    with indexed_with(tree, {"aten/src/ATen/native/Copying.cpp": (
            "namespace at::native {\nTensor& copy_(Tensor& self, const Tensor& src, bool non_blocking) {\n"
            "  return self;\n}\nint copy_(int64_t n) {\n  return 0;\n}\n"
            "Tensor& copy_twice(Tensor& self, const Tensor& src) {\n  return copy_(self, src);\n}\n"
            "int copy_count() {\n  return copy_(some_count());\n}\n}  // namespace at::native\n")}) as ix:
        res, _ = run(get_tool("calls"), ix, function_name="at::native::copy_twice")
        assert [(e.dst.loc.line, e.how.value) for e in res.sections[0].calls] == [(2, "direct")]
        res, _ = run(get_tool("calls"), ix, function_name="at::native::copy_count")
        assert [(e.dst.loc.line, e.how.value) for e in res.sections[0].calls] == [(5, "direct")]


def test_a_definition_whose_declaration_the_index_lost_takes_fewer_arguments(tree):
    """EliminateNoOps(subgraph) calls eliminate_no_ops.cpp's EliminateNoOps(graph, custom_ops) when no declaration
    of it (with the default ``custom_ops = {}``) is indexed, its header not in the tree: the call keeps it."""
    source = ("#include <torch/csrc/jit/passes/no_ops.h>\nnamespace torch::jit {\n"
              "bool EliminateNoOps(std::shared_ptr<Graph>& graph,\n"
              "    std::unordered_set<c10::Symbol> custom_ops) {\n  return true;\n}\n}\n")
    caller = ("#include <torch/csrc/jit/passes/no_ops.h>\nnamespace torch::jit {\n"
              "void freeze(std::shared_ptr<Graph>& g) {\n  EliminateNoOps(g);\n}\n}\n")
    with indexed_with(tree, {"torch/csrc/jit/passes/no_ops.cpp": source,
                             "torch/csrc/jit/passes/freeze.cpp": caller}) as ix:
        assert _callers(ix, "torch::jit::EliminateNoOps") == ["torch::jit::freeze"]


_FOREACH = """namespace at::native {
class Tensor {};
class Scalar {};
template <typename T>
class ArrayRef {};
using TensorList = ArrayRef<Tensor>;
namespace {
inline bool check_fast_path_restrictions(
    ArrayRef<TensorList> tensorLists,
    ArrayRef<Scalar> scalarList = {},
    bool does_op_promote_integer_inputs_to_float = false) {
  return _check_tensors_share_device_and_dtype(tensorLists);
}
inline bool can_use_fast_route(
    ArrayRef<TensorList> tensorLists,
    ArrayRef<Scalar> scalarList = {},
    bool does_op_promote_integer_inputs_to_float = false) {
  return check_fast_path_restrictions(tensorLists, scalarList, does_op_promote_integer_inputs_to_float);
}
inline bool can_use_fast_route(TensorList tensors1, TensorList tensors2, bool promote = false) {
  return can_use_fast_route({tensors1, tensors2}, {}, promote);
}
}  // namespace
bool EliminateNoOps(
    std::shared_ptr<Graph>& graph,
    std::unordered_set<c10::Symbol> custom_ops = {});
bool _check_tensors_share_device_and_dtype(ArrayRef<TensorList> tensorLists) { return true; }
void foreach_add(TensorList self, ArrayRef<Scalar> scalars) {
  can_use_fast_route({self}, scalars);
}
}  // namespace at::native
"""


def test_a_braced_default_after_a_template_typed_parameter_keeps_the_function(tree):
    """tree-sitter read ``(ArrayRef<TensorList> tensorLists, ArrayRef<Scalar> scalarList = {}, ...)`` at namespace
    scope as a variable constructed from expressions: ForeachUtils.h's check_fast_path_restrictions and one
    can_use_fast_route were not indexed, and their 65 callers on 2.6.0 reached the other overload, or none (Note
    [Braced default arguments] in extract/cpp.py)."""
    with indexed_with(tree, {"aten/src/ATen/native/ForeachUtils.h": _FOREACH}) as ix:
        rows = ix.q("SELECT s.name, s.line, s.params FROM cpp_symbol s JOIN files f ON f.id = s.file_id "
                    "WHERE f.path LIKE '%ForeachUtils.h' ORDER BY s.line")
        assert [(r[0], r[1]) for r in rows] == [
            ("check_fast_path_restrictions", 8), ("can_use_fast_route", 14), ("can_use_fast_route", 20),
            ("EliminateNoOps", 24), ("_check_tensors_share_device_and_dtype", 27), ("foreach_add", 28)]
        assert rows[1][2] == ("(ArrayRef<TensorList> tensorLists, ArrayRef<Scalar> scalarList = {}, "
                              "bool does_op_promote_integer_inputs_to_float = false)")  # as written
        assert signature(rows[3][2]).takes(1)  # the prototype's default counts
        assert _callers(ix, "check_fast_path_restrictions") == ["at::native::(anonymous)::can_use_fast_route"]
        assert _callers(ix, "_check_tensors_share_device_and_dtype") == [
            "at::native::(anonymous)::check_fast_path_restrictions"]
        res, _ = run(get_tool("calls"), ix, function_name="at::native::foreach_add")
        assert [e.dst.loc.line for e in res.sections[0].calls] == [14]  # one list and a scalar list: not (a, b)

_TABLE_ARGS = ("std::pair<K, V>, K, H, detailv3::KeyOrValueHasher<K, std::pair<K, V>, H>, E,\n"
               "      detailv3::KeyOrValueEquality<K, std::pair<K, V>, E>, A,\n"
               "      typename std::allocator_traits<A>::template rebind_alloc<\n"
               "          detailv3::sherwood_v3_entry<std::pair<K, V>>>")
_FLAT_MAP = f"""namespace ska {{
namespace detailv3 {{
template <typename T, typename FindKey, typename H, typename HW, typename E, typename EW, typename A, typename EA>
class sherwood_v3_table {{
 public:
  template <typename Key, typename... Args>
  int emplace(Key&& key, Args&&... args) {{ return 0; }}
}};
}}  // namespace detailv3
template <typename K, typename V, typename H, typename E, typename A>
class flat_hash_map : public detailv3::sherwood_v3_table<
      {_TABLE_ARGS}> {{
  using Table = detailv3::sherwood_v3_table<
      {_TABLE_ARGS}>;

 public:
  using Table::emplace;
  int emplace() {{ return 0; }}
}};
}}  // namespace ska
"""


def test_a_long_class_scope_alias_brings_in_its_members(tree):
    """ska's ``using Table = detailv3::sherwood_v3_table<...>;`` (324 characters) was not indexed (aliases over 200
    characters were dropped), so ``using Table::emplace;`` brought nothing in and ``lookup.emplace(name, handle)``
    on a flat_hash_map reached no function: only flat_hash_map::emplace(), which takes no arguments."""
    user = ("#include <c10/util/flat_hash_map.h>\nnamespace c10 {\n"
            "void add(ska::flat_hash_map<int, int, H, E, A>& lookup) {\n  lookup.emplace(1, 2);\n}\n}\n")
    with indexed_with(tree, {"c10/util/flat_hash_map.h": _FLAT_MAP, "c10/core/add.cpp": user}) as ix:
        assert len(ix.q("SELECT name FROM cpp_using WHERE alias = 'Table'")[0][0]) > 200
        assert _callers(ix, "ska::detailv3::sherwood_v3_table::emplace") == ["c10::add"]
