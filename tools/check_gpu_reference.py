"""A hand-written torch timing loop, independent of gpuenv's check code, to compare its bench with.

    python tools/check_gpu_reference.py [--device N] > reference.json

Times, on one GPU, with CUDA events after warm-up (median of 10 repetitions of 10 operations):
a device-to-device copy of 1 GiB (counted as bytes read plus bytes written), and 8192 x 8192
matrix products in FP32 (TF32 off) and BF16. Prints one JSON document: {"device", "name",
"torch", "figures": {"copy device-device": GB/s, "matmul FP32": TFLOP/s, "matmul BF16": ...}}.
Exit 3 when torch sees no GPU. Sizes shrink when the GPU has less free memory than they need.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
from collections.abc import Callable
from typing import Any


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--device", type=int, default=0)
    args = parser.parse_args()
    import torch

    if not torch.cuda.is_available() or args.device >= torch.cuda.device_count():
        print(json.dumps({"error": "torch sees no such CUDA GPU", "torch": torch.__version__}))
        return 3
    dev = torch.device("cuda", args.device)
    torch.cuda.set_device(dev)
    free = torch.cuda.mem_get_info(dev)[0]
    torch.backends.cuda.matmul.allow_tf32 = False
    figures = {"copy device-device": copy_rate(torch, dev, min(1 << 30, free // 8))}
    for name, dtype in (("matmul FP32", torch.float32), ("matmul BF16", torch.bfloat16)):
        figures[name] = matmul_rate(torch, dev, dtype, free)
    document = {
        "device": args.device,
        "name": torch.cuda.get_device_name(dev),
        "torch": torch.__version__,
        "method": "CUDA events; 3 warm-up runs, then the median of 10 repetitions of 10 operations",
        "figures": figures,
    }
    print(json.dumps(document, indent=2))
    return 0


def copy_rate(torch: Any, dev: Any, size: int) -> float:
    """GB/s of a device-to-device copy of `size` bytes, counting bytes read and written."""
    a = torch.empty(size, dtype=torch.uint8, device=dev)
    b = torch.empty_like(a)
    return 2 * size / median_seconds(lambda: b.copy_(a)) / 1e9


def matmul_rate(torch: Any, dev: Any, dtype: Any, free: int) -> float:
    """TFLOP/s of an n x n matrix product, n = 8192 or less where memory is short."""
    n = 8192
    while 3 * n * n * dtype.itemsize > free // 4 and n > 256:
        n //= 2
    x = torch.randn(n, n, device=dev, dtype=dtype)
    y = torch.randn(n, n, device=dev, dtype=dtype)
    out = torch.empty(n, n, device=dev, dtype=dtype)
    return 2 * n**3 / median_seconds(lambda: torch.mm(x, y, out=out)) / 1e12


def median_seconds(
    run: Callable[[], object], warmup: int = 3, repetitions: int = 10, inner: int = 10
) -> float:
    import torch

    for _ in range(warmup):
        run()
    torch.cuda.synchronize()
    times = []
    for _ in range(repetitions):
        start = torch.cuda.Event(enable_timing=True)
        end = torch.cuda.Event(enable_timing=True)
        start.record()
        for _ in range(inner):
            run()
        end.record()
        end.synchronize()
        times.append(start.elapsed_time(end) / 1000.0 / inner)
    return statistics.median(times)


if __name__ == "__main__":
    sys.exit(main())
