"""The command line as a user runs it: real processes, real venvs, this machine's real nvcc."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import jsonschema
import pytest

ROOT = Path(__file__).resolve().parents[1]
pytestmark = pytest.mark.real


def gpuenv(*args: str, timeout: float = 120, **extra: str) -> subprocess.CompletedProcess[str]:
    """gpuenv as a user runs it, in a small known environment (`extra` variables added)."""
    env = {"PATH": "/usr/local/bin:/usr/bin:/bin", "HOME": str(Path.home()), "NO_COLOR": "1"}
    return subprocess.run(
        [sys.executable, "-m", "gpuenv", *args],
        capture_output=True,
        text=True,
        timeout=timeout,
        env={**env, **extra},
        cwd=ROOT,
    )


def doctor_json(*args: str) -> tuple[int, dict[str, Any]]:
    done = gpuenv("doctor", "--json", *args)
    assert done.returncode in (0, 1), done.stderr
    return done.returncode, json.loads(done.stdout)


def test_doctor_on_this_gpu_less_machine_is_clean_and_exits_zero(cpu_torch_venv: Path) -> None:
    done = gpuenv("doctor", "--python", str(cpu_torch_venv))
    assert done.returncode == 0, done.stdout + done.stderr
    out = done.stdout
    assert "No NVIDIA GPU or driver found" in out
    assert "nvcc 13.0" in out  # the real toolkit here
    assert "torch" in out and "2.13.0+cpu" in out and "CPU-only build" in out
    assert "Traceback" not in out + done.stderr
    assert "\033[" not in out  # no colour when not a terminal


def test_cpu_torch_with_a_declared_rtx3090_and_driver_535(cpu_torch_venv: Path) -> None:
    code, report = doctor_json(
        "--python", str(cpu_torch_venv), "--gpu", "RTX 3090", "--driver", "535.183.01"
    )
    assert code == 1
    [finding] = [f for f in report["findings"] if f["cause"] == "cpu_only_build"]
    [command] = finding["fix"]["commands"]
    assert command.startswith(str(cpu_torch_venv) + " -m pip install")
    assert "torch==2.13.0+cu126" in command  # a CUDA 12 build of the same torch line
    assert command.endswith("--extra-index-url https://download.pytorch.org/whl/cu126")
    assert report["snapshot"]["overrides"] == ["--driver 535.183.01", "--gpu RTX 3090"]


def test_snapshot_of_a_real_venv(cpu_torch_venv: Path, tmp_path: Path) -> None:
    out = tmp_path / "snap.json"
    done = gpuenv("snapshot", "--python", str(cpu_torch_venv), "-o", str(out))
    assert done.returncode == 0, done.stderr
    data = json.loads(out.read_text())
    schema = json.loads((ROOT / "docs" / "snapshot.schema.json").read_text())
    jsonschema.validate(data, schema)
    [torch] = [f for f in data["python_env"]["frameworks"] if f["name"] == "torch"]
    assert (torch["version"], torch["variant"], torch["is_gpu_build"]) == (
        "2.13.0+cpu",
        "cpu",
        False,
    )
    assert torch["framework_cuda"] is None
    nvcc = [t for t in data["toolkits"] if t["on_path"]]
    assert nvcc and nvcc[0]["toolkit_cuda"].startswith("13.0")
    assert data["redacted"] is True
    # the same file, read back: the doctor's answer does not change
    here = doctor_json("--python", str(cpu_torch_venv))[1]
    there = doctor_json("--from", str(out))[1]
    assert [f["rule"] for f in here["findings"]] == [f["rule"] for f in there["findings"]]


def test_snapshot_human_output_lists_the_floors() -> None:
    done = gpuenv("snapshot")
    assert done.returncode == 0
    for title in (
        "Host",
        "Driver",
        "GPUs",
        "CUDA toolkits",
        "CUDA libraries",
        "Python environment",
    ):
        assert title in done.stdout


def test_a_malformed_from_file_is_exit_2_with_the_field(tmp_path: Path) -> None:
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps({"host": {"os": {"value": 3, "source": "x"}}}))
    done = gpuenv("doctor", "--from", str(bad))
    assert done.returncode == 2
    assert "bad.json: field host.os.value" in done.stderr and "Traceback" not in done.stderr


def test_an_unknown_gpu_name_is_exit_2_not_a_guess() -> None:
    done = gpuenv("doctor", "--gpu", "RTX 9999 Hyper")
    assert done.returncode == 2 and "no GPU of that name" in done.stderr


def test_markdown_report_for_a_bug_report() -> None:
    done = gpuenv("doctor", "--markdown", "--gpu", "RTX 3090", "--driver", "470.256.02")
    assert done.stdout.startswith("### gpuenv doctor")
    assert "| GPU | ok | NVIDIA GeForce RTX 3090 |" in done.stdout


def test_kb_commands() -> None:
    shown = gpuenv("kb", "show", "gpu", "RTX 3090", "--json")
    assert shown.returncode == 0 and "8.6" in shown.stdout
    audit = gpuenv("kb", "audit")
    assert audit.returncode == 0, audit.stdout
    unknown = gpuenv("kb", "show", "nonsense-topic")
    assert unknown.returncode == 2 and "kb-unknown-topic" in unknown.stderr


def test_help_and_version() -> None:
    assert gpuenv("--help").returncode == 0
    assert gpuenv("--version").stdout.startswith("gpuenv ")
    assert gpuenv().returncode == 2  # no command: usage, exit 2
