"""probe_host on the recorded machines and on small machines built here, and its parsers."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from gpuenv.facts import HostFacts
from gpuenv.probe.access import RecordedMachine
from gpuenv.probe.host import (
    ENV_KEYS,
    parse_cgroup_container,
    parse_dpkg_version,
    parse_ldd_version,
    parse_libc_file_name,
    parse_os_release,
    parse_proc_version_wsl,
    parse_windows_ver,
    probe_host,
    probe_wsl,
)
from tests.conftest import MACHINES

FOLDERS = sorted(p for p in MACHINES.iterdir() if (p / "machine.json").is_file())


def _expected(folder: Path) -> dict[str, Any]:
    expected: dict[str, Any] = json.loads((folder / "machine.json").read_text("utf-8"))["expected"]
    return expected


def _host_view(host: HostFacts) -> dict[str, Any]:
    """The probed facts under the flat keys of a fixture's `expected` block."""
    jetson = host.jetson.value
    return {
        "os": host.os.value,
        "arch": host.arch.value,
        "distro": host.distro.value,
        "kernel": host.kernel.value,
        "libc": host.libc.value,
        "wsl": host.wsl.value,
        "container": host.container.value,
        "l4t_release": jetson.l4t_release if jetson else None,
        "jetson_model": jetson.model if jetson else None,
        "jetpack": jetson.jetpack if jetson else None,
        "apple_mps": host.apple_mps.value,
        "env": dict(host.env),
    }


@pytest.mark.parametrize("folder", FOLDERS, ids=[f.name for f in FOLDERS])
def test_recorded_machine_host_facts(folder: Path) -> None:
    host = probe_host(RecordedMachine.load(folder))
    view = _host_view(host)
    expected = _expected(folder)
    checked = {k: v for k, v in expected.items() if k in view}
    assert {"os", "arch", "distro", "wsl", "container", "env"} <= set(checked)
    assert {k: view[k] for k in checked} == checked
    for name in ("os", "arch", "distro", "kernel", "libc", "wsl", "container", "jetson", "rocm"):
        observation = getattr(host, name)
        assert observation.source, name
        assert observation.known or observation.problem, f"{name} missing without a reason"


def _linux(**spec: Any) -> RecordedMachine:
    return RecordedMachine(
        files=spec.get("files", {}),
        commands=spec.get("commands", {}),
        dirs=spec.get("dirs", {}),
        links=spec.get("links", {}),
        env=spec.get("env", {}),
        system_name=spec.get("system", "Linux"),
        machine_name=spec.get("machine", "x86_64"),
    )


def _out(stdout: str, code: int = 0, stderr: str = "") -> dict[str, object]:
    return {"stdout": stdout, "stderr": stderr, "returncode": code}


# ---- distro, kernel, libc -----------------------------------------------------------------------


def test_os_release_parsing() -> None:
    text = 'NAME="Rocky Linux"\nVERSION_ID="9.4"\n# comment\nPRETTY_NAME=\'Rocky Linux 9.4\'\nBAD'
    assert parse_os_release(text) == {
        "NAME": "Rocky Linux",
        "VERSION_ID": "9.4",
        "PRETTY_NAME": "Rocky Linux 9.4",
    }


def test_distro_without_pretty_name_and_unreadable_first_file() -> None:
    machine = _linux(
        files={
            "/etc/os-release": None,
            "/usr/lib/os-release": 'NAME="Alpine Linux"\nVERSION_ID=3.20\n',
        }
    )
    distro = probe_host(machine).distro
    assert (distro.value, distro.source) == ("Alpine Linux 3.20", "/usr/lib/os-release")


def test_distro_missing_says_why() -> None:
    distro = probe_host(_linux()).distro
    assert distro.value is None
    assert distro.problem is not None and "/etc/os-release: not found" in distro.problem


def test_kernel_falls_back_to_uname_when_proc_is_garbage() -> None:
    machine = _linux(
        files={"/proc/sys/kernel/osrelease": "\x00\x01"},
        commands={"uname -r": _out("6.6.87.2-microsoft-standard-WSL2\n")},
    )
    kernel = probe_host(machine).kernel
    assert (kernel.value, kernel.source) == ("6.6.87.2-microsoft-standard-WSL2", "uname -r")


def test_kernel_missing_when_nothing_answers() -> None:
    kernel = probe_host(_linux()).kernel
    assert kernel.value is None and kernel.problem == "uname not found"


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("ldd (Ubuntu GLIBC 2.35-0ubuntu3.8) 2.35\nCopyright (C) 2022\n", "glibc 2.35"),
        ("ldd (GNU libc) 2.39\n", "glibc 2.39"),
        ("ldd (Debian GLIBC 2.36-9+deb12u4) 2.36\n", "glibc 2.36"),
        ("musl libc (x86_64)\nVersion 1.2.4\nDynamic Program Loader\n", "musl 1.2.4"),
        ("", None),
        ("\x00garbage", None),
    ],
)
def test_ldd_version(text: str, expected: str | None) -> None:
    assert parse_ldd_version(text) == expected


def test_musl_ldd_prints_on_stderr() -> None:
    machine = _linux(
        commands={"ldd --version": _out("", 1, "musl libc (aarch64)\nVersion 1.2.5\n")}
    )
    assert probe_host(machine).libc.value == "musl 1.2.5"


def test_libc_from_the_file_name_without_ldd() -> None:
    machine = _linux(
        links={"/lib/x86_64-linux-gnu/libc.so.6": "/lib/x86_64-linux-gnu/libc-2.31.so"}
    )
    libc = probe_host(machine).libc
    assert (libc.value, libc.raw) == ("glibc 2.31", "/lib/x86_64-linux-gnu/libc-2.31.so")


def test_musl_from_the_loader_name() -> None:
    machine = _linux(dirs={"/lib": ["ld-musl-x86_64.so.1", "libc.musl-x86_64.so.1"]})
    assert probe_host(machine).libc.value == "musl"


def test_libc_unknown() -> None:
    libc = probe_host(_linux()).libc
    assert libc.value is None and libc.problem == "ldd not found"


def test_libc_file_name() -> None:
    assert parse_libc_file_name("/lib64/libc-2.17.so") == "glibc 2.17"
    assert parse_libc_file_name("/lib/x86_64-linux-gnu/libc.so.6") is None


# ---- WSL, containers ----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "wsl"),
    [
        (
            "Linux version 5.15.167.4-microsoft-standard-WSL2 (root@f9c826d3017f) (gcc 11.2.0)",
            True,
        ),
        ("Linux version 4.4.0-19041-Microsoft (Microsoft@Microsoft.com) (gcc version 5.4.0)", True),
        (
            "Linux version 6.8.0-52-generic (buildd@lcy02-amd64-046) (x86_64-linux-gnu-gcc-13)",
            False,
        ),
    ],
)
def test_proc_version_wsl(text: str, wsl: bool) -> None:
    assert parse_proc_version_wsl(text) is wsl


def test_wsl_from_the_library_folder_alone() -> None:
    machine = _linux(dirs={"/usr/lib/wsl/lib": ["libcuda.so.1"]})
    wsl = probe_wsl(machine)
    assert (wsl.value, wsl.source) == (True, "/usr/lib/wsl/lib")


@pytest.mark.parametrize(
    ("text", "engine"),
    [
        ("12:pids:/docker/3f2a1b0c9d8e\n11:memory:/docker/3f2a1b0c9d8e\n", "docker"),
        ("11:memory:/kubepods/burstable/pod1234/abcdef\n", "kubernetes"),
        ("1:name=systemd:/machine.slice/libpod-4c5d.scope\n", "podman"),
        ("0::/\n", None),
        ("0::/init.scope\n", None),
    ],
)
def test_cgroup_container(text: str, engine: str | None) -> None:
    assert parse_cgroup_container(text) == engine


@pytest.mark.parametrize(
    ("spec", "engine", "source"),
    [
        ({"files": {"/run/.containerenv": ""}}, "podman", "/run/.containerenv"),
        (
            {"env": {"KUBERNETES_SERVICE_HOST": "10.96.0.1"}},
            "kubernetes",
            "KUBERNETES_SERVICE_HOST",
        ),
        ({"env": {"container": "systemd-nspawn"}}, "systemd-nspawn", "environment: container"),
        ({"files": {"/proc/1/cgroup": "5:cpuset:/docker/ab12\n"}}, "docker", "/proc/1/cgroup"),
    ],
)
def test_container_markers(spec: dict[str, Any], engine: str, source: str) -> None:
    container = probe_host(_linux(**spec)).container
    assert (container.value, container.source) == (engine, source)


def test_no_container_is_missing_with_a_reason() -> None:
    container = probe_host(_linux(files={"/proc/1/cgroup": "0::/\n"})).container
    assert container.value is None
    assert container.problem is not None and "cgroup-v2" in container.problem


def test_env_keeps_only_the_listed_variables() -> None:
    env = {
        "CUDA_VISIBLE_DEVICES": "",
        "HOME": "/root",
        "PATH": "/bin",
        "NVIDIA_DISABLE_REQUIRE": "1",
    }
    host = probe_host(_linux(env=env))
    assert dict(host.env) == {"CUDA_VISIBLE_DEVICES": "", "NVIDIA_DISABLE_REQUIRE": "1"}
    assert "CONDA_OVERRIDE_CUDA" in ENV_KEYS


# ---- Jetson, Apple, ROCm, Windows ---------------------------------------------------------------


def test_jetson_from_the_device_tree_alone() -> None:
    machine = _linux(
        machine="aarch64", files={"/proc/device-tree/model": "NVIDIA Jetson Nano Developer Kit\x00"}
    )
    jetson = probe_host(machine).jetson
    assert jetson.value is not None
    assert (jetson.value.model, jetson.value.l4t_release) == (
        "NVIDIA Jetson Nano Developer Kit",
        None,
    )
    assert jetson.problem is not None


def test_jetson_release_file_unreadable_revision() -> None:
    machine = _linux(files={"/etc/nv_tegra_release": "# R36 (release), garbled"})
    jetson = probe_host(machine).jetson
    assert jetson.value is not None and jetson.value.l4t_release is None
    assert jetson.problem is not None and "REVISION" in jetson.problem


def test_not_a_jetson() -> None:
    machine = _linux(files={"/proc/device-tree/model": "Raspberry Pi 5 Model B Rev 1.0\x00"})
    assert probe_host(machine).jetson.value is None


def test_dpkg_version() -> None:
    assert parse_dpkg_version("6.2.1+b38") == "6.2.1"
    assert parse_dpkg_version("5.1.3-b29") == "5.1.3"
    assert parse_dpkg_version("") is None


def test_apple_silicon() -> None:
    machine = _linux(
        system="Darwin", machine="arm64", commands={"sw_vers -productVersion": _out("14.5\n")}
    )
    host = probe_host(machine)
    assert (host.os.value, host.apple_mps.value, host.distro.value) == (
        "darwin",
        True,
        "macOS 14.5",
    )
    assert host.wsl.value is False and host.container.value is None


def test_intel_mac_does_not_claim_mps() -> None:
    host = probe_host(_linux(system="Darwin", machine="x86_64"))
    assert host.apple_mps.value is None and host.apple_mps.problem is not None
    assert host.distro.value is None and host.distro.problem == "sw_vers not found"


def test_rocm_version_file() -> None:
    rocm = probe_host(_linux(files={"/opt/rocm/.info/version": "6.2.0-66\n"})).rocm
    assert (rocm.value, rocm.raw) == ("6.2.0", "6.2.0-66")
    garbled = probe_host(_linux(files={"/opt/rocm/.info/version": "\x00"})).rocm
    assert garbled.value is None and garbled.problem == "no version number"


def test_windows_ver() -> None:
    assert (
        parse_windows_ver("\r\nMicrosoft Windows [Version 10.0.26100.2894]\r\n")
        == "10.0.26100.2894"
    )
    assert parse_windows_ver("Der Befehl ist falsch geschrieben") is None


def test_windows_without_ver() -> None:
    host = probe_host(_linux(system="Windows", machine="AMD64"))
    assert host.os.value == "windows"
    assert host.distro.value is None and host.distro.problem == "cmd not found"
    assert host.libc.problem == "not Linux (Windows)"
