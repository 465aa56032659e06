"""The facts the rules reason about, resolved once: which GPUs (and their compute capabilities),
which driver, which OS, which installer manages the env. Pure: snapshot + knowledge base in."""

from __future__ import annotations

import datetime
from collections.abc import Iterable
from dataclasses import dataclass
from typing import TypeVar

from gpuenv.facts import FrameworkBuild, GpuFacts, Observation, Snapshot
from gpuenv.kb import KnowledgeBase, Row
from gpuenv.kb.query.cuda import driver_max_cuda
from gpuenv.kb.query.gpus import gpu_by_name, gpu_by_pci_id, gpu_candidates, gpu_cc
from gpuenv.versions import ComputeCapability, CudaVersion, DriverVersion

T = TypeVar("T")

# Failures after which the driver cannot be used at all.
DRIVER_DEAD = (
    "no_driver_communication",
    "nvml_mismatch",
    "timed_out",
    "gpu_lost",
    "nvml_unknown_error",
    "nvml_no_permission",
    "device_handle_unknown_error",
)


@dataclass(frozen=True)
class Gpu:
    index: int
    name: str
    cc: ComputeCapability | None
    segment: str | None  # "geforce" | "workstation" | "datacenter" | "jetson" (from the KB)
    source: str
    kb_row: Row | None = None

    @property
    def label(self) -> str:
        """The name for a sentence: a GPU declared only by its compute capability ("--gpu H100"
        names several models) is "a GPU of compute capability 9.0"."""
        if self.name.startswith("(") and self.name.endswith(")"):
            return f"a GPU of {self.name[1:-1]}"
        return self.name


@dataclass(frozen=True)
class Context:
    snapshot: Snapshot
    kb: KnowledgeBase
    today: datetime.date
    os: str  # "linux" | "windows" | "darwin" | "unknown"
    arch: str
    gpus: tuple[Gpu, ...]  # usable GPUs the driver (or a what-if flag) reports
    pci_only_gpus: tuple[Gpu, ...]  # NVIDIA GPUs on the bus that no driver reports
    driver: DriverVersion | None
    driver_source: str
    driver_max_cuda: CudaVersion | None
    driver_max_cuda_source: str
    driver_failures: tuple[Observation[str], ...]
    python: tuple[int, int] | None
    jetson: bool
    wsl: bool

    @property
    def has_usable_gpu(self) -> bool:
        return bool(self.gpus) and self.driver is not None and not self.driver_dead

    @property
    def driver_os(self) -> str:
        """Whose numbering the driver version follows: under WSL2 the driver is the Windows
        host's ("596.36"), so its branch and CUDA support are read from the Windows tables."""
        return "windows" if self.os == "windows" or self.wsl else "linux"

    @property
    def driver_dead(self) -> bool:
        return any(f.value in DRIVER_DEAD for f in self.driver_failures)

    def failure(self, value: str) -> Observation[str] | None:
        return next((f for f in self.driver_failures if f.value == value), None)

    def frameworks(self) -> tuple[FrameworkBuild, ...]:
        env = self.snapshot.python_env
        return env.frameworks if env else ()

    def installer_for(self, distribution: str | None) -> str:
        """Who should reinstall `distribution`: the installer that put it there, else the env's."""
        env = self.snapshot.python_env
        if env is None:
            return "pip"
        if distribution:
            wanted = _norm(distribution)
            for dist in env.distributions:
                if _norm(dist.name) == wanted and dist.installer:
                    installer = dist.installer.strip().lower()
                    if installer in ("pip", "uv", "conda", "pixi", "poetry"):
                        return installer
        return env.manager or "pip"


def _norm(name: str) -> str:
    return name.lower().replace("_", "-").replace(".", "-")


def _resolve_gpu(kb: KnowledgeBase, gpu: GpuFacts) -> Gpu:
    row = gpu_row(kb, gpu)
    models = _models(kb, gpu, row)
    cc = ComputeCapability.parse(gpu.compute_capability) or _shared(gpu_cc(r) for r in models)
    name = gpu.name or (str(row["name"]) if row else f"PCI device {gpu.pci_device_id or '?'}")
    segment = _shared(r.get("segment") for r in models)
    return Gpu(gpu.index, name, cc, str(segment) if segment else None, gpu.source, row)


def gpu_row(kb: KnowledgeBase, gpu: GpuFacts) -> Row | None:
    """The knowledge base's row of a GPU, by its name, else its PCI device id."""
    row = gpu_by_name(kb, gpu.name) if gpu.name else None
    if row is None and gpu.pci_device_id:
        row = gpu_by_pci_id(kb, gpu.pci_device_id)
    return row


def gpu_compute_capability(kb: KnowledgeBase, gpu: GpuFacts) -> ComputeCapability | None:
    """A GPU's compute capability: as reported, else its row's, else the one every model its
    name may stand for shares ("Tesla V100": PCIe and SXM2, 16 and 32 GB)."""
    reported = ComputeCapability.parse(gpu.compute_capability)
    if reported is not None:
        return reported
    return _shared(gpu_cc(r) for r in _models(kb, gpu, gpu_row(kb, gpu)))


def _models(kb: KnowledgeBase, gpu: GpuFacts, row: Row | None) -> tuple[Row, ...]:
    """The GPU's row, else every row its name may stand for ("H100": PCIe, SXM, NVL)."""
    if row is not None:
        return (row,)
    return gpu_candidates(kb, gpu.name) if gpu.name else ()


def _shared(values: Iterable[T]) -> T | None:
    """The one value all the models have; None when they differ or one lacks it."""
    found = set(values)
    return found.pop() if len(found) == 1 and None not in found else None


def _best(observations: tuple[Observation[str], ...]) -> Observation[str] | None:
    """The first observation with a value; sources are probed most-trusted first."""
    return next((o for o in observations if o.value), None)


def _driver(snapshot: Snapshot) -> tuple[DriverVersion | None, str]:
    # Under WSL the Windows driver number is what decides; probes record it as the first value.
    best = _best(snapshot.driver.versions)
    if best is None:
        return None, ""
    return DriverVersion.parse(best.value), best.source


def _python(snapshot: Snapshot) -> tuple[int, int] | None:
    env = snapshot.python_env
    if env is None or not env.python_version:
        return None
    parts = env.python_version.split(".")
    try:
        return int(parts[0]), int(parts[1])
    except (ValueError, IndexError):
        return None


def build_context(
    snapshot: Snapshot, kb: KnowledgeBase, today: datetime.date | None = None
) -> Context:
    host = snapshot.host
    os_name = (host.os.value or "unknown").lower()
    driver, driver_source = _driver(snapshot)
    max_obs = _best(snapshot.driver.max_cuda)
    max_cuda = CudaVersion.parse(max_obs.value) if max_obs else None
    max_source = max_obs.source if max_obs else ""
    wsl = bool(host.wsl.value)
    if max_cuda is None and driver is not None:
        driver_os = "windows" if os_name == "windows" or wsl else "linux"
        max_cuda = driver_max_cuda(kb, driver, driver_os)
        max_source = "kb: driver branch table" if max_cuda else ""
    gpus = tuple(_resolve_gpu(kb, g) for g in snapshot.gpus)
    reported = {g.pci_device_id for g in snapshot.gpus if g.pci_device_id}
    pci_only = tuple(
        _resolve_gpu(kb, g)
        for g in snapshot.pci_gpus
        if not snapshot.gpus or g.pci_device_id not in reported
    )
    return Context(
        snapshot=snapshot,
        kb=kb,
        today=today or datetime.date.today(),
        os=os_name,
        arch=(host.arch.value or "").lower(),
        gpus=gpus,
        pci_only_gpus=pci_only if not snapshot.gpus else (),
        driver=driver,
        driver_source=driver_source,
        driver_max_cuda=max_cuda,
        driver_max_cuda_source=max_source,
        driver_failures=snapshot.driver.failures,
        python=_python(snapshot),
        # a Jetson module implies Jetson, whether probed on the board or declared with --gpu
        jetson=bool(host.jetson.value) or any(g.segment == "jetson" for g in gpus),
        wsl=wsl,
    )
