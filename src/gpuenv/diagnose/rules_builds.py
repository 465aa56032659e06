"""Rules about builds that cannot use this machine's NVIDIA GPU at all: CPU-only builds while a
GPU is here (torch +cpu, tensorflow-cpu, jaxlib without its CUDA plugin) and ROCm builds of torch.
Each fix installs what `gpuenv plan` picks for the installed release."""

from __future__ import annotations

import re

from gpuenv.diagnose.choose import platform_of
from gpuenv.diagnose.context import Context
from gpuenv.diagnose.findings import Evidence, Finding, Fix
from gpuenv.diagnose.fixes import pip_uninstall, planned_install, release_of
from gpuenv.diagnose.rules_framework import (
    build_evidence,
    gpu_evidence,
    gpu_present,
    version_tuple,
)
from gpuenv.facts import FrameworkBuild
from gpuenv.kb.query.frameworks import tf_release, torch_default_variant

TF_LAST_NATIVE_WINDOWS_GPU = (2, 10)


def rule_cpu_only(ctx: Context) -> list[Finding]:
    if not gpu_present(ctx) or ctx.jetson:
        return []
    findings: list[Finding] = []
    for fw in ctx.frameworks():
        if fw.is_gpu_build is not False or fw.hip_version:
            continue
        if fw.name == "torch":
            findings.append(_torch_cpu(ctx, fw))
        elif fw.name == "tensorflow":
            findings.append(_tf_cpu(ctx, fw))
        elif fw.name == "jaxlib" and not _jax_has_gpu_plugin(ctx):
            findings.append(_jax_cpu(ctx, fw))
    return findings


def _jax_has_gpu_plugin(ctx: Context) -> bool:
    """Since jaxlib 0.4.30 jaxlib itself is the same wheel for CPU and GPU; the CUDA (or ROCm)
    plugin package makes JAX use the GPU, and the probe records it on the jax build."""
    jax = next((f for f in ctx.frameworks() if f.name == "jax"), None)
    if jax is not None and (jax.is_gpu_build or jax.hip_version):
        return True
    env = ctx.snapshot.python_env
    names = (d.name.lower().replace("_", "-") for d in (env.distributions if env else ()))
    return any(re.fullmatch(r"jax-(cuda|rocm)\d+-(plugin|pjrt)", n) for n in names)


def rule_rocm_build(ctx: Context) -> list[Finding]:
    """A ROCm (AMD) build of torch on a machine whose GPUs are NVIDIA's: it sees no GPU."""
    if not gpu_present(ctx) or ctx.jetson or ctx.snapshot.host.rocm.value:
        return []
    return [
        _rocm_finding(ctx, fw)
        for fw in ctx.frameworks()
        if fw.name == "torch" and fw.hip_version and not fw.framework_cuda
    ]


def _rocm_finding(ctx: Context, fw: FrameworkBuild) -> Finding:
    gpus = ", ".join(g.name for g in ctx.gpus)
    return Finding(
        rule="framework-rocm-build",
        cause="mps_or_rocm_specific",
        severity="error",
        layer="framework:torch",
        title=f"torch {fw.version} is a ROCm (AMD GPU) build, but this machine's GPUs are "
        f"NVIDIA's: {gpus}",
        why="A ROCm build runs on AMD GPUs through HIP and holds no CUDA code; on an NVIDIA GPU "
        "torch.cuda.is_available() is False and everything runs on the CPU.",
        evidence=(
            build_evidence(fw),
            Evidence("ROCm (HIP) version", fw.hip_version or "", fw.source or "target env"),
            *gpu_evidence(ctx),
        ),
        fix=_cuda_torch_fix(ctx, fw),
    )


def _cuda_torch_fix(ctx: Context, fw: FrameworkBuild) -> Fix | None:
    """Install the CUDA build of the installed torch release that fits this machine; else the
    newest that does."""
    base = release_of(fw.version)
    same = planned_install(ctx, [f"torch=={base}"]) if base else None
    if same:
        return Fix(f"Install {same.summary}.", same.commands, same.installer)
    newest = planned_install(ctx, ["torch"])
    if newest is None:
        return None
    if base:
        lead = f"No CUDA build of torch {base} known to gpuenv fits this machine"
    else:
        lead = f"The installed torch version ({fw.version or 'empty'}) could not be read"
    return Fix(f"{lead}; install {newest.summary}.", newest.commands, newest.installer)


def _where_from(ctx: Context, fw: FrameworkBuild) -> str:
    replaced = _cuda_companion(ctx)
    if replaced is not None:
        return (
            f"{replaced.name} {replaced.version} in this env is a CUDA {replaced.framework_cuda} "
            "build, so a CUDA torch was most likely here and a later install replaced it (a "
            "`pip install` of a package that depends on torch takes the index's default build)."
        )
    platform = platform_of(ctx)
    default = torch_default_variant(ctx.kb, fw.version or "", platform) if fw.version else None
    if default == "cpu":
        return (
            f"On {platform} the package index serves the CPU build of torch {fw.version} by "
            "default; CUDA builds come from PyTorch's own index."
        )
    if fw.variant == "cpu":
        return (
            "This is the '+cpu' build from PyTorch's CPU index (or installed by a later "
            "install that replaced the CUDA build)."
        )
    return "The installed build carries no CUDA code."


def _cuda_companion(ctx: Context) -> FrameworkBuild | None:
    """torchvision/torchaudio built for CUDA beside a CPU torch: the trace of a replaced torch."""
    return next(
        (
            f
            for f in ctx.frameworks()
            if f.name in ("torchvision", "torchaudio") and f.framework_cuda and f.is_gpu_build
        ),
        None,
    )


def _torch_cpu(ctx: Context, fw: FrameworkBuild) -> Finding:
    gpu_names = ", ".join(g.name for g in ctx.gpus)
    return Finding(
        rule="framework-cpu-build",
        cause="cpu_only_build",
        severity="error",
        layer="framework:torch",
        title=f"torch {fw.version or '(version unknown)'} is a CPU-only build, but this machine "
        f"has {gpu_names}",
        why="torch.cuda.is_available() is False with this build whatever the driver. "
        + _where_from(ctx, fw),
        evidence=(build_evidence(fw), *gpu_evidence(ctx)),
        fix=_cuda_torch_fix(ctx, fw),
    )


def _tf_cpu(ctx: Context, fw: FrameworkBuild) -> Finding:
    version = version_tuple(fw.version)
    if ctx.os == "windows" and version[:2] > TF_LAST_NATIVE_WINDOWS_GPU:
        return Finding(
            rule="tensorflow-windows-native-gpu",
            cause="cpu_only_build",
            severity="error",
            layer="framework:tensorflow",
            title=f"TensorFlow {fw.version} has no GPU support on native Windows",
            why="TensorFlow 2.10 was the last release with CUDA support on native Windows; "
            "later releases use the GPU only under WSL2.",
            evidence=(build_evidence(fw), *gpu_evidence(ctx)),
            fix=Fix(
                summary="Run TensorFlow under WSL2 (pip install tensorflow[and-cuda] there), or "
                "pin TensorFlow 2.10 with CUDA 11.2 / cuDNN 8.1 on Windows.",
                commands=("wsl --install -d Ubuntu",),
                installer="system",
            ),
        )
    installer = ctx.installer_for(fw.distribution or "tensorflow")
    base = release_of(fw.version)
    row = tf_release(ctx.kb, base, "linux") if base else None
    planned = planned_install(ctx, [f"tensorflow=={base}"], "tensorflow") if base else None
    commands: list[str] = []
    if planned is not None:
        if fw.distribution and fw.distribution != "tensorflow":
            # tensorflow-cpu and tensorflow share the tensorflow/ folder: remove the CPU one first
            commands.append(pip_uninstall(ctx, planned.installer, [fw.distribution]))
        commands += planned.commands
        summary = f"Install {planned.summary}" + (
            " with its CUDA libraries (the [and-cuda] extra)."
            if "and-cuda" in planned.choice.extras
            else "; it needs " + "; ".join(planned.choice.system_needs or ("CUDA",)) + "."
        )
    else:
        summary = (
            f"No CUDA build of TensorFlow {base or fw.version or '?'} known to gpuenv fits this "
            "machine; `gpuenv plan tensorflow` names the release that does."
        )
    citations = (ctx.kb.cite("tensorflow", row),) if row else ()
    return Finding(
        rule="framework-cpu-build",
        cause="cpu_only_build",
        severity="error",
        layer=f"framework:{fw.name}",
        title=f"TensorFlow {fw.version} ({fw.distribution or 'tensorflow'}) is not a CUDA build",
        why="This TensorFlow was built without CUDA (or its CUDA libraries are not installed), "
        "so it lists no GPU devices.",
        evidence=(build_evidence(fw), *gpu_evidence(ctx)),
        fix=Fix(
            summary=summary,
            commands=tuple(commands),
            installer=planned.installer if planned else installer,
        ),
        citations=citations,
    )


def _jax_cpu(ctx: Context, fw: FrameworkBuild) -> Finding:
    jax = next((f for f in ctx.frameworks() if f.name == "jax"), None)
    version = release_of(jax.version if jax and jax.version else fw.version)
    planned = planned_install(ctx, [f"jax=={version}"], "jax") if version else None
    if planned is not None:
        fix = Fix(
            f"Install {planned.summary}: jax with jaxlib and the CUDA plugin of the same release.",
            planned.commands,
            planned.installer,
        )
    else:
        fix = Fix(
            f"No CUDA build of jax {version or fw.version or '?'} known to gpuenv fits this "
            "machine; `gpuenv plan jax` names the release that does.",
            (),
            ctx.installer_for("jax"),
        )
    return Finding(
        rule="framework-cpu-build",
        cause="cpu_only_build",
        severity="error",
        layer=f"framework:{jax.name if jax else fw.name}",
        title=f"jaxlib {fw.version} has no CUDA plugin installed",
        why="JAX runs on the GPU through the jax-cuda plugin packages; without them it uses "
        "the CPU.",
        evidence=(build_evidence(fw), *gpu_evidence(ctx)),
        fix=fix,
    )
