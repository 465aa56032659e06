"""How well and how fast `gpuenv explain` works: top-1 cause accuracy on the error corpora (the
error text alone, and with the user's context), the share of expected facts read from pasted
reports (per file and per cause or kind), and the time to explain a 10 MB log.

python benchmarks/bench_explain.py [CORPUS_DIR ...]
"""

from __future__ import annotations

import sys
import time
import tracemalloc
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))
sys.path.insert(0, str(ROOT))

from benchmarks.explain_corpus import Score, cause_accuracy, fact_share, rows  # noqa: E402

from gpuenv.explain import explain_text  # noqa: E402
from gpuenv.kb import default_kb  # noqa: E402

DEFAULT = (ROOT.parent / "shared" / "corpus", ROOT / "corpus")


def _table(score: Score) -> None:
    for name, counts in sorted(score.by_cause.items()):
        print(f"    {name:<28} {counts['right']:>4}/{counts['total']:<4}")


def main(folders: list[Path]) -> None:
    kb = default_kb()
    for folder in folders:
        for path in sorted(folder.glob("error-cases*.jsonl")):
            cases = rows(path)
            alone = cause_accuracy(cases, kb, with_context=False)
            context = cause_accuracy(cases, kb, with_context=True)
            print(
                f"{path}: {len(cases)} cases, top-1 {alone.share:.1%} (error text alone), "
                f"{context.share:.1%} (with context)"
            )
            _table(context)
        for path in sorted(folder.glob("pasted-reports*.jsonl")):
            score = fact_share(rows(path), kb)
            print(f"{path}: {score.right}/{score.total} expected facts read ({score.share:.1%})")
            _table(score)
            for miss in score.wrong[:20]:
                print(f"    missed: {miss}")
    _ten_megabytes(kb)


def _ten_megabytes(kb: object) -> None:
    noise = "2024-01-01 12:00:00 INFO step 1234 loss=0.1234 lr=3e-4 throughput=1234.5 it/s\n"
    tail = "RuntimeError: CUDA error: no kernel image is available for execution on the device\n"
    text = noise * (10 * 1024 * 1024 // len(noise)) + tail
    explain_text(text[:1000], kb)  # warm: the knowledge base and the patterns compiled
    tracemalloc.start()
    started = time.perf_counter()
    explanation = explain_text(text, kb)  # type: ignore[arg-type]
    took = time.perf_counter() - started
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    print(f"10 MB log: {took:.2f} s, peak {peak / 2**20:.0f} MiB traced, cause {explanation.cause}")


if __name__ == "__main__":
    main([Path(a) for a in sys.argv[1:]] or [f for f in DEFAULT if f.is_dir()])
