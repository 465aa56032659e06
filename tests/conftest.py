"""Test set-up: unit tests cannot touch the machine.

An autouse guard makes subprocesses and native library loads fail unless the test is marked
`real` (it uses real parts of this machine: venvs, pip, nvcc, other interpreters) or `network`.
"""

from __future__ import annotations

import ctypes
import subprocess
from pathlib import Path

import pytest

FIXTURES = Path(__file__).parent / "fixtures"
MACHINES = FIXTURES / "machines"
SHARED = Path(__file__).resolve().parents[2] / "shared"


class MachineTouched(AssertionError):
    pass


def _refuse(*args: object, **kwargs: object) -> None:
    raise MachineTouched(
        "a unit test tried to run a command or load a library; mark it @pytest.mark.real "
        "or give the code a RecordedMachine"
    )


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    import os

    if os.environ.get("GPUENV_HEAVY_TESTS") == "1":
        return
    skip = pytest.mark.skip(reason="downloads gigabytes; set GPUENV_HEAVY_TESTS=1 to run")
    for item in items:
        if item.get_closest_marker("heavy"):
            item.add_marker(skip)


@pytest.fixture(autouse=True)
def _machine_guard(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> None:
    if request.node.get_closest_marker("real") or request.node.get_closest_marker("network"):
        return
    monkeypatch.setattr(subprocess.Popen, "__init__", _refuse)
    monkeypatch.setattr(ctypes, "CDLL", _refuse)
    monkeypatch.setattr(ctypes.cdll, "LoadLibrary", _refuse)


@pytest.fixture(scope="session")
def cpu_torch_venv(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A real venv with the CPU torch 2.13.0 wheel (taken from a local file); its python path."""
    import sys

    venv = tmp_path_factory.mktemp("cpu-torch") / "venv"
    python = venv / "bin" / "python"
    for argv in (
        [sys.executable, "-m", "venv", str(venv)],
        [str(python), "-m", "pip", "install", "-q", "torch==2.13.0"],
    ):
        done = subprocess.run(argv, capture_output=True, text=True, timeout=600)
        if done.returncode != 0:
            pytest.fail(f"{' '.join(argv)} failed:\n{done.stderr[-2000:]}")
    return python
