"""Rules about the environment around the frameworks: extensions built for another torch,
Jetson wheels, an unreadable interpreter, and information about toolkits (the CUDA library
wheels are rules_libs.py's)."""

from __future__ import annotations

import re
from dataclasses import dataclass

from packaging.requirements import InvalidRequirement, Requirement
from packaging.specifiers import SpecifierSet
from packaging.utils import canonicalize_name

from gpuenv.diagnose.choose import platform_of
from gpuenv.diagnose.context import Context, Gpu
from gpuenv.diagnose.extension_fixes import planned_extension
from gpuenv.diagnose.findings import Evidence, Finding, Fix
from gpuenv.diagnose.fixes import pip_install, planned_install
from gpuenv.diagnose.limits import jetpacks_for, jetson_gpus
from gpuenv.facts import DistributionFacts, FrameworkBuild
from gpuenv.kb.query.frameworks import torch_default_variant, torch_index_url, torchvision_for
from gpuenv.kb.query.jetson import jetpack_for_l4t, jetpack_row
from gpuenv.versions import CudaVersion

EXTENSION_LABEL = re.compile(r"pt(?P<torch>\d{2,3})cu(?P<cuda>\d{2,3})")
# mmcv's .../cu121/torch2.1.0/... find-links paths, flash-attn's +cu122torch2.3 wheel names
WHEEL_URL_BUILD = re.compile(r"cu(?P<cuda>\d{2,3})[/_-]?torch(?P<torch>\d+\.\d+)")


@dataclass(frozen=True)
class BuiltFor:
    """What a compiled extension says it was built against, and where it says so."""

    torch_line: str | None  # "2.1"
    cuda: CudaVersion | None
    torch_spec: SpecifierSet | None  # a Requires-Dist pin on torch
    where: str


def built_for(dist: DistributionFacts) -> BuiltFor | None:
    """Its Requires-Dist pin on torch, its version label (+pt21cu121), or the wheel it came from
    (.../cu121/torch2.1.0/... or +cu122torch2.3 in a direct_url)."""
    for line in dist.requires:
        try:
            req = Requirement(line)
        except InvalidRequirement:
            continue
        if canonicalize_name(req.name) == "torch" and str(req.specifier).startswith("=="):
            return BuiltFor(None, None, req.specifier, f"{dist.name} Requires-Dist: {line}")
    label = dist.version.split("+", 1)[1] if "+" in dist.version else ""
    match = EXTENSION_LABEL.search(label)
    if match:
        line = f"{match.group('torch')[0]}.{match.group('torch')[1:]}"
        return BuiltFor(line, _label_cuda(match.group("cuda")), None, f"version label +{label}")
    match = WHEEL_URL_BUILD.search(dist.direct_url or "")
    if match:
        cuda = _label_cuda(match.group("cuda"))
        return BuiltFor(match.group("torch"), cuda, None, f"installed from {dist.direct_url}")
    return None


def _label_cuda(digits: str) -> CudaVersion | None:
    """'121' -> 12.1, '92' -> 9.2; 'cu12' in flash-attn's wheel names means CUDA 12.x (only the
    major is compared)."""
    if len(digits) == 2 and digits.startswith("1"):
        return CudaVersion(int(digits), 0)
    return CudaVersion.parse("cu" + digits)


def _disagrees(built: BuiltFor, torch: FrameworkBuild) -> bool:
    version = (torch.version or "").split("+")[0]
    if built.torch_spec is not None:
        return not built.torch_spec.contains(version, prereleases=True)
    line = ".".join(version.split(".")[:2])
    torch_cuda = CudaVersion.parse(torch.framework_cuda) if torch.framework_cuda else None
    cuda_differs = bool(built.cuda and torch_cuda and built.cuda.major != torch_cuda.major)
    return (
        built.torch_line != line or cuda_differs or (built.cuda is not None and torch_cuda is None)
    )


def rule_extensions(ctx: Context) -> list[Finding]:
    torch = next((f for f in ctx.frameworks() if f.name == "torch"), None)
    env = ctx.snapshot.python_env
    if torch is None or not torch.version or env is None:
        return []
    findings = []
    for dist in env.distributions:
        if canonicalize_name(dist.name) == "torch":
            continue
        built = built_for(dist)
        if built is not None and _disagrees(built, torch):
            findings.append(_extension_finding(ctx, dist, built, torch))
    return findings


def _extension_finding(
    ctx: Context, dist: DistributionFacts, built: BuiltFor, torch: FrameworkBuild
) -> Finding:
    torch_cuda = CudaVersion.parse(torch.framework_cuda) if torch.framework_cuda else None
    installer = ctx.installer_for(dist.name)
    base = torch.version.split("+")[0] if torch.version else "?"
    name = canonicalize_name(dist.name)
    planned = planned_extension(ctx, name, _torch_pin(ctx, torch)) if torch.version else None
    command = _companion_install(ctx, dist, torch) or (
        planned.command
        if planned is not None
        else pip_install(ctx, installer, [name], reinstall=True)
        + " --no-deps --no-build-isolation --no-binary "
        + name
    )
    summary = (
        f"Reinstall {dist.name} built for torch {base}"
        + (f" and CUDA {torch_cuda.short}" if torch_cuda else "")
        + " (or build it from source against this torch), or install the torch it pins."
    )
    if planned is not None:
        summary = f"Install {planned.summary}, or install the torch it was built for."
    return Finding(
        rule="extension-build-mismatch",
        cause="extension_build_mismatch",
        severity="error",
        layer=f"extension:{dist.name}",
        title=f"{dist.name} {dist.version} was built for another torch/CUDA than torch "
        f"{torch.version}",
        why="Compiled extensions link against one torch ABI and CUDA; another torch gives "
        'undefined symbols at import ("operator torchvision::nms does not exist") or wrong '
        "results.",
        evidence=(
            Evidence(f"{dist.name} built for", built.where, "distribution metadata"),
            Evidence(
                "torch", f"{torch.version} (CUDA {torch.framework_cuda or 'none'})", torch.source
            ),
        ),
        fix=Fix(summary=summary, commands=(command,), installer=installer),
    )


def _torch_pin(ctx: Context, torch: FrameworkBuild) -> str:
    """A constraint naming the installed torch build as the plan does: '==2.4.1+cu118' for a
    variant index's wheel, '===2.4.1' for the package index's own (its version has no label)."""
    version = torch.version or ""
    variant = torch.variant or ""
    if "+" in version or not re.fullmatch(r"cu\d{2,3}|cpu", variant):
        return f"=={version}"
    if torch_default_variant(ctx.kb, version, platform_of(ctx)) == variant:
        return f"==={version}"  # exactly the unlabelled build, not '2.4.1+cu124'
    return f"=={version}+{variant}"


def _companion_install(ctx: Context, dist: DistributionFacts, torch: FrameworkBuild) -> str | None:
    """torchvision is released for one torch: install the one paired with the installed torch."""
    if canonicalize_name(dist.name) != "torchvision" or not torch.version:
        return None
    base, _, label = torch.version.partition("+")
    line = torchvision_for(ctx.kb, base)
    if line is None:
        return None
    patch = base.split(".")[2] if base.count(".") >= 2 else "0"
    version = f"{line}.{patch}" + (f"+{label}" if label.startswith("cu") else "")
    index = torch_index_url(ctx.kb, label) if label.startswith("cu") else None
    return pip_install(
        ctx,
        ctx.installer_for(dist.name),
        [f"torchvision=={version}"],
        extra_index_urls=(index,) if index else (),
    )


def rule_jetson_wheel(ctx: Context) -> list[Finding]:
    """The package index's aarch64 torch on a Jetson (probed, or a Jetson module declared with
    --gpu): it is CPU-only or built for server (SBSA) CUDA, and runs nothing on the Jetson GPU."""
    if not ctx.jetson:
        return []
    torch = next((f for f in ctx.frameworks() if f.name == "torch"), None)
    if torch is None or not torch.version or _jetson_build(torch):
        return []
    jetson = ctx.snapshot.host.jetson.value
    row = jetpack_for_l4t(ctx.kb, jetson.l4t_release) if jetson and jetson.l4t_release else None
    if row is None and jetson and jetson.jetpack:
        row = jetpack_row(ctx.kb, jetson.jetpack)
    jetpack = str(row["jetpack"]) if row else None
    modules = jetson_gpus(ctx.gpus)
    return [
        Finding(
            rule="jetson-generic-wheel",
            cause="wrong_platform_wheel",
            severity="error",
            layer="framework:torch",
            title=f"torch {torch.version} is the generic aarch64 wheel, not a Jetson build",
            why="Jetson runs CUDA through JetPack's L4T libraries; the package index's aarch64 "
            "torch is either CPU-only or built for server (SBSA) CUDA, which does not run on "
            "this board" + (f" (JetPack {jetpack}, CUDA {row['cuda']})" if row else "") + ".",
            evidence=(
                Evidence("torch build", torch.version, torch.source),
                Evidence(
                    "L4T",
                    jetson.l4t_release if jetson and jetson.l4t_release else "?",
                    ctx.snapshot.host.jetson.source,
                ),
                *(Evidence("GPU", f"{g.name} (cc {g.cc or '?'})", g.source) for g in modules),
            ),
            fix=_jetson_fix(ctx, jetpack, modules[0] if modules else None),
            citations=(ctx.kb.cite("jetson", row),) if row else (),
        )
    ]


def _jetson_build(torch: FrameworkBuild) -> bool:
    return ".nv" in (torch.version or "") or "nv" in (torch.variant or "")


def _jetson_fix(ctx: Context, jetpack: str | None, gpu: Gpu | None) -> Fix:
    """NVIDIA's wheel for this JetPack, as `gpuenv plan torch` picks it."""
    planned = planned_install(ctx, ["torch"])
    if planned is not None:
        return Fix(
            f"Install NVIDIA's {planned.summary} for JetPack {jetpack}.",
            planned.commands,
            planned.installer,
        )
    releases = ", ".join(jetpacks_for(ctx.kb, gpu.cc if gpu else None))
    known = f"JetPack {jetpack}" if jetpack else "your JetPack release"
    return Fix(
        summary=f"Install NVIDIA's PyTorch wheel for {known} (or use the matching l4t-pytorch "
        "container).",
        commands=(),
        installer="pip",
        notes=(
            "`gpuenv plan torch --jetpack "
            + (jetpack or "X.Y")
            + "` gives the wheel and where it is published"
            + (
                f"; JetPack releases for {gpu.name if gpu else 'it'}: {releases}"
                if releases
                else ""
            )
            + ".",
        ),
    )


def rule_python_unreadable(ctx: Context) -> list[Finding]:
    env = ctx.snapshot.python_env
    if env is None or env.python_version is not None:
        return []
    return [
        Finding(
            rule="python-env-unreadable",
            cause="other",
            severity="warning",
            layer="python",
            title=f"The Python environment {env.interpreter} could not be read",
            why="gpuenv reads the target environment by running a small script in its "
            "interpreter; without it, the frameworks' builds are unknown.",
            evidence=tuple(Evidence("interpreter", p, "target probe") for p in env.problems),
            fix=Fix(
                summary="Point gpuenv at the environment's interpreter (or activate the env).",
                commands=("gpuenv doctor --python /path/to/env/bin/python",),
                installer="shell",
            ),
        )
    ]


def rule_toolkit_info(ctx: Context) -> list[Finding]:
    toolkits = ctx.snapshot.toolkits
    versions = {t.toolkit_cuda for t in toolkits if t.toolkit_cuda}
    findings = []
    nvcc = next((t for t in toolkits if t.on_path and t.toolkit_cuda), None)
    torch = next((f for f in ctx.frameworks() if f.name == "torch" and f.framework_cuda), None)
    if nvcc and torch:
        have = CudaVersion.parse(nvcc.toolkit_cuda)
        want = CudaVersion.parse(torch.framework_cuda)
        if have and want and (have.major, have.minor) != (want.major, want.minor):
            findings.append(
                Finding(
                    rule="nvcc-differs-from-torch",
                    cause="extension_build_mismatch",
                    severity="info" if have.major == want.major else "warning",
                    layer="toolkit",
                    title=f"nvcc is CUDA {have.short}; torch is built for CUDA {want.short}",
                    why="This matters only when building CUDA extensions (flash-attn, apex, "
                    "mmcv ops): torch's cpp_extension refuses a different CUDA major and may warn "
                    "on a different minor.",
                    evidence=(
                        Evidence("nvcc", nvcc.toolkit_cuda or "", nvcc.path or nvcc.source),
                        Evidence("torch CUDA", torch.framework_cuda or "", torch.source),
                    ),
                )
            )
    majors = {v.split(".")[0] + "." + v.split(".")[1] for v in versions if v.count(".") >= 1}
    if len(majors) > 1:
        findings.append(
            Finding(
                rule="several-toolkits",
                cause="multiple_cuda_conflict",
                severity="info",
                layer="toolkit",
                title=f"{len(majors)} CUDA toolkits are installed: {', '.join(sorted(majors))}",
                why="Builds pick whichever nvcc/CUDA_HOME comes first; set CUDA_HOME explicitly "
                "when building extensions.",
                evidence=tuple(
                    Evidence("toolkit", t.toolkit_cuda or "?", t.path or t.source) for t in toolkits
                ),
            )
        )
    return findings
