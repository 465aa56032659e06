"""A build that reaches a GPU only through PTX needs a driver whose own CUDA is at least the
toolkit that built the PTX: minor-version compatibility runs SASS, never newer PTX. (TensorFlow
2.16+ reaches an H100 only through compute_90 PTX built with CUDA 12.3 or newer; under a CUDA 12.2
driver its kernels fail with CUDA_ERROR_UNSUPPORTED_PTX_VERSION.)"""

from __future__ import annotations

from gpuenv.diagnose.code import Compiled, compiled_code, framework_cuda, gpu_builds, label
from gpuenv.diagnose.context import Context, Gpu
from gpuenv.diagnose.findings import Evidence, Finding, Fix
from gpuenv.diagnose.fixes import driver_install, newest_fix, same_release_fix
from gpuenv.diagnose.rules_framework import build_evidence
from gpuenv.facts import FrameworkBuild
from gpuenv.kb.query.binaries import PtxNeed, ptx_needs, unmet_ptx_need
from gpuenv.kb.query.cuda import driver_supports_cuda, toolkit_min_driver, toolkit_sass_targets
from gpuenv.kb.query.frameworks import tf_runtime_codegen
from gpuenv.versions import CudaVersion

SUBJECT = "tensorflow"


def rule_ptx_jit(ctx: Context) -> list[Finding]:
    if ctx.driver is None or ctx.driver_dead or ctx.jetson or ctx.driver_max_cuda is None:
        return []
    findings = []
    ccs = [g.cc for g in ctx.gpus if g.cc is not None]
    for fw in gpu_builds(ctx):
        cuda = framework_cuda(fw)
        if cuda is not None:
            support = driver_supports_cuda(ctx.kb, ctx.driver, cuda, ctx.driver_os)
            if support.ok is False:
                continue  # the driver runs none of it: driver-too-old says so
        code = compiled_code(ctx, fw)
        if code is None:
            continue
        need = unmet_ptx_need(ptx_needs(code.sass, code.ptx, code.cuda, ccs), ctx.driver_max_cuda)
        if need is not None:
            gpu = next(g for g in ctx.gpus if g.cc == need.gpu)
            findings.append(_finding(ctx, fw, code, need, gpu))
    return findings


def _finding(ctx: Context, fw: FrameworkBuild, code: Compiled, need: PtxNeed, gpu: Gpu) -> Finding:
    have = ctx.driver_max_cuda.short if ctx.driver_max_cuda else "?"
    sm = f"sm_{need.gpu.major}{need.gpu.minor}"
    ptx = f"compute_{need.ptx.major}{need.ptx.minor}"
    return Finding(
        rule="ptx-jit-needs-newer-driver",
        cause="driver_too_old",
        severity="error",
        layer=f"framework:{fw.name}",
        title=f"{label(fw)} reaches {gpu.label} ({sm}) only through PTX built with CUDA "
        f"{need.cuda.short}; driver {ctx.driver} supports CUDA {have}",
        why=f"The build has no SASS that runs on {sm}, so the driver must JIT-compile its {ptx} "
        f"PTX. A driver JIT-compiles only PTX from a CUDA release no newer than its own, and "
        "minor-version compatibility does not extend to PTX: kernels fail with "
        'CUDA_ERROR_UNSUPPORTED_PTX_VERSION ("the provided PTX was compiled with an unsupported '
        'toolchain").',
        evidence=(
            build_evidence(fw),
            Evidence(
                "compiled architectures",
                f"SASS {', '.join(c.sm for c in sorted(code.sass)) or 'none'}; PTX "
                + (", ".join(f"compute_{c.major}{c.minor}{c.suffix}" for c in sorted(code.ptx))),
                code.where,
            ),
            Evidence("PTX built with", f"CUDA {need.cuda.short}", code.where),
            Evidence("GPU", f"{gpu.name} (cc {gpu.cc})", gpu.source),
            Evidence("driver version", f"{ctx.driver} (CUDA {have})", ctx.driver_source),
        ),
        fix=_fix(ctx, fw, need),
    )


def _fix(ctx: Context, fw: FrameworkBuild, need: PtxNeed) -> Fix:
    full = toolkit_min_driver(ctx.kb, need.cuda, ctx.driver_os)
    upgrade = (
        f"upgrade the driver to ≥ {full} (the driver of CUDA {need.cuda.short})"
        if full
        else (f"upgrade the driver to one of CUDA {need.cuda.short} or newer")
    )
    planned = same_release_fix(ctx, fw) or newest_fix(ctx, fw)
    if planned is not None and not planned.choice.sass:
        planned = None  # the plan cannot see that build's code: it could not check its PTX
    if planned is not None:
        return Fix(
            summary=f"Install {planned.summary}, which this driver runs on this GPU, or {upgrade}.",
            commands=planned.commands,
            installer=planned.installer,
        )
    return Fix(
        summary=upgrade[0].upper() + upgrade[1:] + ".",
        commands=driver_install(ctx, full.branch) if full else (),
        installer="system",
    )


def rule_runtime_codegen(ctx: Context) -> list[Finding]:
    """TensorFlow compiles kernels at run time for the GPU it finds with the CUDA it was built
    with (XLA; its MLIR-generated kernels): a GPU that CUDA cannot compile for does not run,
    whatever PTX the libraries hold and however new the driver (an RTX 5090 under any pip
    release built with CUDA 12.5 or older)."""
    findings = []
    for fw in gpu_builds(ctx):
        row = tf_runtime_codegen(ctx.kb, fw.version or "") if fw.name == "tensorflow" else None
        cuda = framework_cuda(fw)
        if row is None or cuda is None:
            continue
        known = {(t.major, t.minor) for t in toolkit_sass_targets(ctx.kb, cuda)}
        beyond = [g for g in ctx.gpus if g.cc and known and (g.cc.major, g.cc.minor) not in known]
        if beyond:
            findings.append(_codegen_finding(ctx, fw, cuda, beyond[0], ctx.kb.cite(SUBJECT, row)))
    return findings


def _codegen_finding(
    ctx: Context, fw: FrameworkBuild, cuda: CudaVersion, gpu: Gpu, where: str
) -> Finding:
    sm = f"sm_{gpu.cc.major}{gpu.cc.minor}" if gpu.cc else "?"
    return Finding(
        rule="gpu-newer-than-framework-cuda",
        cause="gpu_arch_unsupported",
        severity="error",
        layer=f"framework:{fw.name}",
        title=f"{label(fw)} compiles its kernels for {gpu.label} ({sm}) with its own CUDA "
        f"{cuda.short}, which cannot compile for that GPU",
        why="TensorFlow compiles kernels at run time for the GPU it finds (XLA, and its "
        "MLIR-generated kernels) with the CUDA it was built with; for a GPU that CUDA does not "
        'know, that fails ("PTX version ... does not support target", CUDA_ERROR_INVALID_PTX) '
        "whatever the driver, and the PTX in its libraries does not help.",
        evidence=(
            build_evidence(fw),
            Evidence("GPU", f"{gpu.name} (cc {gpu.cc})", gpu.source),
            Evidence("runs kernels compiled with", f"CUDA {cuda.short}", where),
        ),
        fix=Fix(
            summary=f"No TensorFlow release on the package index is built with a CUDA that "
            f"can compile for {sm}: use a TensorFlow built with a newer CUDA (NVIDIA's NGC "
            "TensorFlow containers, or a source build), or another GPU.",
            installer="system",
        ),
    )
