"""Limits of the machine itself, shared by the doctor and planning: a GPU newer driver branches no
longer drive (its architecture's last branch is older than the driver), and a Jetson module
whose JetPack release is unknown. Pure: Context + knowledge base in."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field

from gpuenv.diagnose.context import Context, Gpu
from gpuenv.kb import KnowledgeBase, Row
from gpuenv.kb.query.cuda import DRIVER, last_driver_branch, linux_branch
from gpuenv.versions import ComputeCapability, DriverVersion

JETSON = "jetson"


@dataclass(frozen=True)
class Ceiling:
    """A GPU whose architecture's last driver branch is older than the driver's branch."""

    gpu: Gpu
    architecture: str
    last_branch: int  # the last branch that drives it (Kepler: 470)
    driver: DriverVersion
    driver_branch: int  # the driver's branch in Linux numbering
    row: Row = field(compare=False)

    @property
    def reason(self) -> str:
        return (
            f"driver {self.driver} (R{self.driver_branch}) cannot drive {self.gpu.label}: "
            f"R{self.last_branch} is the last driver branch for {self.architecture} GPUs"
        )


def driver_ceilings(ctx: Context, gpus: Iterable[Gpu] | None = None) -> tuple[Ceiling, ...]:
    """Every GPU (reported, declared or only on the bus) the driver's branch no longer drives.
    Jetson GPUs are left out: their driver is part of Jetson Linux, numbered apart."""
    driver = ctx.driver
    if driver is None:
        return ()
    branch = linux_branch(ctx.kb, driver, ctx.driver_os)
    if branch is None:
        return ()
    out = []
    for gpu in gpus if gpus is not None else (*ctx.gpus, *ctx.pci_only_gpus):
        last = last_driver_branch(ctx.kb, gpu.cc) if gpu.cc and gpu.segment != JETSON else None
        if last is not None and branch > last[0]:
            name = str(last[1]["name"])
            out.append(Ceiling(gpu, name, last[0], driver, branch, last[1]))
    return tuple(out)


def branch_example(kb: KnowledgeBase, branch: int) -> str | None:
    """A Linux driver of that branch the knowledge base names (the newest bundled with a CUDA
    release), to show as an example."""
    found = [
        version
        for row in kb.rows(DRIVER, "toolkit_driver")
        if (version := DriverVersion.parse(row.get("linux_min_driver")))
        and version.branch == branch
    ]
    return str(max(found)) if found else None


def jetson_gpus(gpus: Iterable[Gpu]) -> tuple[Gpu, ...]:
    return tuple(g for g in gpus if g.segment == JETSON)


def jetpacks_for(kb: KnowledgeBase, cc: ComputeCapability | None) -> tuple[str, ...]:
    """The JetPack releases whose devices include this compute capability, oldest first."""
    if cc is None:
        return ()
    rows = [
        row
        for row in kb.rows("jetson", "jetpack")
        if any(ComputeCapability.parse(str(t)) == cc for t in row.get("device_ccs", ()))
    ]
    return tuple(str(r["jetpack"]) for r in sorted(rows, key=lambda r: _parts(str(r["jetpack"]))))


def _parts(text: str) -> tuple[int, ...]:
    return tuple(int(p) for p in text.split(".") if p.isdigit())
