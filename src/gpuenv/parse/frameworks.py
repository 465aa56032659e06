"""What TensorFlow and JAX print about themselves: `tf.sysconfig.get_build_info()`, TensorFlow's
device and library log lines, and `jax.print_environment_info()`."""

from __future__ import annotations

import re
from dataclasses import dataclass

from gpuenv.versions import cudnn_from_code

_TF_BUILD_KEY = re.compile(
    r"'(cuda_version|cudnn_version|is_cuda_build|is_rocm_build|is_tensorrt_build)',\s*'?([^')]*)'?\)"
)
_TF_CC_BLOCK = re.compile(r"'cuda_compute_capabilities',\s*\[([^\]]*)\]", re.DOTALL)
# TF 1.x/2.x: "Could not load dynamic library 'x'", TF 1.0: "Couldn't open CUDA library x."
_TF_FAILED = re.compile(
    r"Could not load dynamic library '([^']+)'|Couldn't open CUDA library ([\w.+-]+?)\.?(?=\s|$)"
)
# TF 2.x: "Successfully opened dynamic library x"; TF 1.0: "successfully opened CUDA library x
# locally"
_TF_LOADED = re.compile(
    r"Successfully opened dynamic library (\S+)|successfully opened CUDA library (\S+)"
)
_TF_LD_PATH = re.compile(r"LD_LIBRARY_PATH:\s*(\S*)")
_TF_DEVICE = re.compile(
    r"Created (?:TensorFlow )?device .*?name:\s*(?P<name>[^,]+),\s*pci bus id:\s*(?P<bus>[^,]+)"
    r"(?:,\s*compute capability:\s*(?P<cc>\d+\.\d+))?"
)
# TF 2.x "Found device 0 with properties: pciBusID: 0000:02:00.0 name: X computeCapability: 5.0"
# (one line or two) and TF 1.x "name: X major: 6 minor: 1 memoryClockRate(GHz): ..."
_TF_FOUND_DEVICE = re.compile(
    r"\bname: (?P<name>.+?)\s+"
    r"(?:computeCapability: (?P<cc>\d+\.\d+)|major: (?P<major>\d+) minor: (?P<minor>\d+))"
)
_TF_CUDNN = re.compile(r"Loaded cuDNN version (\d+)")
_JAX_LINE = re.compile(r"^\s*(jax|jaxlib|numpy|python|process_count)\s*:\s+(\S.*?)\s*$")
_JAX_DEVICES = re.compile(r"jax\.devices \((\d+) total, (\d+) local\):\s*\[(.*)\]")
# jax >= 0.4.3x: 'device info: NVIDIA GeForce RTX 3090-1, 1 local devices"' (kind-count)
_JAX_DEVICE_INFO = re.compile(r"^\s*device info:\s*(.+?)-(\d+),\s*(\d+) local devices")
_JAX_DEVICE = re.compile(r"(\w+Device\([^)]*\)|cuda\(id=\d+\)|gpu\(id=\d+\)|TFRT_CPU_\d+)")
ANCHORS_TF = ("is_cuda_build", "dso_loader", "Skipping registering GPU devices", "Created device")
ANCHORS_JAX = ("jaxlib:", "jax.devices (")


@dataclass(frozen=True)
class TfReport:
    cuda_version: str | None = None
    cudnn_version: str | None = None
    is_cuda_build: bool | None = None
    is_rocm_build: bool | None = None
    is_tensorrt_build: bool | None = None
    compute_capabilities: tuple[str, ...] = ()
    failed_libraries: tuple[str, ...] = ()
    loaded_libraries: tuple[str, ...] = ()
    ld_library_path: str | None = None
    gpu_devices_registered: bool | None = None  # False: "Skipping registering GPU devices"
    gpus: tuple[tuple[str, str | None], ...] = ()  # (name, compute capability)


def parse_tf_report(text: str) -> TfReport | None:
    build = {m.group(1): m.group(2).strip() for m in _TF_BUILD_KEY.finditer(text)}
    ccs_block = _TF_CC_BLOCK.search(text)
    ccs = tuple(re.findall(r"(?:sm|compute)_\d+[af]?", ccs_block.group(1))) if ccs_block else ()
    failed = tuple(dict.fromkeys(m.group(1) or m.group(2) for m in _TF_FAILED.finditer(text)))
    loaded = tuple(dict.fromkeys(m.group(1) or m.group(2) for m in _TF_LOADED.finditer(text)))
    ld_path = _TF_LD_PATH.search(text)
    created = tuple(
        dict.fromkeys((m.group("name").strip(), m.group("cc")) for m in _TF_DEVICE.finditer(text))
    )
    gpus = created or _found_devices(text)
    cudnn_code = _TF_CUDNN.search(text)
    skipping = "Skipping registering GPU devices" in text
    if not (build or ccs or failed or loaded or gpus or skipping or cudnn_code):
        return None
    return TfReport(
        cuda_version=build.get("cuda_version") or None,
        cudnn_version=build.get("cudnn_version") or _tf_cudnn(cudnn_code),
        is_cuda_build=_bool(build.get("is_cuda_build")),
        is_rocm_build=_bool(build.get("is_rocm_build")),
        is_tensorrt_build=_bool(build.get("is_tensorrt_build")),
        compute_capabilities=ccs,
        failed_libraries=failed,
        loaded_libraries=loaded,
        ld_library_path=ld_path.group(1) if ld_path else None,
        gpu_devices_registered=False if skipping else (True if created else None),
        gpus=gpus,
    )


def _found_devices(text: str) -> tuple[tuple[str, str | None], ...]:
    """The GPUs of "Found device N with properties" blocks (when no device was created)."""
    found = []
    for match in _TF_FOUND_DEVICE.finditer(text):
        cc = match.group("cc") or f"{match.group('major')}.{match.group('minor')}"
        found.append((match.group("name").strip(), cc))
    return tuple(dict.fromkeys(found))


def _tf_cudnn(match: re.Match[str] | None) -> str | None:
    if match is None:
        return None
    return cudnn_from_code(int(match.group(1)))


def _bool(text: str | None) -> bool | None:
    return {"True": True, "False": False}.get(text or "")


@dataclass(frozen=True)
class JaxReport:
    jax_version: str | None = None
    jaxlib_version: str | None = None
    numpy_version: str | None = None
    python_version: str | None = None
    device_count: int | None = None
    devices: tuple[str, ...] = ()
    process_count: int | None = None
    device_kind: str | None = None  # the "device info:" line's device name ("Tesla V100-PCIE-16GB")

    @property
    def backend(self) -> str | None:
        if not self.devices and self.device_kind:
            kind = self.device_kind.lower()
            return "cpu" if kind == "cpu" else ("tpu" if kind.startswith("tpu") else "gpu")
        kinds = {d.split("(")[0].lower() for d in self.devices}
        if any(k.startswith(("gpu", "cuda")) for k in kinds):
            return "gpu"
        if any(k.startswith(("cpu", "tfrt_cpu")) for k in kinds):
            return "cpu"
        if any(k.startswith("tpu") for k in kinds):
            return "tpu"
        return None


def parse_jax_env(lines: list[str]) -> JaxReport | None:
    values: dict[str, str] = {}
    devices: tuple[str, ...] = ()
    count = None
    kind = None
    for line in lines:
        key = _JAX_LINE.match(line)
        if key:
            values.setdefault(key.group(1), key.group(2))
        info = _JAX_DEVICE_INFO.match(line)
        if info and kind is None:
            kind, count = info.group(1).strip(), int(info.group(2))
        found = _JAX_DEVICES.search(line)
        if found and not devices:
            count = int(found.group(1))
            devices = tuple(_JAX_DEVICE.findall(found.group(3)))
    if "jax" not in values and "jaxlib" not in values:
        return None
    python = re.match(r"\d+\.\d+(?:\.\d+)?", values.get("python", ""))
    processes = values.get("process_count", "")
    return JaxReport(
        jax_version=values.get("jax"),
        jaxlib_version=values.get("jaxlib"),
        numpy_version=values.get("numpy"),
        python_version=python.group(0) if python else None,
        device_count=count,
        devices=devices,
        process_count=int(processes) if processes.isdigit() else None,
        device_kind=kind,
    )
