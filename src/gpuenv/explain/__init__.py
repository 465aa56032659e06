"""explain: from an error message or a pasted bug report to the cause and the fix. Pure: text,
knowledge base and (optionally) this machine's snapshot in; an Explanation out.

The text is made plain (gpuenv.explain.text), the knowledge base's patterns are found in it
(scan), the diagnostic outputs pasted in it are read into facts (reports), the facts become a
partial snapshot of the reporter's machine (snapshot) on which the doctor's rules run, the
causes are ranked (rank), a text without a known message gets a guess from its words
(lexicon), a message several causes share brings in the causes its known reports had
(outcomes), and the fix is made for those facts (fix)."""

from __future__ import annotations

from collections.abc import Sequence

from gpuenv.diagnose.findings import CAUSES
from gpuenv.explain.model import Candidate, Evidence, Explanation, Fact
from gpuenv.facts import Snapshot
from gpuenv.kb import KnowledgeBase

__all__ = [
    "CAUSES",
    "Candidate",
    "Evidence",
    "Explanation",
    "Fact",
    "explain_text",
    "pasted_snapshot",
]


def explain_text(
    text: str, kb: KnowledgeBase | None = None, snapshot: Snapshot | None = None
) -> Explanation:
    """Explain a failure text. `snapshot`, when given, is this machine's: it fills in what the
    text does not say (the text's facts describe the reporter's machine and win)."""
    from gpuenv.explain.engine import explain

    if kb is None:
        from gpuenv.kb import default_kb

        kb = default_kb()
    return explain(text, kb, snapshot)


def pasted_snapshot(text: str) -> tuple[Snapshot, Sequence[Fact]]:
    """The reporter's machine as far as a pasted text shows it (for `--from report.txt`)."""
    from gpuenv.explain.engine import read_facts
    from gpuenv.explain.snapshot import (
        apple_silicon_arch,
        assume_platform,
        infer_driver,
        infer_platform,
        to_snapshot,
    )
    from gpuenv.explain.text import prepare
    from gpuenv.kb import default_kb

    kb = default_kb()
    facts, _, _ = read_facts(prepare(text), kb)
    # pip's list of releases is the Python's platform (an x86-64 one under Rosetta on an M1),
    # so it outranks the Mac the prose names
    snapshot = apple_silicon_arch(infer_platform(to_snapshot(facts), facts, kb), facts)
    return infer_driver(assume_platform(snapshot), kb), facts
