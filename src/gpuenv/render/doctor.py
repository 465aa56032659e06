"""Doctor reports: terminal text (colour optional), Markdown for bug reports, JSON for programs."""

from __future__ import annotations

import json
import re
from typing import Any

from gpuenv.diagnose.findings import Diagnosis, Finding
from gpuenv.facts import Snapshot, to_dict
from gpuenv.render.snapshot_text import printable as _p

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
        out.append(f"  {mark} {_p(layer.name):<16} {_p(layer.summary)}")
        out += [f"              {_p(d)}" for d in layer.details]
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
    return f" ({_p('; '.join(parts))})" if parts else ""


def _finding_text(number: int, finding: Finding, style: _Style) -> list[str]:
    head = style.paint(_p(finding.severity.upper()), finding.severity)
    out = [
        f"{number}. {head} [{_p(finding.cause)}] {style.bold(_p(finding.title))}",
        f"   why: {_p(finding.why)}",
    ]
    for ev in finding.evidence:
        out.append(f"   evidence: {_p(ev.fact)} = {_p(ev.value)}  ({_p(ev.source)})")
    if finding.fix:
        out.append(f"   fix: {_p(finding.fix.summary)}")
        out += [f"     $ {_p(command)}" for command in finding.fix.commands]
        out += [f"     note: {_p(note)}" for note in finding.fix.notes]
    out += [f"   source: {_p(c)}" for c in finding.citations]
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
    return (
        json.dumps(doctor_document(diagnosis, snapshot, exit_code), indent=2, ensure_ascii=False)
        + "\n"
    )
