"""Findings: what is wrong (or worth knowing), why, the evidence, and the exact fix.

The `cause` vocabulary is shared with `explain`, so a finding from a machine and a finding from a
pasted error log can be compared.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

CAUSES = (
    "cpu_only_build",
    "driver_too_old",
    "no_driver",
    "driver_module_mismatch",
    "gpu_arch_unsupported",
    "missing_cuda_lib",
    "cudnn_mismatch",
    "nccl_issue",
    "solver_conflict",
    "wrong_platform_wheel",
    "python_version_unsupported",
    "container_driver_mismatch",
    "out_of_memory",
    "multiple_cuda_conflict",
    "extension_build_mismatch",
    "windows_dll",
    "mps_or_rocm_specific",
    "other",
)
SEVERITIES = ("error", "warning", "info")


@dataclass(frozen=True)
class Evidence:
    """One fact a finding rests on, and who said it."""

    fact: str  # "driver version", "torch build"
    value: str  # "535.183.01"
    source: str  # "nvidia-smi", "torch/version.py", "kb: cuda_driver.toml toolkit_driver ..."


@dataclass(frozen=True)
class Fix:
    summary: str  # what to do, in one sentence
    commands: tuple[str, ...] = ()  # exact commands for this machine and installer
    installer: str | None = None  # "pip" | "uv" | "conda" | "system" ...
    notes: tuple[str, ...] = ()


@dataclass(frozen=True)
class Finding:
    rule: str  # stable rule id, e.g. "framework-cpu-build"
    cause: str  # one of CAUSES
    severity: str  # one of SEVERITIES
    layer: str  # "gpu" | "driver" | "cuda-libraries" | "framework:torch" | "extension:mmcv" ...
    title: str
    why: str
    evidence: tuple[Evidence, ...] = ()
    fix: Fix | None = None
    citations: tuple[str, ...] = ()  # knowledge-base rows the judgement used

    def __post_init__(self) -> None:
        if self.cause not in CAUSES:
            raise ValueError(f"unknown cause {self.cause!r}")
        if self.severity not in SEVERITIES:
            raise ValueError(f"unknown severity {self.severity!r}")

    @property
    def rank(self) -> int:
        return SEVERITIES.index(self.severity)


@dataclass(frozen=True)
class Layer:
    """One floor of the stack and its verdict."""

    name: str  # "GPU", "Driver", "CUDA libraries", "torch", ...
    key: str  # matches Finding.layer
    verdict: str  # "ok" | "warning" | "error" | "unknown" | "absent"
    summary: str
    details: tuple[str, ...] = ()  # everything, with full paths (doctor -v)
    compact: tuple[str, ...] | None = None  # the default view's lines; None: the details


@dataclass(frozen=True)
class Diagnosis:
    layers: tuple[Layer, ...]
    findings: tuple[Finding, ...]  # most important first
    notes: tuple[str, ...] = field(default_factory=tuple)

    @property
    def has_error(self) -> bool:
        return any(f.severity == "error" for f in self.findings)

    def to_dict(self) -> dict[str, Any]:
        import dataclasses

        return {
            "layers": [dataclasses.asdict(layer) for layer in self.layers],
            "findings": [dataclasses.asdict(f) for f in self.findings],
            "notes": list(self.notes),
        }


def ordered(findings: list[Finding]) -> tuple[Finding, ...]:
    """Errors first, then warnings, then info; stable within a severity (rule order)."""
    return tuple(sorted(findings, key=lambda f: f.rank))
