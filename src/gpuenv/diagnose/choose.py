"""Small shared judgements about builds: the platform name of a machine, the CUDA of a PyTorch
variant label, and whether compiled GPU code covers every GPU. Pure; used by the doctor's rules
and by planning (which does the full choice of builds)."""

from __future__ import annotations

from collections.abc import Iterable

from gpuenv.diagnose.context import Context, Gpu
from gpuenv.kb.query.cuda import coverage
from gpuenv.versions import ComputeCapability, CudaVersion

PLATFORMS = {
    ("linux", "x86_64"): "linux-x86_64",
    ("linux", "amd64"): "linux-x86_64",
    ("linux", "aarch64"): "linux-aarch64",
    ("linux", "arm64"): "linux-aarch64",
    ("windows", "amd64"): "windows-x86_64",
    ("windows", "x86_64"): "windows-x86_64",
    ("darwin", "arm64"): "macos-arm64",
    ("darwin", "x86_64"): "macos-x86_64",
}


def platform_of(ctx: Context) -> str:
    return PLATFORMS.get((ctx.os, ctx.arch), f"{ctx.os}-{ctx.arch}")


def variant_cuda(variant: str) -> CudaVersion | None:
    """'cu126' -> CUDA 12.6; 'cpu', 'rocm6.2' -> None."""
    return CudaVersion.parse(variant) if variant.startswith("cu") else None


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
