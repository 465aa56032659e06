"""How long planning takes once the knowledge base is loaded: a three-framework plan (torch,
TensorFlow, JAX) and a few single-framework ones, each on declared machines.

    python benchmarks/bench_plan.py              # the default set, 20 repetitions each
    python benchmarks/bench_plan.py --repeat 100

The knowledge base load is timed separately (it happens once per process). The target for a
three-framework plan is well under 100 ms.
"""

from __future__ import annotations

import argparse
import functools
import statistics
import time
from collections.abc import Callable

from gpuenv.kb import load_kb
from gpuenv.plan.request import request_from_arguments
from gpuenv.plan.resolve import make_plan
from gpuenv.whatif import WhatIf, declared_snapshot

CASES = (
    (
        "torch tensorflow jax, driver 570, RTX 4090",
        ("torch", "tensorflow", "jax"),
        "570.124.06",
        ("RTX 4090",),
        "3.11",
        "pip",
    ),
    (
        "torch torchvision, driver 535, RTX 3090",
        ("torch", "torchvision"),
        "535.183.01",
        ("RTX 3090",),
        "3.11",
        "pip",
    ),
    ("torch, driver 470, GTX 1080 Ti", ("torch",), "470.256.02", ("GTX 1080 Ti",), "3.10", "pip"),
    (
        "torch tensorflow cupy-cuda13x (split), driver 580",
        ("torch", "tensorflow", "cupy-cuda13x"),
        "580.65.06",
        ("RTX 4090",),
        "3.12",
        "pip",
    ),
    (
        "torch, conda, A100 + driver 535",
        ("torch",),
        "535.183.01",
        ("NVIDIA A100-SXM4-80GB",),
        "3.11",
        "conda",
    ),
)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=20)
    args = parser.parse_args()
    start = time.perf_counter()
    kb = load_kb()
    print(f"knowledge base loaded in {(time.perf_counter() - start) * 1000:.1f} ms")
    for label, wants, driver, gpus, python, installer in CASES:
        snapshot = declared_snapshot(WhatIf(driver=driver, gpus=gpus, python_version=python), kb)
        request = request_from_arguments(wants)
        run = functools.partial(make_plan, request, snapshot, kb, installer)
        first = _time(run)
        times = [_time(run) for _ in range(args.repeat)]
        print(
            f"{label:<46} first {first:7.1f} ms   median {statistics.median(times):6.1f} ms   "
            f"max {max(times):6.1f} ms"
        )


def _time(action: Callable[[], object]) -> float:
    start = time.perf_counter()
    action()
    return (time.perf_counter() - start) * 1000


if __name__ == "__main__":
    main()
