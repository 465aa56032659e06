"""Each doctor rule on machines described in a few words (what-if flags resolve through the KB)."""

from __future__ import annotations

import datetime

import pytest
from packaging.requirements import Requirement

from gpuenv.diagnose import Diagnosis, diagnose
from gpuenv.facts import DistributionFacts, FrameworkBuild, LibraryFacts
from gpuenv.kb import default_kb
from tests.builders import dist, machine, torch_build

TODAY = datetime.date(2026, 11, 21)
CU12_PINS = (
    'nvidia-cudnn-cu12==9.1.0.70; platform_system == "Linux"',
    'nvidia-cublas-cu12==12.1.3.1; platform_system == "Linux"',
)


def run(snapshot) -> Diagnosis:  # type: ignore[no-untyped-def]
    return diagnose(snapshot, default_kb(), TODAY)


def causes(diagnosis: Diagnosis) -> list[tuple[str, str]]:
    return [(f.cause, f.severity) for f in diagnosis.findings]


def test_cpu_torch_with_rtx3090_and_driver_535_installs_a_cuda12_build_of_the_same_line() -> None:
    snap = machine(
        gpus=["RTX 3090"], driver="535.183.01", frameworks=[torch_build("2.13.0+cpu", None, "cpu")]
    )
    result = run(snap)
    [finding] = [f for f in result.findings if f.cause == "cpu_only_build"]
    assert finding.severity == "error" and result.has_error
    assert finding.fix is not None
    [command] = finding.fix.commands
    assert "torch==2.13.0+cu126" in command
    assert "--extra-index-url https://download.pytorch.org/whl/cu126" in command
    assert command.startswith("/home/u/venv/bin/python -m pip install")
    # the requirement really parses and names the same torch line
    requirement = Requirement(command.split()[4].strip("'"))
    assert requirement.name == "torch" and "2.13.0+cu126" in str(requirement.specifier)


def test_a_cuda_torchvision_beside_a_cpu_torch_says_torch_was_replaced() -> None:
    vision = FrameworkBuild(
        "torchvision", "0.28.0+cu126", "12.6", variant="cu126", is_gpu_build=True
    )
    snap = machine(
        gpus=["RTX 3090"],
        driver="535.183.01",
        frameworks=[torch_build("2.13.0", None, "cpu"), vision],
    )
    [finding] = [f for f in run(snap).findings if f.cause == "cpu_only_build"]
    assert "later install replaced it" in finding.why
    assert "torchvision 0.28.0+cu126" in finding.why


def test_the_fix_uses_uv_when_uv_manages_the_env() -> None:
    snap = machine(
        gpus=["RTX 3090"],
        driver="535.183.01",
        manager="uv",
        frameworks=[torch_build("2.13.0+cpu", None, "cpu")],
        dists=[dist("torch", "2.13.0+cpu", installer="uv")],
    )
    [finding] = [f for f in run(snap).findings if f.cause == "cpu_only_build"]
    assert finding.fix and finding.fix.commands[0].startswith(
        "uv pip install --python /home/u/venv/bin/python"
    )


def test_cuda13_torch_on_v100_with_driver_550_is_too_old_and_unsupported() -> None:
    pins = ('cuda-toolkit[cublas,cudart]==13.2.2; platform_system == "Linux"',)
    snap = machine(
        gpus=["Tesla V100-SXM2-16GB"],
        driver="550.54.15",
        frameworks=[torch_build("2.15.0", "13.2", "cu132")],
        dists=[dist("torch", "2.15.0", pins)],
    )
    found = {f.cause for f in run(snap).findings}
    assert {"driver_too_old", "gpu_arch_unsupported"} <= found


def test_arch_unsupported_names_the_newest_build_that_covers_the_gpu() -> None:
    snap = machine(
        gpus=["Tesla V100-SXM2-16GB"],
        driver="580.95.05",
        frameworks=[torch_build("2.13.0", "13.0", "cu130")],
    )
    [finding] = [f for f in run(snap).findings if f.cause == "gpu_arch_unsupported"]
    assert finding.fix is not None
    assert "cu126" in finding.fix.commands[0]  # the CUDA 12.6 builds still carry sm_70


def test_a_matching_stack_has_no_error() -> None:
    snap = machine(
        gpus=["RTX 3090"],
        driver="535.183.01",
        frameworks=[torch_build("2.4.1", "12.1", "cu121")],
        dists=[
            dist("torch", "2.4.1", CU12_PINS),
            dist("nvidia-cudnn-cu12", "9.1.0.70"),
            dist("nvidia-cublas-cu12", "12.1.3.1"),
        ],
    )
    result = run(snap)
    assert not result.has_error, causes(result)
    assert [layer.verdict for layer in result.layers[:2]] == ["ok", "ok"]


def test_driver_470_cannot_run_a_cuda12_torch() -> None:
    snap = machine(
        gpus=["GeForce GTX 1080 Ti"],
        driver="470.256.02",
        frameworks=[torch_build("2.4.1", "12.1", "cu121")],
    )
    [finding] = [f for f in run(snap).findings if f.cause == "driver_too_old"]
    assert "525.60.13" in finding.why and finding.fix is not None
    assert "cu118" in " ".join(finding.fix.commands)  # torch 2.4's CUDA 11.8 build runs on 470


def test_missing_cudnn_wheel_is_named_with_its_exact_pin() -> None:
    snap = machine(
        gpus=["RTX 3090"],
        driver="535.183.01",
        frameworks=[torch_build("2.4.1", "12.1", "cu121")],
        dists=[dist("torch", "2.4.1", CU12_PINS), dist("nvidia-cublas-cu12", "12.1.3.1")],
    )
    [finding] = [f for f in run(snap).findings if f.rule == "cuda-wheel-missing"]
    assert finding.cause == "missing_cuda_lib"
    assert finding.fix and "nvidia-cudnn-cu12==9.1.0.70" in finding.fix.commands[0]


def test_ld_library_path_shadowing_the_pip_copy_is_a_warning() -> None:
    libs = [
        LibraryFacts(
            "libnvJitLink.so.12",
            "/usr/local/cuda-12.1/lib64/libnvJitLink.so.12",
            "LD_LIBRARY_PATH",
            "12.1.105",
            load_rank=0,
        ),
        LibraryFacts(
            "libnvJitLink.so.12",
            "/v/nvidia/nvjitlink/lib/libnvJitLink.so.12",
            "pip",
            "12.4.127",
            "nvidia-nvjitlink-cu12",
            load_rank=1,
        ),
    ]
    snap = machine(
        gpus=["RTX 3090"],
        driver="550.54.15",
        libraries=libs,
        env={"LD_LIBRARY_PATH": "/usr/local/cuda-12.1/lib64"},
        frameworks=[torch_build("2.5.1", "12.4", "cu124")],
    )
    [finding] = [f for f in run(snap).findings if f.cause == "multiple_cuda_conflict"]
    assert finding.severity == "warning" and "unset LD_LIBRARY_PATH" in finding.fix.commands  # type: ignore[union-attr]


def test_two_frameworks_pinning_different_cudnn_cannot_share_an_env() -> None:
    tf = FrameworkBuild(
        "tensorflow", "2.15.1", "12.2", "8.9", distribution="tensorflow", is_gpu_build=True
    )
    snap = machine(
        gpus=["RTX 3090"],
        driver="550.54.15",
        frameworks=[torch_build("2.4.1", "12.1", "cu121"), tf],
        dists=[
            dist("torch", "2.4.1", CU12_PINS),
            dist("tensorflow", "2.15.1", ['nvidia-cudnn-cu12==8.9.4.25; extra == ""']),
            dist("nvidia-cudnn-cu12", "9.1.0.70"),
            dist("nvidia-cublas-cu12", "12.1.3.1"),
        ],
    )
    [finding] = [f for f in run(snap).findings if f.rule == "frameworks-conflict"]
    assert finding.cause == "cudnn_mismatch"
    assert "torch" in finding.title and "tensorflow" in finding.title


def test_extension_built_for_another_torch() -> None:
    snap = machine(
        gpus=["RTX 3090"],
        driver="550.54.15",
        frameworks=[torch_build("2.4.1", "12.1", "cu121")],
        dists=[dist("torch-scatter", "2.1.2+pt21cu118")],
    )
    [finding] = [
        f
        for f in run(snap).findings
        if f.cause == "extension_build_mismatch" and f.severity == "error"
    ]
    assert "torch-scatter" in finding.title


@pytest.mark.parametrize(
    ("extension", "reason"),
    [
        (dist("xformers", "0.0.28.post1", ["torch==2.4.1"]), "Requires-Dist: torch==2.4.1"),
        (
            DistributionFacts(
                "mmcv",
                "2.1.0",
                "pip",
                (),
                None,
                "https://download.openmmlab.com/mmcv/dist/cu121/torch2.1.0/mmcv-2.1.0-cp311.whl",
            ),
            "installed from",
        ),
        (dist("torch-scatter", "2.1.2+pt24cu118"), "version label +pt24cu118"),
    ],
)
def test_extensions_built_for_another_torch_or_cuda(
    extension: DistributionFacts, reason: str
) -> None:
    snap = machine(
        gpus=["RTX 3090"],
        driver="550.54.15",
        frameworks=[torch_build("2.5.1", "12.4", "cu124")],
        dists=[extension],
    )
    [finding] = [f for f in run(snap).findings if f.rule == "extension-build-mismatch"]
    assert reason in finding.evidence[0].value


def test_an_extension_built_for_this_torch_is_fine() -> None:
    flash = DistributionFacts(
        "flash-attn",
        "2.7.0",
        "pip",
        (),
        None,
        "https://example.invalid/flash_attn-2.7.0+cu12torch2.5cxx11abiFALSE-cp311.whl",
    )
    snap = machine(
        gpus=["RTX 3090"],
        driver="550.54.15",
        frameworks=[torch_build("2.5.1", "12.4", "cu124")],
        dists=[dist("xformers", "0.0.28.post3", ["torch==2.5.1"]), flash],
    )
    assert not [f for f in run(snap).findings if f.rule == "extension-build-mismatch"]


def test_torchvision_for_another_torch_gets_its_pair() -> None:
    snap = machine(
        gpus=["RTX 3090"],
        driver="550.54.15",
        frameworks=[torch_build("2.5.1+cu124", "12.4", "cu124")],
        dists=[dist("torchvision", "0.19.1+cu124", ["torch==2.4.1"])],
    )
    [finding] = [f for f in run(snap).findings if f.rule == "extension-build-mismatch"]
    [command] = finding.fix.commands  # type: ignore[union-attr]
    assert "torchvision==0.20.1+cu124" in command
    assert "--extra-index-url https://download.pytorch.org/whl/cu124" in command


def test_tensorflow_on_native_windows_after_2_10_has_no_gpu() -> None:
    tf = FrameworkBuild("tensorflow", "2.15.0", None, distribution="tensorflow", is_gpu_build=False)
    snap = machine(gpus=["RTX 4090"], driver="551.78", platform="windows-x86_64", frameworks=[tf])
    [finding] = [f for f in run(snap).findings if f.rule == "tensorflow-windows-native-gpu"]
    assert finding.cause == "cpu_only_build" and "WSL2" in finding.fix.summary  # type: ignore[union-attr]


@pytest.mark.parametrize("value", ["", "-1"])
def test_cuda_visible_devices_hiding_every_gpu(value: str) -> None:
    snap = machine(
        gpus=["RTX 3090"],
        driver="535.183.01",
        env={"CUDA_VISIBLE_DEVICES": value},
        failures=[("visible_devices_hide_all", "environment")],
    )
    [finding] = [f for f in run(snap).findings if f.rule == "visible-devices-hide-all"]
    assert finding.severity == "error" and "unset CUDA_VISIBLE_DEVICES" in finding.fix.commands  # type: ignore[union-attr]


def test_container_requiring_a_newer_cuda_than_the_host_driver() -> None:
    require = "cuda>=12.8 brand=tesla,driver>=470,driver<471 brand=tesla,driver>=535,driver<536"
    snap = machine(gpus=["RTX 3090"], driver="535.183.01", env={"NVIDIA_REQUIRE_CUDA": require})
    assert ("container_driver_mismatch", "error") in causes(run(snap))
    # the same image on a data-center GPU with a 535 driver runs (forward compatibility)
    snap = machine(
        gpus=["NVIDIA A100-SXM4-80GB"], driver="535.183.01", env={"NVIDIA_REQUIRE_CUDA": require}
    )
    assert "container_driver_mismatch" not in {f.cause for f in run(snap).findings}


def test_no_gpu_and_no_driver_is_information_and_exit_zero() -> None:
    result = run(machine(frameworks=[torch_build("2.13.0+cpu", None, "cpu")]))
    assert causes(result) == [("no_driver", "info")]
    assert not result.has_error


def test_python_outside_the_release_range_is_a_warning() -> None:
    snap = machine(
        gpus=["RTX 3090"],
        driver="535.183.01",
        python_version="3.8.18",
        frameworks=[torch_build("2.13.0+cu126", "12.6", "cu126")],
    )
    assert ("python_version_unsupported", "warning") in causes(run(snap))


def test_every_finding_cause_is_in_the_shared_vocabulary() -> None:
    from gpuenv.diagnose.findings import CAUSES

    snap = machine(
        gpus=["Tesla V100-SXM2-16GB"],
        driver="550.54.15",
        frameworks=[torch_build("2.15.0", "13.2", "cu132")],
    )
    assert all(f.cause in CAUSES for f in run(snap).findings)
