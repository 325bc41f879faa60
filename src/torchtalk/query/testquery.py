"""How a test query is read (Note [Test queries as written]): the stem tests' names and bodies are matched with,
the spellings a body would use, the words of a multi-word query, and the OpInfo names of Python names."""

from __future__ import annotations

import re

from ..store.reader import Index

# Note [Test queries as written]
# A test query comes spelled as its user met it: a Python name (torch.nn.functional.relu, F.relu, nn.functional.relu
# as op_db names it, torch.Tensor.add), an op as the dispatcher or a graph prints it (aten::relu.out,
# torch.ops.aten.relu.default, aten.relu), or a test's own spelling (test_relu). The prefixes below are removed in
# this order, each at most once, down to the stem the tests' names and bodies are matched with; an op prefix also
# drops the overload (.out, .default), which no test name spells. An OpInfo entry's formatted name as pytest -k
# takes it (nn_functional_relu, from `test_ops.py -k nn_functional_relu`) is read as that entry (_entry_named).
_PREFIXES = ("torch.ops.aten.", "torch.nn.functional.", "torch.nn.", "torch.", "F.", "nn.functional.", "nn.",
             "Tensor.", "aten::", "aten.", "test_")
_OP_PREFIXES = ("torch.ops.aten.", "aten::", "aten.")

# An OpInfo entry's name is its op's Python name under torch (OpInfo's op is _getattr_qual(torch, name)):
# nn.functional.relu is torch.nn.functional.relu; the Python spellings of an op's names as entries write them.
OPINFO_SPELLINGS = (("torch._C._nn.", "nn.functional."), ("torch.nn.functional.", "nn.functional."),
                    ("torch._C._linalg.linalg_", "linalg."), ("torch.linalg.", "linalg."),
                    ("torch._C._special.special_", "special."), ("torch.special.", "special."),
                    ("torch._C._fft.fft_", "fft."), ("torch.fft.", "fft."), ("F.", "nn.functional."),
                    ("torch.Tensor.", ""), ("torch.", ""), ("Tensor.", ""))


def opinfo_names(python: list[str]) -> list[str]:
    """The OpInfo entry names the Python names ``python`` would have (torch.nn.functional.relu ->
    nn.functional.relu, torch.linalg.svd -> linalg.svd, torch.cumsum and Tensor.cumsum -> cumsum)."""
    return list(dict.fromkeys(_opinfo_name(n) for n in python))


def _opinfo_name(python: str) -> str:
    """One Python name as an OpInfo entry writes it: its first matching spelling rewritten, else as it is."""
    for old, new in OPINFO_SPELLINGS:
        if python.startswith(old):
            return new + python[len(old):]
    return python


def terms(q: str) -> tuple[str, list[str]]:
    """Search stem and the spellings a test body would use for it (Note [Test queries as written])."""
    stem = q
    for prefix in _PREFIXES:
        if stem.startswith(prefix):
            stem = stem[len(prefix):]
    if q.startswith(_OP_PREFIXES) and "." in stem:
        stem = stem.split(".", 1)[0]
    return stem, [f"torch.{stem}", f".{stem}", f"F.{stem}", f"nn.{stem}", f"torch.nn.functional.{stem}"]


def functional(name: str) -> str:
    """The functional op an in-place op's OpInfo entry names (add_ -> add, __iand__ -> __and__)."""
    return f"__{name[3:]}" if name.startswith("__i") and name.endswith("__") else name.removesuffix("_")


def entry_named(ix: Index, q: str) -> tuple[str, str] | None:
    """The OpInfo entry (name, the op it names) whose formatted name as test names and ``pytest -k`` spell it is
    ``q`` (nn_functional_relu, linalg_svd, normal_in_place: the name and variant, dots as underscores)."""
    def build() -> dict[str, tuple[str, str]]:
        out: dict[str, tuple[str, str]] = {}
        for name, variant, aten in ix.q("SELECT name, variant_test_name, aten_name FROM op_info_entry ORDER BY id"):
            op = aten or name.rsplit(".", 1)[-1]
            out.setdefault(name.replace(".", "_").lower(), (name, op))
            if variant:
                out.setdefault(f"{name}.{variant}".replace(".", "_").lower(), (name, op))
        return out
    return ix.cached("opinfo_formatted_names", build).get(q.lower())


def norm(name: str) -> str:
    """group_norm, GroupNorm and groupnorm alike: lower case without underscores."""
    return name.replace("_", "").lower()


def word_stem(word: str) -> str:
    """A word as test names spell its root: clipping -> clip, padded -> pad, norms -> norm (a doubled last consonant
    undone); short words and names with an underscore or a dot as they are."""
    w = word.lower()
    if "_" in w or "." in w or len(w) < 5:
        return w
    if w.endswith(("ing", "ed")) and len(w) >= 6:
        w = w[:-3] if w.endswith("ing") else w[:-2]
        if w[-1] == w[-2] and w[-1] not in "aeiouls":
            w = w[:-1]
    elif w.endswith("s") and not w.endswith(("ss", "us", "is")):
        w = w[:-1]
    return w


# Note [A home by its tests]
# ~~~~~~~~~~~~~~~~~~~~~~~~~~~
# PyTorch's layout names a home test file after the package (torch.histc -> test/test_torch.py) or the nn module's
# source file, but a topic's tests often live in a file named after the topic: nn.EmbeddingBag
# (torch/nn/modules/sparse.py) in test/nn/test_embedding.py, whose 22 tests named test_embedding_bag* ranked after
# inductor's, ONNX's and quantization's; histc in test/test_reductions.py; nn.CTCLoss in test/test_nn.py. When the
# layout's first home holds no test named after the query (the name leading: test_histc_*, not
# test_lazy_batchnorm), the file that holds the most is its first home, if it holds at least HOME_MIN and is a suite
# every device runs: a file of test/ or test/nn/ with device-type tests not limited to some devices (``only_for``:
# test_mps.py, test_mkldnn.py). The layout's home stays first wherever it has such a test (softmax in test_nn.py,
# though test_nestedtensor.py names more).
HOME_MIN = 3
_HOME_DIRS = re.compile(r"test/(nn/)?[^/]+\.py$")


def named_home_file(ix: Index, named: dict[int, tuple[int, int]], home: list[str],
                    device_files: set[int]) -> tuple[int, str, str] | None:
    """(file id, path, why) of the file that is the query's first home by its tests (Note [A home by its tests]),
    or None. ``named``: test method id -> (file id, name score), 0-1 when the name leads with the query;
    ``device_files``: the files with device-type tests for every device."""
    counts: dict[int, int] = {}
    for fid, score in named.values():
        if score <= 1:
            counts[fid] = counts.get(fid, 0) + 1
    first = ix.file_ids().get(home[0]) if home else None
    if first is not None and counts.get(first):
        return None
    best = max((f for f in counts if f in device_files and _HOME_DIRS.match(ix.path_of(f))),
               key=lambda f: (counts[f], -f), default=None)
    if best is None or counts[best] < HOME_MIN:
        return None
    path = ix.path_of(best)
    return best, path, f"{path} (holds {counts[best]} of the tests named after it)"
