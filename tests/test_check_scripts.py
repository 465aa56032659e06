"""The check scripts themselves, run for real inside target interpreters: the CPU torch (and, where
pip's index has them, a CUDA torchvision, CPU JAX and CPU ONNX Runtime). With `rehearse` the
torch and JAX scripts run their per-GPU checks and bench on the CPU as if it were GPU 0, so that
the known-answer code and the bench plumbing run here; what needs CUDA itself (cuDNN, Triton,
pinned memory, NCCL, the CUDA execution provider) waits for a GPU (tools/check_on_gpu.sh)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from gpuenv.check.judge import Context, judge, no_explanation
from gpuenv.check.parse import read_run
from gpuenv.kb import default_kb
from tests.test_check_cli import check_json, site_packages, steps, venv_beside_torch

HARNESS = Path(__file__).resolve().parents[1] / "src" / "gpuenv" / "check" / "_harness.py"
PYTHON36 = Path("/root/.pyenv/versions/3.6.15/bin/python3.6")
PIP_INSTALL = (sys.executable, "-m", "pip", "install", "-q")
pytestmark = pytest.mark.real


def harness(python: Path | str, framework: str, **options: Any) -> dict[str, Any]:
    done = subprocess.run(
        [str(python), str(HARNESS), framework, json.dumps(options)],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    raw = read_run(framework, stdout=done.stdout, stderr=done.stderr, returncode=0)
    assert raw.outcome == "finished", raw.error
    document: dict[str, Any] = json.loads(done.stdout)  # stdout is the document and nothing else
    return document


def statuses(document: dict[str, Any]) -> dict[tuple[int | None, str], str]:
    return {(s["device"], s["step"]): s["status"] for s in document["steps"]}


def test_torch_rehearses_every_gpu_check_and_the_bench_on_the_cpu(cpu_torch_venv: Path) -> None:
    document = harness(cpu_torch_venv, "torch", rehearse=True, bench=True)
    assert statuses(document) == {
        (None, "import"): "pass",
        (0, "allocate"): "pass",
        (0, "matmul FP32"): "pass",
        (0, "elementwise FP32"): "pass",
        (0, "conv2d (cuDNN)"): "skip",
        (0, "matmul TF32"): "pass",
        (0, "matmul BF16"): "pass",
        (0, "matmul FP16"): "pass",
        (0, "torch.compile (Triton)"): "skip",
        (None, "all-reduce (gloo rehearsal)"): "pass",  # spawned ranks, rendezvous, clean-up
        (0, "bench copies"): "pass",
        (0, "bench matmul FP32"): "pass",
        (0, "bench matmul TF32"): "pass",
        (0, "bench matmul BF16"): "pass",
        (0, "bench matmul FP16"): "pass",
    }
    details = {s["step"]: s["detail"] for s in document["steps"]}
    assert details["matmul BF16"].endswith("(tolerance 0.02)")
    samples = {b["name"]: b for b in document["bench"]}
    assert list(samples) == [
        "copy device-device",
        "matmul FP32",
        "matmul TF32",
        "matmul BF16",
        "matmul FP16",
    ]
    fp32 = samples["matmul FP32"]
    assert fp32["size"] == "256x256" and fp32["work"] == 2 * 256**3  # 8 MiB "free": scaled down
    assert samples["matmul FP16"]["size"] == "512x512"  # half the bytes per element
    assert len(fp32["seconds"]) in (3, 10) and all(s > 0 for s in fp32["seconds"])
    raw = read_run("torch", stdout=json.dumps(document), stderr="", returncode=0)
    result = judge(raw, Context((), True, default_kb(), no_explanation))
    assert [f.unit for f in result.bench] == ["GB/s"] + ["TFLOP/s"] * 4
    assert all(f.median > 0 and f.peak is None for f in result.bench)  # "cpu" has no KB peak


def test_torch_without_a_gpu_reports_its_build(cpu_torch_venv: Path) -> None:
    document = harness(cpu_torch_venv, "torch", bench=True)
    assert document["build"]["version"] == "2.13.0+cpu" and document["devices"] == []
    assert document["device_error"] == "AssertionError: Torch not compiled with CUDA enabled"
    assert statuses(document) == {(None, "import"): "pass"}


@pytest.mark.skipif(not PYTHON36.exists(), reason="no Python 3.6 interpreter on this machine")
@pytest.mark.parametrize("framework", ["torch", "tensorflow", "jax", "cupy", "onnxruntime"])
def test_the_scripts_run_on_python_3_6(framework: str) -> None:
    document = harness(PYTHON36, framework)
    assert document["python"].startswith("3.6.")
    [imported] = document["steps"]
    assert imported["status"] == "fail" and "No module named" in imported["detail"]


@pytest.mark.network
def test_a_cuda_torchvision_beside_the_cpu_torch_fails_its_compiled_ops(
    cpu_torch_venv: Path, tmp_path: Path
) -> None:
    python = venv_beside_torch(tmp_path / "venv", cpu_torch_venv)
    install = subprocess.run(
        [*PIP_INSTALL, "--no-deps", "--target", str(site_packages(python)), "torchvision==0.28.0"],
        capture_output=True,
        text=True,
        timeout=300,
    )
    if install.returncode != 0:
        pytest.skip(
            f"torchvision 0.28.0 is not available from pip's index: {install.stderr[-300:]}"
        )
    code, document, _err = check_json("--python", str(python))
    assert code == 1
    [torch] = document["frameworks"]
    vision = steps(torch)["import torchvision"]
    assert vision["status"] == "fail"
    assert "operator torchvision::nms does not exist" in vision["detail"]


@pytest.fixture(scope="module")
def jax_ort_site(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A venv with CPU JAX and CPU ONNX Runtime from pip's index (skipped when it has none)."""
    folder = tmp_path_factory.mktemp("jax-ort") / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(folder)], check=True)
    python = folder / "bin" / "python"
    install = subprocess.run(
        [*PIP_INSTALL, "--target", str(site_packages(python)), "jax", "jaxlib", "onnxruntime"],
        capture_output=True,
        text=True,
        timeout=600,
    )
    if install.returncode != 0:
        pytest.skip(f"jax, jaxlib or onnxruntime is not available: {install.stderr[-300:]}")
    return python


@pytest.mark.network
def test_jax_rehearses_its_gpu_checks_and_bench_on_the_cpu(jax_ort_site: Path) -> None:
    plain = harness(jax_ort_site, "jax")
    assert "no platforms that are instances of gpu" in plain["device_error"]
    assert plain["build"]["gpu_build"] is False
    document = harness(jax_ort_site, "jax", rehearse=True, bench=True)
    found = statuses(document)
    assert set(found.values()) == {"pass"}, document["steps"]
    assert (0, "matmul BF16") in found and (0, "bench matmul FP16") in found
    assert [b["name"] for b in document["bench"]] == [
        "matmul FP32",
        "matmul TF32",
        "matmul BF16",
        "matmul FP16",
    ]


@pytest.mark.network
def test_onnx_runtime_runs_the_hand_built_model_and_says_it_has_no_cuda_provider(
    jax_ort_site: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("TMPDIR", str(tmp_path))  # no workdir given: the child's temporary folder
    document = harness(jax_ort_site, "onnxruntime")
    left = [p.name for p in tmp_path.iterdir() if p.name.startswith("gpuenv-")]
    assert left == []  # ORT's profile and the folder made for it are gone (ORT's own .ses stays)
    assert statuses(document) == {(None, "import"): "pass", (None, "model on the CPU"): "pass"}
    [model] = [s for s in document["steps"] if s["step"] == "model on the CPU"]
    assert model["detail"] == "max error 0 (tolerance 0.0001); ran on CPUExecutionProvider"
    assert document["device_error"].startswith("this onnxruntime has no CUDAExecutionProvider")
    assert document["build"]["gpu_build"] is False


def test_the_gpu_capture_tool_turns_raw_outputs_into_fixtures(tmp_path: Path) -> None:
    """tools/record_check_fixtures.py, on raw outputs shaped like a GPU machine's (from a
    synthetic fixture), and its comparison of the bench with the reference loop."""
    from tests.test_check_results import load

    fixture = load("torch-2xh100-bench")
    raw = tmp_path / "raw"
    raw.mkdir()
    (raw / "torch.stdout").write_text(json.dumps(fixture["run"]["document"]))
    (raw / "torch.stderr").write_text("")
    (raw / "torch.rc").write_text("0\n")
    gpus = [
        {"index": g["index"], "name": g["name"], "compute_capability": "9.0"}
        for g in fixture["driver_gpus"]
    ]
    snapshot = {"gpus": gpus, "driver": {"versions": [{"value": "580.159.04"}]}}
    (tmp_path / "snapshot.json").write_text(json.dumps(snapshot))
    check = {
        "frameworks": [
            {
                "name": "torch",
                "bench": [
                    {"name": "matmul BF16", "device": 0, "median": 700.0},
                    {"name": "copy device-device", "device": 0, "median": 2750.0},
                ],
            }
        ]
    }
    (tmp_path / "check.json").write_text(json.dumps(check))
    reference = {"figures": {"matmul BF16": 720.0, "copy device-device": 3100.0}}
    (tmp_path / "reference.json").write_text(json.dumps(reference))
    tool = Path(__file__).resolve().parents[1] / "tools" / "record_check_fixtures.py"
    done = subprocess.run(
        [sys.executable, str(tool), str(tmp_path)], capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 1, done.stderr  # the copy is 11 % off the reference
    recorded = json.loads((tmp_path / "fixtures" / "torch.json").read_text())
    assert recorded["provenance"].startswith("recorded: ")
    assert "NVIDIA H100 80GB HBM3 (2 GPU(s), driver 580.159.04)" in recorded["provenance"]
    assert recorded["expected"]["status"] == "passed"
    assert recorded["expected"]["low"] == [[1, "matmul BF16"]]
    compare = (tmp_path / "compare.txt").read_text().splitlines()
    assert compare == [
        "matmul BF16: gpuenv 700.0, reference 720.0, 2.8% apart: ok",
        "copy device-device: gpuenv 2750.0, reference 3100.0, 11.3% apart: OFF",
    ]
