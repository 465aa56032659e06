"""The snapshot: facts about one machine and one Python environment, with their sources.

Everything here is data. Probes build it, `--from FILE` loads it, what-if flags rewrite it, and
diagnosis, planning and explanation read it. Nothing in this module touches the machine.

Dataclasses are frozen but not slotted/keyword-only because gpuenv itself runs on Python 3.9.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Generic, TypeVar

SNAPSHOT_SCHEMA_VERSION = 1

T = TypeVar("T")


@dataclass(frozen=True)
class Observation(Generic[T]):
    """One fact: its value (None when missing), who answered, what they said, why it is missing."""

    value: T | None
    source: str
    raw: str | None = None
    problem: str | None = None

    @property
    def known(self) -> bool:
        return self.value is not None


def missing(source: str, problem: str, raw: str | None = None) -> Observation[Any]:
    return Observation(value=None, source=source, raw=raw, problem=problem)


# Failure states the driver probes report, as values of DriverFacts.failures.
DRIVER_FAILURES = (
    "no_driver_communication",  # "NVIDIA-SMI has failed because it couldn't communicate ..."
    "nvml_mismatch",  # "Failed to initialize NVML: Driver/library version mismatch"
    "no_devices",  # "No devices were found"
    "timed_out",  # a driver query did not answer in time
    "device_nodes_missing",  # /dev/nvidiactl or /dev/nvidia0 absent
    "device_nodes_unreadable",  # present but not openable by this user
    "visible_devices_hide_all",  # CUDA_VISIBLE_DEVICES / NVIDIA_VISIBLE_DEVICES hides every GPU
    "nvml_unavailable",  # libnvidia-ml not loadable
    "libcuda_unavailable",  # libcuda not loadable
    "nvml_no_permission",  # "Failed to initialize NVML: Insufficient Permissions"
    "nvml_unknown_error",  # "Failed to initialize NVML: Unknown Error" (containers, cgroups)
    "nvml_init_failed",  # any other "Failed to initialize NVML: ..."
    "gpu_lost",  # "GPU is lost. Reboot the system to recover this GPU"
    "device_handle_unknown_error",  # "Unable to determine the device handle for GPU...: Unknown"
    "device_handle_error",  # any other "Unable to determine the device handle ..."
)


@dataclass(frozen=True)
class JetsonFacts:
    l4t_release: str | None  # "36.4.3" from /etc/nv_tegra_release
    model: str | None  # device-tree model, e.g. "NVIDIA Jetson AGX Orin Developer Kit"
    jetpack: str | None = None  # only when the device says so itself (apt nvidia-jetpack)


@dataclass(frozen=True)
class HostFacts:
    os: Observation[str]  # "linux" | "windows" | "darwin"
    arch: Observation[str]  # "x86_64" | "aarch64" | "arm64" | "AMD64"
    distro: Observation[str] = field(default_factory=lambda: missing("os-release", "not probed"))
    kernel: Observation[str] = field(default_factory=lambda: missing("uname", "not probed"))
    libc: Observation[str] = field(default_factory=lambda: missing("libc", "not probed"))
    wsl: Observation[bool] = field(default_factory=lambda: missing("wsl", "not probed"))
    container: Observation[str] = field(default_factory=lambda: missing("container", "not probed"))
    jetson: Observation[JetsonFacts] = field(
        default_factory=lambda: missing("jetson", "not probed")
    )
    apple_mps: Observation[bool] = field(default_factory=lambda: missing("mps", "not probed"))
    rocm: Observation[str] = field(default_factory=lambda: missing("rocm", "not probed"))
    # NVIDIA_VISIBLE_DEVICES, NVIDIA_REQUIRE_CUDA, NVIDIA_DRIVER_CAPABILITIES, CUDA_VISIBLE_DEVICES,
    # LD_LIBRARY_PATH, CUDA_HOME, CUDA_PATH, CONDA_PREFIX, VIRTUAL_ENV (only those that are set)
    env: Mapping[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class GpuFacts:
    index: int
    name: str | None  # as the driver prints it, e.g. "NVIDIA GeForce RTX 3090"
    source: str  # "nvml" | "nvidia-smi" | "what-if" | ...
    pci_device_id: str | None = None  # lower-case hex, e.g. "0x2204"
    compute_capability: str | None = None  # "8.6"
    memory_mib: int | None = None
    mig_mode: str | None = None  # "Enabled" | "Disabled" | None when not supported
    uuid: str | None = None  # redacted unless --no-redact


@dataclass(frozen=True)
class DriverFacts:
    # The user-space/kernel driver version from every source that answered; disagreement is a fact.
    versions: tuple[Observation[str], ...] = ()
    # The highest CUDA the driver supports ("12.2"): nvidia-smi header, NVML, cuDriverGetVersion.
    max_cuda: tuple[Observation[str], ...] = ()
    # Values from DRIVER_FAILURES, each with the source and raw text that showed it.
    failures: tuple[Observation[str], ...] = ()


@dataclass(frozen=True)
class ToolkitFacts:
    """A CUDA toolkit found on the machine (nvcc, /usr/local/cuda-X.Y, CUDA_HOME, a conda env)."""

    toolkit_cuda: str | None  # "13.0.88" or "13.0"
    path: str | None
    source: str  # "nvcc" | "version.json" | "version.txt" | "conda-meta" | "CUDA_HOME"
    on_path: bool = False  # the nvcc that `nvcc` runs
    routes: tuple[str, ...] = ()  # how it was reached: "PATH nvcc ...", "/usr/local/cuda", ...
    raw: str | None = None
    problem: str | None = None


@dataclass(frozen=True)
class LibraryFacts:
    """A CUDA library file the dynamic loader could find."""

    soname: str  # "libcudnn.so.9", "cudnn64_9.dll"
    path: str
    origin: str  # "pip" | "conda" | "LD_LIBRARY_PATH" | "ldconfig" | "system" | "wsl"
    version: str | None = None  # from the real file name or the owning package, "9.1.0.70"
    package: str | None = None  # owning distribution, e.g. "nvidia-cudnn-cu12"
    # 0 = the copy the loader takes first among copies of the same soname; higher = shadowed
    load_rank: int = 0
    problem: str | None = None


@dataclass(frozen=True)
class DistributionFacts:
    name: str  # as in METADATA, not normalised
    version: str
    installer: str | None = None  # INSTALLER file: pip, uv, conda ...
    requires: tuple[str, ...] = ()  # Requires-Dist lines, verbatim
    location: str | None = None
    # where it was installed from (direct_url.json): a wheel URL or a local folder
    direct_url: str | None = None
    editable: bool = False
    problem: str | None = None


@dataclass(frozen=True)
class CondaPackageFacts:
    """One package record of a conda env's conda-meta/ (conda, mamba, pixi)."""

    name: str
    version: str | None
    build: str | None = None  # build string, e.g. "py3.11_cuda12.1_cudnn8.9.2_0"
    channel: str | None = None  # as recorded: a name or a URL
    subdir: str | None = None  # "linux-64", "noarch"
    url: str | None = None  # the package file it was installed from
    problem: str | None = None


@dataclass(frozen=True)
class FrameworkBuild:
    """How a framework in the target env was built, read from its files without importing it."""

    name: str  # "torch" | "tensorflow" | "jax" | "jaxlib" | "cupy" | "onnxruntime" | ...
    version: str | None
    framework_cuda: str | None = None  # CUDA it was built for ("12.1"); None for CPU/ROCm builds
    cudnn_version: str | None = None
    hip_version: str | None = None
    variant: str | None = None  # local version label: "cu121", "cpu", "rocm6.2" ...
    distribution: str | None = None  # the distribution that provides it, e.g. "tensorflow-cpu"
    is_gpu_build: bool | None = None  # None when the files do not say
    source: str = ""  # file the facts came from, e.g. "torch/version.py"
    details: Mapping[str, str] = field(default_factory=dict)
    problem: str | None = None


@dataclass(frozen=True)
class PythonEnvFacts:
    interpreter: str
    python_version: str | None  # "3.11.7"
    implementation: str | None = None  # "cpython"
    prefix: str | None = None
    env_kind: str | None = None  # "venv" | "conda" | "system"
    manager: str | None = None  # "pip" | "uv" | "conda" | "pixi" | "poetry" (who installs into it)
    platform_machine: str | None = None
    sys_platform: str | None = None
    libc: str | None = None  # "glibc 2.36" as the interpreter sees it
    site_packages: tuple[str, ...] = ()
    distributions: tuple[DistributionFacts, ...] = ()
    frameworks: tuple[FrameworkBuild, ...] = ()
    problems: tuple[str, ...] = ()
    conda_packages: tuple[CondaPackageFacts, ...] = ()  # conda-meta/ of a conda env


@dataclass(frozen=True)
class BinaryArchFacts:
    """GPU code compiled into one shared library (from its .nv_fatbin section)."""

    path: str
    package: str | None  # owning distribution, e.g. "torch"
    sass: tuple[str, ...] = ()  # "sm_80", "sm_90a"
    ptx: tuple[str, ...] = ()  # "compute_90"
    problem: str | None = None


@dataclass(frozen=True)
class Snapshot:
    host: HostFacts
    driver: DriverFacts = field(default_factory=DriverFacts)
    gpus: tuple[GpuFacts, ...] = ()
    # NVIDIA display controllers on the PCI bus, whatever the driver says (Linux only)
    pci_gpus: tuple[GpuFacts, ...] = ()
    toolkits: tuple[ToolkitFacts, ...] = ()
    libraries: tuple[LibraryFacts, ...] = ()
    python_env: PythonEnvFacts | None = None
    binaries: tuple[BinaryArchFacts, ...] = ()
    # problems of the probing itself that belong to no single fact ("ldconfig timed out ...")
    problems: tuple[str, ...] = ()
    # what-if flags that replaced probed facts, verbatim ("--driver 535.183.01")
    overrides: tuple[str, ...] = ()
    origin: str = "probed"  # "probed" | "file:<name>" | "declared"
    redacted: bool = True
    captured_at: str | None = None
    gpuenv_version: str | None = None
    schema_version: int = SNAPSHOT_SCHEMA_VERSION

    def framework(self, name: str) -> FrameworkBuild | None:
        if self.python_env is None:
            return None
        return next((f for f in self.python_env.frameworks if f.name == name), None)


def to_dict(snapshot: Snapshot) -> dict[str, Any]:
    """The JSON form: plain dicts, lists and scalars (see docs/snapshot.schema.json)."""
    return plain_dict(snapshot)


def plain_dict(record: Any) -> dict[str, Any]:
    """A dataclass instance as plain dicts, lists and scalars, ready for JSON."""
    plain: dict[str, Any] = _plain(dataclasses.asdict(record))
    return plain


def _plain(value: Any) -> Any:
    if isinstance(value, Mapping):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    return value
