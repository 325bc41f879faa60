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


def test_an_index_other_extractor_code_wrote_is_rebuilt(tree):
    """Note [Written by this code]: the index records a digest of the packages that decide its facts; one written
    by other code (an upgrade, an edited extractor that no one bumped a version for) is built again, not refreshed
    file by file, which would keep every unchanged file's facts as the other code extracted them."""
    import sqlite3

    from torchtalk.codedigest import code_digest
    from torchtalk.index.indexer import INDEXER_VERSION

    assert INDEXER_VERSION.endswith(code_digest("extract", "model", "source", "store", "index", "link"))
    st = find_source(tree)
    refresh(st, workers=1, codegen=False)
    assert refresh(st, workers=1, codegen=False).mode == "up-to-date"
    other = INDEXER_VERSION.rsplit("-", 1)[0] + "-0123456789abcdef"
    with sqlite3.connect(st.index_path) as conn:
        conn.execute("UPDATE meta SET value = ? WHERE key = 'indexer_version'", (other,))
    rep = refresh(st, workers=1, codegen=False)
    assert rep.mode == "full" and other in rep.reason and INDEXER_VERSION in rep.reason
    assert refresh(st, workers=1, codegen=False).mode == "up-to-date"


def test_the_code_digest_follows_each_package_file(tmp_path, monkeypatch):
    import pytest

    from torchtalk import codedigest

    pkg = tmp_path / "extract" / "sub"
    pkg.mkdir(parents=True)
    (tmp_path / "extract" / "a.py").write_text("x = 1\n")
    (pkg / "b.py").write_text("y = 2\n")
    monkeypatch.setattr(codedigest, "_ROOT", tmp_path)
    codedigest.code_digest.cache_clear()
    try:
        first = codedigest.code_digest("extract")
        (pkg / "b.py").write_text("y = 3\n")  # a subpackage's file counts too
        codedigest.code_digest.cache_clear()
        second = codedigest.code_digest("extract")
        (pkg / "b.py").rename(tmp_path / "extract" / "b.py")  # so does where a file is
        codedigest.code_digest.cache_clear()
        third = codedigest.code_digest("extract")
        assert len({first, second, third}) == 3 and all(len(d) == 16 for d in (first, second, third))
        with pytest.raises(ValueError, match="'nope' is not a package of torchtalk"):
            codedigest.code_digest("nope")
    finally:
        codedigest.code_digest.cache_clear()


def test_the_generated_layer_records_the_generators_driver_code():
    from torchtalk.codedigest import code_digest
    from torchtalk.source.codegen.inputs import SETTINGS_VERSION

    assert SETTINGS_VERSION == f"torchtalk-codegen-1-{code_digest('source/codegen')}"
