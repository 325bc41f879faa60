import os
import time

from torchtalk.index.indexer import refresh
from torchtalk.source.tree import find_source
from torchtalk.store.reader import Index


def test_full_then_noop_then_incremental(tree):
    st = find_source(tree)
    first = refresh(st, workers=1, codegen=False)
    assert first.mode == "full" and first.parsed >= 3
    assert refresh(st, workers=1, codegen=False).mode == "up-to-date"

    # A touched file with the same content is re-hashed, not re-parsed.
    nf = tree / "aten/src/ATen/native/native_functions.yaml"
    os.utime(nf, ns=(time.time_ns(), time.time_ns() + 10**9))
    touched = refresh(st, workers=1, codegen=False)
    assert touched.mode == "incremental" and touched.unchanged == 1 and touched.parsed == 0

    # One YAML line changed: the op moves to its new kernel, nothing else is re-read.
    nf.write_text(nf.read_text().replace("MPS: relu_mps", "MPS: relu_mps_v2"))
    inc = refresh(st, workers=1, codegen=False)
    assert inc.mode == "incremental" and inc.parsed == 1
    ix = Index(st.index_path, st.root)
    kernels = [r[0] for r in ix.q("SELECT kernel FROM op_dispatch WHERE key = 'MPS'")]
    assert "relu_mps_v2" in kernels and "relu_mps" not in kernels


def test_removed_file_is_dropped(tree):
    st = find_source(tree)
    refresh(st, workers=1, codegen=False)
    (tree / "tools/autograd/derivatives.yaml").unlink()
    rep = refresh(st, workers=1, codegen=False)
    assert rep.removed == 1
    ix = Index(st.index_path, st.root)
    assert ix.one("SELECT count(*) FROM derivative")[0] == 0


def test_garbage_index_is_rebuilt_with_a_reason(tree):
    st = find_source(tree)
    refresh(st, workers=1, codegen=False)
    st.index_path.write_bytes(b"not a database at all" * 50)
    rep = refresh(st, workers=1, codegen=False)
    assert rep.mode == "full" and "bad header" in rep.reason
    assert Index(st.index_path, st.root).one("SELECT count(*) FROM op")[0] > 10


def test_yaml_syntax_error_is_reported_and_the_rest_indexed(tree):
    nf = tree / "aten/src/ATen/native/native_functions.yaml"
    nf.write_text(nf.read_text() + "\n- func: broken(Tensor x) -> Tensor\n  dispatch: [\n")
    st = find_source(tree)
    rep = refresh(st, workers=1, codegen=False)
    assert any("native_functions.yaml" in s and "YAML syntax error" in s for s in rep.skipped)
    ix = Index(st.index_path, st.root)
    assert ix.one("SELECT count(*) FROM derivative")[0] == 5


def test_open_index_keeps_answering_across_a_rebuild(tree, monkeypatch):
    from torchtalk.store import reader as index_mod
    monkeypatch.setattr(index_mod, "RECHECK_S", 0.0)  # readers look for a new file at most every 0.5 s
    st = find_source(tree)
    refresh(st, workers=1, codegen=False)
    ix = Index(st.index_path, st.root)
    assert ix.one("SELECT count(*) FROM op WHERE name = 'relu'")[0] == 1
    nf = tree / "aten/src/ATen/native/native_functions.yaml"
    nf.write_text(nf.read_text() + "\n- func: gelu(Tensor self) -> Tensor\n")
    refresh(st, workers=1, codegen=False)
    # The same Index object now sees the new file.
    assert ix.one("SELECT count(*) FROM op WHERE name = 'gelu'")[0] == 1
