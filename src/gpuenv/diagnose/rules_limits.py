"""Rules about what this driver cannot serve at all: a GPU beyond its architecture's last driver
branch (a K80 under R580), and a CUDA toolkit or runtime newer than the driver runs (nvcc 13.0
under a CUDA 12.2 driver), which breaks whatever is built or JIT-compiled with it."""

from __future__ import annotations

from dataclasses import dataclass

from gpuenv.diagnose.context import Context
from gpuenv.diagnose.findings import Evidence, Finding, Fix
from gpuenv.diagnose.fixes import driver_install, quote
from gpuenv.diagnose.limits import Ceiling, branch_example, driver_ceilings
from gpuenv.kb.query.cuda import (
    MVC,
    NATIVE,
    TOO_OLD,
    driver_supports_cuda,
    mvc_min_driver,
    toolkit_min_driver,
)
from gpuenv.versions import CudaVersion, DriverVersion

# what a runtime library file is: libcudart.so.13, cudart64_13.dll
_RUNTIMES = ("libcudart.so", "cudart64_")


def rule_driver_ceiling(ctx: Context) -> list[Finding]:
    """The driver's branch is newer than the last one that supports the GPU's architecture."""
    if ctx.jetson:
        return []
    unique = {(c.gpu.name, c.architecture): c for c in driver_ceilings(ctx)}
    return [_ceiling_finding(ctx, c) for c in unique.values()]


def _ceiling_finding(ctx: Context, ceiling: Ceiling) -> Finding:
    example = branch_example(ctx.kb, ceiling.last_branch)
    gpu = ceiling.gpu
    return Finding(
        rule="driver-drops-gpu",
        cause="gpu_arch_unsupported",
        severity="error",
        layer="driver",
        title=f"NVIDIA driver {ceiling.driver} cannot drive {gpu.label}: "
        f"{ceiling.architecture} GPUs are supported up to the R{ceiling.last_branch} branch",
        why=f"R{ceiling.last_branch} is the last driver branch for {ceiling.architecture}; "
        f"later branches (this one is R{ceiling.driver_branch}) do not list the GPU at all "
        '(nvidia-smi: "No devices were found"), so no CUDA program can use it.',
        evidence=(
            Evidence("GPU", f"{gpu.name} (cc {gpu.cc or '?'}, {ceiling.architecture})", gpu.source),
            Evidence("driver version", str(ceiling.driver), ctx.driver_source),
            Evidence(
                "last driver branch",
                f"R{ceiling.last_branch} for {ceiling.architecture}",
                f"kb: {ctx.kb.cite('archs', ceiling.row)}",
            ),
        ),
        fix=Fix(
            summary=f"Install a driver of the R{ceiling.last_branch} branch, the last that "
            f"supports {ceiling.architecture}"
            + (f" (e.g. {example})" if example else "")
            + f", with CUDA builds that branch runs; or move to a GPU R{ceiling.driver_branch} "
            "supports.",
            commands=driver_install(ctx, ceiling.last_branch),
            installer="system",
        ),
        citations=(ctx.kb.cite("archs", ceiling.row),),
    )


@dataclass(frozen=True)
class _Found:
    what: str  # "nvcc 13.0.88", "libcudart.so.13 13.0.96"
    where: str
    source: str


def rule_toolkit_driver(ctx: Context) -> list[Finding]:
    """A CUDA toolkit or runtime on the machine the driver cannot run: building extensions, JIT
    and Triton's ptxas break with it. Under minor-version compatibility, information."""
    if ctx.driver is None or ctx.driver_dead or ctx.jetson:
        return []
    findings = []
    for cuda, found in sorted(_by_release(ctx).items(), reverse=True):
        support = driver_supports_cuda(ctx.kb, ctx.driver, cuda, ctx.driver_os)
        if support.how == TOO_OLD:
            findings.append(_toolkit_finding(ctx, cuda, found, "warning"))
        elif support.how == MVC:
            findings.append(_toolkit_finding(ctx, cuda, found, "info"))
    return findings


def _by_release(ctx: Context) -> dict[CudaVersion, list[_Found]]:
    """Toolkits and CUDA runtimes outside Python packages, by CUDA major.minor (a runtime
    installed by a framework's wheels is the framework's: other rules judge it)."""
    out: dict[CudaVersion, list[_Found]] = {}
    for toolkit in ctx.snapshot.toolkits:
        cuda = CudaVersion.parse(toolkit.toolkit_cuda) if toolkit.toolkit_cuda else None
        if cuda is not None:
            what = ("nvcc " if toolkit.source == "nvcc" else "CUDA toolkit ") + str(cuda)
            where = (toolkit.path or "?") + (" (nvcc on PATH)" if toolkit.on_path else "")
            out.setdefault(CudaVersion(cuda.major, cuda.minor), []).append(
                _Found(what, where, toolkit.source)
            )
    for lib in ctx.snapshot.libraries:
        cuda = CudaVersion.parse(lib.version) if lib.version else None
        runtime = lib.soname.startswith(_RUNTIMES) and lib.load_rank == 0
        if cuda is None or not runtime or lib.origin == "pip":
            continue
        out.setdefault(CudaVersion(cuda.major, cuda.minor), []).append(
            _Found(f"{lib.soname} {lib.version}", lib.path, lib.origin)
        )
    return out


def _toolkit_finding(
    ctx: Context, cuda: CudaVersion, found: list[_Found], severity: str
) -> Finding:
    have = ctx.driver_max_cuda.short if ctx.driver_max_cuda else "?"
    need = toolkit_min_driver(ctx.kb, cuda, ctx.driver_os)
    shown = ", ".join(f.what for f in found)
    runs = severity == "info"
    return Finding(
        rule="toolkit-newer-than-driver",
        cause="driver_too_old" if not runs else "other",
        severity=severity,
        layer="toolkit",
        title=f"CUDA {cuda.short} on this machine ({shown}) is newer than driver {ctx.driver} "
        f"(CUDA {have})" + (": it runs only under minor-version compatibility" if runs else ""),
        why=_what_breaks(cuda, runs),
        evidence=(
            *(Evidence("CUDA", f.what, f"{f.where} ({f.source})") for f in found),
            Evidence("driver version", f"{ctx.driver} (CUDA {have})", ctx.driver_source),
        ),
        fix=_toolkit_fix(ctx, cuda, need),
    )


def _what_breaks(cuda: CudaVersion, runs: bool) -> str:
    if runs:
        return (
            f"Code built with CUDA {cuda.short} runs on this driver, but PTX it emits (nvcc "
            "without SASS for the GPU, NVRTC) cannot be JIT-compiled by it, and features of the "
            "newer release fail at run time."
        )
    return (
        f'Programs built with CUDA {cuda.short} fail to start on this driver ("CUDA driver '
        'version is insufficient for CUDA runtime version"). What it breaks: building CUDA '
        "extensions (torch.utils.cpp_extension, flash-attn, apex, mmcv ops) makes binaries this "
        "driver cannot run, as does CuPy or NVRTC JIT through this toolkit; PTX it emits cannot "
        "be JIT-compiled here; and Triton, when TRITON_PTXAS_PATH points at this toolkit's "
        "ptxas, compiles kernels this driver refuses to load. Frameworks whose CUDA comes from "
        "their own wheels are not affected."
    )


def _runs(ctx: Context, text: str | None) -> bool:
    cuda = CudaVersion.parse(text) if text else None
    if cuda is None or ctx.driver is None:
        return False
    return driver_supports_cuda(ctx.kb, ctx.driver, cuda, ctx.driver_os).how == NATIVE


def _mvc_span(ctx: Context) -> str:
    """', or any CUDA 12.x under minor-version compatibility' where the driver allows it."""
    have = ctx.driver_max_cuda
    if have is None or ctx.driver is None:
        return ""
    floor = mvc_min_driver(ctx.kb, have.major, ctx.driver_os)
    if floor is None or ctx.driver < floor:
        return ""
    return (
        f"; a newer CUDA {have.major}.x runs under minor-version compatibility when it builds "
        "SASS for the GPU, since this driver cannot JIT its PTX"
    )


def _toolkit_fix(ctx: Context, cuda: CudaVersion, need: DriverVersion | None) -> Fix:
    fitting = [t.path for t in ctx.snapshot.toolkits if t.path and _runs(ctx, t.toolkit_cuda)]
    have = ctx.driver_max_cuda.short if ctx.driver_max_cuda else "the driver's"
    summary = f"Use a CUDA toolkit the driver runs (CUDA ≤ {have}{_mvc_span(ctx)})"
    commands: list[str] = []
    if fitting:
        path = fitting[0]
        summary += f", such as {path}"
        if ctx.os != "windows":
            commands.append(
                f"export CUDA_HOME={quote(ctx, path)} PATH={quote(ctx, path + '/bin')}:$PATH"
            )
    summary += "; or upgrade the driver" + (
        f" to ≥ {need} (the driver of CUDA {cuda.short})" if need else ""
    )
    if need is not None:
        commands.extend(driver_install(ctx, need.branch))
    return Fix(summary=summary + ".", commands=tuple(commands), installer="system")
