"""Rules about each framework's CUDA build: CUDA newer than the driver, GPU architecture not
compiled in, Python outside the release's range (CPU-only and ROCm builds: rules_builds.py)."""

from __future__ import annotations

from gpuenv.diagnose.choose import arch_reason
from gpuenv.diagnose.code import compiled_code, framework_cuda, gpu_builds, label
from gpuenv.diagnose.context import Context
from gpuenv.diagnose.findings import Evidence, Finding, Fix
from gpuenv.diagnose.fixes import newest_fix, same_release_fix
from gpuenv.facts import FrameworkBuild
from gpuenv.kb.query.cuda import (
    architecture,
    driver_supports_cuda,
    mvc_min_driver,
    toolkit_min_driver,
)
from gpuenv.kb.query.frameworks import (
    torch_release,
)
from gpuenv.versions import CudaVersion


def build_evidence(fw: FrameworkBuild) -> Evidence:
    parts = [f"{fw.name} {fw.version or '?'}"]
    if fw.variant:
        parts.append(f"variant {fw.variant}")
    parts.append(f"CUDA {fw.framework_cuda}" if fw.framework_cuda else "no CUDA")
    return Evidence(f"{fw.name} build", ", ".join(parts), fw.source or "target env")


def gpu_present(ctx: Context) -> bool:
    return bool(ctx.gpus) and not ctx.driver_dead


def version_tuple(text: str | None) -> tuple[int, ...]:
    out: list[int] = []
    for part in (text or "").split("+")[0].split("."):
        if not part.isdigit():
            break
        out.append(int(part))
    return tuple(out)


def gpu_evidence(ctx: Context) -> tuple[Evidence, ...]:
    out = [Evidence("GPU", f"{g.name} (cc {g.cc or '?'})", g.source) for g in ctx.gpus]
    if ctx.driver:
        out.append(Evidence("driver version", str(ctx.driver), ctx.driver_source))
    return tuple(out)


def rule_driver_too_old(ctx: Context) -> list[Finding]:
    if ctx.driver is None or ctx.driver_dead:
        return []
    findings = []
    for fw in gpu_builds(ctx):
        cuda = framework_cuda(fw)
        if cuda is None:
            continue
        support = driver_supports_cuda(ctx.kb, ctx.driver, cuda, ctx.driver_os)
        if support.ok is not False:
            continue
        findings.append(_driver_too_old(ctx, fw, cuda, ctx.driver_os))
    return findings


def _driver_too_old(ctx: Context, fw: FrameworkBuild, cuda: CudaVersion, os_name: str) -> Finding:
    mvc = mvc_min_driver(ctx.kb, cuda.major, os_name)
    native = toolkit_min_driver(ctx.kb, cuda, os_name)
    need = mvc or native
    commands: tuple[str, ...] = ()
    summary = f"Upgrade the driver to ≥ {need}" if need else "Upgrade the driver"
    fitting = same_release_fix(ctx, fw)
    if fitting:
        commands = fitting.commands
        summary = f"Install {fitting.summary}, which this driver runs" + (
            f", or upgrade the driver to ≥ {need}" if need else ""
        )
    # the compatibility package is a Linux driver component: not for Windows or WSL2
    forward = ctx.driver_os == "linux" and any(g.segment == "datacenter" for g in ctx.gpus)
    notes = (
        (
            f"Data-center GPU: the CUDA forward-compatibility package (cuda-compat-"
            f"{cuda.major}-{cuda.minor}) lets this driver run CUDA {cuda.short} without a "
            "driver upgrade.",
        )
        if forward
        else ()
    )
    return Finding(
        rule="driver-too-old",
        cause="driver_too_old",
        severity="error",
        layer=f"framework:{fw.name}",
        title=f"{label(fw)} is built for CUDA {cuda.short}; driver {ctx.driver} "
        f"supports up to CUDA {ctx.driver_max_cuda.short if ctx.driver_max_cuda else '?'}",
        why=f"A CUDA {cuda.major}.x runtime needs a driver of the CUDA {cuda.major} family "
        + (f"(≥ {mvc} under minor-version compatibility)" if mvc else "")
        + "; this driver is older, so CUDA initialisation fails "
        '("The NVIDIA driver on your system is too old").',
        evidence=(
            build_evidence(fw),
            Evidence("driver version", str(ctx.driver), ctx.driver_source),
        ),
        fix=Fix(
            summary=summary, commands=commands, installer=ctx.installer_for(fw.name), notes=notes
        ),
    )


def rule_arch_unsupported(ctx: Context) -> list[Finding]:
    if not ctx.gpus:
        return []
    findings = []
    for fw in gpu_builds(ctx):
        code = compiled_code(ctx, fw)
        sass, ptx, where = (code.sass, code.ptx, code.where) if code else ((), (), None)
        severity = "error"
        if where is None:
            reason, where = _retired_for_toolkit(ctx, fw)
            if reason is None:
                reason, where = _newer_than_toolkit(ctx, fw)
                # PyTorch's release wheels carry no PTX (the KB's arch lists); others may
                severity = "error" if fw.name == "torch" else "warning"
        else:
            reason = arch_reason(ctx.gpus, sass, ptx)
        if reason is None or where is None:
            continue
        findings.append(_arch_finding(ctx, fw, reason, where, severity))
    return findings


def _retired_for_toolkit(ctx: Context, fw: FrameworkBuild) -> tuple[str | None, str | None]:
    """Without the build's arch list: a CUDA newer than the last toolkit that can target a GPU's
    architecture cannot hold code for it, whatever the build's own list says."""
    cuda = framework_cuda(fw)
    if cuda is None:
        return None, None
    for gpu in ctx.gpus:
        row = architecture(ctx.kb, gpu.cc) if gpu.cc else None
        last = CudaVersion.parse(str(row["last_cuda"])) if row and "last_cuda" in row else None
        if row and last and gpu.cc and cuda > last:
            reason = (
                f"is built with CUDA {cuda.short}, which cannot compile for {gpu.label} "
                f"({row['name']}, sm_{gpu.cc.major}{gpu.cc.minor}; last supported by "
                f"CUDA {last.short})"
            )
            return reason, ctx.kb.cite("archs", row)
    return None, None


def _newer_than_toolkit(ctx: Context, fw: FrameworkBuild) -> tuple[str | None, str | None]:
    """Without the build's arch list: a GPU whose architecture came after the build's CUDA (an
    RTX 5090, sm_120 from CUDA 12.8, and a CUDA 12.4 build) gets no SASS from it; only PTX the
    driver JIT-compiles could serve it."""
    cuda = framework_cuda(fw)
    if cuda is None:
        return None, None
    for gpu in ctx.gpus:
        row = architecture(ctx.kb, gpu.cc) if gpu.cc else None
        first = CudaVersion.parse(str(row["first_cuda"])) if row and "first_cuda" in row else None
        if row and first and gpu.cc and (cuda.major, cuda.minor) < (first.major, first.minor):
            reason = (
                f"is built with CUDA {cuda.short}, older than {gpu.label} ({row['name']}, "
                f"sm_{gpu.cc.major}{gpu.cc.minor}, first supported by CUDA {first.short}): it has "
                "no native code for it, only PTX (if the build carries any) could run there"
            )
            return reason, ctx.kb.cite("archs", row)
    return None, None


def _arch_finding(
    ctx: Context, fw: FrameworkBuild, reason: str, where: str, severity: str = "error"
) -> Finding:
    return Finding(
        rule="gpu-arch-unsupported",
        cause="gpu_arch_unsupported",
        severity=severity,
        layer=f"framework:{fw.name}",
        title=f"{label(fw)} {reason}",
        why="A build runs on a GPU only if it holds SASS for the GPU's architecture (same major, "
        "equal or lower minor) or PTX that the driver can compile for it; otherwise kernels fail "
        'with "no kernel image is available for execution on the device".',
        evidence=(
            build_evidence(fw),
            Evidence("compiled architectures", reason, where),
            *(Evidence("GPU", f"{g.name} (cc {g.cc or '?'})", g.source) for g in ctx.gpus),
        ),
        fix=_arch_fix(ctx, fw),
    )


def _arch_fix(ctx: Context, fw: FrameworkBuild) -> Fix | None:
    """Another build of the installed release when one covers every GPU (2.8.0 cu126 for a
    Pascal card under 2.8.0 cu128; jax's CUDA 12 plugin for a V100), else the newest release
    that does, as `gpuenv plan` chooses them."""
    same = same_release_fix(ctx, fw)
    if same is not None and same.choice.build != fw.variant:
        return Fix(
            f"Install {same.summary}: the same release, built with code for this GPU.",
            same.commands,
            same.installer,
        )
    newest = newest_fix(ctx, fw)
    if newest is None:
        return None
    return Fix(
        f"Install {newest.summary}: the newest build that has code for this GPU.",
        newest.commands,
        newest.installer,
    )


def rule_python_range(ctx: Context) -> list[Finding]:
    if ctx.python is None:
        return []
    findings = []
    for fw in ctx.frameworks():
        if fw.name != "torch" or not fw.version:
            continue
        row = torch_release(ctx.kb, fw.version)
        if row is None:
            continue
        low, high = version_tuple(str(row["python_min"])), version_tuple(str(row["python_max"]))
        if low <= ctx.python <= high:
            continue
        findings.append(
            Finding(
                rule="python-version-unsupported",
                cause="python_version_unsupported",
                severity="warning",
                layer="framework:torch",
                title=f"torch {fw.version} supports Python {row['python_min']}–"
                f"{row['python_max']}; this env runs {ctx.python[0]}.{ctx.python[1]}",
                why="No official wheels exist for this combination; a build from source or a "
                "mislabelled wheel may break at import or at run time.",
                evidence=(build_evidence(fw),),
                citations=(ctx.kb.cite("torch", row),),
            )
        )
    return findings
