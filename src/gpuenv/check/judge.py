"""From what a framework's child process said to a verdict (pure): the steps gpuenv judges itself
(does the framework see the GPUs the driver lists, do name and compute capability agree), the
explanation of each error text, the bench figures, and the framework's status.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from typing import Optional

from gpuenv.check.bench import figure, peak_row
from gpuenv.check.model import (
    Device,
    DriverGpu,
    Explained,
    Figure,
    FrameworkResult,
    Status,
    Step,
)
from gpuenv.check.parse import ChildReport, RawRun
from gpuenv.kb.loader import KnowledgeBase
from gpuenv.kb.query.gpus import gpu_by_name, gpu_cc, normalise_gpu_name

Explainer = Callable[[str], Optional[Explained]]
SEES = "sees the GPUs"
IDENTITY = "matches the driver"


@dataclass(frozen=True)
class Context:
    """What every framework's verdict depends on."""

    driver_gpus: tuple[DriverGpu, ...]
    machine_has_gpu: bool  # the driver lists a GPU, or some framework saw one
    kb: KnowledgeBase
    explain: Explainer
    device: int | None = None  # --device


def no_explanation(_text: str) -> Explained | None:
    return None


def judge(raw: RawRun, ctx: Context) -> FrameworkResult:
    report = raw.report
    steps = [_explained(s, ctx.explain) for s in report.steps]
    if raw.running is not None:
        steps.append(_interrupted(raw, ctx.explain))
    imported = any(s.name == "import" and s.status == "pass" for s in report.steps)
    if imported and (raw.outcome == "finished" or report.devices):
        steps = _ordered(steps, _sees(report, raw, ctx), _identities(report, ctx))
    explanation = None
    if raw.outcome != "finished" and raw.running is None:
        explanation = ctx.explain(_error_text(raw.error, raw.stderr_tail))
    failed = raw.outcome != "finished" or any(s.status == "fail" for s in steps)
    status: Status = "failed" if failed else ("passed" if report.devices else "no_gpu")
    return FrameworkResult(
        name=raw.framework,
        outcome=raw.outcome,
        status=status,
        seconds=raw.seconds,
        build=report.build,
        devices=report.devices,
        device_error=report.device_error,
        steps=tuple(steps),
        bench=_figures(report, ctx.kb),
        error=raw.error,
        stderr_tail=raw.stderr_tail if failed else None,
        explanation=explanation,
        problems=report.problems,
    )


def _error_text(*parts: str | None) -> str:
    return "\n".join(p for p in parts if p)


def _explained(step: Step, explain: Explainer) -> Step:
    if step.status != "fail":
        return step
    found = explain(_error_text(step.detail, step.error))
    return replace(step, explanation=found, cause=step.cause or (found.cause if found else None))


def _interrupted(raw: RawRun, explain: Explainer) -> Step:
    """The step a hang or a crash cut short, failed with what ended it."""
    assert raw.running is not None
    name, device = raw.running
    found = explain(_error_text(raw.error, raw.stderr_tail))
    return Step(
        name=name,
        device=device,
        status="fail",
        detail=raw.error,
        error=raw.stderr_tail,
        cause=found.cause if found else None,
        explanation=found,
    )


def _sees(report: ChildReport, raw: RawRun, ctx: Context) -> Step:
    """Whether the framework sees the GPUs (and the one --device names)."""
    count = len(report.devices)
    if count and ctx.device is not None and ctx.device >= count:
        detail = f"GPU {ctx.device} (--device) is not visible: it sees {count}"
        return Step(SEES, None, "fail", detail=detail)
    if count:
        names = ", ".join(sorted({d.name for d in report.devices if d.name}))
        return Step(SEES, None, "pass", detail=f"{count} GPU(s)" + (f": {names}" if names else ""))
    if not ctx.machine_has_gpu:
        return Step(SEES, None, "skip", detail="no GPU on this machine")
    why = report.device_error or "it lists no GPU"
    if report.build.gpu_build is False:
        detail = f"a CPU-only build of {raw.framework} ({report.build.version}): {why}"
        return Step(SEES, None, "fail", detail=detail[:500], cause="cpu_only_build")
    found = ctx.explain(why)
    return Step(
        SEES,
        None,
        "fail",
        detail=f"the driver lists GPUs but {raw.framework} sees none: {why}"[:500],
        cause=found.cause if found else None,
        explanation=found,
    )


def _identities(report: ChildReport, ctx: Context) -> list[Step]:
    wanted = [d for d in report.devices if ctx.device is None or d.index == ctx.device]
    return [identity(d, ctx.driver_gpus, ctx.kb) for d in wanted]


def identity(device: Device, driver_gpus: Sequence[DriverGpu], kb: KnowledgeBase) -> Step:
    """Do the framework's name and compute capability for `device` agree with a GPU the driver
    lists? (Indexes differ between the two — CUDA orders fastest first, nvidia-smi by PCI bus —
    so the device is compared with every GPU the driver lists.)"""
    step = Step(IDENTITY, device.index, "skip")
    if device.name is None and device.compute_capability is None:
        return replace(step, detail="the framework does not name its devices")
    if not driver_gpus:
        return replace(step, detail="the driver's GPU list was not read (see gpuenv doctor)")
    seen = f"{device.name or '?'} (compute capability {device.compute_capability or '?'})"
    for gpu in driver_gpus:
        if _same_name(device.name, gpu.name) and _same_cc(device, gpu, kb):
            return replace(step, status="pass", detail=f"{seen}, as the driver says")
    listed = "; ".join(f"{g.name or '?'} ({_driver_cc(g, kb) or '?'})" for g in driver_gpus)
    return replace(step, status="fail", detail=f"{seen} is not a GPU the driver lists: {listed}")


def _same_name(framework: str | None, driver: str | None) -> bool:
    if framework is None or driver is None:
        return True  # nothing to compare: the compute capability decides
    mine, theirs = normalise_gpu_name(framework), normalise_gpu_name(driver)
    return mine == theirs or mine.startswith(theirs + " ")  # MIG: "... MIG 1g.5gb"


def _driver_cc(gpu: DriverGpu, kb: KnowledgeBase) -> str | None:
    if gpu.compute_capability:
        return gpu.compute_capability
    row = gpu_by_name(kb, gpu.name) if gpu.name else None
    cc = gpu_cc(row) if row is not None else None
    return cc.short if cc is not None else None


def _same_cc(device: Device, gpu: DriverGpu, kb: KnowledgeBase) -> bool:
    theirs = _driver_cc(gpu, kb)
    return (
        device.compute_capability is None or theirs is None or device.compute_capability == theirs
    )


def _ordered(steps: list[Step], sees: Step, identities: list[Step]) -> list[Step]:
    """Framework-wide steps before the first device step, then whether it sees the GPUs, then
    each device's identity and steps, then framework-wide steps that came after (peers, NCCL)."""
    first = next((i for i, s in enumerate(steps) if s.device is not None), len(steps))
    head, rest = steps[:first], steps[first:]
    devices: dict[int, list[Step]] = {s.device: [s] for s in identities if s.device is not None}
    tail: list[Step] = []
    for step in rest:
        if step.device is None:
            tail.append(step)
        else:
            devices.setdefault(step.device, []).append(step)
    body = [s for group in devices.values() for s in group]
    return [*head, sees, *body, *tail]


def _figures(report: ChildReport, kb: KnowledgeBase) -> tuple[Figure, ...]:
    names = {d.index: d.name for d in report.devices}
    rows = {i: peak_row(kb, name) for i, name in names.items()}
    return tuple(figure(sample, rows.get(sample.device)) for sample in report.bench)


def machine_has_gpu(driver_gpus: Sequence[DriverGpu], runs: Sequence[RawRun]) -> bool:
    return bool(driver_gpus) or any(r.report.devices for r in runs)
