"""Pure parsers for what the NVIDIA driver tools print: nvidia-smi (table, --query-gpu CSV),
/proc/driver/nvidia/version and /sys/module/nvidia/version (`-q`, `-q -x` and `-L` are in
`gpuenv.parse.smi_q`).

They take text (live output or a paste with prompts, quote marks and cut tables) and return what
can be trusted, with a `problem` for anything garbled or cut short. They never raise.
"""

from __future__ import annotations

import csv
import dataclasses
import re
from dataclasses import dataclass

# Error states nvidia-smi prints; the first three are also facts.DRIVER_FAILURES values.
SMI_ERRORS = (
    "no_driver_communication",  # "NVIDIA-SMI has failed because it couldn't communicate ..."
    "nvml_mismatch",  # "Failed to initialize NVML: Driver/library version mismatch"
    "no_devices",  # "No devices were found"
    "nvml_unavailable",  # "NVIDIA-SMI couldn't find libnvidia-ml.so library in your system."
    "nvml_no_permission",  # "Failed to initialize NVML: Insufficient Permissions"
    "nvml_unknown_error",  # "Failed to initialize NVML: Unknown Error" (containers, cgroups)
    "nvml_init_failed",  # any other "Failed to initialize NVML: ..."
    "device_handle_unknown_error",  # "Unable to determine the device handle for GPU…: Unknown …"
    "gpu_lost",  # "... : GPU is lost. Reboot the system to recover this GPU"
    "device_handle_error",  # any other "Unable to determine the device handle ..."
)

_ERROR_PATTERNS = (
    ("no_driver_communication", re.compile(r"NVIDIA-SMI has failed because it couldn\S{1,3}t")),
    ("nvml_mismatch", re.compile(r"Driver/library version mismatch", re.IGNORECASE)),
    ("no_devices", re.compile(r"No devices were found")),
    ("nvml_unavailable", re.compile(r"couldn\S{1,3}t find libnvidia-ml", re.IGNORECASE)),
    ("nvml_no_permission", re.compile(r"Failed to initialize NVML: Insufficient Permissions")),
    ("nvml_unknown_error", re.compile(r"Failed to initialize NVML: Unknown Error")),
    ("nvml_init_failed", re.compile(r"Failed to initialize NVML")),
    ("gpu_lost", re.compile(r"GPU is lost")),
    ("device_handle_unknown_error", re.compile(r"device handle for GPU.*Unknown Error")),
    ("device_handle_error", re.compile(r"Unable to determine the device handle")),
)
BUS_ID = r"[0-9A-Fa-f]{4,8}:[0-9A-Fa-f]{2}:[0-9A-Fa-f]{2}\.[0-7]"
_BUS_ID_RE = re.compile(BUS_ID)
VERSION = r"\d+(?:\.\d+)+"
_SMI_VERSION_RE = re.compile(rf"NVIDIA-SMI\s+({VERSION})")
_DRIVER_RE = re.compile(rf"Driver Version\s*:\s*({VERSION})")
_CUDA_RE = re.compile(rf"CUDA (?:UMD )?Version\s*:\s*({VERSION})")
_NVML_LIB_RE = re.compile(rf"NVML library version\s*:\s*({VERSION})")
_GPU_ROW_RE = re.compile(r"^[>\s]*\|\s+(\d+)\s+(.+?)\s+(On|Off|N/A|WDDM|TCC|MCDM)\s*\|\s*(\S+)")
_MEMORY_RE = re.compile(r"(\d+)\s*MiB\s*/\s*(\d+)\s*MiB")
_MIG_CELL_RE = re.compile(r"^[>\s]*\|\s+\|\s+\|\s+(Enabled|Disabled|N/A)\s*\|")
_MIG_DEVICE_RE = re.compile(
    r"^[>\s]*\|\s+(\d+)\s+(\d+)\s+(\d+)\s+(\d+)\s+\|\s+\d+\s*MiB\s*/\s*(\d+)\s*MiB"
)
_CONTROL_RE = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f\ufffd]")


@dataclass(frozen=True)
class SmiError:
    code: str  # one of SMI_ERRORS
    line: str  # the line that said so
    bus_id: str | None = None


@dataclass(frozen=True)
class SmiGpu:
    """One GPU as a driver tool printed it; fields the output did not have are None."""

    index: int | None
    name: str | None  # as printed: the table truncates long names ("Tesla V100-PCIE...")
    memory_mib: int | None = None
    mig_mode: str | None = None  # "Enabled" | "Disabled" | None
    bus_id: str | None = None
    pci_id: str | None = None  # as printed, device + vendor: "0x220410DE"
    compute_capability: str | None = None
    uuid: str | None = None
    driver_version: str | None = None
    driver_model: str | None = None  # Windows: "WDDM" | "TCC" | "MCDM"
    vbios_version: str | None = None

    @property
    def pci_device_id(self) -> str | None:
        return normalize_pci_device_id(self.pci_id)


@dataclass(frozen=True)
class SmiMigDevice:
    gpu: int
    gi_id: int
    ci_id: int
    mig_dev: int
    memory_mib: int


@dataclass(frozen=True)
class SmiHeader:
    """Plain `nvidia-smi`: the banner, the GPU table and any error it printed instead."""

    smi_version: str | None = None  # "NVIDIA-SMI 595.71.01": the user-space tools' own number
    driver_version: str | None = None  # "Driver Version": under WSL the Windows driver
    driver_max_cuda: str | None = None  # "CUDA Version"
    gpus: tuple[SmiGpu, ...] = ()
    mig_devices: tuple[SmiMigDevice, ...] = ()
    errors: tuple[SmiError, ...] = ()
    nvml_library_version: str | None = None  # printed after a version mismatch
    problem: str | None = None


@dataclass(frozen=True)
class SmiQuery:
    """`nvidia-smi --query-gpu=... --format=csv`: one row per GPU."""

    fields: tuple[str, ...]
    gpus: tuple[SmiGpu, ...] = ()
    format: str | None = None  # when the text shows the command, e.g. "csv,noheader"
    invalid_fields: tuple[str, ...] = ()  # 'Field "compute_cap" is not a valid field to query.'
    errors: tuple[SmiError, ...] = ()
    problem: str | None = None


def normalize_pci_device_id(value: str | int | None) -> str | None:
    """0x220410DE (nvidia-smi), 572854494 (NVML's pciDeviceId) or 0x2204 -> '0x2204'."""
    if value is None or isinstance(value, bool):
        return None
    if isinstance(value, int):
        number = value
    else:
        match = re.fullmatch(r"(?:0x)?([0-9a-f]{1,8})", value.strip().lower())
        if not match:
            return None
        number = int(match.group(1), 16)
    if not 0 <= number <= 0xFFFFFFFF:
        return None
    return f"0x{number >> 16:04x}" if number > 0xFFFF else f"0x{number:04x}"


def clean_text(text: str) -> tuple[str, str | None]:
    """Drop control characters and binary noise; say so when there was any."""
    unified = text.replace("\r\n", "\n").replace("\r", "\n")
    cleaned, count = _CONTROL_RE.subn("", unified)
    if count == 0:
        return cleaned, None
    return cleaned, f"output contains {count} non-text character(s); they were ignored"


def find_smi_errors(text: str) -> tuple[SmiError, ...]:
    """The error states printed in `text`, one per line, first matching pattern wins."""
    found: list[SmiError] = []
    for line in text.splitlines():
        for code, pattern in _ERROR_PATTERNS:
            if pattern.search(line):
                bus = _BUS_ID_RE.search(line) if code.startswith(("device_", "gpu_")) else None
                found.append(SmiError(code, line.strip(), bus.group(0) if bus else None))
                break
    return tuple(found)


def parse_smi_header(text: str) -> SmiHeader:
    """Plain `nvidia-smi` output (any driver generation, Linux, WSL, Windows, Jetson)."""
    cleaned, noise = clean_text(text)
    lines = cleaned.splitlines()
    gpus, cut = _table_gpus(lines, has_mig_column="MIG M." in cleaned)
    errors = find_smi_errors(cleaned)
    header = SmiHeader(
        smi_version=_first(_SMI_VERSION_RE, cleaned),
        driver_version=_first(_DRIVER_RE, cleaned),
        driver_max_cuda=_first(_CUDA_RE, cleaned),
        gpus=gpus,
        mig_devices=_mig_devices(lines),
        errors=errors,
        nvml_library_version=_first(_NVML_LIB_RE, cleaned),
    )
    problems = [p for p in (noise, cut) if p]
    if header.smi_version is None and header.driver_version is None and not errors:
        problems.append("no nvidia-smi banner or known error message found")
    elif header.smi_version is not None and header.driver_version is None:
        problems.append("the banner has no readable Driver Version")
    return _with_problem(header, problems)


def _table_gpus(lines: list[str], has_mig_column: bool) -> tuple[tuple[SmiGpu, ...], str | None]:
    gpus: list[SmiGpu] = []
    cut: str | None = None
    for number, line in enumerate(lines):
        row = _GPU_ROW_RE.match(line)
        if not row:
            continue
        block, closed = _block_after(lines, number)
        memory = next((m for m in map(_MEMORY_RE.search, block) if m), None)
        mig = next((m.group(1) for m in map(_MIG_CELL_RE.match, block) if m), None)
        bus = row.group(4) if _BUS_ID_RE.fullmatch(row.group(4)) else None
        index = int(row.group(1))
        gpus.append(
            SmiGpu(
                index=index,
                name=row.group(2).strip(),
                memory_mib=int(memory.group(2)) if memory else None,
                mig_mode=mig if has_mig_column and mig in ("Enabled", "Disabled") else None,
                bus_id=bus,
            )
        )
        if memory is None and not closed:
            cut = f"the output ends inside the entry of GPU {index}"
    return tuple(gpus), cut


def _block_after(lines: list[str], number: int) -> tuple[list[str], bool]:
    """The rows of the GPU row at `number`, up to the next separator or GPU row; and whether the
    entry ends properly (False when the text stops first)."""
    block: list[str] = []
    for line in lines[number + 1 : number + 4]:
        if line.lstrip("> ").startswith(("+", "|=")) or _GPU_ROW_RE.match(line):
            return block, True
        block.append(line)
    return block, len(block) == 3


def _mig_devices(lines: list[str]) -> tuple[SmiMigDevice, ...]:
    devices: list[SmiMigDevice] = []
    inside = False
    for line in lines:
        if "MIG devices:" in line:
            inside = True
        elif "Processes:" in line:
            inside = False
        match = _MIG_DEVICE_RE.match(line) if inside else None
        if match:
            gpu, gi_id, ci_id, mig_dev, memory = (int(g) for g in match.groups())
            devices.append(SmiMigDevice(gpu, gi_id, ci_id, mig_dev, memory))
    return tuple(devices)


def _first(pattern: re.Pattern[str], text: str) -> str | None:
    match = pattern.search(text)
    return match.group(1) if match else None


def _with_problem(header: SmiHeader, problems: list[str]) -> SmiHeader:
    if not problems:
        return header
    return dataclasses.replace(header, problem="; ".join(problems))


# --- nvidia-smi --query-gpu ------------------------------------------------------------------

_FIELD_ALIASES = {
    "gpu_name": "name",
    "gpu_uuid": "uuid",
    "gpu_bus_id": "pci.bus_id",
    "compute_capability": "compute_cap",
    "memory.total": "memory.total",
}
_INVALID_FIELD_RE = re.compile(r'Field "([^"]+)" is not a valid field to query')
_QUERY_CMD_RE = re.compile(r"--query-gpu=(\S+)")
_FORMAT_CMD_RE = re.compile(r"--format=(\S+)")


def parse_smi_query_csv(text: str, fields: tuple[str, ...] | None = None) -> SmiQuery:
    """CSV rows of `--query-gpu`; `fields` as asked, else read from a pasted command line."""
    cleaned, noise = clean_text(text)
    asked = fields or _fields_from_command(cleaned)
    fmt = _first(_FORMAT_CMD_RE, cleaned)
    problems = [noise] if noise else []
    if not asked:
        return SmiQuery((), format=fmt, problem="the queried fields are not known")
    invalid = tuple(m.group(1) for m in _INVALID_FIELD_RE.finditer(cleaned))
    errors = find_smi_errors(cleaned)
    gpus: list[SmiGpu] = []
    for line in _data_lines(cleaned, asked):
        cells = next(csv.reader([line], skipinitialspace=True), [])
        if len(cells) != len(asked):
            problems.append(f"a row has {len(cells)} values, expected {len(asked)}: {line[:80]!r}")
            continue
        gpu, bad = _row_gpu(asked, cells)
        gpus.append(gpu)
        problems.extend(bad)
    return SmiQuery(asked, tuple(gpus), fmt, invalid, errors, "; ".join(problems) or None)


def _fields_from_command(text: str) -> tuple[str, ...]:
    match = _QUERY_CMD_RE.search(text)
    return tuple(f.strip() for f in match.group(1).split(",") if f.strip()) if match else ()


_QUOTED_RE = re.compile(r"'([^'\n]*)'|\"([^\"\n]*)\"")


def _data_lines(text: str, fields: tuple[str, ...]) -> list[str]:
    """Lines that can be data rows: not the command, a header, an error or a blank line; a
    Python list of rows printed by a script (`['200.00, 105.00, ...', '']`) gives its items."""
    keep: list[str] = []
    for raw in _unlisted(text.splitlines()):
        line = raw.strip().lstrip(">").strip()
        if not line or "nvidia-smi" in line or line.startswith(("$", "#")):
            continue
        if _INVALID_FIELD_RE.search(line) or find_smi_errors(line):
            continue
        if line.split(",")[0].strip().split(" [")[0] == fields[0] and "," in line:
            continue  # the header row of --format=csv
        keep.append(line)
    return keep


def _unlisted(lines: list[str]) -> list[str]:
    out: list[str] = []
    for line in lines:
        stripped = line.strip()
        if stripped.startswith("[") and stripped.endswith("]") and _QUOTED_RE.search(stripped):
            out += [a or b for a, b in _QUOTED_RE.findall(stripped) if a or b]
        else:
            out.append(line)
    return out


def _row_gpu(fields: tuple[str, ...], cells: list[str]) -> tuple[SmiGpu, list[str]]:
    values: dict[str, str | None] = {}
    for field, cell in zip(fields, cells):
        value = cell.strip()
        unknown = not value or value.startswith("[") or value in ("N/A", "Not Supported")
        values[_FIELD_ALIASES.get(field, field)] = None if unknown else value
    problems: list[str] = []
    index = _as_int(values.get("index"), "index", problems)
    memory = _as_int(strip_unit(values.get("memory.total")), "memory.total", problems)
    cc = values.get("compute_cap")
    if cc is not None and not re.fullmatch(r"\d+\.\d+", cc):
        problems.append(f"compute_cap {cc!r} is not a version")
        cc = None
    mig = values.get("mig.mode.current")
    gpu = SmiGpu(
        index=index,
        name=values.get("name"),
        memory_mib=memory,
        mig_mode=mig if mig in ("Enabled", "Disabled") else None,
        bus_id=values.get("pci.bus_id"),
        pci_id=values.get("pci.device_id"),
        compute_capability=cc,
        uuid=values.get("uuid"),
        driver_version=values.get("driver_version"),
        vbios_version=values.get("vbios_version"),
    )
    return gpu, problems


def strip_unit(value: str | None) -> str | None:
    return value.replace("MiB", "").strip() if value is not None else None


def _as_int(value: str | None, name: str, problems: list[str]) -> int | None:
    if value is None:
        return None
    if value.isdigit():
        return int(value)
    problems.append(f"{name} {value!r} is not a number")
    return None


# --- kernel module ---------------------------------------------------------------------------

_NVRM_RE = re.compile(rf"NVRM version:.*?Kernel Module(?: for \S+)?\s+({VERSION})")


@dataclass(frozen=True)
class KernelModuleVersion:
    version: str | None
    open_kernel: bool | None  # "Open Kernel Module" (the open GPU kernel modules) or not
    problem: str | None = None


def parse_proc_driver_version(text: str) -> KernelModuleVersion:
    """/proc/driver/nvidia/version: 'NVRM version: NVIDIA UNIX x86_64 Kernel Module  535.183.01'."""
    cleaned, _ = clean_text(text)
    match = _NVRM_RE.search(cleaned)
    if not match:
        return KernelModuleVersion(None, None, "no 'NVRM version: … Kernel Module <version>' line")
    return KernelModuleVersion(match.group(1), "Open Kernel Module" in match.group(0))


def parse_module_version(text: str) -> str | None:
    """/sys/module/nvidia/version holds the bare version: '535.183.01\\n'."""
    value = clean_text(text)[0].strip()
    return value if re.fullmatch(VERSION, value) else None
