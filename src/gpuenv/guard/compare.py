"""What changed between two locks (or a lock and the env now), most consequential first. Pure.

"torch 2.1.0+cu121 → 2.3.0+cpu: CUDA build lost" comes before "cuDNN 9 → 8", which comes before
a plain version change, which comes before anything that is not GPU-critical. A change is
critical when the package is GPU-critical on either side.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import TypeVar

from gpuenv.guard.model import (
    Lock,
    LockedConda,
    LockedPackage,
    cuda_major,
    label_cuda_major,
    normalize,
)

P = TypeVar("P", LockedPackage, LockedConda)

# Kinds of change, most consequential first (the order sorts a diff).
KINDS = (
    "removed",  # a GPU-critical package is gone
    "cuda-lost",  # a CUDA build replaced by a CPU one
    "cuda-major",  # built for another CUDA major
    "cudnn-major",  # another cuDNN major
    "variant",  # another build variant (local label, conda build string)
    "version",  # another version
    "added",  # a new package
)


@dataclass(frozen=True)
class Change:
    name: str
    kind: str  # one of KINDS
    before: str | None  # version (with label) or None when added
    after: str | None  # version or None when removed
    what: str  # "CUDA build lost", "cuDNN 9 → 8", "version changed"
    critical: bool
    conda: bool = False  # a conda package (conda-meta), not a Python distribution

    @property
    def title(self) -> str:
        arrow = f"{self.before or '(none)'} → {self.after or '(removed)'}"
        if self.kind == "added":
            arrow = f"{self.after} (new)"
        elif self.kind == "removed":
            arrow = f"{self.before} (removed)"
        return f"{self.name} {arrow}: {self.what}"

    @property
    def rank(self) -> tuple[int, int, str]:
        return (0 if self.critical else 1, KINDS.index(self.kind), normalize(self.name))


@dataclass(frozen=True)
class MachineChange:
    what: str  # "driver 535.183.01 → 550.54.14", "GPUs: RTX 3090 → A100"


def compare(before: Lock, after: Lock) -> tuple[Change, ...]:
    """Every package change from `before` to `after`, most consequential first."""
    changes = [
        *_compare_named(
            {p.key: p for p in before.packages}, {p.key: p for p in after.packages}, _package
        ),
        *_compare_named({p.key: p for p in before.conda}, {p.key: p for p in after.conda}, _conda),
    ]
    return tuple(sorted(changes, key=lambda c: c.rank))


def _compare_named(
    before: Mapping[str, P],
    after: Mapping[str, P],
    one: Callable[[P | None, P | None], Change | None],
) -> list[Change]:
    found: list[Change] = []
    for key in sorted(set(before) | set(after)):
        change = one(before.get(key), after.get(key))
        if change is not None:
            found.append(change)
    return found


def _package(old: LockedPackage | None, new: LockedPackage | None) -> Change | None:
    if old is None and new is not None:
        what = f"new GPU-critical package ({new.why})" if new.critical else "new package"
        return Change(new.name, "added", None, new.version, what, new.critical)
    if new is None and old is not None:
        what = f"{old.why} removed" if old.critical else "removed"
        return Change(old.name, "removed", old.version, None, what, old.critical)
    assert old is not None and new is not None
    if old.version == new.version:
        return None
    kind, what = _package_kind(old, new)
    return Change(old.name, kind, old.version, new.version, what, old.critical or new.critical)


def _package_kind(old: LockedPackage, new: LockedPackage) -> tuple[str, str]:
    old_major = cuda_major(old.cuda) or label_cuda_major(old.variant)
    new_major = cuda_major(new.cuda) or label_cuda_major(new.variant)
    old_gpu = old.gpu_build if old.gpu_build is not None else _label_gpu(old.variant)
    new_gpu = new.gpu_build if new.gpu_build is not None else _label_gpu(new.variant)
    if old_gpu and new_gpu is False:
        return "cuda-lost", "CUDA build lost" + (f" ({new.variant} build)" if new.variant else "")
    if old_major and new_major and old_major != new_major:
        return "cuda-major", f"built for CUDA {new_major} instead of CUDA {old_major}"
    cudnn = _cudnn_change(old, new)
    if cudnn:
        return "cudnn-major", cudnn
    if old.variant != new.variant:
        return "variant", f"build variant {old.variant or '(none)'} → {new.variant or '(none)'}"
    return "version", "version changed"


def _label_gpu(label: str | None) -> bool | None:
    if label is None:
        return None
    if label == "cpu":
        return False
    return True if (label_cuda_major(label) or label.startswith("rocm")) else None


def _cudnn_change(old: LockedPackage, new: LockedPackage) -> str | None:
    if normalize(old.name).startswith("nvidia-cudnn"):
        before, after = cuda_major(old.version), cuda_major(new.version)
    else:
        before, after = cuda_major(old.cudnn), cuda_major(new.cudnn)
    if before and after and before != after:
        return f"cuDNN {before} → {after}"
    return None


def _conda(old: LockedConda | None, new: LockedConda | None) -> Change | None:
    if old is None and new is not None:
        what = "new GPU-critical conda package" if new.critical else "new conda package"
        return Change(new.name, "added", None, _conda_label(new), what, new.critical, True)
    if new is None and old is not None:
        what = "GPU-critical conda package removed" if old.critical else "conda package removed"
        return Change(old.name, "removed", _conda_label(old), None, what, old.critical, True)
    assert old is not None and new is not None
    if (old.version, old.build) == (new.version, new.build):
        return None
    critical = old.critical or new.critical
    old_cuda, new_cuda = "cuda" in (old.build or ""), "cuda" in (new.build or "")
    if old_cuda and not new_cuda and "cpu" in (new.build or ""):
        kind, what = "cuda-lost", "CUDA build lost"
    elif old.version == new.version:
        kind, what = "variant", f"build {old.build} → {new.build}"
    else:
        kind, what = "version", "version changed"
    return Change(old.name, kind, _conda_label(old), _conda_label(new), what, critical, True)


def _conda_label(package: LockedConda) -> str:
    return f"{package.version}={package.build}" if package.build else package.version


def compare_machines(before: Lock, after: Lock) -> tuple[MachineChange, ...]:
    """Driver and GPUs that differ; nothing where either side does not know."""
    old, new = before.machine, after.machine
    found = []
    if old.driver and new.driver and old.driver != new.driver:
        found.append(MachineChange(f"driver {old.driver} → {new.driver}"))
    elif old.driver and not new.driver:
        found.append(MachineChange(f"driver {old.driver} → none found"))
    old_gpus = [g.name or "?" for g in old.gpus]
    new_gpus = [g.name or "?" for g in new.gpus]
    if old_gpus != new_gpus and (old_gpus or new.driver):
        found.append(
            MachineChange(f"GPUs {', '.join(old_gpus) or 'none'} → {', '.join(new_gpus) or 'none'}")
        )
    if old.os and new.os and (old.os, old.arch) != (new.os, new.arch):
        found.append(MachineChange(f"platform {old.os}-{old.arch} → {new.os}-{new.arch}"))
    return tuple(found)


def critical_changes(changes: tuple[Change, ...]) -> tuple[Change, ...]:
    return tuple(c for c in changes if c.critical)


def refused_changes(changes: tuple[Change, ...]) -> tuple[Change, ...]:
    """The changes `gpuenv guard` refuses: a GPU-critical package that is there now would move
    or go. A new one (the first torch of an env, a CUDA wheel a new package needs) changes
    nothing that works now: it is shown, not refused."""
    return tuple(c for c in changes if c.critical and c.kind != "added")
