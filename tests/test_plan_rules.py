"""Planning rules of issue 7, each on a declared or recorded machine: a Jetson module implies
Jetson, PTX JIT needs the driver of the PTX's own CUDA, a GPU beyond its architecture's last
driver branch is no machine, and shared envs keep the newest pair that truly coexists."""

from __future__ import annotations

import json

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from gpuenv.errors import GpuenvError
from gpuenv.kb import KnowledgeBase, default_kb
from gpuenv.kb.query.cuda import coverage, driver_max_cuda, toolkit_min_driver
from gpuenv.plan.model import FITS, NO_FIT, Plan, plan_to_dict
from gpuenv.plan.request import request_from_arguments
from gpuenv.plan.resolve import make_plan
from gpuenv.probe import ProbeOptions, probe_machine
from gpuenv.probe.access import RecordedMachine
from gpuenv.render.installers import render_installer
from gpuenv.render.plan_text import render_plan_json, render_plan_text
from gpuenv.versions import ComputeCapability, CudaVersion, DriverVersion
from gpuenv.whatif import WhatIf, apply_what_if, declared_snapshot
from tests.conftest import MACHINES
from tests.kbtools import build_row, kb_with

TF_HOPPER_PTX = ("6.0", "7.0", "8.0", "8.9")  # SASS; 9.0 reached only through compute_90 PTX


def plan(wants: tuple[str, ...], kb: KnowledgeBase | None = None, **flags: object) -> Plan:
    kb = kb or default_kb()
    what_if = WhatIf(
        driver=flags.get("driver"),  # type: ignore[arg-type]
        gpus=tuple(flags.get("gpus", ())),  # type: ignore[call-overload]
        python_version=flags.get("python"),  # type: ignore[arg-type]
        platform=flags.get("platform"),  # type: ignore[arg-type]
        jetpack=flags.get("jetpack"),  # type: ignore[arg-type]
    )
    snapshot = declared_snapshot(what_if, kb)
    return make_plan(
        request_from_arguments(wants), snapshot, kb, str(flags.get("installer", "pip"))
    )


def tf_kb() -> KnowledgeBase:
    """TensorFlow wheels as read from their fatbins: 2.16+ reach Hopper only through compute_90
    PTX (built with CUDA 12.3, from 2.18 with 12.5); 2.15 has SASS up to sm_80 plus compute_90."""
    rows = [
        build_row("tensorflow", v, "12.3", TF_HOPPER_PTX, ["9.0"]) for v in ("2.16.1", "2.16.2")
    ]
    rows += [
        build_row("tensorflow", v, "12.3", TF_HOPPER_PTX, ["9.0"]) for v in ("2.17.0", "2.17.1")
    ]
    rows += [
        build_row("tensorflow", v, "12.5", TF_HOPPER_PTX, ["9.0"])
        for v in ("2.18.0", "2.18.1", "2.19.0", "2.19.1", "2.20.0", "2.21.0")
    ]
    rows += [build_row("tensorflow", "2.15.1", "12.2", ("5.0", "6.0", "7.0", "8.0"), ["9.0"])]
    return kb_with({("binaries", "build"): rows})


# ---- 1. a Jetson module implies Jetson ----------------------------------------------------------


def test_a_jetson_gpu_without_a_jetpack_stops_and_lists_the_releases_it_supports() -> None:
    with pytest.raises(GpuenvError) as stopped:
        plan(("torch",), gpus=("Jetson AGX Orin",), platform="linux-aarch64")
    error = stopped.value
    assert error.code == "jetpack-unknown"
    assert '--gpu "Jetson AGX Orin"' in error.message and "generic aarch64" in error.message
    hint = error.hints[0]
    assert "--jetpack" in hint and "5.0.2" in hint and "6.2" in hint
    assert "4.6.1" not in hint  # JetPack 4 does not run on Orin


def test_a_jetson_gpu_with_its_jetpack_gets_nvidias_wheel_never_the_generic_one() -> None:
    result = plan(("torch",), gpus=("Jetson AGX Orin",), jetpack="6.1")
    [torch] = [p for p in result.packages() if p.name == "torch"]
    assert torch.build == "jetson" and ".nv24" in torch.version
    assert torch.find_links and "/jp/v61/" in torch.find_links
    assert result.target.platform == "linux-aarch64"


def test_a_jetpack_that_does_not_run_on_the_declared_module_is_no_machine() -> None:
    with pytest.raises(GpuenvError) as stopped:
        plan(("torch",), gpus=("Jetson AGX Orin",), jetpack="4.6.1")
    assert stopped.value.code == "impossible-machine"
    assert "--jetpack 4.6.1" in stopped.value.message


def test_the_recorded_jetson_infers_jetpack_from_its_l4t_release() -> None:
    snapshot = probe_machine(
        RecordedMachine.load(MACHINES / "jetson_orin_jp6"), ProbeOptions(probe_python=False)
    )
    result = make_plan(request_from_arguments(["torch"]), snapshot, default_kb())
    assert result.target.jetpack == "6.2"
    candidates = [r.candidate for u in result.unplaced for r in u.rejected]
    candidates += [p.version for p in result.packages()]
    assert candidates and all("jetson" in c or ".nv" in c for c in candidates)


def test_an_l4t_release_the_kb_does_not_know_stops_with_the_question() -> None:
    snapshot = probe_machine(
        RecordedMachine.load(MACHINES / "jetson_orin_jp6"), ProbeOptions(probe_python=False)
    )
    jetson = snapshot.host.jetson.value
    assert jetson is not None
    from dataclasses import replace

    unknown = replace(jetson, l4t_release="37.9.9", jetpack=None)
    host = replace(snapshot.host, jetson=replace(snapshot.host.jetson, value=unknown))
    with pytest.raises(GpuenvError) as stopped:
        make_plan(request_from_arguments(["torch"]), replace(snapshot, host=host), default_kb())
    assert stopped.value.code == "jetpack-unknown" and "37.9.9" in stopped.value.message


# ---- 3. driver ceilings per architecture --------------------------------------------------------


@pytest.mark.parametrize(
    ("gpu", "driver", "last"),
    [("Tesla K80", "580.65.06", "R470"), ("P100", "590.44.01", "R580")],
)
def test_a_gpu_beyond_its_last_driver_branch_is_no_machine(
    gpu: str, driver: str, last: str
) -> None:
    with pytest.raises(GpuenvError) as stopped:
        plan(("torch",), gpus=(gpu,), driver=driver, python="3.11")
    error = stopped.value
    assert error.code == "impossible-machine"
    assert f'--gpu "{gpu}"' in error.message and f"--driver {driver}" in error.message
    assert f"{last} is the last driver branch" in error.message
    assert f"--driver {last[1:]}." in error.hints[0]


def test_windows_driver_numbers_are_read_as_their_branch() -> None:
    with pytest.raises(GpuenvError) as stopped:
        plan(("torch",), gpus=("Tesla K80",), driver="581.42", platform="windows-x86_64")
    assert "(R580)" in stopped.value.message


def test_the_last_branch_itself_still_drives_the_gpu() -> None:
    result = plan(("torch",), gpus=("Tesla K80",), driver="470.256.02", python="3.10")
    assert result.verdict == FITS
    [torch] = [p for p in result.packages() if p.name == "torch"]
    assert "sm_37" in torch.sass


def test_a_probed_k80_under_r580_gets_no_build_and_the_r470_driver_as_the_change() -> None:
    snapshot = probe_machine(
        RecordedMachine.load(MACHINES / "k80_driver580"), ProbeOptions(probe_python=False)
    )
    snapshot = apply_what_if(snapshot, WhatIf(python_version="3.10"), default_kb())
    result = make_plan(request_from_arguments(["torch"]), snapshot, default_kb())
    assert result.verdict == NO_FIT
    reasons = {r.reason for u in result.unplaced for r in u.rejected if r.rule == "driver"}
    assert any("R470 is the last driver branch for Kepler" in r for r in reasons)
    [change] = [c for c in result.changes if c.kind == "driver"]
    assert change.value == "470" and "R470 branch" in change.text and "cu118 fits" in change.text


# ---- 2. PTX JIT is not covered by minor-version compatibility ----------------------------------


def test_tensorflow_reaching_h100_only_through_newer_ptx_does_not_fit_driver_535() -> None:
    """The issue's example: TF 2.16+ reaches sm_90 only through compute_90 PTX built with CUDA
    12.3 or newer; driver 535 supports CUDA 12.2, and TF 2.15 has no wheel for Python 3.12."""
    result = plan(("tensorflow",), tf_kb(), gpus=("H100",), driver="535.183.01", python="3.12")
    assert result.verdict == NO_FIT
    rejected = {r.candidate: r for u in result.unplaced for r in u.rejected if r.rule == "driver"}
    reason = rejected["tensorflow 2.16.1 and-cuda"].reason
    assert "only through PTX (compute_90) built with CUDA 12.3" in reason
    assert "driver 535.183.01 supports CUDA 12.2" in reason
    assert "minor-version compatibility does not cover PTX" in reason
    assert rejected["tensorflow 2.21.0 and-cuda"].needs == "555.42.02"  # the driver of CUDA 12.5
    [change] = [c for c in result.changes if c.kind == "driver"]
    assert change.value == "545.23.06" and "2.17.1" in change.text  # CUDA 12.3's driver


def test_with_python_311_the_release_whose_ptx_the_driver_can_jit_is_chosen() -> None:
    result = plan(("tensorflow",), tf_kb(), gpus=("H100",), driver="535.183.01", python="3.11")
    [tf] = [p for p in result.packages() if p.name == "tensorflow"]
    assert tf.public_version == "2.15.1"
    assert tf.ptx == ("compute_90",) and tf.ptx_cuda == "12.2"
    passed = [r for r in tf.rejected if "PTX" in r.reason]
    assert {r.candidate for r in passed} >= {
        "tensorflow 2.21.0 and-cuda",
        "tensorflow 2.16.1 and-cuda",
    }


def test_a_driver_of_the_ptx_release_admits_it_and_the_plan_names_that_driver() -> None:
    result = plan(("tensorflow",), tf_kb(), gpus=("H100",), driver="560.35.03", python="3.12")
    [tf] = [p for p in result.packages() if p.name == "tensorflow"]
    assert tf.public_version == "2.21.0"
    assert tf.min_driver == "555.42.02"  # not the MVC minimum: PTX JIT needs CUDA 12.5's driver
    assert plan_to_dict(result)["envs"][0]["packages"][0]["ptx_cuda"] == "12.5"


def test_ptx_is_checked_only_where_no_sass_runs() -> None:
    """An A100 has sm_80 SASS in every TF build: minor-version compatibility is enough."""
    result = plan(("tensorflow",), tf_kb(), gpus=("A100",), driver="535.183.01", python="3.12")
    [tf] = [p for p in result.packages() if p.name == "tensorflow"]
    assert tf.public_version == "2.21.0" and tf.driver_how == "minor-version-compat"


def test_torch_rows_read_from_the_wheel_are_checked_the_same_way() -> None:
    """torch 2.14.1+cu132 as if its wheel held Hopper only as compute_90 PTX from CUDA 13.2:
    driver 580 (CUDA 13.0) runs that build under minor-version compatibility, not its PTX."""
    rows = [build_row("torch", "2.14.1", "13.2", ("7.5", "8.0", "8.6"), ["9.0"], variant="cu132")]
    kb = kb_with({("binaries", "build"): rows})
    flags = {"gpus": ("H100",), "driver": "580.65.06", "python": "3.12"}
    forced = plan(("torch==2.14.1+cu132",), kb, **flags)
    assert forced.verdict == NO_FIT
    [reason] = [r.reason for u in forced.unplaced for r in u.rejected if r.rule == "driver"]
    assert "only through PTX (compute_90) built with CUDA 13.2" in reason
    # without the row, the curated list (sm_90 SASS) admits it
    assert plan(("torch==2.14.1+cu132",), **flags).verdict == FITS


# PTX property: a KB with PTX-only GPUs, machines drawn over drivers, GPUs and Pythons ----------

PTX_KB = tf_kb()
DRIVERS = ("535.183.01", "545.23.06", "550.54.14", "560.35.03", "570.124.06", "580.65.06")
GPUS = ("H100", "A100", "RTX 4090", "RTX 3090", "Tesla V100-SXM2-16GB")


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    st.sampled_from(DRIVERS),
    st.lists(st.sampled_from(GPUS), min_size=1, max_size=2),
    st.sampled_from(("3.10", "3.11", "3.12")),
    st.lists(st.sampled_from(("tensorflow", "torch", "jax")), min_size=1, max_size=2, unique=True),
)
def test_no_plan_picks_a_build_the_driver_cannot_run_ptx_jit_included(
    driver: str, gpus: list[str], python: str, wants: list[str]
) -> None:
    """Rule: for every planned build and every target GPU it reaches only through PTX, the
    driver's own CUDA is at least the PTX's toolkit; and the plan's driver floor says so."""
    result = plan(tuple(wants), PTX_KB, gpus=tuple(gpus), driver=driver, python=python)
    have = driver_max_cuda(PTX_KB, DriverVersion.parse(driver))  # type: ignore[arg-type]
    assert have is not None
    ccs = [ComputeCapability.parse(t.rsplit("(", 1)[-1].rstrip(")")) for t in result.target.gpus]
    for package in result.packages():
        if not package.sass or not package.ptx or package.cuda is None:
            continue
        sass = [c for c in map(ComputeCapability.parse, package.sass) if c]
        ptx = [c for c in map(ComputeCapability.parse, package.ptx) if c]
        built = CudaVersion.parse(package.ptx_cuda or package.cuda)
        assert built is not None
        for cc in (c for c in ccs if c):
            if coverage(sass, ptx, cc).kind == "ptx-jit":
                assert (have.major, have.minor) >= (built.major, built.minor), package.requirement
                needed = toolkit_min_driver(PTX_KB, built, "linux")
                assert needed is not None and package.min_driver is not None
                assert DriverVersion.parse(package.min_driver) >= needed  # type: ignore[operator]


# ---- 6. joint resolution: unknown pins are no conflict ------------------------------------------


def test_torch_and_jax_on_r580_keep_the_releases_each_gets_alone() -> None:
    flags = {"gpus": ("RTX 4090",), "driver": "580.65.06", "python": "3.12"}
    alone_torch = plan(("torch",), **flags).packages()[0]
    alone_jax = plan(("jax",), **flags).packages()[0]
    both = plan(("torch", "jax"), **flags)
    versions = {p.name: p.public_version for p in both.packages()}
    assert versions["torch"] == alone_torch.public_version == "2.15.0"
    assert versions["jax"] == alone_jax.public_version == "0.12.0.1"
    assert both.tradeoffs == ()
    # the KB has both releases' pins (wheels.toml): they were checked and coexist
    assert not [n for n in both.notes if n.startswith("Unchecked pins")]


def test_known_pins_that_coexist_give_the_same_pair_and_nothing_unchecked() -> None:
    pins = {
        ("wheels", "release"): [
            _wheel("torch", "2.15.0", ["nvidia-cudnn-cu13==9.26.0.51", "nvidia-nccl-cu13==2.30.7"]),
            _wheel("jax-cuda13-plugin", "0.12.0.1", ["nvidia-cudnn-cu13<10.0,>=9.12.0.46"]),
        ]
    }
    kb = kb_with(pins)
    both = plan(("torch", "jax"), kb, gpus=("RTX 4090",), driver="580.65.06", python="3.12")
    versions = {p.name: p.public_version for p in both.packages()}
    assert (versions["torch"], versions["jax"]) == ("2.15.0", "0.12.0.1")
    assert not [n for n in both.notes if n.startswith("Unchecked pins")]


def test_a_known_clash_costs_the_second_framework_and_the_plan_says_which_and_why() -> None:
    """jax 0.12 asking a newer cuDNN than torch 2.15.0 pins: jax falls back to a release
    whose (curated) cuDNN floor torch's pin meets, and the trade-off comes first in the text."""
    clash = {
        ("wheels", "release"): [
            _wheel("torch", "2.15.0", ["nvidia-cudnn-cu13==9.26.0.51"]),
            _wheel("jax-cuda13-plugin", "0.12.0.1", ["nvidia-cudnn-cu13<10.0,>=9.30"]),
            _wheel("jax-cuda13-plugin", "0.12.0", ["nvidia-cudnn-cu13<10.0,>=9.30"]),
            _wheel("jax-cuda12-plugin", "0.12.0.1", ["nvidia-cudnn-cu12<10.0,>=9.30"]),
            _wheel("jax-cuda12-plugin", "0.12.0", ["nvidia-cudnn-cu12<10.0,>=9.30"]),
        ]
    }
    kb = kb_with(clash)
    both = plan(("torch", "jax"), kb, gpus=("RTX 4090",), driver="580.65.06", python="3.12")
    versions = {p.name: p.public_version for p in both.packages()}
    assert versions["torch"] == "2.15.0" and versions["jax"] == "0.11.2"
    [cost] = both.tradeoffs
    assert (cost.package, cost.by) == ("jax", "torch")
    assert "0.11.2 instead of release 0.12.0.1" in cost.cost
    assert "nvidia-cudnn-cu13" in cost.because and "torch 2.15.0" in cost.because
    text = render_plan_text(both, render_installer(both))
    assert text.index("trade-offs:") < text.index("env (Python")
    document = json.loads(render_plan_json(both, render_installer(both), 0))
    assert (
        document["tradeoffs"][0]["package"] == "jax" and document["tradeoffs"][0]["by"] == "torch"
    )


def test_a_cuda_major_tensorflow_forces_is_named_as_torchs_cost() -> None:
    both = plan(("torch", "tensorflow"), gpus=("RTX 4090",), driver="580.65.06", python="3.12")
    [cost] = both.tradeoffs
    assert cost.package == "torch" and cost.by == "tensorflow"
    # torch 2.15.0 has only its CUDA 13.2 build in the KB: the CUDA 12 torch is an older release
    assert cost.alone == "torch 2.15.0 cu132" and cost.chosen == "torch 2.14.1 cu126"
    assert "instead of release 2.15.0" in cost.cost
    assert "built for CUDA 13 while tensorflow" in cost.because


def _wheel(package: str, version: str, pins: list[str]) -> dict[str, object]:
    python = ["cp312", "cp313"] if package != "torch" else ["cp310", "cp311", "cp312", "cp313"]
    return {
        "package": package,
        "version": version,
        "python_tags": python,
        "platforms": ["linux-x86_64", "linux-aarch64"],
        "pins": pins,
        "metadata_read": ["linux-x86_64"],
    }


def test_drawn_joint_plans_never_fall_back_on_unknown_pins_alone() -> None:
    """Two frameworks whose pins are all unknown share an env at their own newest releases
    whenever they share a CUDA major."""
    flags = {"gpus": ("RTX 4090",), "driver": "580.65.06", "python": "3.12"}
    result = plan(("jax", "cupy"), **flags)
    assert result.verdict == FITS
    for package in (p for p in result.packages() if not p.companion_of):
        alone = plan((package.framework,), **flags).packages()[0]
        assert package.public_version == alone.public_version
