"""Every fix command the doctor emits is checked the way a user would run it.

Commands that need only the package index are checked against the real index (network): a
wheel of an accepted version must exist for the target Python and platform (tests/index_check.py
explains why not `pip install --dry-run`, which downloads whole CUDA wheels from an index without
separate metadata). Commands that name PyTorch's own index (not reachable from here) are parsed
with pip's own option parser and their base version is checked against the package-index table.
"""

from __future__ import annotations

import json
import shlex
import subprocess
import sys
from pathlib import Path

import pytest
from packaging.requirements import Requirement
from packaging.version import Version

from gpuenv.diagnose import diagnose
from gpuenv.facts import FrameworkBuild
from gpuenv.kb import default_kb
from tests.builders import PYTHON, dist, machine, torch_build
from tests.index_check import unavailable

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
def test_pip_fix_requirements_exist_on_the_package_index(name: str) -> None:
    commands = pip_only_scenarios()[name]
    assert commands, f"{name}: the doctor gave no pip command"
    for command in commands:
        requirements = [a for a in _pip_argv(command) if not a.startswith("-")]
        assert requirements, command
        assert unavailable(requirements, "3.11", "linux-x86_64") == [], command


def test_torch_variant_fix_is_a_valid_pip_command_for_a_real_release(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("PIP_CONFIG_FILE", "/dev/null")  # only the command's own options count
    snap = machine(
        gpus=["RTX 3090"], driver="535.183.01", frameworks=[torch_build("2.13.0+cpu", None, "cpu")]
    )
    [(_, command)] = [(r, c) for r, c in _commands(snap) if r == "framework-cpu-build"]
    from pip._internal.commands.install import InstallCommand  # pip's own parser

    options, args = InstallCommand("install", "").parse_args(_pip_argv(command))
    assert options.extra_index_urls == ["https://download.pytorch.org/whl/cu126"]
    [requirement] = map(Requirement, args)
    version = next(iter(requirement.specifier)).version
    assert version == "2.13.0+cu126"
    releases = {
        r["version"] for r in default_kb().rows("wheels", "release") if r["package"] == "torch"
    }
    assert version.split("+")[0] in releases  # the same release exists on the package index


@pytest.mark.real
def test_newest_cuda_torch_of_the_index_on_a_v100(tmp_path: Path) -> None:
    """A venv holding the real package metadata (Requires-Dist recorded in the generated KB table)
    of the newest torch release whose CUDA pins were read, without its gigabytes of wheels."""
    rows = [
        r
        for r in default_kb().rows("wheels", "release")
        if r["package"] == "torch" and r.get("pins")
    ]
    newest = max(rows, key=lambda r: Version(str(r["version"])))
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True)
    site = next((venv / "lib").glob("python3*/site-packages"))
    info = site / f"torch-{newest['version']}.dist-info"
    info.mkdir()
    lines = ["Metadata-Version: 2.1", "Name: torch", f"Version: {newest['version']}"]
    lines += [f"Requires-Dist: {pin}; platform_system == 'Linux'" for pin in newest["pins"]]
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
    [torch] = [f for f in first["snapshot"]["python_env"]["frameworks"] if f["name"] == "torch"]
    assert torch["framework_cuda"] == newest["cuda"]
    assert "gpu_arch_unsupported" in {f["cause"] for f in first["findings"]}
    second = json.loads(
        subprocess.run(
            [*argv, "--driver", "550.54.15"], capture_output=True, text=True, timeout=120
        ).stdout
    )
    causes = {f["cause"] for f in second["findings"]}
    assert {"gpu_arch_unsupported", "driver_too_old"} <= causes
    assert second["exit_code"] == 1
