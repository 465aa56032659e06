"""From a check script's output to a verdict: parsing (defensive), gpuenv's own judgements (does
the framework see the GPUs the driver lists, do name and compute capability agree), explanations,
exit codes. Inputs are the synthetic fixtures in tests/fixtures/check (shaped like the script's
output, written by hand) and hostile variations of them."""

from __future__ import annotations

import json
import sys
import types
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from gpuenv.check.judge import Context, identity, judge, machine_has_gpu, no_explanation
from gpuenv.check.model import (
    CheckReport,
    Device,
    DriverGpu,
    Explained,
    FrameworkResult,
    exit_code,
)
from gpuenv.check.parse import MARKER, RawRun, find_document, read_run
from gpuenv.errors import EXIT_FINDINGS, EXIT_NO_GPU, EXIT_OK
from gpuenv.kb import default_kb
from tests.conftest import FIXTURES

CHECK = FIXTURES / "check"
# synthetic ones at the top, recorded ones (tools/check_on_gpu.sh) under recorded/<machine>/
FIXTURE_NAMES = sorted(
    p.relative_to(CHECK).with_suffix("").as_posix() for p in CHECK.rglob("*.json")
)


def load(name: str) -> dict[str, Any]:
    fixture: dict[str, Any] = json.loads((CHECK / f"{name}.json").read_text(encoding="utf-8"))
    return fixture


def raw_run(fixture: dict[str, Any], **changes: Any) -> RawRun:
    run = fixture["run"]
    stdout = json.dumps(run["document"]) + "\n" if run["document"] is not None else ""
    arguments: dict[str, Any] = {
        "stdout": stdout,
        "stderr": run["stderr"],
        "returncode": run["returncode"],
        "seconds": 12.5,
        "timeout": 60.0,
    }
    arguments.update(changes)
    return read_run(fixture["framework"], **arguments)


def driver_gpus(fixture: dict[str, Any]) -> tuple[DriverGpu, ...]:
    return tuple(
        DriverGpu(g["index"], g["name"], g["compute_capability"]) for g in fixture["driver_gpus"]
    )


def judged(
    fixture: dict[str, Any], explain: Any = no_explanation, **changes: Any
) -> FrameworkResult:
    raw = raw_run(fixture, **changes)
    gpus = driver_gpus(fixture)
    context = Context(gpus, machine_has_gpu(gpus, [raw]), default_kb(), explain)
    return judge(raw, context)


def steps_of(result: FrameworkResult, status: str) -> list[list[Any]]:
    return [[s.device, s.name] for s in result.steps if s.status == status]


def test_a_run_that_hangs_after_its_result_says_so() -> None:
    """The checks finished (NCCL, CUDA torn down at exit can hang), the process did not end."""
    doc = {"check_version": 1, "steps": [{"step": "import", "status": "pass"}]}
    raw = read_run(
        "torch", stdout=json.dumps(doc), stderr="", returncode=None, timed_out=True, timeout=9.0
    )
    assert (raw.outcome, raw.report.complete) == ("timed_out", True)
    assert raw.error == (
        "printed its result, then did not exit within 9 s (a hang on the way out); killed"
    )


@pytest.mark.parametrize("name", FIXTURE_NAMES)
def test_every_fixture_says_where_it_comes_from_and_gets_its_expected_verdict(name: str) -> None:
    fixture = load(name)
    recorded = name.startswith("recorded/")
    prefix = "recorded: " if recorded else "synthetic: shaped like the script's output"
    assert fixture["provenance"].startswith(prefix)
    result = judged(fixture)
    expected = fixture["expected"]
    assert result.status == expected["status"]
    assert exit_code((result,)) == expected["exit_code"]
    assert result.outcome == expected.get("outcome", "finished")
    for device, step in expected.get("failed_steps", []):
        assert [device, step] in steps_of(result, "fail")
    for device, step in expected.get("passed_steps", []):
        assert [device, step] in steps_of(result, "pass")
    assert [s.cause for s in result.failed_steps if s.cause] == expected.get("causes", [])
    assert [[f.device, f.name] for f in result.bench if f.low] == expected.get("low", [])


def test_two_h100s_with_the_bench_against_the_spec_peaks() -> None:
    result = judged(load("torch-2xh100-bench"))
    names = [(s.device, s.name) for s in result.steps]
    # framework-wide steps, then whether it sees the GPUs, then each GPU, then peers and NCCL
    assert names[:4] == [
        (None, "import"),
        (None, "import torchvision"),
        (None, "torchvision nms (CPU)"),
        (None, "sees the GPUs"),
    ]
    assert names[4] == (0, "matches the driver")
    assert names.index((1, "matches the driver")) > names.index((0, "torch.compile (Triton)"))
    assert names[-2:] == [(None, "peer copies"), (None, "NCCL all-reduce")]
    sees = result.steps[3]
    assert sees.detail == "2 GPU(s): NVIDIA H100 80GB HBM3"
    figures = {(f.device, f.name): f for f in result.bench}
    copy = figures[(0, "copy device-device")]
    assert copy.unit == "GB/s" and copy.peak == 3350.0 and copy.peak_field == "bandwidth_gbs"
    assert copy.median == pytest.approx(2750, rel=0.01)
    assert copy.percent_of_peak == pytest.approx(82.1, abs=1.0)
    assert copy.gpu == "NVIDIA H100 80GB HBM3" and copy.repetitions == 10
    bf16 = figures[(0, "matmul BF16")]
    assert bf16.unit == "TFLOP/s" and bf16.peak == 989.5
    assert bf16.percent_of_peak == pytest.approx(70.7, abs=1.0) and not bf16.low
    assert figures[(1, "matmul BF16")].low  # 300 of 989.5: a card at a fraction of its speed
    pinned = figures[(0, "copy host-device (pinned)")]
    assert pinned.median == pytest.approx(55, rel=0.01)
    assert pinned.peak is None and pinned.percent_of_peak is None  # no PCIe peak in the KB


def test_a_crash_is_rebuilt_from_the_markers_and_blames_the_running_step() -> None:
    result = judged(load("jax-crash-mid-run"))
    assert result.error == "crashed (SIGABRT, aborted) during step 'matmul FP32' on GPU 0"
    assert result.build.version == "0.4.38" and result.build.framework_cuda == "12"
    assert [d.name for d in result.devices] == ["NVIDIA GeForce RTX 4090"]
    [failed] = result.failed_steps
    assert failed.detail == result.error
    assert failed.error is not None and "CUDA_ERROR_INVALID_PTX" in failed.error
    assert result.stderr_tail is not None and MARKER not in result.stderr_tail
    assert "gpuenv-check" not in result.stderr_tail


def test_a_hang_in_the_import_is_a_failed_import_after_the_timeout() -> None:
    stderr = f"\n{MARKER}" + json.dumps({"event": "start", "body": {"step": "import"}}) + "\n"
    raw = read_run(
        "tensorflow", stdout="", stderr=stderr, returncode=None, timed_out=True, timeout=5.0
    )
    assert raw.outcome == "timed_out"
    assert raw.error == "did not finish within 5 s during step 'import'; killed"
    gpus = (DriverGpu(0, "NVIDIA L4", "8.9"),)
    result = judge(raw, Context(gpus, True, default_kb(), no_explanation))
    assert [(s.name, s.status) for s in result.steps] == [("import", "fail")]
    assert result.status == "failed"


@pytest.mark.parametrize(
    ("stdout", "why"),
    [
        ("", "printed no result"),
        ("hello from a sitecustomize\n", "printed no check document: 'hello from a sitecustomize'"),
        ('{"check_version": 1, "steps": [', "printed a document that cannot be read"),
        ('{"check_version": 2}', "printed a check document of version 2, not 1"),
        ('{"check_version"' + "[" * 100000, "printed a document that cannot be read"),
        (  # a document larger than what the process gateway keeps: its middle was cut out
            '{"check_version": 1, "steps": ['
            + '{"step": "x"},' * 1000
            + "\n[gpuenv: 123456 bytes of output cut here]\n"
            + '{"step": "y"}], "bench": []}',
            "printed a document that cannot be read",
        ),
    ],
)
def test_garbled_output_is_that_frameworks_failure(stdout: str, why: str) -> None:
    raw = read_run("torch", stdout=stdout, stderr="", returncode=0)
    assert raw.outcome == "garbled" and raw.error is not None and raw.error.startswith(why)
    result = judge(raw, Context((), False, default_kb(), no_explanation))
    assert result.status == "failed"


def test_a_banner_before_the_document_is_tolerated_and_wrong_types_are_dropped() -> None:
    doc = {
        "check_version": 1,
        "build": {"version": 2.1, "gpu_build": "yes", "details": {"a": "b", "n": 3}},
        "devices": [{"index": "0"}, {"index": 0, "name": "X", "cc": "8.6", "memory_free": -5}],
        "steps": [
            {"step": "import", "status": "pass", "seconds": float("inf")},
            {"step": "odd", "status": "maybe"},
            {"step": "x" * 1000, "status": "fail", "detail": "d" * 10000, "device": True},
            "not a step",
        ],
        "bench": [
            {"name": "matmul FP32", "device": 0, "unit": "flop", "work": 1e12, "seconds": [0]},
            {
                "name": "matmul FP32",
                "device": 0,
                "unit": "flop",
                "work": 1e12,
                "seconds": [0.5, "x", -1],
            },
        ],
        "problems": "not a list",
    }
    stdout = "Welcome banner\n" + json.dumps(doc, allow_nan=True)
    report = read_run("torch", stdout=stdout, stderr="", returncode=0).report
    assert report.build.version is None and report.build.gpu_build is None
    assert dict(report.build.details) == {"a": "b"}
    assert report.devices == (Device(0, "X", "8.6", None, None),)
    assert [s.name for s in report.steps] == ["import", "x" * 120 + "…"]
    assert report.steps[0].seconds is None
    assert report.steps[1].device is None and report.steps[1].detail is not None
    assert len(report.steps[1].detail) == 501
    [sample] = report.bench
    assert sample.seconds == (0.5,)
    assert report.problems == ()


def test_a_document_with_a_failing_exit_status_still_counts_with_a_problem() -> None:
    fixture = load("cupy-name-disagrees")
    raw = raw_run(fixture, returncode=1)
    assert raw.outcome == "finished"
    assert raw.report.problems == ("the check script exited with 1",)


@settings(max_examples=200)
@given(
    stdout=st.text(max_size=300) | st.just('{"check_version": 1, "devices": [{"index": 0}]'),
    stderr=st.text(max_size=300).map(lambda t: t.replace("@", MARKER)),
    returncode=st.none() | st.integers(-64, 255),
)
def test_reading_any_output_never_raises(stdout: str, stderr: str, returncode: int | None) -> None:
    """Rule: whatever a child prints, reading and judging it gives a result, never an error."""
    raw = read_run("jax", stdout=stdout, stderr=stderr, returncode=returncode)
    result = judge(raw, Context((), False, default_kb(), no_explanation))
    assert result.status in ("passed", "failed", "no_gpu")


def test_find_document_takes_the_first_document_only() -> None:
    doc, _ = find_document('{"check_version": 1, "a": 1}\n{"check_version": 1, "a": 2}')
    assert doc == {"check_version": 1, "a": 1}


# -- gpuenv's own judgements --------------------------------------------------------------------


def test_a_cpu_build_beside_a_gpu_fails_with_its_cause_and_without_a_gpu_is_no_gpu() -> None:
    fixture = load("torch-cpu-build-beside-rtx3090")
    [sees] = [s for s in judged(fixture).steps if s.name == "sees the GPUs"]
    assert sees.status == "fail" and sees.cause == "cpu_only_build"
    assert sees.detail is not None and "Torch not compiled with CUDA enabled" in sees.detail
    alone = judged({**fixture, "driver_gpus": []})
    assert alone.status == "no_gpu" and exit_code((alone,)) == EXIT_NO_GPU
    [sees] = [s for s in alone.steps if s.name == "sees the GPUs"]
    assert (sees.status, sees.detail) == ("skip", "no GPU on this machine")


def test_a_gpu_another_framework_saw_counts_even_when_the_driver_list_is_empty() -> None:
    cpu = raw_run(load("torch-cpu-build-beside-rtx3090"))
    cupy = raw_run(load("cupy-name-disagrees"))
    assert machine_has_gpu((), [cpu, cupy]) and not machine_has_gpu((), [cpu])
    result = judge(cpu, Context((), True, default_kb(), no_explanation))
    assert result.status == "failed"


def test_identity_against_the_drivers_list() -> None:
    kb = default_kb()
    h100 = Device(0, "NVIDIA H100 80GB HBM3", "9.0")
    listed = (
        DriverGpu(0, "NVIDIA A100-SXM4-80GB", "8.0"),
        DriverGpu(1, "NVIDIA H100 80GB HBM3", "9.0"),
    )
    assert identity(h100, listed, kb).status == "pass"  # matched whatever the index order
    old_driver = (DriverGpu(0, "GeForce RTX 3090", None),)  # older drivers: no NVIDIA, no CC
    assert identity(Device(0, "NVIDIA GeForce RTX 3090", "8.6"), old_driver, kb).status == "pass"
    wrong_cc = identity(Device(0, "NVIDIA GeForce RTX 3090", "7.5"), old_driver, kb)
    assert wrong_cc.status == "fail" and "GeForce RTX 3090 (8.6)" in (wrong_cc.detail or "")
    mig = Device(0, "NVIDIA A100-SXM4-80GB MIG 1g.10gb", "8.0")
    assert identity(mig, listed, kb).status == "pass"
    assert identity(h100, (), kb).status == "skip"
    assert identity(Device(0, None, None), listed, kb).status == "skip"


def test_a_device_option_beyond_what_the_framework_sees_fails() -> None:
    raw = raw_run(load("cupy-name-disagrees"))
    gpus = (DriverGpu(0, "NVIDIA GeForce RTX 4090", "8.9"),)
    result = judge(raw, Context(gpus, True, default_kb(), no_explanation, device=3))
    [sees] = [s for s in result.steps if s.name == "sees the GPUs"]
    assert sees.status == "fail" and sees.detail == "GPU 3 (--device) is not visible: it sees 1"


def test_exit_codes() -> None:
    passed = judged(load("torch-2xh100-bench"))
    failed = judged(load("cupy-name-disagrees"))
    no_gpu = judged({**load("torch-cpu-build-beside-rtx3090"), "driver_gpus": []})
    assert exit_code((passed,)) == EXIT_OK
    assert exit_code((passed, no_gpu)) == EXIT_OK
    assert exit_code((no_gpu, no_gpu)) == EXIT_NO_GPU
    assert exit_code((passed, failed, no_gpu)) == EXIT_FINDINGS
    assert exit_code(()) == EXIT_FINDINGS  # nothing checked is not a pass
    report = CheckReport("/x/python", "3.11", (), (no_gpu,))
    assert (report.exit_code, report.verdict) == (EXIT_NO_GPU, "no_gpu")


# -- explanations through the adapter -------------------------------------------------------------


class FakeExplanation:
    def __init__(self, cause: str, summary: str) -> None:
        self.cause, self.summary = cause, summary

    def to_dict(self) -> dict[str, Any]:
        return {"cause": self.cause, "summary": self.summary, "findings": []}


@pytest.fixture()
def fake_explain(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """A stand-in `gpuenv.explain` (the real one is another engineer's work, not yet on main)."""
    seen: list[str] = []

    def explain_text(text: str, kb: Any = None, snapshot: Any = None) -> FakeExplanation | None:
        seen.append(text)
        if "libcudnn.so.9" in text:
            return FakeExplanation("missing_cuda_lib", "cuDNN 9 is not where the loader looks")
        if "CUDA_ERROR_INVALID_PTX" in text:
            return FakeExplanation("gpu_arch_unsupported", "no kernel for this GPU")
        return None

    module = types.ModuleType("gpuenv.explain")
    module.explain_text = explain_text  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "gpuenv.explain", module)
    import importlib.util

    monkeypatch.setattr(importlib.util, "find_spec", lambda name: object())
    return seen


def test_error_texts_go_through_explain_when_it_is_there(fake_explain: list[str]) -> None:
    from gpuenv.check.explain_adapter import explainer

    result = judged(load("onnxruntime-cuda-ep-falls-back"), explain=explainer(None))
    [failed] = result.failed_steps
    assert failed.cause == "missing_cuda_lib"
    assert failed.explanation == Explained(
        "missing_cuda_lib",
        "cuDNN 9 is not where the loader looks",
        {
            "cause": "missing_cuda_lib",
            "summary": "cuDNN 9 is not where the loader looks",
            "findings": [],
        },
    )
    crash = judged(load("jax-crash-mid-run"), explain=explainer(None))
    assert [s.cause for s in crash.failed_steps] == ["gpu_arch_unsupported"]


def test_the_real_explain_names_the_causes_of_the_fixtures_errors() -> None:
    """gpuenv.explain (now on main) through the adapter: a cuDNN that cannot start (most often
    no GPU memory left for its handle), a CUDA library the execution provider cannot load; a text
    it does not know gives no explanation."""
    from gpuenv.check.explain_adapter import explain_error, explainer

    tf = judged(load("tensorflow-a100-cudnn-fails"), explain=explainer(None))
    assert [s.cause for s in tf.failed_steps] == ["out_of_memory"]
    ort = judged(load("onnxruntime-cuda-ep-falls-back"), explain=explainer(None))
    [failed] = ort.failed_steps
    assert failed.cause == "missing_cuda_lib" and failed.explanation is not None
    assert failed.explanation.detail["schema"].startswith("gpuenv-explain/")
    assert explain_error("hello world") is None


def test_without_explain_the_adapter_answers_none(monkeypatch: pytest.MonkeyPatch) -> None:
    from gpuenv.check import explain_adapter

    monkeypatch.setattr(explain_adapter, "MODULE", "gpuenv.no_such_module_here")
    assert explain_adapter.explain_error("libcudnn.so.9: cannot open shared object file") is None


def test_an_explain_that_fails_does_not_fail_the_check(monkeypatch: pytest.MonkeyPatch) -> None:
    from gpuenv.check import explain_adapter

    module = types.ModuleType("gpuenv.explain")

    def explode(text: str, kb: Any = None, snapshot: Any = None) -> None:
        raise RuntimeError("a bug in explain")

    module.explain_text = explode  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "gpuenv.explain", module)
    import importlib.util

    monkeypatch.setattr(importlib.util, "find_spec", lambda name: object())
    assert explain_adapter.explain_error("libcudnn.so.9") is None
