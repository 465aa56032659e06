"""Benchmark: `gpuenv snapshot` wall time against `python -m torch.utils.collect_env` on one env,
and the fatbin scan time of the largest shared library in that env.

    python benchmarks/bench_snapshot.py [--python PATH] [--runs N]

Without --python it creates a temporary venv with the CPU build of torch (`torch==2.13.0`).
Target (issue 2): the snapshot takes at most a tenth of collect_env's time.
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))

from gpuenv.probe.fatbin import scan_fatbin  # noqa: E402


def timed(argv: list[str], runs: int) -> list[float]:
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        subprocess.run(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=False)
        times.append(time.perf_counter() - start)
    return times


def make_env(folder: Path) -> Path:
    subprocess.run([sys.executable, "-m", "venv", str(folder)], check=True)
    python = folder / "bin" / "python"
    subprocess.run([str(python), "-m", "pip", "install", "-q", "torch==2.13.0"], check=True)
    return python


def largest_library(python: Path) -> Path | None:
    out = subprocess.run(
        [str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
        capture_output=True,
        text=True,
        check=True,
    )
    libs = list(Path(out.stdout.strip()).rglob("*.so*"))
    return max(libs, key=lambda p: p.stat().st_size) if libs else None


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--python", type=Path)
    parser.add_argument("--runs", type=int, default=5)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        python = args.python or make_env(Path(tmp) / "env")
        gpuenv = [sys.executable, "-m", "gpuenv", "snapshot", "--json", "--python", str(python)]
        collect = [str(python), "-m", "torch.utils.collect_env"]
        ours = timed(gpuenv, args.runs)
        theirs = timed(collect, args.runs)
        print(f"gpuenv snapshot     median {statistics.median(ours):.3f} s  (runs: {args.runs})")
        print(f"torch collect_env   median {statistics.median(theirs):.3f} s")
        ratio = statistics.median(ours) / statistics.median(theirs)
        print(f"ratio               {ratio:.2f} (target ≤ 0.10)")
        lib = largest_library(python)
        if lib:
            scan_fatbin(str(lib))
            start = time.perf_counter()
            scan = scan_fatbin(str(lib))
            elapsed = time.perf_counter() - start
            size = lib.stat().st_size / 1e6
            print(
                f"fatbin scan         {elapsed * 1000:.1f} ms for {lib.name} ({size:.0f} MB, "
                f"sass {len(scan.sass)}, ptx {len(scan.ptx)})"
            )
    return 0


if __name__ == "__main__":
    sys.exit(main())
