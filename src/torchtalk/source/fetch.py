"""Get a PyTorch release source tree for a user who has none.

``fetch_source("2.6.0")`` returns the path of a complete tree (it has
``aten/src/ATen/native/native_functions.yaml``), by default
``<user cache dir>/torchtalk/pytorch-source/pytorch-2.6.0``.  It tries, in order:

1. ``git clone --depth 1 --branch v<version>`` of PyTorch's public repository
   (no submodules), after a short reachability probe (``git ls-remote``), with
   ``GIT_TERMINAL_PROMPT=0`` so it never waits for a password;
2. Debian's source package of ``pytorch`` (unchanged upstream code minus the vendored
   ``third_party/``): ``apt-get source --download-only`` run with a private apt state
   directory (its own sources list, lists and cache in a temporary directory, no
   locking, no root needed) against the Debian mirror that this machine's own apt
   configuration names, then the upstream tarball's sha256 is checked and it is
   extracted with ``tar``.

Every download and extraction happens in a temporary directory beside the destination
and the finished tree is renamed into place, so a killed fetch never leaves half a tree
at the final path (the next fetch removes the leftovers).  An existing valid tree is
reused without any network access.
"""

from __future__ import annotations

import os
import shutil
import tempfile
import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path

from .fetch_debian import KNOWN_VERSIONS, DebianSource, debian_source_for, read_apt_mirrors, try_debian
from .fetch_steps import MARKER, AttemptFailed, FetchError, Progress, is_valid_tree, norm_version, run, say, tail
from .tree import RELEASE_FILE

__all__ = [
    "DEFAULT_VERSION",
    "GIT_URL",
    "KNOWN_VERSIONS",
    "DebianSource",
    "FetchError",
    "debian_source_for",
    "default_dest",
    "fetch_source",
    "is_valid_tree",
    "read_apt_mirrors",
]

DEFAULT_VERSION = "2.6.0"
GIT_URL = "https://github.com/pytorch/pytorch"


# Timeouts (seconds).  The probe is short: it decides whether git is usable at all.
GIT_PROBE_TIMEOUT = 20.0
GIT_CLONE_TIMEOUT = 1800.0


# --------------------------------------------------------------------------- helpers


def default_dest(version: str = DEFAULT_VERSION) -> Path:
    import platformdirs

    return Path(platformdirs.user_cache_dir("torchtalk")) / "pytorch-source" / f"pytorch-{norm_version(version)}"


def _write_release(tree: Path, version: str) -> None:
    """Record which release the tree is (its version.txt says e.g. "2.6.0a0"); SourceTree.version reads it."""
    try:
        (Path(tree) / RELEASE_FILE).write_text(version + "\n", encoding="utf-8")
    except OSError:
        pass  # only the reported version is at stake


# --------------------------------------------------------------------------- apt config


# --------------------------------------------------------------------------- placement


def _remove_stale(dest: Path) -> None:
    """Remove temporary directories left beside dest by killed fetches."""
    try:
        stale = list(dest.parent.glob(f".{dest.name}.fetch-*"))
    except OSError:
        return
    for d in stale:
        try:
            pid = int((d / "pid").read_text().strip())
        except (OSError, ValueError):
            pid = 0
        if pid and pid != os.getpid():
            try:
                os.kill(pid, 0)
                continue  # another fetch is still running
            except ProcessLookupError:
                pass
            except PermissionError:
                continue
        elif pid == os.getpid():
            continue
        shutil.rmtree(d, ignore_errors=True)


def _check_dest_free(dest: Path, version: str = "VERSION") -> None:
    """FetchError if dest holds something that is not ours to replace."""
    if dest.is_symlink() or (dest.exists() and not dest.is_dir()):
        raise FetchError(f"{dest} exists and is not a PyTorch source tree; remove it or choose another path")
    if dest.is_dir():
        try:
            empty = next(dest.iterdir(), None) is None
        except OSError:
            empty = False
        if not empty:
            raise FetchError(
                f"{dest} exists, is not empty and is not a PyTorch source tree (no {MARKER}); "
                f"give a path that does not exist yet (the tree is created there), "
                f"e.g. {dest / f'pytorch-{version}'}, "
                "or remove it"
            )


def _place_tree(src: Path, dest: Path, work: Path) -> Path:
    """Rename the finished tree ``src`` to ``dest`` atomically (same file system).

    An empty directory at dest is replaced.  If a valid tree appeared at dest
    meanwhile (a concurrent fetch), it is kept and ``src`` is discarded.
    """
    if is_valid_tree(dest):
        return dest
    _check_dest_free(dest)
    if dest.is_dir() and not dest.is_symlink():
        dest.rmdir()  # empty (checked above)
    try:
        os.rename(src, dest)
    except OSError:
        if is_valid_tree(dest):  # lost a race with another fetch: theirs is as good
            return dest
        raise
    return dest


# --------------------------------------------------------------------------- git


def _git_env() -> dict[str, str]:
    env = dict(os.environ)
    env["GIT_TERMINAL_PROMPT"] = "0"
    env["GIT_ASKPASS"] = "true"
    env["SSH_ASKPASS"] = "true"
    env.pop("GIT_DIR", None)
    env.pop("GIT_WORK_TREE", None)
    return env


def _try_git(version: str, url: str, work: Path, progress: Progress | None,
             probe_timeout: float, clone_timeout: float) -> Path:
    if shutil.which("git") is None:
        raise AttemptFailed("git is not installed")
    tag = f"v{version}"
    env = _git_env()
    base = ["git", "-c", "credential.helper=", "-c", "http.lowSpeedLimit=1000",
            "-c", "http.lowSpeedTime=60", "-c", "protocol.version=2"]
    say(progress, f"checking {url} for tag {tag}")
    cp = run(base + ["ls-remote", "--exit-code", url, f"refs/tags/{tag}"],
              timeout=probe_timeout, env=env, what="git ls-remote")
    if cp.returncode == 2:
        raise AttemptFailed(f"no tag {tag} in {url}")
    if cp.returncode != 0:
        raise AttemptFailed(tail(cp.stderr) or f"git ls-remote exited with status {cp.returncode}")
    dst = work / "git"
    say(progress, f"git clone --depth 1 --branch {tag} {url}")
    cp = run(base + ["clone", "--quiet", "--depth", "1", "--branch", tag, "--single-branch",
                      "--no-recurse-submodules", url, str(dst)],
              timeout=clone_timeout, env=env, what="git clone")
    if cp.returncode != 0:
        raise AttemptFailed(tail(cp.stderr) or f"git clone exited with status {cp.returncode}")
    if not is_valid_tree(dst):
        raise AttemptFailed(f"the clone has no {MARKER}")
    return dst


# --------------------------------------------------------------------------- Debian


# --------------------------------------------------------------------------- entry point


def fetch_source(
    version: str = DEFAULT_VERSION,
    dest: Path | None = None,
    progress: Callable[[str], None] | None = None,
    *,
    git_url: str | None = GIT_URL,
    etc_apt: Path = Path("/etc/apt"),
    apt_get: str = "apt-get",
    mirrors: Sequence[str] | None = None,
    known: Mapping[str, DebianSource] | None = None,
    keyring: Path | None = None,
    git_probe_timeout: float = GIT_PROBE_TIMEOUT,
    git_clone_timeout: float = GIT_CLONE_TIMEOUT,
) -> Path:
    """Return the path of a PyTorch ``version`` source tree, fetching it if needed.

    ``dest`` is the tree's final path (default: :func:`default_dest`).  An existing
    valid tree there is returned at once.  Raises :class:`FetchError` for an unknown
    version (listing the known ones) or when every route failed (naming each route
    and why).  Keyword arguments exist for tests and special setups: ``git_url=None``
    skips git; ``etc_apt``/``mirrors`` choose the Debian mirror; ``known`` replaces
    the version table.
    """
    v = norm_version(version)
    src = debian_source_for(v, known)
    dest = Path(dest) if dest is not None else default_dest(v)
    dest = dest.expanduser().absolute()
    if is_valid_tree(dest):
        say(progress, f"using the existing tree {dest}")
        if dest == default_dest(v).expanduser().absolute() and not (dest / RELEASE_FILE).exists():
            _write_release(dest, v)  # fetched by an older TorchTalk: the place says which release it is
        return dest
    _check_dest_free(dest, v)  # before any download
    try:
        dest.parent.mkdir(parents=True, exist_ok=True)
    except OSError as e:
        raise FetchError(f"cannot create {dest.parent}: {e}") from None
    _remove_stale(dest)
    try:
        work = Path(tempfile.mkdtemp(prefix=f".{dest.name}.fetch-", dir=dest.parent))
    except OSError as e:
        raise FetchError(f"cannot create a temporary directory in {dest.parent}: {e}") from None
    attempts: list[str] = []
    t0 = time.monotonic()
    try:
        (work / "pid").write_text(str(os.getpid()))
        routes: list[tuple[str, Callable[[], Path]]] = []
        if git_url:
            routes.append((
                f"git clone --depth 1 --branch v{v} {git_url}",
                lambda: _try_git(v, git_url, work, progress, git_probe_timeout, git_clone_timeout),
            ))
        routes.append((
            f"Debian source package pytorch/{src.suite} ({src.orig})",
            lambda: try_debian(v, src, work, progress, Path(etc_apt), apt_get, mirrors, keyring),
        ))
        for i, (label, route) in enumerate(routes):
            if i:  # why the previous route failed is said only if every route fails (below)
                say(progress, f"trying {label}")
            try:
                tree = route()
            except AttemptFailed as e:
                attempts.append(f"{label}: {e}")
                continue
            _write_release(tree, v)
            placed = _place_tree(tree, dest, work)
            say(progress, f"PyTorch {v} source tree ready at {placed} ({time.monotonic() - t0:.1f} s)")
            return placed
        raise FetchError(f"could not fetch PyTorch {v} source into {dest}; every route failed: " + "; ".join(attempts))
    finally:
        shutil.rmtree(work, ignore_errors=True)
