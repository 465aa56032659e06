"""Core metadata (METADATA / PEP 658 `.metadata` files): the fields gpuenv reads, and which
Requires-Dist lines apply on a target platform and Python with some extras asked for. Pure."""

from __future__ import annotations

import email.parser
import email.policy
import hashlib
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from urllib.parse import urldefrag

from packaging.requirements import InvalidRequirement, Requirement
from packaging.specifiers import SpecifierSet

from gpuenv.index.pages import IndexFile


@dataclass(frozen=True)
class CoreMetadata:
    name: str | None
    version: str | None
    requires_python: str | None
    requires_dist: tuple[str, ...]


def metadata_url(file: IndexFile) -> str:
    return urldefrag(file.url)[0] + ".metadata"


def check_metadata_hash(file: IndexFile, body: bytes) -> bool:
    return file.metadata_sha256 is None or hashlib.sha256(body).hexdigest() == file.metadata_sha256


# -- core metadata ----------------------------------------------------------------------------


def parse_core_metadata(body: bytes) -> CoreMetadata:
    """The fields refresh needs from a METADATA file (RFC 822 headers)."""
    text = body.decode("utf-8", errors="replace")
    parser = email.parser.Parser(policy=email.policy.compat32)
    message = parser.parsestr(text, headersonly=True)

    def one(name: str) -> str | None:
        value = message.get(name)
        return str(value).strip() if value is not None else None

    requires = tuple(str(v).strip() for v in message.get_all("Requires-Dist") or ())
    return CoreMetadata(one("Name"), one("Version"), one("Requires-Python"), requires)


def marker_environment(platform: str, python: str) -> dict[str, str]:
    """A full PEP 508 environment for one target, e.g. ("linux-x86_64", "3.11")."""
    system, _, machine = platform.partition("-")
    systems = {"linux": ("Linux", "linux", "posix"), "windows": ("Windows", "win32", "nt")}
    platform_system, sys_platform, os_name = systems.get(system, ("Darwin", "darwin", "posix"))
    if system == "windows" and machine == "x86_64":
        machine = "AMD64"
    return {
        "implementation_name": "cpython",
        "implementation_version": f"{python}.0",
        "os_name": os_name,
        "platform_machine": machine,
        "platform_release": "",
        "platform_system": platform_system,
        "platform_version": "",
        "python_full_version": f"{python}.0",
        "platform_python_implementation": "CPython",
        "python_version": python,
        "sys_platform": sys_platform,
        "extra": "",
    }


def applicable_requirements(
    requires_dist: Iterable[str], environment: Mapping[str, str], extras: Iterable[str] = ()
) -> tuple[list[str], list[str]]:
    """Requires-Dist lines that apply in `environment` with any of `extras` (or none) requested.

    Returns (lines with their markers stripped, problems for lines that do not parse)."""
    chosen: list[str] = []
    problems: list[str] = []
    wanted = ("", *extras)
    for line in requires_dist:
        try:
            requirement = Requirement(line)
        except InvalidRequirement as exc:
            problems.append(f"Requires-Dist {line!r} does not parse: {exc}")
            continue
        marker = requirement.marker
        try:
            applies = marker is None or any(
                marker.evaluate({**environment, "extra": extra}) for extra in wanted
            )
        except Exception as exc:  # packaging raises several types for odd markers
            problems.append(f"Requires-Dist {line!r}: marker cannot be evaluated: {exc}")
            continue
        if applies:
            chosen.append(line.split(";", 1)[0].strip())
    return chosen, problems


# -- what a wheel's tags and pins say ----------------------------------------------------------


def pinned_version(specifier: SpecifierSet) -> str | None:
    """The version a requirement pins (==, ===), else its lower bound (>=, ~=, >)."""
    for operators in (("==", "==="), (">=", "~=", ">")):
        for spec in sorted(specifier, key=str):
            if spec.operator in operators:
                return spec.version.removesuffix(".*")
    return None
