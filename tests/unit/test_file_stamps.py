"""An edit that keeps a file's size and mtime is still seen (Note [File stamps]).

Before: the index compared (size, mtime_ns) only, so an edit of the same length with its mtime set back (``touch -r``
after editing, ``cp -p``, ``rsync -t``, tar) left the index answering from the old facts and ``status`` saying
"fresh". The stamp now holds ctime and inode too; a stamp that moved with the same content is hashed, not
re-extracted, so a tree whose every ctime and inode is new (restored with ``cp -a``) costs no re-extraction.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

from torchtalk.index.freshness import Freshness, walk_changes
from torchtalk.index.indexer import refresh
from torchtalk.source.files import list_files
from torchtalk.source.tree import find_source
from torchtalk.store.reader import Index

REL = "aten/src/ATen/native/SoftMax.cpp"


def _edit_keeping_size_and_mtime(path: Path, old: str, new: str, *, in_place: bool) -> None:
    assert len(old) == len(new)
    st = os.stat(path)
    data = path.read_text().replace(old, new)
    if in_place:  # the same inode: only the ctime moves
        path.write_text(data)
    else:  # written beside and renamed over it, as editors and `sed -i` save: a new inode
        tmp = path.with_name(path.name + ".new")
        tmp.write_text(data)
        os.replace(tmp, path)
    os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns))  # touch -r the original
    after = os.stat(path)
    assert (after.st_size, after.st_mtime_ns) == (st.st_size, st.st_mtime_ns)


def _functions(ix: Index) -> set[str]:
    return {r[0] for r in ix.q("SELECT name FROM cpp_symbol WHERE file_id = (SELECT id FROM files WHERE path = ?)",
                               (REL,))}


def test_an_edit_keeping_size_and_mtime_is_seen_by_the_refresh_and_the_freshness_check(indexed):
    tree, ix = indexed
    st = find_source(tree)
    assert "softmax_impl" in _functions(ix)
    fresh = Freshness(st.root, codegen=False)
    try:
        fresh.start()
        for round_, (old, new, in_place) in enumerate([("softmax_impl", "softmay_impl", True),
                                                        ("softmay_impl", "softmaz_impl", False)]):
            _edit_keeping_size_and_mtime(tree / REL, old, new, in_place=in_place)
            assert walk_changes(ix, st.root) == [REL], round_
            assert fresh.changed(ix) == [REL], round_
            report = refresh(st, workers=1, codegen=False)
            assert report.mode == "incremental" and report.parsed == 1, report
            ix.recheck()
            names = _functions(ix)
            assert new in names and old not in names, (round_, names)
            assert walk_changes(ix, st.root) == [] and fresh.changed(ix) == []
    finally:
        fresh.close()


def test_a_tree_restored_with_new_ctimes_and_inodes_is_hashed_not_re_extracted(indexed):
    tree, ix = indexed
    st = find_source(tree)
    entries = [e for e in list_files(st.root) if not e.skip]
    for e in entries:  # what `cp -a` of the tree back over it does: same content and mtime, new inode and ctime
        tmp = e.abspath + ".copy"
        shutil.copy2(e.abspath, tmp)
        os.replace(tmp, e.abspath)
    assert len(walk_changes(ix, st.root)) == len(entries)
    report = refresh(st, workers=1, codegen=False)
    assert report.mode == "incremental" and report.parsed == 0 and report.unchanged == len(entries), report
    ix.recheck()
    assert walk_changes(ix, st.root) == []  # the new stamps are recorded: the next refresh reads nothing
    assert refresh(st, workers=1, codegen=False).mode == "up-to-date"



def test_the_generators_inputs_hash_follows_an_edit_keeping_size_and_mtime(tree):
    """The generated layer is made again when an input changes so (Note [File stamps])."""
    from torchtalk.source.codegen.inputs import codegen_inputs_hash
    before = codegen_inputs_hash(tree)
    _edit_keeping_size_and_mtime(tree / "aten/src/ATen/native/native_functions.yaml", "relu", "rely", in_place=True)
    assert codegen_inputs_hash(tree) != before
