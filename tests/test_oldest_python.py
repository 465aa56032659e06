"""gpuenv itself runs on the oldest Python it supports (3.9): installed from this tree, for real."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PYTHON39 = Path("/root/.pyenv/versions/3.9.18/bin/python3.9")


@pytest.mark.real
@pytest.mark.network
@pytest.mark.skipif(not PYTHON39.exists(), reason="no Python 3.9 interpreter on this machine")
def test_install_and_doctor_on_python_3_9(tmp_path: Path) -> None:
    venv = tmp_path / "venv"
    subprocess.run([str(PYTHON39), "-m", "venv", str(venv)], check=True, timeout=120)
    install = subprocess.run(
        [str(venv / "bin" / "pip"), "install", "-q", str(ROOT)],
        capture_output=True,
        text=True,
        timeout=600,
    )
    if install.returncode != 0 and "connection" in install.stderr.lower():
        pytest.skip("the package index cannot be reached (build dependencies)")
    assert install.returncode == 0, install.stderr[-2000:]
    done = subprocess.run(
        [
            str(venv / "bin" / "gpuenv"),
            "doctor",
            "--json",
            "--gpu",
            "RTX 3090",
            "--driver",
            "535.183.01",
            "--python",
            str(venv / "bin" / "python"),
        ],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode in (0, 1), done.stderr
    report = json.loads(done.stdout)
    assert report["snapshot"]["python_env"]["python_version"].startswith("3.9.")
    assert report["layers"][0]["summary"] == "NVIDIA GeForce RTX 3090"
