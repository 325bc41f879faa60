"""The names error_origin looks tests up for: the nearest op, and past an internal one the first public op above
it (Note [Tests of an internal op])."""

from __future__ import annotations

from ..graph import graph, up
from ..graph.nodes import op_node
from ..graph.registry import registry
from ..model import EdgeKind, NodeKind
from ..model.dispatch import Device
from ..store.reader import Index, like_literal
from .change.tests import base_name, for_device
from .tests import FoundTest, find_similar_tests

# Note [Tests of an internal op]
# ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
# An op whose name starts with "_" (_linalg_svd, _flash_attention_backward, _weight_int8pack_mm) is internal: few
# tests are named after it, and users reach it through a public op or Python API (torch.linalg.svd,
# F.scaled_dot_product_attention). Its tests are then (1) those named after it or whose bodies call its Python
# name (test_linalg.py's test__int8_mm calls torch._weight_int8pack_mm: the [calls] tests affected lists too), and
# (2) those of the first public op on the way up: the nearest one the error's walk reached, else the nearest one
# above the internal op through the ops that call it (composite calls, kernels calling it, derivative formulas:
# _flash_attention_backward <- _scaled_dot_product_flash_attention_backward <- the backward of
# _scaled_dot_product_flash_attention <- scaled_dot_product_attention), a walk of at most PUBLIC_DEPTH calls.
PUBLIC_DEPTH = 4
PUBLIC_NODES = 200
_UP_KINDS = frozenset({EdgeKind.OP_CALL, EdgeKind.DISPATCH_CALL, EdgeKind.KERNEL, EdgeKind.WRAPPER,
                       EdgeKind.BACKWARD, EdgeKind.CALL})


def internal(name: str) -> bool:
    return name.startswith("_") and not name.startswith("__")


def public_above(ix: Index, key: str) -> str:
    """The base name of the nearest public op above op ``key`` ("" when none is within PUBLIC_DEPTH calls)."""
    reg = registry(ix)
    op = reg.by_full.get(key)
    if op is None:
        return ""
    walk = up([op_node(op)], graph(ix).into, _UP_KINDS, PUBLIC_DEPTH, fan_out=40, max_nodes=PUBLIC_NODES)
    ops = [(s.depth, i, s.node.key) for i, s in enumerate(walk.steps) if s.node.kind is NodeKind.OP]
    return next((b for _d, _i, k in sorted(ops) if not internal(b := base_name(k))), "")


def public_api(op_python: list[str], python: list[str]) -> str:
    """Note [Tests of an op Python calls privately]: the first public Python name reaching a site (``python``) when
    the nearest op has none of its own (``op_python``), else ""."""
    def public(n: str) -> bool:
        return n.startswith("torch.") and not any(internal(p) for p in n.split(".")[1:])
    if any(public(n) for n in op_python):
        return ""
    return next((n for n in python if public(n) and not n.endswith((".forward", ".__call__"))), "")


# Note [Tests of an op Python calls privately]
# ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
# An op whose only Python name is private (col2im: torch._C._nn.col2im) is what a public function calls
# (torch.nn.functional.fold, which nn.Fold calls): its tests are named after that function (test_nn.py's
# test_fold_invalid_arg, test_fold), few after the op. So past the op's own tests, the tests named after the first
# public Python name the walk reached are looked up, kept only in files importing its package (Note [Tests of a
# Python function's package]: "fold" names fx's constant folding tests too).
def _api_tests(ix: Index, api: str, limit: int, device: Device | None) -> tuple[list[FoundTest], str]:
    module, _, name = api.rpartition(".")
    found = find_similar_tests(ix, name, limit, by_body=False)
    tests = [t for t in found.tests if for_device(t.loc.path, t.cls, t.generated, device)[0]]
    row = ix.one("SELECT id FROM py_function WHERE module = ? AND qualname = ?", (module, name))
    return tests_of_its_package(ix, tests, 0, row[0], name) if row else (tests, "")


def tests_for(ix: Index, names: list[str], limit: int, device: Device | None, api: str = "",
              ) -> tuple[str, list[tuple[str, str, str]], list[FoundTest], str]:
    """(what the tests are for, as an answer says it; OpInfo entries (name, variant, command); tests; a cut or "")
    for the op keys ``names``, closest first (Note [Tests of an internal op]), and for a public Python ``api`` above
    them (Note [Tests of an op Python calls privately]). A site in code of one ``device`` leaves out the tests
    written for another device (TestMPS)."""
    base = base_name(names[0])
    lookups = [(base, False)]
    if internal(base):
        public = next((b for n in names if not internal(b := base_name(n))), "") or public_above(ix, names[0])
        lookups = [(base, True)] + ([(public, False)] if public else [])
    opinfos: list[tuple[str, str, str]] = []
    per: list[list[FoundTest]] = []
    for name, by_body in lookups:
        found = find_similar_tests(ix, name, limit, by_body=by_body)
        opinfos += [(o.name, o.variant, o.command) for o in found.opinfos if (o.name, o.variant) not in
                    {(n, v) for n, v, _c in opinfos}]
        per.append([t for t in found.tests if for_device(t.loc.path, t.cls, t.generated, device)[0]])
    cut = ""
    if api:
        above, cut = _api_tests(ix, api, limit, device)
        per.append(above)
    tests: list[FoundTest] = []
    seen: set[tuple[str, str, str]] = set()
    for k in range(max(map(len, per), default=0)):  # each name's first tests in turn
        for group in per:
            if k < len(group) and (t := group[k]) and (key := (t.loc.path, t.cls, t.name)) not in seen:
                seen.add(key)
                tests.append(t)
    shown = " and ".join([n + (" (internal)" if internal(n) and len(lookups) > 1 else "") for n, _b in lookups]
                         + ([api] if api else []))
    return shown, opinfos, tests, cut


def tests_of_its_package(ix: Index, tests: list[FoundTest], opinfos: int, func_id: int, subject: str,
                         ) -> tuple[list[FoundTest], str]:
    """Note [Tests of a Python function's package]: tests named after a Python function that reaches no op are its
    tests only in files that import its package (torch.masked.maskedtensor, torch.distributed._shard): a name as
    short as ``see`` (profiler's EnforceUnique.see), ``check_tensor`` or ``contiguous`` names other tests elsewhere
    (test_cuda.py's test_manual_seed, functorch's test_check_tensor), and an OpInfo entry named like it is an op's.
    (The tests kept, the cut that counts the others with the call that lists them, or "".)"""
    row = ix.one("SELECT module FROM py_function WHERE id = ?", (func_id,))
    package = ".".join((row[0] or "").split(".")[:3]) if row else ""
    if package.count(".") < 2:
        return tests, ""  # torch.functional, torch._tensor: every test file may use it
    paths = sorted({t.loc.path for t in tests})
    marks = ",".join("?" * len(paths))
    importing = {r[0] for r in ix.q(
        f"SELECT DISTINCT f.path FROM py_import i JOIN files f ON f.id = i.file_id WHERE f.path IN ({marks}) AND "
        "(i.target = ? OR i.target LIKE ? ESCAPE '\\')", (*paths, package, like_literal(package) + ".%"))}
    kept = [t for t in tests if t.loc.path in importing]
    left = len(tests) - len(kept) + opinfos
    if not left:
        return tests, ""
    return kept, (f"{left} test(s) named like {subject} were left out: their files import nothing of {package}, or "
                  f"they are an op's OpInfo tests (find_similar_tests(\"{subject}\") lists them)")
