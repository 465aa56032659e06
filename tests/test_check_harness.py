"""The stdlib harness the check scripts share, imported as a module: its pure helpers (bench
sizes that scale with free memory, tolerances, data types by compute capability) and how a step
records pass, fail, skip and exceptions. No process is started here."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from gpuenv.check import _harness as h

GIB = 1024**3


@pytest.mark.parametrize(
    ("cc", "feature", "has"),
    [
        ((7, 5), "tf32", False),
        ((8, 0), "tf32", True),
        ((8, 6), "bf16", True),
        ((7, 0), "bf16", False),
        ((6, 1), "fp16", True),
        ((5, 2), "fp16", False),
        ((6, 1), "tensor_fp16", False),
        ((7, 0), "tensor_fp16", True),
        ((12, 0), "bf16", True),
    ],
)
def test_data_types_follow_the_compute_capability(
    cc: tuple[int, int], feature: str, has: bool
) -> None:
    assert h.has_feature(cc, feature) is has


def test_matmul_size_on_an_80_gib_card_is_the_cap_and_on_a_small_one_fits() -> None:
    assert h.matmul_size(80 * GIB, 4) == 8192
    assert h.matmul_size(512 * 1024**2, 4) == 3328  # 3 * 3328**2 * 4 bytes = 127 MiB < 128 MiB
    assert h.matmul_size(2 * 1024**2, 4) == 0  # not even 256 x 256 fits in a quarter
    assert h.matmul_size(None, 2) == 0


@given(free=st.integers(min_value=0, max_value=200 * GIB), element=st.sampled_from([2, 4]))
def test_matmul_size_never_exhausts_the_free_memory(free: int, element: int) -> None:
    """Rule: three n x n matrices take at most a quarter of the free memory, n is a multiple of
    256 between 256 and 8192, or 0 (skipped)."""
    n = h.matmul_size(free, element)
    assert n == 0 or (256 <= n <= 8192 and n % 256 == 0)
    assert 3 * n * n * element <= free * 0.25


@given(smaller=st.integers(0, 100 * GIB), extra=st.integers(0, 100 * GIB))
def test_more_free_memory_never_gives_a_smaller_bench(smaller: int, extra: int) -> None:
    assert h.matmul_size(smaller + extra, 4) >= h.matmul_size(smaller, 4)
    assert h.copy_size(smaller + extra) >= h.copy_size(smaller)


@given(free=st.integers(min_value=0, max_value=200 * GIB), buffers=st.integers(1, 3))
def test_copy_buffers_fit_in_a_quarter_of_the_free_memory(free: int, buffers: int) -> None:
    size = h.copy_size(free, buffers=buffers)
    assert size == 0 or (h.MIB <= size <= 1024 * h.MIB and size % h.MIB == 0)
    assert buffers * size <= free * 0.25


@pytest.mark.parametrize(
    ("seconds", "inner"), [(0.1, 1), (0.02, 1), (0.001, 20), (1e-6, 200), (0.0, 200)]
)
def test_inner_iterations_make_a_repetition_last_about_20_ms(seconds: float, inner: int) -> None:
    assert h.inner_iterations(seconds) == inner


def test_within_states_the_tolerance_and_fails_beyond_it_and_on_nan() -> None:
    assert h.within(3e-7, "fp32") == "max error 3e-07 (tolerance 0.0001)"
    with pytest.raises(h.Failed, match=r"wrong result: max error 0.0002 \(tolerance 0.0001\)"):
        h.within(2e-4, "fp32")
    with pytest.raises(h.Failed):
        h.within(float("nan"), "bf16")


def test_pure_python_references() -> None:
    a, b = [1.0, 2.0, 3.0, 4.0], [5.0, 6.0, 7.0, 8.0]
    assert h.matmul_lists(a, b, 2) == [19.0, 22.0, 43.0, 50.0]
    assert h.max_error_lists([19.0, 22.5], [19.0, 22.0]) == pytest.approx(0.5 / 22.0)
    values = h.seeded_values(1000, seed=7)
    assert values == h.seeded_values(1000, seed=7) and all(-1.0 <= v < 1.0 for v in values)
    assert len(set(values)) > 990


def _harness(**options: Any) -> h.Harness:
    return h.Harness("torch", options)


def test_a_step_records_pass_fail_skip_and_an_exception_with_its_traceback(
    capfd: pytest.CaptureFixture[str],
) -> None:
    harness = _harness()

    def broken() -> None:
        raise ImportError("libcudnn.so.9: cannot open shared object file")

    def wrong() -> None:
        h.within(1.0, "fp32")

    def not_here() -> None:
        raise h.Skip("compute capability 7.5 has no BF16")

    assert harness.step("fine", lambda: "42 ok", 0) is True
    assert harness.step("import", broken) is False
    assert harness.step("matmul", wrong, 1) is False
    assert harness.step("bf16", not_here, 1) is False
    assert harness.step("exit", lambda: exit(3)) is False  # SystemExit is a failure, not the end
    fine, imported, matmul, bf16, gone = harness.doc["steps"]
    assert fine["status"] == "pass" and fine["detail"] == "42 ok" and fine["device"] == 0
    assert imported["status"] == "fail"
    assert imported["detail"] == "ImportError: libcudnn.so.9: cannot open shared object file"
    assert "Traceback" in imported["error"] and "in broken" in imported["error"]
    assert matmul["status"] == "fail" and matmul["detail"].startswith("wrong result: max error 1")
    assert bf16 == {**bf16, "status": "skip", "detail": "compute capability 7.5 has no BF16"}
    assert gone["status"] == "fail" and gone["detail"].startswith("SystemExit")
    assert all(isinstance(s["seconds"], float) for s in harness.doc["steps"])
    markers = [
        json.loads(line[len(h.MARKER) :])
        for line in capfd.readouterr().err.split("\n")  # not splitlines: \x1e splits there
        if line.startswith(h.MARKER)
    ]
    assert [m["event"] for m in markers] == ["start", "step"] * 5
    assert markers[2]["body"] == {"step": "import", "device": None}


def test_selected_devices_follow_the_device_option() -> None:
    assert _harness().selected(3) == [0, 1, 2]
    assert _harness(device=1).selected(3) == [1]
    assert _harness(device=5).selected(3) == []


def test_measure_warms_up_then_times_repetitions_of_enough_operations() -> None:
    calls: list[int] = []

    def timed(_op: object, count: int) -> float:
        calls.append(count)
        return 0.001

    seconds = _harness().measure(timed, lambda: None)
    assert calls == [1] * h.WARMUP + [20] * h.REPETITIONS
    assert seconds == [0.001] * h.REPETITIONS


def test_measure_repeats_less_when_the_budget_is_nearly_spent() -> None:
    seconds = _harness(budget=0.5).measure(lambda _op, _n: 0.1, lambda: None)
    assert len(seconds) == 3


def test_the_harness_knows_every_framework_script() -> None:
    from importlib import resources

    folder = resources.files("gpuenv.check")
    for name in h.SCRIPTS:
        text = folder.joinpath(f"_{name}.py").read_text(encoding="utf-8")
        assert text.startswith(f"# gpuenv-check-script: {name}.")
        assert "\ndef run(h):" in text


def test_device_cc_reads_what_was_recorded_for_the_device() -> None:
    harness = _harness()
    harness.add_device(0, "NVIDIA GeForce RTX 3090", (8, 6))
    harness.add_device(1, None, None)
    assert harness.device_cc(0) == (8, 6)
    assert harness.device_cc(1) == (0, 0)  # unknown: no data-type check runs
    assert harness.device_cc(7) == (0, 0)


def test_an_exception_outside_every_step_fails_the_framework(
    monkeypatch: pytest.MonkeyPatch, capfd: pytest.CaptureFixture[str]
) -> None:
    """A device the script cannot enter (CuPy's `with cupy.cuda.Device(i)`) or a bug between
    steps ends the script: the run must fail, not pass with the remaining checks never run."""
    from types import SimpleNamespace

    from gpuenv.check.judge import Context, judge, no_explanation
    from gpuenv.check.parse import read_run
    from gpuenv.kb import default_kb

    def run(harness: h.Harness) -> None:
        harness.step("import", lambda: None)
        harness.add_device(0, "NVIDIA A100-SXM4-80GB", (8, 0))
        raise RuntimeError("cudaErrorDevicesUnavailable: CUDA-capable device(s) is/are busy")

    monkeypatch.setattr(h, "load_script", lambda _name: SimpleNamespace(run=run))
    harness = _harness()
    h.run_script(harness, "cupy")
    failed = harness.doc["steps"][-1]
    assert (failed["step"], failed["status"]) == ("the check script", "fail")
    assert failed["detail"].startswith("RuntimeError: cudaErrorDevicesUnavailable")
    assert "Traceback" in failed["error"]
    raw = read_run("cupy", stdout=json.dumps(harness.doc), stderr="", returncode=0)
    result = judge(raw, Context((), True, default_kb(), no_explanation))
    assert result.status == "failed"
    assert [s.name for s in result.failed_steps] == ["the check script"]
    capfd.readouterr()


def test_tensorflow_results_must_be_on_the_gpu() -> None:
    """TensorFlow runs an op it cannot place on the GPU on the CPU without a word (soft
    placement); the CPU's right answer must not pass as the GPU's."""
    from contextlib import nullcontext
    from types import SimpleNamespace

    from gpuenv.check import _tensorflow

    tf = SimpleNamespace(device=lambda _name: nullcontext())
    on_gpu = SimpleNamespace(device="/job:localhost/replica:0/task:0/device:GPU:0")
    assert _tensorflow.on(h.Harness, tf, "/GPU:0", lambda: on_gpu) is on_gpu
    on_cpu = SimpleNamespace(device="/job:localhost/replica:0/task:0/device:CPU:0")
    with pytest.raises(h.Failed, match=r"ran it on .*device:CPU:0, not on /GPU:0"):
        _tensorflow.on(h.Harness, tf, "/GPU:0", lambda: on_cpu)


def test_onnx_runtime_passes_only_when_its_profile_shows_every_node_on_cuda() -> None:
    from gpuenv.check import _onnxruntime as ort

    cuda = "CUDAExecutionProvider"
    assert ort.not_on_cuda({"MatMul": cuda, "Add": cuda}) is None
    assert ort.not_on_cuda({"MatMul": cuda, "Add": "CPUExecutionProvider"}) == (
        "the model's nodes did not run on CUDAExecutionProvider: Add on CPUExecutionProvider"
    )
    assert "does not say where MatMul, Add ran" in (ort.not_on_cuda({}) or "")  # no profile


def test_the_all_reduce_does_not_wait_for_workers_that_died_without_an_answer() -> None:
    import queue
    import time
    from types import SimpleNamespace

    from gpuenv.check import _torch

    class Empty:
        def get(self, timeout: float) -> None:
            raise queue.Empty

        def empty(self) -> bool:
            return True

    dead = [SimpleNamespace(is_alive=lambda: False) for _ in range(2)]
    start = time.monotonic()
    assert _torch.collect(Empty(), dead, time.time() + 60) == {}
    assert time.monotonic() - start < 10  # not the deadline's 60 s


def test_a_scratch_folder_is_in_the_work_folder_and_gone_after_its_action(tmp_path: Path) -> None:
    harness = _harness(workdir=str(tmp_path))
    seen: list[Path] = []

    def use(folder: str) -> str:
        seen.append(Path(folder))
        (Path(folder) / "profile.json").write_text("{}")
        return "done"

    assert harness.scratch("gpuenv-x-", use) == "done"
    assert seen[0].parent == tmp_path and seen[0].name.startswith("gpuenv-x-")
    with pytest.raises(ZeroDivisionError):
        harness.scratch("gpuenv-x-", lambda folder: 1 / 0)
    assert list(tmp_path.iterdir()) == []  # removed with its files, and after a failure too
