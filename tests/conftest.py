"""Shared fixtures: a small tree in PyTorch's layout, and (when configured) the real one.

Every test gets its own cache dir so indexes never leak between tests or into
the user's cache. The real tree comes from $TORCHTALK_TEST_SOURCE (.ci/run sets it), else from the
tree that `torchtalk quickstart` / `setup` / `fetch-source` recorded in the user's config file.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

FIXTURE_TREE = Path(__file__).parent / "fixtures" / "tree"


@pytest.fixture(autouse=True)
def _isolated_cache(tmp_path, monkeypatch):
    monkeypatch.setenv("TORCHTALK_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "config"))
    monkeypatch.delenv("TORCHTALK_SOURCE", raising=False)


@pytest.fixture
def tree(tmp_path) -> Path:
    """A private copy of the fixture tree (tests may edit it)."""
    dest = tmp_path / "pytorch"
    shutil.copytree(FIXTURE_TREE, dest)
    return dest


@pytest.fixture
def indexed(tree):
    """(tree path, Index) after a full build of the fixture tree."""
    from torchtalk.index.indexer import refresh
    from torchtalk.source.tree import find_source
    from torchtalk.store.reader import Index

    st = find_source(tree)
    refresh(st, workers=1, codegen=False)
    ix = Index(st.index_path, st.root)
    yield tree, ix
    ix.close()


def _configured_source() -> str | None:
    """The tree `torchtalk quickstart` / `fetch-source` recorded (read before tests isolate the config)."""
    from torchtalk.source.tree import read_config
    value = read_config().get("source")
    return value if isinstance(value, str) else None


def real_source() -> Path | None:
    value = os.environ.get("TORCHTALK_TEST_SOURCE")
    return Path(value) if value and (Path(value) / "aten/src/ATen/native/native_functions.yaml").is_file() else None


# The README promises that the integration tests use the tree the Quickstart configured. Some test modules
# read $TORCHTALK_TEST_SOURCE themselves when they are imported (after this file), so the configured tree
# goes into the environment, once, here; an explicit $TORCHTALK_TEST_SOURCE wins.
if not os.environ.get("TORCHTALK_TEST_SOURCE") and _configured_source():
    os.environ["TORCHTALK_TEST_SOURCE"] = _configured_source()
    if real_source() is None:
        del os.environ["TORCHTALK_TEST_SOURCE"]


def line_of(tree: Path, rel: str, text: str) -> int:
    """The line of ``rel`` in ``tree`` that holds ``text`` (exactly one must)."""
    (n,) = [i for i, ln in enumerate((tree / rel).read_text().splitlines(), 1) if text in ln]
    return n


def index_with(tree: Path, files: dict[str, str]):
    """The Index of ``tree`` after writing ``files`` into it (relative path -> text; directories made) and
    refreshing its index: a fixture tree with the code one test needs."""
    for rel, text in files.items():
        (tree / rel).parent.mkdir(parents=True, exist_ok=True)
        (tree / rel).write_text(text)
    return _reindexed(tree)


@contextmanager
def indexed_with(tree: Path, files: dict[str, str]) -> Iterator[Any]:
    """``index_with`` as a context: the Index, closed when the block ends."""
    ix = index_with(tree, files)
    try:
        yield ix
    finally:
        ix.close()


def _reindexed(tree: Path, codegen: bool = False):
    """The Index of ``tree`` after refreshing it (without the generated layer, unless ``codegen``: the tree's
    stand-in generators run)."""
    from torchtalk.index.indexer import refresh
    from torchtalk.source.tree import find_source
    from torchtalk.store.reader import Index

    st = find_source(tree)
    refresh(st, workers=1, codegen=codegen)
    return Index(st.index_path, st.root)


def overlay_index(tree: Path, overlay: Path, appended: dict[str, str], codegen: bool = False):
    """The Index of ``tree`` after copying ``overlay``'s aten/ over it and appending text to its files
    (``{"aten/src/ATen/native/native_functions.yaml": ops}``): the CUDA fixture trees' setup."""
    shutil.copytree(overlay / "aten", tree / "aten", dirs_exist_ok=True)
    for rel, text in appended.items():
        with open(tree / rel, "a") as f:
            f.write(text)
    return _reindexed(tree, codegen)


def overlaid_index(dest: Path, overlays: tuple[str, ...], ops: str):
    """The Index of a copy of the fixture tree at ``dest`` with these fixture trees (tests/fixtures/<name>) copied
    over it, whole, and the ops of tests/fixtures/``ops`` appended to its native_functions.yaml."""
    shutil.copytree(FIXTURE_TREE, dest)
    for overlay in overlays:
        shutil.copytree(FIXTURE_TREE.parent / overlay, dest, dirs_exist_ok=True)
    yaml = dest / "aten/src/ATen/native/native_functions.yaml"
    yaml.write_text(yaml.read_text() + (FIXTURE_TREE.parent / ops).read_text())
    return _reindexed(dest)


def build_index(tree: Path, cache: Path, **refresh_kw):
    """(SourceTree, Index, report) for ``tree`` indexed into ``cache``: for fixtures wider than one
    test, which cannot use monkeypatch; the environment is restored afterwards."""
    from torchtalk.index.indexer import refresh
    from torchtalk.source.tree import find_source
    from torchtalk.store.reader import Index

    old = os.environ.get("TORCHTALK_CACHE_DIR")
    os.environ["TORCHTALK_CACHE_DIR"] = str(cache)
    try:
        st = find_source(tree)
        report = refresh(st, **refresh_kw)
        return st, Index(st.index_path, st.root), report
    finally:
        if old is None:
            os.environ.pop("TORCHTALK_CACHE_DIR", None)
        else:
            os.environ["TORCHTALK_CACHE_DIR"] = old


@pytest.fixture(scope="session")
def real_index(tmp_path_factory):
    """The real tree, indexed once per test session (skips when not configured)."""
    src = real_source()
    if src is None:
        pytest.skip("set TORCHTALK_TEST_SOURCE to a PyTorch 2.6.0 source tree (or run `torchtalk quickstart`) "
                    "to run integration tests")
    cache = Path(os.environ.get("TORCHTALK_TEST_CACHE") or tmp_path_factory.mktemp("real-cache"))
    return build_index(src, cache)[1]


@pytest.fixture
def py_indexed(tmp_path):
    """(tree, Index): the fixture tree plus a sliver of torch/ and test/ (tests/fixtures/tree_py)."""
    from torchtalk.index.indexer import refresh
    from torchtalk.source.tree import find_source
    from torchtalk.store.reader import Index

    dest = tmp_path / "pytorch"
    shutil.copytree(FIXTURE_TREE, dest)
    shutil.copytree(FIXTURE_TREE.parent / "tree_py", dest, dirs_exist_ok=True)
    st = find_source(dest)
    refresh(st, workers=1, codegen=False)
    ix = Index(st.index_path, st.root)
    yield dest, ix
    ix.close()
