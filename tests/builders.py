"""Small builders of snapshots for rule tests: a machine described in a few words."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace

from gpuenv.facts import (
    DistributionFacts,
    FrameworkBuild,
    HostFacts,
    LibraryFacts,
    Observation,
    PythonEnvFacts,
    Snapshot,
)
from gpuenv.kb import default_kb
from gpuenv.whatif import WhatIf, apply_what_if

PYTHON = "/home/u/venv/bin/python"


def torch_build(version: str, cuda: str | None, variant: str | None = None) -> FrameworkBuild:
    return FrameworkBuild(
        name="torch",
        version=version,
        framework_cuda=cuda,
        variant=variant or (f"cu{cuda.replace('.', '')}" if cuda else "cpu"),
        distribution="torch",
        is_gpu_build=cuda is not None,
        source="torch/version.py",
    )


def dist(
    name: str, version: str, requires: Sequence[str] = (), installer: str = "pip"
) -> DistributionFacts:
    return DistributionFacts(
        name, version, installer, tuple(requires), "/home/u/venv/lib/site-packages"
    )


def machine(
    *,
    gpus: Sequence[str] = (),
    driver: str | None = None,
    platform: str | None = None,
    frameworks: Sequence[FrameworkBuild] = (),
    dists: Sequence[DistributionFacts] = (),
    libraries: Sequence[LibraryFacts] = (),
    env: dict[str, str] | None = None,
    failures: Sequence[tuple[str, str]] = (),
    python_version: str = "3.11.7",
    manager: str = "pip",
    distro: str = "Ubuntu 22.04.4 LTS",
) -> Snapshot:
    """A Linux x86_64 machine; GPUs and driver given as what-if flags resolve through the KB."""
    host = HostFacts(
        os=Observation("linux", "platform"),
        arch=Observation("x86_64", "platform"),
        distro=Observation(distro, "/etc/os-release"),
        env=env or {},
    )
    all_dists = list(dists)
    names = {d.name for d in all_dists}
    all_dists += [
        dist(f.distribution or f.name, f.version or "0")
        for f in frameworks
        if (f.distribution or f.name) not in names
    ]
    python_env = PythonEnvFacts(
        interpreter=PYTHON,
        python_version=python_version,
        env_kind="venv",
        manager=manager,
        prefix="/home/u/venv",
        distributions=tuple(all_dists),
        frameworks=tuple(frameworks),
    )
    snapshot = Snapshot(host=host, libraries=tuple(libraries), python_env=python_env)
    what_if = WhatIf(driver=driver, gpus=tuple(gpus), platform=platform)
    snapshot = apply_what_if(snapshot, what_if, default_kb())
    # failures are facts of the machine itself, added after the declared GPU and driver
    observed = tuple(Observation(v, s) for v, s in failures)
    return replace(snapshot, driver=replace(snapshot.driver, failures=observed))
