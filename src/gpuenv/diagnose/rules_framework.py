"""Rules about each framework's build: CPU-only while a GPU is here, CUDA newer than the driver,
GPU architecture not compiled in, Python outside the release's range, wrong platform wheel."""

from __future__ import annotations

from gpuenv.diagnose.choose import arch_reason, platform_of
from gpuenv.diagnose.context import Context
from gpuenv.diagnose.findings import Evidence, Finding, Fix
from gpuenv.diagnose.fixes import pip_install, pip_uninstall, torch_install
from gpuenv.facts import FrameworkBuild
from gpuenv.kb.query.cuda import (
    architecture,
    driver_supports_cuda,
    mvc_min_driver,
    toolkit_min_driver,
)
from gpuenv.kb.query.frameworks import (
    tf_release,
    torch_arch_list,
    torch_default_variant,
    torch_release,
)
from gpuenv.versions import ComputeCapability, CudaVersion

TF_LAST_NATIVE_WINDOWS_GPU = (2, 10)


def _build_evidence(fw: FrameworkBuild) -> Evidence:
    parts = [f"{fw.name} {fw.version or '?'}"]
    if fw.variant:
        parts.append(f"variant {fw.variant}")
    parts.append(f"CUDA {fw.framework_cuda}" if fw.framework_cuda else "no CUDA")
    return Evidence(f"{fw.name} build", ", ".join(parts), fw.source or "target env")


def _gpu_present(ctx: Context) -> bool:
    return bool(ctx.gpus) and not ctx.driver_dead


def _version_tuple(text: str | None) -> tuple[int, ...]:
    out: list[int] = []
    for part in (text or "").split("+")[0].split("."):
        if not part.isdigit():
            break
        out.append(int(part))
    return tuple(out)


def rule_cpu_only(ctx: Context) -> list[Finding]:
    if not _gpu_present(ctx) or ctx.jetson:
        return []
    findings: list[Finding] = []
    for fw in ctx.frameworks():
        if fw.is_gpu_build is not False or fw.hip_version:
            continue
        if fw.name == "torch":
            findings.append(_torch_cpu(ctx, fw))
        elif fw.name == "tensorflow":
            findings.append(_tf_cpu(ctx, fw))
        elif fw.name == "jaxlib":
            findings.append(_jax_cpu(ctx, fw))
    return findings


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
    base = (fw.version or "").split("+")[0]
    fix: Fix | None = None
    same_line = torch_install(ctx, [f"torch=={base}"]) if base else None
    if same_line:
        fix = Fix(f"Install {same_line[0]}.", same_line[1], ctx.installer_for("torch"))
    else:
        newest = torch_install(ctx, ["torch"])
        if newest:
            fix = Fix(
                f"No CUDA build of torch {base} fits this machine; install {newest[0]}.",
                newest[1],
                ctx.installer_for("torch"),
            )
    return Finding(
        rule="framework-cpu-build",
        cause="cpu_only_build",
        severity="error",
        layer="framework:torch",
        title=f"torch {fw.version} is a CPU-only build, but this machine has {gpu_names}",
        why="torch.cuda.is_available() is False with this build whatever the driver. "
        + _where_from(ctx, fw),
        evidence=(_build_evidence(fw), *_gpu_evidence(ctx)),
        fix=fix,
    )


def _gpu_evidence(ctx: Context) -> tuple[Evidence, ...]:
    out = [Evidence("GPU", f"{g.name} (cc {g.cc or '?'})", g.source) for g in ctx.gpus]
    if ctx.driver:
        out.append(Evidence("driver version", str(ctx.driver), ctx.driver_source))
    return tuple(out)


def _tf_cpu(ctx: Context, fw: FrameworkBuild) -> Finding:
    version = _version_tuple(fw.version)
    if ctx.os == "windows" and version[:2] > TF_LAST_NATIVE_WINDOWS_GPU:
        return Finding(
            rule="tensorflow-windows-native-gpu",
            cause="cpu_only_build",
            severity="error",
            layer="framework:tensorflow",
            title=f"TensorFlow {fw.version} has no GPU support on native Windows",
            why="TensorFlow 2.10 was the last release with CUDA support on native Windows; "
            "later releases use the GPU only under WSL2.",
            evidence=(_build_evidence(fw), *_gpu_evidence(ctx)),
            fix=Fix(
                summary="Run TensorFlow under WSL2 (pip install tensorflow[and-cuda] there), or "
                "pin TensorFlow 2.10 with CUDA 11.2 / cuDNN 8.1 on Windows.",
                commands=("wsl --install -d Ubuntu",),
                installer="system",
            ),
        )
    installer = ctx.installer_for(fw.distribution or "tensorflow")
    commands: list[str] = []
    if fw.distribution and fw.distribution != "tensorflow":
        commands.append(pip_uninstall(ctx, installer, [fw.distribution]))
    base = (fw.version or "").split("+")[0]
    row = tf_release(ctx.kb, base, "linux") if base else None
    requirement = f"tensorflow[and-cuda]=={base}" if base else "tensorflow[and-cuda]"
    commands.append(pip_install(ctx, installer, [requirement]))
    citations = (ctx.kb.cite("tensorflow", row),) if row else ()
    return Finding(
        rule="framework-cpu-build",
        cause="cpu_only_build",
        severity="error",
        layer="framework:tensorflow",
        title=f"TensorFlow {fw.version} ({fw.distribution or 'tensorflow'}) is not a CUDA build",
        why="This TensorFlow was built without CUDA (or its CUDA libraries are not installed), "
        "so it lists no GPU devices.",
        evidence=(_build_evidence(fw), *_gpu_evidence(ctx)),
        fix=Fix(
            summary="Install TensorFlow with its CUDA libraries (the [and-cuda] extra).",
            commands=tuple(commands),
            installer=installer,
        ),
        citations=citations,
    )


def _jax_cpu(ctx: Context, fw: FrameworkBuild) -> Finding:
    jax = next((f for f in ctx.frameworks() if f.name == "jax"), None)
    version = (jax.version if jax and jax.version else fw.version or "").split("+")[0]
    extra = "cuda13" if ctx.driver_max_cuda and ctx.driver_max_cuda.major >= 13 else "cuda12"
    installer = ctx.installer_for("jax")
    return Finding(
        rule="framework-cpu-build",
        cause="cpu_only_build",
        severity="error",
        layer="framework:jax",
        title=f"jaxlib {fw.version} has no CUDA plugin installed",
        why="JAX runs on the GPU through the jax-cuda plugin packages; without them it uses "
        "the CPU.",
        evidence=(_build_evidence(fw), *_gpu_evidence(ctx)),
        fix=Fix(
            summary=f"Install the JAX CUDA plugin matching jax {version} ({extra}).",
            commands=(pip_install(ctx, installer, [f"jax[{extra}]=={version}"]),),
            installer=installer,
        ),
    )


def rule_driver_too_old(ctx: Context) -> list[Finding]:
    if ctx.driver is None or ctx.driver_dead:
        return []
    findings = []
    for fw in ctx.frameworks():
        cuda = CudaVersion.parse(fw.framework_cuda) if fw.framework_cuda else None
        if cuda is None or not fw.is_gpu_build:
            continue
        os_name = "windows" if ctx.os == "windows" else "linux"
        support = driver_supports_cuda(ctx.kb, ctx.driver, cuda, os_name)
        if support.ok is not False:
            continue
        findings.append(_driver_too_old(ctx, fw, cuda, os_name))
    return findings


def _driver_too_old(ctx: Context, fw: FrameworkBuild, cuda: CudaVersion, os_name: str) -> Finding:
    mvc = mvc_min_driver(ctx.kb, cuda.major, os_name)
    native = toolkit_min_driver(ctx.kb, cuda, os_name)
    need = mvc or native
    commands: tuple[str, ...] = ()
    summary = f"Upgrade the driver to ≥ {need}" if need else "Upgrade the driver"
    if fw.name == "torch" and fw.version:
        fitting = torch_install(ctx, [f"torch=={fw.version.split('+')[0]}"])
        if fitting:
            commands = fitting[1]
            summary = f"Install {fitting[0]}, which this driver runs" + (
                f", or upgrade the driver to ≥ {need}" if need else ""
            )
    forward = any(g.segment == "datacenter" for g in ctx.gpus)
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
        title=f"{fw.name} {fw.version} is built for CUDA {cuda.short}; driver {ctx.driver} "
        f"supports up to CUDA {ctx.driver_max_cuda.short if ctx.driver_max_cuda else '?'}",
        why=f"A CUDA {cuda.major}.x runtime needs a driver of the CUDA {cuda.major} family "
        + (f"(≥ {mvc} under minor-version compatibility)" if mvc else "")
        + "; this driver is older, so CUDA initialisation fails "
        '("The NVIDIA driver on your system is too old").',
        evidence=(
            _build_evidence(fw),
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
    for fw in ctx.frameworks():
        if not fw.is_gpu_build:
            continue
        sass, ptx, where = _compiled_archs(ctx, fw)
        if where is None:
            reason, where = _retired_for_toolkit(ctx, fw)
        else:
            reason = arch_reason(ctx.gpus, sass, ptx)
        if reason is None or where is None:
            continue
        findings.append(_arch_finding(ctx, fw, reason, where))
    return findings


def _compiled_archs(
    ctx: Context, fw: FrameworkBuild
) -> tuple[frozenset[ComputeCapability], frozenset[ComputeCapability], str | None]:
    """What the binaries hold (fatbin scan: ground truth), else the KB's list for the build."""
    scans = [b for b in ctx.snapshot.binaries if b.package == (fw.distribution or fw.name)]
    scans = [b for b in scans if b.sass or b.ptx]
    if scans:
        # the main CUDA library decides: the one with the fewest targets is the binding limit
        main = min(scans, key=lambda b: len(b.sass) + len(b.ptx))
        sass = frozenset(c for c in map(ComputeCapability.parse, main.sass) if c)
        ptx = frozenset(c for c in map(ComputeCapability.parse, main.ptx) if c)
        return sass, ptx, f"fatbin of {main.path}"
    if fw.name == "torch" and fw.version:
        cuda = CudaVersion.parse(fw.framework_cuda) if fw.framework_cuda else None
        variant = fw.variant or (cuda.label if cuda else None)
        if variant:
            archs = torch_arch_list(ctx.kb, fw.version, variant, platform_of(ctx))
            if archs:
                return archs[0], archs[1], f"kb: torch arch list {fw.version} {variant}"
    return frozenset(), frozenset(), None


def _retired_for_toolkit(ctx: Context, fw: FrameworkBuild) -> tuple[str | None, str | None]:
    """Without the build's arch list: a CUDA newer than the last toolkit that can target a GPU's
    architecture cannot hold code for it, whatever the build's own list says."""
    cuda = CudaVersion.parse(fw.framework_cuda) if fw.framework_cuda else None
    if cuda is None:
        return None, None
    for gpu in ctx.gpus:
        row = architecture(ctx.kb, gpu.cc) if gpu.cc else None
        last = CudaVersion.parse(str(row["last_cuda"])) if row and "last_cuda" in row else None
        if row and last and gpu.cc and cuda > last:
            reason = (
                f"is built with CUDA {cuda.short}, which cannot compile for {gpu.name} "
                f"({row['name']}, sm_{gpu.cc.major}{gpu.cc.minor}; last supported by "
                f"CUDA {last.short})"
            )
            return reason, ctx.kb.cite("archs", row)
    return None, None


def _arch_finding(ctx: Context, fw: FrameworkBuild, reason: str, where: str) -> Finding:
    newest = torch_install(ctx, ["torch"]) if fw.name == "torch" else None
    fix = None
    if newest:
        fix = Fix(
            summary=f"Install {newest[0]}: the newest build that has code for this GPU.",
            commands=newest[1],
            installer=ctx.installer_for("torch"),
        )
    return Finding(
        rule="gpu-arch-unsupported",
        cause="gpu_arch_unsupported",
        severity="error",
        layer=f"framework:{fw.name}",
        title=f"{fw.name} {fw.version} {reason}",
        why="A build runs on a GPU only if it holds SASS for the GPU's architecture (same major, "
        "equal or lower minor) or PTX that the driver can compile for it; otherwise kernels fail "
        'with "no kernel image is available for execution on the device".',
        evidence=(
            _build_evidence(fw),
            Evidence("compiled architectures", reason, where),
            *(Evidence("GPU", f"{g.name} (cc {g.cc})", g.source) for g in ctx.gpus),
        ),
        fix=fix,
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
        low, high = _version_tuple(str(row["python_min"])), _version_tuple(str(row["python_max"]))
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
                evidence=(_build_evidence(fw),),
                citations=(ctx.kb.cite("torch", row),),
            )
        )
    return findings
