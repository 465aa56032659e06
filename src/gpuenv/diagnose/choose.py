"""Which PyTorch build fits this machine: the driver's CUDA, every GPU's architecture, the platform.

Pure. Used by doctor's fixes (install the right build of the same torch line, or the newest build
that still covers a GPU) and shared with planning.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from gpuenv.diagnose.context import Context, Gpu
from gpuenv.kb.query.cuda import coverage, driver_supports_cuda
from gpuenv.kb.query.frameworks import torch_arch_list, torch_release, torch_releases
from gpuenv.versions import ComputeCapability, CudaVersion

PLATFORMS = {
    ("linux", "x86_64"): "linux-x86_64",
    ("linux", "amd64"): "linux-x86_64",
    ("linux", "aarch64"): "linux-aarch64",
    ("linux", "arm64"): "linux-aarch64",
    ("windows", "amd64"): "windows-x86_64",
    ("windows", "x86_64"): "windows-x86_64",
    ("darwin", "arm64"): "macos-arm64",
}


def platform_of(ctx: Context) -> str:
    return PLATFORMS.get((ctx.os, ctx.arch), f"{ctx.os}-{ctx.arch}")


@dataclass(frozen=True)
class Rejection:
    candidate: str  # "2.13 cu130"
    rule: str  # "driver" | "arch" | "platform" | "python"
    reason: str


@dataclass(frozen=True)
class VariantChoice:
    torch: str | None  # the torch line or version chosen
    variant: str | None  # "cu126"
    rejected: tuple[Rejection, ...]
    arch_unknown: bool = False  # chosen without a known arch list


def variant_cuda(variant: str) -> CudaVersion | None:
    return CudaVersion.parse(variant) if variant.startswith("cu") else None


def driver_reason(ctx: Context, cuda: CudaVersion) -> str | None:
    """None when the driver runs `cuda` (natively or under minor-version compatibility)."""
    if ctx.driver is None:
        return None
    os_name = "windows" if ctx.os == "windows" else "linux"
    support = driver_supports_cuda(ctx.kb, ctx.driver, cuda, os_name)
    if support.ok is False:
        need = (
            f"needs driver ≥ {support.min_driver}" if support.min_driver else "needs a newer driver"
        )
        return f"built for CUDA {cuda.short}, {need}; you have {ctx.driver}"
    return None


def arch_reason(
    gpus: Iterable[Gpu], sass: Iterable[ComputeCapability], ptx: Iterable[ComputeCapability]
) -> str | None:
    """None when every GPU runs this code (SASS, or PTX JIT); else which GPU is left out."""
    sass_set, ptx_set = frozenset(sass), frozenset(ptx)
    for gpu in gpus:
        if gpu.cc is None:
            continue
        cov = coverage(sass_set, ptx_set, gpu.cc)
        if not cov.native and not cov.via_ptx:
            listed = ", ".join(sorted(c.sm for c in sass_set)) or "none"
            return (
                f"has no code for {gpu.name} (sm_{gpu.cc.major}{gpu.cc.minor}); built for {listed}"
            )
    return None


def choose_torch_variant(ctx: Context, torch_version: str) -> VariantChoice:
    """The best CUDA variant of one torch release for this machine: the highest CUDA the driver
    runs whose builds cover every GPU."""
    row = torch_release(ctx.kb, torch_version)
    if row is None:
        return VariantChoice(None, None, ())
    platform = platform_of(ctx)
    rejected: list[Rejection] = []
    line = str(row["torch"])
    variants = sorted(
        (v for v in row.get("cuda_variants", []) if variant_cuda(v)),
        key=lambda v: variant_cuda(v) or CudaVersion(0, 0),
        reverse=True,
    )
    for variant in variants:
        cuda = variant_cuda(variant)
        assert cuda is not None
        reason = driver_reason(ctx, cuda)
        if reason:
            rejected.append(Rejection(f"{line} {variant}", "driver", reason))
            continue
        archs = torch_arch_list(ctx.kb, torch_version, variant, platform)
        if archs is None:
            if ctx.gpus and any(g.cc for g in ctx.gpus):
                rejected.append(
                    Rejection(f"{line} {variant}", "arch", "its GPU architectures are unknown")
                )
                continue
            return VariantChoice(line, variant, tuple(rejected), arch_unknown=True)
        reason = arch_reason(ctx.gpus, *archs)
        if reason:
            rejected.append(Rejection(f"{line} {variant}", "arch", reason))
            continue
        return VariantChoice(line, variant, tuple(rejected))
    return VariantChoice(None, None, tuple(rejected))


def newest_fitting_torch(ctx: Context) -> VariantChoice:
    """The newest torch release with a variant that fits this machine (for retired GPUs: the last
    release that still supports them)."""
    rejected: list[Rejection] = []
    for row in torch_releases(ctx.kb):
        choice = choose_torch_variant(ctx, str(row["torch"]))
        if choice.variant and not choice.arch_unknown:
            return VariantChoice(choice.torch, choice.variant, tuple(rejected) + choice.rejected)
        rejected.extend(choice.rejected)
    return VariantChoice(None, None, tuple(rejected))
