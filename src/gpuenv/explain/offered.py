"""What pip's list of the releases it found ("from versions: 1.11.0, …, 2.2.2") says about the
machine it ran on: the platforms for which the index's files (wheels.toml) give that list. torch's
list ending at 2.2.2 while 2.4.1 is asked for is an Intel Mac (its last release there), whatever
the text says of itself. Only a list of plain releases from the index is read: pip lists a local
build (+cu121) from another index, which wheels.toml does not describe.

wheels.toml gives a release's Python tags for all its platforms together (torch 1.13.1 had cp311
wheels for Linux only), so the list's first release says little about the Python: the list is
compared from its first release on, and the verdict is about the platform only.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from packaging.requirements import InvalidRequirement, Requirement
from packaging.specifiers import InvalidSpecifier, SpecifierSet

from gpuenv.explain.model import Fact
from gpuenv.explain.served import (
    asked,
    platforms_of,
    python_of,
    releases_asked,
    requirement,
    serves,
    value,
)
from gpuenv.facts import Snapshot
from gpuenv.kb import KnowledgeBase
from gpuenv.kb.model import Row
from gpuenv.kb.query._frameworks_util import parsed_version
from gpuenv.versions import sortable

Machine = tuple[str, str]  # (platform as wheels.toml names it, Python "3.11")


def platform_from_versions(facts: Sequence[Fact], snapshot: Snapshot, kb: KnowledgeBase) -> bool:
    """Whether pip's list of releases fits only platforms no release asked for has a file for,
    for a text that does not say which platform (none, or a Mac of either kind)."""
    name, wanted = asked_specifier(facts)
    if wanted is None or len(platforms_of(snapshot)) == 1:
        return False
    found = listed_machines(facts, snapshot, kb)
    return platform_unpublished(releases_asked(kb, name, None), wanted, found)


def inferred_platform(facts: Sequence[Fact], snapshot: Snapshot, kb: KnowledgeBase) -> str | None:
    """The platform pip's list of releases says the machine is, for a text that does not say
    it: the one platform of every machine the list fits (torch's list ending at 2.2.2 while
    2.4.1 is asked for: macos-x86_64); None when the list fits several or none."""
    if len(platforms_of(snapshot)) == 1:
        return None
    found = {platform for platform, _ in listed_machines(facts, snapshot, kb)}
    return found.pop() if len(found) == 1 else None


def listed_machines(facts: Sequence[Fact], snapshot: Snapshot, kb: KnowledgeBase) -> set[Machine]:
    """The platforms and Pythons, among those the text allows (a Linux distribution named: the
    Linux ones), on which pip would list the releases it listed and find none it asked for;
    empty for a local build (+cu121: pip lists those from another index) or releases
    wheels.toml does not hold."""
    name, wanted = asked_specifier(facts)
    listed = (value(facts, "versions_offered") or "").split(",")
    if wanted is None or any("+" in item for item in listed):
        return set()
    releases = releases_asked(kb, name, None)
    platforms = platforms_of(snapshot)
    if not platforms and value(facts, "linux_named"):  # a Linux distribution, no architecture
        platforms = tuple(sorted({p for r in releases for p in r.get("platforms", [])}))
        platforms = tuple(p for p in platforms if p.startswith("linux"))
    return machines(releases, wanted, listed, platforms, python_of(facts, snapshot))


def asked_specifier(facts: Sequence[Fact]) -> tuple[str, SpecifierSet | None]:
    """The package pip could not satisfy and the releases it asked for (==2.4.1, ~=2.3); None
    for a bare name, a local build (+cu121) or a requirement pip would not read."""
    name, version, label = asked(facts)
    if not name or label:
        return name, None
    try:
        specifier = (
            SpecifierSet(f"=={version}") if version else Requirement(requirement(facts)).specifier
        )
    except (InvalidRequirement, InvalidSpecifier):
        return name, None
    return name, specifier if len(specifier) and not any("+" in str(s) for s in specifier) else None


def machines(
    releases: Sequence[Row],
    wanted: SpecifierSet,
    listed: Iterable[str],
    platforms: Sequence[str] = (),
    python: str | None = None,
) -> set[Machine]:
    """The (platform, Python) pairs, among those the text allows (all, when it says none), on
    which pip would list the releases it listed and find none of those asked for (==2.4.1,
    ~=2.3). Only final releases wheels.toml holds are compared, from the first listed up to the
    newest of those listed and the first asked for (a thread lists what the index had on its
    day; a release asked for existed). Empty when wheels.toml holds no release asked for or pip
    listed none of its rows."""
    finals = {
        str(row["version"]): row
        for row in releases
        if (version := parsed_version(str(row["version"]))) is not None
        and not (version.is_prerelease or version.is_postrelease or version.is_devrelease)
    }
    shown = {item.strip() for item in listed} & set(finals)
    targets = [row for version, row in finals.items() if wanted.contains(version)]
    if not targets or not shown:
        return set()
    earliest = min((str(row["version"]) for row in targets), key=sortable)
    first, newest = min(shown, key=sortable), max((*shown, earliest), key=sortable)
    expected = [
        row
        for version, row in finals.items()
        if sortable(first) <= sortable(version) <= sortable(newest)
    ]
    if not platforms:
        platforms = sorted(
            {p for row in finals.values() for p in row.get("platforms", [])} - {"any"}
        )
    pythons = [python] if python else _pythons(finals.values())
    return {
        (platform, minor)
        for platform in platforms
        for minor in pythons
        if not any(serves(row, minor, platform) for row in targets)
        and {str(row["version"]) for row in expected if serves(row, minor, platform)} == shown
    }


def platform_unpublished(
    releases: Sequence[Row], wanted: SpecifierSet, found: set[Machine]
) -> bool:
    """Whether no release asked for has a file for any platform pip's list fits (found by
    machines); False when no machine fits."""
    targets = [row for row in releases if wanted.contains(str(row["version"]))]
    if not targets or not found:
        return False
    published = {p for row in targets for p in row.get("platforms", [])}
    return "any" not in published and not published & {platform for platform, _ in found}


def _pythons(releases: Iterable[Row]) -> list[str]:
    """Every CPython 3 minor a cpXY tag of the releases names."""
    minors = {
        int(tag[3:].split("-")[0])
        for row in releases
        for tag in row.get("python_tags", [])
        if tag.startswith("cp3") and tag[3:].split("-")[0].isdigit()
    }
    return [f"3.{minor}" for minor in sorted(minors)]
