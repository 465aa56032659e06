"""The maintainer's view of a package index: the CUDA pins in core metadata (summarize_pins), and
in one place the names of `gpuenv.index` (pages, metadata, HTTP) that refresh and audit use.
Reading the index itself lives in `gpuenv.index`, which `plan --create` uses too.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import Any

from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

from gpuenv.index import http
from gpuenv.index.metadata import (
    CoreMetadata,
    applicable_requirements,
    check_metadata_hash,
    marker_environment,
    metadata_url,
    parse_core_metadata,
    pinned_version,
)
from gpuenv.index.pages import (
    JSON_ACCEPT,
    PLATFORM_ORDER,
    IndexFile,
    Wheel,
    normalize_platform,
    parse_project_page,
    parse_wheel,
    platform_key,
    project_files,
    python_tag,
    python_tag_key,
)

__all__ = [
    "JSON_ACCEPT",
    "PLATFORM_ORDER",
    "CoreMetadata",
    "IndexFile",
    "Wheel",
    "applicable_requirements",
    "check_metadata_hash",
    "marker_environment",
    "metadata_url",
    "normalize_platform",
    "parse_core_metadata",
    "parse_project_page",
    "parse_wheel",
    "pinned_version",
    "platform_key",
    "project_files",
    "python_tag",
    "python_tag_key",
]

# The HTTP side lives in gpuenv.index.http; its names stay reachable here for the callers.
Fetcher = http.Fetcher
IndexUnavailable = http.IndexUnavailable
Response = http.Response
index_url_from_config = http.index_url_from_config
pip_index_url = http.pip_index_url
urllib_fetch = http.urllib_fetch
urllib_range = http.urllib_range


_SUMMARIZED = ("nvidia-cuda-runtime", "cuda-toolkit", "nvidia-cudnn", "nvidia-nccl")


def summarize_pins(lines: Iterable[str]) -> dict[str, Any]:
    """cuda, cudnn, nccl and the nvidia-*/cuda-toolkit lines among applicable Requires-Dist."""
    pins = sorted({line for line in lines if _is_cuda_pin(Requirement(line).name)})
    found: dict[str, str] = {}
    for line in pins:
        requirement = Requirement(line)
        name, version = canonicalize_name(requirement.name), pinned_version(requirement.specifier)
        kind = re.sub(r"-cu\d+$", "", name)
        if version and kind in _SUMMARIZED:
            found.setdefault(kind, version)
    cuda = found.get("nvidia-cuda-runtime") or found.get("cuda-toolkit")
    summary: dict[str, Any] = {"pins": pins} if pins else {}
    if cuda and len(cuda.split(".")) >= 2:
        summary["cuda"] = ".".join(cuda.split(".")[:2])
    for kind, key in (("nvidia-cudnn", "cudnn"), ("nvidia-nccl", "nccl")):
        if kind in found:
            summary[key] = found[kind]
    return summary


def _is_cuda_pin(name: str) -> bool:
    name = canonicalize_name(name)
    return name.startswith("nvidia-") or name == "cuda-toolkit"
