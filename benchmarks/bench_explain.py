"""How well and how fast `gpuenv explain` works: top-1 cause accuracy on the error corpora (the
error text alone, and with the user's context) and the share of cases whose cause it named first
or as its first alternative, the share of expected facts read from pasted reports (per cause or
kind), and the time and memory to explain a 10 MB log.

The project's corpora (corpus/) are each split into a tune half and a check half
(explain_corpus.half_of: within each cause or kind, rows ordered by the SHA-256 of their id go
alternately to each half). Patterns are studied on the tune halves only; the check halves
measure whether they generalise. Both halves and the whole of each are printed. The corpora:
error-cases.jsonl (the project corpus) and error-cases.fresh.jsonl (the fresh cases: threads
used nowhere else, collected before any pattern was tuned on them, so their check half is the
closest stand-in for a held-back split nobody here has seen), error-cases.fresh2.jsonl,
error-cases.fresh3.jsonl to error-cases.fresh36.jsonl (each collected blind alongside a round of
pattern work and measured blind before its tune half was studied; their check halves are never
tuned or trained on; the last blind figures are in their descriptions); the dev corpus
(../shared) is printed whole. error-cases.train.jsonl and error-cases.study.jsonl are never
measured on.

python benchmarks/bench_explain.py [CORPUS_DIR ...]
"""

from __future__ import annotations

import json
import sys
import time
import tracemalloc
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))
sys.path.insert(0, str(ROOT))

from benchmarks.explain_corpus import (  # noqa: E402
    HALVES,
    Score,
    cause_accuracy,
    fact_share,
    rows,
    split,
)

from gpuenv.explain import explain_text  # noqa: E402
from gpuenv.kb import KnowledgeBase, default_kb  # noqa: E402

DEFAULT = (ROOT.parent / "shared" / "corpus", ROOT / "corpus")
MIB = 1024 * 1024


CORPUS_NAMES = {
    "error-cases.jsonl": "the project corpus",
    "error-cases.fresh.jsonl": "the fresh cases (collected before tuning on them)",
    "error-cases.fresh2.jsonl": (
        "the second fresh cases (blind until 2026-11-24's second round; tune half studied since)"
    ),
    "error-cases.fresh3.jsonl": (
        "the third fresh cases (blind until 2026-11-24's third round; tune half studied since)"
    ),
    "error-cases.fresh4.jsonl": (
        "the fourth fresh cases (collected blind during the third round, measured blind at its "
        "end: 74.2% / 77.5%; tune half studied since)"
    ),
    "error-cases.fresh5.jsonl": (
        "the fifth fresh cases (collected blind during the fourth round, measured blind: "
        "68.3% / 75.8%; tune half studied since)"
    ),
    "error-cases.fresh6.jsonl": (
        "the sixth fresh cases (collected blind during the fifth round, measured blind at its "
        "end: 70.0% / 73.3%; tune half studied since)"
    ),
    "error-cases.fresh7.jsonl": (
        "the seventh fresh cases (collected blind during the sixth round, measured blind at its "
        "end: 67.5% / 78.3%; tune half studied since)"
    ),
    "error-cases.fresh8.jsonl": (
        "the eighth fresh cases (collected blind during the seventh round, measured blind at its "
        "end: 71.7% / 81.7%; tune half studied since)"
    ),
    "error-cases.fresh9.jsonl": (
        "the ninth fresh cases (collected blind during the eighth round, measured blind at its "
        "start: 70.0% / 71.7%; tune half studied since)"
    ),
    "error-cases.fresh10.jsonl": (
        "the tenth fresh cases (collected blind during the ninth round, measured blind: 60.0% / "
        "65.0% with the knowledge base of the round's start, 68.3% / 70.0% with its word guess "
        "retrained; tune half studied since)"
    ),
    "error-cases.fresh11.jsonl": (
        "the eleventh fresh cases (collected blind during the ninth round, measured blind at its "
        "end: 72.7% / 80.9%, 65.5% / 76.4% with the knowledge base of the round's start; tune "
        "half trained on since)"
    ),
    "error-cases.fresh12.jsonl": (
        "the twelfth fresh cases (collected blind during the tenth round, measured blind before "
        "anything was studied: 68.6% / 78.8% with the knowledge base of the round's start, 67.8% / "
        "78.0% with the round's; tune half trained on since)"
    ),
    "error-cases.fresh13.jsonl": (
        "the thirteenth fresh cases (collected blind during the eleventh round, measured blind "
        "before anything was studied: 65.7% / 71.6% with the knowledge base of the round's start, "
        "65.7% / 69.6% with the round's; tune half trained on since)"
    ),
    "error-cases.fresh14.jsonl": (
        "the fourteenth fresh cases (collected blind during the thirteenth round, measured blind "
        "before anything was studied: 70.6% / 78.4% with the knowledge base of the round's start, "
        "73.5% / 80.4% with its word pairs; tune half trained on since)"
    ),
    "error-cases.fresh15.jsonl": (
        "the fifteenth fresh cases (collected blind during the fourteenth round, measured blind "
        "before anything was studied: 68.3% / 79.4% with the knowledge base of the round's start, "
        "69.8% / 79.4% with the round's patterns until then; tune half studied since)"
    ),
    "error-cases.fresh16.jsonl": (
        "the sixteenth fresh cases (collected blind during the fifteenth round from smaller "
        "trackers, measured blind before anything was studied: 68.2% / 74.1% with the knowledge "
        "base of the round's start and with the round's rules until then; tune half studied since)"
    ),
    "error-cases.fresh17.jsonl": (
        "the seventeenth fresh cases (collected blind late in the fifteenth round from smaller "
        "trackers, measured blind before anything was studied: 64.8% / 78.4% with the knowledge "
        "base of the round's start, 64.8% / 75.0% with the round's until then, 64.8% / 76.1% "
        "after one regression it showed was mended; tune half studied since, not trained on)"
    ),
    "error-cases.fresh18.jsonl": (
        "the eighteenth fresh cases (collected blind at the start of the sixteenth round from "
        "less-mined application trackers, measured blind before anything was studied: 78.4% / "
        "83.8% with the knowledge base of the round's start and with the round's until then; "
        "tune half studied and trained on since)"
    ),
    "error-cases.fresh19.jsonl": (
        "the nineteenth fresh cases (collected blind at the start of the seventeenth round from "
        "less-mined scientific and application trackers, measured blind before anything was "
        "studied: 67.1% / 75.3% with the knowledge base of the round's start and with the "
        "round's until then; tune half studied and trained on since)"
    ),
    "error-cases.fresh20.jsonl": (
        "the twentieth fresh cases (collected blind at the start of the eighteenth round from "
        "less-mined research and application trackers, measured blind before anything was "
        "studied: 72.2% / 81.0% with the knowledge base of the round's start and with the "
        "round's until then; tune half studied and trained on since)"
    ),
    "error-cases.fresh21.jsonl": (
        "the twenty-first fresh cases (collected blind at the start of the nineteenth round from "
        "graphics, cluster, robotics and 3D trackers, measured blind before anything was "
        "studied: 67.4% / 78.7% with the knowledge base of the session's start; tune half "
        "studied since, not trained on)"
    ),
    "error-cases.fresh22.jsonl": (
        "the twenty-second fresh cases (collected blind in the middle of the nineteenth round "
        "from trackers never mined before, measured blind before anything was studied: 73.2% / "
        "76.8% with the knowledge base of the session's start, 73.2% / 75.6% with the round's "
        "until then; tune half studied since, not trained on)"
    ),
    "error-cases.fresh23.jsonl": (
        "the twenty-third fresh cases (collected blind late in the nineteenth round, mostly "
        "through non-English queries and trackers never mined, measured blind before anything "
        "was studied: 71.1% / 80.3% with the knowledge base of the session's start and with the "
        "round's until then; tune half studied since, not trained on)"
    ),
    "error-cases.fresh24.jsonl": (
        "the twenty-fourth fresh cases (collected blind at the end of the nineteenth round from "
        "older and niche trackers, measured blind before anything was studied: 71.1% / 83.1% "
        "with the knowledge base of the session's start and with the round's until then; tune "
        "half studied since, not trained on)"
    ),
    "error-cases.fresh25.jsonl": (
        "the twenty-fifth fresh cases (45, collected blind at the end of the nineteenth round "
        "until the search budget ran out, measured blind before anything was studied: 66.7% / "
        "73.3% with the knowledge base of the session's start and with the round's until then; "
        "tune half studied since, not trained on)"
    ),
    "error-cases.fresh26.jsonl": (
        "the twenty-sixth fresh cases (collected blind at the start of the twentieth round: "
        "everyday threads of little-used application trackers, measured blind before anything "
        "was studied: 82.9% / 85.5%; tune half studied since, not trained on)"
    ),
    "error-cases.fresh27.jsonl": (
        "the twenty-seventh fresh cases (collected blind at the start of the twentieth round: "
        "threads of 2025 and 2026, measured blind before anything was studied: 82.5% / 80.7%; "
        "tune half studied since, not trained on)"
    ),
    "error-cases.fresh28.jsonl": (
        "the twenty-eighth fresh cases (collected blind in the twentieth round from the "
        "trackers of popular libraries, measured blind before anything was studied: 71.4% / "
        "81.0% with the knowledge base of the session's start and with the round's until then; "
        "tune half studied since, not trained on)"
    ),
    "error-cases.fresh29.jsonl": (
        "the twenty-ninth fresh cases (collected blind at the start of the twenty-first round: "
        "desktop users on Windows, WSL, macOS and Jetson, measured blind before anything was "
        "studied: 63.2% / 77.9%; tune half studied since, not trained on)"
    ),
    "error-cases.fresh30.jsonl": (
        "the thirtieth fresh cases (collected blind at the start of the twenty-first round: "
        "reports in Chinese, Japanese or Korean, measured blind before anything was studied: "
        "77.6% / 78.9%; tune half studied since, not trained on)"
    ),
    "error-cases.fresh31.jsonl": (
        "the thirty-first fresh cases (collected blind in the twenty-first round from shared "
        "machines: clusters, clouds, notebooks, containers; measured blind before anything was "
        "studied: 76.2% / 85.7% with the knowledge base of the session's start and with the "
        "round's until then; tune half studied since, not trained on)"
    ),
    "error-cases.fresh32.jsonl": (
        "the thirty-second fresh cases (collected blind late in the twenty-first round: threads "
        "of 2017 to 2020, measured blind before anything was studied: 80.3% / 85.2% with the "
        "knowledge base of the session's start and with the round's until then; tune half "
        "studied since, not trained on)"
    ),
    "error-cases.fresh33.jsonl": (
        "the thirty-third fresh cases (collected blind at the start of the twenty-second round: "
        "GPU stacks used from languages other than Python, measured blind before anything was "
        "studied: 49.3% / 60.0%; tune half studied since, not trained on)"
    ),
    "error-cases.fresh34.jsonl": (
        "the thirty-fourth fresh cases (collected blind at the start of the twenty-second round: "
        "package managers, images and build systems, measured blind before anything was "
        "studied: 76.8% / 82.1%; tune half studied since, not trained on)"
    ),
    "error-cases.fresh35.jsonl": (
        "the thirty-fifth fresh cases (collected blind in the twenty-second round: threads of "
        "2026 on the newest releases, measured blind before anything was studied: 73.5% / 77.6% "
        "with the knowledge base of the session's start and with the round's until then; tune "
        "half studied since, not trained on)"
    ),
    "error-cases.fresh36.jsonl": (
        "the thirty-sixth fresh cases (collected blind late in the twenty-second round: reports "
        "with pasted diagnostic output, measured blind before anything was studied: 81.8% / "
        "81.8% with the knowledge base of the session's start and with the round's until then; "
        "tune half studied since, not trained on)"
    ),
    "error-cases.dev.jsonl": "the dev corpus",
}


def _cases(path: Path, kb: KnowledgeBase) -> None:
    cases = rows(path)
    if path.name == "error-cases.train.jsonl":
        print(
            f"-- {path.name}: {len(cases)} training cases (the word guess learns them: no measure)"
        )
        return
    if path.name == "error-cases.study.jsonl":
        print(f"-- {path.name}: {len(cases)} cases studied for message families: no measure")
        return
    print(f"-- {path.name}: {CORPUS_NAMES.get(path.name, 'error cases')}")
    parts = split(cases, "cause") if path.parent == ROOT / "corpus" else {"all": cases}
    scores = {}
    for name, part in parts.items():
        alone = cause_accuracy(part, kb, with_context=False)
        context = cause_accuracy(part, kb, with_context=True)
        scores[name] = (alone, context)
        print(
            f"{path.name} [{name}]: {len(part)} cases, top-1 {alone.share:.1%} (error text "
            f"alone), {context.share:.1%} (with context); first or second "
            f"{alone.top_two:.1%} / {context.top_two:.1%}"
        )
    _per_cause(scores)


def _per_cause(scores: dict[str, tuple[Score, Score]]) -> None:
    names = [h for h in (*HALVES, "all") if h in scores]
    causes = sorted(scores[names[-1]][1].by_cause)
    print(f"    {'cause (alone/context/cases)':<30}" + "".join(f"{n:>16}" for n in names))
    for cause in causes:
        cells = []
        for name in names:
            alone, context = scores[name]
            right_alone = alone.by_cause[cause]["right"]
            right, total = context.by_cause[cause]["right"], context.by_cause[cause]["total"]
            cells.append(f"{right_alone:>4}/{right:>3}/{total:<3}")
        print(f"    {cause:<30}" + "".join(f"{c:>16}" for c in cells))


def _pastes(path: Path, kb: KnowledgeBase) -> None:
    reports = rows(path)
    parts = split(reports, "kind") if path.parent == ROOT / "corpus" else {"all": reports}
    for name, part in parts.items():
        score = fact_share(part, kb)
        print(
            f"{path.name} [{name}]: {score.right}/{score.total} expected facts ({score.share:.1%})"
        )
        if name == "all":
            for kind, counts in sorted(score.by_cause.items()):
                print(f"    {kind:<28} {counts['right']:>4}/{counts['total']:<4}")
            for miss in score.wrong[:20]:
                print(f"    missed: {miss}")


def main(folders: list[Path]) -> None:
    kb = default_kb()
    for folder in folders:
        for path in sorted(folder.glob("error-cases*.jsonl")):
            _cases(path, kb)
        for path in sorted(folder.glob("pasted-reports*.jsonl")):
            _pastes(path, kb)
    _ten_megabytes(kb)


def _ten_megabytes(kb: KnowledgeBase) -> None:
    """A training log (one error line at the end of 10 MB of progress lines, each its own step),
    the same with one progress line over and over, one with an error message every hundred
    progress lines, a log that is nothing but the corpus's error messages over and over (every
    pattern's words on every page), and the same with each line numbered, so that no line
    repeats (the worst case for the needle search: every distinct line is searched)."""
    noise = "2024-01-01 12:00:00 INFO step 1234 loss=0.1234 lr=3e-4 throughput=1234.5 it/s\n"
    tail = "RuntimeError: CUDA error: no kernel image is available for execution on the device\n"
    steps = "".join(
        f"2024-01-01 12:00:00 INFO step {n} loss={1 / (n + 1):.6f} lr=3e-4 it/s={n % 97}\n"
        for n in range(10 * MIB // 70)
    )
    logs = {
        "training log": steps[: 10 * MIB] + tail,
        "one progress line repeated": noise * (10 * MIB // len(noise)) + tail,
    }
    corpus = ROOT / "corpus" / "error-cases.jsonl"
    if corpus.is_file():
        errors = "".join(json.loads(line)["error_text"] + "\n" for line in corpus.open())
        messages = errors.split("\n")
        every = noise * 100  # an error message every hundred progress lines
        logs["error every 100 lines"] = "".join(
            every + messages[n % len(messages)] + "\n" for n in range(10 * MIB // len(every))
        )
        logs["errors only"] = (errors * (10 * MIB // len(errors) + 1))[: 10 * MIB]
        numbered = "".join(f"{n} {line}\n" for n, line in enumerate(messages * 100))
        logs["errors only, no line repeated"] = numbered[: 10 * MIB]
    explain_text(noise, kb)  # warm: the knowledge base and the patterns compiled
    for name, text in logs.items():
        best = min(_timed(text, kb) for _ in range(3))
        tracemalloc.start()
        explanation = explain_text(text, kb)
        peak = tracemalloc.get_traced_memory()[1]
        tracemalloc.stop()
        print(
            f"10 MB {name}: {best:.2f} s (best of 3), peak {peak / MIB:.0f} MiB traced "
            f"above the text, cause {explanation.cause}"
        )


def _timed(text: str, kb: KnowledgeBase) -> float:
    started = time.perf_counter()
    explain_text(text, kb)
    return time.perf_counter() - started


if __name__ == "__main__":
    main([Path(a) for a in sys.argv[1:]] or [f for f in DEFAULT if f.is_dir()])
