"""Planning scenarios of issue 5, each a machine declared with what-if flags (as a GPU-less CI
runner would): the plan must fit the driver, every GPU's architecture, the Python and the platform,
and say why each candidate it passed over was rejected.

`Scenario`, `SCENARIOS` and `plan_for` are shared with the other plan tests."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import pytest
from packaging.version import Version

from gpuenv.kb import default_kb
from gpuenv.kb.query.containers import parse_require_cuda
from gpuenv.kb.query.cuda import coverage
from gpuenv.plan.model import FITS, NO_FIT, PackageChoice, Plan, plan_to_dict
from gpuenv.plan.request import request_from_arguments
from gpuenv.plan.resolve import make_plan
from gpuenv.probe import ProbeOptions, probe_machine
from gpuenv.probe.access import RecordedMachine
from gpuenv.render.installers import Where, render_installer
from gpuenv.versions import ComputeCapability, CudaVersion, DriverVersion
from gpuenv.whatif import WhatIf, declared_snapshot


@dataclass(frozen=True)
class Scenario:
    name: str
    wants: tuple[str, ...]
    driver: str | None = None
    gpus: tuple[str, ...] = ()
    python: str | None = None
    platform: str | None = None
    jetpack: str | None = None
    installer: str = "pip"
    notes: tuple[str, ...] = field(default=(), compare=False)

    def what_if(self) -> WhatIf:
        return WhatIf(
            driver=self.driver,
            gpus=self.gpus,
            python_version=self.python,
            platform=self.platform,
            jetpack=self.jetpack,
        )


def plan_for(scenario: Scenario) -> Plan:
    kb = default_kb()
    snapshot = declared_snapshot(scenario.what_if(), kb)
    return make_plan(request_from_arguments(scenario.wants), snapshot, kb, scenario.installer)


SCENARIOS = {
    "535-rtx3090": Scenario(
        "535-rtx3090", ("torch", "torchvision"), "535.183.01", ("RTX 3090",), "3.11"
    ),
    "470-gtx1080ti": Scenario("470-gtx1080ti", ("torch",), "470.256.02", ("GTX 1080 Ti",), "3.10"),
    "580-rtx5090": Scenario("580-rtx5090", ("torch",), "580.65.06", ("RTX 5090",), "3.12"),
    "550-v100": Scenario("550-v100", ("torch",), "550.54.14", ("Tesla V100-SXM2-16GB",), "3.11"),
    "windows-4090-tf": Scenario(
        "windows-4090-tf",
        ("tensorflow",),
        "551.78",
        ("RTX 4090",),
        "3.10",
        platform="windows-x86_64",
    ),
    "jetson-orin-jp6": Scenario("jetson-orin-jp6", ("torch",), jetpack="6.1"),
    "conda-a100-535": Scenario(
        "conda-a100-535",
        ("torch",),
        "535.183.01",
        ("NVIDIA A100-SXM4-80GB",),
        "3.11",
        installer="conda",
    ),
    "torch-tf-jax": Scenario(
        "torch-tf-jax", ("torch", "tensorflow", "jax"), "570.124.06", ("RTX 4090",), "3.11"
    ),
    "docker-535": Scenario(
        "docker-535", ("torch",), "535.183.01", ("NVIDIA A100-SXM4-80GB",), installer="docker"
    ),
    "tf-535": Scenario("tf-535", ("tensorflow",), "535.183.01", ("RTX 3090",), "3.11"),
    "jax-570": Scenario("jax-570", ("jax",), "570.124.06", ("RTX 4090",), "3.12"),
}


# ---- the scenarios ----------------------------------------------------------------------------


def _torch(plan: Plan) -> PackageChoice:
    assert plan.verdict == FITS, plan.unplaced
    package = plan.envs[0].package("torch")
    assert package is not None
    return package


def _major(cuda: str | None) -> int | None:
    parsed = CudaVersion.parse(cuda) if cuda else None
    return parsed.major if parsed else None


def _covers(package: PackageChoice, cc: str) -> bool:
    gpu = ComputeCapability.parse(cc)
    assert gpu is not None
    sass = [c for c in map(ComputeCapability.parse, package.sass) if c]
    ptx = [c for c in map(ComputeCapability.parse, package.ptx) if c]
    return coverage(sass, ptx, gpu).runs


def _driver_at_most(package: PackageChoice, driver: str) -> bool:
    need = DriverVersion.parse(package.min_driver)
    have = DriverVersion.parse(driver)
    return need is not None and have is not None and need <= have


def test_driver_535_rtx3090_gets_a_cuda12_torch_and_says_why_not_cuda13() -> None:
    plan = plan_for(SCENARIOS["535-rtx3090"])
    torch = _torch(plan)
    assert _major(torch.cuda) == 12
    assert _driver_at_most(torch, "535.183.01") and _covers(torch, "8.6")
    vision = plan.envs[0].package("torchvision")
    assert vision is not None and vision.local_label == torch.local_label
    cuda13 = [r for r in torch.rejected if r.rule == "driver" and "CUDA 13" in r.reason]
    assert cuda13, "the CUDA 13 builds passed over should be listed"
    assert "needs driver ≥ 580" in cuda13[0].reason and "you have 535.183.01" in cuda13[0].reason


def test_driver_470_gtx1080ti_gets_a_cuda11_build_with_pascal_code() -> None:
    plan = plan_for(SCENARIOS["470-gtx1080ti"])
    torch = _torch(plan)
    assert torch.cuda is not None and torch.cuda.startswith("11.")
    assert _covers(torch, "6.1") and _driver_at_most(torch, "470.256.02")
    assert any(r.rule == "arch" and "sm_61" in r.reason for r in torch.rejected)


def test_driver_580_rtx5090_gets_a_build_with_blackwell_code() -> None:
    plan = plan_for(SCENARIOS["580-rtx5090"])
    torch = _torch(plan)
    assert _covers(torch, "12.0") and _driver_at_most(torch, "580.65.06")
    # torch 2.15.0 (the package index's cu132 build) runs on the 580 driver (CUDA 13.0) under
    # minor-version compatibility
    assert torch.version == "2.15.0" and torch.driver_how == "minor-version-compat"
    older = _torch(
        plan_for(Scenario("580-rtx5090-2.14", ("torch<2.15",), "580.65.06", ("RTX 5090",), "3.12"))
    )
    assert _covers(older, "12.0") and older.driver_how == "native"
    assert any(r.rule == "arch" and "sm_120" in r.reason for r in older.rejected)


def test_driver_550_v100_keeps_volta_code_and_rejects_cuda13_for_it() -> None:
    plan = plan_for(SCENARIOS["550-v100"])
    torch = _torch(plan)
    assert _covers(torch, "7.0") and _driver_at_most(torch, "550.54.14")
    cuda13 = [r for r in torch.rejected if "cu13" in r.candidate]
    assert cuda13 and {"driver", "arch"} <= {r.rule for r in cuda13}


def test_windows_rtx4090_tensorflow_is_the_last_native_gpu_release() -> None:
    plan = plan_for(SCENARIOS["windows-4090-tf"])
    tf = plan.envs[0].package("tensorflow")
    assert plan.verdict == FITS and tf is not None
    assert tf.public_version.startswith("2.10.")
    assert tf.system_needs and "cuDNN" in tf.system_needs[0]
    assert any(r.rule == "windows" and "WSL2" in r.reason for r in tf.rejected)


def test_windows_tensorflow_on_python_312_fits_nowhere_and_names_the_changes() -> None:
    scenario = SCENARIOS["windows-4090-tf"]
    plan = plan_for(
        Scenario("w", scenario.wants, scenario.driver, scenario.gpus, "3.12", "windows-x86_64")
    )
    assert plan.verdict == NO_FIT and plan.unplaced[0].package == "tensorflow"
    kinds = {c.kind: c for c in plan.changes}
    assert {"python", "windows"} <= set(kinds)
    assert kinds["python"].value == "3.10" and "WSL2" in kinds["windows"].text


def test_jetson_orin_jetpack6_uses_nvidia_jetson_wheels_never_the_generic_one() -> None:
    plan = plan_for(SCENARIOS["jetson-orin-jp6"])
    torch = _torch(plan)
    assert plan.target.platform == "linux-aarch64" and plan.envs[0].python == "3.10"
    assert torch.find_links and "/redist/jp/" in torch.find_links
    assert torch.local_label is not None and "nv" in torch.local_label
    assert not plan.envs[0].only_default_index


def test_jetpack_without_a_listed_wheel_says_so() -> None:
    plan = plan_for(Scenario("jp513", ("torch",), jetpack="5.1.3"))
    assert plan.verdict == NO_FIT
    assert "L4T" in plan.unplaced[0].rejected[0].reason
    thor = plan_for(Scenario("jp70", ("torch",), jetpack="7.0"))
    assert thor.verdict == NO_FIT
    reason = thor.unplaced[0].rejected[0].reason
    assert "SBSA" in reason and "do not run on Jetson" not in reason


def test_gpu_less_runner_plans_conda_for_a100_and_driver_535() -> None:
    plan = plan_for(SCENARIOS["conda-a100-535"])
    torch = _torch(plan)
    assert torch.conda is not None and torch.conda.build and torch.conda.build.startswith("cuda12")
    assert plan.conda_override_cuda == "12.2"
    rendered = render_installer(plan, Where(folder="."))
    yml = rendered.files["environment.yml"]
    assert f"  - cuda-version={torch.cuda}" in yml
    assert f"  - pytorch={torch.conda.version}={torch.conda.build}" in yml
    assert "conda-forge" in yml
    assert rendered.commands[0].startswith("CONDA_OVERRIDE_CUDA=12.2 conda env create")


def test_torch_tensorflow_and_jax_share_one_env_and_one_cuda_major() -> None:
    plan = plan_for(SCENARIOS["torch-tf-jax"])
    assert plan.verdict == FITS and len(plan.envs) == 1
    env = plan.envs[0]
    heads = [p for p in env.packages if not p.companion_of]
    assert [p.framework for p in heads] == ["torch", "tensorflow", "jax"]
    assert {_major(p.cuda) for p in heads} == {12}
    # each gets what it gets alone on this R570 driver (pins not in the KB are no conflict)
    torch = env.package("torch")
    assert torch is not None and torch.public_version == "2.14.1" and torch.build == "cu126"
    assert plan.tradeoffs == ()


def test_docker_for_a_535_host_uses_an_image_the_driver_can_start() -> None:
    plan = plan_for(SCENARIOS["docker-535"])
    container = plan.container
    assert container is not None and container.require_cuda
    allowed = parse_require_cuda(container.require_cuda).allows(
        driver_cuda=CudaVersion(12, 2), driver=DriverVersion.parse("535.183.01")
    )
    assert allowed is True
    assert container.image.startswith("nvidia/cuda:12.")
    assert plan.envs[0].python == container.python
    dockerfile = render_installer(plan).files["Dockerfile"]
    assert f"FROM {container.image}" in dockerfile.splitlines()
    assert any(r.rule == "driver" for r in container.rejected)


def test_no_gpu_plans_the_cpu_build_pinned_exactly() -> None:
    plan = plan_for(Scenario("cpu", ("torch==2.13.0",), python="3.11", platform="linux-x86_64"))
    torch = _torch(plan)
    assert torch.requirement == "torch==2.13.0+cpu" and torch.cuda is None
    assert torch.index_url and torch.index_url.endswith("/cpu")


def test_what_cannot_share_an_env_is_split_into_two() -> None:
    """TensorFlow has CUDA 12 builds only and cupy-cuda13x is CUDA 13 only: one env each."""
    plan = plan_for(
        Scenario("split", ("tensorflow", "cupy-cuda13x"), "580.65.06", ("RTX 4090",), "3.12")
    )
    assert plan.verdict == "split" and len(plan.envs) == 2
    assert [p.framework for p in plan.envs[0].packages] == ["tensorflow"]
    assert plan.envs[1].package("cupy") is not None
    assert [e.name for e in plan.envs] == ["env-tensorflow", "env-cupy"]


def test_an_old_driver_gets_the_smallest_driver_upgrade() -> None:
    plan = plan_for(Scenario("old", ("torch>=2.11",), "470.256.02", ("RTX 3090",), "3.11"))
    assert plan.verdict == NO_FIT
    change = next(c for c in plan.changes if c.kind == "driver")
    assert change.value == "525.60.13" and "upgrade the driver to ≥ 525.60.13" in change.text


def test_djl_gets_a_pytorch_flavor_the_driver_runs() -> None:
    plan = plan_for(Scenario("djl", ("djl",), "535.183.01", ("RTX 3090",)))
    assert plan.djl is not None and plan.djl.flavor.startswith("cu")
    files = render_installer(plan).files
    assert f"export PYTORCH_FLAVOR={plan.djl.flavor}" in files["djl-launch.sh"]
    assert f"cuda-version={plan.djl.cuda}" in files["environment-djl.yml"]


def test_plans_are_deterministic() -> None:
    for scenario in SCENARIOS.values():
        assert plan_to_dict(plan_for(scenario)) == plan_to_dict(plan_for(scenario))


# ---- plans for recorded machines (probed from fixtures, as `gpuenv plan` does here) -----------

RECORDED = Path(__file__).parent / "fixtures" / "machines"


@pytest.mark.parametrize(
    "name",
    [
        "rtx3090_driver535",
        "gtx1080ti_driver470",
        "h100_driver580",
        "v100_driver460",
        "windows_rtx4090",
        "wsl2",
    ],
)
def test_a_recorded_machine_gets_a_torch_its_driver_and_gpus_run(name: str) -> None:
    snapshot = probe_machine(
        RecordedMachine.load(RECORDED / name), ProbeOptions(scan_binaries=False)
    )
    kb = default_kb()
    plan = make_plan(request_from_arguments(["torch"]), snapshot, kb)
    torch = _torch(plan)
    assert plan.target.driver is not None and _driver_at_most(torch, plan.target.driver)
    for gpu in plan.target.gpus:
        assert _covers(torch, gpu.rsplit("(", 1)[1].rstrip(")"))


def test_the_wsl2_driver_is_read_as_the_windows_driver_it_is() -> None:
    snapshot = probe_machine(
        RecordedMachine.load(RECORDED / "wsl2"), ProbeOptions(scan_binaries=False)
    )
    plan = make_plan(request_from_arguments(["torch"]), snapshot, default_kb())
    torch = _torch(plan)
    assert plan.target.platform == "linux-x86_64" and torch.driver_how == "native"


def test_mixed_generations_need_a_build_with_code_for_every_gpu() -> None:
    fits = plan_for(Scenario("mix", ("torch",), "580.65.06", ("RTX 3090", "RTX 5090"), "3.12"))
    torch = _torch(fits)
    assert _covers(torch, "8.6") and _covers(torch, "12.0")
    none = plan_for(Scenario("mix", ("torch",), "580.65.06", ("GTX 1080 Ti", "RTX 5090"), "3.12"))
    assert none.verdict == NO_FIT
    reasons = " ".join(r.reason for r in none.unplaced[0].rejected)
    assert "sm_61" in reasons and "sm_120" in reasons
    assert [c.kind for c in none.changes] == ["gpus"]


def test_an_intel_mac_gets_each_frameworks_last_release_for_it() -> None:
    """PyTorch, TensorFlow and jaxlib stopped publishing files for Intel Macs (wheels.toml):
    the plan takes the last release that has one, never a later one pip would not find there,
    while an Apple-silicon Mac gets a newer torch."""
    plan = plan_for(
        Scenario(
            "intel-mac", ("torch", "tensorflow", "jax"), python="3.11", platform="macos-x86_64"
        )
    )
    assert plan.verdict == FITS and plan.target.platform == "macos-x86_64"
    chosen = {p.name: p.public_version for p in plan.envs[0].packages}
    assert chosen == {"torch": "2.2.2", "tensorflow": "2.16.2", "jax": "0.4.38", "jaxlib": "0.4.38"}
    passed_over = _torch(plan).rejected
    assert passed_over and all("no build for macos-x86_64" in r.reason for r in passed_over)
    apple = _torch(plan_for(Scenario("m-mac", ("torch",), python="3.11", platform="macos-arm64")))
    assert Version(apple.public_version) > Version("2.2.2")


def test_a_jax_release_without_its_own_jaxlib_is_pinned_with_the_one_it_runs_with() -> None:
    """jax 0.5.2 was a release of jax alone: its pair is jaxlib 0.5.1, whose files say which
    platforms and Pythons it serves (so an Intel Mac, which jaxlib 0.5 left, is not planned it)."""
    plan = plan_for(Scenario("jax-patch", ("jax==0.5.2",), python="3.11"))
    assert plan.verdict == FITS
    assert [p.requirement for p in plan.envs[0].packages] == ["jax==0.5.2", "jaxlib==0.5.1"]
    mac = plan_for(
        Scenario("jax-patch-mac", ("jax==0.5.2",), python="3.11", platform="macos-x86_64")
    )
    assert mac.verdict == NO_FIT
    assert any("no build for macos-x86_64" in r.reason for r in mac.unplaced[0].rejected)
