"""Which cause the evidence points to: every recognised message votes for its cause with its
weight (or, where a rule of the knowledge base says the facts around it change what it means,
for the rule's cause), votes are combined as independent signs (1 - Π(1 - w)), the doctor's
findings on the reporter's facts vote too, and the causes are ranked by the result."""

from __future__ import annotations

import dataclasses
from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence

from gpuenv.diagnose.findings import Finding
from gpuenv.explain.model import Candidate
from gpuenv.explain.scan import Hit
from gpuenv.kb.patterns import Rule

FINDING_WEIGHT = {"error": 0.5, "warning": 0.25}
MIN_CONFIDENCE = 0.15  # causes below this are not shown as alternatives


def counting(
    hits: Iterable[Hit],
    facts: Mapping[str, set[str]],
    rules: Mapping[str, Sequence[Rule]],
) -> list[Hit]:
    """The hits that vote (a cause, and the pattern's conditions hold), each with the cause of
    the most specific rule whose conditions the facts meet, else its pattern's."""
    out = []
    for hit in hits:
        if not all(c.holds(facts) for c in hit.pattern.requires):
            continue
        rule = next((r for r in rules.get(hit.pattern.id, ()) if r.applies(facts)), None)
        if rule is not None:
            hit = dataclasses.replace(
                hit, cause=rule.cause, weight=rule.weight, rule=rule.id, rule_title=rule.title
            )
        if hit.cause:
            out.append(hit)
    return out


def one_per_line(hits: Iterable[Hit]) -> list[Hit]:
    """A line says one thing: of the hits on a line only the heaviest votes (one per cause
    where causes tie), so a specific pattern outvotes a general one on its own line and two
    patterns reading the same words do not count as two independent signs."""
    heaviest: dict[int, float] = {}
    hits = list(hits)
    for hit in hits:
        heaviest[hit.line] = max(heaviest.get(hit.line, 0.0), hit.weight)
    kept: dict[tuple[int, str | None], Hit] = {}
    for hit in hits:
        if hit.weight >= heaviest[hit.line]:
            kept.setdefault((hit.line, hit.cause), hit)
    return list(kept.values())


def rank(hits: Sequence[Hit], findings: Sequence[Finding]) -> list[Candidate]:
    weights: dict[str, dict[str, float]] = defaultdict(dict)
    behind: dict[str, list[str]] = defaultdict(list)
    for hit in one_per_line(hits):
        if hit.cause:
            votes = weights[hit.cause]
            # a rule re-reading several patterns is one sign, however many lines it covers
            key = hit.rule or hit.pattern.id
            votes[key] = max(votes.get(key, 0.0), hit.weight)
            if hit.pattern.id not in behind[hit.cause]:
                behind[hit.cause].append(hit.pattern.id)
    rules: dict[str, list[str]] = defaultdict(list)
    for finding in findings:
        weight = FINDING_WEIGHT.get(finding.severity)
        if weight is None or finding.cause == "other":
            continue
        weights[finding.cause].setdefault(f"finding:{finding.rule}", weight)
        rules[finding.cause].append(finding.rule)
    candidates = []
    for cause, votes in weights.items():
        miss = 1.0
        for weight in votes.values():
            miss *= 1.0 - min(max(weight, 0.0), 0.99)
        patterns = tuple(behind[cause])
        strongest = max(votes.values())
        candidates.append(
            (1.0 - miss, strongest, Candidate(cause, 1.0 - miss, patterns, tuple(rules[cause])))
        )
    candidates.sort(key=lambda c: (-c[0], -c[1], c[2].cause))
    return [c for _, _, c in candidates if c.confidence >= MIN_CONFIDENCE]
