"""conda, mamba and pixi plans take TensorFlow, JAX (jaxlib) and CuPy from conda-forge where it has
the CUDA build, all on one cuda-version with pytorch; wheels in a pip section only where it does
not. Machines are declared with what-if flags (a GPU-less runner planning for a GPU node)."""

from __future__ import annotations

import json
import re
import sys

import pytest

from gpuenv.apply.verify import verify
from gpuenv.facts import (
    DistributionFacts,
    FrameworkBuild,
    HostFacts,
    Observation,
    PythonEnvFacts,
    Snapshot,
)
from gpuenv.kb import default_kb
from gpuenv.kb.query.frameworks import conda_forge_builds
from gpuenv.plan.model import FITS, Plan
from gpuenv.render.installers import Where, render_installer
from tests.test_plan_scenarios import Scenario, plan_for

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

A100 = ("NVIDIA A100-SXM4-80GB",)
RTX4090 = ("RTX 4090",)


def environment(text: str) -> dict[str, object]:
    """The subset of YAML environment.yml uses: top-level keys with a scalar or a list of scalars,
    and one nested list (pip:). Comments are skipped; quoted scalars are JSON strings."""
    doc: dict[str, object] = {}
    key = ""
    nested: list[str] | None = None
    for line in text.splitlines():
        if not line.strip() or line.lstrip().startswith("#"):
            continue
        if not line.startswith(" "):
            key, _, value = line.partition(":")
            doc[key] = value.strip() or []
            nested = None
            continue
        item = line.strip()
        assert item.startswith("- "), line
        value = json.loads(item[2:]) if item[2:].startswith('"') else item[2:]
        items = doc[key]
        assert isinstance(items, list)
        if line.startswith("      - "):
            assert nested is not None, line
            nested.append(value)
        elif value.endswith(":"):
            nested = []
            items.append({value[:-1]: nested})
        else:
            items.append(value)
    return doc


def _conda_specs(doc: dict[str, object]) -> dict[str, str]:
    deps = doc["dependencies"]
    assert isinstance(deps, list)
    out = {}
    for dep in deps:
        if isinstance(dep, str):
            name, _, rest = dep.partition("=")
            out[name] = rest
    return out


def _pip_lines(doc: dict[str, object]) -> list[str]:
    deps = doc["dependencies"]
    assert isinstance(deps, list)
    return [line for dep in deps if isinstance(dep, dict) for line in dep.get("pip", [])]


def _fits(plan: Plan) -> None:
    assert plan.verdict == FITS, [r.text for u in plan.unplaced for r in u.rejected][:8]


def test_tensorflow_with_conda_on_a_gpu_less_runner_for_an_a100() -> None:
    plan = plan_for(Scenario("tf-a100", ("tensorflow",), None, A100, "3.11", installer="conda"))
    _fits(plan)
    tf = plan.envs[0].package("tensorflow")
    assert tf is not None and tf.conda is not None
    assert tf.conda.name == "tensorflow" and tf.cuda is not None
    assert tf.conda.build == "cuda" + tf.cuda.replace(".", "") + "*"
    doc = environment(render_installer(plan).files["environment.yml"])
    specs = _conda_specs(doc)
    assert specs["tensorflow"] == f"{tf.version}={tf.conda.build}"
    assert specs["cuda-version"] == tf.cuda
    assert doc["channels"] == ["conda-forge", "nodefaults"]
    assert _pip_lines(doc) == []  # conda-forge has the build: no pip section
    # the runner has no GPU: the solver is told the GPU node's CUDA
    assert plan.conda_override_cuda == tf.cuda
    assert render_installer(plan).commands[0].startswith(f"CONDA_OVERRIDE_CUDA={tf.cuda} ")


def test_torch_tensorflow_jax_and_cupy_share_one_cuda_version_in_pixi() -> None:
    plan = plan_for(
        Scenario(
            "all",
            ("torch", "tensorflow", "jax", "cupy"),
            "570.124.06",
            RTX4090,
            "3.12",
            installer="pixi",
        )
    )
    _fits(plan)
    manifest = tomllib.loads(render_installer(plan, Where(folder="out")).files["pixi.toml"])
    deps = manifest["dependencies"]
    assert "pypi-dependencies" not in manifest
    for name in ("pytorch", "tensorflow", "jaxlib", "jax", "cupy"):
        assert name in deps, name
    assert deps["tensorflow"]["build"].startswith("cuda12")
    assert deps["jaxlib"]["build"].startswith("cuda12")
    assert deps["jax"] == {"version": deps["jaxlib"]["version"]}  # jax X needs jaxlib X
    assert "build" not in deps["cupy"]  # conda-forge's cupy is chosen by cuda-version
    # one cuda-version: the highest CUDA the builds were made with, all of one major
    cudas = {p.cuda for p in plan.packages() if p.cuda}
    assert {c.split(".")[0] for c in cudas} == {"12"}
    highest = max(cudas, key=lambda c: tuple(int(x) for x in c.split(".")))
    assert deps["cuda-version"] == f"{highest}.*"
    assert manifest["system-requirements"]["cuda"] == "12.8"


def test_mamba_jax_on_a_cpu_machine_takes_the_cpu_jaxlib() -> None:
    plan = plan_for(Scenario("cpu", ("jax",), None, (), "3.12", installer="mamba"))
    _fits(plan)
    specs = _conda_specs(environment(render_installer(plan).files["environment.yml"]))
    assert specs["jaxlib"].endswith("=cpu*")
    assert "cuda-version" not in specs
    assert specs["jax"] == specs["jaxlib"].split("=")[0]


def test_a_python_conda_forge_does_not_build_falls_back_to_a_wheel() -> None:
    # the conda-forge tensorflow builds recorded stop at Python 3.12
    plan = plan_for(
        Scenario("py313", ("tensorflow",), "570.124.06", RTX4090, "3.13", installer="conda")
    )
    tf = plan.envs[0].package("tensorflow") if plan.envs else None
    if tf is None:
        pytest.skip("no tensorflow wheel for Python 3.13 in the knowledge base")
    assert tf.conda is None
    doc = environment(render_installer(plan).files["environment.yml"])
    assert any(line.startswith("tensorflow") for line in _pip_lines(doc))
    assert "tensorflow=" not in " ".join(str(d) for d in doc["dependencies"])  # type: ignore[union-attr]


def test_windows_has_no_conda_forge_tensorflow_so_the_plan_uses_wheels() -> None:
    plan = plan_for(
        Scenario(
            "win", ("tensorflow",), "552.22", RTX4090, "3.10", "windows-x86_64", installer="conda"
        )
    )
    assert all(p.conda is None for p in plan.packages())


def test_asking_for_cupy_cuda12x_takes_conda_forges_cupy_built_for_cuda_12() -> None:
    plan = plan_for(
        Scenario("cupy", ("cupy-cuda12x",), "570.124.06", RTX4090, "3.12", installer="conda")
    )
    _fits(plan)
    cupy = plan.envs[0].package("cupy")
    assert cupy is not None and cupy.conda is not None and cupy.conda.name == "cupy"
    assert cupy.cuda is not None and cupy.cuda.startswith("12.")


def test_an_old_driver_keeps_every_conda_build_within_what_it_runs() -> None:
    # driver 535 reports CUDA 12.2: CUDA 12.x builds run under minor-version compatibility,
    # CUDA 13 builds do not run at all
    plan = plan_for(
        Scenario("535", ("torch", "cupy"), "535.183.01", ("RTX 3090",), "3.11", installer="conda")
    )
    _fits(plan)
    assert {p.cuda.split(".")[0] for p in plan.packages() if p.cuda} == {"12"}


def test_every_forge_build_string_names_the_cuda_of_its_row() -> None:
    kb = default_kb()
    for package in ("tensorflow", "jaxlib", "cupy"):
        rows = conda_forge_builds(kb, package)
        assert rows, package
        for row in rows:
            glob = row.get("build_string")
            if "cuda" in row and glob:
                assert glob == "cuda" + str(row["cuda"]).replace(".", "") + "*"
            elif "cuda" not in row:
                assert glob == "cpu*", row
            assert re.fullmatch(r"3\.\d+", str(row["python_min"]))


def _env_with(dists: list[tuple[str, str]], builds: list[FrameworkBuild]) -> Snapshot:
    env = PythonEnvFacts(
        interpreter="/envs/x/bin/python",
        python_version="3.12.3",
        env_kind="conda",
        manager="conda",
        prefix="/envs/x",
        distributions=tuple(DistributionFacts(n, v, "conda", (), "/envs/x") for n, v in dists),
        frameworks=tuple(builds),
    )
    host = HostFacts(os=Observation("linux", "platform"), arch=Observation("x86_64", "platform"))
    return Snapshot(host=host, python_env=env)


def test_create_verifies_conda_forge_builds_by_their_conda_names() -> None:
    plan = plan_for(
        Scenario("v", ("tensorflow", "jax"), "570.124.06", RTX4090, "3.12", installer="conda")
    )
    _fits(plan)
    env = plan.envs[0]
    tf, jaxlib = env.package("tensorflow"), env.package("jax")
    assert tf is not None and jaxlib is not None and jaxlib.name == "jaxlib"
    builds = [
        FrameworkBuild(
            name="tensorflow",
            version=tf.version,
            framework_cuda=tf.cuda,
            is_gpu_build=True,
            source="tensorflow/python/platform/build_info.py",
        ),
        FrameworkBuild(name="jax", version=jaxlib.version, is_gpu_build=False, variant="cpu"),
    ]
    snapshot = _env_with(
        [("tensorflow", tf.version), ("jaxlib", jaxlib.version), ("jax", jaxlib.version)], builds
    )
    checks = {c.package: c for c in verify(env, snapshot)}
    assert checks["tensorflow"].ok is True and checks["jaxlib"].ok is True
    assert checks["tensorflow build"].ok is True
    # conda-forge's CUDA jaxlib carries no plugin: the probe cannot tell, so no false alarm
    assert checks["jax build"].ok is None
    wrong = _env_with([("tensorflow", "2.17.0"), ("jaxlib", jaxlib.version)], builds)
    assert {c.package: c for c in verify(env, wrong)}["tensorflow"].ok is False
