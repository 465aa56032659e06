"""Jetson: PyTorch from the wheels NVIDIA builds for each JetPack release, never the generic aarch64
wheel of the package index (it has no code for the Jetson GPU and no JetPack CUDA). A wheel NVIDIA
lists only on a web page (not a link page an installer can read) is named but not planned."""

from __future__ import annotations

from collections.abc import Sequence

from gpuenv.kb import Row
from gpuenv.kb.query.jetson import torch_wheel_rows
from gpuenv.plan.candidate import Candidate
from gpuenv.plan.target import Target
from gpuenv.versions import ComputeCapability, CudaVersion, sortable


def jetson_candidates(target: Target, framework: str) -> list[Candidate]:
    jetpack = target.jetpack
    if jetpack is None:
        return []
    if framework != "torch":
        return [_no_build(target, framework, jetpack)]
    found = [
        _torch(jetpack, row, str(version))
        for row in torch_wheel_rows(target.kb, str(jetpack["jetpack"]))
        for version in row.get("torch_versions", [])
    ]
    return _newest_first(found) or [_no_build(target, framework, jetpack)]


def _newest_first(found: list[Candidate]) -> list[Candidate]:
    """Wheels an installer can fetch first, each group newest first."""
    usable = [c for c in found if not c.blocked]
    named = [c for c in found if c.blocked]
    return _by_version(usable) + _by_version(named)


def _by_version(found: list[Candidate]) -> list[Candidate]:
    return sorted(found, key=lambda c: sortable(c.version), reverse=True)


def _torch(jetpack: Row, row: Row, version: str) -> Candidate:
    where = str(row["where"])
    link = _link_page(where)
    candidate = Candidate(
        framework="torch",
        name="torch",
        version=version,
        build="jetson",
        cuda=CudaVersion.parse(str(jetpack["cuda"])),
        sass=tuple(
            c for c in (ComputeCapability.parse(str(t)) for t in jetpack["device_ccs"]) if c
        ),
        python_range=(str(jetpack["python"]), str(jetpack["python"])),
        platforms=("linux-aarch64",),
        find_links=link,
        why=f"NVIDIA's torch {version} wheel for JetPack {jetpack['jetpack']} ({where})",
    )
    if link is None:
        return candidate.blocked_by(
            "jetson",
            f"NVIDIA lists this wheel at {where}, which is not a page of wheel links an installer "
            "can read; download it from there by hand",
        )
    return candidate


def _link_page(where: str) -> str | None:
    """A URL an installer reads with --find-links: NVIDIA's redist folders."""
    if where.startswith("https://") and "/redist/" in where:
        return where
    return None


def _no_build(target: Target, framework: str, jetpack: Row) -> Candidate:
    candidate = Candidate(
        framework=framework,
        name=framework,
        version="",
        build="jetson",
        cuda=CudaVersion.parse(str(jetpack["cuda"])),
    )
    release = str(jetpack["jetpack"])
    if framework == "torch" and release.split(".")[0].isdigit() and int(release[0]) >= 7:
        why = (
            f"no NVIDIA torch wheel for JetPack {release} is in the knowledge base; JetPack 7 "
            "uses server-style (SBSA) packaging, and PyTorch's own aarch64 CUDA 13 wheels list "
            "Thor (sm_110) in PyTorch's CUDA support matrix, but gpuenv does not plan them for "
            "Jetson yet; NVIDIA's containers carry one"
        )
    else:
        why = (
            f"no NVIDIA {framework} wheel for JetPack {release} is in the knowledge base, and the "
            "generic aarch64 wheels do not run on Jetson; NVIDIA's L4T containers carry one"
        )
    return candidate.blocked_by("jetson", why)


def jetson_companions(target: Target, companion: str, torch: Candidate) -> Sequence[Candidate]:
    """NVIDIA publishes no torchvision/torchaudio wheels for Jetson in the knowledge base."""
    return ()
