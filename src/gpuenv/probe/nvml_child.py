"""Ask NVML and libcuda for the driver's versions and GPUs, in a child process.

Run as `python -m gpuenv.probe.nvml_child`: it loads libnvidia-ml and libcuda (a broken driver can
crash or hang a process that loads them, so never in gpuenv's own: the parent runs this child with
a deadline and reads its one JSON document). NVML is queried through NVIDIA's own Python bindings
(nvidia-ml-py, `pynvml`), handed the library this module found (the bindings look only by name,
which misses WSL's folder); libcuda's single call (cuDriverGetVersion) is made with ctypes. Every
failure (library missing, NVML error codes) becomes a field of the document, never a traceback.
`parse_child_output` is the parent's side of the same format.
"""

from __future__ import annotations

import contextlib
import ctypes
import json
import os
import sys
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

FORMAT = 1
# NVML return codes worth a name (nvml.h, nvmlReturn_t)
NVML_ERRORS = {
    1: "uninitialized",
    2: "invalid_argument",
    3: "not_supported",
    4: "no_permission",
    6: "not_found",
    7: "insufficient_size",
    9: "driver_not_loaded",
    10: "timeout",
    12: "library_not_found",
    13: "function_not_found",
    15: "gpu_is_lost",
    17: "operating_system",
    18: "nvml_mismatch",  # NVML_ERROR_LIB_RM_VERSION_MISMATCH
    26: "deprecated",
    28: "gpu_not_found",
    999: "unknown",
}
_MIG_MODES = {0: "Disabled", 1: "Enabled"}


def _candidates(kind: str) -> list[str]:
    """Library names to try, in order: the loader's search first, then known driver folders."""
    if sys.platform == "win32":
        if kind == "cuda":
            return ["nvcuda.dll"]
        system32 = os.path.join(os.environ.get("SYSTEMROOT", r"C:\Windows"), "System32")
        nvsmi = os.path.join(
            os.environ.get("PROGRAMFILES", r"C:\Program Files"), "NVIDIA Corporation", "NVSMI"
        )
        return ["nvml.dll", os.path.join(system32, "nvml.dll"), os.path.join(nvsmi, "nvml.dll")]
    name = "libnvidia-ml.so.1" if kind == "nvml" else "libcuda.so.1"
    return [name, "/usr/lib/wsl/lib/" + name]


def _load(kind: str) -> tuple[Any, dict[str, Any]]:
    info: dict[str, Any] = {"library": None, "path": None, "load_error": None}
    errors: list[str] = []
    for name in _candidates(kind):
        try:
            lib = ctypes.CDLL(name)
        except OSError as exc:
            errors.append(str(exc) or name)
            continue
        info["library"] = name
        info["path"] = _mapped_path(name)
        return lib, info
    info["load_error"] = "; ".join(errors) or "no candidate library"
    return None, info


def _mapped_path(name: str) -> str | None:
    """The file the loader really mapped (Linux): its name carries the driver version."""
    stem = os.path.basename(name).split(".so")[0] + ".so"
    try:
        with open("/proc/self/maps", encoding="utf-8", errors="replace") as maps:
            for line in maps:
                path = line.split(None, 5)[-1].strip()
                if os.path.basename(path).startswith(stem):
                    return path
    except OSError:
        return None
    return None


# -- NVML, through NVIDIA's own bindings (nvidia-ml-py) --------------------------------------------


def _text(value: Any) -> str:
    return value.decode("utf-8", "replace") if isinstance(value, bytes) else str(value)


def _failure(nvml: Any, exc: Exception) -> str:
    code = getattr(exc, "value", None)
    name = NVML_ERRORS.get(code, "error") if isinstance(code, int) else type(exc).__name__
    return f"{name} ({code})" if isinstance(code, int) else f"{name}: {exc}"


def _init(nvml: Any, lib: Any) -> None:
    """nvmlInitWithFlags (what the bindings call); drivers older than R418 have only
    nvmlInit_v2, which is then called directly with the bindings' bookkeeping kept."""
    try:
        nvml.nvmlInit()
    except nvml.NVMLError_FunctionNotFound:
        code = int(lib.nvmlInit_v2())
        if code != 0:
            raise nvml.NVMLError(code) from None
        nvml._nvmlLib_refcount += 1


def _device(nvml: Any, index: int) -> dict[str, Any]:
    handle = nvml.nvmlDeviceGetHandleByIndex(index)
    entry: dict[str, Any] = {"index": index}
    errors: dict[str, str] = {}
    steps: dict[str, Callable[[], Any]] = {
        "name": lambda: _text(nvml.nvmlDeviceGetName(handle)),
        "uuid": lambda: _text(nvml.nvmlDeviceGetUUID(handle)),
        "pci": lambda: nvml.nvmlDeviceGetPciInfo(handle),
        "compute_capability": lambda: "{}.{}".format(
            *nvml.nvmlDeviceGetCudaComputeCapability(handle)
        ),
        "memory_total_bytes": lambda: int(nvml.nvmlDeviceGetMemoryInfo(handle).total),
        "mig_mode": lambda: _mig_mode(nvml, handle),
    }
    for key, step in steps.items():
        try:
            entry[key] = step()
        except nvml.NVMLError as exc:
            entry[key] = None
            errors[key] = _failure(nvml, exc)
    pci = entry.pop("pci")
    entry["pci_device_id"] = int(pci.pciDeviceId) if pci is not None else None
    entry["bus_id"] = _text(pci.busId or pci.busIdLegacy) if pci is not None else None
    entry["errors"] = errors
    return entry


def _mig_mode(nvml: Any, handle: Any) -> str | None:
    try:
        current, _pending = nvml.nvmlDeviceGetMigMode(handle)
    except nvml.NVMLError_NotSupported:  # not a MIG-capable GPU
        return None
    return _MIG_MODES.get(current)


def _system(nvml: Any, report: dict[str, Any]) -> None:
    """Driver version, NVML version, the driver's CUDA version and the GPUs."""
    errors: dict[str, str] = report["errors"]
    calls: dict[str, Callable[[], Any]] = {
        "driver_version": lambda: _text(nvml.nvmlSystemGetDriverVersion()),
        "nvml_version": lambda: _text(nvml.nvmlSystemGetNVMLVersion()),
        "cuda_driver_version": lambda: int(nvml.nvmlSystemGetCudaDriverVersion_v2()),
        "device_count": lambda: int(nvml.nvmlDeviceGetCount()),
    }
    for key, call in calls.items():
        try:
            report[key] = call()
        except nvml.NVMLError as exc:
            errors[key] = _failure(nvml, exc)
    report["devices"] = []
    for index in range(report.get("device_count") or 0):
        try:
            report["devices"].append(_device(nvml, index))
        except nvml.NVMLError as exc:
            code = getattr(exc, "value", "?")
            report["devices"].append({"index": index, "errors": {"handle": str(code)}})


def collect_nvml() -> dict[str, Any]:
    lib, report = _load("nvml")
    report.update(init_error=None, errors={}, devices=[])
    if lib is None:
        return report
    import pynvml

    pynvml.nvmlLib = lib  # the library found above (the bindings would look only by name)
    try:
        _init(pynvml, lib)
    except pynvml.NVMLError as exc:
        code = int(getattr(exc, "value", 999))
        report["init_error"] = {
            "code": code,
            "name": NVML_ERRORS.get(code, "error"),
            "text": _text(str(exc)),
        }
        return report
    try:
        _system(pynvml, report)
    finally:
        with contextlib.suppress(pynvml.NVMLError):
            pynvml.nvmlShutdown()
    return report


def collect_cuda() -> dict[str, Any]:
    lib, report = _load("cuda")
    report.update(driver_version=None, error_code=None)
    if lib is None:
        return report
    version = ctypes.c_int()
    code = int(lib.cuDriverGetVersion(ctypes.byref(version)))
    if code == 0:
        report["driver_version"] = int(version.value)
    else:
        report["error_code"] = code
    return report


def main() -> int:
    document: dict[str, Any] = {"format": FORMAT, "platform": sys.platform}
    for key, collect in (("nvml", collect_nvml), ("cuda", collect_cuda)):
        try:
            document[key] = collect()
        except Exception as exc:  # the document must come out whatever a library does
            document[key] = {"crash": f"{type(exc).__name__}: {exc}"}
    sys.stdout.write(json.dumps(document, sort_keys=True) + "\n")
    return 0


# --- the parent's side ---------------------------------------------------------------------------


@dataclass(frozen=True)
class NvmlDevice:
    index: int
    name: str | None = None
    pci_device_id: int | None = None  # device << 16 | vendor, as NVML gives it
    bus_id: str | None = None
    compute_capability: str | None = None
    memory_mib: int | None = None
    mig_mode: str | None = None
    uuid: str | None = None
    problems: tuple[str, ...] = ()


@dataclass(frozen=True)
class LibraryAnswer:
    """What one library (NVML or libcuda) said, or why it did not."""

    library: str | None = None  # the name that loaded
    path: str | None = None  # the file mapped, when the child could tell
    load_error: str | None = None
    error_name: str | None = None  # NVML init error: "nvml_mismatch", "driver_not_loaded", ...
    error_code: int | None = None
    error_text: str | None = None


@dataclass(frozen=True)
class NvmlReport:
    nvml: LibraryAnswer
    cuda: LibraryAnswer
    driver_version: str | None = None
    nvml_version: str | None = None
    nvml_cuda_version: int | None = None  # nvmlSystemGetCudaDriverVersion: 12020 = 12.2
    cuda_driver_version: int | None = None  # cuDriverGetVersion
    device_count: int | None = None
    devices: tuple[NvmlDevice, ...] = ()
    problems: tuple[str, ...] = ()  # calls that failed, a crash, a field of the wrong type


def parse_child_output(text: str) -> NvmlReport | None:
    """The parent's reading of the child's JSON; None when it is not that document at all."""
    try:
        document = json.loads(text.strip().splitlines()[-1]) if text.strip() else None
    except ValueError:
        return None
    if not isinstance(document, dict) or document.get("format") != FORMAT:
        return None
    nvml = _dict(document.get("nvml"))
    cuda = _dict(document.get("cuda"))
    problems = [f"nvml {k}: {v}" for k, v in sorted(_dict(nvml.get("errors")).items())]
    problems += [f"{k}: {v}" for k, v in (("nvml", nvml), ("cuda", cuda)) if "crash" in v]
    devices = tuple(_nvml_device(d) for d in _list(nvml.get("devices")) if isinstance(d, dict))
    return NvmlReport(
        nvml=_answer(nvml),
        cuda=_answer(cuda),
        driver_version=_str(nvml.get("driver_version")),
        nvml_version=_str(nvml.get("nvml_version")),
        nvml_cuda_version=_int(nvml.get("cuda_driver_version")),
        cuda_driver_version=_int(cuda.get("driver_version")),
        device_count=_int(nvml.get("device_count")),
        devices=devices,
        problems=tuple(problems),
    )


def _answer(section: dict[str, Any]) -> LibraryAnswer:
    init = _dict(section.get("init_error"))
    code = _int(init.get("code")) if init else _int(section.get("error_code"))
    return LibraryAnswer(
        library=_str(section.get("library")),
        path=_str(section.get("path")),
        load_error=_str(section.get("load_error")) or _str(section.get("crash")),
        error_name=_str(init.get("name")) or (f"error {code}" if code is not None else None),
        error_code=code,
        error_text=_str(init.get("text")),
    )


def _nvml_device(raw: dict[str, Any]) -> NvmlDevice:
    total = _int(raw.get("memory_total_bytes"))
    errors = _dict(raw.get("errors"))
    return NvmlDevice(
        index=_int(raw.get("index")) or 0,
        name=_str(raw.get("name")),
        pci_device_id=_int(raw.get("pci_device_id")),
        bus_id=_str(raw.get("bus_id")),
        compute_capability=_str(raw.get("compute_capability")),
        memory_mib=total // (1024 * 1024) if total is not None else None,
        mig_mode=_str(raw.get("mig_mode")),
        uuid=_str(raw.get("uuid")),
        problems=tuple(f"{k}: {v}" for k, v in sorted(errors.items())),
    )


def _dict(value: object) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def _list(value: object) -> list[Any]:
    return value if isinstance(value, list) else []


def _str(value: object) -> str | None:
    return value if isinstance(value, str) and value else None


def _int(value: object) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


if __name__ == "__main__":
    sys.exit(main())
