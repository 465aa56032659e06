"""How much `plan --create` will download, read from the package indexes before anything runs.

For each planned wheel: the file the installer will take for the target's Python and platform,
and its size from the index's JSON page (PEP 700) or the server's Content-Length; then the CUDA
libraries it pins (nvidia-* wheels, and the wheels `cuda-toolkit[...]` names in its metadata for
the extras asked for). A wheel already in a local find-links folder costs nothing. What cannot be
sized is named, so the total is never presented as more certain than it is.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Protocol

from packaging.requirements import InvalidRequirement, Requirement
from packaging.specifiers import InvalidSpecifier, SpecifierSet
from packaging.utils import canonicalize_name, parse_wheel_filename
from packaging.version import Version

from gpuenv.index.metadata import CoreMetadata, applicable_requirements, marker_environment
from gpuenv.index.pages import IndexFile, Wheel, parse_wheel
from gpuenv.kb.query._frameworks_util import parsed_version
from gpuenv.plan.model import EnvPlan, PackageChoice

ASK_ABOVE_BYTES = 200 * 1024 * 1024  # above this, or when unknown, the user is asked first


@dataclass(frozen=True)
class Download:
    name: str
    version: str
    size: int | None  # bytes; None: the index did not say
    where: str  # "index", "local file", the URL of a wheel named directly
    pinned_by: str | None = None  # "torch" for the nvidia-* wheels torch pins


@dataclass(frozen=True)
class Estimate:
    items: tuple[Download, ...]
    problems: tuple[str, ...] = ()

    @property
    def total(self) -> int:
        return sum(d.size or 0 for d in self.items if d.where != "local file")

    @property
    def unknown(self) -> tuple[str, ...]:
        return tuple(
            f"{d.name} {d.version}"
            for d in self.items
            if d.size is None and d.where != "local file"
        )

    @property
    def needs_asking(self) -> bool:
        return self.total > ASK_ABOVE_BYTES or bool(self.unknown) or bool(self.problems)


class IndexReader(Protocol):
    """The reads an estimate needs; a network implementation lives in `reader.py`, tests give
    recorded pages."""

    def files(self, index: str, name: str) -> list[IndexFile] | None: ...

    def link_page(self, url: str) -> list[IndexFile]: ...

    def size(self, url: str) -> int | None: ...

    def metadata(self, file: IndexFile) -> CoreMetadata | None: ...


@dataclass(frozen=True)
class Target:
    platform: str  # "linux-x86_64"
    python: str  # "3.11"
    index: str  # the installer's own index URL
    local_wheels: Mapping[tuple[str, str], str]  # (canonical name, version) -> file path


def estimate(env: EnvPlan, target: Target, reader: IndexReader) -> Estimate:
    """The downloads of one planned environment, planned packages first, their pins after."""
    found: dict[str, Download] = {}
    problems: list[str] = []
    for package in env.packages:
        if package.conda is not None or package.source_build is not None:
            continue
        item, pins = _package(package, env, target, reader, problems)
        found.setdefault(canonicalize_name(item.name), item)
        for pinned in _pinned(pins, package, target, reader, problems):
            found.setdefault(canonicalize_name(pinned.name), pinned)
    return Estimate(tuple(found.values()), tuple(problems))


def _package(
    package: PackageChoice,
    env: EnvPlan,
    target: Target,
    reader: IndexReader,
    problems: list[str],
) -> tuple[Download, tuple[str, ...]]:
    local = target.local_wheels.get((canonicalize_name(package.name), _public(package.version)))
    if local is not None:
        return Download(package.name, package.version, _file_size(local), "local file"), ()
    if package.url:
        return Download(package.name, package.version, reader.size(package.url), package.url), ()
    files = _candidates(package, env, target, reader, problems)
    wheel = choose_wheel(files, package.name, package.version, target)
    if wheel is None:
        problems.append(f"{package.name} {package.version}: no wheel for {_for(target)} found")
        return Download(package.name, package.version, None, "index"), package.pins
    size = wheel.file.size if wheel.file.size is not None else reader.size(wheel.file.url)
    return Download(package.name, str(wheel.version), size, "index"), package.pins


def _candidates(
    package: PackageChoice,
    env: EnvPlan,
    target: Target,
    reader: IndexReader,
    problems: list[str],
) -> list[IndexFile]:
    if package.find_links:
        return reader.link_page(package.find_links)
    indexes = [package.index_url] if package.index_url else [target.index, *env.index_urls]
    files: list[IndexFile] = []
    for index in dict.fromkeys(indexes):
        try:
            files += reader.files(index, package.name) or []
        except Exception as exc:  # an unreachable index: sized as unknown, said why
            problems.append(f"{package.name}: {index} could not be read ({exc})")
    return files


def _pinned(
    pins: Iterable[str],
    package: PackageChoice,
    target: Target,
    reader: IndexReader,
    problems: list[str],
) -> list[Download]:
    out: list[Download] = []
    for line in pins:
        requirement = _requirement(line)
        if requirement is None:
            continue
        for pinned in _expand(requirement, target, reader, problems):
            out.append(_pinned_wheel(pinned, package.name, target, reader, problems))
    return out


def _expand(
    requirement: Requirement, target: Target, reader: IndexReader, problems: list[str]
) -> list[Requirement]:
    """A pin, and for a meta-package (cuda-toolkit[cublas,...]) the pins its metadata names for
    the extras asked for."""
    if not requirement.extras:
        return [requirement]
    files = _safe_files(reader, target.index, requirement.name, problems)
    wheel = choose_by_spec(files, requirement.name, str(requirement.specifier), target)
    metadata = reader.metadata(wheel.file) if wheel else None
    if metadata is None:
        problems.append(f"{requirement.name}[{','.join(sorted(requirement.extras))}]: its "
                        "dependencies could not be read from the index")  # fmt: skip
        return [requirement]
    environment = marker_environment(target.platform, target.python)
    lines, _bad = applicable_requirements(metadata.requires_dist, environment, requirement.extras)
    inner = [r for r in (_requirement(text) for text in lines) if r is not None]
    return [requirement, *inner]


def _pinned_wheel(
    requirement: Requirement,
    pinned_by: str,
    target: Target,
    reader: IndexReader,
    problems: list[str],
) -> Download:
    spec = str(requirement.specifier)
    for (name, version), path in target.local_wheels.items():
        if name == canonicalize_name(requirement.name) and requirement.specifier.contains(version):
            return Download(requirement.name, version, _file_size(path), "local file", pinned_by)
    files = _safe_files(reader, target.index, requirement.name, problems)
    wheel = choose_by_spec(files, requirement.name, spec, target)
    if wheel is None:
        return Download(requirement.name, spec, None, "index", pinned_by)
    size = wheel.file.size if wheel.file.size is not None else reader.size(wheel.file.url)
    return Download(requirement.name, str(wheel.version), size, "index", pinned_by)


def _safe_files(reader: IndexReader, index: str, name: str, problems: list[str]) -> list[IndexFile]:
    try:
        return reader.files(index, name) or []
    except Exception as exc:
        problems.append(f"{name}: {index} could not be read ({exc})")
        return []


def choose_wheel(
    files: Sequence[IndexFile], name: str, version: str, target: Target
) -> Wheel | None:
    """The wheel an installer takes: this name and version (a local label must match when one
    is asked for; without one, the plain release is preferred), the target's platform or any,
    and a Python tag the target's Python accepts (its own, abi3 of an older one, py3)."""
    wanted = parsed_version(version)
    if wanted is None:
        return None
    fitting = []
    for file in files:
        wheel = _wheel(file, name)
        if wheel is None or file.yanked or not _same_release(wheel.version, wanted):
            continue
        if _fits(wheel, target):
            fitting.append(wheel)
    fitting.sort(key=lambda w: (w.version.local is not None and wanted.local is None, -w.build))
    return fitting[0] if fitting else None


def choose_by_spec(
    files: Sequence[IndexFile], name: str, specifier: str, target: Target
) -> Wheel | None:
    """The newest wheel of `name` that meets `specifier` ("==13.4.1.3.*") on the target."""
    try:
        wanted = SpecifierSet(specifier)
    except InvalidSpecifier:
        return None
    fitting = [
        wheel
        for wheel in (_wheel(file, name) for file in files if not file.yanked)
        if wheel is not None and wanted.contains(wheel.version) and _fits(wheel, target)
    ]
    return max(fitting, key=lambda w: (w.version, w.build), default=None)


def _wheel(file: IndexFile, name: str) -> Wheel | None:
    try:
        if canonicalize_name(parse_wheel_filename(file.filename)[0]) != canonicalize_name(name):
            return None
        return parse_wheel(file)
    except Exception:  # not a wheel name at all
        return None


def _same_release(have: Version, want: Version) -> bool:
    return have == want if want.local is not None else have.public == want.public


def _fits(wheel: Wheel, target: Target) -> bool:
    platform_ok = target.platform in wheel.platforms or "any" in wheel.platforms
    major, minor = (int(p) for p in target.python.split(".")[:2])
    own = f"cp{major}{minor}"
    pythons = {own, f"py{major}", f"py{major}{minor}"}
    abi3 = {f"cp{major}{m}-abi3" for m in range(minor + 1)}
    return platform_ok and bool(wheel.python_tags & (pythons | abi3))


def _requirement(line: str) -> Requirement | None:
    try:
        return Requirement(line)  # also the old form "nvidia-cudnn-cu12 (==8.9.4.25)"
    except InvalidRequirement:
        return None


def _public(version: str) -> str:
    parsed = parsed_version(version)
    return parsed.public if parsed else version


def _file_size(path: str) -> int | None:
    try:
        return os.stat(path).st_size
    except OSError:
        return None


def _for(target: Target) -> str:
    return f"Python {target.python} on {target.platform}"


def human_size(size: int) -> str:
    value = float(size)
    for unit in ("B", "KB", "MB", "GB"):
        if value < 1000 or unit == "GB":
            return f"{value:.0f} {unit}" if unit in ("B", "KB") else f"{value:.1f} {unit}"
        value /= 1000
    return f"{value:.1f} GB"
