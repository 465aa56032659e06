"""Every fix command the doctor emits is checked the way a user would run it.

Commands that need only the package index are resolved for real with
`pip install --dry-run --report` for the target platform (network). Commands that name PyTorch's
own index (not reachable from here) are parsed with pip's own option parser and their base
version is checked against the package-index table.
"""

from __future__ import annotations

import json
import shlex
import subprocess
import sys
from pathlib import Path

import pytest
from packaging.requirements import Requirement

from gpuenv.diagnose import diagnose
from gpuenv.facts import FrameworkBuild
from gpuenv.kb import default_kb
from tests.builders import PYTHON, dist, machine, torch_build

PLATFORMS = [
    "manylinux_2_28_x86_64",
    "manylinux_2_27_x86_64",
    "manylinux_2_17_x86_64",
    "manylinux2014_x86_64",
    "manylinux_2_5_x86_64",
    "manylinux1_x86_64",
    "linux_x86_64",
]
CU12_PINS = (
    'nvidia-cudnn-cu12==9.1.0.70; platform_system == "Linux"',
    'nvidia-cublas-cu12==12.1.3.1; platform_system == "Linux"',
)


def _commands(snapshot) -> list[tuple[str, str]]:  # type: ignore[no-untyped-def]
    result = diagnose(snapshot, default_kb())
    return [(f.rule, c) for f in result.findings if f.fix for c in f.fix.commands]


def pip_only_scenarios() -> dict[str, list[str]]:
    tf_cpu = FrameworkBuild(
        "tensorflow", "2.15.1", None, distribution="tensorflow-cpu", is_gpu_build=False
    )
    jaxlib = FrameworkBuild("jaxlib", "0.4.30", None, distribution="jaxlib", is_gpu_build=False)
    jax = FrameworkBuild("jax", "0.4.30", None, distribution="jax", is_gpu_build=None)
    scenarios = {
        "missing-cudnn": machine(
            gpus=["RTX 3090"],
            driver="535.183.01",
            frameworks=[torch_build("2.4.1", "12.1", "cu121")],
            dists=[dist("torch", "2.4.1", CU12_PINS), dist("nvidia-cublas-cu12", "12.1.3.1")],
        ),
        "tensorflow-cpu": machine(gpus=["RTX 3090"], driver="550.54.15", frameworks=[tf_cpu]),
        "jax-cpu": machine(gpus=["RTX 3090"], driver="550.54.15", frameworks=[jax, jaxlib]),
    }
    return {
        name: [c for _, c in _commands(s) if "pip install" in c] for name, s in scenarios.items()
    }


def _pip_argv(command: str) -> list[str]:
    words = shlex.split(command)
    assert words[:4] == [PYTHON, "-m", "pip", "install"], command
    return words[4:]


@pytest.mark.network
@pytest.mark.parametrize("name", ["missing-cudnn", "tensorflow-cpu", "jax-cpu"])
def test_pip_fix_resolves_against_the_package_index(name: str, tmp_path: Path) -> None:
    commands = pip_only_scenarios()[name]
    assert commands, f"{name}: the doctor gave no pip command"
    for command in commands:
        args = [a for a in _pip_argv(command) if a != "--force-reinstall"]
        report = tmp_path / "report.json"
        argv = [
            sys.executable,
            "-m",
            "pip",
            "install",
            "--dry-run",
            "--ignore-installed",
            "--quiet",
            "--report",
            str(report),
            "--only-binary=:all:",
            "--python-version",
            "3.11",
            "--target",
            str(tmp_path / "t"),
            *(f"--platform={p}" for p in PLATFORMS),
            *args,
        ]
        done = subprocess.run(argv, capture_output=True, text=True, timeout=600)
        if done.returncode != 0 and (
            "connection" in done.stderr.lower() or "network" in done.stderr.lower()
        ):
            pytest.skip("the package index cannot be reached")
        assert done.returncode == 0, f"{command}\n{done.stderr[-3000:]}"
        installed = {
            i["metadata"]["name"].lower(): i["metadata"]["version"]
            for i in json.loads(report.read_text())["install"]
        }
        for requirement in map(Requirement, args):
            assert requirement.name.lower() in installed
            assert requirement.specifier.contains(
                installed[requirement.name.lower()], prereleases=True
            )


def test_torch_variant_fix_is_a_valid_pip_command_for_a_real_release() -> None:
    snap = machine(
        gpus=["RTX 3090"], driver="535.183.01", frameworks=[torch_build("2.13.0+cpu", None, "cpu")]
    )
    [(_, command)] = [(r, c) for r, c in _commands(snap) if r == "framework-cpu-build"]
    from pip._internal.commands.install import InstallCommand  # pip's own parser

    options, args = InstallCommand("install", "").parse_args(_pip_argv(command))
    assert options.index_url == "https://download.pytorch.org/whl/cu126"
    [requirement] = map(Requirement, args)
    version = next(iter(requirement.specifier)).version
    assert version == "2.13.0+cu126"
    releases = {
        r["version"] for r in default_kb().rows("wheels", "release") if r["package"] == "torch"
    }
    assert version.split("+")[0] in releases  # the same release exists on the package index


@pytest.mark.network
@pytest.mark.real
def test_current_cuda_torch_from_the_index_on_a_v100(tmp_path: Path) -> None:
    """A venv holding the newest torch's real package metadata (not its GBs of wheels)."""
    report = tmp_path / "r.json"
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "install",
            "--dry-run",
            "--no-deps",
            "--ignore-installed",
            "--quiet",
            "--report",
            str(report),
            "--only-binary=:all:",
            "--python-version",
            "3.12",
            "--target",
            str(tmp_path / "t"),
            *(f"--platform={p}" for p in PLATFORMS),
            "torch",
        ],
        capture_output=True,
        text=True,
        timeout=600,
    )
    if done.returncode != 0:
        pytest.skip(f"the package index cannot be reached: {done.stderr[-300:]}")
    metadata = json.loads(report.read_text())["install"][0]["metadata"]
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True)
    site = next((venv / "lib").glob("python3*/site-packages"))
    info = site / f"torch-{metadata['version']}.dist-info"
    info.mkdir()
    lines = ["Metadata-Version: 2.1", "Name: torch", f"Version: {metadata['version']}"]
    lines += [f"Requires-Dist: {r}" for r in metadata.get("requires_dist", [])]
    (info / "METADATA").write_text("\n".join(lines) + "\n")
    (info / "INSTALLER").write_text("pip\n")
    (site / "torch").mkdir()
    python = str(venv / "bin" / "python")
    argv = [
        sys.executable,
        "-m",
        "gpuenv",
        "doctor",
        "--json",
        "--python",
        python,
        "--gpu",
        "Tesla V100-SXM2-16GB",
    ]
    first = json.loads(subprocess.run(argv, capture_output=True, text=True, timeout=120).stdout)
    assert "gpu_arch_unsupported" in {f["cause"] for f in first["findings"]}
    second = json.loads(
        subprocess.run(
            [*argv, "--driver", "550.54.15"], capture_output=True, text=True, timeout=120
        ).stdout
    )
    causes = {f["cause"] for f in second["findings"]}
    assert {"gpu_arch_unsupported", "driver_too_old"} <= causes
    assert second["exit_code"] == 1
