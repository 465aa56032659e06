"""Compiled torch extensions on declared machines: the plan picks the extension build matching the
torch it picks (moving torch back within the user's constraints to get a prebuilt wheel, and
saying so), pins it exactly and names where it comes from; where no prebuilt wheel fits it says
how to build it from source: the command, the nvcc, TORCH_CUDA_ARCH_LIST, MAX_JOBS."""

from __future__ import annotations

import datetime
import json
import sys
from dataclasses import replace

import pytest
from packaging.specifiers import SpecifierSet

from gpuenv.diagnose import diagnose
from gpuenv.facts import DistributionFacts, ToolkitFacts
from gpuenv.kb import default_kb
from gpuenv.kb.query.extensions import extension_package, extension_wheels, torch_cxx11_abi
from gpuenv.kb.query.frameworks import mmcv_find_links
from gpuenv.plan.model import FITS, NO_FIT, PackageChoice, Plan, plan_to_dict
from gpuenv.plan.request import request_from_arguments
from gpuenv.plan.resolve import make_plan
from gpuenv.render.installers import Where, render_installer
from gpuenv.whatif import declared_snapshot
from tests.builders import dist, machine, torch_build
from tests.test_plan_scenarios import Scenario, plan_for

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

H100 = ("NVIDIA H100 80GB HBM3",)
RTX4090 = ("RTX 4090",)
FA_ASSETS = "https://github.com/Dao-AILab/flash-attention/releases/download/"


def _pair(plan: Plan, name: str) -> tuple[PackageChoice, PackageChoice]:
    assert plan.verdict == FITS, [r.text for u in plan.unplaced for r in u.rejected][:6]
    torch, ext = plan.envs[0].package("torch"), plan.envs[0].package(name)
    assert torch is not None and ext is not None
    return torch, ext


def test_torch_and_mmcv_on_an_rtx_3090_with_driver_535_take_openmmlabs_cu121_wheel() -> None:
    plan = plan_for(Scenario("mmcv", ("torch", "mmcv"), "535.183.01", ("RTX 3090",), "3.10"))
    torch, mmcv = _pair(plan, "mmcv")
    assert mmcv.version.startswith("2.") and mmcv.requirement == f"mmcv=={mmcv.version}"
    line = ".".join(torch.public_version.split(".")[:2])
    assert mmcv.find_links == mmcv_find_links(default_kb(), "cu121", line)
    assert mmcv.find_links == (
        f"https://download.openmmlab.com/mmcv/dist/cu121/torch{line}/index.html"
    )
    assert torch.cuda == "12.1" and mmcv.cuda == "12.1"
    # no prebuilt mmcv exists for torch >= 2.5: the newer torch builds were passed over for it
    assert any(r.reason == "no mmcv release pairs with it" for r in torch.rejected)
    assert any("mmcv has prebuilt wheels for this torch" in n for n in plan.notes)
    text = render_installer(plan).files["requirements.txt"]
    assert f"--find-links {mmcv.find_links}" in text.splitlines()


def test_flash_attn_on_an_h100_takes_the_release_wheel_of_the_torch_it_picks() -> None:
    plan = plan_for(Scenario("fa", ("torch", "flash-attn"), "570.124.06", H100, "3.12"))
    torch, fa = _pair(plan, "flash-attn")
    line = ".".join(torch.public_version.split(".")[:2])
    abi = torch_cxx11_abi(default_kb(), torch.public_version, torch.build)
    assert abi is not None
    name = (
        f"flash_attn-{fa.version}+cu12torch{line}cxx11abi{'TRUE' if abi else 'FALSE'}"
        "-cp312-cp312-linux_x86_64.whl"
    )
    assert fa.url == f"{FA_ASSETS}v{fa.version}/{name}"
    assert fa.requirement == f"flash-attn @ {fa.url}"
    assert fa.source_build is None and "sm_90" in fa.sass
    # torch moved back within the (empty) constraint to a line flash-attn has wheels for
    wheel_rows = extension_wheels(default_kb(), "flash-attn")
    assert any(SpecifierSet(str(r["torch"])).contains(torch.public_version) for r in wheel_rows)
    assert any(r.rule == "pairing" for r in torch.rejected)
    lines = render_installer(plan).files["requirements.txt"].splitlines()
    assert f"flash-attn @ {fa.url}" in lines


def test_flash_attn_with_no_wheel_for_the_torch_asked_is_built_from_source() -> None:
    plan = plan_for(Scenario("fa-src", ("torch>=2.9", "flash-attn"), "570.124.06", H100, "3.12"))
    torch, fa = _pair(plan, "flash-attn")
    build = fa.source_build
    assert build is not None and fa.url is None
    assert torch.cuda is not None and build.nvcc == torch.cuda and build.nvcc.startswith("12.")
    env = dict(build.env)
    assert env["TORCH_CUDA_ARCH_LIST"] == "9.0" and env["FLASH_ATTN_CUDA_ARCHS"] == "90"
    assert env["MAX_JOBS"].isdigit()
    assert "--no-build-isolation" in build.command
    assert build.command.startswith(f"pip install flash-attn=={fa.version}")
    rendered = render_installer(plan)
    built = [c for c in rendered.commands if "flash-attn" in c]
    assert built == [
        f"FLASH_ATTENTION_FORCE_BUILD=TRUE TORCH_CUDA_ARCH_LIST=9.0 FLASH_ATTN_CUDA_ARCHS=90 "
        f"MAX_JOBS={env['MAX_JOBS']} .venv/bin/python -m pip install flash-attn=={fa.version} "
        "--no-build-isolation"
    ]
    # the build comes after the install of torch, and the requirements file leaves it out
    assert rendered.commands.index(built[0]) > 0
    text = rendered.files["requirements.txt"]
    assert "flash-attn" not in "".join(line for line in text.splitlines() if line[:1] != "#")
    note = next(n for n in rendered.notes if n.startswith("flash-attn"))
    assert f"nvcc of CUDA {build.nvcc}" in note and "not known (declared)" in note


def test_a_source_build_names_the_machines_matching_toolkit() -> None:
    kb = default_kb()
    scenario = Scenario("tk", ("torch>=2.9", "apex"), "570.124.06", RTX4090, "3.11")
    snapshot = declared_snapshot(scenario.what_if(), kb)
    toolkits = (
        ToolkitFacts("13.0.88", "/usr/local/cuda-13.0", "nvcc", on_path=True),
        ToolkitFacts("12.6.85", "/usr/local/cuda-12.6", "version.json"),
    )
    plan = make_plan(
        request_from_arguments(scenario.wants), replace(snapshot, toolkits=toolkits), kb
    )
    torch, apex = _pair(plan, "apex")
    build = apex.source_build
    assert build is not None and build.nvcc_match == "minor"  # apex compares major.minor
    # driver 570 runs no CUDA 13 torch: a CUDA 12.6 one, built with the 12.6 toolkit, not the
    # CUDA 13 nvcc first on PATH (apex refuses another major.minor)
    assert torch.cuda == "12.6" and build.nvcc == "12.6"
    assert build.toolkit == "/usr/local/cuda-12.6"
    commands = render_installer(plan).commands
    assert "git clone https://github.com/NVIDIA/apex" in commands
    assert commands[-1].endswith("-m pip install -v --no-build-isolation ./apex")
    assert "APEX_CPP_EXT=1 APEX_CUDA_EXT=1" in commands[-1]
    assert apex.requirement == "apex"  # a checkout, no release to pin


def test_flash_attn_on_a_turing_gpu_fits_nowhere_and_says_why() -> None:
    plan = plan_for(Scenario("t4", ("torch", "flash-attn"), "570.124.06", ("Tesla T4",), "3.11"))
    assert plan.verdict == NO_FIT
    reasons = [r.reason for u in plan.unplaced if u.package == "flash-attn" for r in u.rejected]
    assert any("compute capability ≥ 8.0" in r and "sm_75" in r for r in reasons)


def test_xformers_of_a_variant_index_is_installed_from_that_index_alone() -> None:
    plan = plan_for(Scenario("xf", ("torch", "xformers"), "570.124.06", RTX4090, "3.12"))
    torch, xf = _pair(plan, "xformers")
    row = next(
        r
        for r in extension_wheels(default_kb(), "xformers")
        if SpecifierSet(str(r["torch"])).contains(torch.public_version)
    )
    assert xf.version == row["version"] and torch.build in row["variants"]
    assert torch.index_url is not None and torch.build != row["default_variant"]
    assert xf.index_url == f"https://download.pytorch.org/whl/{torch.build}"
    assert xf.exclusive_index  # the package index has the same version built for another CUDA
    pip = render_installer(plan).commands
    assert pip[-1] == (
        f".venv/bin/python -m pip install --no-deps --index-url {xf.index_url} "
        f"xformers=={xf.version}"
    )
    assert not any("xformers" in c for c in pip[:-1])
    uv = render_installer(replace(plan, installer="uv"))
    fragment = tomllib.loads(uv.files["pyproject.gpuenv.toml"])
    index = fragment["tool"]["uv"]["sources"]["xformers"][0]["index"]
    urls = {i["name"]: i["url"] for i in fragment["tool"]["uv"]["index"]}
    assert urls[index] == xf.index_url


def test_xformers_for_the_package_indexs_torch_comes_from_the_package_index() -> None:
    plan = plan_for(Scenario("xf0", ("torch==2.8.0", "xformers"), "570.124.06", RTX4090, "3.12"))
    torch, xf = _pair(plan, "xformers")
    assert torch.requirement == "torch==2.8.0" and torch.index_url is None  # its cu128 build
    assert xf.requirement == "xformers==0.0.32.post2"
    assert xf.index_url is None and not xf.exclusive_index
    assert len(render_installer(plan).commands) == 2  # venv, one install line


def test_torch_scatter_and_sparse_pin_pyg_builds_of_the_torch_picked() -> None:
    plan = plan_for(
        Scenario("pyg", ("torch", "torch-scatter", "torch-sparse"), "570.124.06", RTX4090, "3.11")
    )
    torch, scatter = _pair(plan, "torch-scatter")
    sparse = plan.envs[0].package("torch-sparse")
    assert sparse is not None
    line = ".".join(torch.public_version.split(".")[:2])
    label = f"pt{line.replace('.', '')}{torch.build}"
    assert scatter.version == f"2.1.2+{label}" and sparse.version == f"0.6.18+{label}"
    page = f"https://data.pyg.org/whl/torch-{line}.0+{torch.build}.html"
    assert scatter.find_links == page == sparse.find_links
    # torch-sparse's wheels stop at torch 2.7: torch was moved back for it
    assert line <= "2.7"
    manifest = tomllib.loads(
        render_installer(replace(plan, installer="pixi"), Where(folder=".")).files["pixi.toml"]
    )
    assert manifest["pypi-dependencies"]["torch-scatter"] == {"version": f"=={scatter.version}"}
    assert {"url": page} in manifest["pypi-options"]["find-links"]


def test_a_torch_constraint_keeps_torch_and_builds_the_extension_instead() -> None:
    plan = plan_for(
        Scenario("pin", ("torch==2.10.0", "torch-sparse"), "570.124.06", RTX4090, "3.11")
    )
    torch, sparse = _pair(plan, "torch-sparse")
    assert torch.public_version == "2.10.0"
    assert sparse.source_build is not None
    assert dict(sparse.source_build.env)["FORCE_CUDA"] == "1"
    assert dict(sparse.source_build.env)["TORCH_CUDA_ARCH_LIST"] == "8.9"


def test_the_plan_json_carries_the_url_and_the_source_build() -> None:
    plan = plan_for(Scenario("json", ("torch>=2.9", "flash-attn"), "570.124.06", H100, "3.12"))
    data = json.loads(json.dumps(plan_to_dict(plan)))
    [fa] = [p for p in data["envs"][0]["packages"] if p["name"] == "flash-attn"]
    assert fa["source_build"]["nvcc"].startswith("12.")
    assert ["TORCH_CUDA_ARCH_LIST", "9.0"] in fa["source_build"]["env"]
    assert fa["url"] is None and fa["requirement"].startswith("flash-attn==")


def test_every_extension_row_names_an_install_row_and_valid_torch_specifiers() -> None:
    kb = default_kb()
    for row in kb.rows("extensions", "wheel"):
        package = extension_package(kb, str(row["package"]))
        assert package is not None and package["wheels"] != "none"
        SpecifierSet(str(row["torch"]))  # parses
        for variant in row["variants"]:
            assert variant == "cpu" or variant.startswith("cu"), variant
    for package in kb.rows("extensions", "package"):
        assert "{requirement}" in str(package["build_command"]) or package.get("clone")


# ---- doctor: extensions built for another torch get the plan's build ---------------------------


def _fix(torch_version: str, cuda: str, variant: str, extension: DistributionFacts) -> list[str]:
    snap = machine(
        gpus=list(H100),
        driver="570.124.06",
        frameworks=[torch_build(torch_version, cuda, variant)],
        dists=[extension],
    )
    found = diagnose(snap, default_kb(), datetime.date(2026, 11, 23)).findings
    [finding] = [f for f in found if f.rule == "extension-build-mismatch"]
    assert finding.fix is not None
    return [finding.fix.summary, *finding.fix.commands]


def test_doctor_reinstalls_torch_scatter_from_pygs_page_of_the_installed_torch() -> None:
    summary, command = _fix("2.4.1", "12.1", "cu121", dist("torch-scatter", "2.1.2+pt21cu118"))
    assert "torch-scatter==2.1.2+pt24cu121" in command
    assert "--find-links https://data.pyg.org/whl/torch-2.4.0+cu121.html" in command
    assert "built for this torch" in summary


def test_doctor_builds_flash_attn_from_source_for_a_torch_without_wheels() -> None:
    wheel = "flash_attn-2.7.4.post1+cu12torch2.6cxx11abiFALSE-cp311-cp311-linux_x86_64.whl"
    url = f"{FA_ASSETS}v2.7.4.post1/{wheel}"
    flash = DistributionFacts("flash-attn", "2.7.4.post1", "pip", (), None, url)
    summary, command = _fix("2.10.0+cu128", "12.8", "cu128", flash)
    assert command.startswith("FLASH_ATTENTION_FORCE_BUILD=TRUE TORCH_CUDA_ARCH_LIST=9.0 ")
    assert command.endswith("--no-build-isolation")
    assert "nvcc of CUDA 12.8" in summary
    summary, command = _fix("2.8.0", "12.8", "cu128", flash)
    assert "cu12torch2.8cxx11abiTRUE-cp311-cp311" in command and "--force-reinstall" in command


@pytest.mark.parametrize("installer", ["pip", "uv", "conda", "pixi"])
def test_every_installer_keeps_the_source_build_out_of_its_files(installer: str) -> None:
    plan = plan_for(
        Scenario(
            "all", ("torch>=2.9", "flash-attn"), "570.124.06", H100, "3.12", installer=installer
        )
    )
    rendered = render_installer(plan, Where(folder="out"))
    for name, text in rendered.files.items():
        body = [line for line in text.splitlines() if not line.lstrip().startswith("#")]
        assert not any("flash-attn" in line or "flash_attn" in line for line in body), name
    assert any("nvcc of CUDA" in n for n in rendered.notes)


@pytest.mark.parametrize(
    ("torch", "variant", "abi"),
    [
        ("2.5.1", "cu124", False),
        ("2.6.0", "cu124", False),
        ("2.6.0", "cu126", True),  # the 2.6 CUDA 12.6.3 builds were the first on the new ABI
        ("2.8.0", "cu128", True),
        ("2.6.0", "rocm6.2.4", None),  # not recorded: no flash-attn wheel is guessed for it
    ],
)
def test_torchs_cxx11_abi_decides_which_flash_attn_asset(
    torch: str, variant: str, abi: bool | None
) -> None:
    assert torch_cxx11_abi(default_kb(), torch, variant) is abi
