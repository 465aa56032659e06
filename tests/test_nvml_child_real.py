"""The NVML child for real: NVIDIA's bindings (nvidia-ml-py) in a child process, against a stand-in
driver library built here with the C compiler (tests/fixtures/fake_nvml/fake_driver.c). A driver
that fails, crashes or hangs in nvmlInit is a fact of the snapshot, never gpuenv's crash."""

from __future__ import annotations

import shutil
import subprocess
import time
from pathlib import Path

import pytest

from gpuenv.probe.access import LiveMachine
from gpuenv.probe.driver import probe_driver
from tests.conftest import FIXTURES

pytestmark = [
    pytest.mark.real,
    pytest.mark.skipif(shutil.which("cc") is None, reason="needs a C compiler"),
]


@pytest.fixture(scope="module")
def fake_driver(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("fake-driver")
    source = FIXTURES / "fake_nvml" / "fake_driver.c"
    for name in ("libnvidia-ml.so.1", "libcuda.so.1"):
        subprocess.run(
            [
                "cc",
                "-shared",
                "-fPIC",
                f"-Wl,-soname,{name}",
                "-o",
                str(folder / name),
                str(source),
            ],
            check=True,
            timeout=120,
        )
    return folder


def _probe(fake_driver: Path, monkeypatch: pytest.MonkeyPatch, mode: str, timeout: float = 20):
    monkeypatch.setenv("LD_LIBRARY_PATH", str(fake_driver))
    monkeypatch.setenv("FAKE_NVML_MODE", mode)
    monkeypatch.setenv("PATH", "/usr/bin:/bin")  # no nvidia-smi: NVML alone answers
    return probe_driver(LiveMachine(), timeout)


def test_the_driver_and_gpus_as_nvml_reports_them(
    fake_driver: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    facts, gpus = _probe(fake_driver, monkeypatch, "ok")
    versions = {o.source: o.value for o in facts.versions if o.known}
    assert versions["nvml:nvmlSystemGetDriverVersion"] == "580.65.06"
    assert {o.value for o in facts.max_cuda if o.known} == {"13.0"}
    assert [g.name for g in gpus] == ["NVIDIA H100 80GB HBM3"] * 2
    assert [g.compute_capability for g in gpus] == ["9.0", "9.0"]
    assert gpus[0].pci_device_id == "0x2330" and gpus[0].memory_mib == 81559
    assert [g.mig_mode for g in gpus] == ["Enabled", None]  # the second is not MIG-capable
    assert gpus[0].uuid == "GPU-5b2b9d3e-1c2f-4a7e-9d3b-0f1e2d3c4b5a"


def test_a_version_mismatch_is_a_named_failure(
    fake_driver: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    facts, gpus = _probe(fake_driver, monkeypatch, "mismatch")
    assert "nvml_mismatch" in {f.value for f in facts.failures}
    assert gpus == ()


@pytest.mark.parametrize("mode", ["crash", "hang"])
def test_a_driver_that_crashes_or_hangs_the_child_is_a_fact(
    fake_driver: Path, monkeypatch: pytest.MonkeyPatch, mode: str
) -> None:
    start = time.monotonic()
    facts, gpus = _probe(fake_driver, monkeypatch, mode, timeout=3)
    assert time.monotonic() - start < 20  # the child is killed at its deadline
    assert gpus == ()
    nvml = next(o for o in facts.versions if o.source.startswith("nvml:"))
    expected = "timed out" if mode == "hang" else "exited with -6"  # SIGABRT
    assert not nvml.known and expected in (nvml.problem or "")
