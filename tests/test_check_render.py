"""`gpuenv check` reports: the terminal table at several widths and the --json document against
its published schema (docs/check.schema.json). Inputs: the synthetic fixtures (shaped like the
script's output, written by hand)."""

from __future__ import annotations

import json
from pathlib import Path

import jsonschema
import pytest

from gpuenv.check.model import CheckReport, DriverGpu, FrameworkResult
from gpuenv.render.check import check_doc, check_document, render_text
from gpuenv.render.terminal import Terminal
from tests.test_check_results import FIXTURE_NAMES, driver_gpus, judged, load

SCHEMA = json.loads(
    (Path(__file__).resolve().parents[1] / "docs" / "check.schema.json").read_text("utf-8")
)


def report_of(*names: str) -> CheckReport:
    results: list[FrameworkResult] = []
    gpus: tuple[DriverGpu, ...] = ()
    for name in names:
        fixture = load(name)
        results.append(judged(fixture))
        gpus = gpus or driver_gpus(fixture)
    return CheckReport("/envs/train/bin/python", "3.11.9", gpus, tuple(results), bench=True)


@pytest.mark.parametrize("name", FIXTURE_NAMES)
def test_the_json_document_follows_the_schema(name: str) -> None:
    document = check_document(report_of(name))
    jsonschema.validate(document, SCHEMA)
    assert json.loads(json.dumps(document)) == document  # plain JSON all the way down


def test_the_schema_rejects_an_unknown_status() -> None:
    document = check_document(report_of("cupy-name-disagrees"))
    document["frameworks"][0]["steps"][0]["status"] = "maybe"
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate(document, SCHEMA)


def test_the_bench_table_shows_rates_and_shares_of_the_peak() -> None:
    text = render_text(report_of("torch-2xh100-bench"))
    lines = text.splitlines()
    assert lines[0] == "gpuenv check  /envs/train/bin/python (Python 3.11.9)"
    assert (
        lines[1] == "driver's GPUs: 0: NVIDIA H100 80GB HBM3 (9.0); 1: NVIDIA H100 80GB HBM3 (9.0)"
    )
    assert lines[3] == "torch 2.6.0+cu124 (CUDA 12.4, cuDNN 90100) — passed · 12.5 s"
    assert "  bench (median of 10 runs; % of the spec peak of NVIDIA H100 80GB HBM3)" in lines
    [copy] = [ln for ln in lines if "GPU 0  copy device-device" in ln]
    assert (
        " ".join(copy.split()) == "GPU 0 copy device-device 2751.5 GB/s 82.1 % of 3350 [1024 MiB]"
    )
    [low] = [ln for ln in lines if "GPU 1  matmul BF16" in ln and "TFLOP/s" in ln]
    assert "low: well below the spec peak" in low
    assert "  ✓ pass  GPU 0  allocate" in text
    assert lines[-1].startswith("passed: every check passed")


def test_failures_show_their_error_and_explanation_lines() -> None:
    text = render_text(report_of("jax-crash-mid-run", "tensorflow-a100-cudnn-fails"))
    assert "jax 0.4.38 (CUDA 12) — failed (crashed)" in text
    assert "✗ fail  GPU 0  matmul FP32" in text and "crashed (SIGABRT, aborted)" in text
    assert "CUDA_ERROR_INVALID_PTX" in text
    assert "✗ fail  GPU 0  conv2d (cuDNN)" in text and "CUDNN_STATUS_INTERNAL_ERROR" in text
    assert text.rstrip().endswith("failed: jax, tensorflow (exit 1).")


def test_a_cpu_build_on_a_gpu_machine_names_its_cause() -> None:
    text = render_text(report_of("torch-cpu-build-beside-rtx3090"))
    assert "torch 2.6.0+cpu (CPU-only build) — failed" in text
    assert "cause: cpu_only_build" in text


@pytest.mark.parametrize("width", [60, 80, 120])
def test_prose_wraps_at_the_width_and_table_rows_stay_whole(width: int) -> None:
    report = report_of("torch-2xh100-bench", "onnxruntime-cuda-ep-falls-back")
    text = render_text(report, Terminal(width=width))
    for line in text.splitlines():
        if "GB/s" in line or "TFLOP/s" in line or line.startswith("    "):
            continue  # bench rows and error excerpts are verbatim: never split
        assert len(line) <= width, line
    assert "\033[" not in text
    coloured = render_text(report, Terminal(width=width, colour=True))
    assert "\033[" in coloured


def test_hostile_text_from_a_child_is_escaped() -> None:
    fixture = load("cupy-name-disagrees")
    fixture["run"]["document"]["devices"][0]["name"] = "RTX\x1b]0;pwned\x07 4090"
    result = judged(fixture)
    doc = check_doc(CheckReport("/p", "3.11", (), (result,)))
    text = "".join(ln.text for ln in doc)
    assert "\x1b" not in text and "\\x1b" in text


def test_verbose_shows_whole_errors() -> None:
    report = report_of("tensorflow-a100-cudnn-fails")
    short, full = render_text(report), render_text(report, verbose=True)
    assert "Traceback (most recent" not in short and "Traceback (most recent" in full


def test_explains_cause_and_fix_are_shown_under_the_failed_step() -> None:
    from gpuenv.check.explain_adapter import explainer

    fixture = load("onnxruntime-cuda-ep-falls-back")
    result = judged(fixture, explain=explainer(None))
    text = render_text(CheckReport("/p", "3.11", driver_gpus(fixture), (result,)))
    assert "explain: missing_cuda_lib — A CUDA library could not be loaded\n" in text
    assert "fix: The library of that CUDA major is not on the loader's path" in text
