"""The explain pipeline, step by step (see the package's docstring)."""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence

from gpuenv.diagnose.findings import Finding
from gpuenv.explain.derived import judged
from gpuenv.explain.fix import Case, cause_hints, make_fix
from gpuenv.explain.lexicon import Guess, guess
from gpuenv.explain.model import Candidate, Evidence, Explanation, Fact
from gpuenv.explain.needles import compile_needles, locate
from gpuenv.explain.outcomes import deciding, evidence_of, with_outcomes
from gpuenv.explain.rank import MIN_CONFIDENCE, counting, rank
from gpuenv.explain.reports import LANDMARKS, read_reports
from gpuenv.explain.scan import Hit, scan
from gpuenv.explain.snapshot import (
    assume_platform,
    fill_from,
    infer_driver,
    normalise,
    to_snapshot,
)
from gpuenv.explain.text import Text, prepare
from gpuenv.facts import Snapshot
from gpuenv.kb import KnowledgeBase
from gpuenv.kb.patterns import compiled, patterns

_RAW = 300
# messages whose cause is less sure than this are weak signs, which words that point clearly
# (a posterior of CLEAR_WORDS) to another cause outweigh; both chosen on the tune halves
# (docs/explain.md, "Words against a weak sign")
WEAK_MESSAGE = 0.5
CLEAR_WORDS = 0.8
_BELOW_GUESS = 0.01  # the outweighed messages' causes stay below the guess


def read_facts(text: Text, kb: KnowledgeBase) -> tuple[list[Fact], list[Hit], list[str]]:
    """The facts of a text (pasted outputs and what the patterns read), its pattern hits, and
    the kinds of output found."""
    compiled_patterns = patterns(kb)
    needles = compile_needles(tuple(n for p in compiled_patterns for n in p.needles) + LANDMARKS)
    located = locate(text.lower, needles)
    hits = scan(text, compiled_patterns, located)
    found, kinds = read_reports(text, located)
    # a pasted report's reader knows its own lines: a pattern reading the same fact on one of
    # them (a GPU named in a collect_env line) adds nothing
    reported = {(f.name, f.line) for f in found}
    for hit in hits:
        line, raw, reader = hit.line + 1, hit.text[:_RAW], f"pattern:{hit.pattern.id}"
        read = [*hit.groups, *hit.pattern.sets]
        found += [
            Fact(name, value, line, raw, reader)
            for name, value in read
            if (name, line) not in reported
        ]
    return normalise(found), hits, kinds


def explain(raw_text: str, kb: KnowledgeBase, local: Snapshot | None = None) -> Explanation:
    text = prepare(raw_text)
    facts, hits, kinds = read_facts(text, kb)
    pasted = to_snapshot(facts)
    snapshot = assume_platform(fill_from(pasted, local) if local is not None else pasted)
    snapshot = infer_driver(snapshot, kb)
    findings = _findings(snapshot, kb)
    values = fact_values(facts, snapshot)
    verdicts = judged(facts, snapshot, kb)
    for name, value in verdicts.items():
        values.setdefault(name, set()).add(value)
    counted = counting(hits, values, compiled(kb).rules)
    ranked = rank(counted, findings)
    decided = deciding(counted, ranked[0].cause) if ranked else None
    guessed = words_guess(text, ranked, kb)
    outweighed: tuple[str, ...] = ()  # the weak signs' causes a guess outweighed
    if guessed is not None:
        # the messages found (weak ones: words_guess) stay as alternatives below the guess
        below = max(guessed.confidence - _BELOW_GUESS, 0.0)
        messages = [
            dataclasses.replace(c, confidence=round(min(c.confidence, below), 3)) for c in ranked
        ]
        ranked = [Candidate(guessed.cause, guessed.confidence, ())]
        ranked += [Candidate(cause, share, ()) for cause, share in guessed.runners_up]
        named = {c.cause for c in ranked}
        ranked += [c for c in messages if c.cause not in named and c.confidence > 0]
        decided, outweighed = None, tuple(c.cause for c in messages)
    ranked = with_outcomes(ranked, evidence_of(decided), kb)
    top = ranked[0] if ranked else None
    all_facts = facts + (_local_facts(pasted, snapshot) if local is not None else [])
    case = Case(facts, snapshot, kb, frozenset(verdicts))
    fix = make_fix(top.cause, case, findings, counted) if top else None
    return Explanation(
        cause=top.cause if top else None,
        confidence=top.confidence if top else 0.0,
        summary=_summary(top, decided, findings, len(text.lines), guessed, outweighed),
        alternatives=tuple(ranked[1:]),
        evidence=_evidence(counted, top),
        facts=tuple(all_facts),
        findings=tuple(findings),
        fix=fix,
        hints=_hints(counted, top, kb),
        reports=tuple(kinds),
        lines=len(text.lines),
        notes=_notes(snapshot, local is not None),
        basis=("words" if guessed else "messages") if top else "",
        words=guessed.words if guessed else (),
        decided_by=evidence_of(decided),
    )


def words_guess(text: Text, ranked: Sequence[Candidate], kb: KnowledgeBase) -> Guess | None:
    """The guess from the words when no message was recognised, or when the messages found are
    weak signs only (their cause below WEAK_MESSAGE) and the words point clearly (a posterior of
    at least CLEAR_WORDS) to another cause; else None."""
    if ranked and ranked[0].confidence >= WEAK_MESSAGE:
        return None
    guessed = guess(text.lower, kb, MIN_CONFIDENCE)
    if guessed is None or not ranked:
        return guessed
    if guessed.cause == ranked[0].cause or guessed.share < CLEAR_WORDS:
        return None
    return guessed


def _findings(snapshot: Snapshot, kb: KnowledgeBase) -> list[Finding]:
    from gpuenv.diagnose import diagnose

    return [f for f in diagnose(snapshot, kb).findings if f.severity != "info"]


def fact_values(facts: Sequence[Fact], snapshot: Snapshot) -> dict[str, set[str]]:
    """The values of each fact (lower-case) that rules and conditions look at: those of the
    text, and the machine's (pasted or this one) where the snapshot knows them."""
    values: dict[str, set[str]] = {}
    for fact in facts:
        values.setdefault(fact.name, set()).add(fact.value.lower())
    host = snapshot.host
    for name in ("os", "arch", "container"):
        obs = getattr(host, name)
        if obs.value and obs.source != "assumed":
            values.setdefault(name, set()).add(str(obs.value).lower())
    if host.wsl.value:
        values.setdefault("wsl", set()).add("true")
    for gpu in snapshot.gpus:
        values.setdefault("gpu", set()).add((gpu.name or "?").lower())
    return values


def _hints(hits: Sequence[Hit], top: Candidate | None, kb: KnowledgeBase) -> tuple[str, ...]:
    return cause_hints(top.cause, hits, kb) if top is not None else ()


def _evidence(hits: Sequence[Hit], top: Candidate | None) -> tuple[Evidence, ...]:
    ordered = sorted(hits, key=lambda h: (not top or h.cause != top.cause, h.line))
    return tuple(
        Evidence(h.line + 1, h.text[:_RAW], h.pattern.id, h.cause, h.title, h.rule) for h in ordered
    )


def _summary(
    top: Candidate | None,
    hit: Hit | None,
    findings: Sequence[Finding],
    lines: int,
    guessed: Guess | None,
    outweighed: Sequence[str] = (),
) -> str:
    if top is None:
        return f"No known failure message found in the text ({lines} line(s))."
    if guessed is not None:
        words = f"the words of the text ({', '.join(guessed.words)})"
        if outweighed:
            signs = "the weak sign found" if len(outweighed) == 1 else "the weak signs found"
            return (
                f"{top.cause}: {words} are most like those of {top.cause} reports; they "
                f"outweigh {signs}, which alone would say {' or '.join(outweighed)}"
            )
        return (
            f"{top.cause}: no known failure message was found; {words} are most like those "
            f"of {top.cause} reports"
        )
    if hit is not None:
        return f"{top.cause}: {hit.title} (line {hit.line + 1})"
    finding = next(f for f in findings if f.cause == top.cause)
    return f"{top.cause}: {finding.title}"


def _local_facts(pasted: Snapshot, filled: Snapshot) -> list[Fact]:
    """The facts this machine supplied where the text was silent."""
    out = []
    host = filled.host
    for name in ("os", "arch", "distro"):
        mine, theirs = getattr(host, name), getattr(pasted.host, name)
        if theirs.value is None and mine.value is not None:
            out.append(Fact(name, str(mine.value), None, "", mine.source, "local"))
    if not pasted.driver.versions and filled.driver.versions:
        obs = filled.driver.versions[0]
        out.append(Fact("driver_version", str(obs.value), None, "", obs.source, "local"))
    if not pasted.gpus:
        out += [Fact("gpu", g.name or "?", None, "", g.source, "local") for g in filled.gpus]
    env, theirs_env = filled.python_env, pasted.python_env
    if env and env.python_version and not (theirs_env and theirs_env.python_version):
        out.append(Fact("python_version", env.python_version, None, "", env.interpreter, "local"))
    names = {f.name for f in theirs_env.frameworks} if theirs_env else set()
    for fw in env.frameworks if env else ():
        if (
            fw.name not in names
            and fw.name in ("torch", "tensorflow", "jax", "jaxlib")
            and fw.version
        ):
            out.append(Fact(f"{fw.name}_version", fw.version, None, "", fw.source, "local"))
    return out


def _notes(snapshot: Snapshot, probed: bool) -> tuple[str, ...]:
    notes = []
    for name in ("os", "arch"):
        obs = getattr(snapshot.host, name)
        if obs.source == "assumed" and obs.problem:
            notes.append(f"{name}: {obs.problem}")
    if probed:
        notes.append("Facts the text does not give were taken from this machine (origin: local).")
    return tuple(notes)
