"""What-if flags: replace probed facts with declared ones (`--driver`, `--gpu`, `--python-version`,
`--platform`, `--jetpack`), so "here" and "there" (a GPU node planned from a login node, a bug
report's machine) go through the same diagnosis and planning code.

Pure: a Snapshot and the knowledge base in, a Snapshot out. Replaced facts carry source "what-if".
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, replace

from gpuenv.errors import GpuenvError
from gpuenv.facts import (
    DriverFacts,
    GpuFacts,
    HostFacts,
    JetsonFacts,
    Observation,
    PythonEnvFacts,
    Snapshot,
)
from gpuenv.kb import KnowledgeBase
from gpuenv.kb.query.cuda import driver_max_cuda
from gpuenv.kb.query.gpus import resolve_gpu
from gpuenv.kb.query.jetson import jetpack_row
from gpuenv.versions import DriverVersion

WHAT_IF = "what-if"
PLATFORMS = {
    "linux-x86_64": ("linux", "x86_64"),
    "linux-aarch64": ("linux", "aarch64"),
    "windows-x86_64": ("windows", "AMD64"),
    "macos-arm64": ("darwin", "arm64"),
    "macos-x86_64": ("darwin", "x86_64"),
}
# Visible-device settings are about the probing machine; a declared GPU makes them moot.
_DEVICE_FAILURES = ("no_devices", "visible_devices_hide_all")


@dataclass(frozen=True)
class WhatIf:
    driver: str | None = None
    gpus: tuple[str, ...] = ()
    python_version: str | None = None
    platform: str | None = None
    jetpack: str | None = None

    @property
    def any(self) -> bool:
        # a flag given as "" is given: it is checked (and refused), not ignored
        singles = (self.driver, self.python_version, self.platform, self.jetpack)
        return bool(self.gpus) or any(v is not None for v in singles)

    def flags(self) -> tuple[str, ...]:
        out = [f"--driver {self.driver}"] if self.driver is not None else []
        out += [f"--gpu {g}" for g in self.gpus]
        if self.python_version is not None:
            out.append(f"--python-version {self.python_version}")
        if self.platform is not None:
            out.append(f"--platform {self.platform}")
        if self.jetpack is not None:
            out.append(f"--jetpack {self.jetpack}")
        return tuple(out)


def declared_snapshot(what_if: WhatIf, kb: KnowledgeBase) -> Snapshot:
    """A machine described only by flags (no probing): defaults to linux-x86_64."""
    host = HostFacts(os=Observation("linux", WHAT_IF), arch=Observation("x86_64", WHAT_IF))
    base = Snapshot(host=host, origin="declared", redacted=True)
    return apply_what_if(base, what_if, kb)


def apply_what_if(snapshot: Snapshot, what_if: WhatIf, kb: KnowledgeBase) -> Snapshot:
    if not what_if.any:
        return snapshot
    check_consistent(what_if, kb)
    result = snapshot
    if what_if.platform is not None:
        result = _platform(result, what_if.platform)
    if what_if.jetpack is not None:
        result = _jetpack(result, what_if.jetpack, kb)
    if what_if.driver is not None:
        result = _driver(result, what_if.driver, kb)
    if what_if.gpus:
        result = _gpus(result, what_if.gpus, kb)
    if what_if.python_version is not None:
        result = _python(result, what_if.python_version)
    return replace(result, overrides=result.overrides + what_if.flags())


def _platform(snapshot: Snapshot, platform: str) -> Snapshot:
    if platform not in PLATFORMS:
        raise GpuenvError(
            "bad-argument",
            f"unknown platform {platform!r}",
            hints=(f"use one of: {', '.join(PLATFORMS)}",),
        )
    os_name, arch = PLATFORMS[platform]
    host = replace(
        snapshot.host,
        os=Observation(os_name, WHAT_IF),
        arch=Observation(arch, WHAT_IF),
        apple_mps=Observation(platform == "macos-arm64", WHAT_IF),
        wsl=Observation(False, WHAT_IF),
    )
    return replace(snapshot, host=host)


# As nvidia-smi prints a driver version: 535.183.01, 551.78, or a bare branch (535); ASCII digits
_DRIVER_TEXT = re.compile(r"[1-9][0-9]{0,2}(?:\.[0-9]{1,4}){0,2}")


def _driver(snapshot: Snapshot, text: str, kb: KnowledgeBase) -> Snapshot:
    version = DriverVersion.parse(text) if _DRIVER_TEXT.fullmatch(text.strip()) else None
    if version is None:
        raise GpuenvError(
            "bad-argument",
            f"--driver {text!r} is not a driver version",
            hints=("write it as nvidia-smi prints it, e.g. 535.183.01 or 551.78",),
        )
    # WSL reports the Windows driver, numbered as Windows numbers it
    os_name = "windows" if snapshot.host.wsl.value else (snapshot.host.os.value or "linux")
    max_cuda = driver_max_cuda(kb, version, os_name)
    max_obs = (
        (Observation(str(max_cuda), "kb:driver_branch", problem=None),)
        if max_cuda
        else (Observation(None, "kb:driver_branch", problem=f"branch {version.branch} unknown"),)
    )
    # A declared driver answers: only the environment's hiding of devices still stands.
    failures = tuple(f for f in snapshot.driver.failures if f.value == "visible_devices_hide_all")
    driver = DriverFacts(
        versions=(Observation(str(version), WHAT_IF, raw=text),),
        max_cuda=max_obs,
        failures=failures,
    )
    return replace(snapshot, driver=driver)


def _gpus(snapshot: Snapshot, names: Sequence[str], kb: KnowledgeBase) -> Snapshot:
    gpus = []
    for index, text in enumerate(names):
        resolved = resolve_gpu(kb, text)
        if resolved is None:
            raise GpuenvError(
                "unknown-gpu",
                f"--gpu {text!r}: no GPU of that name in the knowledge base",
                hints=(
                    "give the name as nvidia-smi prints it, or a compute capability such as 8.6",
                    "`gpuenv kb show gpu NAME` lists the names it knows",
                ),
            )
        gpus.append(
            GpuFacts(
                index=index,
                name=_gpu_name(text, resolved.name, str(resolved.cc)),
                source=WHAT_IF,
                compute_capability=str(resolved.cc),
            )
        )
    failures = tuple(f for f in snapshot.driver.failures if f.value not in _DEVICE_FAILURES)
    driver = replace(snapshot.driver, failures=failures)
    return replace(snapshot, gpus=tuple(gpus), driver=driver)


def _gpu_name(text: str, model: str | None, cc: str) -> str:
    """The name to show: the model the KB matched, else what the user wrote ("A100" names a
    family of models of one compute capability), else the compute capability itself."""
    if model:
        return model
    written = " ".join(text.split())
    if written.replace(".", "").isdigit() or written.lower().startswith(("sm_", "sm", "compute_")):
        return f"compute capability {cc}"
    return written


def check_consistent(what_if: WhatIf, kb: KnowledgeBase) -> None:
    """What-if flags that cannot describe one machine are an error naming both flags."""
    platform = what_if.platform
    jetson_gpus = [g for g in what_if.gpus if _is_jetson(g, kb)]
    other_gpus = [g for g in what_if.gpus if g not in jetson_gpus]
    clashes: list[tuple[str, str, str]] = []
    if what_if.jetpack is not None and platform not in (None, "linux-aarch64"):
        clashes.append((f"--jetpack {what_if.jetpack}", f"--platform {platform}",
                        "JetPack is Linux on aarch64 (Jetson modules)"))  # fmt: skip
    if what_if.jetpack is not None and other_gpus:
        clashes.append((f"--jetpack {what_if.jetpack}", f"--gpu {other_gpus[0]}",
                        "a Jetson has its own integrated GPU"))  # fmt: skip
    if jetson_gpus and platform not in (None, "linux-aarch64"):
        clashes.append((f"--gpu {jetson_gpus[0]}", f"--platform {platform}",
                        "a Jetson module runs Linux on aarch64"))  # fmt: skip
    if platform is not None and platform.startswith("macos-"):
        nvidia = (("--gpu", what_if.gpus[0] if what_if.gpus else None),
                  ("--driver", what_if.driver), ("--jetpack", what_if.jetpack))  # fmt: skip
        clashes += [(f"{flag} {value}", f"--platform {platform}",
                     "macOS has no NVIDIA driver or CUDA")
                    for flag, value in nvidia if value is not None]  # fmt: skip
    if clashes:
        first, second, why = clashes[0]
        raise GpuenvError(
            "contradictory-flags",
            f"{first} and {second} cannot describe one machine: {why}",
            hints=("drop one of the two flags",),
        )


def _is_jetson(text: str, kb: KnowledgeBase) -> bool:
    resolved = resolve_gpu(kb, text)
    if resolved is None:
        return False
    names = (resolved.name, *resolved.candidates) if resolved.name else resolved.candidates
    return any("jetson" in (n or "").lower() for n in names) or "jetson" in text.lower()


def _python(snapshot: Snapshot, version: str) -> Snapshot:
    if not re.fullmatch(r"[0-9]+\.[0-9]+(?:\.[0-9]+)?", version):
        raise GpuenvError("bad-argument", f"--python-version {version!r} is not like 3.11")
    env = snapshot.python_env or PythonEnvFacts(interpreter="(declared)", python_version=None)
    return replace(snapshot, python_env=replace(env, python_version=version))


def _jetpack(snapshot: Snapshot, jetpack: str, kb: KnowledgeBase) -> Snapshot:
    row = jetpack_row(kb, jetpack)
    if row is None:
        raise GpuenvError(
            "unknown-jetpack",
            f"--jetpack {jetpack!r} is not in the knowledge base",
            hints=("`gpuenv kb show jetson` lists the JetPack releases it knows",),
        )
    facts = JetsonFacts(l4t_release=str(row["l4t"]), model=None, jetpack=str(row["jetpack"]))
    host = replace(
        snapshot.host,
        os=Observation("linux", WHAT_IF),
        arch=Observation("aarch64", WHAT_IF),
        jetson=Observation(facts, WHAT_IF),
    )
    return replace(snapshot, host=host)
