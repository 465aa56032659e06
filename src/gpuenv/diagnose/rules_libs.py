"""Rules about the CUDA libraries the frameworks load: nvidia-* wheels missing or at other
versions, copies shadowed by LD_LIBRARY_PATH, frameworks that pin different versions of the same
wheel. A wheel's CUDA pins are read with the extras it was evidently installed with
(tensorflow[and-cuda]), since its metadata keeps them under those extras."""

from __future__ import annotations

import re
from collections import defaultdict

from packaging.requirements import InvalidRequirement, Requirement
from packaging.utils import canonicalize_name

from gpuenv.diagnose.context import Context
from gpuenv.diagnose.findings import Evidence, Finding, Fix
from gpuenv.diagnose.fixes import (
    installed_version,
    pip_install,
    planned_command,
    planned_install,
    release_of,
)
from gpuenv.facts import DistributionFacts, FrameworkBuild, LibraryFacts

CUDA_DIST = re.compile(r"^(nvidia-[a-z0-9-]+|cuda-toolkit)$")


def _marker_env(ctx: Context, extra: str = "") -> dict[str, str]:
    system = {"linux": "Linux", "windows": "Windows", "darwin": "Darwin"}.get(ctx.os, ctx.os)
    machine = {"amd64": "AMD64" if ctx.os == "windows" else "x86_64"}.get(ctx.arch, ctx.arch)
    python = f"{ctx.python[0]}.{ctx.python[1]}" if ctx.python else "3.11"
    return {
        "platform_system": system,
        "sys_platform": {"Linux": "linux", "Windows": "win32", "Darwin": "darwin"}.get(system, ""),
        "platform_machine": machine,
        "python_version": python,
        "python_full_version": python + ".0",
        "implementation_name": "cpython",
        "platform_python_implementation": "CPython",
        "os_name": "nt" if system == "Windows" else "posix",
        "extra": extra,
    }


def _dist(ctx: Context, distribution: str) -> DistributionFacts | None:
    env = ctx.snapshot.python_env
    wanted = canonicalize_name(distribution)
    return next(
        (d for d in (env.distributions if env else ()) if canonicalize_name(d.name) == wanted),
        None,
    )


def _cuda_lines(ctx: Context, dist: DistributionFacts) -> list[Requirement]:
    out = []
    for line in dist.requires:
        try:
            req = Requirement(line)
        except InvalidRequirement:
            continue
        if CUDA_DIST.match(canonicalize_name(req.name)):
            out.append(req)
    return out


def _holds(ctx: Context, req: Requirement, extras: tuple[str, ...]) -> bool:
    if req.marker is None:
        return True
    return any(req.marker.evaluate(_marker_env(ctx, extra)) for extra in ("", *extras))


def cuda_extras(ctx: Context, dist: DistributionFacts) -> tuple[str, ...]:
    """The extras a distribution was evidently installed with: those whose nvidia-* wheels are
    here (tensorflow[and-cuda], jax-cuda12-plugin[with-cuda]). Its metadata does not record the
    extras asked for, and those extras are where such wheels pin their CUDA libraries."""
    found: list[str] = []
    for req in _cuda_lines(ctx, dist):
        if req.marker is None or installed_version(ctx, req.name) is None:
            continue
        for extra in _marker_extras(str(req.marker)):
            if extra not in found and _holds(ctx, req, (extra,)):
                found.append(extra)
    return tuple(found)


def _marker_extras(marker: str) -> list[str]:
    return [canonicalize_name(m) for m in re.findall(r"extra\s*==\s*['\"]([^'\"]+)['\"]", marker)]


def cuda_requirements(ctx: Context, distribution: str) -> list[Requirement]:
    """The nvidia-*/cuda-toolkit requirements of a distribution that apply on this platform,
    with those of the extras it was installed with."""
    dist = _dist(ctx, distribution)
    if dist is None:
        return []
    extras = cuda_extras(ctx, dist)
    return [req for req in _cuda_lines(ctx, dist) if _holds(ctx, req, extras)]


def rule_missing_pip_libs(ctx: Context) -> list[Finding]:
    clashing = set(_clashes(ctx))  # the frameworks-conflict finding deals with those
    findings = []
    for fw in ctx.frameworks():
        if not fw.is_gpu_build:
            continue
        dist_name = fw.distribution or fw.name
        missing = []
        for req in cuda_requirements(ctx, dist_name):
            if canonicalize_name(req.name) in clashing:
                continue
            have = installed_version(ctx, req.name)
            if have is None or (
                req.specifier and not req.specifier.contains(have, prereleases=True)
            ):
                missing.append((req, have))
        if missing:
            findings.append(_missing_libs(ctx, fw, dist_name, missing))
        else:
            findings.extend(_extra_not_installed(ctx, fw, dist_name))
    return findings


def _extra_not_installed(ctx: Context, fw: FrameworkBuild, dist_name: str) -> list[Finding]:
    """A GPU wheel whose CUDA libraries come only with an extra nobody asked for (a plain
    `pip install tensorflow` on Linux), and no system cuDNN to stand in: it lists no GPU."""
    dist = _dist(ctx, dist_name)
    if dist is None or ctx.os != "linux" or cuda_extras(ctx, dist) or not fw.version:
        return []
    lines = [r for r in _cuda_lines(ctx, dist) if r.marker is not None and not _holds(ctx, r, ())]
    extras = sorted(
        {e for r in lines for e in _marker_extras(str(r.marker)) if _holds(ctx, r, (e,))}
    )
    system = [
        lib for lib in ctx.snapshot.libraries if "cudnn" in lib.soname and lib.origin != "pip"
    ]
    if not extras or system:
        return []
    requirement = f"{dist.name}[{extras[0]}]=={dist.version}"
    installer = ctx.installer_for(dist_name)
    return [
        Finding(
            rule="cuda-wheel-missing",
            cause="missing_cuda_lib",
            severity="warning",
            layer="cuda-libraries",
            title=f"{dist.name} {dist.version} was installed without its [{extras[0]}] extra, "
            "and no cuDNN was found on the system",
            why=f"{dist.name} pins its CUDA libraries (cuDNN, cuBLAS …) only under the "
            f"[{extras[0]}] extra; without them and without a system CUDA it finds no GPU "
            '("Cannot dlopen some GPU libraries ... Skipping registering GPU devices").',
            evidence=(
                Evidence(
                    f"{dist.name} Requires-Dist",
                    "; ".join(str(r) for r in lines[:3]),
                    dist.location or "distribution metadata",
                ),
                Evidence("nvidia-* wheels of that extra", "none installed", "target env"),
            ),
            fix=Fix(
                summary=f"Install {dist.name} with its [{extras[0]}] extra.",
                commands=(pip_install(ctx, installer, [requirement]),),
                installer=installer,
            ),
        )
    ]


def _missing_libs(
    ctx: Context, fw: FrameworkBuild, dist_name: str, missing: list[tuple[Requirement, str | None]]
) -> Finding:
    installer = ctx.installer_for(dist_name)
    absent = [r for r, have in missing if have is None]
    cause = (
        "cudnn_mismatch"
        if all("cudnn" in r.name for r, _ in missing) and not absent
        else "missing_cuda_lib"
    )
    reqs = [f"{r.name}{r.specifier}" for r, _ in missing]
    return Finding(
        rule="cuda-wheel-missing",
        cause=cause,
        severity="error",
        layer="cuda-libraries",
        title=f"{dist_name} needs CUDA library wheels that are "
        + ("missing" if absent else "installed at other versions"),
        why=f"{dist_name} loads its CUDA libraries from these nvidia-* wheels; "
        'a missing or different one fails at import ("libcudnn.so.N: cannot open shared object '
        'file", undefined symbols).',
        evidence=tuple(
            Evidence(
                r.name,
                f"required {r.specifier or 'any'}, installed {have or 'none'}",
                f"{dist_name} Requires-Dist",
            )
            for r, have in missing
        ),
        fix=Fix(
            summary="Install exactly the versions the framework pins.",
            commands=(pip_install(ctx, installer, reqs),),
            installer=installer,
        ),
    )


def rule_shadowed_libs(ctx: Context) -> list[Finding]:
    by_soname: dict[str, list[LibraryFacts]] = defaultdict(list)
    for lib in ctx.snapshot.libraries:
        if lib.load_rank < 0:  # a broken link or stale entry: not loadable
            continue
        by_soname[lib.soname].append(lib)
    shadowed = []
    for copies in by_soname.values():
        first = min(copies, key=lambda lib: lib.load_rank)
        pip_copies = [c for c in copies if c.origin == "pip" and c is not first]
        if first.origin == "LD_LIBRARY_PATH" and pip_copies:
            shadowed.append((first, pip_copies[0]))
    if not shadowed:
        return []
    evidence = tuple(
        Evidence(
            first.soname,
            f"{first.path} ({first.version or '?'}) loads before {pip.path} ({pip.version or '?'})",
            "loader order",
        )
        for first, pip in shadowed
    )
    return [
        Finding(
            rule="cuda-lib-shadowed",
            cause="multiple_cuda_conflict",
            severity="warning",
            layer="cuda-libraries",
            title="LD_LIBRARY_PATH puts other CUDA libraries in front of the pip wheels' copies",
            why="Frameworks built against the pip CUDA wheels find their libraries through "
            "RUNPATH, which LD_LIBRARY_PATH overrides; a different copy loaded first causes "
            "undefined-symbol errors (e.g. __nvJitLinkComplete_12_4) or silent version mixes.",
            evidence=evidence,
            fix=Fix(
                summary="Remove the CUDA directories from LD_LIBRARY_PATH for this environment.",
                commands=("unset LD_LIBRARY_PATH",),
                installer="shell",
            ),
        )
    ]


def _clashes(ctx: Context) -> dict[str, dict[str, str]]:
    """nvidia-* wheels two frameworks pin at different exact versions: package -> framework ->
    specifier."""
    pins: dict[str, dict[str, str]] = defaultdict(dict)
    for fw in ctx.frameworks():
        if not fw.is_gpu_build:
            continue
        for req in cuda_requirements(ctx, fw.distribution or fw.name):
            if str(req.specifier).startswith("=="):
                pins[canonicalize_name(req.name)][fw.name] = str(req.specifier)
    return {name: by_fw for name, by_fw in pins.items() if len(set(by_fw.values())) > 1}


def rule_framework_coexistence(ctx: Context) -> list[Finding]:
    clashes = _clashes(ctx)
    if not clashes:
        return []
    names = sorted({fw for by_fw in clashes.values() for fw in by_fw})
    evidence = tuple(
        Evidence(
            name,
            "; ".join(f"{fw} wants {spec}" for fw, spec in sorted(by_fw.items())),
            "Requires-Dist",
        )
        for name, by_fw in sorted(clashes.items())
    )
    cudnn = any("cudnn" in name for name in clashes)
    return [
        Finding(
            rule="frameworks-conflict",
            cause="cudnn_mismatch" if cudnn else "solver_conflict",
            severity="error",
            layer="cuda-libraries",
            title=f"{' and '.join(names)} pin different versions of the same CUDA libraries",
            why="One environment holds one version of each nvidia-* wheel; whichever framework was "
            "installed last decided it, and the other runs against libraries it was not built "
            "for (or fails to load them).",
            evidence=evidence,
            fix=Fix(
                summary="Use one environment per framework, or versions of both that pin the same "
                "libraries (`gpuenv plan " + " ".join(names) + "` finds them).",
                commands=tuple(c for n in names for c in _own_env(ctx, n)),
                installer="pip",
            ),
        )
    ]


def _own_env(ctx: Context, framework: str) -> tuple[str, ...]:
    """A venv of its own with the build `gpuenv plan` picks for this machine (a bare
    `pip install jax` would be the CPU build, `tensorflow` without its CUDA libraries)."""
    build = next((f for f in ctx.frameworks() if f.name == framework), None)
    release = release_of(build.version if build else None)
    planned = (
        planned_install(ctx, [f"{framework}=={release}"], framework, installer="pip")
        if release
        else None
    ) or planned_install(ctx, [framework], framework, installer="pip")
    if planned is None:
        return ()
    windows = ctx.os == "windows"
    venv = f".venv-{framework}"
    python = f"{venv}\\Scripts\\python" if windows else f"{venv}/bin/python"
    base = "python" if windows else "python3"
    return (f"{base} -m venv {venv}", planned_command(ctx, planned, python))
