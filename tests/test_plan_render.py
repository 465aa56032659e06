"""What each installer reads, rendered from plans: pip requirements, uv commands and pyproject
fragment, conda environment.yml, pixi.toml, Dockerfile, DJL launcher."""

from __future__ import annotations

import re
import sys
from dataclasses import replace

import pytest
from packaging.requirements import Requirement

from gpuenv.plan.model import Plan
from gpuenv.render.installers import Where, render_installer
from gpuenv.render.installers.uv import torch_backend
from gpuenv.render.plan_text import plan_document, render_plan_text
from tests.test_plan_scenarios import SCENARIOS, Scenario, plan_for

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

URL = re.compile(r"https?://[^\s\"'\]]+")


def _with(name: str, installer: str) -> Plan:
    s = SCENARIOS[name]
    return plan_for(
        Scenario(s.name, s.wants, s.driver, s.gpus, s.python, s.platform, s.jetpack, installer)
    )


def _requirement_lines(text: str) -> list[str]:
    return [line for line in text.splitlines() if line and line[0] not in "#-"]


def test_pip_requirements_pin_exactly_and_use_pytorchs_index_as_an_extra_index() -> None:
    plan = _with("535-rtx3090", "pip")
    rendered = render_installer(plan)
    text = rendered.files["requirements.txt"]
    torch = plan.envs[0].package("torch")
    assert torch is not None and torch.index_url
    assert f"--extra-index-url {torch.index_url}" in text.splitlines()
    for line in _requirement_lines(text):
        requirement = Requirement(line)
        assert [s.operator for s in requirement.specifier] == ["=="]
    assert rendered.commands[0].startswith("python3.11 -m venv")
    # without -o the install line carries the pins itself; with -o it names the written file
    inline = rendered.commands[-1]
    assert f"{torch.requirement}" in inline and f"--extra-index-url {torch.index_url}" in inline
    written = render_installer(plan, Where(folder="out")).commands[-1]
    assert written.endswith("-m pip install -r out/requirements.txt")
    into = render_installer(plan, Where(interpreter="/srv/env/bin/python")).commands
    assert into == (f"/srv/env/bin/python -m pip install {inline.split(' install ', 1)[1]}",)


INDEX_ONLY = Scenario("index-only", ("torch", "jax"), "580.65.06", ("RTX 4090",), "3.12")
SPLIT = Scenario("split", ("tensorflow", "cupy-cuda13x"), "580.65.06", ("RTX 4090",), "3.12")


def test_a_plan_from_the_package_index_names_no_index_at_all() -> None:
    plan = plan_for(INDEX_ONLY)
    text = render_installer(plan).files["requirements.txt"]
    assert not [line for line in text.splitlines() if line.startswith("-")]


@pytest.mark.parametrize("name", sorted(SCENARIOS))
@pytest.mark.parametrize("installer", ["pip", "uv", "conda", "mamba", "pixi"])
def test_the_only_urls_written_are_the_indexes_the_plan_chose(name: str, installer: str) -> None:
    """A plan that needs only the package index names no index: the installer's own config
    applies. Every URL in the files is a PyTorch or NVIDIA index the plan chose from the KB."""
    if SCENARIOS[name].installer == "docker":
        installer = "docker"
    plan = _with(name, installer)
    chosen = {u for env in plan.envs for u in (*env.index_urls, *env.find_links)}
    rendered = render_installer(plan)
    for text in (*rendered.files.values(), *rendered.commands):
        assert set(URL.findall(text)) <= chosen, text


def test_uv_uses_the_torch_backend_and_explicit_indexes() -> None:
    plan = _with("535-rtx3090", "uv")
    rendered = render_installer(plan)
    torch = plan.envs[0].package("torch")
    assert torch is not None and torch.local_label
    assert torch_backend(plan.envs[0]) == torch.local_label
    install = next(c for c in rendered.commands if c.startswith("uv pip install"))
    assert f"--torch-backend {torch.local_label}" in install
    fragment = tomllib.loads(rendered.files["pyproject.gpuenv.toml"])
    index = fragment["tool"]["uv"]["index"][0]
    assert index["explicit"] is True and index["url"] == torch.index_url
    assert fragment["tool"]["uv"]["sources"]["torch"] == [{"index": index["name"]}]
    assert torch.requirement in fragment["project"]["dependencies"]


def test_uv_without_pytorch_indexes_needs_no_backend() -> None:
    plan = plan_for(replace(INDEX_ONLY, installer="uv"))
    assert torch_backend(plan.envs[0]) is None
    fragment = tomllib.loads(render_installer(plan).files["pyproject.gpuenv.toml"])
    assert "tool" not in fragment


def test_conda_mixes_conda_forge_builds_and_a_pip_section() -> None:
    plan = plan_for(
        Scenario(
            "mix", ("torch", "onnxruntime"), "570.124.06", ("RTX 4090",), "3.11", installer="conda"
        )
    )
    text = render_installer(plan).files["environment.yml"]
    assert "  - conda-forge" in text and "  - pip:" in text
    assert any(line.strip().startswith("- pytorch=") for line in text.splitlines())
    # conda-forge builds of onnxruntime-gpu are not in the knowledge base: a wheel, in pip
    assert any("onnxruntime-gpu" in line for line in text.split("  - pip:")[1].splitlines())


def test_mamba_uses_mamba() -> None:
    plan = _with("conda-a100-535", "mamba")
    written = render_installer(plan, Where(folder="."))
    assert "mamba env create -n gpu-env -f environment.yml" in written.commands[0]
    inline = render_installer(plan).commands[0]
    assert "mamba create -n gpu-env -c conda-forge --override-channels" in inline
    into = render_installer(plan, Where(interpreter="/opt/conda/envs/ml/bin/python")).commands[0]
    assert "mamba install -p /opt/conda/envs/ml -c conda-forge" in into and "python=" not in into


def test_windows_commands_set_variables_in_powershell_syntax() -> None:
    plan = plan_for(
        Scenario(
            "win", ("torch",), "552.22", ("RTX 3090",), "3.11", "windows-x86_64", installer="pixi"
        )
    )
    rendered = render_installer(plan, Where(folder="out"))
    if plan.conda_override_cuda:
        assert rendered.commands[0].startswith(
            f'$env:CONDA_OVERRIDE_CUDA="{plan.conda_override_cuda}"; '
        )
    assert "CONDA_OVERRIDE_CUDA=" not in rendered.commands[0].split(";")[-1]


def test_pixi_declares_the_targets_cuda_as_a_system_requirement() -> None:
    plan = _with("conda-a100-535", "pixi")
    manifest = tomllib.loads(render_installer(plan).files["pixi.toml"])
    assert manifest["system-requirements"]["cuda"] == "12.2"
    torch = plan.envs[0].package("torch")
    assert torch is not None and torch.conda is not None
    assert manifest["dependencies"]["pytorch"] == {
        "version": f"=={torch.conda.version}",
        "build": torch.conda.build,
    }
    assert manifest["dependencies"]["cuda-version"] == f"{torch.cuda}.*"


def test_pixi_puts_wheels_in_pypi_dependencies() -> None:
    plan = plan_for(
        Scenario(
            "mix", ("torch", "onnxruntime"), "570.124.06", ("RTX 4090",), "3.11", installer="pixi"
        )
    )
    manifest = tomllib.loads(render_installer(plan).files["pixi.toml"])
    ort = plan.envs[0].package("onnxruntime")
    assert ort is not None and ort.conda is None
    expected: dict[str, object] = {"version": f"=={ort.version}"}
    if ort.extras:
        expected["extras"] = list(ort.extras)
    assert manifest["pypi-dependencies"][ort.name] == expected


def test_dockerfile_installs_the_requirements_in_the_images_python() -> None:
    plan = _with("docker-535", "docker")
    files = render_installer(plan).files
    lines = files["Dockerfile"].splitlines()
    assert next(line for line in lines if line.startswith("FROM ")).startswith("FROM nvidia/cuda:")
    assert "RUN pip install -r /tmp/requirements.txt" in lines
    assert "requirements.txt" in files


def test_docker_asks_for_gpus_only_for_a_target_that_has_one() -> None:
    """`docker run --gpus all` fails on a machine without the NVIDIA container toolkit: a
    CPU-only plan must run as printed there."""
    gpu = render_installer(_with("docker-535", "docker")).commands
    cpu = render_installer(plan_for(Scenario("cpu", ("torch",), installer="docker"))).commands
    assert "--gpus all" in gpu[-1] and "--gpus" not in cpu[-1]


def test_split_plans_write_one_file_per_env() -> None:
    plan = plan_for(SPLIT)
    files = render_installer(plan).files
    assert set(files) == {"requirements-env-tensorflow.txt", "requirements-env-cupy.txt"}


def test_text_names_the_verdict_reasons_and_commands() -> None:
    plan = _with("535-rtx3090", "pip")
    rendered = render_installer(plan)
    text = render_plan_text(plan, rendered)
    assert "verdict: fits" in text
    assert "passed over:" in text and "needs driver ≥ 580" in text
    assert "$ python3.11 -m venv .venv" in text


def test_text_of_a_no_fit_plan_shows_the_smallest_change() -> None:
    plan = plan_for(Scenario("old", ("torch>=2.11",), "470.256.02", ("RTX 3090",), "3.11"))
    text = render_plan_text(plan, render_installer(plan))
    assert "nothing fits" in text and "smallest change:" in text
    assert "upgrade the driver to ≥ 525.60.13" in text


def test_json_document_carries_pins_reasons_files_and_commands() -> None:
    plan = _with("535-rtx3090", "pip")
    document = plan_document(plan, render_installer(plan), 0)
    assert document["schema"] == "gpuenv-plan/1" and document["fits"] is True
    package = document["envs"][0]["packages"][0]
    assert package["requirement"] == f"{package['name']}=={package['version']}"
    assert package["rejected"] and {"candidate", "rule", "reason"} <= set(package["rejected"][0])
    assert "requirements.txt" in document["files"] and document["commands"]
