"""What `gpuenv check` found: per framework, device and step, with timings (pure data).

Field names are the keys of the JSON form (`to_dict`, docs/check.schema.json).

A framework's run ends in one `outcome` (how its child process ended) and one `status` (what the
checks say). The exit code of the whole check follows from the statuses (`exit_code`).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

from gpuenv.errors import EXIT_FINDINGS, EXIT_NO_GPU, EXIT_OK
from gpuenv.facts import plain_dict

FRAMEWORKS = ("torch", "tensorflow", "jax", "cupy", "onnxruntime")

StepStatus = Literal["pass", "fail", "skip"]
# How the framework's child process ended
Outcome = Literal[
    "finished",  # it printed its document
    "not_installed",  # asked for by --framework, not in the snapshot, and its import finds none
    "timed_out",  # killed at --timeout
    "crashed",  # ended by a signal (abort, segfault) or exited without a document
    "garbled",  # printed something that is not a check document
    "stopped",  # gpuenv was interrupted
    "not_started",  # the interpreter could not be run
]
# What the checks say about the framework
Status = Literal["passed", "failed", "no_gpu"]


@dataclass(frozen=True)
class Explained:
    """What `gpuenv.explain` made of an error text: a cause of the shared vocabulary."""

    cause: str | None
    summary: str | None
    detail: Mapping[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class Step:
    name: str
    device: int | None  # the framework's device index; None for the framework as a whole
    status: StepStatus
    seconds: float | None = None
    detail: str | None = None
    error: str | None = None  # the end of a traceback, or the log that explains a failure
    cause: str | None = None  # a cause of the shared vocabulary, when known
    explanation: Explained | None = None


@dataclass(frozen=True)
class Device:
    index: int
    name: str | None
    compute_capability: str | None
    memory_total_bytes: int | None = None
    memory_free_bytes: int | None = None


@dataclass(frozen=True)
class Figure:
    """One bench measurement: the median rate and its share of the card's spec peak."""

    name: str
    device: int
    unit: str  # "GB/s" | "TFLOP/s"
    median: float
    repetitions: int
    spread: float  # (slowest - fastest) / median of the repetitions' rates
    size: str | None = None
    peak: float | None = None  # the spec peak in `unit`, from the knowledge base
    peak_field: str | None = None  # gpus.toml field it came from
    percent_of_peak: float | None = None
    gpu: str | None = None  # the KB row the peak belongs to
    low: bool = False  # below LOW_PERCENT of the peak: worth a look


@dataclass(frozen=True)
class Build:
    version: str | None = None
    framework_cuda: str | None = None
    cudnn: str | None = None
    gpu_build: bool | None = None
    details: Mapping[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class FrameworkResult:
    name: str
    outcome: Outcome
    status: Status
    seconds: float = 0.0
    build: Build = field(default_factory=Build)
    devices: tuple[Device, ...] = ()
    device_error: str | None = None  # why it sees no GPU, in its own words
    steps: tuple[Step, ...] = ()
    bench: tuple[Figure, ...] = ()
    error: str | None = None  # what ended the run early (a hang, a crash), one paragraph
    stderr_tail: str | None = None  # the end of what it wrote on stderr, when something failed
    explanation: Explained | None = None  # of `error` and the stderr tail
    problems: tuple[str, ...] = ()

    @property
    def failed_steps(self) -> tuple[Step, ...]:
        return tuple(s for s in self.steps if s.status == "fail")


@dataclass(frozen=True)
class DriverGpu:
    """A GPU as the driver lists it (from the snapshot), for comparison."""

    index: int
    name: str | None
    compute_capability: str | None


@dataclass(frozen=True)
class CheckReport:
    interpreter: str
    python_version: str | None
    driver_gpus: tuple[DriverGpu, ...]
    frameworks: tuple[FrameworkResult, ...]
    bench: bool = False
    notes: tuple[str, ...] = ()

    @property
    def exit_code(self) -> int:
        return exit_code(self.frameworks)

    @property
    def verdict(self) -> str:
        return {EXIT_OK: "passed", EXIT_NO_GPU: "no_gpu"}.get(self.exit_code, "failed")


def to_dict(record: Explained | FrameworkResult | DriverGpu) -> dict[str, Any]:
    """The JSON form of a record (nested records, tuples and mappings become dicts and lists)."""
    return plain_dict(record)


def exit_code(results: tuple[FrameworkResult, ...]) -> int:
    """1 when any check failed (an import, a hang, a wrong answer, a GPU not seen) or nothing was
    checked; else 3 when no framework had a GPU to check; else 0."""
    if not results or any(r.status == "failed" for r in results):
        return EXIT_FINDINGS
    if all(r.status == "no_gpu" for r in results):
        return EXIT_NO_GPU
    return EXIT_OK
