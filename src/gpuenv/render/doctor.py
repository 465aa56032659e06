"""Doctor reports: terminal text (colour optional), Markdown for bug reports, JSON for programs."""

from __future__ import annotations

import re
from typing import Any

from gpuenv._version import __version__
from gpuenv.diagnose.findings import Diagnosis, Finding, Layer
from gpuenv.facts import Snapshot, to_dict
from gpuenv.render.jsontext import json_text
from gpuenv.render.layout import Doc, Line, blank, command, heading, line
from gpuenv.render.layout import printable as _p
from gpuenv.render.terminal import Terminal, to_text

DOCTOR_SCHEMA = "gpuenv-doctor/1"
MARKS = {"error": "✗", "warning": "!", "ok": "✓", "info": "i", "absent": "-", "unknown": "?"}
_STYLE = {"absent": "muted", "unknown": "muted"}


def doctor_doc(diagnosis: Diagnosis, snapshot: Snapshot, verbose: bool = False) -> Doc:
    """The doctor's report: the stack, then the findings, most important first."""
    doc: Doc = [line(("gpuenv doctor", "heading"), _origin(snapshot)), blank(), heading("Stack")]
    width = max((len(layer.name) for layer in diagnosis.layers), default=0) + 2
    for layer in diagnosis.layers:
        doc += _layer_lines(layer, width, verbose)
    doc.append(blank())
    if not diagnosis.findings:
        doc.append(line("No problems found."))
    for number, finding in enumerate(diagnosis.findings, start=1):
        doc += finding_lines(number, finding)
    errors = sum(f.severity == "error" for f in diagnosis.findings)
    warnings = sum(f.severity == "warning" for f in diagnosis.findings)
    doc.append(line(f"{errors} error(s), {warnings} warning(s)."))
    return doc


def _layer_lines(layer: Layer, width: int, verbose: bool) -> Doc:
    style = _STYLE.get(layer.verdict, layer.verdict)
    mark = f"{MARKS.get(layer.verdict, '?')} {layer.verdict:<7} "
    head = line((mark, style), f"{layer.name:<{width}}", layer.summary, indent=2)
    head = Line(head.spans, head.indent, len(mark) + width)
    shown = layer.details if verbose or layer.compact is None else layer.compact
    return [head, *(line(d, indent=2 + len(mark)) for d in shown)]


def _origin(snapshot: Snapshot) -> str:
    parts = []
    if snapshot.origin != "probed":
        parts.append(snapshot.origin)
    if snapshot.overrides:
        parts.append("what-if: " + " ".join(snapshot.overrides))
    return f" ({'; '.join(parts)})" if parts else ""


def finding_lines(number: int, finding: Finding) -> Doc:
    """One finding: its title with rule id and cause, why, evidence, the fix and its commands."""
    lead = f"{number}. "
    doc: Doc = [
        line(
            lead,
            (finding.severity.upper(), finding.severity),
            f" [{finding.rule} · {finding.cause}] ",
            (finding.title, "bold"),
            hang=len(lead),
        ),
        line("why: ", finding.why, indent=3),
    ]
    for ev in finding.evidence:
        doc.append(line("evidence: ", f"{ev.fact} = {ev.value}  ({ev.source})", indent=3))
    if finding.fix:
        doc.append(line("fix: ", finding.fix.summary, indent=3))
        doc += [command(c, indent=5) for c in finding.fix.commands]
        doc += [line("note: ", n, indent=5) for n in finding.fix.notes]
    doc += [line("source: ", c, indent=3) for c in finding.citations]
    doc.append(blank())
    return doc


def render_text(
    diagnosis: Diagnosis,
    snapshot: Snapshot,
    terminal: Terminal | None = None,
    verbose: bool = False,
) -> str:
    return to_text(doctor_doc(diagnosis, snapshot, verbose), terminal or Terminal())


def render_markdown(
    diagnosis: Diagnosis, snapshot: Snapshot, command_line: str | None = None
) -> str:
    """A report to paste into an issue: what made it, the stack as a table, the findings."""
    out = [
        f"### gpuenv doctor{_origin(snapshot)}",
        "",
        _made_by(snapshot, command_line),
        "",
        "| floor | verdict | what |",
        "|---|---|---|",
    ]
    for layer in diagnosis.layers:
        out.append(f"| {_cell(layer.name)} | {_cell(layer.verdict)} | {_cell(layer.summary)} |")
    out.append("")
    for finding in diagnosis.findings:
        out.append(f"- **{_p(finding.severity)}** `{_p(finding.cause)}`: {_p(finding.title)}")
        out.append(f"  - why: {_p(finding.why)}")
        for ev in finding.evidence:
            out.append(f"  - evidence: {_p(ev.fact)} = {_code(ev.value)} ({_p(ev.source)})")
        if finding.fix:
            out.append(f"  - fix: {_p(finding.fix.summary)}")
            if finding.fix.commands:
                out.append("    ```")
                out += [f"    {_p(c)}" for c in finding.fix.commands]
                out.append("    ```")
    if not diagnosis.findings:
        out.append("No problems found.")
    return "\n".join(out) + "\n"


def _made_by(snapshot: Snapshot, command_line: str | None) -> str:
    host = snapshot.host
    system = host.distro.value or host.os.value or "unknown OS"
    env = snapshot.python_env
    python = env.python_version if env and env.python_version else "unknown"
    parts = [
        f"gpuenv {snapshot.gpuenv_version or __version__}",
        f"{system} {host.arch.value or ''}".strip(),
        f"Python {python}",
    ]
    made = " · ".join(_p(part) for part in parts)
    return made + (f" · {_code(command_line)}" if command_line else "")


def _cell(text: str) -> str:
    return _p(text).replace("|", "\\|")


def _code(text: str) -> str:
    """Inline code that a backtick in the value cannot end early."""
    text = _p(text)
    fence = "`" * (max((len(run) for run in re.findall("`+", text)), default=0) + 1)
    pad = " " if text.startswith("`") or text.endswith("`") else ""
    return f"{fence}{pad}{text}{pad}{fence}"


def doctor_document(diagnosis: Diagnosis, snapshot: Snapshot, exit_code: int) -> dict[str, Any]:
    return {
        "schema": DOCTOR_SCHEMA,
        "exit_code": exit_code,
        **diagnosis.to_dict(),
        "snapshot": to_dict(snapshot),
    }


def render_json(diagnosis: Diagnosis, snapshot: Snapshot, exit_code: int) -> str:
    return json_text(doctor_document(diagnosis, snapshot, exit_code))
