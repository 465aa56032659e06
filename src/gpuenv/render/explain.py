"""explain's report for a terminal: the cause and how sure, the lines that show it, the facts
read (the reporter's and this machine's), the doctor's findings on them, and the fix."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from gpuenv.explain.model import Candidate, Evidence, Explanation, Fact
from gpuenv.render.doctor import finding_lines
from gpuenv.render.layout import Doc, blank, command, heading, line, section
from gpuenv.render.terminal import Terminal, to_text

Where = Callable[[int], str]  # a line number of the text -> "file:line"


def explain_doc(explanation: Explanation, where: Where = lambda n: f"line {n}") -> Doc:
    doc: Doc = [line(("gpuenv explain", "heading"), f" ({_read(explanation)})"), blank()]
    if explanation.cause is None:
        doc += [line(("No cause found: ", "warning"), explanation.summary), blank()]
    else:
        percent = f"{explanation.confidence:.0%}"
        sure = (
            f" ({percent} sure{', a guess from the words' if explanation.basis == 'words' else ''})"
        )
        doc.append(line("cause: ", (explanation.cause, "error"), sure, indent=0))
        doc.append(line("       ", explanation.summary.split(": ", 1)[-1]))
        if explanation.alternatives:
            others = ", ".join(_alternative(c) for c in explanation.alternatives)
            doc.append(line("also possible: ", others))
        doc.append(blank())
    doc += section("Evidence", _evidence(explanation, where))
    doc += section("Facts", _facts(explanation, where))
    if explanation.findings:
        doc.append(heading("Doctor's findings on these facts"))
        for number, finding in enumerate(explanation.findings, start=1):
            doc += finding_lines(number, finding)
    doc += section("Fix", _fix(explanation))
    doc += section("Notes", [line("- ", n, indent=2) for n in explanation.notes])
    return doc


def _alternative(candidate: Candidate) -> str:
    if not candidate.of_known:
        return f"{candidate.cause} ({candidate.confidence:.0%})"
    return (
        f"{candidate.cause} ({candidate.confidence:.0%}: {candidate.known_reports} of "
        f"{candidate.of_known} known reports decided by the same message)"
    )


def _read(explanation: Explanation) -> str:
    found = ", ".join(explanation.reports)
    return f"{explanation.lines} line(s)" + (f"; pasted outputs: {found}" if found else "")


def _evidence(explanation: Explanation, where: Where) -> Doc:
    return [
        line(f"{where(e.line)}: ", e.text, (f"  [{_source(e)}]", "muted"), indent=2)
        for e in explanation.evidence[:12]
    ]


def _source(evidence: Evidence) -> str:
    return evidence.pattern + (f", rule {evidence.rule}" if evidence.rule else "")


def _facts(explanation: Explanation, where: Where) -> Doc:
    shown = [f for f in explanation.facts if f.name not in ("package",)][:40]
    width = max((len(f.name) for f in shown), default=0) + 2
    return [
        line(f"{f.name:<{width}}", f.value, (f"  {_origin(f, where)}", "muted"), indent=2)
        for f in shown
    ]


def _origin(fact: Fact, where: Where) -> str:
    if fact.origin == "local":
        return f"this machine ({fact.reader})"
    place = where(fact.line) if fact.line else "the text"
    return f"reporter, {place} ({fact.reader})"


def _fix(explanation: Explanation) -> Doc:
    fix = explanation.fix
    doc: Doc = []
    if fix is not None:
        doc.append(line(fix.summary, indent=2))
        doc += [command(c, indent=4) for c in fix.commands]
        doc += [line("note: ", n, indent=4) for n in fix.notes]
    said = {fix.summary, *fix.notes} if fix else set()
    doc += [line("hint: ", h, indent=2) for h in explanation.hints if h not in said]
    return doc


def render_text(
    explanation: Explanation, terminal: Terminal | None = None, where: Where | None = None
) -> str:
    return to_text(
        explain_doc(explanation, where or (lambda n: f"line {n}")), terminal or Terminal()
    )


def explain_document(explanation: Explanation, exit_code: int) -> dict[str, Any]:
    return {**explanation.to_dict(), "exit_code": exit_code}
