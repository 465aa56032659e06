"""Rules every plan keeps, whatever the machine and the wants (hypothesis draws both)."""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

from gpuenv.errors import GpuenvError
from gpuenv.kb import default_kb
from gpuenv.kb.query.cuda import coverage, last_driver_branch, linux_branch
from gpuenv.kb.query.gpus import resolve_gpu
from gpuenv.plan.model import NO_FIT, Plan, plan_to_dict
from gpuenv.render.installers import render_installer
from gpuenv.versions import ComputeCapability, DriverVersion
from tests.test_plan_scenarios import Scenario, plan_for

LINUX_DRIVERS = (
    "450.80.02",
    "470.256.02",
    "525.60.13",
    "535.183.01",
    "550.54.14",
    "560.35.03",
    "570.124.06",
    "575.57.08",
    "580.65.06",
    "590.44.01",
    "595.71.05",
)
# Windows drivers carry their own numbers (R580 is 580.88 and 581.xx on Windows)
WINDOWS_DRIVERS = ("452.39", "472.12", "528.33", "551.78", "561.09", "572.61", "576.02", "581.42")
DRIVERS = {"linux-x86_64": LINUX_DRIVERS, "windows-x86_64": WINDOWS_DRIVERS}
GPUS = (
    "Tesla K80",
    "GTX 1080 Ti",
    "Tesla V100-SXM2-16GB",
    "RTX 3090",
    "NVIDIA A100-SXM4-80GB",
    "RTX 4090",
    "RTX 5090",
    "7.5",
    "9.0",
)
PYTHONS = ("3.9", "3.10", "3.11", "3.12", "3.13")
WANTS = ("torch", "torchvision", "tensorflow", "jax", "cupy", "onnxruntime")

platforms = st.sampled_from(sorted(DRIVERS))


def possible(driver: str | None, gpus: tuple[str, ...], platform: str | None) -> bool:
    """No GPU beyond its architecture's last driver branch (a K80 under R580 is no machine)."""
    kb = default_kb()
    version = DriverVersion.parse(driver)
    os_name = "windows" if (platform or "").startswith("windows") else "linux"
    branch = linux_branch(kb, version, os_name) if version else None
    for text in gpus:
        resolved = resolve_gpu(kb, text)
        last = last_driver_branch(kb, resolved.cc) if resolved else None
        if branch is not None and last is not None and branch > last[0]:
            return False
    return True


@st.composite
def machines(draw: st.DrawFn, platform: str | None = None, possible_only: bool = True) -> Scenario:
    chosen = platform or draw(platforms)
    scenario = Scenario(
        name="drawn",
        wants=tuple(draw(st.lists(st.sampled_from(WANTS), min_size=1, max_size=3, unique=True))),
        driver=draw(st.sampled_from(DRIVERS[chosen])),
        gpus=tuple(draw(st.lists(st.sampled_from(GPUS), min_size=1, max_size=2))),
        python=draw(st.sampled_from(PYTHONS)),
        platform=chosen,
        installer=draw(st.sampled_from(("pip", "uv", "conda"))),
    )
    if possible_only:
        assume(possible(scenario.driver, scenario.gpus, scenario.platform))
    return scenario


SETTINGS = settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def _gpu_ccs(plan: Plan) -> list[ComputeCapability]:
    out = []
    for text in plan.target.gpus:
        cc = ComputeCapability.parse(text.rsplit("(", 1)[-1].rstrip(")"))
        if cc is not None:
            out.append(cc)
    return out


@SETTINGS
@given(machines())
def test_no_plan_needs_a_newer_driver_than_the_target_has(scenario: Scenario) -> None:
    plan = plan_for(scenario)
    have = DriverVersion.parse(scenario.driver)
    assert have is not None
    for package in plan.packages():
        need = DriverVersion.parse(package.min_driver)
        assert need is None or need <= have, (package.requirement, package.min_driver)
    need = DriverVersion.parse(plan.min_driver)
    assert need is None or need <= have


@SETTINGS
@given(machines())
def test_no_planned_build_lacks_code_for_a_target_gpu(scenario: Scenario) -> None:
    """A build with a known architecture list runs on every GPU (natively or via PTX)."""
    plan = plan_for(scenario)
    ccs = _gpu_ccs(plan)
    for package in plan.packages():
        if not package.sass or package.cuda is None:
            continue
        sass = [c for c in map(ComputeCapability.parse, package.sass) if c]
        ptx = [c for c in map(ComputeCapability.parse, package.ptx) if c]
        for cc in ccs:
            assert coverage(sass, ptx, cc).runs, (package.requirement, cc)


@SETTINGS
@given(machines())
def test_every_emitted_requirement_parses_and_pins_the_chosen_version(scenario: Scenario) -> None:
    plan = plan_for(scenario)
    for package in plan.packages():
        requirement = Requirement(package.requirement)
        assert canonicalize_name(requirement.name) == canonicalize_name(package.name)
        assert [s.operator for s in requirement.specifier] == ["=="]
        assert requirement.specifier.contains(package.version, prereleases=True)
    for name, text in render_installer(plan).files.items():
        if name.startswith("requirements"):
            pins = [line for line in text.splitlines() if line and line[0] not in "#-"]
            planned = {p.requirement for env in plan.envs for p in env.packages}
            assert {str(Requirement(line)) for line in pins} <= {
                str(Requirement(r)) for r in planned
            }


@SETTINGS
@given(machines())
def test_planning_is_deterministic(scenario: Scenario) -> None:
    assert plan_to_dict(plan_for(scenario)) == plan_to_dict(plan_for(scenario))


@SETTINGS
@given(machines("linux-x86_64"), st.sampled_from(LINUX_DRIVERS))
def test_a_newer_driver_never_turns_a_fitting_plan_into_no_fit(
    scenario: Scenario, other: str
) -> None:
    older, newer = sorted((scenario.driver or other, other), key=_driver_key)
    assume(possible(newer, scenario.gpus, scenario.platform))
    low = plan_for(_with_driver(scenario, older))
    high = plan_for(_with_driver(scenario, newer))
    if low.verdict != NO_FIT:
        assert high.verdict != NO_FIT


@SETTINGS
@given(machines(possible_only=False))
def test_no_plan_is_made_for_a_gpu_beyond_its_architectures_last_driver_branch(
    scenario: Scenario,
) -> None:
    """Rule: a GPU whose architecture's last driver branch is older than the driver's (a K80
    under R580, a GTX 1080 Ti under R590) is no machine: planning refuses it and names both
    flags; every machine that is possible gets a plan."""
    if possible(scenario.driver, scenario.gpus, scenario.platform):
        plan_for(scenario)
        return
    with pytest.raises(GpuenvError) as refused:
        plan_for(scenario)
    assert refused.value.code == "impossible-machine"
    assert "--gpu" in refused.value.message and f"--driver {scenario.driver}" in str(refused.value)


def _driver_key(text: str) -> tuple[int, ...]:
    parsed = DriverVersion.parse(text)
    return parsed.parts if parsed else ()


def _with_driver(scenario: Scenario, driver: str) -> Scenario:
    return Scenario(
        scenario.name,
        scenario.wants,
        driver,
        scenario.gpus,
        scenario.python,
        scenario.platform,
        scenario.jetpack,
        scenario.installer,
    )


def test_the_knowledge_base_loads_for_these_tests() -> None:
    assert default_kb().rows("torch", "release")
