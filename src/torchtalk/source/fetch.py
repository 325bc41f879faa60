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

import dataclasses
import hashlib
import os
import pwd
import re
import shutil
import subprocess
import tarfile
import tempfile
import time
from pathlib import Path
from typing import Callable, Mapping, Sequence

from ..errors import SourceError
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
MARKER = "aten/src/ATen/native/native_functions.yaml"


class FetchError(SourceError):
    """A PyTorch source tree could not be obtained; the message says what was tried.

    A SourceError (hence a TorchTalkError): the CLI shows its message, no traceback.
    """


@dataclasses.dataclass(frozen=True)
class DebianSource:
    suite: str  # Debian suite whose source package has this upstream version
    orig: str  # the upstream ("orig") tarball's file name
    sha256: str | None  # its sha256 when known ("" / None: not verified)
    top: str = ""  # its top-level directory (found by searching when empty/wrong)


#: PyTorch releases TorchTalk knows how to fetch, with their Debian source packages.
KNOWN_VERSIONS: dict[str, DebianSource] = {
    "2.6.0": DebianSource(
        suite="trixie",
        orig="pytorch_2.6.0+dfsg.orig.tar.xz",
        sha256="099a9601bc40d67656e75735c44abedb0fbe92d08817852ab7472eebb7e6ddff",
        top="pytorch-v2.6.0",
    ),
    "1.13.1": DebianSource(
        suite="bookworm",
        orig="pytorch_1.13.1+dfsg.orig.tar.xz",
        sha256="d0355588b8528566d477e6ebf1b4d9d036a6fd75711339f66b27472ce5879dc7",
        top="pytorch-1.13.1",
    ),
}

# Timeouts (seconds).  The probe is short: it decides whether git is usable at all.
GIT_PROBE_TIMEOUT = 20.0
GIT_CLONE_TIMEOUT = 1800.0
APT_UPDATE_TIMEOUT = 300.0
APT_SOURCE_TIMEOUT = 1800.0
TAR_TIMEOUT = 900.0

_DEBIAN_SUITES = {
    "buster", "bullseye", "bookworm", "trixie", "forky", "duke", "sid",
    "unstable", "testing", "stable", "oldstable", "experimental",
}

Progress = Callable[[str], None]


# --------------------------------------------------------------------------- helpers


def _norm_version(version: str) -> str:
    v = str(version).strip()
    if v[:1] in ("v", "V") and v[1:2].isdigit():
        v = v[1:]
    return v


def debian_source_for(version: str, known: Mapping[str, DebianSource] | None = None) -> DebianSource:
    """The Debian source package for a PyTorch version, or FetchError listing the known ones."""
    table = KNOWN_VERSIONS if known is None else known
    v = _norm_version(version)
    if v not in table:
        raise FetchError(
            f"unknown PyTorch version {version!r}: TorchTalk can fetch "
            f"{', '.join(sorted(table, key=_version_key, reverse=True))} "
            "(or point it at an existing source tree)"
        )
    return table[v]


def _version_key(v: str) -> tuple:
    return tuple(int(p) if p.isdigit() else 0 for p in re.split(r"[.+-]", v))


def default_dest(version: str = DEFAULT_VERSION) -> Path:
    import platformdirs

    return Path(platformdirs.user_cache_dir("torchtalk")) / "pytorch-source" / f"pytorch-{_norm_version(version)}"


def is_valid_tree(path: Path) -> bool:
    return (Path(path) / MARKER).is_file()


def _write_release(tree: Path, version: str) -> None:
    """Record which release the tree is (its version.txt says e.g. "2.6.0a0"); SourceTree.version reads it."""
    try:
        (Path(tree) / RELEASE_FILE).write_text(version + "\n", encoding="utf-8")
    except OSError:
        pass  # only the reported version is at stake


def _say(progress: Progress | None, msg: str) -> None:
    if progress is not None:
        try:
            progress(msg)
        except Exception:
            pass


def _one_line(s: str, limit: int = 300) -> str:
    s = " ".join(str(s).split())
    return s if len(s) <= limit else s[: limit - 3] + "..."


def _tail(s: bytes | str | None) -> str:
    if not s:
        return ""
    if isinstance(s, bytes):
        s = s.decode("utf-8", "replace")
    lines = [ln.strip() for ln in s.splitlines() if ln.strip()]
    # apt prints "W:" warnings after errors; prefer the last error line
    errs = [ln for ln in lines if ln.startswith(("E:", "fatal:", "error:"))]
    return _one_line((errs or lines or [""])[-1])


class _AttemptFailed(Exception):
    pass


def _run(cmd: Sequence[str], *, timeout: float, cwd: Path | None = None,
         env: Mapping[str, str] | None = None, what: str) -> subprocess.CompletedProcess:
    try:
        cp = subprocess.run(
            list(cmd), cwd=cwd, env=dict(env) if env is not None else None,
            stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
            timeout=timeout, check=False,
        )
    except FileNotFoundError:
        raise _AttemptFailed(f"{cmd[0]} not found") from None
    except subprocess.TimeoutExpired:
        raise _AttemptFailed(f"{what} timed out after {timeout:g} s") from None
    except OSError as e:
        raise _AttemptFailed(f"{what}: {e}") from None
    return cp


# --------------------------------------------------------------------------- apt config


def _parse_deb822(text: str) -> list[dict[str, str]]:
    blocks: list[dict[str, str]] = []
    cur: dict[str, str] = {}
    key = None
    for raw in text.splitlines():
        line = raw.rstrip()
        if line.lstrip().startswith("#"):
            continue
        if not line.strip():
            if cur:
                blocks.append(cur)
            cur, key = {}, None
            continue
        if line[0] in " \t" and key is not None:  # continuation
            cur[key] += " " + line.strip()
            continue
        if ":" in line:
            k, _, v = line.partition(":")
            key = k.strip().lower()
            cur[key] = v.strip()
    if cur:
        blocks.append(cur)
    return blocks


def _apt_entries(etc_apt: Path) -> list[tuple[str, list[str], str]]:
    """(uri, suites, signed_by) for each enabled deb/deb-src entry, in config order."""
    out: list[tuple[str, list[str], str]] = []
    d = etc_apt / "sources.list.d"
    try:
        sources = sorted(p for p in d.iterdir() if p.name.endswith(".sources"))
    except OSError:
        sources = []
    for p in sources:
        try:
            text = p.read_text(errors="replace")
        except OSError:
            continue
        for b in _parse_deb822(text):
            if b.get("enabled", "yes").lower() in ("no", "false", "0"):
                continue
            types = b.get("types", "").split()
            if not ({"deb", "deb-src"} & set(types)):
                continue
            for uri in b.get("uris", "").split():
                out.append((uri, b.get("suites", "").split(), b.get("signed-by", "")))
    lists = [etc_apt / "sources.list"]
    try:
        lists += sorted(p for p in d.iterdir() if p.name.endswith(".list"))
    except OSError:
        pass
    for p in lists:
        try:
            text = p.read_text(errors="replace")
        except OSError:
            continue
        for raw in text.splitlines():
            line = raw.split("#", 1)[0].strip()
            m = re.match(r"^(deb|deb-src)\s+(?:\[([^\]]*)\]\s+)?(\S+)\s+(\S+)", line)
            if not m:
                continue
            opts, uri, suite = m.group(2) or "", m.group(3), m.group(4)
            sb = ""
            for o in opts.split():
                if o.startswith("signed-by="):
                    sb = o.split("=", 1)[1]
            out.append((uri, [suite], sb))
    return out


def read_apt_mirrors(etc_apt: Path = Path("/etc/apt")) -> list[str]:
    """The Debian archive mirrors named in this machine's apt configuration, best first.

    Reads ``sources.list.d/*.sources`` (deb822 ``URIs:``) and ``sources.list`` /
    ``sources.list.d/*.list`` (``deb``/``deb-src`` lines).  Security mirrors are skipped;
    entries that look like Debian's archive (a Debian suite name, a Debian keyring, a
    path ending in ``/debian``) come before other repositories.  Duplicates removed.
    """
    ranked: list[tuple[int, int, str]] = []
    seen: set[str] = set()
    for i, (uri, suites, signed_by) in enumerate(_apt_entries(Path(etc_apt))):
        u = uri.rstrip("/")
        if "security" in u.lower() or any("security" in s for s in suites):
            continue
        if not re.match(r"^(https?|ftp|file|mirror\+\w+)://", u):
            continue
        if u in seen:
            continue
        seen.add(u)
        score = 0
        if any(s.split("-")[0] in _DEBIAN_SUITES for s in suites):
            score -= 2
        if "debian-archive-keyring" in signed_by:
            score -= 2
        if u.endswith("/debian"):
            score -= 1
        ranked.append((score, i, u))
    return [u for _s, _i, u in sorted(ranked)]


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


def _find_tree(root: Path, hint: str = "") -> Path | None:
    """The directory under root (itself, hint, or one level down) that is a tree."""
    cands = ([root / hint] if hint else []) + [root]
    try:
        cands += sorted(p for p in root.iterdir() if p.is_dir())
    except OSError:
        pass
    for c in cands:
        if is_valid_tree(c):
            return c
    return None


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
        raise _AttemptFailed("git is not installed")
    tag = f"v{version}"
    env = _git_env()
    base = ["git", "-c", "credential.helper=", "-c", "http.lowSpeedLimit=1000",
            "-c", "http.lowSpeedTime=60", "-c", "protocol.version=2"]
    _say(progress, f"checking {url} for tag {tag}")
    cp = _run(base + ["ls-remote", "--exit-code", url, f"refs/tags/{tag}"],
              timeout=probe_timeout, env=env, what="git ls-remote")
    if cp.returncode == 2:
        raise _AttemptFailed(f"no tag {tag} in {url}")
    if cp.returncode != 0:
        raise _AttemptFailed(_tail(cp.stderr) or f"git ls-remote exited with status {cp.returncode}")
    dst = work / "git"
    _say(progress, f"git clone --depth 1 --branch {tag} {url}")
    cp = _run(base + ["clone", "--quiet", "--depth", "1", "--branch", tag, "--single-branch",
                      "--no-recurse-submodules", url, str(dst)],
              timeout=clone_timeout, env=env, what="git clone")
    if cp.returncode != 0:
        raise _AttemptFailed(_tail(cp.stderr) or f"git clone exited with status {cp.returncode}")
    if not is_valid_tree(dst):
        raise _AttemptFailed(f"the clone has no {MARKER}")
    return dst


# --------------------------------------------------------------------------- Debian


def _apt_user() -> str:
    try:
        return pwd.getpwuid(os.getuid()).pw_name
    except KeyError:
        return "root" if os.getuid() == 0 else str(os.getuid())


def _apt_options(work: Path) -> list[str]:
    opts = {
        "Dir::Etc::SourceList": str(work / "sources.list"),
        "Dir::Etc::SourceParts": str(work / "parts"),
        "Dir::State::Lists": str(work / "lists"),
        "Dir::Cache": str(work / "cache"),
        "Dir::Cache::pkgcache": "",
        "Dir::Cache::srcpkgcache": "",
        "Debug::NoLocking": "1",
        "APT::Sandbox::User": _apt_user(),
        "Acquire::Languages": "none",
        "Acquire::Retries": "2",
    }
    out: list[str] = []
    for k, v in opts.items():
        out += ["-o", f"{k}={v}"]
    return out


def _sha256(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def _extract(tarball: Path, into: Path, progress: Progress | None, timeout: float) -> None:
    into.mkdir(parents=True, exist_ok=True)
    _say(progress, f"extracting {tarball.name}")
    if shutil.which("tar"):
        cp = _run(["tar", "--no-same-owner", "--no-same-permissions", "-xf", str(tarball), "-C", str(into)],
                  timeout=timeout, what="tar")
        if cp.returncode != 0:
            raise _AttemptFailed(f"tar failed on {tarball.name}: {_tail(cp.stderr) or cp.returncode}")
        return
    try:  # no tar binary: the standard library can do it too
        with tarfile.open(tarball) as tf:
            if hasattr(tarfile, "data_filter"):
                tf.extractall(into, filter="data")
            else:  # pragma: no cover - old Pythons
                tf.extractall(into)
    except (tarfile.TarError, OSError, EOFError) as e:
        raise _AttemptFailed(f"cannot extract {tarball.name}: {e}") from None


def _try_debian(version: str, src: DebianSource, work: Path, progress: Progress | None,
                etc_apt: Path, apt_get: str, mirrors: Sequence[str] | None,
                keyring: Path | None) -> Path:
    if shutil.which(apt_get) is None:
        raise _AttemptFailed(f"{apt_get} not found (not a Debian-like system)")
    mirror_list = list(mirrors) if mirrors is not None else read_apt_mirrors(etc_apt)
    if not mirror_list:
        raise _AttemptFailed(f"no Debian mirror found in the apt configuration ({etc_apt})")
    errors: list[str] = []
    for mirror in mirror_list[:3]:
        try:
            return _debian_from_mirror(version, src, work, progress, apt_get, mirror, keyring)
        except _AttemptFailed as e:
            errors.append(f"{mirror}: {e}")
            shutil.rmtree(work / "apt", ignore_errors=True)
    raise _AttemptFailed("; ".join(errors))


def _debian_from_mirror(version: str, src: DebianSource, work: Path, progress: Progress | None,
                        apt_get: str, mirror: str, keyring: Path | None) -> Path:
    apt = work / "apt"
    for sub in ("lists/partial", "cache/archives/partial", "parts", "dl"):
        (apt / sub).mkdir(parents=True, exist_ok=True)
    kr = keyring if keyring is not None else Path("/usr/share/keyrings/debian-archive-keyring.gpg")
    signed = f"[signed-by={kr}] " if kr and Path(kr).is_file() else ""
    (apt / "sources.list").write_text(f"deb-src {signed}{mirror} {src.suite} main\n")
    opts = _apt_options(apt)
    _say(progress, f"apt-get update (deb-src {mirror} {src.suite} main, private apt state)")
    cp = _run([apt_get, *opts, "-q", "update"], timeout=APT_UPDATE_TIMEOUT, what="apt-get update")
    if cp.returncode != 0:
        raise _AttemptFailed(f"apt-get update failed: {_tail(cp.stderr) or cp.returncode}")
    err = _tail(cp.stderr)
    if err.startswith(("W:", "E:")) and ("Failed to fetch" in err or "not signed" in err or "NO_PUBKEY" in err):
        raise _AttemptFailed(f"apt-get update: {err}")
    dl = apt / "dl"
    _say(progress, f"apt-get source --download-only pytorch/{src.suite} ({src.orig})")
    cp = _run([apt_get, *opts, "-q", "source", "--download-only", f"pytorch/{src.suite}"],
              cwd=dl, timeout=APT_SOURCE_TIMEOUT, what="apt-get source")
    tarball = dl / src.orig
    # The Debian packaging tarball may be missing on a mirror: only the upstream one matters.
    if not tarball.is_file():
        why = _tail(cp.stderr) or f"exit status {cp.returncode}"
        got = sorted(p.name for p in dl.iterdir() if p.is_file())
        raise _AttemptFailed(
            f"apt-get source did not download {src.orig} ({why})"
            + (f"; got {', '.join(got)}" if got else "")
        )
    if src.sha256:
        _say(progress, f"verifying sha256 of {src.orig}")
        got_sha = _sha256(tarball)
        if got_sha != src.sha256:
            raise _AttemptFailed(f"sha256 mismatch for {src.orig}: expected {src.sha256}, got {got_sha}")
    ex = work / "extract"
    _extract(tarball, ex, progress, TAR_TIMEOUT)
    tarball.unlink(missing_ok=True)
    tree = _find_tree(ex, src.top)
    if tree is None:
        raise _AttemptFailed(f"{src.orig} holds no {MARKER}")
    return tree


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
    v = _norm_version(version)
    src = debian_source_for(v, known)
    dest = Path(dest) if dest is not None else default_dest(v)
    dest = dest.expanduser().absolute()
    if is_valid_tree(dest):
        _say(progress, f"using the existing tree {dest}")
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
            lambda: _try_debian(v, src, work, progress, Path(etc_apt), apt_get, mirrors, keyring),
        ))
        for i, (label, route) in enumerate(routes):
            if i:  # why the previous route failed is said only if every route fails (below)
                _say(progress, f"trying {label}")
            try:
                tree = route()
            except _AttemptFailed as e:
                attempts.append(f"{label}: {e}")
                continue
            _write_release(tree, v)
            placed = _place_tree(tree, dest, work)
            _say(progress, f"PyTorch {v} source tree ready at {placed} ({time.monotonic() - t0:.1f} s)")
            return placed
        raise FetchError(f"could not fetch PyTorch {v} source into {dest}; every route failed: " + "; ".join(attempts))
    finally:
        shutil.rmtree(work, ignore_errors=True)
