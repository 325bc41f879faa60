"""Path arguments: test_file_info (the one tool that takes a path) and --source.

Traversal, absolute paths outside the tree and links that lead outside are refused with an error
naming the argument; the file outside is never opened (an audit hook watches every open() of this
process while the tree is indexed and queried) and its contents never reach any answer or the index.
An absolute path inside the tree, to an indexed test file, is accepted.
"""

from __future__ import annotations

import asyncio
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from mcp import Client

from torchtalk.errors import BadArgument, TorchTalkError
from torchtalk.query.results import NotFound
from torchtalk.server import build_server
from torchtalk.tools import all_tools, get_tool, run

from ..conftest import build_index

FIXTURE_TREE = Path(__file__).parents[1] / "fixtures" / "tree"
SECRET = "TT_SECRET_7f3a9c_DO_NOT_LEAK"
IS_ROOT = hasattr(os, "geteuid") and os.geteuid() == 0

SAMPLE_TEST = '''\
import torch
from torch.testing._internal.common_utils import TestCase, run_tests


class TestSample(TestCase):
    def test_relu_sample(self):
        torch.relu(torch.ones(2))

    def test_softmax_sample(self):
        torch.softmax(torch.ones(2), 0)


if __name__ == "__main__":
    run_tests()
'''

SECRET_FILE = f'''\
# {SECRET}
from torch.testing._internal.common_utils import TestCase


class Test{SECRET}(TestCase):
    def test_{SECRET}(self):
        assert "{SECRET}"
'''

# ------------------------------------------------------------------ watching open()

_WATCHED: list[str] = []  # real paths of directories whose files must never be opened
_OPENED: list[str] = []


def _audit(event: str, args) -> None:
    if event != "open" or not _WATCHED:
        return
    path = args[0]
    if isinstance(path, int):
        return
    try:
        real = os.path.realpath(os.fsdecode(path))
    except Exception:
        return
    if any(real == w or real.startswith(w + os.sep) for w in _WATCHED):
        _OPENED.append(real)


sys.addaudithook(_audit)


# ------------------------------------------------------------------ the tree


@pytest.fixture(scope="module")
def hostile(tmp_path_factory):
    """A copy of the fixture tree with test files, and links in test/ that lead outside it."""
    base = tmp_path_factory.mktemp("paths")
    outside = base / "outside"
    outside.mkdir()
    (outside / "secret.py").write_text(SECRET_FILE)
    (outside / "noperm.py").write_text(SECRET_FILE)
    os.chmod(outside / "noperm.py", 0)
    (outside / "sub").mkdir()
    (outside / "sub" / "test_deep.py").write_text(SECRET_FILE)

    tree = base / "pytorch"
    shutil.copytree(FIXTURE_TREE, tree)
    test = tree / "test"
    test.mkdir()
    (test / "test_sample.py").write_text(SAMPLE_TEST)
    (test / "test_leak.py").symlink_to(outside / "secret.py")            # file link out (absolute)
    (test / "test_rel_leak.py").symlink_to(Path("../..") / "outside" / "secret.py")  # file link out (relative)
    (test / "leakdir").symlink_to(outside / "sub")                       # directory link out
    (test / "test_noperm.py").symlink_to(outside / "noperm.py")          # link out to an unreadable file
    (test / "test_gone_out.py").symlink_to(outside / "missing.py")       # broken link out
    (test / "test_alias.py").symlink_to("test_sample.py")                # link inside: fine
    (test / "test_loop.py").symlink_to("test_loop.py")                   # a link to itself
    (test / "test_dir.py").mkdir()                                       # a directory named like a file
    (base / "alias").symlink_to(tree)                                    # the tree under another name

    # The tree's test/ dir is watched too, as a canary: the hook must see the indexer read test_sample.py.
    _WATCHED[:] = [os.path.realpath(outside), os.path.realpath(test)]
    _OPENED.clear()
    # In this process: the audit hook sees every read.
    st, ix, report = build_index(tree, base / "cache", workers=1, codegen=False)
    assert os.path.realpath(test / "test_sample.py") in _OPENED, "the audit hook saw no read by the indexer"
    yield {"tree": tree, "root": st.root, "outside": outside, "ix": ix, "report": report, "base": base}
    ix.close()
    _WATCHED.clear()
    os.chmod(outside / "noperm.py", 0o644)


def _opened_outside(h) -> list[str]:
    out = os.path.realpath(h["outside"])
    return [p for p in _OPENED if p == out or p.startswith(out + os.sep)]


def _mcp_calls(ix, calls: list[tuple[str, dict]]) -> list[tuple[bool, str]]:
    async def go():
        out = []
        async with Client(build_server(ix)) as c:
            for name, args in calls:
                r = await asyncio.wait_for(c.call_tool(name, args), 30)
                out.append((bool(r.is_error), "\n".join(getattr(x, "text", "") for x in r.content)))
        return out
    return asyncio.run(go())


def _direct(ix, **kw) -> tuple[bool, str]:
    try:
        _res, text = run(get_tool("test_file_info"), ix, **kw)
        return False, text
    except BadArgument as exc:
        return True, str(exc)


# ------------------------------------------------------------------ refused


TRAVERSAL = [
    "../../etc/passwd", "test/../../x", "..", "../", "./..", "test/..",
    "..\\..\\etc\\passwd", "test\\..\\..\\x", "../pytorch/test/test_sample.py", "test/../../outside/secret.py",
    "....//..//x/../..", "a/b/../../../c",
]


@pytest.mark.parametrize("path", TRAVERSAL)
def test_traversal_is_refused(hostile, path):
    ix = hostile["ix"]
    is_error, text = _direct(ix, file_path=path)
    assert is_error, f"{path!r} was not refused: {text[:300]}"
    assert "file_path" in text and "'..' is not allowed" in text, text
    [(mcp_error, mcp_text)] = _mcp_calls(ix, [("test_file_info", {"file_path": path})])
    assert mcp_error and "file_path" in mcp_text and "Traceback" not in mcp_text


def _outside_paths(h) -> list[str]:
    root, outside = str(h["root"]), str(h["outside"])
    return [
        "/etc/passwd", "/etc/shadow", "/", "//etc/passwd", "/proc/self/environ", "~/.ssh/id_rsa", "~root/.bashrc",
        "~", f"{outside}/secret.py", f"{outside}/noperm.py", f"{outside}/sub/test_deep.py",
        f"{root}/../outside/secret.py", f"{root}/test/../../outside/secret.py",
        f"{root}/test/test_leak.py", f"{root}/test/leakdir/test_deep.py", f"{root}/test/test_noperm.py",
        f"{root}/test/test_gone_out.py", f"{root}x/test/test_sample.py", root + "-other/test_sample.py",
    ]


def test_absolute_paths_outside_the_tree_are_refused(hostile):
    ix = hostile["ix"]
    for path in _outside_paths(hostile):
        is_error, text = _direct(ix, file_path=path)
        assert is_error, f"{path!r} was not refused: {text[:300]}"
        assert "file_path" in text and ("outside the source tree" in text or "'..' is not allowed" in text), text
    results = _mcp_calls(ix, [("test_file_info", {"file_path": p}) for p in _outside_paths(hostile)])
    for path, (is_error, text) in zip(_outside_paths(hostile), results, strict=True):
        assert is_error and "file_path" in text and "Traceback" not in text, (path, text)


LINKS_OUT = ["test_leak", "test_leak.py", "test/test_leak.py", "test_rel_leak", "test/test_rel_leak.py",
             "leakdir/test_deep", "test/leakdir/test_deep.py", "leakdir/test_deep.py", "test_noperm",
             "test/test_noperm.py", "test_gone_out", "test/test_gone_out.py"]


@pytest.mark.parametrize("path", LINKS_OUT)
def test_links_that_lead_outside_are_refused(hostile, path):
    is_error, text = _direct(hostile["ix"], file_path=path)
    assert is_error, f"{path!r} was not refused: {text[:300]}"
    assert "file_path" in text and "outside the source tree" in text, text


def test_control_characters_in_paths_are_refused(hostile):
    ix = hostile["ix"]
    for path in ("/etc/passwd\x00", "test_sample\x00.py", "test/\x00../../etc/passwd", "\x1b[2Jtest_sample"):
        is_error, text = _direct(ix, file_path=path)
        assert is_error and "file_path" in text and "control characters" in text, (path, text)


def test_the_outside_files_are_never_opened_and_never_shown(hostile):
    """Index the tree, then ask every tool about the secret: it is nowhere, and no open() touched it."""
    ix, root = hostile["ix"], str(hostile["root"])
    calls = [("get_status", {})]
    for path in LINKS_OUT + _outside_paths(hostile) + TRAVERSAL + [SECRET, f"Test{SECRET}", f"test_{SECRET}"]:
        calls.append(("test_file_info", {"file_path": path}))
    for q in (SECRET, f"test_{SECRET}", f"Test{SECRET}"):
        calls += [("find_similar_tests", {"query": q}), ("search", {"query": q}), ("trace", {"function_name": q}),
                  ("trace_module", {"module_name": q}), ("list_modules", {"category": q}),
                  ("calls", {"function_name": q}), ("cuda_kernels", {"function_name": q})]
    calls += [("list_test_utils", {}), ("list_modules", {"category": "all"}),
              ("find_similar_tests", {"query": "test"}), ("find_similar_tests", {"query": "leak"})]
    results = _mcp_calls(ix, calls)
    for (name, args), (_is_error, text) in zip(calls, results, strict=True):
        shown = text.replace(repr(args.get("file_path", "")), "").replace(repr(args.get("query", "")), "")
        for v in args.values():
            shown = shown.replace(v, "")  # the query itself may be echoed; the file's contents may not
        assert SECRET not in shown, f"{name}({args}) showed the outside file's contents:\n{text[:1000]}"
        assert "Traceback" not in text
    assert _opened_outside(hostile) == [], f"files outside the tree were opened: {_opened_outside(hostile)}"
    # Nor is any of it in the index file.
    assert SECRET.encode() not in Path(ix.path).read_bytes()
    # The build lists each link out as skipped, and says why.
    skipped = "\n".join(hostile["report"].skipped)
    for rel in ("test/test_leak.py", "test/test_rel_leak.py", "test/test_noperm.py", "test/test_gone_out.py"):
        assert f"{rel}: symlink leads outside the tree" in skipped, skipped
    assert ix.one("SELECT count(*) FROM files WHERE path LIKE 'test/leakdir/%'")[0] == 0
    assert root  # (used above through _outside_paths)


def test_status_lists_the_refused_links(hostile):
    [(is_error, text)] = _mcp_calls(hostile["ix"], [("get_status", {})])
    assert not is_error
    assert "test/test_leak.py: skipped: symlink leads outside the tree" in text, text
    assert SECRET not in text


# ------------------------------------------------------------------ accepted


def test_relative_names_of_an_indexed_test_file_are_accepted(hostile):
    ix = hostile["ix"]
    for path in ("test_sample", "test_sample.py", "test/test_sample.py", "test/./test_sample.py",
                 "test//test_sample.py", "./test/test_sample.py", " test_sample ", "test\\test_sample.py"):
        is_error, text = _direct(ix, file_path=path)
        assert not is_error and "# test/test_sample.py: 2 tests in 1 classes" in text, (path, text)


def test_absolute_path_inside_the_tree_is_accepted(hostile):
    ix, root, base = hostile["ix"], hostile["root"], hostile["base"]
    for path in (f"{root}/test/test_sample.py", f"{root}/test/./test_sample.py", f"{root}//test/test_sample.py",
                 f"{root}/test/test_sample", f"{base}/alias/test/test_sample.py"):
        is_error, text = _direct(ix, file_path=path)
        assert not is_error, (path, text)
        assert "# test/test_sample.py: 2 tests in 1 classes" in text and "TestSample" in text, (path, text)
    [(is_error, text)] = _mcp_calls(ix, [("test_file_info", {"file_path": f"{root}/test/test_sample.py"})])
    assert not is_error and "TestSample  test/test_sample.py:5" in text, text


def test_absolute_path_inside_the_tree_to_a_non_test_file_is_not_found_not_shown(hostile):
    ix, root = hostile["ix"], hostile["root"]
    is_error, text = _direct(ix, file_path=f"{root}/aten/src/ATen/native/native_functions.yaml")
    assert not is_error and "No test file named" in text
    assert "func:" not in text


def test_a_link_inside_the_tree_is_accepted(hostile):
    is_error, text = _direct(hostile["ix"], file_path="test_alias")
    assert not is_error and "TestSample" in text, text


@pytest.mark.parametrize("path", ["test_loop", "test/test_loop.py", "test_dir", "test_dir.py"])
def test_paths_that_cannot_be_read_answer_cleanly(hostile, path):
    """A link to itself, a directory named like a test file: no exception, and no made-up content."""
    is_error, text = _direct(hostile["ix"], file_path=path)
    assert "Traceback" not in text
    if not is_error:
        assert "TestSample" not in text


def test_a_skipped_test_file_is_reported_as_skipped_not_as_empty(hostile):
    """test/test_loop.py is in the index only as 'skipped: broken symlink'; test_file_info should say so
    rather than describe it as a test file with 0 tests and a command to run it."""
    ix = hostile["ix"]
    status = ix.one("SELECT status FROM files WHERE path = 'test/test_loop.py'")
    assert status and "skipped" in status[0]
    is_error, text = _direct(ix, file_path="test_loop")
    assert is_error or "skipped" in text or "No test file" in text, \
        f"test_file_info describes a file the index skipped ({status[0]}) as if it were parsed:\n{text}"


def test_unreadable_outside_file_behind_a_link_leaks_no_exception(hostile):
    """outside/noperm.py has mode 000 (as root, reads would still succeed; it must not be read at all)."""
    ix = hostile["ix"]
    for path in ("test_noperm", f"{hostile['root']}/test/test_noperm.py", str(hostile["outside"] / "noperm.py")):
        is_error, text = _direct(ix, file_path=path)
        assert is_error and "file_path" in text
    assert not [p for p in _opened_outside(hostile) if p.endswith("noperm.py")]


def test_unreadable_test_file_inside_the_tree(tree, tmp_path):
    """A test file with mode 000 inside the tree: the build and test_file_info answer without an exception."""
    from torchtalk.index.indexer import refresh
    from torchtalk.source.tree import find_source
    from torchtalk.store.reader import Index

    (tree / "test").mkdir(exist_ok=True)
    locked = tree / "test" / "test_locked.py"
    locked.write_text(SAMPLE_TEST)
    os.chmod(locked, 0)
    try:
        st = find_source(tree)
        rep = refresh(st, workers=1, codegen=False)
        ix = Index(st.index_path, st.root)
        is_error, text = _direct(ix, file_path="test_locked")
        assert "Traceback" not in text
        if not IS_ROOT:  # root reads mode-000 files, so only a non-root run can see the refusal
            assert any("test/test_locked.py" in s and "unreadable" in s for s in rep.skipped), rep.skipped
            assert is_error or "unreadable" in text or "skipped" in text, text
    finally:
        os.chmod(locked, 0o644)


# ------------------------------------------------------------------ the CLI


def _tt(*args, cwd=None):
    return subprocess.run([sys.executable, "-m", "torchtalk", *args], capture_output=True, text=True,
                          env=dict(os.environ), cwd=cwd, timeout=300)


def test_cli_refuses_traversal_and_outside_paths_in_one_line(hostile):
    tree = hostile["tree"]
    env_cache = os.environ["TORCHTALK_CACHE_DIR"]
    assert env_cache
    for path in ("../../etc/passwd", "/etc/passwd", "test_leak"):
        r = _tt("test-file-info", path, "--source", str(tree))
        assert r.returncode == 2, (path, r.stdout, r.stderr)
        errors = [ln for ln in r.stderr.splitlines() if ln.startswith("error:")]
        assert len(errors) == 1 and "file_path" in errors[0] and "Traceback" not in r.stderr, r.stderr
        assert SECRET not in r.stdout + r.stderr


@pytest.mark.parametrize("source", ["/etc", "/", "../../../../../../etc", "/etc/passwd", "/nonexistent/x"])
def test_cli_source_outside_any_tree_is_a_one_line_error(tmp_path, source):
    r = _tt("trace", "relu", "--source", source, cwd=tmp_path)
    assert r.returncode == 2, (r.stdout, r.stderr)
    lines = [ln for ln in r.stderr.splitlines() if ln.strip()]
    assert len(lines) == 1 and lines[0].startswith("error:") and "Traceback" not in r.stderr, r.stderr


def test_every_tool_with_a_name_refuses_nothing_it_should_not(hostile):
    """Path-like names given to the name-taking tools are plain names: answered, never an exception."""
    ix = hostile["ix"]
    for tool in all_tools():
        for prm in tool.params:
            if prm.type is not str or prm.name == "file_path":
                continue
            for value in ("../../etc/passwd", "/etc/passwd", "~/.ssh/id_rsa", str(hostile["outside"] / "secret.py")):
                kw = {p.name: "relu" for p in tool.params if p.required}
                kw[prm.name] = value
                try:
                    _r, text = run(tool, ix, **kw)
                except TorchTalkError as exc:
                    text = str(exc)
                    assert prm.name in text
                assert SECRET not in text
    assert _opened_outside(hostile) == []


# ------------------------------------------------------------------ links at the top of the tree


def _build_watching(tree: Path, outside: Path):
    """Index ``tree`` in this process while the audit hook watches ``outside``."""
    from torchtalk.index.indexer import refresh
    from torchtalk.source.tree import find_source
    from torchtalk.store.reader import Index

    _WATCHED[:] = [os.path.realpath(outside)]
    _OPENED.clear()
    try:
        st = find_source(tree)
        rep = refresh(st, workers=1, codegen=False)
        opened = list(_OPENED)
    finally:
        _WATCHED.clear()
    return st, rep, Index(st.index_path, st.root), opened


def test_top_level_test_dir_linked_outside_is_not_indexed(tree, tmp_path):
    """README: "Symlinks are followed only when they stay inside the tree". test/ itself is such a link."""
    outside = tmp_path / "elsewhere"
    outside.mkdir()
    (outside / "test_secret.py").write_text(SECRET_FILE)
    (tree / "test").symlink_to(outside, target_is_directory=True)
    st, rep, ix, opened = _build_watching(tree, outside)
    assert opened == [], f"files outside the tree were read: {opened}"
    assert SECRET.encode() not in Path(ix.path).read_bytes(), "the outside file's contents are in the index"
    res, text = run(get_tool("find_similar_tests"), ix, query=SECRET)
    found = res.suggestions if isinstance(res, NotFound) else [t.name for t in res.tests]  # no test, no close name
    assert not any(SECRET in name for name in found), f"an outside file answers queries:\n{text[:600]}"
    ix.close()


def test_top_level_torch_dir_linked_outside_is_not_indexed(tree, tmp_path):
    outside = tmp_path / "elsewhere_torch"
    (outside / "nn").mkdir(parents=True)
    (outside / "nn" / "secret_mod.py").write_text(f"class {SECRET}:\n    pass\n")
    shutil.rmtree(tree / "torch")
    (tree / "torch").symlink_to(outside, target_is_directory=True)
    st, rep, ix, opened = _build_watching(tree, outside)
    assert opened == [], f"files outside the tree were read: {opened}"
    assert SECRET.encode() not in Path(ix.path).read_bytes()
    ix.close()


def test_ops_yaml_linked_outside_is_not_read(tree, tmp_path):
    """tools/autograd/derivatives.yaml as a link to a file outside the tree."""
    outside = tmp_path / "elsewhere_yaml"
    outside.mkdir()
    (outside / "derivatives.yaml").write_text(f"- name: relu(Tensor self) -> Tensor\n  self: {SECRET}(grad)\n")
    d = tree / "tools" / "autograd" / "derivatives.yaml"
    d.unlink()
    d.symlink_to(outside / "derivatives.yaml")
    st, rep, ix, opened = _build_watching(tree, outside)
    assert opened == [], f"files outside the tree were read: {opened}"
    _r, text = run(get_tool("trace"), ix, function_name="relu")
    assert SECRET not in text, text[:800]
    assert any("derivatives.yaml" in s and "outside" in s for s in rep.skipped), rep.skipped
    ix.close()
