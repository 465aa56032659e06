"""Real resolution of the requirements a plan emits, for the target's Python and platform, for
every scenario whose plan needs only the package index; skipped when the index cannot be reached.

Two depths. Always (network): every pinned requirement has a wheel on the index for the target's
Python and platform tags (project pages only, no downloads; tests/index_check.py). On request
(`heavy`, GPUENV_HEAVY_TESTS=1): pip itself resolves the requirements with --dry-run --report and
must pick exactly the planned versions. The heavy check is opt-in because pip downloads whole
wheels (gigabytes of CUDA libraries) from an index that serves no separate core metadata, as the
one here does.

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
from tests.index_check import unavailable
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
    if python != f"{sys.version_info[0]}.{sys.version_info[1]}":
        # pip checks Requires-Python against the running interpreter even with --python-version;
        # the wheel tags (cp312 ...) still select for the planned Python
        argv.append("--ignore-requires-python")
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


def _index_only_plan(name: str):  # type: ignore[no-untyped-def]
    plan = plan_for(SCENARIOS[name])
    if not plan.envs:
        pytest.skip("the plan has no environment")
    env = plan.envs[0]
    if not env.only_default_index or any(p.conda for p in env.packages):
        pytest.skip("this plan needs PyTorch's, NVIDIA's or conda-forge's packages")
    if env.python is None:
        pytest.skip("the plan's Python is unknown")
    return plan, env


@pytest.mark.network
@pytest.mark.parametrize("name", sorted(SCENARIOS))
def test_every_planned_pin_has_a_wheel_for_the_target(name: str) -> None:
    plan, env = _index_only_plan(name)
    pins = [f"{p.name}=={p.version}" for p in env.packages]
    assert unavailable(pins, env.python, plan.target.platform) == []


@pytest.mark.network
@pytest.mark.heavy
@pytest.mark.parametrize("name", sorted(SCENARIOS))
def test_pip_resolves_exactly_the_planned_versions(name: str, tmp_path: Path) -> None:
    plan, env = _index_only_plan(name)
    files = render_installer(plan).files
    requirements = tmp_path / "requirements.txt"
    text = next(t for n, t in files.items() if n.startswith("requirements"))
    requirements.write_text(text, encoding="utf-8")
    resolved = _pip_report(requirements, env.python, plan.target.platform, tmp_path)
    for package in env.packages:
        got = resolved.get(canonicalize_name(package.name))
        assert got is not None, f"pip did not install {package.name}"
        assert Version(got) == Version(package.version), (package.name, got, package.version)
