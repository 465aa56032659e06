"""The lock: one Python environment as it was when it worked, as data (docs/guard.md).

A lock names every distribution of the env with its exact version, build variant and where it
came from, marks the GPU-critical ones, records the GPU code compiled into them and the driver
and GPUs the env was verified on. It is written as TOML (`lockfile`), built from a snapshot
(`build`), compared with another lock (`compare`), and turned into installer settings (`pin`).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

LOCK_SCHEMA_VERSION = 1

# Where a distribution came from, as far as its files and the machine tell.
SOURCES = (
    "index",  # the configured package index (pip/uv record no index URL in the dist-info)
    "pytorch-index",  # a PyTorch variant index, inferred from the local version label
    "find-links",  # a wheel file in one of pip's find-links folders
    "url",  # a direct URL or local file (direct_url.json)
    "editable",  # an editable install of a source tree (direct_url.json)
    "conda",  # installed by conda/mamba/pixi (INSTALLER, conda-meta)
)

_LOCAL = re.compile(r"\+(?P<label>[A-Za-z0-9.]+)$")
_CUDA_LABEL = re.compile(r"^cu(?P<major>\d{2,3}?)\d$|^cuda(?P<cmajor>\d+)")


def normalize(name: str) -> str:
    """A distribution name as indexes compare them (PEP 503)."""
    return re.sub(r"[-_.]+", "-", name).lower()


def local_label(version: str) -> str | None:
    """The local version label ("2.1.0+cu121" -> "cu121"), or None."""
    found = _LOCAL.search(version)
    return found.group("label") if found else None


def label_cuda_major(label: str | None) -> int | None:
    """The CUDA major a variant label names ("cu121" -> 12, "cu118" -> 11, "cu130" -> 13)."""
    found = _CUDA_LABEL.match(label or "")
    if not found:
        return None
    return int(found.group("major") or found.group("cmajor"))


def cuda_major(version: str | None) -> int | None:
    if not version:
        return None
    head = version.split(".")[0]
    return int(head) if head.isdigit() else None


@dataclass(frozen=True)
class LockedPackage:
    """One Python distribution of the env."""

    name: str
    version: str
    installer: str | None = None
    source: str = "index"  # one of SOURCES
    url: str | None = None  # the index, file, page or source tree it came from (when known)
    critical: bool = False
    why: str | None = None  # why it is GPU-critical ("framework", "CUDA library wheel" ...)
    variant: str | None = None  # local version label: "cu121", "cpu", "rocm6.2"
    cuda: str | None = None  # CUDA the framework was built for ("12.1"), from its files
    cudnn: str | None = None  # cuDNN it was built with, from its files
    gpu_build: bool | None = None  # a framework's files say it is (not) a GPU build
    sass: tuple[str, ...] = ()  # GPU code compiled into its libraries
    ptx: tuple[str, ...] = ()

    @property
    def key(self) -> str:
        return normalize(self.name)


@dataclass(frozen=True)
class LockedConda:
    """One package of a conda env (conda-meta)."""

    name: str
    version: str
    build: str | None = None
    channel: str | None = None  # short name ("conda-forge") or URL as conda recorded it
    subdir: str | None = None
    url: str | None = None
    critical: bool = False
    why: str | None = None

    @property
    def key(self) -> str:
        return self.name.lower()


@dataclass(frozen=True)
class LockedGpu:
    name: str | None
    compute_capability: str | None = None


@dataclass(frozen=True)
class LockEnv:
    python: str  # the interpreter
    prefix: str | None = None
    kind: str | None = None  # "venv" | "conda" | "system"
    manager: str | None = None  # "pip" | "uv" | "conda" | "pixi" | "poetry"
    python_version: str | None = None
    platform: str | None = None  # "linux-x86_64"


@dataclass(frozen=True)
class LockMachine:
    """The machine the env was verified on."""

    os: str | None = None
    arch: str | None = None
    driver: str | None = None
    driver_max_cuda: str | None = None
    gpus: tuple[LockedGpu, ...] = ()


@dataclass(frozen=True)
class Lock:
    env: LockEnv
    machine: LockMachine = LockMachine()
    packages: tuple[LockedPackage, ...] = ()
    conda: tuple[LockedConda, ...] = ()
    created_at: str | None = None
    gpuenv_version: str | None = None
    schema_version: int = LOCK_SCHEMA_VERSION

    def package(self, name: str) -> LockedPackage | None:
        key = normalize(name)
        return next((p for p in self.packages if p.key == key), None)

    @property
    def critical(self) -> tuple[LockedPackage, ...]:
        return tuple(p for p in self.packages if p.critical)

    @property
    def critical_conda(self) -> tuple[LockedConda, ...]:
        return tuple(p for p in self.conda if p.critical)
