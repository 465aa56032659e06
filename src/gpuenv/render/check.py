"""`gpuenv check` reports: a compact table per framework for the terminal, and the JSON document.

Pure: a `CheckReport` in, a `Doc` (laid out by `render.terminal`) or a dict out.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from gpuenv.check.model import CheckReport, Explained, Figure, FrameworkResult, Step, to_dict
from gpuenv.errors import EXIT_NO_GPU, EXIT_OK
from gpuenv.render.layout import Doc, Line, blank, command, line, verbatim
from gpuenv.render.terminal import Terminal, to_text

CHECK_SCHEMA = "gpuenv-check/1"
MARKS = {"pass": ("✓", "ok"), "fail": ("✗", "error"), "skip": ("-", "muted")}
STATUS_STYLE = {"passed": "ok", "failed": "error", "no_gpu": "warning"}
STATUS_TEXT = {"passed": "passed", "failed": "failed", "no_gpu": "no GPU to check"}
STEP_WIDTH = 40
HANG_MOST = 44  # continuation lines of a row's detail start here at most
ERROR_LINES = 4  # of a failed step's error text shown; -v shows them all
TAIL_LINES = 8  # of a failed run's stderr shown; -v shows all that was kept


def check_document(report: CheckReport) -> dict[str, Any]:
    return {
        "schema": CHECK_SCHEMA,
        "exit_code": report.exit_code,
        "verdict": report.verdict,
        "interpreter": report.interpreter,
        "python_version": report.python_version,
        "driver_gpus": [to_dict(g) for g in report.driver_gpus],
        "bench": report.bench,
        "frameworks": [to_dict(f) for f in report.frameworks],
        "notes": list(report.notes),
    }


def render_text(
    report: CheckReport, terminal: Terminal | None = None, verbose: bool = False
) -> str:
    return to_text(check_doc(report, verbose), terminal or Terminal())


def check_doc(report: CheckReport, verbose: bool = False) -> Doc:
    python = f" (Python {report.python_version})" if report.python_version else ""
    doc: Doc = [line(("gpuenv check", "heading"), f"  {report.interpreter}{python}")]
    doc.append(line("driver's GPUs: ", _driver_gpus(report)))
    doc.append(blank())
    for result in report.frameworks:
        doc += framework_lines(result, verbose)
        doc.append(blank())
    doc += [line(("note: ", "muted"), note) for note in report.notes]
    doc.append(_verdict(report))
    return doc


def _driver_gpus(report: CheckReport) -> str:
    if not report.driver_gpus:
        return "none listed"
    return "; ".join(
        f"{g.index}: {g.name or 'unnamed'}"
        + (f" ({g.compute_capability})" if g.compute_capability else "")
        for g in report.driver_gpus
    )


def framework_lines(result: FrameworkResult, verbose: bool = False) -> Doc:
    doc: Doc = [_framework_head(result)]
    if result.error and result.outcome != "finished" and not result.steps:
        doc.append(line("error: ", result.error, indent=2))
        doc += _explanation_lines(result.explanation, 9)
    width = min(max((len(_label(s)) for s in result.steps), default=10), STEP_WIDTH)
    for step in result.steps:
        doc += step_lines(step, width, verbose)
    if result.status == "failed" and result.stderr_tail and not _shown(result):
        doc += _tail_lines(result.stderr_tail, verbose)
    doc += [line(("problem: ", "warning"), p, indent=2) for p in result.problems]
    doc += bench_lines(result.bench)
    return doc


def _framework_head(result: FrameworkResult) -> Line:
    build = result.build
    parts = [p for p in (build.version, _build_text(result)) if p]
    status = STATUS_TEXT[result.status]
    if result.outcome != "finished":
        status += f" ({result.outcome.replace('_', ' ')})"
    return line(
        (result.name, "bold"),
        f" {' '.join(parts)}" if parts else "",
        " — ",
        (status, STATUS_STYLE[result.status]),
        (f" · {result.seconds:.1f} s", "muted"),
    )


def _build_text(result: FrameworkResult) -> str | None:
    build = result.build
    if build.gpu_build is False:
        return "(CPU-only build)"
    bits = [f"CUDA {build.framework_cuda}" if build.framework_cuda else None]
    bits.append(f"cuDNN {build.cudnn}" if build.cudnn else None)
    text = ", ".join(b for b in bits if b)
    return f"({text})" if text else None


def _label(step: Step) -> str:
    return f"GPU {step.device}  {step.name}" if step.device is not None else step.name


def step_lines(step: Step, width: int, verbose: bool = False) -> Doc:
    """One row (mark, status, device and step, seconds, detail), then for a failure its cause
    and the end of its error text."""
    mark, style = MARKS[step.status]
    head = f"{mark} {step.status:<4}  "
    seconds = f"{step.seconds:.2f} s" if step.seconds is not None else ""
    body = (
        f"{_label(step):<{width}} {seconds:>8}  "
        if step.detail
        else _label(step) + (f"{seconds:>{width - len(_label(step)) + 9}}" if seconds else "")
    )
    hang = len(head) + len(body)
    lines = [line((head, style), body, step.detail or "", indent=2, hang=min(hang, HANG_MOST))]
    if step.status == "fail":
        if step.cause and not step.explanation:
            lines.append(line("cause: ", step.cause, indent=len(head) + 2))
        lines += _explanation_lines(step.explanation, len(head) + 2)
        if step.error and step.error != step.detail:
            shown = step.error.splitlines()
            shown = shown if verbose else shown[-ERROR_LINES:]
            lines += [verbatim((t, "muted"), indent=len(head) + 4) for t in shown]
    return lines


def _explanation_lines(found: Explained | None, indent: int) -> Doc:
    """explain's cause and summary, and its fix where it gives one (a summary, commands)."""
    if found is None or not (found.cause or found.summary):
        return []
    summary = found.summary or ""
    if found.cause and summary.startswith(f"{found.cause}: "):
        summary = summary[len(found.cause) + 2 :]
    summary = re.sub(r" \(line \d+\)$", "", summary)  # a line of the error text, not of ours
    text = " — ".join(p for p in (found.cause, summary) if p)
    doc = [line(("explain: ", "info"), text, indent=indent)]
    fix = found.detail.get("fix")
    if isinstance(fix, Mapping):
        if isinstance(fix.get("summary"), str):
            doc.append(line("fix: ", fix["summary"], indent=indent))
        commands = fix.get("commands")
        doc += [command(c, indent=indent + 2) for c in commands or () if isinstance(c, str)]
    return doc


def _shown(result: FrameworkResult) -> bool:
    """Whether a failed step already shows the end of stderr (a crash's step carries it)."""
    tail = result.stderr_tail or ""
    last = tail.strip().splitlines()[-1][:200] if tail.strip() else ""
    return any(last in (s.error or "") + (s.detail or "") for s in result.failed_steps)


def _tail_lines(tail: str, verbose: bool) -> Doc:
    lines = tail.splitlines()
    shown = lines if verbose else lines[-TAIL_LINES:]
    label = "stderr" + ("" if len(shown) == len(lines) else f" (last {len(shown)} lines; -v: all)")
    return [line((f"{label}:", "muted"), indent=2)] + [
        verbatim((t, "muted"), indent=4) for t in shown
    ]


def bench_lines(figures: tuple[Figure, ...]) -> Doc:
    """The bench as a table: device, operation, median rate, share of the spec peak, size."""
    if not figures:
        return []
    reps = "/".join(str(r) for r in sorted({f.repetitions for f in figures}))
    models = {f.gpu for f in figures if f.gpu}
    if len(models) > 1:
        models = {f"GPU {f.device}: {f.gpu}" for f in figures if f.gpu}
    peaks = f"; % of the spec peak of {', '.join(sorted(models))}" if models else ""
    doc: Doc = [line(("bench", "bold"), f" (median of {reps} runs{peaks})", indent=2)]
    name_width = max(len(f.name) for f in figures)
    shares = [_share(f) for f in figures]
    share_width = max(len(s) for s in shares)
    for fig, share in zip(figures, shares):
        row = f"GPU {fig.device}  {fig.name:<{name_width}} {fig.median:9.1f} {fig.unit:<7}"
        low = ("  low: well below the spec peak", "warning") if fig.low else ""
        size = (f"  [{fig.size}]", "muted") if fig.size else ""
        doc.append(verbatim(row, f"  {share:<{share_width}}", size, low, indent=4))
    return doc


def _share(fig: Figure) -> str:
    if fig.percent_of_peak is None or fig.peak is None:
        return ""
    return f"{fig.percent_of_peak:5.1f} % of {fig.peak:g}"


def _verdict(report: CheckReport) -> Line:
    code = report.exit_code
    if code == EXIT_OK:
        gpus = {(f.name, d.index) for f in report.frameworks for d in f.devices}
        return line(("passed", "ok"), f": every check passed on {len(gpus)} framework-GPU pair(s).")
    if code == EXIT_NO_GPU:
        return line(
            ("no GPU to check", "warning"),
            ": the frameworks import and report their builds (exit 3).",
        )
    failed = [f.name for f in report.frameworks if f.status == "failed"]
    what = ", ".join(failed) if failed else "nothing was checked"
    return line(("failed", "error"), f": {what} (exit {code}).")
