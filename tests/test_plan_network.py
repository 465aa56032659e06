"""Real resolution: pip, given the requirements a plan emits and the target's Python and platform
tags, must resolve exactly the planned versions (metadata only: --dry-run --report, no wheels
installed). Run for every scenario whose plan needs only the package index; skipped when the
index cannot be reached.

pip does not expand --platform into the tags a system accepts, so every manylinux tag a glibc
2.17–2.39 system accepts is passed (CUDA wheels are tagged manylinux_2_27/2_28 and newer)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from packaging.utils import canonicalize_name
from packaging.version import Version

from gpuenv.render.installers import render_installer
from tests.test_plan_scenarios import SCENARIOS, plan_for

TIMEOUT_S = 900
_UNREACHABLE = (
    "Failed to establish a new connection",
    "Temporary failure in name resolution",
    "Name or service not known",
    "Network is unreachable",
    "Could not fetch URL",
    "ConnectTimeoutError",
    "ProxyError",
)


def platform_tags(platform: str) -> list[str]:
    """The wheel platform tags a system of this platform accepts."""
    if platform == "windows-x86_64":
        return ["win_amd64"]
    arch = "aarch64" if platform.endswith("aarch64") else "x86_64"
    tags = [f"manylinux_2_{minor}_{arch}" for minor in range(39, 16, -1)]
    return (
        tags
        + [f"manylinux2014_{arch}"]
        + ([] if arch == "aarch64" else ["manylinux2010_x86_64", "manylinux1_x86_64"])
    )


def _pip_report(requirements: Path, python: str, platform: str, work: Path) -> dict[str, str]:
    argv = [sys.executable, "-m", "pip", "install", "--isolated", "--dry-run", "--quiet"]
    argv += ["--disable-pip-version-check", "--report", str(work / "report.json")]
    argv += ["--only-binary=:all:", "--python-version", python, "--target", str(work / "t")]
    for tag in platform_tags(platform):
        argv += ["--platform", tag]
    argv += ["-r", str(requirements)]
    done = subprocess.run(argv, capture_output=True, text=True, timeout=TIMEOUT_S)
    if done.returncode != 0:
        if any(marker in done.stderr for marker in _UNREACHABLE):
            pytest.skip(f"the package index is unreachable: {done.stderr.strip()[-300:]}")
        pytest.fail(f"pip could not resolve the plan:\n{done.stderr[-3000:]}")
    report = json.loads((work / "report.json").read_text(encoding="utf-8"))
    return {
        canonicalize_name(item["metadata"]["name"]): item["metadata"]["version"]
        for item in report["install"]
    }


@pytest.mark.network
@pytest.mark.parametrize("name", sorted(SCENARIOS))
def test_pip_resolves_exactly_the_planned_versions(name: str, tmp_path: Path) -> None:
    plan = plan_for(SCENARIOS[name])
    if not plan.envs:
        pytest.skip("the plan has no environment")
    env = plan.envs[0]
    if not env.only_default_index or any(p.conda for p in env.packages):
        pytest.skip("this plan needs PyTorch's, NVIDIA's or conda-forge's packages")
    if env.python is None:
        pytest.skip("the plan's Python is unknown")
    files = render_installer(plan).files
    requirements = tmp_path / "requirements.txt"
    text = next(t for n, t in files.items() if n.startswith("requirements"))
    requirements.write_text(text, encoding="utf-8")
    resolved = _pip_report(requirements, env.python, plan.target.platform, tmp_path)
    for package in env.packages:
        got = resolved.get(canonicalize_name(package.name))
        assert got is not None, f"pip did not install {package.name}"
        assert Version(got) == Version(package.version), (package.name, got, package.version)
