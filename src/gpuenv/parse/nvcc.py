"""`nvcc --version`: the toolkit release, its full version, the build and build date."""

from __future__ import annotations

import re
from dataclasses import dataclass

_NVCC_FULL = re.compile(r"release\s+(\d+\.\d+)\s*,\s*V(\d+(?:\.\d+)+)")
_NVCC_RELEASE = re.compile(r"Cuda compilation tools,\s*release\s+(\d+\.\d+)")
_BUILT_ON = re.compile(r"Built on\s+(\S+)")
_BUILD = re.compile(r"^\s*Build\s+(cuda_\S+)", re.MULTILINE)


@dataclass(frozen=True)
class NvccVersion:
    release: str | None  # "12.8"
    version: str | None  # "12.8.93" (the V number), None when only the release is printed
    build: str | None = None  # "cuda_12.8.r12.8/compiler.35583870_0"
    built_on: str | None = None  # "Fri_Feb_21_20:23:50_PST_2025"


def parse_nvcc_version(text: str) -> str | None:
    """'13.0.88' from 'Cuda compilation tools, release 13.0, V13.0.88'; '13.0' without a V."""
    full = _NVCC_FULL.search(text)
    if full:
        return full.group(2)
    release = _NVCC_RELEASE.search(text)
    return release.group(1) if release else None


def parse_nvcc_output(text: str) -> NvccVersion | None:
    """Everything `nvcc --version` says; None when the text has no release line."""
    release = _NVCC_RELEASE.search(text)
    if release is None:
        return None
    full = _NVCC_FULL.search(text, release.start())
    built_on, build = _BUILT_ON.search(text), _BUILD.search(text, release.end())
    return NvccVersion(
        release=release.group(1),
        version=full.group(2) if full else None,
        build=build.group(1) if build else None,
        built_on=built_on.group(1) if built_on else None,
    )
