"""The bench arithmetic (pure): medians, rates, and shares of the card's spec peak.

The scripts time each operation (CUDA events where the framework has them) and report seconds per
operation for each repetition; here the median becomes a rate (GB/s, TFLOP/s) and the rate a
percentage of the peak NVIDIA publishes for the card (`gpus.toml`: dense peaks, decimal units).
A device-to-device copy reads and writes each byte, so it moves twice its size and is compared
with the memory bandwidth; host-device copies have no peak in the knowledge base (it depends on
the PCIe link) and get none.
"""

from __future__ import annotations

import statistics
from collections.abc import Sequence

from gpuenv.check.model import Figure
from gpuenv.check.parse import BenchSample
from gpuenv.kb.loader import KnowledgeBase, Row
from gpuenv.kb.query.gpus import gpu_by_name, gpu_peak

# bench name -> the gpus.toml field of its peak
PEAK_FIELDS = {
    "copy device-device": "bandwidth_gbs",
    "matmul FP32": "fp32_tflops",
    "matmul TF32": "tf32_tflops",
    "matmul BF16": "bf16_tflops",
    "matmul FP16": "fp16_tflops",
}
UNITS = {"bytes": ("GB/s", 1e9), "flop": ("TFLOP/s", 1e12)}
# Below this share of the spec peak a figure is marked low: a card at a fraction of its speed
# (power or clock capped, throttling, a slow link) rather than ordinary inefficiency.
LOW_PERCENT = 40.0


def median(values: Sequence[float]) -> float:
    if not values:
        raise ValueError("median of no values")
    return float(statistics.median(values))


def rate(work: float, seconds: float, unit: str) -> float:
    """Work per second in the display unit (GB/s for bytes, TFLOP/s for flop)."""
    if seconds <= 0:
        raise ValueError(f"seconds must be above 0, not {seconds!r}")
    return work / seconds / UNITS[unit][1]


def percent_of(value: float, peak: float | None) -> float | None:
    if peak is None or peak <= 0:
        return None
    return 100.0 * value / peak


def spread(rates: Sequence[float]) -> float:
    """(fastest - slowest) / median: how much the repetitions disagree."""
    middle = median(rates)
    return (max(rates) - min(rates)) / middle if middle > 0 else 0.0


def figure(sample: BenchSample, row: Row | None) -> Figure:
    """A sample as a figure: the median of its repetitions' rates against `row`'s peak."""
    rates = [rate(sample.work, s, sample.unit) for s in sample.seconds]
    value = median(rates)
    field = PEAK_FIELDS.get(sample.name)
    peak = gpu_peak(row, field) if row is not None and field is not None else None
    percent = percent_of(value, peak)
    return Figure(
        name=sample.name,
        device=sample.device,
        unit=UNITS[sample.unit][0],
        median=value,
        repetitions=len(rates),
        spread=spread(rates),
        size=sample.size,
        peak=peak,
        peak_field=field if peak is not None else None,
        percent_of_peak=percent,
        gpu=str(row["name"]) if row is not None and peak is not None else None,
        low=percent is not None and percent < LOW_PERCENT,
    )


def peak_row(kb: KnowledgeBase, *names: str | None) -> Row | None:
    """The KB row of the first name that names exactly one GPU model."""
    for name in names:
        row = gpu_by_name(kb, name) if name else None
        if row is not None:
            return row
    return None
