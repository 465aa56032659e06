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

from packaging.specifiers import SpecifierSet

from gpuenv.kb.model import Row
from gpuenv.kb.query._frameworks_util import parsed_version
from gpuenv.kb.show import python_fits

Machine = tuple[str, str]  # (platform as wheels.toml names it, Python "3.11")


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
    earliest = min((str(row["version"]) for row in targets), key=_key)
    first, newest = min(shown, key=_key), max((*shown, earliest), key=_key)
    expected = [
        row for version, row in finals.items() if _key(first) <= _key(version) <= _key(newest)
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
        if not any(_serves(row, platform, minor) for row in targets)
        and {str(row["version"]) for row in expected if _serves(row, platform, minor)} == shown
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


def _serves(row: Row, platform: str, python: str) -> bool:
    published = row.get("platforms", [])
    fits_platform = platform in published or "any" in published
    return fits_platform and python_fits(row.get("python_tags", []), python)


def _pythons(releases: Iterable[Row]) -> list[str]:
    """Every CPython 3 minor a cpXY tag of the releases names."""
    minors = {
        int(tag[3:].split("-")[0])
        for row in releases
        for tag in row.get("python_tags", [])
        if tag.startswith("cp3") and tag[3:].split("-")[0].isdigit()
    }
    return [f"3.{minor}" for minor in sorted(minors)]


def _key(version: str) -> tuple[int, ...]:
    parsed = parsed_version(version)
    return parsed.release if parsed is not None else ()
