"""What explain returns: the facts read from a text, the cause it points to, and the fix."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import Any

from gpuenv.diagnose.findings import Finding, Fix

EXPLAIN_SCHEMA = "gpuenv-explain/1"


@dataclass(frozen=True)
class Fact:
    """One fact read from the text (or, marked so, from this machine)."""

    name: str  # a name of gpuenv.kb.facts_vocabulary.FACTS
    value: str
    line: int | None  # 1-based line of the text; None for facts of this machine
    raw: str  # the line it was read from (cut), or the probe that answered
    reader: str  # "collect_env", "nvidia-smi", "pattern:torch-driver-too-old", "probe" ...
    origin: str = "pasted"  # "pasted" (the reporter's machine) | "local" (this machine)
    details: tuple[tuple[str, str], ...] = ()  # a GPU's memory, compute capability …

    def detail(self, key: str) -> str | None:
        return next((v for k, v in self.details if k == key), None)


@dataclass(frozen=True)
class Evidence:
    """A line of the text that points to a cause."""

    line: int  # 1-based
    text: str
    pattern: str  # the pattern id
    cause: str | None  # the cause it votes for
    title: str
    rule: str | None = None  # the rule of the knowledge base that gave that cause, if one did


@dataclass(frozen=True)
class Candidate:
    cause: str
    confidence: float  # 0-1
    patterns: tuple[str, ...]  # ids of the patterns behind it
    findings: tuple[str, ...] = ()  # rule ids of doctor findings behind it
    # training reports decided by the same message that had this cause, of how many
    # (gpuenv.explain.outcomes); 0 and 0 when the tally did not name it
    known_reports: int = 0
    of_known: int = 0


@dataclass(frozen=True)
class Explanation:
    """The cause of a failure read from a text, how sure, why, and what to do."""

    cause: str | None  # the top-ranked cause (one of CAUSES), None when nothing was recognised
    confidence: float
    summary: str  # one line
    alternatives: tuple[Candidate, ...] = ()  # the other causes, most likely first
    evidence: tuple[Evidence, ...] = ()
    facts: tuple[Fact, ...] = ()
    findings: tuple[Finding, ...] = ()  # the doctor's rules on the facts
    fix: Fix | None = None
    hints: tuple[str, ...] = ()
    reports: tuple[str, ...] = ()  # the diagnostic outputs found in the text: "collect_env" …
    lines: int = 0  # lines in the text
    notes: tuple[str, ...] = field(default_factory=tuple)
    # "messages": recognised messages (and the doctor's findings) point to the cause; "words":
    # none was found and the cause is a guess from the text's words (gpuenv.explain.lexicon);
    # "" when there is no cause
    basis: str = ""
    words: tuple[str, ...] = ()  # the words a guess rests on
    decided_by: str = ""  # the pattern or rule whose line decided the cause ("" for a guess)

    @property
    def found(self) -> bool:
        return self.cause is not None

    def to_dict(self) -> dict[str, Any]:
        """The --json document (docs/explain.schema.json)."""
        return {
            "schema": EXPLAIN_SCHEMA,
            "cause": self.cause,
            "confidence": round(self.confidence, 3),
            "summary": self.summary,
            "alternatives": [_plain(c) for c in self.alternatives],
            "evidence": [_plain(e) for e in self.evidence],
            "facts": [_fact(f) for f in self.facts],
            "findings": [_plain(f) for f in self.findings],
            "fix": _plain(self.fix) if self.fix else None,
            "hints": list(self.hints),
            "reports": list(self.reports),
            "lines": self.lines,
            "notes": list(self.notes),
            "basis": self.basis,
            "words": list(self.words),
            "decided_by": self.decided_by,
        }


def _fact(fact: Fact) -> dict[str, Any]:
    out: dict[str, Any] = _plain(fact)
    out["details"] = dict(fact.details)
    return out


def _plain(value: Any) -> Any:
    data = dataclasses.asdict(value)
    for key, item in list(data.items()):
        if isinstance(item, tuple):
            data[key] = list(item)
        if key == "confidence" and isinstance(item, float):
            data[key] = round(item, 3)
    return data
