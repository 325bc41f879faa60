"""Whether a test named after a name is that name's test, and a ``pytest -k`` that selects one OpInfo entry's
tests only: read from the tree's own names (Note [Named after another name], Note [Namespace test files],
Note [Exact -k selections])."""

from __future__ import annotations

import re

from ..model import Op
from ..model.dispatch import Device
from ..model.tests import TEST_FLAG_WORDS
from ..store.reader import Index
from .testnames import DTYPE_NAMES
from .testquery import norm

# Note [Named after another name]
# ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
# A test named test_<X>_<words> is X's test when the words say how X is run: a dtype, a device, one of X's overloads,
# argument names or OpInfo variants (test_sort_stable, test_pad_circular), a flag word (TEST_FLAG_WORDS: backward,
# out, 2d). It is another name's test when X joined with its first words is another name the tree defines: an op
# (test_index_put_* is index_put's, test_log_softmax's "log" is log_softmax's), or a Python function or class under
# torch/ (test_pad_sequence is torch.nn.utils.rnn.pad_sequence's, test_svd_lowrank torch.svd_lowrank's,
# test_add_loggers torch.ao.ns's add_loggers). So is a test whose words before X join it into another name the tree
# defines (test_smooth_l1_loss is smooth_l1_loss's, not l1_loss's; test_log_softmax log_softmax's, not softmax's);
# other words before X keep it X's (test_quantized_conv2d, test_nondeterministic_cumsum). The names are the tree's,
# read once per index version; matched as norm() spells them (pad_sequence and PadSequence alike).
MAX_JOINED = 3  # words after X tried as part of another name


def known_names(ix: Index) -> frozenset[str]:
    """norm() of every op's name (without leading or trailing underscores), and of every module-level Python
    function and class defined under torch/ (Note [Named after another name])."""
    def build() -> frozenset[str]:
        rows = ix.q("SELECT DISTINCT name FROM op")
        rows += ix.q("SELECT DISTINCT name FROM py_function WHERE module LIKE 'torch.%' AND cls = ''")
        rows += ix.q("SELECT DISTINCT name FROM py_class WHERE module LIKE 'torch.%'")
        return frozenset(norm(n.strip("_")) for (n,) in rows if n.strip("_"))
    return ix.cached("test_known_names", build)


def variant_words(ix: Index, ops: list[Op]) -> frozenset[str]:
    """norm() of the words that say how ``ops`` are run (Note [Named after another name])."""
    words = {*DTYPE_NAMES, *DTYPE_NAMES.values(), *(d.value for d in Device), *TEST_FLAG_WORDS}
    for op in ops:
        words.update(w for w in op.overload.split("_") if w)
        words.update(a.name for a in op.schema.arguments)
    names = {op.name.strip("_") for op in ops}
    for name in names:
        words.update(v for (v,) in ix.q("SELECT DISTINCT variant_test_name FROM op_info_entry WHERE name = ? OR "
                                        "aten_name = ?", (name, name)) if v)
    return frozenset(norm(w) for w in words)


def after(name: str, count: int) -> list[str]:
    """The words of ``name`` after its first ``count`` characters that are not underscores (split at
    underscores)."""
    seen = 0
    for i, ch in enumerate(name):
        if ch == "_":
            continue
        if seen == count:
            return [w for w in name[i:].split("_") if w]
        seen += 1
    return []


def before(name: str, count: int) -> list[str]:
    """The words of ``name`` before its first ``count`` characters that are not underscores, but its leading
    "test" (split at underscores)."""
    seen = 0
    for i, ch in enumerate(name):
        if ch == "_":
            continue
        if seen == count:
            words = [w for w in name[:i].split("_") if w]
            return words[1:] if words and words[0].lower() == "test" else words
        seen += 1
    return []


def names_another(name: str, start: int, end: int, key: str, known: frozenset[str], variants: frozenset[str]) -> bool:
    """Whether the name (``key`` matched, norm()'d, between ``start`` and ``end`` characters that are not
    underscores) spells another name of the tree with the words before or after it (Note [Named after another
    name])."""
    prefixes, joined = [], ""
    for w in reversed(before(name, start)[-MAX_JOINED:]):
        joined = norm(w) + joined
        prefixes.append(joined)
    words = after(name, end)
    tails, joined = [""], ""
    for w in words[:MAX_JOINED]:
        joined += norm(w)
        tails.append(joined)
    if any(p + key + t in known for p in prefixes for t in tails):  # test_scaled_dot_product_attention for dot
        return True
    if not words or norm(words[0]) in variants or re.fullmatch(r"\d+d", words[0].lower()):
        return False
    joined = key
    for w in words[:MAX_JOINED]:
        joined += norm(w)
        if joined in known:
            return True
    return False


# Note [Namespace test files]
# ~~~~~~~~~~~~~~~~~~~~~~~~~~~
# An op of a Python namespace (native_functions.yaml's ``python_module: linalg``) is named with the namespace as a
# prefix (linalg_eig), and is torch.linalg.eig in Python. The namespace's own test files (test/test_linalg.py; for
# sparse also test_sparse_csr.py) name its tests without the prefix: test_eig_numpy, test_eig_compare_backends. Those
# files match the op's name with the prefix dropped; elsewhere the full name is matched, as a short name there
# (test_eig in test_ops.py?) would be any namespace's op.

def namespace_short(ops: list[Op]) -> tuple[str, str] | None:
    """(the op's name without its namespace prefix, the namespace) when its python_module prefixes its name."""
    op = ops[0] if ops else None
    if op is None or not op.python_module:
        return None
    prefix = op.python_module + "_"
    short = op.name.removeprefix(prefix)
    return (short, op.python_module) if short != op.name and short.strip("_") else None


def namespace_files(ix: Index, namespace: str) -> set[int]:
    """The ids of the namespace's own test files: test/test_<namespace>.py and test/test_<namespace>_*.py."""
    return {fid for fid, p in ix.paths().items()
            if re.fullmatch(rf"test/test_{re.escape(namespace)}(_\w+)?\.py", p)}


# Note [Exact -k selections]
# ~~~~~~~~~~~~~~~~~~~~~~~~~~
# ``pytest -k normal`` selects every test whose name (or a parent's: class, module) holds "normal", case-insensitively.
# An entry's generated tests are named test_<template>_<entry>_<device>_<dtype> (dots as underscores; @parametrize
# values may come between entry and device), so the entry's name always has an underscore on both sides, and the
# selection is anchored on them: ``_normal_``. Bare, it would also select every test whose template or dtype holds the
# word (``-k bfloat16`` each entry's bfloat16 tests, ``-k float`` each float32 one, ``-k T`` every TestCommon test).
# What the anchor still selects is ruled out by name, read from the tree:
# - other entries whose name holds it (``_normal_`` in nn_functional_normal_: ``and not _nn_functional_normal_``,
#   the excluded names anchored too, so that none is part of the entry's own test names); a collision that holds
#   another one is ruled out by the shorter. The entry's own variants are other entries too (normal_in_place is
#   OpInfo('normal', variant_test_name='in_place'), with a command of its own).
# - test names of the suite that hold it (test_neg_view for neg, test_non_standard_bool_values for bool), or end in
#   its first words (test_conj_view, whose as_strided tests hold _view_as_): each test's own runs of the entry are
#   put back (``(_neg_ and not test_neg_view or test_neg_view_neg_) and ...``); a test name the file's name holds is
#   ruled out with the underscore after it.
# Every collision is named: the longest list is a few lines (norm's 17 in PyTorch 2.6).
# The one other entry kept is the op's Python reference (python_ref_db: ``_refs.linalg.svd`` of linalg_svd,
# ``_refs._conversions.bfloat16`` of bfloat16), whose tests run the op too; an entry of another module that only
# ends in the name is another op (``linalg.cholesky`` is not ``cholesky``'s, and is ruled out). Names that differ only
# in case (OpInfo('T') and OpInfo('t')) are one name to -k and cannot be told apart.
# Nor can two (template, entry) pairs that spell one name: test_non_contig_index + add and test_non_contig + index_add
# (test_unary_ufuncs.py) are both test_non_contig_index_add_cpu_float32.
_REFS = "_refs."  # the module of the Python references (torch/_refs)


def _formatted(name: str) -> str:
    return name.replace(".", "_").lower()


def formatted_names(ix: Index) -> dict[str, str]:
    """Every OpInfo entry's name as its generated tests spell it (name and variant, dots as underscores) -> the
    formatted name of the op it is the Python reference of ("" for any other entry)."""
    def build() -> dict[str, str]:
        out: dict[str, str] = {}
        for name, variant, db in ix.q("SELECT name, variant_test_name, db FROM op_info_entry ORDER BY id"):
            suffix = f".{variant}" if variant else ""
            of = ""
            if db == "python_ref_db" and name.startswith(_REFS):  # _refs._conversions.bfloat16 is bfloat16's
                parts = name[len(_REFS):].split(".")
                while len(parts) > 1 and parts[0].startswith("_"):
                    parts = parts[1:]
                of = _formatted(".".join(parts) + suffix)
            out.setdefault(_formatted(name + suffix), of)
        return out
    return ix.cached("opinfo_formatted", build)


def _suite_tests(ix: Index, path: str) -> list[str]:
    """The test names defined in the test file ``path`` (every class's), lowercased."""
    fid = ix.file_ids().get(path)
    return [n.lower() for (n,) in ix.q("SELECT DISTINCT name FROM test_method WHERE file_id = ?", (fid,))] \
        if fid is not None else []


def _shortest(names: list[str]) -> list[str]:
    """``names`` without those holding a shorter one (that one rules them out too), shortest first."""
    kept: list[str] = []
    for n in sorted(names, key=len):
        if not any(k in n for k in kept):
            kept.append(n)
    return kept


def opinfo_command(ix: Index, sel: str, path: str) -> str:
    """The command running, in the test file ``path``, the generated tests of the entry formatted ``sel`` (exact_k)."""
    return f'pytest {path} -k "{exact_k(ix, sel, path)}"'


def exact_k(ix: Index, sel: str, path: str) -> str:
    """The -k expression selecting, in the test file ``path``, the generated tests of the entry formatted ``sel``
    and no other test but its Python reference's (_refs_linalg_svd, the reference of linalg_svd: its tests run the
    op too) (Note [Exact -k selections])."""
    low = sel.lower()
    anchor = f"_{low}_"
    entries = [f"_{n}_" for n, ref_of in formatted_names(ix).items()
               if anchor in f"_{n}_" and n != low and ref_of != low]
    # a test name holding the anchor, or ending in its first words when an entry's name starts with the others:
    # test_conj_view's tests of as_strided hold _view_as_
    names = [f"{n}_" for n in formatted_names(ix)]
    heads = [anchor[:i + 1] for i in range(1, len(anchor) - 1)
             if anchor[i] == "_" and any(n.startswith(anchor[i + 1:]) for n in names)]
    tests = _suite_tests(ix, path)
    # a test name as written (test_abs_zero, run undecorated, has no underscore after it), but one the file's
    # name holds (every test's parent) with its underscore
    module = path.rsplit("/", 1)[-1].lower()
    excluded = _shortest([t if t not in module else f"{t}_" for t in tests
                          if anchor in f"{t}_" or any(f"{t}_".endswith(h) for h in heads)])
    core = f"_{sel}_"
    if excluded:  # the entry's own tests that an exclusion holds, back (test_neg_view_neg_); not one that is no
        #           more than an exclusion (test_non_contig's expand tests are test_non_contig_expand's names)
        back = sorted(f"{t}_{sel}_" for t in tests if any(x in f"{t}{anchor}" and f"{t}{anchor}" not in f"{x}_"
                                                           for x in excluded))
        core = "(" + " and not ".join([core, *excluded]) + "".join(f" or {b}" for b in back) + ")"
    return " and not ".join([core, *_shortest(entries)])
