"""Snapshot documents: round trip, and clear errors for malformed --from files."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import pytest

from gpuenv.edges.files import LIMITS
from gpuenv.errors import GpuenvError
from gpuenv.facts import (
    BinaryArchFacts,
    CondaPackageFacts,
    DistributionFacts,
    DriverFacts,
    FrameworkBuild,
    GpuFacts,
    HostFacts,
    JetsonFacts,
    LibraryFacts,
    Observation,
    PythonEnvFacts,
    Snapshot,
    ToolkitFacts,
    to_dict,
)
from gpuenv.snapshot_io import read_snapshot, snapshot_from_dict, snapshot_json


def full_snapshot() -> Snapshot:
    return Snapshot(
        host=HostFacts(
            os=Observation("linux", "platform"),
            arch=Observation("x86_64", "platform"),
            wsl=Observation(False, "/proc/version", raw="Linux version 6.1"),
            jetson=Observation(
                JetsonFacts("36.4.3", "NVIDIA Jetson AGX Orin"), "/etc/nv_tegra_release"
            ),
            env={"CUDA_VISIBLE_DEVICES": "0"},
        ),
        driver=DriverFacts(
            versions=(Observation("535.183.01", "nvidia-smi"), Observation("535.183.01", "nvml")),
            max_cuda=(Observation("12.2", "nvidia-smi"),),
            failures=(Observation("no_devices", "nvidia-smi", raw="No devices were found"),),
        ),
        gpus=(
            GpuFacts(0, "NVIDIA GeForce RTX 3090", "nvml", "0x2204", "8.6", 24576, None, "GPU-x"),
        ),
        pci_gpus=(GpuFacts(0, None, "pci:/sys/bus/pci/devices/0000:01:00.0", "0x2204"),),
        toolkits=(ToolkitFacts("12.1.105", "/usr/local/cuda-12.1", "nvcc", on_path=True),),
        libraries=(
            LibraryFacts(
                "libcudnn.so.9", "/x/libcudnn.so.9", "pip", "9.1.0.70", "nvidia-cudnn-cu12", 1
            ),
        ),
        python_env=PythonEnvFacts(
            interpreter="/venv/bin/python",
            python_version="3.11.7",
            env_kind="venv",
            manager="pip",
            site_packages=("/venv/lib/python3.11/site-packages",),
            distributions=(
                DistributionFacts("torch", "2.4.1", "pip", ("nvidia-cudnn-cu12==9.1.0.70",)),
            ),
            frameworks=(
                FrameworkBuild(
                    "torch",
                    "2.4.1",
                    "12.1",
                    variant="cu121",
                    is_gpu_build=True,
                    source="torch/version.py",
                    details={"git_version": "abc"},
                ),
            ),
            problems=("one dist-info is broken",),
            conda_packages=(
                CondaPackageFacts(
                    "pytorch",
                    "2.1.0",
                    "py3.11_cuda12.1_cudnn8.9.2_0",
                    "https://conda.anaconda.org/pytorch/linux-64",
                    "linux-64",
                ),
            ),
        ),
        binaries=(
            BinaryArchFacts("/x/libtorch_cuda.so", "torch", ("sm_80", "sm_90"), ("compute_90",)),
        ),
        problems=("ldconfig timed out",),
        overrides=("--driver 535.183.01",),
        captured_at="2026-11-21T00:00:00+00:00",
        gpuenv_version="0.1.0",
    )


def test_round_trip_keeps_every_fact() -> None:
    original = full_snapshot()
    again = snapshot_from_dict(json.loads(snapshot_json(original)), "x.json")
    assert to_dict(again) == {**to_dict(original), "origin": "file:x.json"}


def test_doctor_json_output_is_accepted_as_from(tmp_path: Path) -> None:
    path = tmp_path / "doctor.json"
    path.write_text(json.dumps({"schema": "gpuenv-doctor/1", "snapshot": to_dict(full_snapshot())}))
    assert read_snapshot(path).gpus[0].compute_capability == "8.6"


@pytest.mark.parametrize(
    ("mutate", "message"),
    [
        (lambda d: d["gpus"][0].update(index="zero"), "field gpus[0].index: expected an integer"),
        (lambda d: d.pop("host"), "field host: missing"),
        (
            lambda d: d["host"]["wsl"].update(value="yes"),
            "field host.wsl.value: expected a boolean",
        ),
        (
            lambda d: d["python_env"]["frameworks"][0].pop("name"),
            "python_env.frameworks[0].name: missing",
        ),
        (lambda d: d.update(gpus={"a": 1}), "field gpus: expected a list"),
        (lambda d: d.update(schema_version=99), "99 is newer than this gpuenv reads"),
        (lambda d: d["libraries"][0].update(soname=None), "libraries[0].soname: missing"),
    ],
)
def test_malformed_fields_are_named(tmp_path: Path, mutate, message: str) -> None:  # type: ignore[no-untyped-def]
    data = to_dict(full_snapshot())
    mutate(data)
    path = tmp_path / "bad.json"
    path.write_text(json.dumps(data))
    with pytest.raises(GpuenvError) as caught:
        read_snapshot(path)
    assert caught.value.code == "bad-snapshot"
    assert "bad.json" in caught.value.message and message in caught.value.message


@pytest.mark.parametrize(
    ("content", "message"),
    [
        (b"{not json", "not JSON (line 1"),
        (b"\x89PNG\r\n\x1a\n\x00\x00\xff\xfe", "not a UTF-8 text file"),
        (b"[1, 2, 3]", "expected an object"),
        (b"", "not JSON"),
    ],
)
def test_unreadable_files_give_clear_errors(tmp_path: Path, content: bytes, message: str) -> None:
    path = tmp_path / "in.json"
    path.write_bytes(content)
    with pytest.raises(GpuenvError) as caught:
        read_snapshot(path)
    assert message in caught.value.message


def test_missing_file_is_named(tmp_path: Path) -> None:
    with pytest.raises(GpuenvError, match=r"nothere\.json does not exist"):
        read_snapshot(tmp_path / "nothere.json")


def test_a_directory_is_not_a_snapshot(tmp_path: Path) -> None:
    with pytest.raises(GpuenvError, match="cannot read"):
        read_snapshot(tmp_path)


def test_json_nested_too_deeply_is_a_bad_snapshot_not_a_crash(tmp_path: Path) -> None:
    path = tmp_path / "deep.json"
    path.write_text('{"host": ' + "[" * 100_000 + "]" * 100_000 + "}")
    with pytest.raises(GpuenvError, match=r"deep\.json: JSON nested too deeply"):
        read_snapshot(path)


@pytest.mark.skipif(
    not hasattr(sys, "get_int_max_str_digits"), reason="this Python reads integers of any length"
)
def test_an_integer_of_thousands_of_digits_is_a_bad_snapshot(tmp_path: Path) -> None:
    data = json.dumps(to_dict(full_snapshot())).replace('"index": 0', '"index": ' + "9" * 5000)
    path = tmp_path / "big-int.json"
    path.write_text(data)
    with pytest.raises(GpuenvError) as caught:
        read_snapshot(path)
    assert caught.value.code == "bad-snapshot" and "big-int.json" in caught.value.message


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="needs named pipes")
def test_a_named_pipe_is_refused_without_waiting_for_a_writer(tmp_path: Path) -> None:
    # opening a FIFO for reading blocks until someone writes: the gateway never opens it so
    pipe = tmp_path / "pipe"
    os.mkfifo(pipe)
    with pytest.raises(GpuenvError, match="FIFO"):
        read_snapshot(pipe)


def test_a_character_device_is_refused_not_read_until_memory_runs_out() -> None:
    with pytest.raises(GpuenvError, match="character device"):
        read_snapshot(Path("/dev/zero"))


def test_a_file_over_the_limit_is_refused(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(LIMITS, "snapshot", 1024 * 1024)
    path = tmp_path / "big.json"
    path.write_bytes(b" " * (1024 * 1024 + 1))
    with pytest.raises(GpuenvError, match="larger than 1 MiB"):
        read_snapshot(path)
