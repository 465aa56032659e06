"""Plans an expert would check by hand: a GPU newer than its driver, a Docker image that must
carry the CUDA a framework needs from the system, requirements files whose other lines must reach
every installer's manifest, a version the knowledge base does not know, and --create's check of
conda and JAX envs."""

from __future__ import annotations

import re
import sys
from dataclasses import replace

from gpuenv.apply import verify
from gpuenv.facts import (
    DistributionFacts,
    FrameworkBuild,
    HostFacts,
    Observation,
    PythonEnvFacts,
    Snapshot,
)
from gpuenv.kb import default_kb
from gpuenv.plan.model import NO_FIT, Plan
from gpuenv.plan.request import parse_requirements
from gpuenv.plan.resolve import make_plan
from gpuenv.render.installers import render_installer
from gpuenv.versions import CudaVersion, DriverVersion
from gpuenv.whatif import declared_snapshot
from tests.test_plan_scenarios import Scenario, plan_for

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

# NVIDIA's CUDA image tags: <cuda>-<flavor>-ubuntu<YY.MM>; cuDNN images of CUDA <= 12.3 name the
# cuDNN major (12.2.2-cudnn8-runtime-ubuntu22.04), later ones do not (12.6.3-cudnn-runtime-...)
TAG = re.compile(
    r"^nvidia/cuda:(?P<cuda>\d+\.\d+\.\d+)-(?P<flavor>base|runtime|cudnn[89]?-runtime)"
    r"-ubuntu\d\d\.\d\d$"
)


# ---- a GPU the driver is too old to know -----------------------------------------------------


def test_an_rtx5090_on_driver_535_fits_no_build_and_names_the_driver_it_needs() -> None:
    plan = plan_for(Scenario("b", ("torch",), "535.183.01", ("RTX 5090",), "3.12"))
    assert plan.verdict == NO_FIT
    [change] = [c for c in plan.changes if c.kind == "driver"]
    needed = DriverVersion.parse(change.value)
    assert needed is not None and needed.branch >= 570, change.text


def test_the_driver_a_plan_needs_covers_the_gpus_architecture() -> None:
    # torch 2.8.0's CUDA 12.8 build alone would run on any CUDA 12 driver (>= 525.60.13 under
    # minor-version compatibility), but an RTX 5090 needs a driver of CUDA 12.8
    plan = plan_for(Scenario("b", ("torch==2.8.0",), None, ("RTX 5090",), "3.12"))
    assert plan.min_driver is not None
    needed = DriverVersion.parse(plan.min_driver)
    assert needed is not None and needed.branch >= 570


# ---- Docker images ----------------------------------------------------------------------------


def _image(plan: Plan) -> tuple[str, str]:
    assert plan.container is not None
    found = TAG.match(plan.container.image)
    assert found, plan.container.image
    cuda, flavor = found.group("cuda"), found.group("flavor")
    release = tuple(int(p) for p in cuda.split(".")[:2])
    if flavor == "cudnn8-runtime":
        assert release <= (12, 2), plan.container.image
    elif flavor == "cudnn9-runtime":
        assert release == (12, 3), plan.container.image
    elif flavor == "cudnn-runtime":
        assert release >= (12, 4), plan.container.image
    return cuda, flavor


def test_a_framework_needing_system_cuda_gets_an_image_that_carries_it() -> None:
    # TensorFlow 2.13 loads CUDA 11 and cuDNN 8 from the system: a CUDA 12 image has neither
    plan = plan_for(
        Scenario("d", ("tensorflow<2.14",), "535.183.01", ("RTX 3090",), installer="docker")
    )
    tf = plan.envs[0].package("tensorflow")
    assert tf is not None and tf.system_needs and tf.cuda and tf.cudnn
    cuda, flavor = _image(plan)
    assert CudaVersion.parse(cuda).major == CudaVersion.parse(tf.cuda).major  # type: ignore[union-attr]
    assert flavor == f"cudnn{tf.cudnn.split('.')[0]}-runtime"
    assert plan.container is not None
    assert "FROM " + plan.container.image in render_installer(plan).files["Dockerfile"]


def test_every_docker_image_is_a_real_tag_shape_the_driver_runs() -> None:
    for wants, driver in [
        (("torch",), "535.183.01"),
        (("tensorflow<2.14",), "535.183.01"),
        (("onnxruntime",), "550.54.15"),
        (("jax",), "570.124.06"),
        (("torch",), "580.65.06"),
    ]:
        plan = plan_for(Scenario("d", wants, driver, ("RTX 3090",), installer="docker"))
        cuda, _ = _image(plan)
        reported = plan.target.driver_max_cuda
        assert reported is not None
        image = CudaVersion.parse(cuda)
        assert image is not None and (image.major, image.minor) <= (
            int(reported.split(".")[0]),
            int(reported.split(".")[1]),
        ), (wants, driver, cuda)


# ---- the other lines of a requirements file ---------------------------------------------------


REQUIREMENTS = "\n".join(
    [
        "torch",
        "numpy>=1.26",
        "requests[socks]==2.32.3",
        'pywin32==306; sys_platform == "win32"',
        "pandas @ https://example.invalid/pandas-2.2.3-py3-none-any.whl",
        "./wheels/foo-1.0-py3-none-any.whl",
        "./src/localpkg",
        "-e git+https://example.invalid/bar.git#egg=bar",
    ]
)


def _requirements_plan(installer: str) -> Plan:
    request = parse_requirements(REQUIREMENTS, "req.txt", lambda name: (name, ""))
    scenario = Scenario("r", (), "570.124.06", ("RTX 4090",), "3.11", installer=installer)
    snapshot = declared_snapshot(scenario.what_if(), default_kb())
    return make_plan(request, snapshot, default_kb(), installer)


def test_pixi_keeps_the_other_requirements() -> None:
    manifest = tomllib.loads(render_installer(_requirements_plan("pixi")).files["pixi.toml"])
    pypi = manifest["pypi-dependencies"]
    assert pypi["numpy"] == {"version": ">=1.26"}
    assert pypi["requests"] == {"version": "==2.32.3", "extras": ["socks"]}
    assert pypi["pandas"] == {"url": "https://example.invalid/pandas-2.2.3-py3-none-any.whl"}
    assert pypi["foo"] == {"path": "./wheels/foo-1.0-py3-none-any.whl"}
    assert "pywin32" not in pypi  # its marker is false on the linux target


def test_uv_pyproject_dependencies_are_all_pep508() -> None:
    text = render_installer(_requirements_plan("uv")).files["pyproject.gpuenv.toml"]
    fragment = tomllib.loads(text)
    dependencies = fragment["project"]["dependencies"]
    from packaging.requirements import Requirement

    names = [Requirement(d).name for d in dependencies]  # every one parses
    assert "foo" in names and "numpy" in names
    assert fragment["tool"]["uv"]["sources"]["foo"] == {"path": "./wheels/foo-1.0-py3-none-any.whl"}
    assert "./src/localpkg" in text  # named in a comment to add by hand, not lost


def test_an_editable_line_is_noted_as_written() -> None:
    request = parse_requirements(REQUIREMENTS, "req.txt", lambda name: (name, ""))
    [note] = [n for n in request.notes if "editable" in n]
    assert "#egg=bar" in note


def test_a_version_the_knowledge_base_does_not_list_says_so() -> None:
    plan = plan_for(Scenario("o", ("torch==1.7.1",), "535.183.01", ("RTX 3090",), "3.10"))
    assert plan.verdict == NO_FIT
    [note] = [n for n in plan.notes if "knowledge base" in n]
    assert "torch==1.7.1" in note and "1.8.0" in note


def test_torch_before_1_11_comes_from_the_find_links_page() -> None:
    plan = plan_for(Scenario("o", ("torch==1.10.0",), "470.256.02", ("GTX 1080 Ti",), "3.8"))
    torch = plan.envs[0].package("torch")
    assert torch is not None and torch.requirement == "torch==1.10.0+cu113"
    assert torch.find_links == "https://download.pytorch.org/whl/torch_stable.html"
    assert torch.index_url is None
    newer = plan_for(Scenario("n", ("torch==1.12.0",), "470.256.02", ("GTX 1080 Ti",), "3.8"))
    package = newer.envs[0].package("torch")
    assert package is not None and package.find_links is None
    assert package.index_url == "https://download.pytorch.org/whl/cu113"


# ---- --create's check ---------------------------------------------------------------------------


def _env_snapshot(dists: list[DistributionFacts], builds: list[FrameworkBuild]) -> Snapshot:
    env = PythonEnvFacts(
        interpreter="/env/bin/python",
        python_version="3.11.9",
        distributions=tuple(dists),
        frameworks=tuple(builds),
    )
    host = HostFacts(os=Observation("linux", "test"), arch=Observation("x86_64", "test"))
    return Snapshot(host=host, python_env=env)


def test_a_conda_forge_pytorch_is_found_under_its_torch_distribution() -> None:
    plan = plan_for(
        Scenario("c", ("torch",), "535.183.01", ("RTX 3090",), "3.11", installer="conda")
    )
    torch = plan.envs[0].package("torch")
    assert torch is not None and torch.conda is not None and torch.cuda
    build = FrameworkBuild(
        "torch", torch.version, torch.cuda, variant=None, distribution="torch", is_gpu_build=True
    )
    checks = verify(
        plan.envs[0], _env_snapshot([DistributionFacts("torch", torch.version)], [build])
    )
    assert [c.ok for c in checks] == [True, True], checks


def test_a_cuda_jax_env_passes_its_check() -> None:
    plan = plan_for(Scenario("j", ("jax",), "570.124.06", ("RTX 4090",), "3.11"))
    env = plan.envs[0]
    dists = [DistributionFacts(p.name, p.version) for p in env.packages]
    jax = env.package("jax")
    assert jax is not None and jax.cuda
    builds = [
        FrameworkBuild(
            "jax", jax.version, jax.cuda.split(".")[0], variant=jax.build, is_gpu_build=True
        ),
        FrameworkBuild("jaxlib", jax.version, None, variant="cpu", is_gpu_build=False),
    ]
    checks = verify(env, _env_snapshot(dists, builds))
    assert all(c.ok for c in checks), checks
    # and a CPU-only jax (no plugin) still fails it
    cpu = [replace(builds[0], framework_cuda=None, variant="cpu", is_gpu_build=False), builds[1]]
    assert not all(c.ok for c in verify(env, _env_snapshot(dists, cpu)))


def test_a_gpu_the_driver_itself_reports_is_known_to_that_driver() -> None:
    # a probed driver that lists the GPU runs it, whatever the architecture table's first
    # toolkit says; the floor is for declared GPUs and drivers
    from tests.builders import machine

    snap = machine(gpus=["H100 80GB HBM3"], driver="515.65.01")
    probed = replace(
        snap,
        gpus=tuple(replace(g, source="nvml") for g in snap.gpus),
        driver=replace(
            snap.driver,
            versions=tuple(replace(v, source="nvml") for v in snap.driver.versions),
        ),
    )
    request = parse_requirements("torch\n", "r.txt", lambda name: (name, ""))
    plan = make_plan(request, probed, default_kb())
    assert plan.fits, [r.text for u in plan.unplaced for r in u.rejected][:3]
