"""`nvidia-container-cli info` (the host driver and GPUs as the container runtime sees them) and
`docker info` (runtimes, the default runtime)."""

from __future__ import annotations

import re
from dataclasses import dataclass

_KEY = re.compile(r"^\s*([A-Za-z][A-Za-z ]{1,30}?)\s*:\s+(\S.*?)\s*$")
ANCHORS = ("NVRM version:", "Default Runtime:", "Runtimes:")


@dataclass(frozen=True)
class ContainerCliGpu:
    model: str | None
    architecture: str | None  # compute capability, "7.5"
    bus: str | None


@dataclass(frozen=True)
class ContainerInfo:
    driver_version: str | None = None  # nvidia-container-cli: NVRM version
    driver_max_cuda: str | None = None  # nvidia-container-cli: CUDA version
    gpus: tuple[ContainerCliGpu, ...] = ()
    runtimes: tuple[str, ...] = ()  # docker info: Runtimes
    default_runtime: str | None = None


def parse_container_info(lines: list[str]) -> ContainerInfo | None:
    top: dict[str, str] = {}
    gpus: list[dict[str, str]] = []
    for line in lines:
        key = _KEY.match(line)
        if key is None:
            continue
        name, value = key.group(1).strip(), key.group(2)
        if name == "Device Index":
            gpus.append({})
        elif gpus and name in ("Model", "Architecture", "Bus Location"):
            gpus[-1].setdefault(name, value)
        else:
            top.setdefault(name, value)
    driver = top.get("NVRM version")
    runtimes = tuple(top.get("Runtimes", "").split())
    if not driver and not runtimes and "Default Runtime" not in top:
        return None
    cuda = top.get("CUDA version")
    return ContainerInfo(
        driver_version=driver if driver and re.fullmatch(r"\d+(?:\.\d+)+", driver) else None,
        driver_max_cuda=cuda if cuda and re.fullmatch(r"\d+\.\d+", cuda) else None,
        gpus=tuple(
            ContainerCliGpu(g.get("Model"), g.get("Architecture"), g.get("Bus Location"))
            for g in gpus
        ),
        runtimes=runtimes,
        default_runtime=top.get("Default Runtime"),
    )
