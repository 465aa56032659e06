"""Doctor rules of issue 7 on declared and recorded machines: a GPU beyond its architecture's
last driver branch, a toolkit the driver cannot run, PTX reached only through a newer toolkit's
JIT, JAX's CUDA plugins (driver and architecture), and a generic torch on a Jetson module."""

from __future__ import annotations

import datetime
import json
import shutil
import subprocess
import sys
from dataclasses import replace
from pathlib import Path

import pytest

from gpuenv.diagnose import Diagnosis, diagnose
from gpuenv.facts import BinaryArchFacts, FrameworkBuild, GpuFacts, Snapshot, ToolkitFacts
from gpuenv.kb import KnowledgeBase, default_kb
from gpuenv.probe import _target
from gpuenv.probe.target import parse_target_output
from gpuenv.whatif import WhatIf, apply_what_if
from tests.builders import machine, torch_build
from tests.kbtools import build_row, kb_with
from tests.test_plan_rules import tf_kb
from tests.test_target import dist, write

TODAY = datetime.date(2026, 11, 23)


def run(snapshot: Snapshot, kb: KnowledgeBase | None = None) -> Diagnosis:
    return diagnose(snapshot, kb or default_kb(), TODAY)


def rules(diagnosis: Diagnosis) -> dict[str, str]:
    return {f.rule: f.severity for f in diagnosis.findings}


# ---- driver ceilings ----------------------------------------------------------------------------


def test_a_pascal_gpu_under_r590_is_an_error_whose_fix_is_the_r580_branch() -> None:
    result = run(machine(gpus=["GTX 1080 Ti"], driver="590.44.01"))
    [finding] = [f for f in result.findings if f.rule == "driver-drops-gpu"]
    assert finding.severity == "error" and finding.cause == "gpu_arch_unsupported"
    assert "cannot drive NVIDIA GeForce GTX 1080 Ti" in finding.title and "R580" in finding.title
    assert finding.fix is not None and "R580 branch" in finding.fix.summary
    assert finding.fix.commands == ("sudo apt install nvidia-driver-580", "sudo reboot")
    assert any("Last Driver Support: R580" in c for c in finding.citations)


def test_the_last_branch_itself_is_no_finding() -> None:
    assert "driver-drops-gpu" not in rules(
        run(machine(gpus=["Tesla V100-SXM2-16GB"], driver="580.65.06"))
    )
    assert "driver-drops-gpu" not in rules(run(machine(gpus=["RTX 4090"], driver="595.71.05")))


@pytest.mark.parametrize(
    ("name", "driver", "last"),
    [
        ("Tesla V100", "590.44.01", "R580"),  # a family (PCIe and SXM2, 16 and 32 GB): one CC
        ("GeForce GTX 580", "470.256.02", "R390"),  # Fermi, from the older compute-capability page
        ("GeForce GTX 680", "535.183.01", "R470"),  # Kepler 3.0
    ],
)
def test_a_gpu_known_only_by_a_pasted_name_is_judged_by_its_architecture(
    name: str, driver: str, last: str
) -> None:
    """A GPU named without its compute capability (a pasted report, a sentence) gets the one its
    name stands for, also when the name covers several models that share it."""
    snap = machine(driver=driver)
    snap = replace(snap, gpus=(GpuFacts(index=0, name=name, source="pasted"),))
    [finding] = [f for f in run(snap).findings if f.rule == "driver-drops-gpu"]
    assert f"cannot drive {name}" in finding.title and last in finding.title


def test_a_name_several_architectures_share_gets_no_compute_capability() -> None:
    snap = replace(machine(driver="590.44.01"), gpus=(GpuFacts(0, "Quadro", "pasted"),))
    assert "driver-drops-gpu" not in rules(run(snap))


# ---- a toolkit the driver cannot run -------------------------------------------------------------


def _with_toolkits(snapshot: Snapshot, *found: tuple[str, str, bool]) -> Snapshot:
    toolkits = tuple(
        ToolkitFacts(version, path, "nvcc" if on_path else "version.json", on_path=on_path)
        for version, path, on_path in found
    )
    return replace(snapshot, toolkits=toolkits)


def test_nvcc_13_under_a_cuda_12_2_driver_is_a_warning_naming_what_it_breaks() -> None:
    snap = _with_toolkits(
        machine(gpus=["RTX 3090"], driver="535.183.01"),
        ("13.0.88", "/usr/local/cuda-13.0", True),
    )
    [finding] = [f for f in run(snap).findings if f.rule == "toolkit-newer-than-driver"]
    assert finding.severity == "warning" and finding.cause == "driver_too_old"
    assert "CUDA 13.0" in finding.title and "535.183.01 (CUDA 12.2)" in finding.title
    for breaks in ("torch.utils.cpp_extension", "Triton", "ptxas", "JIT"):
        assert breaks in finding.why
    assert finding.fix is not None and "≥ 580.65.06" in finding.fix.summary
    assert "sudo apt install nvidia-driver-580" in finding.fix.commands
    # a CUDA 12.6 toolkit (torch cu126's) builds extensions this driver runs: not only ≤ 12.2
    assert "CUDA ≤ 12.2; a newer CUDA 12.x runs under minor-version compatibility" in (
        finding.fix.summary
    )


def test_a_toolkit_the_driver_runs_is_named_in_the_fix() -> None:
    snap = _with_toolkits(
        machine(gpus=["RTX 3090"], driver="535.183.01"),
        ("13.0.88", "/usr/local/cuda-13.0", True),
        ("12.2.140", "/usr/local/cuda-12.2", False),
    )
    [finding] = [f for f in run(snap).findings if f.rule == "toolkit-newer-than-driver"]
    assert finding.fix is not None and "/usr/local/cuda-12.2" in finding.fix.summary
    assert finding.fix.commands[0] == (
        "export CUDA_HOME=/usr/local/cuda-12.2 PATH=/usr/local/cuda-12.2/bin:$PATH"
    )


@pytest.mark.parametrize(("version", "expected"), [("12.4.131", "info"), ("12.2.140", None)])
def test_a_toolkit_under_minor_version_compatibility_is_information_and_an_equal_one_nothing(
    version: str, expected: str | None
) -> None:
    snap = _with_toolkits(
        machine(gpus=["RTX 3090"], driver="535.183.01"), (version, "/usr/local/cuda", True)
    )
    assert rules(run(snap)).get("toolkit-newer-than-driver") == expected


@pytest.mark.real
def test_this_machines_real_nvcc_under_a_declared_535_driver(tmp_path: Path) -> None:
    """The real nvcc 13.0 of this machine, with the driver declared as 535.183.01."""
    if shutil.which("nvcc") is None:
        pytest.skip("no nvcc on this machine")
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "gpuenv",
            "doctor",
            "--driver",
            "535.183.01",
            "--gpu",
            "RTX 3090",
            "--json",
        ],
        capture_output=True,
        text=True,
        timeout=300,
    )
    document = json.loads(done.stdout)
    found = {f["rule"]: f for f in document["findings"]}
    finding = found["toolkit-newer-than-driver"]
    assert finding["severity"] == "warning" and "nvcc 13.0" in finding["title"]


# ---- PTX JIT ------------------------------------------------------------------------------------


def _tf(
    capabilities: str | None = "sm_60,sm_70,sm_80,sm_89,compute_90", version: str = "2.16.1"
) -> FrameworkBuild:
    details = {"cuda_compute_capabilities": capabilities} if capabilities else {}
    return FrameworkBuild(
        "tensorflow",
        version,
        "12.3",
        cudnn_version="8.9",
        distribution="tensorflow",
        is_gpu_build=True,
        source="tensorflow/python/platform/build_info.py",
        details=details,
    )


def test_tensorflow_reaching_h100_only_through_cuda_12_3_ptx_under_driver_535() -> None:
    result = run(machine(gpus=["H100"], driver="535.183.01", frameworks=[_tf()]))
    [finding] = [f for f in result.findings if f.rule == "ptx-jit-needs-newer-driver"]
    assert finding.severity == "error" and finding.cause == "driver_too_old"
    assert "only through PTX built with CUDA 12.3" in finding.title
    assert "supports CUDA 12.2" in finding.title
    assert "minor-version compatibility does not extend to PTX" in finding.why
    assert "CUDA_ERROR_UNSUPPORTED_PTX_VERSION" in finding.why
    where = {e.fact: e.source for e in finding.evidence}
    assert "build_info" in where["compiled architectures"]
    assert finding.fix is not None and "≥ 545.23.06" in finding.fix.summary


def test_the_fatbin_scan_comes_before_what_the_build_declares() -> None:
    scan = BinaryArchFacts(
        "/env/tensorflow/libtensorflow_framework.so.2", "tensorflow", ("sm_80", "sm_90"), ()
    )
    snap = machine(gpus=["H100"], driver="535.183.01", frameworks=[_tf()])
    assert "ptx-jit-needs-newer-driver" not in rules(run(replace(snap, binaries=(scan,))))


def test_without_facts_of_its_own_the_kb_row_read_from_the_wheel_decides() -> None:
    kb = kb_with(
        {("binaries", "build"): [build_row("tensorflow", "2.16.1", "12.3", ("8.0",), ["9.0"])]}
    )
    snap = machine(gpus=["H100"], driver="535.183.01", frameworks=[_tf(None)])
    [finding] = [f for f in run(snap, kb).findings if f.rule == "ptx-jit-needs-newer-driver"]
    assert any("binaries" in e.source or "test" in e.source for e in finding.evidence)
    unknown = machine(gpus=["H100"], driver="535.183.01", frameworks=[_tf(None, "2.99.0")])
    assert "ptx-jit-needs-newer-driver" not in rules(run(unknown))  # no KB row: cannot tell


def test_the_packaged_kb_knows_each_tensorflow_release_from_its_wheel_or_build_file() -> None:
    """2.16.1's wheel was read (binaries.toml); 2.17.0's build file declares its archs
    (wheels.toml build_archs): either way H100 is reached only through PTX of CUDA 12.3."""
    for version in ("2.16.1", "2.17.0"):
        snap = machine(gpus=["H100"], driver="535.183.01", frameworks=[_tf(None, version)])
        [finding] = [f for f in run(snap).findings if f.rule == "ptx-jit-needs-newer-driver"]
        assert "only through PTX built with CUDA 12.3" in finding.title
        sources = {e.fact: e.source for e in finding.evidence}
        assert sources["compiled architectures"].startswith("kb: ")


@pytest.mark.parametrize(("gpu", "driver"), [("H100", "545.23.06"), ("A100", "535.183.01")])
def test_a_driver_of_the_ptx_release_or_a_gpu_with_sass_is_fine(gpu: str, driver: str) -> None:
    result = run(machine(gpus=[gpu], driver=driver, frameworks=[_tf()]))
    assert "ptx-jit-needs-newer-driver" not in rules(result)
    assert "gpu-arch-unsupported" not in rules(result)


def test_the_fix_is_a_build_the_plan_checked_when_the_kb_knows_one() -> None:
    kb = tf_kb()  # every TensorFlow release with its wheel's code
    snap = machine(gpus=["H100"], driver="535.183.01", frameworks=[_tf()], python_version="3.11.9")
    [finding] = [f for f in run(snap, kb).findings if f.rule == "ptx-jit-needs-newer-driver"]
    assert finding.fix is not None
    assert any("tensorflow[and-cuda]==2.15.1" in c for c in finding.fix.commands)
    assert "or upgrade the driver to ≥ 545.23.06" in finding.fix.summary


def test_with_no_release_that_runs_only_the_driver_upgrade_is_offered() -> None:
    """On Python 3.12 every TensorFlow release the KB knows reaches H100 through PTX newer than
    a CUDA 12.2 driver (2.15 has no cp312 wheel): only the driver upgrade is sure."""
    snap = machine(gpus=["H100"], driver="535.183.01", frameworks=[_tf()], python_version="3.12.4")
    [finding] = [f for f in run(snap).findings if f.rule == "ptx-jit-needs-newer-driver"]
    assert finding.fix is not None and finding.fix.summary.startswith("Upgrade the driver")


def test_the_packaged_kb_offers_the_release_it_checked() -> None:
    snap = machine(gpus=["H100"], driver="535.183.01", frameworks=[_tf()])
    [finding] = [f for f in run(snap).findings if f.rule == "ptx-jit-needs-newer-driver"]
    assert finding.fix is not None
    assert finding.fix.commands == (
        "/home/u/venv/bin/python -m pip install 'tensorflow[and-cuda]==2.15.1'",
    )


# ---- JAX: the plugin is the CUDA build --------------------------------------------------------


def _jax_env(tmp: Path, major: int, version: str = "0.7.2") -> Snapshot:
    plugin = f"jax-cuda{major}-plugin"
    runtime = "nvidia-cuda-runtime" if major >= 13 else f"nvidia-cuda-runtime-cu{major}"
    dist(tmp, "jax", version, (f"jaxlib<={version},>={version}",))
    dist(tmp, "jaxlib", version)
    dist(
        tmp,
        plugin,
        version,
        (f"jax-cuda{major}-pjrt=={version}", f'{runtime}>={major}.0.48; extra == "with-cuda"'),
        top_level=(f"jax_cuda{major}_plugin",),
    )
    dist(tmp, f"jax-cuda{major}-pjrt", version, top_level=("jax_plugins",))
    write(tmp, "jax/version.py", f'_version = "{version}"\n')
    write(tmp, "jaxlib/version.py", f'_version = "{version}"\n')
    probed = parse_target_output(json.dumps(_target.collect(sites=[str(tmp)])), "python3")
    return replace(machine(), python_env=replace(probed.env, python_version="3.12.4"))


def _declared(snapshot: Snapshot, gpu: str, driver: str) -> Snapshot:
    return apply_what_if(snapshot, WhatIf(driver=driver, gpus=(gpu,)), default_kb())


def test_the_jax_cuda13_plugin_on_a_cuda_12_8_driver_is_driver_too_old(tmp_path: Path) -> None:
    snap = _declared(_jax_env(tmp_path, 13), "RTX 4090", "570.124.06")
    result = run(snap)
    [finding] = [f for f in result.findings if f.cause == "driver_too_old"]
    assert finding.rule == "driver-too-old" and finding.layer == "framework:jax"
    assert "jax-cuda13-plugin 0.7.2" in finding.title and "CUDA 13.0" in finding.title
    assert finding.fix is not None
    remove, install = finding.fix.commands
    assert remove.startswith("python3 -m pip uninstall -y ")
    assert set(remove.split()[5:]) == {"jax-cuda13-plugin", "jax-cuda13-pjrt"}
    assert "'jax[cuda12]==0.7.2'" in install and "'jax-cuda12-plugin[with-cuda]==0.7.2'" in install
    assert "≥ 580.65.06" in finding.fix.summary


def test_the_jax_cuda13_plugin_on_a_v100_is_gpu_arch_unsupported(tmp_path: Path) -> None:
    snap = _declared(_jax_env(tmp_path, 13), "Tesla V100-SXM2-16GB", "580.65.06")
    [finding] = [f for f in run(snap).findings if f.cause == "gpu_arch_unsupported"]
    assert finding.severity == "error" and finding.layer == "framework:jax"
    assert "CUDA 13.0, which cannot compile for Tesla V100" in finding.title
    assert finding.fix is not None
    assert any("jax-cuda12-plugin[with-cuda]==0.7.2" in c for c in finding.fix.commands)


def test_the_plugins_own_fatbin_decides_the_architecture(tmp_path: Path) -> None:
    snap = _declared(_jax_env(tmp_path, 13), "Tesla V100-SXM2-16GB", "580.65.06")
    scan = BinaryArchFacts(
        "/env/jax_plugins/xla_cuda13/xla_cuda_plugin.so",
        "jax-cuda13-pjrt",
        ("sm_75", "sm_80", "sm_90", "sm_100", "sm_120"),
        ("compute_120",),
    )
    [finding] = [
        f
        for f in run(replace(snap, binaries=(scan,))).findings
        if f.cause == "gpu_arch_unsupported"
    ]
    assert "fatbin of /env/jax_plugins/xla_cuda13/xla_cuda_plugin.so" in [
        e.source for e in finding.evidence
    ]


def test_jax_with_a_plugin_is_shown_as_a_cuda_build_and_fits_a_new_driver(tmp_path: Path) -> None:
    snap = _declared(_jax_env(tmp_path, 13), "RTX 4090", "580.65.06")
    result = run(snap)
    assert not [f for f in result.findings if f.layer in ("framework:jax", "framework:jaxlib")]
    layers = {layer.name: layer for layer in result.layers}
    assert "CPU-only" not in layers["jaxlib"].summary
    assert "CUDA 13.0 through jax-cuda13-plugin 0.7.2" in layers["jaxlib"].summary
    assert layers["jax"].verdict == "ok"


# ---- Jetson ---------------------------------------------------------------------------------


def test_a_generic_torch_on_a_declared_jetson_module_is_an_error() -> None:
    snap = machine(
        gpus=["Jetson AGX Orin"],
        platform="linux-aarch64",
        frameworks=[torch_build("2.5.1", "12.4")],
    )
    [finding] = [f for f in run(snap).findings if f.rule == "jetson-generic-wheel"]
    assert finding.severity == "error" and finding.cause == "wrong_platform_wheel"
    assert finding.fix is not None and "6.2" in finding.fix.notes[0]


def test_with_its_jetpack_the_fix_is_nvidias_wheel_as_the_plan_picks_it() -> None:
    snap = machine(
        gpus=["Jetson AGX Orin"],
        platform="linux-aarch64",
        frameworks=[torch_build("2.5.1", "12.4")],
    )
    snap = apply_what_if(snap, WhatIf(jetpack="6.1", python_version="3.10"), default_kb())
    [finding] = [f for f in run(snap).findings if f.rule == "jetson-generic-wheel"]
    assert finding.fix is not None
    [command] = finding.fix.commands
    assert ".nv24.08" in command and "--find-links" in command and "/jp/v61/" in command


def test_the_doctors_jax_fix_installs_exactly_what_gpuenv_plan_picks(tmp_path: Path) -> None:
    """Doctor and plan agree: the fix is the plan engine's choice on the same snapshot."""
    from gpuenv.plan.request import request_from_arguments
    from gpuenv.plan.resolve import make_plan

    snap = _declared(_jax_env(tmp_path, 13), "RTX 4090", "570.124.06")
    [finding] = [f for f in run(snap).findings if f.rule == "driver-too-old"]
    planned = make_plan(request_from_arguments(["jax==0.7.2"]), snap, default_kb())
    assert finding.fix is not None
    install = finding.fix.commands[-1].split()
    assert install[:4] == ["python3", "-m", "pip", "install"]
    assert {word.strip("'") for word in install[4:]} == {p.requirement for p in planned.packages()}


# ---- TensorFlow compiles for the GPU it finds with its own CUDA -------------------------------


def test_tensorflow_built_with_cuda_12_5_on_an_rtx_5090_is_gpu_arch_unsupported() -> None:
    """Its compute_90 PTX would JIT on a CUDA 13.0 driver, but TensorFlow compiles kernels for
    the GPU at run time with its own CUDA 12.5, which cannot target sm_120."""
    tf = replace(_tf(), version="2.20.0", framework_cuda="12.5.1")
    result = run(machine(gpus=["RTX 5090"], driver="580.65.06", frameworks=[tf]))
    [finding] = [f for f in result.findings if f.rule == "gpu-newer-than-framework-cuda"]
    assert finding.cause == "gpu_arch_unsupported" and finding.severity == "error"
    assert "(sm_120) with its own CUDA 12.5" in finding.title
    assert finding.fix is not None and "NGC" in finding.fix.summary
    sources = {e.fact: e.source for e in finding.evidence}
    assert "tensorflow#111958" in sources["runs kernels compiled with"]
    assert "ptx-jit-needs-newer-driver" not in rules(result)


def test_a_gpu_the_build_cuda_knows_is_not_flagged() -> None:
    tf = replace(_tf(), version="2.20.0", framework_cuda="12.5.1")
    for gpu in ("H100", "RTX 4090"):
        result = run(machine(gpus=[gpu], driver="580.65.06", frameworks=[tf]))
        assert "gpu-newer-than-framework-cuda" not in rules(result)


def test_a_gpu_family_of_one_segment_keeps_it_for_the_lifecycle_rule() -> None:
    """'--gpu H100' names the PCIe, SXM and NVL models, all data-center: R535's end of life
    (June 2026) is said as for a named model."""
    for gpu in ("H100", "NVIDIA H100 PCIe"):
        snap = machine(gpus=[gpu], driver="535.183.01")
        found = diagnose(snap, default_kb(), datetime.date(2026, 11, 23))
        assert "driver-branch-eol" in rules(found), gpu
