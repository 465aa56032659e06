"""Benchmark: loading the knowledge base (target: < 10 ms from the compiled copy), from that copy
and from the TOML sources, each in a fresh process so nothing is cached in memory.

    python benchmarks/bench_kb.py [--runs N]
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys

CODE = {
    "compiled copy": "from gpuenv.kb.compiled import load_compiled as f",
    "TOML sources + validation": "from gpuenv.kb.loader import load_kb as f",
}
TIMER = "; import time; t = time.perf_counter(); kb = f(); print(time.perf_counter() - t)"


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=7)
    args = parser.parse_args()
    for label, code in CODE.items():
        times = [
            float(
                subprocess.run(
                    [sys.executable, "-c", code + TIMER], capture_output=True, text=True, check=True
                ).stdout
            )
            for _ in range(args.runs)
        ]
        print(
            f"{label:<28} median {1000 * statistics.median(times):6.1f} ms  "
            f"(min {1000 * min(times):.1f}, runs {args.runs})"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
