"""The host: OS, architecture, distribution, kernel, libc, WSL, container, Jetson, Apple, ROCm.

Each step reads through MachineAccess and hands the text to a pure `parse_*` function.
"""

from __future__ import annotations

import re
from collections.abc import Mapping

from gpuenv.facts import HostFacts, JetsonFacts, Observation, missing
from gpuenv.parse.jetson import parse_nv_tegra_release
from gpuenv.probe.access import CommandResult, MachineAccess

# The environment variables the snapshot keeps (only those that are set).
ENV_KEYS = (
    "NVIDIA_VISIBLE_DEVICES",
    "NVIDIA_REQUIRE_CUDA",
    "NVIDIA_DRIVER_CAPABILITIES",
    "NVIDIA_DISABLE_REQUIRE",
    "CUDA_VISIBLE_DEVICES",
    "LD_LIBRARY_PATH",
    "CUDA_HOME",
    "CUDA_PATH",
    "CONDA_PREFIX",
    "VIRTUAL_ENV",
    "CONDA_OVERRIDE_CUDA",
)
OS_RELEASE_FILES = ("/etc/os-release", "/usr/lib/os-release")
WSL_LIB_DIR = "/usr/lib/wsl/lib"
TEGRA_RELEASE = "/etc/nv_tegra_release"
DEVICE_TREE_MODEL = "/proc/device-tree/model"
ROCM_VERSION_FILE = "/opt/rocm/.info/version"
LIBC_DIRS = ("/lib/x86_64-linux-gnu", "/lib/aarch64-linux-gnu", "/lib64", "/lib", "/usr/lib64")
_CGROUP_MARKERS = (
    ("kubepods", "kubernetes"),
    ("docker", "docker"),
    ("libpod", "podman"),
    ("containerd", "containerd"),
    ("lxc", "lxc"),
)
_OS_NAMES = {"Linux": "linux", "Windows": "windows", "Darwin": "darwin"}


def probe_host(machine: MachineAccess) -> HostFacts:
    system = machine.system()
    linux = system == "Linux"
    if system == "Windows":
        distro, kernel = _windows_version(machine.run(["cmd", "/c", "ver"], timeout=5.0))
    else:
        distro, kernel = _distro(machine, system), _kernel(machine, system)
    return HostFacts(
        os=_os(system),
        arch=_arch(machine.machine()),
        distro=distro,
        kernel=kernel,
        libc=_libc(machine) if linux else missing("libc", f"not Linux ({system})"),
        wsl=probe_wsl(machine) if linux else Observation(False, "platform.system", system),
        container=_container(machine) if linux else missing("container", f"not Linux ({system})"),
        jetson=_jetson(machine) if linux else missing("jetson", f"not Linux ({system})"),
        apple_mps=_apple_mps(system, machine.machine()),
        rocm=_rocm(machine) if linux else missing("rocm", f"not Linux ({system})"),
        env=select_env(machine.environ()),
    )


def select_env(environ: Mapping[str, str]) -> dict[str, str]:
    return {key: environ[key] for key in ENV_KEYS if key in environ}


def _os(system: str) -> Observation[str]:
    if not system:
        return missing("platform.system", "platform.system() was empty")
    return Observation(_OS_NAMES.get(system, system.lower()), "platform.system", system)


def _arch(arch: str) -> Observation[str]:
    if not arch:
        return missing("platform.machine", "platform.machine() was empty")
    return Observation(arch, "platform.machine", arch)


# --- distribution and kernel ---------------------------------------------------------------------


def parse_os_release(text: str) -> dict[str, str]:
    """KEY=value lines of os-release(5), quotes removed."""
    values: dict[str, str] = {}
    for line in text.splitlines():
        match = re.match(r"^\s*([A-Z0-9_]+)=(.*)$", line)
        if match:
            values[match.group(1)] = match.group(2).strip().strip("\"'")
    return values


def parse_windows_ver(text: str) -> str | None:
    """`cmd /c ver`: 'Microsoft Windows [Version 10.0.22631.4460]' -> '10.0.22631.4460'."""
    match = re.search(r"\[Version\s+(\d+(?:\.\d+)+)\]", text)
    return match.group(1) if match else None


def _windows_version(result: CommandResult) -> tuple[Observation[str], Observation[str]]:
    version = parse_windows_ver(result.stdout)
    if version is None:
        lost = missing("cmd /c ver", result.problem() or "no [Version ...] in the output")
        return lost, lost
    raw = result.stdout.strip()
    return Observation(f"Windows {version}", "cmd /c ver", raw), Observation(
        version, "cmd /c ver", raw
    )


def _distro(machine: MachineAccess, system: str) -> Observation[str]:
    if system == "Darwin":
        result = machine.run(["sw_vers", "-productVersion"], timeout=5.0)
        version = result.stdout.strip()
        if not result.ok or not re.fullmatch(r"\d+(?:\.\d+)*", version):
            return missing("sw_vers", result.problem() or f"unexpected output {version[:40]!r}")
        return Observation(f"macOS {version}", "sw_vers", version)
    problems = []
    for path in OS_RELEASE_FILES:
        read = machine.read_text(path)
        if read.text is None:
            problems.append(f"{path}: {read.problem}")
            continue
        fields = parse_os_release(read.text)
        name = fields.get("PRETTY_NAME") or " ".join(
            v for v in (fields.get("NAME"), fields.get("VERSION_ID")) if v
        )
        if name:
            return Observation(name, path, read.text[:200])
        problems.append(f"{path}: no PRETTY_NAME or NAME")
    return missing("os-release", "; ".join(problems))


def _kernel(machine: MachineAccess, system: str) -> Observation[str]:
    if system == "Linux":
        read = machine.read_text("/proc/sys/kernel/osrelease")
        value = (read.text or "").strip()
        if value and value.isprintable():
            return Observation(value, "/proc/sys/kernel/osrelease", value)
    result = machine.run(["uname", "-r"], timeout=5.0)
    value = result.stdout.strip()
    if result.ok and value and value.isprintable():
        return Observation(value, "uname -r", value)
    return missing("uname -r", result.problem() or "empty output")


# --- libc ----------------------------------------------------------------------------------------


def parse_ldd_version(text: str) -> str | None:
    """`ldd --version`: 'ldd (Ubuntu GLIBC 2.35-0ubuntu3.8) 2.35' -> 'glibc 2.35';
    musl prints 'musl libc (x86_64)' / 'Version 1.2.4' -> 'musl 1.2.4'."""
    if "musl" in text:
        match = re.search(r"Version\s+(\d+(?:\.\d+)+)", text)
        return f"musl {match.group(1)}" if match else "musl"
    first = text.strip().splitlines()[0] if text.strip() else ""
    match = re.search(r"(?:GLIBC|GNU libc|ldd).*?\s(\d+\.\d+)\s*$", first)
    return f"glibc {match.group(1)}" if match else None


def parse_libc_file_name(path: str) -> str | None:
    """libc.so.6's real file on old glibc: '/lib/x86_64-linux-gnu/libc-2.31.so' -> 'glibc 2.31'."""
    match = re.search(r"/libc-(\d+\.\d+)\.so$", path)
    return f"glibc {match.group(1)}" if match else None


def _libc(machine: MachineAccess) -> Observation[str]:
    result = machine.run(["ldd", "--version"], timeout=5.0)
    # musl's ldd prints its banner on stderr and exits 1
    value = parse_ldd_version(result.stdout or result.stderr)
    if value is not None:
        first = (result.stdout or result.stderr).strip().splitlines()[0][:200]
        return Observation(value, "ldd --version", first)
    for folder in LIBC_DIRS:
        real = machine.realpath(f"{folder}/libc.so.6")
        name = parse_libc_file_name(real)
        if name:
            return Observation(name, f"file name of {folder}/libc.so.6", real)
    for folder in ("/lib", "/usr/lib"):
        musl = [n for n in machine.list_dir(folder) or [] if n.startswith("ld-musl-")]
        if musl:
            return Observation("musl", f"{folder}/{musl[0]}", musl[0])
    return missing("ldd --version", result.problem() or "no glibc or musl version found")


# --- WSL, containers -----------------------------------------------------------------------------


def parse_proc_version_wsl(text: str) -> bool:
    """/proc/version of a WSL kernel: '... (microsoft-standard-WSL2) ...' or '...-Microsoft ...'."""
    return "microsoft" in text.lower() or "WSL" in text


def probe_wsl(machine: MachineAccess) -> Observation[bool]:
    read = machine.read_text("/proc/version")
    if read.text is not None and parse_proc_version_wsl(read.text):
        return Observation(True, "/proc/version", read.text.strip()[:200])
    if machine.exists(WSL_LIB_DIR):
        return Observation(True, WSL_LIB_DIR, "present")
    if read.text is None:
        return Observation(False, WSL_LIB_DIR, f"absent; /proc/version: {read.problem}")
    return Observation(False, "/proc/version", read.text.strip()[:200])


def parse_cgroup_container(text: str) -> str | None:
    """The container engine named in /proc/1/cgroup (cgroup v1; v2 shows only '0::/')."""
    for marker, engine in _CGROUP_MARKERS:
        if marker in text:
            return engine
    return None


def _container(machine: MachineAccess) -> Observation[str]:
    env = machine.environ()
    if machine.exists("/.dockerenv"):
        return Observation("docker", "/.dockerenv", "present")
    if machine.exists("/run/.containerenv"):
        return Observation("podman", "/run/.containerenv", "present")
    if env.get("KUBERNETES_SERVICE_HOST"):
        return Observation("kubernetes", "KUBERNETES_SERVICE_HOST", env["KUBERNETES_SERVICE_HOST"])
    if env.get("container"):  # systemd-nspawn, podman, lxc set it for PID 1
        return Observation(env["container"], "environment: container", env["container"])
    cgroup = machine.read_text("/proc/1/cgroup")
    engine = parse_cgroup_container(cgroup.text or "")
    if engine is not None:
        return Observation(engine, "/proc/1/cgroup", (cgroup.text or "")[:300])
    return missing(
        "container markers",
        "no container markers (/.dockerenv, /run/.containerenv, KUBERNETES_SERVICE_HOST, "
        "/proc/1/cgroup); a cgroup-v2 container can still look like this",
    )


# --- Jetson, Apple, ROCm -------------------------------------------------------------------------


def parse_dpkg_version(text: str) -> str | None:
    """`dpkg-query` version of nvidia-jetpack: '6.2.1+b38' -> '6.2.1'."""
    match = re.match(r"^\s*(?:\d+:)?(\d+(?:\.\d+)*)", text)
    return match.group(1) if match else None


def _jetson(machine: MachineAccess) -> Observation[JetsonFacts]:
    release = machine.read_text(TEGRA_RELEASE)
    model_read = machine.read_text(DEVICE_TREE_MODEL)
    # the device-tree string ends with a NUL byte
    model = (model_read.text or "").replace("\x00", "").strip() or None
    if release.text is None and not (model and "jetson" in model.lower()):
        return missing(TEGRA_RELEASE, f"no Jetson: {TEGRA_RELEASE} {release.problem}")
    l4t = parse_nv_tegra_release(release.text or "")
    jetpack = None
    if release.text is not None:
        argv = ["dpkg-query", "--showformat=${Version}", "--show", "nvidia-jetpack"]
        answer = machine.run(argv, timeout=5.0)
        jetpack = parse_dpkg_version(answer.stdout) if answer.ok else None
    facts = JetsonFacts(l4t_release=l4t, model=model, jetpack=jetpack)
    if release.text is None:
        return Observation(facts, DEVICE_TREE_MODEL, model, f"{TEGRA_RELEASE} {release.problem}")
    problem = None if l4t else f"no 'R<n> (release), REVISION: <x.y>' in {TEGRA_RELEASE}"
    return Observation(facts, TEGRA_RELEASE, release.text[:200], problem)


def _apple_mps(system: str, arch: str) -> Observation[bool]:
    if system != "Darwin":
        return Observation(False, "platform.system", system)
    if arch == "arm64":
        return Observation(True, "platform.machine", "Darwin arm64 (Apple Silicon)")
    return missing(
        "platform.machine", f"Mac with a {arch} interpreter: MPS needs Apple Silicon or an AMD GPU"
    )


def _rocm(machine: MachineAccess) -> Observation[str]:
    read = machine.read_text(ROCM_VERSION_FILE)
    if read.text is None:
        return missing(ROCM_VERSION_FILE, read.problem or "not found")
    match = re.match(r"^\s*(\d+\.\d+(?:\.\d+)?)", read.text)
    if not match:
        return missing(ROCM_VERSION_FILE, "no version number", raw=read.text[:80])
    return Observation(match.group(1), ROCM_VERSION_FILE, read.text.strip()[:200])
