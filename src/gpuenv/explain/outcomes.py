"""What the training reports say about the message that decided a cause. Of the training cases
(the tune halves of the project's corpora, its training cases and the development split) on
which the same pattern or rule decided explain's answer, lexicon.toml's [[outcome]] table
(tallied by tools/train_lexicon.py) holds how many were labelled each cause. A message that
several causes share (pip's "No matching distribution found": a Python the release has no wheel
for, or a platform it has none for) brings those causes in as alternatives, each as sure as its
share of those reports: explain says what one message cannot tell apart instead of hiding it.

The tally is of cases the patterns were studied on, so it understates how often a message
misleads on unseen reports; it never changes the top cause, only what is named beside it."""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

from gpuenv.explain.model import Candidate
from gpuenv.explain.rank import one_per_line
from gpuenv.explain.scan import Hit
from gpuenv.kb import KnowledgeBase

MIN_SHARE = 0.15  # the least share of a message's reports a cause must have to be named
MIN_REPORTS = 2  # and the least reports (one labelled case is an anecdote)
_BELOW_TOP = 0.01  # an alternative is always less sure than the cause explain names


@dataclass(frozen=True)
class Outcome:
    cases: int  # training cases the pattern or rule decided
    causes: Mapping[str, int]  # how many of them were labelled each cause


def deciding(hits: Iterable[Hit], cause: str) -> Hit | None:
    """The heaviest line voting for `cause`, of the hits that vote (rank.one_per_line), the first
    such line on a tie; None when no line votes for it (a doctor's finding decided)."""
    best: Hit | None = None
    for hit in one_per_line(hits):
        if hit.cause == cause and (best is None or hit.weight > best.weight):
            best = hit
    return best


def evidence_of(hit: Hit | None) -> str:
    """The id the outcome table knows a deciding line by: the rule that re-read it, else its
    pattern; "" for no line."""
    return (hit.rule or hit.pattern.id) if hit is not None else ""


def load(kb: KnowledgeBase) -> Mapping[str, Outcome]:
    return kb.memo("explain.outcomes", lambda: _load(kb))


def _load(kb: KnowledgeBase) -> dict[str, Outcome]:
    if "lexicon" not in kb.files:
        return {}
    return {
        str(row["evidence"]): Outcome(
            int(row["cases"]), {str(c): int(n) for c, n in dict(row["causes"]).items()}
        )
        for row in kb.rows("lexicon", "outcome")
    }


def with_outcomes(ranked: Sequence[Candidate], evidence: str, kb: KnowledgeBase) -> list[Candidate]:
    """The ranked causes with, beside the top one, the other causes that the reports decided by
    the same evidence were labelled with, most likely first. A cause already ranked keeps its
    own evidence and takes the surer of its two confidences; on a tie the ranking's order
    stands (it breaks ties by the strongest sign) and added causes follow by name."""
    out = list(ranked)
    outcome = load(kb).get(evidence) if evidence and ranked else None
    if outcome is None or outcome.cases <= 0:
        return out
    top = out[0]
    ceiling = max(top.confidence - _BELOW_TOP, 0.0)
    known = {c.cause: n for n, c in enumerate(out)}
    for cause, reports in sorted(outcome.causes.items()):
        share = reports / outcome.cases
        if cause == top.cause or reports < MIN_REPORTS or share < MIN_SHARE:
            continue
        confidence = round(min(share, ceiling), 3)
        at = known.get(cause)
        if at is None:
            known[cause] = len(out)
            out.append(Candidate(cause, confidence, (evidence,), (), reports, outcome.cases))
        elif out[at].confidence < confidence:
            out[at] = dataclasses.replace(
                out[at], confidence=confidence, known_reports=reports, of_known=outcome.cases
            )
    return [top, *sorted(out[1:], key=lambda c: -c.confidence)]
