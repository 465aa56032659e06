"""A lock from a snapshot: what is GPU-critical, where each distribution came from. Pure.

Where a distribution came from is read from its dist-info (`direct_url.json`, `INSTALLER`, the
local version label) and conda-meta; pip and uv record no index URL for an index install, so a
PyTorch variant index is inferred from the label (`+cu121`) and the knowledge base, and a
find-links folder from the wheel file found there (the caller lists the folders).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field

from gpuenv.facts import (
    BinaryArchFacts,
    CondaPackageFacts,
    DistributionFacts,
    FrameworkBuild,
    Snapshot,
)
from gpuenv.guard.model import (
    Lock,
    LockedConda,
    LockedGpu,
    LockedPackage,
    LockEnv,
    LockMachine,
    local_label,
    normalize,
)
from gpuenv.kb import KnowledgeBase
from gpuenv.kb.query.torch import torch_index_url

# Distributions that are GPU frameworks or their compiled companions, by normalised name.
_FRAMEWORK = re.compile(
    r"(torch|torchvision|torchaudio|tensorflow(-cpu|-gpu|-intel|-aarch64)?|tf-nightly(-gpu)?"
    r"|jax|jaxlib|cupy(-cuda\d+x?|-rocm-[\d-]+)?|onnxruntime(-gpu|-training)?|paddlepaddle(-gpu)?"
    r"|mmcv(-full)?|xformers|flash-attn|apex|torch-(scatter|sparse|cluster|spline-conv)"
    r"|triton|pytorch-triton(-rocm)?|tensorrt(-[a-z0-9-]+)?|bitsandbytes|deepspeed)"
)
_CUDA_WHEEL = re.compile(r"(nvidia-.+|cuda-.+|jax-cuda\d+-(plugin|pjrt))")
_PYTORCH_VARIANT_DISTS = frozenset({"torch", "torchvision", "torchaudio"})
# conda packages that carry or select CUDA, cuDNN, NCCL, or a CUDA build of a framework
_CONDA_CRITICAL = re.compile(
    r"(pytorch(-cuda|-gpu)?|torchvision|torchaudio|tensorflow(-gpu|-base)?|jax|jaxlib|cupy"
    r"|onnxruntime|cudatoolkit|cudnn|nccl|cutensor|magma|cuda-.+|libcu.+|libnccl|libnv.+"
    r"|nvidia-.+|__cuda)"
)
_EXACT_PIN = re.compile(
    r"^\s*([A-Za-z0-9][A-Za-z0-9._-]*)\s*(\[[^\]]*\])?\s*===?\s*[^,;*\s]+\s*(;|$)"
)


@dataclass(frozen=True)
class Origins:
    """What the caller found outside the env: wheel files in pip's find-links folders."""

    # (normalised name, version) -> the wheel file's path
    find_links: Mapping[tuple[str, str], str] = field(default_factory=dict)


def lock_from_snapshot(
    snapshot: Snapshot,
    kb: KnowledgeBase,
    origins: Origins | None = None,
    created_at: str | None = None,
    gpuenv_version: str | None = None,
) -> Lock:
    env = snapshot.python_env
    if env is None:
        raise ValueError("the snapshot has no Python environment")
    found = origins or Origins()
    frameworks = {normalize(f.distribution or f.name): f for f in env.frameworks}
    critical_names = {key for key in frameworks} | _extensions(env.distributions, frameworks)
    packages = tuple(
        sorted(
            (
                _package(d, frameworks, critical_names, snapshot.binaries, kb, found)
                for d in env.distributions
                if d.name and d.version
            ),
            key=lambda p: p.key,
        )
    )
    conda = tuple(sorted((_conda(p) for p in env.conda_packages), key=lambda p: p.key))
    return Lock(
        env=LockEnv(
            python=env.interpreter,
            prefix=env.prefix,
            kind=env.env_kind,
            manager=env.manager,
            python_version=env.python_version,
            platform=_platform(env.sys_platform, env.platform_machine),
        ),
        machine=_machine(snapshot),
        packages=_unique(packages),
        conda=conda,
        created_at=created_at,
        gpuenv_version=gpuenv_version,
    )


def _unique(packages: tuple[LockedPackage, ...]) -> tuple[LockedPackage, ...]:
    """One entry per name: the first site dir wins, as it does on import."""
    seen: set[str] = set()
    kept = []
    for package in packages:
        if package.key not in seen:
            seen.add(package.key)
            kept.append(package)
    return tuple(kept)


def _platform(sys_platform: str | None, machine: str | None) -> str | None:
    if not sys_platform:
        return None
    return f"{sys_platform}-{machine}" if machine else sys_platform


def _machine(snapshot: Snapshot) -> LockMachine:
    driver = next((o.value for o in snapshot.driver.versions if o.value), None)
    max_cuda = next((o.value for o in snapshot.driver.max_cuda if o.value), None)
    return LockMachine(
        os=snapshot.host.os.value,
        arch=snapshot.host.arch.value,
        driver=driver,
        driver_max_cuda=max_cuda,
        gpus=tuple(LockedGpu(g.name, g.compute_capability) for g in snapshot.gpus),
    )


def critical_reason(
    name: str, framework_keys: frozenset[str] | set[str] = frozenset()
) -> str | None:
    """Why a distribution is GPU-critical by its name alone, or None."""
    key = normalize(name)
    if key in framework_keys or _FRAMEWORK.fullmatch(key):
        return "GPU framework"
    if _CUDA_WHEEL.fullmatch(key):
        return "CUDA library wheel" if key.startswith("nvidia-") else "CUDA wheel"
    return None


def _extensions(
    dists: tuple[DistributionFacts, ...], frameworks: Mapping[str, FrameworkBuild]
) -> set[str]:
    """Distributions built against a framework: their requirements pin it exactly."""
    names = set()
    for dist in dists:
        for requirement in dist.requires:
            found = _EXACT_PIN.match(requirement)
            if found and "extra ==" not in requirement and normalize(found.group(1)) in frameworks:
                names.add(normalize(dist.name))
    return names


def _package(
    dist: DistributionFacts,
    frameworks: Mapping[str, FrameworkBuild],
    critical_names: set[str],
    binaries: tuple[BinaryArchFacts, ...],
    kb: KnowledgeBase,
    origins: Origins,
) -> LockedPackage:
    key = normalize(dist.name)
    build = frameworks.get(key)
    owned = [b for b in binaries if b.package and normalize(b.package) == key]
    sass = tuple(sorted({arch for b in owned for arch in b.sass}))
    ptx = tuple(sorted({arch for b in owned for arch in b.ptx}))
    why = critical_reason(dist.name, set(frameworks))
    if why is None and (sass or ptx):
        why = "carries GPU code"
    if why is None and key in critical_names:
        why = "built against a GPU framework (exact pin)"
    source, url = _source(dist, kb, origins)
    return LockedPackage(
        name=dist.name,
        version=dist.version,
        installer=dist.installer,
        source=source,
        url=url,
        critical=why is not None,
        why=why,
        variant=local_label(dist.version) or (build.variant if build else None),
        cuda=build.framework_cuda if build else None,
        cudnn=build.cudnn_version if build else None,
        gpu_build=build.is_gpu_build if build else None,
        sass=sass,
        ptx=ptx,
    )


def _source(dist: DistributionFacts, kb: KnowledgeBase, origins: Origins) -> tuple[str, str | None]:
    if dist.editable:
        return "editable", dist.direct_url
    if dist.direct_url:
        return "url", dist.direct_url
    if (dist.installer or "").lower() == "conda":
        return "conda", None
    found = origins.find_links.get((normalize(dist.name), dist.version))
    if found:
        return "find-links", found
    label = local_label(dist.version)
    if label and normalize(dist.name) in _PYTORCH_VARIANT_DISTS:
        index = torch_index_url(kb, label)
        if index:
            return "pytorch-index", index
    return "index", None


def _conda(package: CondaPackageFacts) -> LockedConda:
    return conda_package(
        package.name,
        package.version or "",
        package.build,
        package.channel,
        package.subdir,
        package.url,
    )


def conda_package(
    name: str,
    version: str,
    build: str | None,
    channel: str | None,
    subdir: str | None,
    url: str | None,
) -> LockedConda:
    """A conda package entry, marked critical when it carries or selects CUDA."""
    by_name = bool(_CONDA_CRITICAL.fullmatch(name.lower()))
    critical = by_name or "cuda" in (build or "")
    why = ("GPU framework or library" if by_name else "CUDA build") if critical else None
    return LockedConda(name, version, build, channel, subdir, url, critical, why)
