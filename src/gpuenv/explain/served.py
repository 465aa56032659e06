"""What the index's file lists (wheels.toml) say about the release a text asks for: whether it
has a wheel for the reporter's Python, and for the reporter's platform. A question the knowledge
base cannot answer (no Python or platform in the text, a release it does not list) is answered
False: these are judgements, never guesses."""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence

from gpuenv.explain.model import Fact
from gpuenv.facts import Snapshot
from gpuenv.kb import KnowledgeBase
from gpuenv.kb.model import Row
from gpuenv.kb.query._frameworks_util import in_range, release_tuple
from gpuenv.kb.query.frameworks import tf_release
from gpuenv.kb.query.torch import torch_release
from gpuenv.kb.show import python_fits

# the KB row of a release's minor line, which carries its Python range
_RELEASE_LINE: dict[str, Callable[[KnowledgeBase, str], Row | None]] = {
    "torch": torch_release,
    "tensorflow": tf_release,
    "tensorflow-gpu": tf_release,
}
# a local label of a CUDA build (jaxlib 0.4.7+cuda11.cudnn82, torch 1.9.1+cu111)
_CUDA_LABEL = re.compile(r"cu(?:da)?\d")
# the packages whose CUDA builds were published for Linux only (jaxlib's +cuda wheels lived
# on Google's find-links page, never for Windows or macOS)
_LINUX_ONLY_CUDA = ("jaxlib",)
_OS_FAMILIES = ("linux", "windows", "macos")  # as wheels.toml's platforms begin


def value(facts: Sequence[Fact], name: str) -> str | None:
    return next((f.value for f in facts if f.name == name), None)


def python_unserved(facts: Sequence[Fact], snapshot: Snapshot, kb: KnowledgeBase) -> bool:
    """Whether the release the text asks for has no wheel for the reporter's Python: by the
    index's file lists (wheels.toml) for that exact version, else by the Python range of its
    torch or TensorFlow release line. False when the Python, the release or its wheels are
    not known."""
    python = python_of(facts, snapshot)
    name, version, _ = asked(facts)
    if python is None or not name or not version:
        return False
    row = next(iter(releases_asked(kb, name, version)), None)
    if row is not None:
        return not serves(row, python, None)
    lookup = _RELEASE_LINE.get(name)
    line = lookup(kb, version) if lookup else None
    wanted = release_tuple(python)
    if line is None or wanted is None or not line.get("python_min"):
        return False
    return not in_range(wanted, line["python_min"], line.get("python_max"))


def platform_unserved(facts: Sequence[Fact], snapshot: Snapshot, kb: KnowledgeBase) -> bool:
    """Whether the package the text asks for has no wheel for the reporter's platform, whatever
    the Python: the release named (or, with none named or one wheels.toml does not list, such
    as a dev build, every release it lists) has no file for it; a CUDA build (+cu…) asked for
    on a Mac, or one of jaxlib's off Linux, never existed. False when the platform or the
    package's wheels are not known (pip's list of releases may say the platform: see
    offered.platform_from_versions)."""
    platforms = machine_platforms(facts, snapshot)
    name, version, label = asked(facts)
    if not platforms or not name:
        return False
    if cuda_build_unpublished(name, label, platforms):
        return True
    releases = releases_judged(kb, name, version)
    if not releases:
        return False
    published = published_platforms(releases)
    return "any" not in published and not published & set(platforms)


def platforms_few(facts: Sequence[Fact], snapshot: Snapshot, kb: KnowledgeBase) -> bool:
    """Whether the text says neither the reporter's platform nor its Python, and the package it
    asks for publishes wheels for some OSes only (no release wheels.toml lists has a file for
    Windows, or none for macOS): pip finding no file of such a package is most often a platform
    it does not serve. False when the package's wheels are not known, when pip listed a release
    wheels.toml knows among those it found (one serves this platform; placeholders such as
    NVIDIA's 0.0.1 do not count), and when the text names a Linux distribution and the package
    has Linux files."""
    name, _, _ = asked(facts)
    if platforms_of(snapshot) or python_of(facts, snapshot) or not name:
        return False
    releases = releases_asked(kb, name, None)
    offered = {v.strip() for v in (value(facts, "versions_offered") or "").split(",")}
    if offered & {r["version"] for r in releases}:
        return False  # pip found a release with files: one serves this platform
    published = published_platforms(releases)
    if not published or "any" in published:
        return False
    if value(facts, "linux_named") and any(p.startswith("linux") for p in published):
        return False  # a Linux is named, and the package has Linux files
    return not all(any(p.startswith(os) for p in published) for os in _OS_FAMILIES)


def arm_served(facts: Sequence[Fact], snapshot: Snapshot, kb: KnowledgeBase) -> bool:
    """Whether the text names an Apple-silicon Mac ("M1 chip", or macOS and arm64) or a Windows
    on ARM and the package it asks for has wheels for that platform, so the machine is not what
    pip found no file for: the release named (one wheels.toml does not list is not judged), or
    with none named every release wheels.toml lists (a package whose ARM wheels came late, such
    as TensorFlow's from 2.13, is not judged: the thread may predate them). Linux on ARM is left
    out for the same reason: its wheels came late for most packages."""
    platforms = machine_platforms(facts, snapshot)
    name, version, label = asked(facts)
    if platforms not in (("macos-arm64",), ("windows-arm64",)) or not name:
        return False
    if cuda_build_unpublished(name, label, platforms):
        return False
    # a release named that wheels.toml does not list (older than its rows) is not judged
    releases = releases_asked(kb, name, version)
    return bool(releases) and all(has_platform(r, platforms[0]) for r in releases)


def linux_served(facts: Sequence[Fact], snapshot: Snapshot, kb: KnowledgeBase) -> bool:
    """Whether the text names a Linux distribution, says no other OS nor an architecture but
    x86-64, and the package it asks for has Linux x86-64 wheels (or pure-Python ones): pip
    finding no file of it there is most often the Python, not the platform. False when the
    package's wheels are not known, and for a local build (+cu111: not on the index)."""
    if not value(facts, "linux_named") or platforms_of(snapshot) not in ((), ("linux-x86_64",)):
        return False
    host = snapshot.host
    if host.os.source != "assumed" and host.os.value not in (None, "linux"):
        return False
    name, _, label = asked(facts)
    if label:  # a local build (+cu111) is never on the index pip reads by default
        return False
    published = published_platforms(releases_asked(kb, name, None)) if name else set()
    return bool(published & {"linux-x86_64", "any"})


def machine_platforms(facts: Sequence[Fact], snapshot: Snapshot) -> tuple[str, ...]:
    """The reporter's platforms (platforms_of), an Apple-silicon Mac's narrowed to
    macos-arm64: the text names the machine, and a Python under Rosetta (x86-64) is the
    exception the rules' hints name, not the rule."""
    platforms = platforms_of(snapshot)
    if platforms == ("macos-arm64", "macos-x86_64") and value(facts, "apple_silicon"):
        return ("macos-arm64",)
    return platforms


def published_platforms(releases: Sequence[Row]) -> set[str]:
    """The platforms any of the releases (wheels.toml rows) has files for."""
    return {p for r in releases for p in r.get("platforms", [])}


def releases_judged(kb: KnowledgeBase, name: str, version: str | None) -> list[Row]:
    """The rows a platform is judged by: the release named, else (none named, or one the
    index's lists do not hold) every release of the package wheels.toml lists."""
    return releases_asked(kb, name, version) or (releases_asked(kb, name, None) if version else [])


def cuda_build_unpublished(name: str, label: str | None, platforms: Sequence[str]) -> bool:
    """A CUDA build (a +cu… label) asked for where none was ever published: on a Mac, and
    jaxlib's off Linux."""
    if not label or not _CUDA_LABEL.match(label) or not platforms:
        return False
    return platforms[0].startswith("macos") or (
        name in _LINUX_ONLY_CUDA and not platforms[0].startswith("linux")
    )


def releases_asked(kb: KnowledgeBase, name: str, version: str | None) -> list[Row]:
    """wheels.toml's rows of the package, only the release named when one is."""
    rows = kb.memo("explain.releases_by_package", lambda: _releases_by_package(kb)).get(name, [])
    return [r for r in rows if not version or r["version"] == version]


def _releases_by_package(kb: KnowledgeBase) -> dict[str, list[Row]]:
    by_package: dict[str, list[Row]] = {}
    for row in kb.rows("wheels", "release"):
        by_package.setdefault(str(row["package"]), []).append(row)
    return by_package


def asked(facts: Sequence[Fact]) -> tuple[str, str | None, str | None]:
    """The package the text asks for (normalised), the release without its local label, and the
    label (cu111 of torch==1.9.1+cu111); ("", None, None) when none is named."""
    spec = re.match(
        r"\s*([A-Za-z0-9_.-]+)\s*(?:===?\s*(\d[\w.]*(?:\+[\w.]+)?))?", requirement(facts)
    )
    if spec is None:
        return "", None, None
    version = spec.group(2) or _version_asked(facts)
    parts = re.match(r"(\d[\w.]*?)(?:\+([\w.]+))?$", version or "")
    name = spec.group(1).lower().replace("_", "-")
    return (name, parts.group(1), parts.group(2)) if parts else (name, None, None)


def _version_asked(facts: Sequence[Fact]) -> str | None:
    """The version the text asks for; of two spellings (an install command's 0.4.7, pip's
    0.4.7+cuda11.cudnn82), the one with the build label."""
    named = [f.value for f in facts if f.name == "package_version"]
    labelled = [v for v in named if "+" in v and named[0].startswith(v.split("+")[0])]
    return next(iter(labelled or named), None)


def requirement(facts: Sequence[Fact]) -> str:
    """The requirement pip could not satisfy, with its version when the line names one."""
    fact = next((f for f in facts if f.name == "package"), None)
    if fact is None:
        return ""
    named = re.search(
        r"(?:requirement|found for)\s+(" + re.escape(fact.value) + r"\s*[^\s(]*)", fact.raw
    )
    return named.group(1) if named else fact.value


def python_of(facts: Sequence[Fact], snapshot: Snapshot) -> str | None:
    env = snapshot.python_env
    version = (env.python_version if env else None) or value(facts, "python_version")
    found = re.match(r"(3)\.(\d+)", version or "")
    return f"{found.group(1)}.{found.group(2)}" if found else None


def platform_of(snapshot: Snapshot) -> str | None:
    """linux-x86_64 … as wheels.toml names platforms, when the text says exactly one."""
    platforms = platforms_of(snapshot)
    return platforms[0] if len(platforms) == 1 else None


def platforms_of(snapshot: Snapshot) -> tuple[str, ...]:
    """The platforms (as wheels.toml names them) the reporter's machine may be: one when the
    text gives the OS and the architecture (or an architecture by Linux's name, or a Jetson),
    both Macs when it says only macOS, none when it does not say the OS (or says a 32-bit
    Windows, which has its own rule)."""
    host = snapshot.host
    if host.jetson.value:
        return ("linux-aarch64",)
    os_name = {"darwin": "macos", "macos": "macos"}.get(str(host.os.value), str(host.os.value))
    arch = None if host.arch.source == "assumed" else host.arch.value
    if arch in ("aarch64", "armv7l", "armhf"):  # Linux's names: macOS and Windows say arm64
        os_name = "linux"
    elif host.os.source == "assumed" or os_name not in ("linux", "windows", "macos"):
        return ()
    if arch in ("x86", "i686", "i386"):
        return ()
    if arch in ("aarch64", "arm64"):
        return (f"{os_name}-arm64",) if os_name != "linux" else ("linux-aarch64",)
    if arch in ("armv7l", "armhf"):
        return (f"{os_name}-{arch}",)
    if os_name == "macos" and arch is None:
        return ("macos-arm64", "macos-x86_64")
    return (f"{os_name}-x86_64",)


def serves(row: Row, python: str, platform: str | None) -> bool:
    return python_fits(row["python_tags"], python) and (
        platform is None or has_platform(row, platform)
    )


def has_platform(row: Row, platform: str) -> bool:
    """Whether a wheels.toml release has files for the platform (or pure-Python ones)."""
    platforms = row.get("platforms", [])
    return platform in platforms or "any" in platforms


def release_key(row: Row) -> tuple[int, ...]:
    return release_tuple(row["version"]) or ()
