"""The NVIDIA driver and its GPUs, from every source that answers.

Sources: the kernel module's files, NVML and libcuda (loaded in a child process), nvidia-smi (the
--query-gpu CSV and the plain banner), the file name of the user-space NVML library. Each source
gives its own Observation, so a disagreement (a version mismatch, WSL's Windows driver number) is
visible; a source that did not answer gives one with the reason. Failure states go to
DriverFacts.failures as facts.DRIVER_FAILURES values; judging them is diagnose's work.
"""

from __future__ import annotations

import re
import sys
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING

from gpuenv.facts import DRIVER_FAILURES, DriverFacts, GpuFacts, Observation, missing
from gpuenv.parse.smi import (
    SmiError,
    SmiGpu,
    SmiQuery,
    normalize_pci_device_id,
    parse_module_version,
    parse_proc_driver_version,
    parse_smi_header,
    parse_smi_query_csv,
)
from gpuenv.probe.access import CommandResult, MachineAccess
from gpuenv.probe.host import TEGRA_RELEASE, probe_wsl
from gpuenv.versions import CudaVersion

if TYPE_CHECKING:
    from gpuenv.probe.nvml_child import NvmlReport

SYS_MODULE_VERSION = "/sys/module/nvidia/version"
PROC_DRIVER_VERSION = "/proc/driver/nvidia/version"
NVML_CHILD_MODULE = "gpuenv.probe.nvml_child"
SMI_QUERY_FIELDS = (
    "index",
    "name",
    "pci.device_id",
    "compute_cap",
    "memory.total",
    "mig.mode.current",
    "uuid",
    "driver_version",
)
SMI_FORMAT = "--format=csv,noheader,nounits"
WSL_SMI = "/usr/lib/wsl/lib/nvidia-smi"
WINDOWS_SMI = ("nvidia-smi.exe", r"C:\Program Files\NVIDIA Corporation\NVSMI\nvidia-smi.exe")
NVML_LIBRARY_DIRS = (
    "/usr/lib/x86_64-linux-gnu",
    "/usr/lib/aarch64-linux-gnu",
    "/usr/lib64",
    "/usr/lib",
)
_NVML_FILE_RE = re.compile(r"libnvidia-ml\.so\.(\d+\.\d+(?:\.\d+)?)$")
# nvidia-smi error states that are DRIVER_FAILURES values under another name
_SMI_FAILURES: dict[str, str] = {}
_NVML_INIT_FAILURES = {
    "nvml_mismatch": "nvml_mismatch",
    "driver_not_loaded": "no_driver_communication",
    "no_permission": "device_nodes_unreadable",
}
_DRIVER_FAILURES = frozenset(DRIVER_FAILURES)

# Source names, one per place a fact comes from
SRC_NVML_DRIVER = "nvml:nvmlSystemGetDriverVersion"
SRC_NVML_CUDA = "nvml:nvmlSystemGetCudaDriverVersion"
SRC_LIBCUDA = "libcuda:cuDriverGetVersion"
SRC_SMI_QUERY = "nvidia-smi --query-gpu=driver_version"
SRC_SMI_CUDA = "nvidia-smi banner: CUDA Version"


@dataclass(frozen=True)
class _Part:
    """What one source contributed."""

    versions: tuple[Observation[str], ...] = ()
    max_cuda: tuple[Observation[str], ...] = ()
    failures: tuple[Observation[str], ...] = ()
    gpus: tuple[GpuFacts, ...] = ()


def probe_driver(
    machine: MachineAccess, timeout: float = 10.0
) -> tuple[DriverFacts, tuple[GpuFacts, ...]]:
    system = machine.system()
    if system == "Darwin":
        return DriverFacts(versions=(missing("nvidia driver", "macOS has no CUDA driver"),)), ()
    linux = system == "Linux"
    wsl = linux and probe_wsl(machine).value is True
    kernel = _kernel_module(machine) if linux else _Part()
    nvml = _nvml(machine, timeout)
    smi = _smi(machine, timeout, system, wsl)
    parts = [kernel, nvml, smi, _visible_devices(machine.environ())]
    if linux:
        parts.append(_nvml_library_files(machine, nvml))
    if linux and not wsl and not machine.exists(TEGRA_RELEASE) and _known(kernel.versions):
        parts.append(_device_nodes(machine))
    facts = DriverFacts(
        versions=tuple(o for p in parts for o in p.versions),
        max_cuda=tuple(o for p in parts for o in p.max_cuda),
        failures=tuple(o for p in parts for o in p.failures),
    )
    return facts, nvml.gpus or smi.gpus


def _known(observations: Iterable[Observation[str]]) -> bool:
    return any(o.known for o in observations)


def _failure(value: str, source: str, raw: str | None) -> Observation[str]:
    return Observation(value, source, raw)


# --- kernel module -------------------------------------------------------------------------------


def _kernel_module(machine: MachineAccess) -> _Part:
    sys_source = f"kernel-module:{SYS_MODULE_VERSION}"
    proc_source = f"kernel-module:{PROC_DRIVER_VERSION}"
    found: list[Observation[str]] = []
    read = machine.read_text(SYS_MODULE_VERSION)
    if read.text is None:
        found.append(missing(sys_source, read.problem or "unreadable"))
    else:
        value = parse_module_version(read.text)
        problem = None if value else "not a version number"
        found.append(Observation(value, sys_source, read.text.strip()[:80], problem))
    read = machine.read_text(PROC_DRIVER_VERSION)
    if read.text is None:
        found.append(missing(proc_source, read.problem or "unreadable"))
    else:
        parsed = parse_proc_driver_version(read.text)
        first = read.text.strip().splitlines()[0][:200] if read.text.strip() else ""
        found.append(Observation(parsed.version, proc_source, first, parsed.problem))
    return _Part(versions=tuple(found))


# --- NVML and libcuda, in a child process --------------------------------------------------------


def _nvml(machine: MachineAccess, timeout: float) -> _Part:
    result = machine.run([sys.executable, "-m", NVML_CHILD_MODULE], timeout=timeout)
    if result.timed_out:
        raw = f"the NVML child timed out after {result.elapsed_s:.0f} s"
        lost = (missing(SRC_NVML_DRIVER, raw),)
        return _Part(lost, (missing(SRC_NVML_CUDA, raw),), (_failure("timed_out", "nvml", raw),))
    # Imported here: `python -m gpuenv.probe.nvml_child` runs this package's __init__ first, and
    # runpy warns when the module it is about to run was already imported by that.
    from gpuenv.probe.nvml_child import parse_child_output

    report = parse_child_output(result.stdout) if result.returncode == 0 else None
    if report is None:
        problem = "the NVML child " + (
            _child_problem(result) if result.returncode != 0 else "printed no report"
        )
        return _Part((missing(SRC_NVML_DRIVER, problem),), (missing(SRC_NVML_CUDA, problem),))
    versions = [_nvml_driver(report)]
    library = _nvml_library_version(report.nvml.path or "")
    if library is not None:
        versions.append(library)
    return _Part(
        versions=tuple(versions),
        max_cuda=(_nvml_cuda(report), _libcuda_cuda(report)),
        failures=tuple(_nvml_failures(report)),
        gpus=tuple(_nvml_gpu(report, i) for i in range(len(report.devices))),
    )


def _child_problem(result: CommandResult) -> str:
    if result.not_found or result.error:
        return f"could not start: {result.error or 'interpreter not found'}"
    last = (result.stderr.strip().splitlines() or ["no output"])[-1]
    return f"exited with {result.returncode}: {last[:200]}"


def _nvml_problem(report: NvmlReport) -> str | None:
    answer = report.nvml
    if answer.load_error:
        return f"libnvidia-ml not loadable: {answer.load_error}"
    if answer.error_name:
        text = f": {answer.error_text}" if answer.error_text else ""
        return f"nvmlInit failed with {answer.error_name} ({answer.error_code}){text}"
    return None


def _nvml_driver(report: NvmlReport) -> Observation[str]:
    if report.driver_version:
        return Observation(report.driver_version, SRC_NVML_DRIVER, report.driver_version)
    return missing(SRC_NVML_DRIVER, _nvml_problem(report) or "; ".join(report.problems) or "none")


def _nvml_cuda(report: NvmlReport) -> Observation[str]:
    version = CudaVersion.parse(report.nvml_cuda_version)
    if version is not None:
        return Observation(str(version), SRC_NVML_CUDA, str(report.nvml_cuda_version))
    return missing(SRC_NVML_CUDA, _nvml_problem(report) or "no answer")


def _libcuda_cuda(report: NvmlReport) -> Observation[str]:
    version = CudaVersion.parse(report.cuda_driver_version)
    if version is not None:
        return Observation(str(version), SRC_LIBCUDA, str(report.cuda_driver_version))
    if report.cuda.load_error:
        return missing(SRC_LIBCUDA, f"libcuda not loadable: {report.cuda.load_error}")
    return missing(SRC_LIBCUDA, f"cuDriverGetVersion failed: {report.cuda.error_name}")


def _nvml_failures(report: NvmlReport) -> list[Observation[str]]:
    found: list[Observation[str]] = []
    if report.nvml.load_error:
        found.append(_failure("nvml_unavailable", "nvml", report.nvml.load_error))
    failure = _NVML_INIT_FAILURES.get(report.nvml.error_name or "")
    if failure is not None:
        found.append(_failure(failure, "nvml:nvmlInit", _nvml_problem(report)))
    elif report.nvml.error_name:  # an NVML error with no DRIVER_FAILURES name: kept, value None
        found.append(missing("nvml:nvmlInit", report.nvml.error_name, _nvml_problem(report)))
    if report.device_count == 0:
        found.append(_failure("no_devices", "nvml:nvmlDeviceGetCount", "0 devices"))
    if report.cuda.load_error:
        found.append(_failure("libcuda_unavailable", "libcuda", report.cuda.load_error))
    return found


def _nvml_gpu(report: NvmlReport, position: int) -> GpuFacts:
    device = report.devices[position]
    return GpuFacts(
        index=device.index,
        name=device.name,
        source="nvml",
        pci_device_id=normalize_pci_device_id(device.pci_device_id),
        compute_capability=device.compute_capability,
        memory_mib=device.memory_mib,
        mig_mode=device.mig_mode,
        uuid=device.uuid,
    )


def _nvml_library_version(path: str) -> Observation[str] | None:
    """The user-space driver version in the NVML library's file name: libnvidia-ml.so.535.183.01
    (what a kernel module of another version refuses to talk to)."""
    match = _NVML_FILE_RE.search(path)
    return Observation(match.group(1), f"nvml-library-file:{path}", path) if match else None


def _nvml_library_files(machine: MachineAccess, nvml: _Part) -> _Part:
    seen = {o.source for o in nvml.versions}
    found: list[Observation[str]] = []
    for folder in NVML_LIBRARY_DIRS:
        link = f"{folder}/libnvidia-ml.so.1"
        observation = (
            _nvml_library_version(machine.realpath(link)) if machine.exists(link) else None
        )
        if observation is not None and observation.source not in seen:
            seen.add(observation.source)
            found.append(observation)
    return _Part(versions=tuple(found))


# --- nvidia-smi ----------------------------------------------------------------------------------


def _smi_programs(system: str, wsl: bool) -> tuple[str, ...]:
    if system == "Windows":
        return WINDOWS_SMI
    return (WSL_SMI, "nvidia-smi") if wsl else ("nvidia-smi",)


def _smi(machine: MachineAccess, timeout: float, system: str, wsl: bool) -> _Part:
    program, query_result, fields = _run_query(machine, _smi_programs(system, wsl), timeout)
    if program is None or query_result.timed_out:
        return _smi_silent(query_result)
    query = parse_smi_query_csv(_output(query_result), fields)
    banner_result = machine.run([program], timeout=timeout)
    if banner_result.timed_out:
        return _merge(_smi_query_part(query, query_result), _smi_silent(banner_result))
    banner = parse_smi_header(_output(banner_result))
    errors = _unique_errors(query.errors + banner.errors)
    versions = list(_smi_query_part(query, query_result).versions)
    versions += _banner_versions(banner.driver_version, banner.smi_version, wsl)
    if banner.nvml_library_version:
        source = "nvidia-smi: NVML library version"
        versions.append(Observation(banner.nvml_library_version, source, source))
    why = "; ".join(e.line for e in errors) or banner.problem or query.problem
    if not _known(versions):
        versions.append(missing("nvidia-smi", why or _command_problem(banner_result)))
    cuda = (
        Observation(banner.driver_max_cuda, SRC_SMI_CUDA, banner.driver_max_cuda)
        if banner.driver_max_cuda
        else missing(SRC_SMI_CUDA, why or "no CUDA Version in the banner")
    )
    gpus = _smi_gpus(query.gpus, "nvidia-smi --query-gpu") or _smi_gpus(banner.gpus, "nvidia-smi")
    return _Part(tuple(versions), (cuda,), tuple(_smi_failure(e) for e in errors), gpus)


def _run_query(
    machine: MachineAccess, programs: tuple[str, ...], timeout: float
) -> tuple[str | None, CommandResult, tuple[str, ...]]:
    """The first program that exists; fields the driver does not know (compute_cap on old drivers,
    mig.mode.current before R450) are dropped and the query asked again."""
    fields: tuple[str, ...] = SMI_QUERY_FIELDS
    result = CommandResult(("nvidia-smi",), None, not_found=True)
    for program in programs:
        for _ in range(3):
            argv = [program, "--query-gpu=" + ",".join(fields), SMI_FORMAT]
            result = machine.run(argv, timeout=timeout)
            if result.not_found or result.timed_out:
                break
            invalid = parse_smi_query_csv(_output(result), fields).invalid_fields
            if not invalid or not set(invalid) & set(fields):
                return program, result, fields
            fields = tuple(f for f in fields if f not in invalid)
        if not result.not_found:
            return program, result, fields
    return None, result, fields


def _output(result: CommandResult) -> str:
    return result.stdout + ("\n" + result.stderr if result.stderr else "")


def _command_problem(result: CommandResult) -> str:
    return result.problem() or "no output"


def _smi_silent(result: CommandResult) -> _Part:
    """nvidia-smi missing or hanging."""
    problem = _command_problem(result)
    versions = (missing("nvidia-smi", problem),)
    cuda = (missing(SRC_SMI_CUDA, problem),)
    if result.timed_out:
        return _Part(versions, cuda, (_failure("timed_out", "nvidia-smi", problem),))
    return _Part(versions, cuda)


def _smi_query_part(query: SmiQuery, result: CommandResult) -> _Part:
    seen: list[str] = []
    for gpu in query.gpus:
        if gpu.driver_version and gpu.driver_version not in seen:
            seen.append(gpu.driver_version)
    raw = result.stdout.strip()[:300]
    return _Part(versions=tuple(Observation(v, SRC_SMI_QUERY, raw) for v in seen))


def _banner_versions(driver: str | None, smi: str | None, wsl: bool) -> list[Observation[str]]:
    """Under WSL the banner's Driver Version is the Windows driver and NVIDIA-SMI the Linux-side
    user-space number; elsewhere they are the same and the second is not repeated."""
    found: list[Observation[str]] = []
    if driver:
        label = " (Windows host driver)" if wsl else ""
        found.append(Observation(driver, f"nvidia-smi banner: Driver Version{label}", driver))
    if smi and (wsl or smi != driver):
        label = " (WSL user-space)" if wsl else ""
        found.append(Observation(smi, f"nvidia-smi banner: NVIDIA-SMI{label}", smi))
    return found


def _unique_errors(errors: tuple[SmiError, ...]) -> list[SmiError]:
    seen: dict[str, SmiError] = {}
    for error in errors:
        seen.setdefault(error.code, error)
    return list(seen.values())


def _smi_failure(error: SmiError) -> Observation[str]:
    value = _SMI_FAILURES.get(error.code, error.code)
    if value in _DRIVER_FAILURES or value == "device_nodes_unreadable":
        return _failure(value, "nvidia-smi", error.line)
    # an error state with no DRIVER_FAILURES name: value None, the code in `problem`
    return missing("nvidia-smi", error.code, error.line)


def _smi_gpus(rows: tuple[SmiGpu, ...], source: str) -> tuple[GpuFacts, ...]:
    return tuple(
        GpuFacts(
            index=row.index if row.index is not None else position,
            name=row.name,
            source=source,
            pci_device_id=row.pci_device_id,
            compute_capability=row.compute_capability,
            memory_mib=row.memory_mib,
            mig_mode=row.mig_mode,
            uuid=row.uuid,
        )
        for position, row in enumerate(rows)
    )


def _merge(first: _Part, second: _Part) -> _Part:
    return _Part(
        first.versions + second.versions,
        first.max_cuda + second.max_cuda,
        first.failures + second.failures,
        first.gpus + second.gpus,
    )


# --- device nodes, visible devices ---------------------------------------------------------------


def _device_nodes(machine: MachineAccess) -> _Part:
    names = machine.list_dir("/dev")
    if names is None:
        names = [n for n in ("nvidiactl", "nvidia0") if machine.exists(f"/dev/{n}")]
    absent = [] if "nvidiactl" in names else ["/dev/nvidiactl"]
    if not any(re.fullmatch(r"nvidia\d+", n) for n in names):
        absent.append("/dev/nvidia0 (no /dev/nvidia<N>)")
    if not absent:
        return _Part()
    raw = "the kernel module is loaded but these are absent: " + ", ".join(absent)
    return _Part(failures=(_failure("device_nodes_missing", "/dev", raw),))


def _visible_devices(env: Mapping[str, str]) -> _Part:
    found: list[Observation[str]] = []
    cuda = env.get("CUDA_VISIBLE_DEVICES")
    # CUDA reads the list up to the first invalid entry: "" and "-1,..." leave no device
    if cuda is not None and (not cuda.strip() or cuda.split(",")[0].strip() == "-1"):
        found.append(_failure("visible_devices_hide_all", "CUDA_VISIBLE_DEVICES", repr(cuda)))
    nvidia = env.get("NVIDIA_VISIBLE_DEVICES")
    if nvidia is not None and nvidia.strip().lower() in ("void", "none"):
        found.append(_failure("visible_devices_hide_all", "NVIDIA_VISIBLE_DEVICES", nvidia))
    return _Part(failures=tuple(found))
