"""The machine a plan is for, read once from the snapshot: platform, Python, driver, every GPU's
compute capability, Jetson. Reuses doctor's Context so both read a snapshot the same way."""

from __future__ import annotations

import datetime
from dataclasses import dataclass, field, replace

from gpuenv.diagnose.choose import platform_of
from gpuenv.diagnose.context import Context, Gpu, build_context
from gpuenv.diagnose.limits import (
    Ceiling,
    branch_example,
    driver_ceilings,
    jetpacks_for,
    jetson_gpus,
)
from gpuenv.errors import GpuenvError
from gpuenv.facts import Snapshot
from gpuenv.kb import KnowledgeBase, Row
from gpuenv.kb.query.cuda import (
    DriverSupport,
    architecture,
    driver_supports_cuda,
    toolkit_min_driver,
)
from gpuenv.kb.query.jetson import jetpack_for_l4t, jetpack_row
from gpuenv.plan.model import TargetSummary
from gpuenv.versions import ComputeCapability, CudaVersion, DriverVersion

_FIXED_DAY = datetime.date(2000, 1, 1)  # plans do not depend on today's date
WHAT_IF = "what-if"  # the source of facts a what-if flag declared


@dataclass(frozen=True)
class GpuFloor:
    """A driver no older than the one bundled with the first CUDA release that supports a GPU's
    architecture: older drivers do not know the GPU (R535 cannot run an RTX 5090, whatever CUDA
    the build was made with)."""

    driver: DriverVersion
    reason: str  # "NVIDIA GeForce RTX 5090 (Blackwell) needs a driver of CUDA 12.8 or newer"


@dataclass(frozen=True)
class Target:
    ctx: Context
    # "linux-x86_64" | "linux-aarch64" | "windows-x86_64" | "macos-arm64" | "macos-x86_64"
    platform: str
    python: tuple[int, int] | None
    gpus: tuple[Gpu, ...]  # every GPU the env must serve (reported, declared or on the bus)
    jetpack: Row | None
    wants_gpu: bool  # plan GPU builds: a GPU or a driver is known (and not macOS)
    # the lowest driver every target GPU's architecture needs, and why (None: no GPU needs one)
    gpu_floor: GpuFloor | None = None
    # a GPU the driver's branch no longer drives (a probed machine; declared ones are refused)
    ceiling: Ceiling | None = None
    # plan builds from source for extensions no prebuilt wheel serves (a second pass)
    source_builds: bool = False
    _driver_cache: dict[tuple[int, int], DriverSupport] = field(
        default_factory=dict, compare=False, repr=False
    )

    @property
    def kb(self) -> KnowledgeBase:
        return self.ctx.kb

    @property
    def os(self) -> str:
        return self.platform.split("-")[0]

    @property
    def driver(self) -> DriverVersion | None:
        return self.ctx.driver

    @property
    def driver_max_cuda(self) -> CudaVersion | None:
        return self.ctx.driver_max_cuda

    @property
    def jetson(self) -> bool:
        return self.jetpack is not None or self.ctx.jetson

    @property
    def python_text(self) -> str | None:
        return f"{self.python[0]}.{self.python[1]}" if self.python else None

    @property
    def ccs(self) -> tuple[ComputeCapability, ...]:
        return tuple(sorted({g.cc for g in self.gpus if g.cc is not None}))

    def driver_support(self, cuda: CudaVersion) -> DriverSupport | None:
        """How the target's driver runs `cuda`; None when the driver is unknown (or Jetson)."""
        if self.driver is None or self.jetson:
            return None
        key = (cuda.major, cuda.minor)
        if key not in self._driver_cache:
            driver_os = self.driver_os
            self._driver_cache[key] = driver_supports_cuda(self.kb, self.driver, cuda, driver_os)
        return self._driver_cache[key]

    @property
    def driver_os(self) -> str:
        """Whose numbering the driver version follows: under WSL2 it is the Windows driver's."""
        return "windows" if self.os == "windows" else self.ctx.driver_os

    def with_python(self, python: tuple[int, int]) -> Target:
        return replace(self, python=python, _driver_cache={})

    def summary(self) -> TargetSummary:
        snapshot = self.ctx.snapshot
        return TargetSummary(
            platform=self.platform,
            python=self.python_text,
            driver=str(self.driver) if self.driver else None,
            driver_max_cuda=self.driver_max_cuda.short if self.driver_max_cuda else None,
            gpus=tuple(_shown(g.name, g.cc) for g in self.gpus),
            jetpack=str(self.jetpack["jetpack"]) if self.jetpack else None,
            wsl=self.ctx.wsl,
            origin=snapshot.origin,
            overrides=snapshot.overrides,
        )


def read_target(snapshot: Snapshot, kb: KnowledgeBase) -> Target:
    ctx = build_context(snapshot, kb, _FIXED_DAY)
    platform = platform_of(ctx)
    jetpack = _jetpack(ctx)
    gpus = ctx.gpus or ctx.pci_only_gpus
    _check_jetson(ctx, gpus, jetpack)
    ceiling = None if ctx.jetson else _ceiling(ctx, gpus)
    if jetpack is not None and not any(g.cc for g in gpus):
        gpus = _jetson_gpus(jetpack)
    wants_gpu = not platform.startswith("macos-") and bool(gpus or ctx.driver or jetpack)
    python = ctx.python or (_jetpack_python(jetpack) if jetpack else None)
    if jetpack is not None:
        platform = "linux-aarch64"
    floor = None if jetpack is not None else _gpu_floor(ctx, gpus, platform)
    return Target(ctx, platform, python, gpus, jetpack, wants_gpu, floor, ceiling)


def _check_jetson(ctx: Context, gpus: tuple[Gpu, ...], jetpack: Row | None) -> None:
    """A Jetson module implies Jetson: plan NVIDIA's JetPack builds, never the generic aarch64
    wheel. Which JetPack runs on it decides the build, so an unknown one stops the plan."""
    modules = jetson_gpus(gpus)
    if jetpack is None and ctx.jetson:
        raise _jetpack_unknown(ctx, modules)
    if jetpack is None:
        return
    listed = {ComputeCapability.parse(str(t)) for t in jetpack.get("device_ccs", ())}
    for gpu in modules:
        if gpu.cc is not None and gpu.cc not in listed:
            supported = ", ".join(jetpacks_for(ctx.kb, gpu.cc)) or "none in the knowledge base"
            raise GpuenvError(
                "impossible-machine",
                f"{_gpu_flag(ctx, gpu)} and --jetpack {jetpack['jetpack']} cannot be one machine: "
                f"JetPack {jetpack['jetpack']} does not run on {gpu.name} (compute capability "
                f"{gpu.cc})",
                hints=(f"JetPack releases for {gpu.name}: {supported}",),
            )


def _jetpack_unknown(ctx: Context, modules: tuple[Gpu, ...]) -> GpuenvError:
    jetson = ctx.snapshot.host.jetson.value
    l4t = jetson.l4t_release if jetson else None
    gpu = modules[0] if modules else None
    what = _gpu_flag(ctx, gpu) if gpu else "this Jetson"
    why = (
        f"its Jetson Linux (L4T) release {l4t} is not in the knowledge base"
        if l4t
        else "nothing says which JetPack release it runs"
    )
    releases = jetpacks_for(ctx.kb, gpu.cc if gpu else None)
    hints = [
        "give --jetpack X.Y: "
        + (
            f"the JetPack releases for {gpu.name if gpu else 'it'}: {', '.join(releases)}"
            if releases
            else "`gpuenv kb show jetson` lists the releases gpuenv knows"
        )
    ]
    hints.append("on the Jetson itself, gpuenv reads the L4T release from /etc/nv_tegra_release")
    return GpuenvError(
        "jetpack-unknown",
        f"{what} is a Jetson module: the generic aarch64 wheels have no code for its GPU, "
        f"and the Jetson build depends on the JetPack release, but {why}",
        hints=tuple(hints),
    )


def _ceiling(ctx: Context, gpus: tuple[Gpu, ...]) -> Ceiling | None:
    """A GPU beyond its architecture's last driver branch: with a declared GPU or driver there
    is no such machine (an error naming both); on a probed one, no GPU build can run."""
    found = driver_ceilings(ctx, gpus)
    if not found:
        return None
    first = found[0]
    if WHAT_IF in (first.gpu.source, ctx.driver_source):
        example = branch_example(ctx.kb, first.last_branch)
        driver = (
            f"--driver {ctx.driver}"
            if ctx.driver_source == WHAT_IF
            else f"this machine's driver {ctx.driver}"
        )
        raise GpuenvError(
            "impossible-machine",
            f"{_gpu_flag(ctx, first.gpu)} and {driver} cannot be one machine: {first.reason}",
            hints=(
                f"plan for a driver of the R{first.last_branch} branch"
                + (f" (--driver {example})" if example else ""),
                f"or for a GPU that driver R{first.driver_branch} supports",
            ),
        )
    return first


def _gpu_flag(ctx: Context, gpu: Gpu) -> str:
    """How the user named a GPU: the --gpu flag as given, or the probed GPU."""
    if gpu.source != WHAT_IF:
        return f"{gpu.name} (probed)"
    flags = [o for o in ctx.snapshot.overrides if o.startswith("--gpu ")]
    if len(flags) == 1:
        return f'--gpu "{flags[0][6:]}"'
    return f'--gpu "{gpu.name}"'


def _gpu_floor(ctx: Context, gpus: tuple[Gpu, ...], platform: str) -> GpuFloor | None:
    """The highest of the drivers bundled with each GPU architecture's first CUDA release."""
    driver_os = "windows" if platform.startswith("windows") else ctx.driver_os
    found: list[GpuFloor] = []
    for gpu in gpus:
        if gpu in ctx.gpus and WHAT_IF not in (gpu.source, ctx.driver_source):
            continue  # the driver itself reported this GPU: it knows it
        row = architecture(ctx.kb, gpu.cc) if gpu.cc else None
        first = CudaVersion.parse(str(row["first_cuda"])) if row and "first_cuda" in row else None
        need = toolkit_min_driver(ctx.kb, first, driver_os) if row and first else None
        if row and first and need:
            why = f"{gpu.name} ({row['name']}) needs a driver of CUDA {first.short} or newer"
            found.append(GpuFloor(need, why))
    return max(found, key=lambda f: f.driver, default=None)


def _jetpack_python(jetpack: Row) -> tuple[int, int] | None:
    """JetPack's Ubuntu python3, the Python NVIDIA builds its Jetson wheels for."""
    return python_tuple(str(jetpack.get("python", "")))


def python_tuple(text: str | None) -> tuple[int, int] | None:
    """'3.10' -> (3, 10); anything else -> None."""
    major, _, minor = (text or "").partition(".")
    return (int(major), int(minor)) if major.isdigit() and minor.isdigit() else None


def _jetpack(ctx: Context) -> Row | None:
    jetson = ctx.snapshot.host.jetson.value
    if jetson is None:
        return None
    if jetson.jetpack:
        row = jetpack_row(ctx.kb, jetson.jetpack)
        if row is not None:
            return row
    return jetpack_for_l4t(ctx.kb, jetson.l4t_release) if jetson.l4t_release else None


def _jetson_gpus(jetpack: Row) -> tuple[Gpu, ...]:
    """A JetPack release names the devices it runs on; plan for all of them."""
    out = []
    for index, text in enumerate(jetpack.get("device_ccs", [])):
        cc = ComputeCapability.parse(str(text))
        out.append(
            Gpu(index, f"Jetson GPU of JetPack {jetpack['jetpack']}", cc, "jetson", "kb:jetson")
        )
    return tuple(out)


def _shown(name: str, cc: object) -> str:
    """ "A100 (8.0)"; a GPU known only by its compute capability is not named twice."""
    if name.startswith("compute capability") or name.startswith("(compute capability"):
        return name
    return f"{name} ({cc or '?'})"
