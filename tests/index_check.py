"""Check requirements against the real package index without downloading any wheel.

`pip install --dry-run` would download whole wheels (gigabytes of CUDA libraries) wherever the
index serves no separate core metadata, so the tests ask a cheaper, exact question instead: does
the index hold a wheel of a version the requirement accepts, for the target Python and platform?
The index is the one pip is configured to use; only its small project pages are fetched.
"""

from __future__ import annotations

from collections.abc import Iterable
from functools import lru_cache

import pytest
from packaging.requirements import Requirement
from packaging.tags import Tag, compatible_tags, cpython_tags
from packaging.utils import InvalidWheelFilename, canonicalize_name, parse_wheel_filename

from gpuenv.kbtools.index_client import (
    IndexUnavailable,
    parse_project_page,
    pip_index_url,
    urllib_fetch,
)

MANYLINUX_X86_64 = [f"manylinux_2_{n}_x86_64" for n in range(39, 16, -1)] + [
    "manylinux2014_x86_64",
    "manylinux2010_x86_64",
    "manylinux1_x86_64",
    "linux_x86_64",
]
MANYLINUX_AARCH64 = [f"manylinux_2_{n}_aarch64" for n in range(39, 16, -1)] + [
    "manylinux2014_aarch64",
    "linux_aarch64",
]
PLATFORM_TAGS = {
    "linux-x86_64": MANYLINUX_X86_64,
    "linux-aarch64": MANYLINUX_AARCH64,
    "windows-x86_64": ["win_amd64"],
    "macos-arm64": [f"macosx_{m}_0_arm64" for m in range(15, 10, -1)],
}


@lru_cache(maxsize=1)
def _index() -> str:
    try:
        return pip_index_url()
    except IndexUnavailable as exc:
        pytest.skip(f"no package index: {exc}")


@lru_cache(maxsize=64)
def wheel_files(project: str) -> tuple[str, ...]:
    url = f"{_index()}/{canonicalize_name(project)}/"
    try:
        answer = urllib_fetch(url, "application/vnd.pypi.simple.v1+json, text/html;q=0.5")
    except IndexUnavailable as exc:
        pytest.skip(f"the package index cannot be reached: {exc}")
    if answer.status != 200:
        return ()
    return tuple(
        f.filename
        for f in parse_project_page(answer.body, answer.content_type, url)
        if f.filename.endswith(".whl") and not f.yanked
    )


def target_tags(python: str, platform: str) -> frozenset[Tag]:
    major, minor = (int(p) for p in python.split(".")[:2])
    platforms = PLATFORM_TAGS[platform]
    return frozenset(
        [
            *cpython_tags((major, minor), platforms=platforms),
            *compatible_tags((major, minor), platforms=platforms),
        ]
    )


def available_versions(requirement: Requirement, python: str, platform: str) -> set[str]:
    """Versions of wheels on the index that the requirement accepts and the target can install."""
    tags = target_tags(python, platform)
    found = set()
    for filename in wheel_files(requirement.name):
        try:
            _, version, _, file_tags = parse_wheel_filename(filename)
        except InvalidWheelFilename:
            continue
        if file_tags & tags and requirement.specifier.contains(version, prereleases=True):
            found.add(str(version))
    return found


def unavailable(requirements: Iterable[str], python: str, platform: str) -> list[str]:
    """The requirements no wheel on the index satisfies for this target (empty = all fine)."""
    return [r for r in requirements if not available_versions(Requirement(r), python, platform)]
