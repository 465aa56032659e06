"""The doctor on machines an expert would try it on: WSL2 and native Windows drivers, GPUs newer
or older than a build's CUDA, ROCm and JAX-plugin envs, a driver that lists no GPU, unreadable
framework versions. Each gives a sensible verdict, and each fix is what `gpuenv plan` picks."""

from __future__ import annotations

import datetime
import shlex
from dataclasses import replace

import pytest

from gpuenv.diagnose import Diagnosis, Finding, diagnose
from gpuenv.facts import FrameworkBuild, LibraryFacts, Observation, Snapshot
from gpuenv.kb import default_kb
from gpuenv.plan.request import request_from_arguments
from gpuenv.plan.resolve import make_plan
from tests.builders import dist, machine, torch_build

TODAY = datetime.date(2026, 11, 21)


def run(snapshot: Snapshot) -> Diagnosis:
    return diagnose(snapshot, default_kb(), TODAY)


def only(diagnosis: Diagnosis, rule: str) -> Finding:
    [finding] = [f for f in diagnosis.findings if f.rule == rule]
    return finding


def wsl(snapshot: Snapshot) -> Snapshot:
    return replace(snapshot, host=replace(snapshot.host, wsl=Observation(True, "wsl")))


def with_interpreter(snapshot: Snapshot, interpreter: str) -> Snapshot:
    assert snapshot.python_env is not None
    return replace(snapshot, python_env=replace(snapshot.python_env, interpreter=interpreter))


# ---- WSL2 and Windows: the driver number is the Windows host's ------------------------------


def test_wsl_driver_is_judged_with_windows_numbers() -> None:
    # Windows 527.41 is R525: CUDA 12 minor-version compatibility on Windows needs >= 528.33,
    # although 527 would pass Linux's 525.60.13
    snap = wsl(
        machine(gpus=["RTX 4070"], driver="527.41", frameworks=[torch_build("2.5.1", "12.1")])
    )
    finding = only(run(snap), "driver-too-old")
    assert finding.severity == "error"
    assert "528.33" in finding.fix.summary if finding.fix else False


def test_wsl_driver_without_a_reported_cuda_reads_the_windows_branch_table() -> None:
    snap = wsl(
        machine(gpus=["RTX 4070"], driver="596.36", frameworks=[torch_build("2.14.1", "13.0")])
    )
    result = run(snap)
    driver = next(layer for layer in result.layers if layer.key == "driver")
    assert "CUDA ≤ 13.2" in driver.summary
    assert not result.has_error


def test_forward_compatibility_is_offered_on_linux_only() -> None:
    frameworks = [torch_build("2.5.1", "12.1")]
    linux = only(
        run(machine(gpus=["A100-SXM4-80GB"], driver="470.256.02", frameworks=frameworks)),
        "driver-too-old",
    )
    assert linux.fix and any("cuda-compat-12-1" in n for n in linux.fix.notes)
    windows = machine(
        gpus=["A100-SXM4-80GB"], driver="472.12", platform="windows-x86_64", frameworks=frameworks
    )
    finding = only(run(windows), "driver-too-old")
    assert finding.fix and not finding.fix.notes


@pytest.mark.parametrize(
    ("interpreter", "start"),
    [
        (
            "C:\\Users\\me\\venv\\Scripts\\python.exe",
            "C:\\Users\\me\\venv\\Scripts\\python.exe -m pip",
        ),
        (
            "C:\\Program Files\\Python311\\python.exe",
            '& "C:\\Program Files\\Python311\\python.exe" -m pip',
        ),
    ],
)
def test_windows_fix_commands_are_quoted_for_cmd_and_powershell(
    interpreter: str, start: str
) -> None:
    snap = machine(
        gpus=["RTX 4090"],
        driver="551.78",
        platform="windows-x86_64",
        frameworks=[torch_build("2.5.1+cpu", None, "cpu")],
    )
    finding = only(run(with_interpreter(snap, interpreter)), "framework-cpu-build")
    assert finding.fix is not None
    [command] = finding.fix.commands
    assert command.startswith(start), command
    assert "'" not in command  # POSIX quotes mean nothing to cmd and PowerShell
    assert "torch==2.5.1+cu124 --extra-index-url https://download.pytorch.org/whl/cu124" in command


# ---- GPU architectures ----------------------------------------------------------------------


def test_rtx5090_with_a_cuda_12_4_torch_has_no_code_for_sm120() -> None:
    snap = machine(
        gpus=["RTX 5090"], driver="570.124.06", frameworks=[torch_build("2.6.0", "12.4")]
    )
    finding = only(run(snap), "gpu-arch-unsupported")
    assert finding.severity == "error" and finding.cause == "gpu_arch_unsupported"
    assert "first supported by CUDA 12.8" in finding.title
    assert finding.fix is not None
    [command] = finding.fix.commands
    label = command.split("+cu")[1].split()[0]
    assert int(label) >= 128, command


def test_pascal_under_a_cu128_build_gets_the_same_release_built_for_cu126() -> None:
    snap = machine(
        gpus=["GTX 1080 Ti"], driver="570.124.06", frameworks=[torch_build("2.8.0", "12.8")]
    )
    finding = only(run(snap), "gpu-arch-unsupported")
    assert finding.fix is not None
    [command] = finding.fix.commands
    assert "torch==2.8.0+cu126" in command and "whl/cu126" in command


# ---- builds for another GPU vendor or with the GPU part elsewhere ---------------------------


def test_rocm_torch_on_an_nvidia_machine_is_an_error_with_the_cuda_build_as_fix() -> None:
    rocm = FrameworkBuild(
        "torch",
        "2.5.1+rocm6.2",
        None,
        hip_version="6.2.41133",
        variant="rocm6.2",
        distribution="torch",
        is_gpu_build=True,
        source="torch/version.py",
    )
    result = run(machine(gpus=["RTX 3090"], driver="535.183.01", frameworks=[rocm]))
    finding = only(result, "framework-rocm-build")
    assert finding.severity == "error" and finding.cause == "mps_or_rocm_specific"
    assert finding.fix and "torch==2.5.1+cu121" in finding.fix.commands[0]
    torch_layer = next(layer for layer in result.layers if layer.key == "framework:torch")
    assert torch_layer.verdict == "error"


def _jax(cuda: str | None) -> list[FrameworkBuild]:
    jax = FrameworkBuild(
        "jax",
        "0.6.2",
        cuda,
        variant="cuda12" if cuda else "cpu",
        distribution="jax",
        is_gpu_build=cuda is not None,
        source="jax/version.py",
    )
    jaxlib = FrameworkBuild(
        "jaxlib", "0.6.2", None, variant="cpu", distribution="jaxlib", is_gpu_build=False
    )
    return [jax, jaxlib]


def test_jax_with_its_cuda_plugin_is_not_a_cpu_build() -> None:
    snap = machine(
        gpus=["RTX 3090"],
        driver="535.183.01",
        frameworks=_jax("12"),
        dists=[dist("jax-cuda12-plugin", "0.6.2"), dist("jax-cuda12-pjrt", "0.6.2")],
    )
    assert [f.rule for f in run(snap).findings if f.severity == "error"] == []


def test_cpu_jax_fix_installs_what_the_plan_picks_for_that_release() -> None:
    # driver 580 runs CUDA 13, but jax 0.6.2 has no cuda13 extra: the fix must not invent one
    snap = machine(gpus=["RTX 3090"], driver="580.65.06", frameworks=_jax(None))
    finding = only(run(snap), "framework-cpu-build")
    assert finding.fix is not None
    [command] = finding.fix.commands
    plan = make_plan(request_from_arguments(["jax==0.6.2"]), snap, default_kb())
    wanted = [p.requirement for p in plan.envs[0].packages]
    assert "jax[cuda12]==0.6.2" in wanted
    assert shlex.split(command)[4:] == wanted


def test_an_old_tensorflow_cpu_is_not_given_an_extra_it_lacks() -> None:
    tf = FrameworkBuild(
        "tensorflow", "2.12.0", None, distribution="tensorflow-cpu", is_gpu_build=False
    )
    finding = only(
        run(machine(gpus=["RTX 3090"], driver="535.183.01", frameworks=[tf])), "framework-cpu-build"
    )
    assert finding.fix is not None
    assert finding.fix.commands[-1].endswith("pip install tensorflow==2.12.0")
    assert "cuDNN" in finding.fix.summary  # the system libraries it needs


def test_every_error_sits_on_a_floor_of_the_stack() -> None:
    jaxlib = FrameworkBuild("jaxlib", "0.4.30", None, distribution="jaxlib", is_gpu_build=False)
    result = run(machine(gpus=["RTX 3090"], driver="535.183.01", frameworks=[jaxlib]))
    finding = only(result, "framework-cpu-build")
    [floor] = [layer for layer in result.layers if layer.key == finding.layer]
    assert floor.verdict == "error"


# ---- the driver and the facts themselves ----------------------------------------------------


def test_a_driver_that_lists_no_gpu_is_an_error() -> None:
    snap = machine(
        driver="550.54.15",
        frameworks=[torch_build("2.5.1", "12.4")],
        failures=[("no_devices", "nvidia-smi")],
    )
    finding = only(run(snap), "driver-lists-no-gpu")
    assert finding.severity == "error" and finding.cause == "no_driver"
    gpu = next(layer for layer in run(snap).layers if layer.key == "gpu")
    assert gpu.verdict == "error"


@pytest.mark.parametrize("version", ["2.x", "", "+cu121", "abc+cpu", "2"])
def test_unreadable_torch_versions_are_not_pinned(version: str) -> None:
    cpu = FrameworkBuild(
        "torch", version, None, variant="cpu", distribution="torch", is_gpu_build=False
    )
    cuda = replace(cpu, framework_cuda="12.1", variant="cu121", is_gpu_build=True)
    for build in (cpu, cuda):
        result = run(machine(gpus=["RTX 3090"], driver="535.183.01", frameworks=[build]))
        for finding in result.findings:
            assert "  " not in finding.title
            for command in finding.fix.commands if finding.fix else ():
                assert f"torch=={version} " not in command + " "
    finding = only(
        run(machine(gpus=["RTX 3090"], driver="535.183.01", frameworks=[cpu])),
        "framework-cpu-build",
    )
    assert finding.fix and "could not be read" in finding.fix.summary


def test_a_source_build_of_a_release_is_fixed_with_that_release() -> None:
    build = torch_build("2.5.1a0+git1f2e3d4", None, "cpu")
    finding = only(
        run(machine(gpus=["RTX 3090"], driver="535.183.01", frameworks=[build])),
        "framework-cpu-build",
    )
    assert finding.fix and "torch==2.5.1+cu121" in finding.fix.commands[0]


# ---- CUDA library wheels under extras --------------------------------------------------------

TF_AND_CUDA = [
    'nvidia-cudnn-cu12==8.9.7.29; extra == "and-cuda"',
    'nvidia-cublas-cu12==12.3.4.1; extra == "and-cuda"',
    "numpy>=1.23.5",
]
TORCH_PINS = ['nvidia-cudnn-cu12==9.1.0.70; platform_system == "Linux"']


def _tf(version: str = "2.16.1") -> FrameworkBuild:
    return FrameworkBuild(
        "tensorflow", version, "12.3", "8.9", distribution="tensorflow", is_gpu_build=True
    )


def test_tensorflow_and_cuda_pins_are_read_from_its_extra() -> None:
    # real metadata keeps the [and-cuda] pins under `extra == "and-cuda"`; installed wheels of
    # that extra show it was asked for, so torch's cuDNN 9 and TF's cuDNN 8 collide
    snap = machine(
        gpus=["RTX 3090"],
        driver="550.54.15",
        frameworks=[torch_build("2.4.1", "12.1"), _tf()],
        dists=[
            dist("torch", "2.4.1", TORCH_PINS),
            dist("tensorflow", "2.16.1", TF_AND_CUDA),
            dist("nvidia-cudnn-cu12", "9.1.0.70"),
            dist("nvidia-cublas-cu12", "12.3.4.1"),
        ],
    )
    result = run(snap)
    finding = only(result, "frameworks-conflict")
    assert finding.cause == "cudnn_mismatch"
    # no fix that installs one framework's cuDNN over the other's
    assert not [f for f in result.findings if f.rule == "cuda-wheel-missing"]
    assert finding.fix is not None
    commands = " ; ".join(finding.fix.commands)
    assert "tensorflow[and-cuda]==2.16.1" in commands
    assert "torch==2.4.1+cu" in commands


def test_tensorflow_without_its_cuda_extra_or_system_cudnn_is_flagged() -> None:
    snap = machine(
        gpus=["RTX 3090"],
        driver="550.54.15",
        frameworks=[_tf()],
        dists=[dist("tensorflow", "2.16.1", TF_AND_CUDA)],
    )
    finding = only(run(snap), "cuda-wheel-missing")
    assert finding.severity == "warning" and finding.cause == "missing_cuda_lib"
    assert finding.fix and finding.fix.commands[0].endswith("'tensorflow[and-cuda]==2.16.1'")


def test_a_system_cudnn_stands_in_for_the_extra() -> None:
    cudnn = LibraryFacts("libcudnn.so.8", "/usr/lib/x86_64-linux-gnu/libcudnn.so.8", "ldconfig")
    snap = machine(
        gpus=["RTX 3090"],
        driver="550.54.15",
        frameworks=[_tf()],
        dists=[dist("tensorflow", "2.16.1", TF_AND_CUDA)],
        libraries=[cudnn],
    )
    assert not [f for f in run(snap).findings if f.rule == "cuda-wheel-missing"]


def test_separate_envs_get_gpu_builds_not_bare_names() -> None:
    jax_pins = ['nvidia-cudnn-cu12==9.8.0.87; extra == "with-cuda"']
    jax = FrameworkBuild(
        "jax", "0.6.2", "12", variant="cuda12", distribution="jax-cuda12-plugin", is_gpu_build=True
    )
    snap = machine(
        gpus=["RTX 3090"],
        driver="550.54.15",
        frameworks=[torch_build("2.4.1", "12.1"), jax],
        dists=[
            dist("torch", "2.4.1", TORCH_PINS),
            dist("jax-cuda12-plugin", "0.6.2", jax_pins),
            dist("nvidia-cudnn-cu12", "9.1.0.70"),
        ],
    )
    finding = only(run(snap), "frameworks-conflict")
    assert finding.fix is not None
    installs = [c for c in finding.fix.commands if "pip install" in c]
    assert any("jax[cuda12]==0.6.2" in c for c in installs), installs
    assert not any(c.endswith("pip install jax") for c in installs)


@pytest.mark.network
def test_pip_only_fixes_name_wheels_the_index_has() -> None:
    from tests.index_check import unavailable

    tf_old = FrameworkBuild(
        "tensorflow", "2.12.0", None, distribution="tensorflow-cpu", is_gpu_build=False
    )
    machines = [
        machine(gpus=["RTX 3090"], driver="580.65.06", frameworks=_jax(None)),
        machine(gpus=["RTX 3090"], driver="535.183.01", frameworks=[tf_old]),
        machine(
            gpus=["RTX 3090"],
            driver="550.54.15",
            frameworks=[_tf()],
            dists=[dist("tensorflow", "2.16.1", TF_AND_CUDA)],
        ),
    ]
    for snap in machines:
        commands = [c for f in run(snap).findings if f.fix for c in f.fix.commands]
        installs = [c for c in commands if " -m pip install " in c]
        assert installs
        for command in installs:
            words = shlex.split(command)
            requirements = [w for w in words[4:] if not w.startswith("-")]
            assert unavailable(requirements, "3.11", "linux-x86_64") == [], command


@pytest.mark.parametrize(
    ("gpus", "driver", "platform", "version"),
    [
        (["RTX 3090"], "535.183.01", None, "2.5.1"),
        (["GTX 1080 Ti"], "470.256.02", None, "2.5.1"),
        (["RTX 4090"], "551.78", "windows-x86_64", "2.5.1"),
        (["RTX 5090"], "570.124.06", None, "2.8.0"),
        (["Tesla V100-SXM2-16GB", "A100-SXM4-80GB"], "570.124.06", None, "2.11.0"),
    ],
)
def test_the_cpu_torch_fix_installs_what_plan_picks_for_that_release(
    gpus: list[str], driver: str, platform: str | None, version: str
) -> None:
    snap = machine(
        gpus=gpus,
        driver=driver,
        platform=platform,
        frameworks=[torch_build(f"{version}+cpu", None, "cpu")],
    )
    finding = only(run(snap), "framework-cpu-build")
    plan = make_plan(request_from_arguments([f"torch=={version}"]), snap, default_kb())
    assert plan.fits, plan.unplaced
    [torch] = [p for p in plan.envs[0].packages if p.framework == "torch"]
    assert finding.fix is not None
    [command] = finding.fix.commands
    assert f"torch=={torch.version} " in command + " "
    if torch.index_url:
        assert f"--extra-index-url {torch.index_url}" in command


def test_a_cpu_torch_on_apple_silicon_is_not_an_error() -> None:
    result = run(machine(platform="macos-arm64", frameworks=[torch_build("2.8.0", None, "cpu")]))
    assert not result.has_error
    assert [f.rule for f in result.findings] == ["apple-mps"]


def test_a_snapshot_without_a_python_env_still_gets_a_verdict() -> None:
    snap = replace(machine(gpus=["RTX 3090"], driver="535.183.01"), python_env=None)
    result = run(snap)
    assert not result.has_error
    python = next(layer for layer in result.layers if layer.key == "python")
    assert python.verdict == "unknown"


def test_a_gpu_name_the_kb_does_not_know_is_no_crash() -> None:
    from gpuenv.facts import GpuFacts

    snap = machine(driver="570.124.06", frameworks=[torch_build("2.6.0", "12.4")])
    unknown = GpuFacts(0, "NVIDIA Graphics Device", "nvml", pci_device_id="0xffff")
    result = run(replace(snap, gpus=(unknown,)))
    gpu = next(layer for layer in result.layers if layer.key == "gpu")
    assert gpu.summary == "NVIDIA Graphics Device" and "compute capability ?" in gpu.details[0]
