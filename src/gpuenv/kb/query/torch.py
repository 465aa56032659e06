"""PyTorch lookups over torch.toml: release lines, default variants, arch lists, wheel indexes.

Every function is pure and answers None (or an empty tuple) for what the knowledge base does not
know; a torch version is accepted in any form pip shows ("2.4.1", "2.4.1+cu121", "2.5.0rc1").
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from gpuenv.kb.model import KnowledgeBase, Row
from gpuenv.kb.query._frameworks_util import minor_line, release_tuple
from gpuenv.versions import ComputeCapability

SUBJECT = "torch"

# platform names accepted by the lookups -> (arch_list platform, release field)
_PLATFORMS: dict[str, tuple[str, str]] = {
    "linux-x86_64": ("linux-x86_64", "pypi_linux_x86_64"),
    "linux": ("linux-x86_64", "pypi_linux_x86_64"),
    "linux_x86_64": ("linux-x86_64", "pypi_linux_x86_64"),
    "linux-64": ("linux-x86_64", "pypi_linux_x86_64"),
    "linux-aarch64": ("linux-aarch64", "pypi_linux_aarch64"),
    "linux_aarch64": ("linux-aarch64", "pypi_linux_aarch64"),
    "windows-x86_64": ("windows-x86_64", "pypi_windows"),
    "windows": ("windows-x86_64", "pypi_windows"),
    "win32": ("windows-x86_64", "pypi_windows"),
    "win-64": ("windows-x86_64", "pypi_windows"),
    "win_amd64": ("windows-x86_64", "pypi_windows"),
    "macos": ("macos", "pypi_macos"),
    "macos-arm64": ("macos", "pypi_macos"),
    "darwin": ("macos", "pypi_macos"),
    "osx-arm64": ("macos", "pypi_macos"),
    "macos-x86_64": ("macos", "pypi_macos"),
    "osx-64": ("macos", "pypi_macos"),
}
_CUDA_LABEL = re.compile(r"^cu\d{2,3}$")
_ROCM_LABEL = re.compile(r"^rocm\d+(\.\d+)*$")


def torch_releases(kb: KnowledgeBase) -> tuple[Row, ...]:
    """All release rows, newest line first."""
    rows = kb.rows(SUBJECT, "release")
    return tuple(sorted(rows, key=lambda row: release_tuple(row["torch"]) or (), reverse=True))


def torch_release(kb: KnowledgeBase, torch_version: str) -> Row | None:
    """The row of the minor line of `torch_version` ("2.4.1+cu121" -> the 2.4 row)."""
    line = minor_line(torch_version)
    if line is None:
        return None
    for row in kb.rows(SUBJECT, "release"):
        if release_tuple(row["torch"]) == line:
            return row
    return None


def torchvision_for(kb: KnowledgeBase, torch_version: str) -> str | None:
    """The torchvision minor line released with this torch line ("2.4.1" -> "0.19")."""
    row = torch_release(kb, torch_version)
    return str(row["torchvision"]) if row else None


def torchaudio_for(kb: KnowledgeBase, torch_version: str) -> str | None:
    row = torch_release(kb, torch_version)
    return str(row["torchaudio"]) if row and "torchaudio" in row else None


def torch_default_variant(kb: KnowledgeBase, torch_version: str, platform: str) -> str | None:
    """What a plain `pip install torch==X` from the package index gets: "cu121", "cpu" ..."""
    row = torch_release(kb, torch_version)
    names = _PLATFORMS.get(platform.lower())
    if row is None or names is None:
        return None
    value = row.get(names[1])
    return str(value) if value is not None else None


def torch_variants(kb: KnowledgeBase, torch_version: str) -> tuple[str, ...]:
    """The CUDA and ROCm wheel variants of a torch line on download.pytorch.org."""
    row = torch_release(kb, torch_version)
    if row is None:
        return ()
    return (*row["cuda_variants"], *row.get("rocm_variants", ()))


def torch_arch_row(
    kb: KnowledgeBase, torch_version: str, variant: str, platform: str = "linux-x86_64"
) -> Row | None:
    """The arch_list row covering this torch line, variant and platform."""
    line = minor_line(torch_version)
    names = _PLATFORMS.get(platform.lower())
    if line is None or names is None:
        return None
    for row in kb.rows(SUBJECT, "arch_list"):
        if row["variant"] != variant or row["platform"] != names[0]:
            continue
        low, high = release_tuple(row["torch_min"]), release_tuple(row["torch_max"])
        if low is not None and high is not None and low <= line <= high:
            return row
    return None


def torch_arch_list(
    kb: KnowledgeBase, torch_version: str, variant: str, platform: str = "linux-x86_64"
) -> tuple[frozenset[ComputeCapability], frozenset[ComputeCapability]] | None:
    """(sass, ptx) compiled into the release wheels; None when not known.

    An empty ptx set means either "no PTX" or "PTX not established" (the row then has no `ptx`
    field; `torch_arch_row` tells them apart). Reading it as "no PTX" is the cautious side.
    """
    row = torch_arch_row(kb, torch_version, variant, platform)
    if row is None:
        return None
    return _ccs(row["sass"]), _ccs(row.get("ptx", ()))


def torch_index_url(kb: KnowledgeBase, variant: str) -> str | None:
    """The --index-url for a wheel variant ("cu121" -> "https://download.pytorch.org/whl/cu121")."""
    kind = _variant_kind(variant)
    if kind is None or not _known_variant(kb, kind, variant):
        return None
    rows = [
        row
        for row in kb.rows(SUBJECT, "index")
        if row["variant_kind"] == kind and row.get("form", "index") == "index"
    ]
    if not rows:
        return None
    newest = max(rows, key=lambda row: release_tuple(row["since"]) or ())
    return str(newest["url_template"]).format(variant=variant)


def torch_find_links(kb: KnowledgeBase, torch_version: str, variant: str) -> str | None:
    """The -f page of a release published before PyTorch's per-variant indexes (1.8-1.10:
    https://download.pytorch.org/whl/torch_stable.html); None for a release on an index."""
    kind = _variant_kind(variant)
    line = minor_line(torch_version)
    if kind is None or line is None or not _known_variant(kb, kind, variant):
        return None
    for row in kb.rows(SUBJECT, "index"):
        if row["variant_kind"] != kind or row.get("form") != "find-links":
            continue
        low, high = release_tuple(row["since"]), release_tuple(row.get("until"))
        if low is not None and low <= line and (high is None or line <= high):
            return str(row["url_template"]).format(variant=variant)
    return None


def _variant_kind(variant: str) -> str | None:
    if variant in ("cpu", "xpu"):
        return variant
    if _CUDA_LABEL.match(variant):
        return "cuda"
    if _ROCM_LABEL.match(variant):
        return "rocm"
    return None


def _known_variant(kb: KnowledgeBase, kind: str, variant: str) -> bool:
    if kind in ("cpu", "xpu"):
        return True
    field = "cuda_variants" if kind == "cuda" else "rocm_variants"
    return any(variant in row.get(field, ()) for row in kb.rows(SUBJECT, "release"))


def _ccs(values: Iterable[str]) -> frozenset[ComputeCapability]:
    parsed = (ComputeCapability.parse(value) for value in values)
    return frozenset(cc for cc in parsed if cc is not None)
