"""What a plan is: the packages chosen for each environment, the candidates rejected and why, the
verdict, and the smallest change that would make a plan fit when nothing does.

Plain frozen data: planning builds it, renderers read it, `--json` prints `plan_to_dict(plan)`.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any

PLAN_SCHEMA = "gpuenv-plan/1"

# Verdicts: everything fits one env; the wants fit only in separate envs; some want fits nowhere.
FITS = "fits"
SPLIT = "split"
NO_FIT = "no-fit"
VERDICTS = (FITS, SPLIT, NO_FIT)

# Rules a candidate can fail, in the order "smallest change" prefers fixing them.
RULES = (
    "constraint",  # the user's own version constraint
    "python",  # no wheel for the target's Python
    "pairing",  # a companion (torchvision) has no release for the chosen torch
    "joint",  # conflicts with another package chosen for the same env
    "driver",  # built for a CUDA the driver cannot run
    "arch",  # compiled for no architecture of a target GPU
    "platform",  # no build for the target's OS/architecture
    "windows",  # no GPU support on native Windows
    "jetson",  # not a build for Jetson
    "gpu",  # a CPU build while the target has a GPU
    "unknown",  # the knowledge base cannot tell
)

INSTALLERS = ("pip", "uv", "conda", "mamba", "pixi", "docker")
CONDA_LIKE = ("conda", "mamba", "pixi")


@dataclass(frozen=True)
class Rejection:
    """One candidate that was not chosen and the rule that rejected it."""

    package: str  # "torch"
    candidate: str  # "torch 2.15.0 cu132"
    rule: str  # one of RULES
    reason: str  # "built for CUDA 13.2, needs driver ≥ 580; you have 535.183.01"
    needs: str | None = None  # what would admit it: a driver "580.65.06", a Python "3.11" ...

    @property
    def text(self) -> str:
        return f"{self.candidate}: {self.reason}"


@dataclass(frozen=True)
class CondaSpec:
    """How the chosen build is named on conda-forge."""

    name: str  # "pytorch"
    version: str  # "2.13.0"
    build: str | None = None  # "cuda*"; None for packages without CUDA builds


@dataclass(frozen=True)
class SourceBuild:
    """How to build a package from source when no prebuilt wheel fits: the exact command, the
    nvcc it needs and the variables that choose what is built."""

    command: str  # "pip install flash-attn==2.8.3.post1 --no-build-isolation"
    env: tuple[tuple[str, str], ...]  # (("TORCH_CUDA_ARCH_LIST", "9.0"), ("MAX_JOBS", "4"))
    nvcc: str  # the CUDA toolkit release it must be built with: "12.8"
    nvcc_match: str  # "minor": exactly that major.minor; "major": that major, minor advised
    toolkit: str | None = None  # the machine's matching toolkit, when the snapshot has one
    toolkits_known: bool = True  # False for a declared target: its toolkits were not probed
    clone: str | None = None  # a repository to clone and build in (apex)
    why: str = ""  # why a source build: "no prebuilt flash-attn wheel for torch 2.13"

    @property
    def line(self) -> str:
        """The command with its variables set (POSIX shell)."""
        env = " ".join(f"{k}={v}" for k, v in self.env)
        return f"{env} {self.command}".strip()


@dataclass(frozen=True)
class PackageChoice:
    """A package pinned for one environment, where it comes from and why."""

    name: str  # distribution name as published: "torch", "cupy-cuda12x", "tensorflow"
    version: str  # the exact version, local label included: "2.5.1+cu121"
    framework: str  # "torch" | "torchvision" | "tensorflow" | "jax" | "cupy" | "onnxruntime" ...
    build: str  # "cu121" | "cpu" | "cuda12" | "and-cuda" | "jetson" | "conda:cuda129"
    extras: tuple[str, ...] = ()
    cuda: str | None = None  # CUDA the build was made with ("12.1"); None for CPU builds
    cudnn: str | None = None
    index_url: str | None = None  # a non-default index (PyTorch's); None: the installer's own
    find_links: str | None = None  # a page of wheel links (NVIDIA's Jetson wheels)
    min_driver: str | None = None  # the lowest driver that runs this build
    driver_how: str | None = None  # "native" | "minor-version-compat" for the target's driver
    sass: tuple[str, ...] = ()  # GPU code in the build, when known ("sm_80")
    ptx: tuple[str, ...] = ()
    ptx_cuda: str | None = None  # the CUDA that built its PTX: JIT needs a driver of at least it
    pins: tuple[str, ...] = ()  # nvidia-*/cuda-toolkit requirements the wheel pins
    system_needs: tuple[str, ...] = ()  # "CUDA 11.2 and cuDNN 8.1 installed on the system"
    conda: CondaSpec | None = None
    url: str | None = None  # a wheel installed by its URL (flash-attn's release assets)
    # the index holds this exact version in another build: install it from index_url alone
    exclusive_index: bool = False
    source_build: SourceBuild | None = None  # no prebuilt wheel fits: build it like this
    companion_of: str | None = None  # "torch" for torchvision; "jax" for jaxlib and the plugin
    why: str = ""
    notes: tuple[str, ...] = ()
    rejected: tuple[Rejection, ...] = ()

    @property
    def requirement(self) -> str:
        """The PEP 508 line that pins exactly this version: 'tensorflow[and-cuda]==2.18.1', or
        the wheel's URL: 'flash-attn @ https://.../flash_attn-2.8.3+cu12torch2.8...whl'."""
        extras = f"[{','.join(self.extras)}]" if self.extras else ""
        if self.url:
            return f"{self.name}{extras} @ {self.url}"
        if not self.version:  # built from a checkout (apex): no release to pin
            return f"{self.name}{extras}"
        return f"{self.name}{extras}=={self.version}"

    @property
    def public_version(self) -> str:
        return self.version.split("+")[0]

    @property
    def local_label(self) -> str | None:
        return self.version.split("+", 1)[1] if "+" in self.version else None


@dataclass(frozen=True)
class EnvPlan:
    """One environment: its Python and the packages pinned in it."""

    name: str  # "env"; with a split "env-torch", "env-tensorflow"
    python: str | None  # "3.11"; None when the target's Python is unknown
    packages: tuple[PackageChoice, ...] = ()
    carried: tuple[str, ...] = ()  # other requirements, passed to the installer as written
    cuda_major: int | None = None  # the CUDA major the env's GPU packages share

    def package(self, framework: str) -> PackageChoice | None:
        return next((p for p in self.packages if p.framework == framework), None)

    @property
    def index_urls(self) -> tuple[str, ...]:
        return tuple(dict.fromkeys(p.index_url for p in self.packages if p.index_url))

    @property
    def find_links(self) -> tuple[str, ...]:
        return tuple(dict.fromkeys(p.find_links for p in self.packages if p.find_links))

    @property
    def only_default_index(self) -> bool:
        """Everything comes from the installer's own index (no PyTorch/NVIDIA index)."""
        return not self.index_urls and not self.find_links


@dataclass(frozen=True)
class Unplaced:
    """A wanted package no candidate of which fits the target."""

    package: str
    rejected: tuple[Rejection, ...]


@dataclass(frozen=True)
class Tradeoff:
    """What a package gave up to share its environment: the build it gets on its own, the one
    it got, and the other package whose constraint cost it."""

    package: str  # "torch"
    alone: str  # "torch 2.14.1 cu130": what it gets when planned on its own
    chosen: str  # "torch 2.14.1 cu126"
    cost: str  # "the CUDA 12.6 build instead of CUDA 13.0"
    because: str  # why the alone build could not stay, in the words of the joint rule
    by: str  # the package whose constraint cost it: "tensorflow"

    @property
    def text(self) -> str:
        return f"{self.package}: {self.cost}, because {self.because}"


@dataclass(frozen=True)
class SmallestChange:
    """A change to the target that would let a plan fit."""

    kind: str  # "constraint" | "python" | "driver" | "platform" | "wsl2" | "cpu"
    text: str  # "upgrade the driver to ≥ 580.65.06 (then torch 2.15.0 cu130 fits)"
    value: str | None = None  # "580.65.06", "3.11", "linux-x86_64"
    admits: tuple[str, ...] = ()  # candidates it would admit


@dataclass(frozen=True)
class Container:
    """The base image of a Dockerfile plan (or an L4T container on Jetson)."""

    image: str  # "nvidia/cuda:12.2.2-base-ubuntu22.04"
    cuda: str | None
    distro: str | None  # "ubuntu22.04"
    python: str | None  # the distro's python3
    require_cuda: str | None = None  # the image's NVIDIA_REQUIRE_CUDA, verbatim
    why: str = ""
    rejected: tuple[Rejection, ...] = ()


@dataclass(frozen=True)
class DjlPlan:
    """DJL (and QuPath, which embeds it) using PyTorch's native library with a given CUDA."""

    djl: str  # DJL version
    pytorch: str  # PyTorch native version
    flavor: str  # "cu124" | "cpu"
    cuda: str | None
    cudnn_major: int | None
    env: tuple[tuple[str, str], ...] = ()  # environment variables DJL reads, with their values
    why: str = ""
    rejected: tuple[Rejection, ...] = ()


@dataclass(frozen=True)
class TargetSummary:
    """The machine the plan is for, as the planner read it."""

    platform: str  # "linux-x86_64"
    python: str | None
    driver: str | None
    driver_max_cuda: str | None
    gpus: tuple[str, ...]  # "NVIDIA GeForce RTX 3090 (8.6)"
    jetpack: str | None = None
    wsl: bool = False
    origin: str = "probed"
    overrides: tuple[str, ...] = ()


@dataclass(frozen=True)
class Plan:
    wants: tuple[str, ...]  # what was asked for, verbatim
    installer: str
    target: TargetSummary
    verdict: str  # one of VERDICTS
    envs: tuple[EnvPlan, ...] = ()
    unplaced: tuple[Unplaced, ...] = ()
    changes: tuple[SmallestChange, ...] = ()
    tradeoffs: tuple[Tradeoff, ...] = ()  # what packages gave up to share an env, worst first
    container: Container | None = None
    djl: DjlPlan | None = None
    notes: tuple[str, ...] = ()
    min_driver: str | None = None  # the lowest driver every chosen build runs on
    conda_override_cuda: str | None = None  # CONDA_OVERRIDE_CUDA for solving without the GPU

    @property
    def fits(self) -> bool:
        return self.verdict != NO_FIT

    def packages(self) -> tuple[PackageChoice, ...]:
        return tuple(p for env in self.envs for p in env.packages)


def plan_to_dict(plan: Plan) -> dict[str, Any]:
    """The JSON form of a plan, with each requirement line spelled out."""
    data: dict[str, Any] = {"schema": PLAN_SCHEMA, **dataclasses.asdict(plan)}
    for env_data, env in zip(data["envs"], plan.envs):
        for pkg_data, pkg in zip(env_data["packages"], env.packages):
            pkg_data["requirement"] = pkg.requirement
    data["fits"] = plan.fits
    return data
