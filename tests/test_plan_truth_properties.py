"""Properties of plans on the packaged knowledge base, drawn over the hard machines of the
correctness review: GPUs reached only through PTX (H100 under TensorFlow), GPUs newer than a
build's CUDA (Blackwell), GPUs at their architecture's last driver branch, Windows driver
numbers, torch extensions, and several frameworks sharing one env."""

from __future__ import annotations

from urllib.parse import unquote

from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

from gpuenv.kb import default_kb
from gpuenv.kb.query.binaries import build_code
from gpuenv.kb.query.cuda import coverage, driver_max_cuda, toolkit_sass_targets
from gpuenv.kb.query.frameworks import tf_runtime_codegen
from gpuenv.plan.model import PackageChoice, Plan
from gpuenv.render.installers import render_installer
from gpuenv.versions import ComputeCapability, CudaVersion, DriverVersion
from tests.test_plan_properties import possible
from tests.test_plan_scenarios import Scenario, plan_for

LINUX = (
    "470.256.02",
    "535.183.01",
    "545.23.06",
    "550.54.14",
    "555.42.02",
    "570.124.06",
    "580.65.06",
    "590.44.01",
)
WINDOWS = ("538.78", "552.22", "566.36", "573.42", "581.42", "591.44")
GPUS = (
    "H100",
    "H200",
    "NVIDIA L4",
    "Tesla T4",
    "A100",
    "RTX 3090",
    "RTX 4090",
    "RTX 5090",
    "B200",
    "Tesla V100-SXM2-16GB",
    "Tesla P100-PCIE-16GB",
    "GTX 1080 Ti",
    "Tesla K80",
)
FRAMEWORKS = ("torch", "tensorflow", "jax", "cupy", "onnxruntime")
EXTENSIONS = ("flash-attn", "xformers", "torch-scatter", "mmcv", "apex")
SETTINGS = settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@st.composite
def machines(draw: st.DrawFn) -> Scenario:
    platform = draw(st.sampled_from(("linux-x86_64", "linux-x86_64", "windows-x86_64")))
    drivers = LINUX if platform == "linux-x86_64" else WINDOWS
    wants = draw(st.lists(st.sampled_from(FRAMEWORKS), min_size=1, max_size=3, unique=True))
    if "torch" in wants and draw(st.booleans()):
        wants.append(draw(st.sampled_from(EXTENSIONS)))
    scenario = Scenario(
        name="drawn",
        wants=tuple(wants),
        driver=draw(st.sampled_from(drivers)),
        gpus=(draw(st.sampled_from(GPUS)),),
        python=draw(st.sampled_from(("3.10", "3.11", "3.12"))),
        platform=platform,
        installer=draw(st.sampled_from(("pip", "uv"))),
    )
    assume(possible(scenario.driver, scenario.gpus, scenario.platform))
    return scenario


def _ccs(plan: Plan) -> list[ComputeCapability]:
    parsed = (ComputeCapability.parse(t.rsplit("(", 1)[-1].rstrip(")")) for t in plan.target.gpus)
    return [c for c in parsed if c is not None]


def _code(package: PackageChoice) -> tuple[list[ComputeCapability], list[ComputeCapability]]:
    sass = [c for c in map(ComputeCapability.parse, package.sass) if c]
    ptx = [c for c in map(ComputeCapability.parse, package.ptx) if c]
    return sass, ptx


@SETTINGS
@given(machines())
def test_no_build_reaches_a_gpu_through_ptx_its_driver_cannot_jit(scenario: Scenario) -> None:
    """Rule: every GPU a planned build reaches only through PTX has a driver whose own CUDA is
    at least the PTX's toolkit (minor-version compatibility does not cover PTX)."""
    plan = plan_for(scenario)
    kb = default_kb()
    os_name = "windows" if scenario.platform == "windows-x86_64" else "linux"
    have = driver_max_cuda(kb, DriverVersion.parse(scenario.driver), os_name)  # type: ignore[arg-type]
    assert have is not None
    for package in plan.packages():
        sass, ptx = _code(package)
        built = CudaVersion.parse(package.ptx_cuda or package.cuda or "")
        if not sass or built is None:
            continue
        for cc in _ccs(plan):
            if coverage(sass, ptx, cc).kind == "ptx-jit":
                assert (have.major, have.minor) >= (built.major, built.minor), package.requirement


@SETTINGS
@given(machines())
def test_tensorflow_is_planned_only_with_code_known_for_its_gpu(scenario: Scenario) -> None:
    """Rule: a planned TensorFlow GPU build has known code (its wheel or its build file), runs on
    every target GPU, and (2.16+) its own CUDA can compile for each of them."""
    plan = plan_for(scenario)
    kb = default_kb()
    for package in plan.packages():
        if package.name != "tensorflow" or package.cuda is None:
            continue
        code = build_code(kb, "tensorflow", package.public_version)
        if code is None:  # an old line from the tested-configuration table: native driver only
            assert package.driver_how == "native", package.requirement
            continue
        cuda = CudaVersion.parse(package.cuda)
        assert cuda is not None
        targets = {(t.major, t.minor) for t in toolkit_sass_targets(kb, cuda)}
        for cc in _ccs(plan):
            assert coverage(code.sass, code.ptx, cc).runs, (package.requirement, cc)
            if tf_runtime_codegen(kb, package.public_version) and targets:
                assert (cc.major, cc.minor) in targets, (package.requirement, cc)


@SETTINGS
@given(machines())
def test_an_env_holds_one_cuda_major_and_one_cudnn_major(scenario: Scenario) -> None:
    plan = plan_for(scenario)
    for env in plan.envs:
        majors = {CudaVersion.parse(p.cuda).major for p in env.packages if p.cuda}  # type: ignore[union-attr]
        assert len(majors) <= 1, [p.requirement for p in env.packages]
        cudnn = {
            str(p.cudnn).split(".")[0]
            for p in env.packages
            if p.cuda and p.cudnn and str(p.cudnn).split(".")[0].isdigit()
        }
        assert len(cudnn) <= 1, [(p.requirement, p.cudnn) for p in env.packages]


@SETTINGS
@given(machines())
def test_every_requirement_parses_and_names_the_chosen_version(scenario: Scenario) -> None:
    """Rule: each emitted requirement parses; it pins the chosen version with ==, or names a
    wheel whose file name carries it, or (a source build) names no release at all."""
    plan = plan_for(scenario)
    for package in plan.packages():
        requirement = Requirement(package.requirement)
        assert canonicalize_name(requirement.name) == canonicalize_name(package.name)
        if requirement.url:
            wheel = unquote(requirement.url).rsplit("/", 1)[-1]
            assert wheel.split("-")[1].split("+")[0] == package.public_version, wheel
        elif package.version:
            assert [s.operator for s in requirement.specifier] == ["=="]
            assert requirement.specifier.contains(package.version, prereleases=True)
        else:
            assert package.source_build is not None and not requirement.specifier
    for name, text in render_installer(plan).files.items():
        if name.startswith("requirements"):
            for line in text.splitlines():
                if line and line[0] not in "#-":
                    Requirement(line)
