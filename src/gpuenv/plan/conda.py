"""conda, mamba and pixi: PyTorch, TensorFlow, JAX (jaxlib) and CuPy from conda-forge (the CUDA
builds the knowledge base lists, each selected by its build string or by the env's cuda-version
pin); frameworks or platforms conda-forge builds the knowledge base does not list are planned as
wheels, installed by pip inside the conda env."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace

from gpuenv.kb import Row
from gpuenv.kb.query.frameworks import conda_forge_builds, conda_pytorch_builds
from gpuenv.plan import wheels
from gpuenv.plan.candidate import Candidate, variant_rank
from gpuenv.plan.floors import toolkit_floor
from gpuenv.plan.model import CondaSpec
from gpuenv.plan.target import Target
from gpuenv.plan.torch import companion_candidates
from gpuenv.versions import ComputeCapability, CudaVersion, sortable

CONDA_PLATFORMS = {
    "linux-x86_64": "linux-64",
    "linux-aarch64": "linux-aarch64",
    "windows-x86_64": "win-64",
    "macos-arm64": "osx-arm64",
    "macos-x86_64": "osx-64",
}


# framework -> the conda-forge package whose builds carry its CUDA
FORGE_PACKAGES = {"tensorflow": "tensorflow", "jax": "jaxlib", "cupy": "cupy"}


def conda_candidates(target: Target, framework: str) -> list[Candidate] | None:
    """conda-forge builds of `framework`; None when the knowledge base holds none of it for the
    target's platform (the plan then takes wheels, in a pip section)."""
    if framework in FORGE_PACKAGES:
        return forge_candidates(target, framework)
    if framework != "torch":
        return None
    rows = _builds(target)
    if not target.wants_gpu:
        builds = conda_pytorch_builds(target.kb)
        versions = sorted({str(r["pytorch"]) for r in builds}, key=sortable, reverse=True)
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


# ---- TensorFlow, jaxlib, CuPy ------------------------------------------------------------------


def forge_candidates(target: Target, framework: str) -> list[Candidate] | None:
    """CUDA builds for a GPU target (CPU builds otherwise) of the conda-forge package serving
    `framework`, newest release first; None when none serves the target's platform."""
    platform = CONDA_PLATFORMS.get(target.platform)
    if platform is None or target.jetson:
        return None
    rows = conda_forge_builds(target.kb, FORGE_PACKAGES[framework], platform)
    wanted = [r for r in rows if ("cuda" in r) == target.wants_gpu]
    if framework == "cupy" and not target.wants_gpu and rows:
        top = _forge(target, framework, rows[0])
        return [top.blocked_by("gpu", "CuPy runs only on an NVIDIA GPU")]
    if not wanted:
        return None
    found = [_forge(target, framework, row) for row in wanted]
    return sorted(found, key=lambda c: (wheels.newest_first(c.version), variant_rank(c, target)))


def _forge(target: Target, framework: str, row: Row) -> Candidate:
    package = str(row["package"])
    version = str(row["version"])
    cuda = CudaVersion.parse(str(row["cuda"])) if "cuda" in row else None
    glob = str(row["build_string"]) if row.get("build_string") else None
    sass = _ccs(row["sass"]) if "sass" in row else None
    companion = str(row["companion"]) if row.get("companion") else None
    shown = f"CUDA {cuda.short}" if cuda else "CPU"
    return Candidate(
        framework=framework,
        name=package,
        version=version,
        build=(glob or "").rstrip("*") or (f"cuda{cuda.major}x" if cuda else "cpu"),
        cuda=cuda,
        sass=sass,
        ptx=_ccs(row.get("ptx", [])),
        min_cc=toolkit_floor(target, cuda) if sass is None else None,
        python_range=(str(row["python_min"]), str(row["python_max"])),
        conda=CondaSpec(package, version, glob),
        companions=((companion, version, ()),) if companion else (),
        why=f"conda-forge {package} {version}, {shown} build"
        + ("" if glob else " (the env's cuda-version selects it)"),
    )
