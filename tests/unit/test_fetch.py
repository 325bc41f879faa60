"""Tests of torchtalk.source.fetch, without network access.

The Debian route is exercised end to end with a fake ``apt-get`` (a script that
"downloads" a tarball made by the test), the git route with a local repository.
"""

from __future__ import annotations

import hashlib
import io
import os
import shutil
import subprocess
import tarfile
from pathlib import Path

import pytest

from torchtalk.source import fetch
from torchtalk.source.fetch import (
    KNOWN_VERSIONS,
    MARKER,
    DebianSource,
    FetchError,
    debian_source_for,
    fetch_source,
    is_valid_tree,
    read_apt_mirrors,
)

NO_GIT = None  # git_url=None: skip the git route

# --------------------------------------------------------------------------- apt config


def write(p: Path, text: str) -> Path:
    p.parent.mkdir(parents=True, exist_ok=True)
    p.write_text(text)
    return p


def test_mirrors_from_deb822_sources(tmp_path):
    etc = tmp_path / "apt"
    write(etc / "sources.list.d/debian.sources", """\
Types: deb
# a comment
URIs: http://mirror.example/debian
Suites: bookworm bookworm-updates
Components: main
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg

Types: deb
URIs: http://mirror.example/debian-security
Suites: bookworm-security
Components: main
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg
""")
    write(etc / "sources.list.d/other.sources", """\
Types: deb
URIs: https://vendor.example/apt
Suites: nodistro
Components: main

Types: deb
Enabled: no
URIs: http://disabled.example/debian
Suites: trixie
""")
    write(etc / "sources.list.d/ignored.list.disabled-by-admin", "deb http://ignored.example/debian bookworm main\n")
    assert read_apt_mirrors(etc) == ["http://mirror.example/debian", "https://vendor.example/apt"]


def test_mirrors_from_one_line_sources_list(tmp_path):
    etc = tmp_path / "apt"
    write(etc / "sources.list", """\
# deb http://commented.example/debian bookworm main
deb [arch=amd64 signed-by=/usr/share/keyrings/debian-archive-keyring.gpg] http://one.example/debian/ bookworm main
deb http://security.example/debian-security bookworm-security main
deb-src http://one.example/debian bookworm main
deb http://two.example/debian trixie main contrib
""")
    assert read_apt_mirrors(etc) == ["http://one.example/debian", "http://two.example/debian"]


def test_mirrors_deb822_before_list_and_missing_config(tmp_path):
    etc = tmp_path / "apt"
    assert read_apt_mirrors(etc) == []
    write(etc / "sources.list", "deb http://listed.example/debian bookworm main\n")
    write(etc / "sources.list.d/debian.sources", "Types: deb\nURIs: http://deb822.example/debian\nSuites: bookworm\n")
    assert read_apt_mirrors(etc) == ["http://deb822.example/debian", "http://listed.example/debian"]


def test_machine_apt_config_parses():
    # whatever this machine has, parsing must not fail and never returns security mirrors
    assert all("security" not in m for m in read_apt_mirrors())


# --------------------------------------------------------------------------- versions


def test_version_mapping():
    assert debian_source_for("2.6.0").suite == "trixie"
    assert debian_source_for("1.13.1").suite == "bookworm"
    assert debian_source_for("v2.6.0") == KNOWN_VERSIONS["2.6.0"]
    assert KNOWN_VERSIONS["2.6.0"].orig == "pytorch_2.6.0+dfsg.orig.tar.xz"
    assert KNOWN_VERSIONS["1.13.1"].orig == "pytorch_1.13.1+dfsg.orig.tar.xz"
    for v in ("2.6.0", "1.13.1"):
        assert len(KNOWN_VERSIONS[v].sha256) == 64


def test_unknown_version_lists_known_ones(tmp_path, monkeypatch):
    def no_network(*a, **k):  # an unknown version must fail before any download
        raise AssertionError("subprocess used")

    monkeypatch.setattr(subprocess, "run", no_network)
    with pytest.raises(FetchError) as ei:
        fetch_source("3.99.0", tmp_path / "t")
    msg = str(ei.value)
    assert "3.99.0" in msg and "2.6.0" in msg and "1.13.1" in msg
    assert not (tmp_path / "t").exists()


def test_default_dest_is_in_the_user_cache(monkeypatch, tmp_path):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    d = fetch.default_dest("2.6.0")
    assert d.name == "pytorch-2.6.0"
    assert d.parent.name == "pytorch-source"
    assert "torchtalk" in d.parts


# --------------------------------------------------------------------------- reuse


def make_valid_tree(p: Path) -> Path:
    write(p / MARKER, "- func: atan2(Tensor self, Tensor other) -> Tensor\n")
    return p


def test_existing_tree_is_reused_without_network(tmp_path, monkeypatch):
    dest = make_valid_tree(tmp_path / "pytorch-2.6.0")
    (dest / "mine.txt").write_text("user file")

    def no_network(*a, **k):
        raise AssertionError("subprocess used")

    monkeypatch.setattr(subprocess, "run", no_network)
    msgs: list[str] = []
    assert fetch_source("2.6.0", dest, msgs.append) == dest.absolute()
    assert (dest / "mine.txt").read_text() == "user file"
    assert any("existing" in m for m in msgs)


# --------------------------------------------------------------------------- Debian route with a fake apt-get

FAKE_APT = """#!/bin/sh
# fake apt-get: logs its arguments; "source" copies $FAKE_TARBALL into the cwd
echo "$@" >> "$FAKE_LOG"
for a in "$@"; do
  case "$a" in Dir::Etc::SourceList=*) cat "${a#Dir::Etc::SourceList=}" >> "$FAKE_LOG";; esac
done
for a in "$@"; do
  case "$a" in
    update) [ -n "$FAKE_UPDATE_FAIL" ] && { echo "E: fake update failure" >&2; exit 100; }; exit 0;;
    source) [ -n "$FAKE_TARBALL" ] && cp "$FAKE_TARBALL" "./$FAKE_NAME";
            echo "E: Failed to fetch the debian tarball" >&2; exit 100;;
  esac
done
exit 1
"""


def make_tarball(path: Path, top: str = "pytorch-9.9.9", valid: bool = True) -> str:
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w:xz") as tf:
        files = {f"{top}/README.md": b"PyTorch\n", f"{top}/c10/core/TensorImpl.h": b"// c10\n"}
        if valid:
            files[f"{top}/{MARKER}"] = b"- func: atan2(Tensor self, Tensor other) -> Tensor\n"
        for name, data in files.items():
            ti = tarfile.TarInfo(name)
            ti.size = len(data)
            ti.mode = 0o644
            tf.addfile(ti, io.BytesIO(data))
    path.write_bytes(buf.getvalue())
    return hashlib.sha256(buf.getvalue()).hexdigest()


@pytest.fixture
def fake_debian(tmp_path, monkeypatch):
    """A fake apt-get, a fake apt config and a fake version 9.9.9; returns a dict."""
    bindir = tmp_path / "bin"
    bindir.mkdir()
    apt = bindir / "apt-get"
    apt.write_text(FAKE_APT)
    apt.chmod(0o755)
    name = "pytorch_9.9.9+dfsg.orig.tar.xz"
    tarball = tmp_path / "upstream" / name
    tarball.parent.mkdir()
    sha = make_tarball(tarball)
    log = tmp_path / "apt.log"
    monkeypatch.setenv("FAKE_LOG", str(log))
    monkeypatch.setenv("FAKE_TARBALL", str(tarball))
    monkeypatch.setenv("FAKE_NAME", name)
    etc = tmp_path / "etc-apt"
    write(etc / "sources.list.d/debian.sources",
          "Types: deb\nURIs: http://mirror.example/debian\nSuites: bookworm\nComponents: main\n")
    known = {"9.9.9": DebianSource(suite="forky", orig=name, sha256=sha, top="pytorch-9.9.9")}
    dest_root = tmp_path / "cache"
    dest_root.mkdir()
    return {"apt_get": str(apt), "etc": etc, "known": known, "log": log, "tarball": tarball,
            "dest": dest_root / "pytorch-9.9.9", "name": name}


def run_fetch(fd, **kw):
    args = dict(git_url=NO_GIT, etc_apt=fd["etc"], apt_get=fd["apt_get"], known=fd["known"])
    args.update(kw)
    return fetch_source("9.9.9", fd["dest"], **args)


def temp_leftovers(dest: Path) -> list[str]:
    return sorted(p.name for p in dest.parent.glob(f".{dest.name}.fetch-*"))


def test_debian_route_end_to_end(fake_debian):
    msgs: list[str] = []
    tree = run_fetch(fake_debian, progress=msgs.append)
    assert tree == fake_debian["dest"]
    assert is_valid_tree(tree)
    assert (tree / "c10/core/TensorImpl.h").read_text() == "// c10\n"
    log = fake_debian["log"].read_text()
    # a private apt state, the mirror from the (fake) machine config, the right suite
    assert "deb-src" in log and "http://mirror.example/debian forky main" in log
    for opt in ("Dir::State::Lists=", "Dir::Cache=", "Dir::Etc::SourceList=", "Debug::NoLocking=1",
                "APT::Sandbox::User=", "Dir::Etc::SourceParts="):
        assert opt in log
    assert "source --download-only pytorch/forky" in log
    assert "/var/lib/apt" not in log
    assert any("sha256" in m for m in msgs)
    assert temp_leftovers(tree) == []
    # idempotent: the second call reuses the tree
    fake_debian["log"].write_text("")
    assert run_fetch(fake_debian) == tree
    assert fake_debian["log"].read_text() == ""


def test_top_directory_is_found_even_if_named_differently(fake_debian):
    make_tarball(fake_debian["tarball"], top="pytorch-v9.9.9")
    known = {"9.9.9": dataclass_replace(fake_debian["known"]["9.9.9"], sha256=None)}
    assert is_valid_tree(run_fetch(fake_debian, known=known))


def dataclass_replace(obj, **kw):
    import dataclasses

    return dataclasses.replace(obj, **kw)


def test_sha_mismatch_fails_and_leaves_nothing(fake_debian):
    known = {"9.9.9": dataclass_replace(fake_debian["known"]["9.9.9"], sha256="0" * 64)}
    with pytest.raises(FetchError) as ei:
        run_fetch(fake_debian, known=known)
    msg = str(ei.value)
    assert "sha256 mismatch" in msg and "Debian source package pytorch/forky" in msg
    assert not fake_debian["dest"].exists()
    assert temp_leftovers(fake_debian["dest"]) == []


def test_corrupt_tarball_fails_and_leaves_nothing(fake_debian):
    fake_debian["tarball"].write_bytes(b"this is not an xz tarball")
    known = {"9.9.9": dataclass_replace(fake_debian["known"]["9.9.9"], sha256=None)}
    with pytest.raises(FetchError) as ei:
        run_fetch(fake_debian, known=known)
    assert "tar failed" in str(ei.value)
    assert not fake_debian["dest"].exists()
    assert temp_leftovers(fake_debian["dest"]) == []


def test_tarball_without_tree_fails(fake_debian):
    sha = make_tarball(fake_debian["tarball"], valid=False)
    known = {"9.9.9": dataclass_replace(fake_debian["known"]["9.9.9"], sha256=sha)}
    with pytest.raises(FetchError) as ei:
        run_fetch(fake_debian, known=known)
    assert MARKER in str(ei.value)
    assert not fake_debian["dest"].exists()


def test_download_missing_names_what_was_tried(fake_debian, monkeypatch):
    monkeypatch.setenv("FAKE_TARBALL", "")
    with pytest.raises(FetchError) as ei:
        run_fetch(fake_debian, git_url="file:///nonexistent/torchtalk-test-repo")
    msg = str(ei.value)
    assert "git clone --depth 1 --branch v9.9.9 file:///nonexistent/torchtalk-test-repo" in msg
    assert "did not download pytorch_9.9.9+dfsg.orig.tar.xz" in msg
    assert "http://mirror.example/debian" in msg
    assert "Failed to fetch" in msg


def test_apt_update_failure_is_reported(fake_debian, monkeypatch):
    monkeypatch.setenv("FAKE_UPDATE_FAIL", "1")
    with pytest.raises(FetchError) as ei:
        run_fetch(fake_debian)
    assert "apt-get update failed: E: fake update failure" in str(ei.value)


def test_no_mirror_and_no_apt_get(fake_debian, tmp_path):
    with pytest.raises(FetchError) as ei:
        run_fetch(fake_debian, etc_apt=tmp_path / "empty")
    assert "no Debian mirror found" in str(ei.value)
    with pytest.raises(FetchError) as ei:
        run_fetch(fake_debian, apt_get=str(tmp_path / "no-apt-get"))
    assert "not found" in str(ei.value)


def test_empty_dest_is_used_and_a_foreign_dest_is_never_touched(fake_debian):
    dest = fake_debian["dest"]
    dest.mkdir()
    assert is_valid_tree(run_fetch(fake_debian))

    # a non-empty directory that is not a tree (a user's directory, or a copy some
    # other tool left half done) is refused before any download, and left as it was
    shutil.rmtree(dest)
    write(dest / "notes/mine.txt", "precious")
    fake_debian["log"].write_text("")
    with pytest.raises(FetchError) as ei:
        run_fetch(fake_debian)
    assert "not empty" in str(ei.value) and str(dest / "pytorch-9.9.9") in str(ei.value)
    assert (dest / "notes/mine.txt").read_text() == "precious"
    assert fake_debian["log"].read_text() == ""
    assert temp_leftovers(dest) == []

    shutil.rmtree(dest)
    write(dest, "a file")
    with pytest.raises(FetchError):
        run_fetch(fake_debian)
    assert dest.read_text() == "a file"


def test_stale_temp_dirs_of_killed_fetches_are_removed(fake_debian):
    dest = fake_debian["dest"]
    stale = dest.parent / f".{dest.name}.fetch-killed"
    write(stale / "extract/pytorch-9.9.9/README.md", "half")
    (stale / "pid").write_text("999999999")  # no such process
    live = dest.parent / f".{dest.name}.fetch-running"
    write(live / "pid", str(os.getppid()))  # a live process: left alone
    run_fetch(fake_debian)
    assert not stale.exists()
    assert live.exists()


def test_place_tree_is_a_rename_and_keeps_a_concurrent_winner(tmp_path):
    work = tmp_path / "work"
    work.mkdir()
    src = make_valid_tree(work / "new")
    inode = src.stat().st_ino
    dest = tmp_path / "dest"
    assert fetch._place_tree(src, dest, work) == dest
    assert dest.stat().st_ino == inode  # renamed, not copied
    # a valid tree already there wins; the new one stays in work (removed with it)
    src2 = make_valid_tree(work / "new2")
    assert fetch._place_tree(src2, dest, work) == dest
    assert dest.stat().st_ino == inode


# --------------------------------------------------------------------------- git route (local repository)


@pytest.mark.skipif(shutil.which("git") is None, reason="git not installed")
def test_git_route_with_a_local_repository(tmp_path, fake_debian):
    repo = tmp_path / "repo"
    make_valid_tree(repo)
    env = dict(os.environ, GIT_AUTHOR_NAME="t", GIT_AUTHOR_EMAIL="t@example.invalid",
               GIT_COMMITTER_NAME="t", GIT_COMMITTER_EMAIL="t@example.invalid")
    for cmd in (["init", "-q"], ["add", "."], ["commit", "-q", "-m", "r"], ["tag", "v9.9.9"]):
        subprocess.run(["git", *cmd], cwd=repo, env=env, check=True)
    fake_debian["log"].write_text("")
    msgs: list[str] = []
    tree = run_fetch(fake_debian, git_url=str(repo), progress=msgs.append)
    assert is_valid_tree(tree)
    assert (tree / ".git").is_dir()
    assert fake_debian["log"].read_text() == ""  # Debian route not needed
    assert any("git clone --depth 1 --branch v9.9.9" in m for m in msgs)


@pytest.mark.skipif(shutil.which("git") is None, reason="git not installed")
def test_git_missing_tag_falls_back_to_debian(tmp_path, fake_debian):
    repo = tmp_path / "repo"
    make_valid_tree(repo)
    env = dict(os.environ, GIT_AUTHOR_NAME="t", GIT_AUTHOR_EMAIL="t@example.invalid",
               GIT_COMMITTER_NAME="t", GIT_COMMITTER_EMAIL="t@example.invalid")
    for cmd in (["init", "-q"], ["add", "."], ["commit", "-q", "-m", "r"]):
        subprocess.run(["git", *cmd], cwd=repo, env=env, check=True)
    msgs: list[str] = []
    tree = run_fetch(fake_debian, git_url=str(repo), progress=msgs.append)
    assert (tree / "c10/core/TensorImpl.h").is_file()  # came from the tarball
    # A route that failed is not reported when the next one succeeds (it reads like an error).
    assert not any("fail" in m or "no tag" in m for m in msgs), msgs
    assert any(m.startswith("trying Debian source package pytorch/forky") for m in msgs), msgs


def test_a_fetched_tree_reports_the_release_it_came_from(fake_debian, monkeypatch, tmp_path):
    """version.txt of a release says e.g. 2.6.0a0; the fetch records the release, and status reports it."""
    from torchtalk.source.tree import RELEASE_FILE, SourceTree
    tree = run_fetch(fake_debian)
    (tree / "version.txt").write_text("9.9.9a0\n")
    assert (tree / RELEASE_FILE).read_text() == "9.9.9\n"
    assert SourceTree(tree).version == "9.9.9"
    (tree / RELEASE_FILE).unlink()
    assert SourceTree(tree).version == "9.9.9a0"  # a tree we did not fetch: what the tree says

    # A tree that an older TorchTalk fetched into the default place gets the record when it is reused.
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    dest = fetch.default_dest("2.6.0")
    make_valid_tree(dest)
    assert fetch_source("2.6.0") == dest and SourceTree(dest).version == "2.6.0"
