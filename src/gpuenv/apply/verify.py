"""Does an environment hold what its plan says? Per planned package: the installed version (with
the local label when the plan pins one) and, for frameworks, the build (CPU or the planned CUDA)
as the probe read it from the installed files."""

from __future__ import annotations

from dataclasses import dataclass

from packaging.utils import canonicalize_name
from packaging.version import InvalidVersion, Version

from gpuenv.facts import DistributionFacts, FrameworkBuild, Snapshot
from gpuenv.plan.model import EnvPlan, PackageChoice


@dataclass(frozen=True)
class Check:
    package: str
    expected: str
    found: str | None
    ok: bool | None  # None: the probe could not tell
    detail: str = ""


def verify(env: EnvPlan, snapshot: Snapshot) -> tuple[Check, ...]:
    python_env = snapshot.python_env
    if python_env is None or python_env.python_version is None:
        problems = "; ".join(python_env.problems) if python_env else "no Python env probed"
        return (Check("environment", "a working interpreter", None, False, problems),)
    checks = [_version_check(p, python_env.distributions) for p in env.packages]
    checks += [c for c in (_build_check(p, snapshot) for p in env.packages) if c is not None]
    return tuple(checks)


def _dist(name: str, dists: tuple[DistributionFacts, ...]) -> DistributionFacts | None:
    wanted = canonicalize_name(name)
    return next((d for d in dists if canonicalize_name(d.name) == wanted), None)


def _version_check(package: PackageChoice, dists: tuple[DistributionFacts, ...]) -> Check:
    name = package.conda.name if package.conda else package.name
    # conda-forge's pytorch installs the torch distribution: the probe reads dist-info names
    dist = _dist(name, dists)
    if dist is None and package.conda is not None:
        dist = _dist(package.framework, dists)
    if dist is None:
        return Check(name, package.version, None, False, "not installed")
    ok = _same(package, dist.version)
    return Check(name, package.version, dist.version, ok, "" if ok else "another version")


def _same(package: PackageChoice, installed: str) -> bool:
    """Equal versions; the local label counts only when the plan pins one (the package index's
    wheels drop theirs from the installed metadata)."""
    try:
        have, want = Version(installed), Version(package.version)
    except InvalidVersion:
        return installed == package.version
    if want.local is None:
        return have.public == want.public
    return have == want


def _build_check(package: PackageChoice, snapshot: Snapshot) -> Check | None:
    if package.companion_of:
        return None
    build = snapshot.framework(_framework_name(package))
    expected = f"CUDA {package.cuda}" if package.cuda else "a CPU build"
    label = f"{package.framework} build"
    if build is None:
        return Check(label, expected, None, None, "the probe found no build facts")
    found = _describe(build)
    if _conda_jaxlib(package) and not build.framework_cuda:
        # conda-forge's CUDA jaxlib carries the CUDA backend itself, not as a plugin wheel,
        # and its version has no CUDA label: the probe cannot tell the build from the files
        why = "conda-forge's CUDA jaxlib has no plugin package or version label to read"
        return Check(label, expected, found, None, why)
    return Check(label, expected, found, _build_ok(package, build), build.source)


def _conda_jaxlib(package: PackageChoice) -> bool:
    return package.conda is not None and package.conda.name == "jaxlib" and bool(package.cuda)


def _framework_name(package: PackageChoice) -> str:
    """The probe's build facts of a framework: for JAX the jax build, which carries the CUDA of
    its plugin (jaxlib itself is the same wheel for CPU and GPU since 0.4.30)."""
    return package.framework


def _describe(build: FrameworkBuild) -> str:
    if build.framework_cuda:
        return f"CUDA {build.framework_cuda}"
    if build.is_gpu_build is False:
        return "a CPU build"
    return f"variant {build.variant}" if build.variant else "unknown build"


def _build_ok(package: PackageChoice, build: FrameworkBuild) -> bool | None:
    if package.cuda is None:
        return build.is_gpu_build is False if build.is_gpu_build is not None else None
    if not build.framework_cuda:
        return False if build.is_gpu_build is False else None
    have = build.framework_cuda.split(".")
    want = package.cuda.split(".")
    if package.framework == "torch":
        return have[:2] == want[:2]
    return have[:1] == want[:1]
