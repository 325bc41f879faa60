"""The Debian route of fetching a PyTorch release: its source package, through a private apt state.

``apt-get source --download-only`` run with its own sources list, lists and cache in a
temporary directory (no locking, no root needed) against the Debian mirror that this
machine's own apt configuration names; the upstream tarball's sha256 is checked and it
is extracted with ``tar``.
"""

from __future__ import annotations

import dataclasses
import hashlib
import os
import pwd
import re
import shutil
import tarfile
from collections.abc import Mapping, Sequence
from pathlib import Path

from .fetch_steps import MARKER, AttemptFailed, FetchError, Progress, find_tree, norm_version, run, say, tail


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


APT_UPDATE_TIMEOUT = 300.0


APT_SOURCE_TIMEOUT = 1800.0


TAR_TIMEOUT = 900.0


_DEBIAN_SUITES = {
    "buster", "bullseye", "bookworm", "trixie", "forky", "duke", "sid",
    "unstable", "testing", "stable", "oldstable", "experimental",
}


def debian_source_for(version: str, known: Mapping[str, DebianSource] | None = None) -> DebianSource:
    """The Debian source package for a PyTorch version, or FetchError listing the known ones."""
    table = KNOWN_VERSIONS if known is None else known
    v = norm_version(version)
    if v not in table:
        raise FetchError(
            f"unknown PyTorch version {version!r}: TorchTalk can fetch "
            f"{', '.join(sorted(table, key=_version_key, reverse=True))} "
            "(or point it at an existing source tree)"
        )
    return table[v]


def _version_key(v: str) -> tuple:
    return tuple(int(p) if p.isdigit() else 0 for p in re.split(r"[.+-]", v))


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
    say(progress, f"extracting {tarball.name}")
    if shutil.which("tar"):
        cp = run(["tar", "--no-same-owner", "--no-same-permissions", "-xf", str(tarball), "-C", str(into)],
                  timeout=timeout, what="tar")
        if cp.returncode != 0:
            raise AttemptFailed(f"tar failed on {tarball.name}: {tail(cp.stderr) or cp.returncode}")
        return
    try:  # no tar binary: the standard library can do it too
        with tarfile.open(tarball) as tf:
            if hasattr(tarfile, "data_filter"):
                tf.extractall(into, filter="data")
            else:  # pragma: no cover - old Pythons
                tf.extractall(into)
    except (tarfile.TarError, OSError, EOFError) as e:
        raise AttemptFailed(f"cannot extract {tarball.name}: {e}") from None


def try_debian(version: str, src: DebianSource, work: Path, progress: Progress | None,
                etc_apt: Path, apt_get: str, mirrors: Sequence[str] | None,
                keyring: Path | None) -> Path:
    if shutil.which(apt_get) is None:
        raise AttemptFailed(f"{apt_get} not found (not a Debian-like system)")
    mirror_list = list(mirrors) if mirrors is not None else read_apt_mirrors(etc_apt)
    if not mirror_list:
        raise AttemptFailed(f"no Debian mirror found in the apt configuration ({etc_apt})")
    errors: list[str] = []
    for mirror in mirror_list[:3]:
        try:
            return _debian_from_mirror(version, src, work, progress, apt_get, mirror, keyring)
        except AttemptFailed as e:
            errors.append(f"{mirror}: {e}")
            shutil.rmtree(work / "apt", ignore_errors=True)
    raise AttemptFailed("; ".join(errors))


def _debian_from_mirror(version: str, src: DebianSource, work: Path, progress: Progress | None,
                        apt_get: str, mirror: str, keyring: Path | None) -> Path:
    apt = work / "apt"
    for sub in ("lists/partial", "cache/archives/partial", "parts", "dl"):
        (apt / sub).mkdir(parents=True, exist_ok=True)
    kr = keyring if keyring is not None else Path("/usr/share/keyrings/debian-archive-keyring.gpg")
    signed = f"[signed-by={kr}] " if kr and Path(kr).is_file() else ""
    (apt / "sources.list").write_text(f"deb-src {signed}{mirror} {src.suite} main\n")
    opts = _apt_options(apt)
    say(progress, f"apt-get update (deb-src {mirror} {src.suite} main, private apt state)")
    cp = run([apt_get, *opts, "-q", "update"], timeout=APT_UPDATE_TIMEOUT, what="apt-get update")
    if cp.returncode != 0:
        raise AttemptFailed(f"apt-get update failed: {tail(cp.stderr) or cp.returncode}")
    err = tail(cp.stderr)
    if err.startswith(("W:", "E:")) and ("Failed to fetch" in err or "not signed" in err or "NO_PUBKEY" in err):
        raise AttemptFailed(f"apt-get update: {err}")
    dl = apt / "dl"
    say(progress, f"apt-get source --download-only pytorch/{src.suite} ({src.orig})")
    cp = run([apt_get, *opts, "-q", "source", "--download-only", f"pytorch/{src.suite}"],
              cwd=dl, timeout=APT_SOURCE_TIMEOUT, what="apt-get source")
    tarball = dl / src.orig
    # The Debian packaging tarball may be missing on a mirror: only the upstream one matters.
    if not tarball.is_file():
        why = tail(cp.stderr) or f"exit status {cp.returncode}"
        got = sorted(p.name for p in dl.iterdir() if p.is_file())
        raise AttemptFailed(
            f"apt-get source did not download {src.orig} ({why})"
            + (f"; got {', '.join(got)}" if got else "")
        )
    if src.sha256:
        say(progress, f"verifying sha256 of {src.orig}")
        got_sha = _sha256(tarball)
        if got_sha != src.sha256:
            raise AttemptFailed(f"sha256 mismatch for {src.orig}: expected {src.sha256}, got {got_sha}")
    ex = work / "extract"
    _extract(tarball, ex, progress, TAR_TIMEOUT)
    tarball.unlink(missing_ok=True)
    tree = find_tree(ex, src.top)
    if tree is None:
        raise AttemptFailed(f"{src.orig} holds no {MARKER}")
    return tree
