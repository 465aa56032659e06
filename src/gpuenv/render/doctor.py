"""Doctor reports: terminal text (colour optional), Markdown for bug reports, JSON for programs."""

from __future__ import annotations

import json
from typing import Any

from gpuenv.diagnose.findings import Diagnosis, Finding
from gpuenv.facts import Snapshot, to_dict

DOCTOR_SCHEMA = "gpuenv-doctor/1"
_COLOURS = {
    "error": "31",
    "warning": "33",
    "ok": "32",
    "info": "36",
    "absent": "90",
    "unknown": "90",
}
_MARKS = {"error": "✗", "warning": "!", "ok": "✓", "info": "i", "absent": "-", "unknown": "?"}


class _Style:
    def __init__(self, colour: bool) -> None:
        self.colour = colour

    def paint(self, word: str, kind: str) -> str:
        if not self.colour or kind not in _COLOURS:
            return word
        return f"\033[{_COLOURS[kind]}m{word}\033[0m"

    def bold(self, text: str) -> str:
        return f"\033[1m{text}\033[0m" if self.colour else text


def render_text(diagnosis: Diagnosis, snapshot: Snapshot, colour: bool = False) -> str:
    style = _Style(colour)
    out = [style.bold("gpuenv doctor") + _origin(snapshot), "", style.bold("Stack")]
    for layer in diagnosis.layers:
        mark = style.paint(f"{_MARKS.get(layer.verdict, '?')} {layer.verdict:<7}", layer.verdict)
        out.append(f"  {mark} {layer.name:<16} {layer.summary}")
        out += [f"              {d}" for d in layer.details]
    out.append("")
    if not diagnosis.findings:
        out.append("No problems found.")
    for number, finding in enumerate(diagnosis.findings, start=1):
        out += _finding_text(number, finding, style)
    errors = sum(f.severity == "error" for f in diagnosis.findings)
    warnings = sum(f.severity == "warning" for f in diagnosis.findings)
    out.append(f"{errors} error(s), {warnings} warning(s).")
    return "\n".join(out) + "\n"


def _origin(snapshot: Snapshot) -> str:
    parts = []
    if snapshot.origin != "probed":
        parts.append(snapshot.origin)
    if snapshot.overrides:
        parts.append("what-if: " + " ".join(snapshot.overrides))
    return f" ({'; '.join(parts)})" if parts else ""


def _finding_text(number: int, finding: Finding, style: _Style) -> list[str]:
    head = style.paint(finding.severity.upper(), finding.severity)
    out = [
        f"{number}. {head} [{finding.cause}] {style.bold(finding.title)}",
        f"   why: {finding.why}",
    ]
    for ev in finding.evidence:
        out.append(f"   evidence: {ev.fact} = {ev.value}  ({ev.source})")
    if finding.fix:
        out.append(f"   fix: {finding.fix.summary}")
        out += [f"     $ {command}" for command in finding.fix.commands]
        out += [f"     note: {note}" for note in finding.fix.notes]
    out += [f"   source: {c}" for c in finding.citations]
    out.append("")
    return out


def render_markdown(diagnosis: Diagnosis, snapshot: Snapshot) -> str:
    out = [
        f"### gpuenv doctor{_origin(snapshot)}",
        "",
        "| floor | verdict | what |",
        "|---|---|---|",
    ]
    for layer in diagnosis.layers:
        out.append(f"| {layer.name} | {layer.verdict} | {_cell(layer.summary)} |")
    out.append("")
    for finding in diagnosis.findings:
        out.append(f"- **{finding.severity}** `{finding.cause}`: {finding.title}")
        out.append(f"  - why: {finding.why}")
        for ev in finding.evidence:
            out.append(f"  - evidence: {ev.fact} = `{ev.value}` ({ev.source})")
        if finding.fix:
            out.append(f"  - fix: {finding.fix.summary}")
            if finding.fix.commands:
                out.append("    ```")
                out += [f"    {c}" for c in finding.fix.commands]
                out.append("    ```")
    if not diagnosis.findings:
        out.append("No problems found.")
    return "\n".join(out) + "\n"


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def doctor_document(diagnosis: Diagnosis, snapshot: Snapshot, exit_code: int) -> dict[str, Any]:
    return {
        "schema": DOCTOR_SCHEMA,
        "exit_code": exit_code,
        **diagnosis.to_dict(),
        "snapshot": to_dict(snapshot),
    }


def render_json(diagnosis: Diagnosis, snapshot: Snapshot, exit_code: int) -> str:
    return (
        json.dumps(doctor_document(diagnosis, snapshot, exit_code), indent=2, ensure_ascii=False)
        + "\n"
    )
