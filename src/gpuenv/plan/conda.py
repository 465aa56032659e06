"""conda, mamba and pixi: PyTorch from conda-forge (the CUDA builds the knowledge base lists, each
pinned with its cuda-version); frameworks conda-forge builds the knowledge base does not list are
planned as wheels, installed by pip inside the conda env."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace

from gpuenv.kb import Row
from gpuenv.kb.query.frameworks import conda_pytorch_builds
from gpuenv.plan import wheels
from gpuenv.plan.candidate import Candidate, variant_rank
from gpuenv.plan.model import CondaSpec
from gpuenv.plan.target import Target
from gpuenv.plan.torch import companion_candidates
from gpuenv.versions import ComputeCapability, CudaVersion

CONDA_PLATFORMS = {
    "linux-x86_64": "linux-64",
    "linux-aarch64": "linux-aarch64",
    "windows-x86_64": "win-64",
    "macos-arm64": "osx-arm64",
}


def conda_candidates(target: Target, framework: str) -> list[Candidate] | None:
    """conda-forge builds of `framework`; None when the knowledge base holds none of it (the
    plan then takes wheels, in a pip section)."""
    if framework != "torch":
        return None
    rows = _builds(target)
    if not target.wants_gpu:
        builds = conda_pytorch_builds(target.kb)
        versions = sorted({str(r["pytorch"]) for r in builds}, key=wheels.version_key, reverse=True)
        return [_cpu(target, v) for v in versions]
    found = [_cuda(target, row) for row in rows]
    return sorted(found, key=lambda c: (wheels.newest_first(c.version), variant_rank(c, target)))


def _builds(target: Target) -> list[Row]:
    platform = CONDA_PLATFORMS.get(target.platform)
    arm = "tegra" if target.jetson else "sbsa"
    if platform is None:
        return []
    builds = conda_pytorch_builds(target.kb, platform)
    return [row for row in builds if row.get("arm_variant", arm) == arm]


def _ccs(values: Sequence[object]) -> tuple[ComputeCapability, ...]:
    return tuple(c for c in (ComputeCapability.parse(str(v)) for v in values) if c)


def _cuda(target: Target, row: Row) -> Candidate:
    cuda = CudaVersion.parse(str(row["cuda"]))
    version = str(row["pytorch"])
    label = f"cuda{cuda.major}{cuda.minor}" if cuda else "cuda"
    return Candidate(
        framework="torch",
        name="pytorch",
        version=version,
        build=label,
        cuda=cuda,
        sass=_ccs(row["sass"]),
        ptx=_ccs(row.get("ptx", [])),
        strict_arch=True,
        conda=CondaSpec("pytorch", version, f"{label}*"),
        why=f"conda-forge pytorch {version} built with CUDA {row['cuda']}",
    )


def _cpu(target: Target, version: str) -> Candidate:
    return Candidate(
        framework="torch",
        name="pytorch",
        version=version,
        build="cpu",
        conda=CondaSpec("pytorch", version, "cpu*"),
        why=f"conda-forge pytorch {version}, CPU build",
    )


def conda_companions(target: Target, companion: str, torch: Candidate) -> Sequence[Candidate]:
    """torchvision/torchaudio from conda-forge, at the release that pairs with the torch."""
    as_wheel = Candidate(framework="torch", name="torch", version=torch.version, build="")
    out = []
    for candidate in companion_candidates(target, companion, {"torch": as_wheel}):
        spec = CondaSpec(companion, candidate.version, None)
        out.append(_conda_companion(candidate, torch, spec))
    return out


def _conda_companion(candidate: Candidate, torch: Candidate, spec: CondaSpec) -> Candidate:
    return replace(
        candidate,
        build=torch.build,
        cuda=torch.cuda,
        sass=torch.sass,
        ptx=torch.ptx,
        python_tags=None,
        platforms=None,
        conda=spec,
        why=f"conda-forge {candidate.name} {candidate.version}, the release for pytorch "
        f"{torch.version}",
    )
