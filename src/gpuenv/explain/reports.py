"""Diagnostic outputs pasted into a text (collect_env, nvidia-smi, nvcc, conda, pip, TensorFlow,
JAX, Jetson, the container runtime), found by their landmark lines and read by the pure parsers
of gpuenv.parse into facts with line numbers. Each reader sees a bounded window of lines around
its landmark, so a huge text costs no more than its landmarks."""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Mapping

from gpuenv.explain.model import Fact
from gpuenv.explain.text import Text
from gpuenv.parse import collect_env, conda, containers, frameworks, pip
from gpuenv.parse.jetson import parse_jetson_release, parse_nv_tegra_release
from gpuenv.parse.nvcc import parse_nvcc_output
from gpuenv.parse.smi import (
    find_smi_errors,
    parse_smi_header,
    parse_smi_query_csv,
)
from gpuenv.parse.smi_q import parse_smi_list, parse_smi_q

MAX_LANDMARKS = 20  # occurrences of one landmark read (a log repeating a report)
_CONDA_NAMES = re.compile(
    r"^(pytorch|pytorch-cuda|cudatoolkit|cuda-version|cuda-nvcc|cuda-cudart|cuda-runtime|cudnn|nccl|"
    r"tensorflow(?:-gpu)?|"
    r"jaxlib|jax|cupy|cpuonly|pytorch-mutex|python)$"
)
Reader = Callable[[Text, int], list[Fact]]


LANDMARKS: tuple[str, ...]  # every landmark of READERS (defined below)


def read_reports(text: Text, located: Mapping[str, list[int]]) -> tuple[list[Fact], list[str]]:
    """Every fact the pasted outputs hold, and which kinds of output were found; `located` holds
    the offsets of the LANDMARKS (needles.locate)."""
    facts: list[Fact] = []
    kinds: list[str] = []
    for kind, landmarks, reader in READERS:
        found: list[Fact] = []
        read_to = -1  # a landmark inside a report already read is not read again
        for line in _landmark_lines(text, landmarks, located):
            if line <= read_to:
                continue
            new = reader(text, line)
            read_to = max([line] + [f.line - 1 for f in new if f.line])
            found += new
        if found:
            kinds.append(kind)
            facts.extend(found)
    return facts, kinds


def _landmark_lines(
    text: Text, landmarks: Iterable[str], located: Mapping[str, list[int]]
) -> list[int]:
    lines: set[int] = set()
    for landmark in landmarks:
        for at in located.get(landmark, ()):
            if len(lines) >= MAX_LANDMARKS:
                break
            lines.add(text.line_of(at))
    return sorted(lines)


def _window(text: Text, line: int, before: int, after: int) -> tuple[int, list[str]]:
    start = max(0, line - before)
    return start, [ln[:2000] for ln in text.lines[start : line + after + 1]]


def _fact(
    name: str,
    value: object,
    start: int,
    lines: list[str],
    reader: str,
    nth: int = 0,
    **details: object,
) -> Fact | None:
    """A fact found in a window: its line is the (nth) first one that shows the value."""
    if value is None or value == "":
        return None
    shown = str(value)
    lower, at, seen = shown.lower(), 0, 0
    for n, line in enumerate(lines):  # the nth line that shows it, else the last one that does
        if lower in line.lower():
            at, seen = n, seen + 1
            if seen > nth:
                break
    extra = tuple((k, str(v)) for k, v in details.items() if v is not None)
    return Fact(
        name,
        shown,
        start + at + 1,
        lines[at].strip()[:300] if lines else "",
        reader,
        "pasted",
        extra,
    )


def _keep(facts: Iterable[Fact | None]) -> list[Fact]:
    return [f for f in facts if f is not None]


# -- torch.utils.collect_env --------------------------------------------------------------------


def _collect_env(text: Text, line: int) -> list[Fact]:
    start, lines = _window(text, line, 3, 160)
    report = collect_env.parse_collect_env(lines)
    if report is None:
        return []
    r = "collect_env"
    found = [
        _fact("torch_version", report.torch_version, start, lines, r),
        _fact("torch_cuda", report.torch_cuda, start, lines, r),
        _fact("torch_rocm", report.rocm, start, lines, r),
        _fact("python_version", report.python_version, start, lines, r),
        _fact("cuda_runtime", report.cuda_runtime, start, lines, r),
        _fact("driver_version", report.driver_version, start, lines, r),
        _fact("cudnn_version", report.cudnn_version, start, lines, r),
        _fact("distro", report.get("OS"), start, lines, r),
        _fact(
            "os",
            _os_of(report.get("OS") or "", report.get("Python platform") or ""),
            start,
            lines,
            r,
        ),
        _fact(
            "arch",
            _arch_of(report.get("Python platform") or "", report.get("OS") or ""),
            start,
            lines,
            r,
        ),
    ]
    available = report.cuda_available
    if available is not None:
        found.append(_fact("cuda_available", str(available).lower(), start, lines, r))
    found += [
        _fact("gpu", name, start, lines, r, report.gpus[:n].count(name), index=n)
        for n, name in enumerate(report.gpus)
    ]
    if (
        report.torch_cuda is None
        and report.rocm is None
        and "CUDA used to build PyTorch" in report.values
    ):
        found.append(_fact("torch_cuda", "none", start, lines, r))
    platform = report.get("Python platform") or ""
    if "microsoft-standard-wsl" in platform.lower():
        found.append(_fact("wsl", "true", start, lines, r))
    return _keep(found)


def _os_of(system: str, platform: str) -> str | None:
    words = f"{system} {platform}".lower()
    for needle, name in (("windows", "windows"), ("mac", "darwin"), ("darwin", "darwin")):
        if needle in words:
            return name
    if any(w in words for w in ("linux", "ubuntu", "debian", "centos", "fedora", "red hat")):
        return "linux"
    return None


# conda's platform subdirectory (osx-64, linux-aarch64) -> the architecture
_CONDA_ARCH = {"64": "x86_64", "arm64": "arm64", "aarch64": "aarch64", "ppc64le": "ppc64le"}
_ARCH = re.compile(r"(?<![a-z0-9])(x86_64|amd64|aarch64|arm64)(?![a-z0-9])", re.IGNORECASE)


def _arch_of(*lines: str) -> str | None:
    """The architecture of the Python that ran (its platform line, "macOS-14.4-arm64-arm-64bit",
    first: under Rosetta it is x86-64 whatever the Mac), else the one the OS line gives."""
    for line in lines:
        found = _ARCH.search(line)
        if found:
            return found.group(1)
    return None


# -- nvidia-smi ---------------------------------------------------------------------------------


def _smi_table(text: Text, line: int) -> list[Fact]:
    start, lines = _window(text, line, 2, 120)
    header = parse_smi_header("\n".join(lines))
    if header.driver_version is None:
        return []
    r = "nvidia-smi"
    found = [
        _fact("driver_version", header.driver_version, start, lines, r),
        _fact("driver_max_cuda", header.driver_max_cuda, start, lines, r),
    ]
    for n, gpu in enumerate(header.gpus):
        found.append(
            _fact(
                "gpu",
                gpu.name,
                start,
                lines,
                r,
                [g.name for g in header.gpus[:n]].count(gpu.name),
                memory_mib=gpu.memory_mib,
                mig_mode=gpu.mig_mode,
                bus_id=gpu.bus_id,
            )
        )
    return _keep(found)


def _smi_errors(text: Text, line: int) -> list[Fact]:
    start, lines = _window(text, line, 0, 0)
    return _keep(
        _fact("driver_failure", e.code, start, lines, "nvidia-smi")
        for e in find_smi_errors("\n".join(lines))
    )


def _smi_query(text: Text, line: int) -> list[Fact]:
    start, lines = _window(text, line, 0, 20)
    query = parse_smi_query_csv("\n".join(lines))
    r = "nvidia-smi --query-gpu"
    found = []
    for n, gpu in enumerate(query.gpus):
        found.append(
            _fact(
                "gpu",
                gpu.name,
                start,
                lines,
                r,
                [g.name for g in query.gpus[:n]].count(gpu.name),
                memory_mib=gpu.memory_mib,
                pci_device_id=gpu.pci_device_id,
                cc=gpu.compute_capability,
            )
        )
        found.append(_fact("driver_version", gpu.driver_version, start, lines, r))
    return _keep(found)


def _smi_list(text: Text, line: int) -> list[Fact]:
    start, lines = _window(text, line, 0, 0)
    r = "nvidia-smi -L"
    return _keep(
        _fact("gpu", g.name, start, lines, r, uuid=g.uuid) for g in parse_smi_list(lines[0])
    )


def _smi_q(text: Text, line: int) -> list[Fact]:
    start, lines = _window(text, line, 12, 600)
    details = parse_smi_q("\n".join(lines))
    if details.driver_version is None and not details.gpus:
        return []
    r = "nvidia-smi -q"
    found = [
        _fact("driver_version", details.driver_version, start, lines, r),
        _fact("driver_max_cuda", details.driver_max_cuda, start, lines, r),
    ]
    found += [
        _fact(
            "gpu",
            g.name,
            start,
            lines,
            r,
            memory_mib=g.memory_mib,
            pci_device_id=g.pci_device_id,
            bus_id=g.bus_id,
        )
        for g in details.gpus
    ]
    return _keep(found)


# -- toolkits, conda, pip -----------------------------------------------------------------------


def _nvcc(text: Text, line: int) -> list[Fact]:
    start, lines = _window(text, line, 4, 2)
    version = parse_nvcc_output("\n".join(lines))
    if version is None:
        return []
    return _keep([_fact("toolkit_cuda", version.version or version.release, start, lines, "nvcc")])


def _conda_info(text: Text, line: int) -> list[Fact]:
    start, lines = _window(text, line, 25, 40)
    info = conda.parse_conda_info(lines)
    if info is None:
        return []
    r = "conda info"
    python = re.match(r"\d+\.\d+(?:\.\d+)?", info.python_version or "")
    platform = info.platform or ""
    return _keep(
        [
            _fact("conda_cuda", info.cuda, start, lines, r),
            _fact("python_version", python.group(0) if python else None, start, lines, r),
            _fact(
                "os",
                {"linux": "linux", "win": "windows", "osx": "darwin"}.get(platform.split("-")[0]),
                start,
                lines,
                r,
            ),
            _fact("arch", _CONDA_ARCH.get(platform.partition("-")[2]), start, lines, r),
        ]
    )


def _conda_list(text: Text, line: int) -> list[Fact]:
    start, lines = _window(text, line, 0, 400)
    found = []
    for row in conda.parse_conda_list(lines):
        if not _CONDA_NAMES.match(row.name):
            continue
        if row.name == "pytorch":
            found.append(
                _fact("torch_version", row.version, start, lines, "conda list", build=row.build)
            )
        elif row.name == "python":
            found.append(_fact("python_version", row.version, start, lines, "conda list"))
        elif row.name in ("cuda-cudart", "cudatoolkit", "cuda-runtime"):
            found.append(_fact("cuda_runtime", row.version, start, lines, "conda list"))
        found.append(
            _fact(
                "package", f"{row.name}=={row.version}", start, lines, "conda list", build=row.build
            )
        )
    return _keep(found)


def _pip(text: Text, line: int) -> list[Fact]:
    start, lines = _window(text, line, 0, 300)
    found = []
    for package in pip.parse_pip_packages(lines):
        name = package.name.lower().replace("_", "-")
        found.append(_fact("package", f"{package.name}=={package.version}", start, lines, "pip"))
        if name == "torch":
            found.append(_fact("torch_version", package.version, start, lines, "pip"))
        elif name in ("tensorflow", "tensorflow-gpu", "tensorflow-cpu"):
            found.append(_fact("tensorflow_version", package.version, start, lines, "pip"))
        elif name in ("jax", "jaxlib"):
            found.append(_fact(f"{name}_version", package.version, start, lines, "pip"))
    return _keep(found)


# -- frameworks ---------------------------------------------------------------------------------


def _tensorflow(text: Text, line: int) -> list[Fact]:
    start, lines = _window(text, line, 2, 40)
    report = frameworks.parse_tf_report("\n".join(lines))
    if report is None:
        return []
    r = "tensorflow"
    found = [
        _fact("tensorflow_cuda", report.cuda_version, start, lines, r),
        _fact("tensorflow_cudnn", report.cudnn_version, start, lines, r),
        _fact("framework", "tensorflow", start, lines, r),
    ]
    if report.is_cuda_build is not None:
        found.append(
            _fact("tensorflow_cuda_build", str(report.is_cuda_build).lower(), start, lines, r)
        )
    found += [_fact("missing_library", lib, start, lines, r) for lib in report.failed_libraries]
    found += [_fact("gpu", name, start, lines, r, cc=cc) for name, cc in report.gpus]
    return _keep(found)


def _jax(text: Text, line: int) -> list[Fact]:
    start, lines = _window(text, line, 3, 8)
    report = frameworks.parse_jax_env(lines)
    if report is None:
        return []
    r = "jax.print_environment_info"
    found = [
        _fact("jax_version", report.jax_version, start, lines, r),
        _fact("jaxlib_version", report.jaxlib_version, start, lines, r),
        _fact("python_version", report.python_version, start, lines, r),
        _fact("jax_backend", report.backend, start, lines, r),
        _fact("framework", "jax", start, lines, r),
    ]
    if report.backend == "gpu" and report.device_kind:
        found += [
            _fact("gpu", report.device_kind, start, lines, r, index=n)
            for n in range(report.device_count or 1)
        ]
    return _keep(found)


# -- Jetson, containers -------------------------------------------------------------------------


def _tegra(text: Text, line: int) -> list[Fact]:
    start, lines = _window(text, line, 0, 0)
    release = parse_nv_tegra_release(lines[0] if lines else "")
    return _keep([_fact("l4t", release, start, [f"{lines[0]} {release}"], "/etc/nv_tegra_release")])


def _jetson_release(text: Text, line: int) -> list[Fact]:
    start, lines = _window(text, line, 3, 10)
    report = parse_jetson_release("\n".join(lines))
    if report.l4t_release is None and report.model is None:
        return []
    r = "jetson_release"
    return _keep(
        [
            _fact("jetson_model", report.model, start, lines, r),
            _fact("l4t", report.l4t_release, start, lines, r),
            _fact("jetpack", report.jetpack, start, lines, r),
            _fact("toolkit_cuda", report.cuda, start, lines, r),
            _fact("os", "linux", start, lines, r) if report.l4t_release else None,
        ]
    )


def _container_info(text: Text, line: int) -> list[Fact]:
    start, lines = _window(text, line, 3, 80)
    info = containers.parse_container_info(lines)
    if info is None:
        return []
    r = "nvidia-container-cli info" if info.driver_version else "docker info"
    found = [
        _fact("driver_version", info.driver_version, start, lines, r),
        _fact("driver_max_cuda", info.driver_max_cuda, start, lines, r),
        _fact("default_runtime", info.default_runtime, start, lines, r),
    ]
    found += [_fact("gpu", g.model, start, lines, r, cc=g.architecture) for g in info.gpus]
    return _keep(found)


READERS: tuple[tuple[str, tuple[str, ...], Reader], ...] = (
    (
        "collect_env",
        ("collecting environment information", "pytorch version:", "cuda available:"),
        _collect_env,
    ),
    ("nvidia-smi", ("driver version:",), _smi_table),
    (
        "nvidia-smi error",
        (
            "nvidia-smi has failed",
            "failed to initialize nvml",
            "no devices were found",
            "unable to determine the device handle",
            "gpu is lost",
            "find libnvidia-ml",
        ),
        _smi_errors,
    ),
    ("nvidia-smi --query-gpu", ("--query-gpu=",), _smi_query),
    ("nvidia-smi -q", ("attached gpus", "nvsmi log", "<nvidia_smi_log"), _smi_q),
    ("nvidia-smi -L", ("(uuid: gpu-",), _smi_list),
    ("nvcc --version", ("cuda compilation tools",), _nvcc),
    ("conda info", ("virtual packages :", "conda version :"), _conda_info),
    (
        "conda list",
        ("# packages in environment at", "conda list", "[conda] ", " conda-forge", " pypi_0"),
        _conda_list,
    ),
    ("pip", ("pip list", "pip freeze", "successfully installed", "[pip3] ", "[pip] "), _pip),
    (
        "tensorflow",
        (
            "'is_cuda_build'",
            "dso_loader",
            "skipping registering gpu devices",
            "created device /job",
            "with properties:",
            "couldn't open cuda library",
        ),
        _tensorflow,
    ),
    ("jax", ("jaxlib:",), _jax),
    ("nv_tegra_release", ("(release), revision:",), _tegra),
    ("jetson_release", ("l4t ",), _jetson_release),
    ("nvidia-container-cli info", ("nvrm version:", "default runtime:"), _container_info),
)
LANDMARKS = tuple(dict.fromkeys(landmark for _, marks, _ in READERS for landmark in marks))
