"""Read what a check script printed, defensively (pure).

The script prints one JSON document on stdout and progress markers on stderr (see _harness.py).
Neither is trusted: the document may be missing (a hang, a crash), cut (huge output), garbled
(something wrote to stdout before the harness took it over), or shaped wrongly. Every value is
type-checked and bounded; a run without a document is rebuilt from its markers, so a crash still
shows which steps passed and which one was running.
"""

from __future__ import annotations

import json
import math
import signal
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from gpuenv.check.model import Build, Device, Outcome, Step

CHECK_VERSION = 1
MARKER = "\x1egpuenv-check "
DOC_START = '{"check_version"'
MAX_STEPS = 500
MAX_DEVICES = 64
MAX_BENCH = 200
MAX_SAMPLES = 100
MAX_PROBLEMS = 20
NAME_CHARS = 120
DETAIL_CHARS = 500
ERROR_CHARS = 6000
TAIL_LINES = 40
TAIL_CHARS = 4000


@dataclass(frozen=True)
class BenchSample:
    """Timings of one bench operation as the script measured them."""

    name: str
    device: int
    unit: str  # "bytes" | "flop"
    work: float  # bytes moved or floating-point operations, per operation
    seconds: tuple[float, ...]  # per operation, one per repetition
    size: str | None = None


@dataclass(frozen=True)
class ChildReport:
    """What the script reported, from its document or rebuilt from its markers."""

    build: Build = field(default_factory=Build)
    devices: tuple[Device, ...] = ()
    device_error: str | None = None
    steps: tuple[Step, ...] = ()
    bench: tuple[BenchSample, ...] = ()
    problems: tuple[str, ...] = ()
    complete: bool = False  # True when it came from the document on stdout


@dataclass(frozen=True)
class RawRun:
    """One framework's child process, read: how it ended and what it said."""

    framework: str
    outcome: Outcome
    seconds: float
    report: ChildReport
    running: tuple[str, int | None] | None = None  # the step it was in when it ended early
    error: str | None = None
    stderr_tail: str | None = None


def read_run(
    framework: str,
    *,
    stdout: str,
    stderr: str,
    returncode: int | None,
    timed_out: bool = False,
    stopped: bool = False,
    start_error: str | None = None,
    seconds: float = 0.0,
    timeout: float | None = None,
) -> RawRun:
    """The outcome of one child process from its output and how it ended."""
    events, text = split_markers(stderr)
    tail = tail_of(text)
    doc, doc_problem = find_document(stdout)
    report = read_document(doc) if doc is not None else rebuild(events)
    running = None if doc is not None else running_step(events)

    def run(outcome: Outcome, error: str | None) -> RawRun:
        return RawRun(framework, outcome, seconds, report, running, error, tail)

    if start_error is not None:
        return run("not_started", start_error)
    if stopped:
        return run("stopped", "stopped: gpuenv was interrupted")
    if timed_out:
        limit = f"{timeout:g} s" if timeout is not None else "the time limit"
        if doc is not None:  # seen with NCCL and CUDA contexts torn down at exit
            why = f"printed its result, then did not exit within {limit} (a hang on the way out)"
            return run("timed_out", why + "; killed")
        return run("timed_out", f"did not finish within {limit}{_during(running)}; killed")
    if doc is not None:
        if returncode not in (0, None):
            report = _with_problem(report, f"the check script exited with {returncode}")
        return RawRun(framework, "finished", seconds, report, None, None, tail)
    if returncode is not None and returncode < 0:
        return run("crashed", f"{_signal_name(-returncode)}{_during(running)}")
    if returncode not in (0, None):
        return run("crashed", f"exited with {returncode} without a result{_during(running)}")
    return run("garbled", doc_problem)


def _during(running: tuple[str, int | None] | None) -> str:
    if running is None:
        return ""
    name, device = running
    return f" during step '{name}'" + (f" on GPU {device}" if device is not None else "")


def _signal_name(number: int) -> str:
    try:
        name = signal.Signals(number).name
    except ValueError:
        name = f"signal {number}"
    meaning = {"SIGABRT": "aborted", "SIGSEGV": "segmentation fault", "SIGKILL": "killed"}
    return f"crashed ({name}{', ' + meaning[name] if name in meaning else ''})"


def _with_problem(report: ChildReport, problem: str) -> ChildReport:
    return ChildReport(
        report.build,
        report.devices,
        report.device_error,
        report.steps,
        report.bench,
        (*report.problems, problem),
        report.complete,
    )


# -- stdout: the document --------------------------------------------------------------------------


def find_document(stdout: str) -> tuple[Mapping[str, Any] | None, str]:
    """The check document on stdout, or None with a one-line reason."""
    body = stdout.strip()
    if not body:
        return None, "printed no result"
    start = body.find(DOC_START)
    if start < 0:
        return None, f"printed no check document: {_excerpt(body)}"
    try:
        doc, _end = json.JSONDecoder().raw_decode(body, start)
    except json.JSONDecodeError as exc:
        return None, f"printed a document that cannot be read ({exc.msg}): {_excerpt(body)}"
    except RecursionError:
        return None, "printed a document nested too deep to read"
    if not isinstance(doc, dict) or doc.get("check_version") != CHECK_VERSION:
        version = doc.get("check_version") if isinstance(doc, dict) else None
        return None, f"printed a check document of version {version!r}, not {CHECK_VERSION}"
    return doc, ""


def _excerpt(text: str) -> str:
    return repr(text[:80]) + (f" … ({len(text)} characters)" if len(text) > 80 else "")


def read_document(doc: Mapping[str, Any]) -> ChildReport:
    return ChildReport(
        build=read_build(doc.get("build")),
        devices=tuple(_limited(read_device, doc.get("devices"), MAX_DEVICES)),
        device_error=text(doc.get("device_error"), ERROR_CHARS),
        steps=tuple(_limited(read_step, doc.get("steps"), MAX_STEPS)),
        bench=tuple(_limited(read_sample, doc.get("bench"), MAX_BENCH)),
        problems=tuple(
            t
            for t in (text(p, ERROR_CHARS) for p in _list(doc.get("problems"))[:MAX_PROBLEMS])
            if t
        ),
        complete=True,
    )


def _limited(reader: Any, raw: Any, most: int) -> list[Any]:
    read = (reader(item) for item in _list(raw)[:most])
    return [item for item in read if item is not None]


def _list(raw: Any) -> list[Any]:
    return raw if isinstance(raw, list) else []


def text(raw: Any, most: int = DETAIL_CHARS) -> str | None:
    if not isinstance(raw, str):
        return None
    return raw if len(raw) <= most else raw[:most] + "…"


def number(raw: Any) -> float | None:
    if isinstance(raw, bool) or not isinstance(raw, (int, float)):
        return None
    value = float(raw)
    return value if math.isfinite(value) else None


def index(raw: Any) -> int | None:
    return raw if isinstance(raw, int) and not isinstance(raw, bool) and 0 <= raw < 1024 else None


def read_build(raw: Any) -> Build:
    if not isinstance(raw, dict):
        return Build()
    details = raw.get("details")
    pairs = details.items() if isinstance(details, dict) else ()
    gpu = raw.get("gpu_build")
    return Build(
        version=text(raw.get("version"), NAME_CHARS),
        framework_cuda=text(raw.get("framework_cuda"), NAME_CHARS),
        cudnn=text(raw.get("cudnn"), NAME_CHARS),
        gpu_build=gpu if isinstance(gpu, bool) else None,
        details={k[:NAME_CHARS]: v for k, v in _text_pairs(pairs)},
    )


def _text_pairs(pairs: Iterable[tuple[Any, Any]]) -> Iterable[tuple[str, str]]:
    for count, (key, value) in enumerate(pairs):
        if count >= 50:
            return
        if isinstance(key, str) and isinstance(value, str):
            yield key, value[:DETAIL_CHARS]


def read_device(raw: Any) -> Device | None:
    if not isinstance(raw, dict) or index(raw.get("index")) is None:
        return None
    total, free = number(raw.get("memory_total")), number(raw.get("memory_free"))
    return Device(
        index=raw["index"],
        name=text(raw.get("name"), NAME_CHARS),
        compute_capability=text(raw.get("cc"), 8),
        memory_total_bytes=int(total) if total is not None and total >= 0 else None,
        memory_free_bytes=int(free) if free is not None and free >= 0 else None,
    )


def read_step(raw: Any) -> Step | None:
    if not isinstance(raw, dict):
        return None
    name = text(raw.get("step"), NAME_CHARS)
    status = raw.get("status")
    if not name or status not in ("pass", "fail", "skip"):
        return None
    seconds = number(raw.get("seconds"))
    return Step(
        name=name,
        device=index(raw.get("device")),
        status=status,
        seconds=seconds if seconds is not None and seconds >= 0 else None,
        detail=text(raw.get("detail")),
        error=text(raw.get("error"), ERROR_CHARS),
    )


def read_sample(raw: Any) -> BenchSample | None:
    if not isinstance(raw, dict):
        return None
    name, device, unit = (
        text(raw.get("name"), NAME_CHARS),
        index(raw.get("device")),
        raw.get("unit"),
    )
    work = number(raw.get("work"))
    seconds = tuple(
        s for s in (number(v) for v in _list(raw.get("seconds"))[:MAX_SAMPLES]) if s and s > 0
    )
    if not name or device is None or unit not in ("bytes", "flop") or not work or work <= 0:
        return None
    if not seconds:
        return None
    return BenchSample(name, device, unit, work, seconds, text(raw.get("size"), NAME_CHARS))


# -- stderr: the progress markers ------------------------------------------------------------------


def split_markers(stderr: str) -> tuple[list[tuple[str, Any]], str]:
    """The (event, body) markers in stderr, and stderr without them."""
    events: list[tuple[str, Any]] = []
    kept: list[str] = []
    for line in stderr.split("\n"):
        if not line.startswith(MARKER):
            kept.append(line)
            continue
        try:
            marker = json.loads(line[len(MARKER) :])
        except (ValueError, RecursionError):
            continue  # cut short (the output's middle was dropped, or the process died writing)
        if isinstance(marker, dict) and isinstance(marker.get("event"), str):
            events.append((marker["event"], marker.get("body")))
    return events, _squeeze("\n".join(kept))


def _squeeze(stderr: str) -> str:
    """stderr without the blank lines each marker leaves before it."""
    lines = stderr.split("\n")
    return "\n".join(ln for i, ln in enumerate(lines) if ln.strip() or (i and lines[i - 1].strip()))


def tail_of(stderr: str) -> str | None:
    lines = [ln for ln in stderr.strip().splitlines() if ln.strip()]
    tail = "\n".join(lines[-TAIL_LINES:])
    return tail[-TAIL_CHARS:] or None


def rebuild(events: list[tuple[str, Any]]) -> ChildReport:
    """What the markers tell of a run that printed no document."""
    build = Build()
    devices: list[Device] = []
    steps: list[Step] = []
    bench: list[BenchSample] = []
    device_error = None
    for event, body in events:
        if event == "build":
            build = read_build(body)
        elif event == "device" and len(devices) < MAX_DEVICES:
            devices += [d for d in (read_device(body),) if d is not None]
        elif event == "step" and len(steps) < MAX_STEPS:
            steps += [s for s in (read_step(body),) if s is not None]
        elif event == "bench" and len(bench) < MAX_BENCH:
            bench += [b for b in (read_sample(body),) if b is not None]
        elif event == "device_error":
            device_error = text(body, ERROR_CHARS)
    return ChildReport(build, tuple(devices), device_error, tuple(steps), tuple(bench))


def running_step(events: list[tuple[str, Any]]) -> tuple[str, int | None] | None:
    """The step that started last and never ended."""
    started: tuple[str, int | None] | None = None
    for event, body in events:
        if not isinstance(body, dict):
            continue
        name = text(body.get("step"), NAME_CHARS)
        if event == "start" and name:
            started = (name, index(body.get("device")))
        elif event == "step" and started == (name, index(body.get("device"))):
            started = None
    return started
