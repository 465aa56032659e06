"""`python -m torch.utils.collect_env` (and vLLM's copy of it, and the look-alikes such as
sglang's `check_env`): "Key: value" lines, the GPU list below "GPU models and configuration"
(or "GPU 0,1: name" lines), the cuDNN files below "cuDNN version", and the "[pip3] torch==…" /
"[conda] pytorch …" lines of "Versions of relevant libraries"."""

from __future__ import annotations

import re
from dataclasses import dataclass

from gpuenv.versions import cudnn_from_code

# Values collect_env prints when it knows nothing
UNKNOWN = frozenset({"", "n/a", "could not collect", "no cuda", "none", "unknown"})
_KEY = re.compile(r"^([A-Za-z][A-Za-z0-9 _()./+-]{1,48}?):\s?(.*)$")
_GPU = re.compile(r"^GPU\s+(\d+):\s*(.+?)\s*$")
_GPU_GROUP = re.compile(r"^GPU\s+(\d+(?:,\d+)+):\s*(.+?)\s*$")  # check_env: "GPU 0,1,2: H100"
_LIB = re.compile(r"^\[(pip3?|conda|uv)\]\s+(\S+?)\s*(?:==\s*|\s+)(\d\S*)(?:\s+(\S+))?")
_DRIVE = re.compile(r"^[A-Za-z]:\\")
_CUDNN_FILE = re.compile(r"(?:libcudnn\.so\.|cudnn64_|libcudnn\.)(\d+(?:\.\d+)*)")
_CUDNN_PLAIN = re.compile(r"^(\d+(?:\.\d+){1,3})$")
_CUDNN_CODE = re.compile(r"^(\d{4,6})$")
_PYTHON = re.compile(r"^(\d+\.\d+(?:\.\d+)?)")
ANCHORS = ("Collecting environment information", "PyTorch version:", "CUDA used to build PyTorch")


@dataclass(frozen=True)
class Library:
    manager: str  # "pip" | "conda"
    name: str
    version: str
    build: str | None = None  # conda build string: "py3.8_cpu_0"


@dataclass(frozen=True)
class CollectEnv:
    values: dict[str, str]  # every "Key: value" line, the value verbatim
    lines: dict[str, int]  # key -> line number (0-based, within the text given)
    gpus: tuple[str, ...] = ()
    cudnn_version: str | None = None
    libraries: tuple[Library, ...] = ()

    def get(self, key: str, *aliases: str) -> str | None:
        """The value (of the first key or alias present), None when the report printed one of
        its 'unknown' words."""
        name = next((k for k in (key, *aliases) if k in self.values), key)
        value = self.values.get(name)
        return None if value is None or value.strip().lower() in UNKNOWN else value.strip()

    @property
    def torch_version(self) -> str | None:
        return self.get("PyTorch version", "PyTorch")

    @property
    def torch_cuda(self) -> str | None:
        return self.get("CUDA used to build PyTorch")

    @property
    def rocm(self) -> str | None:
        return self.get("ROCM used to build PyTorch")

    @property
    def python_version(self) -> str | None:
        value = self.get("Python version", "Python")
        match = _PYTHON.match(value or "")
        return match.group(1) if match else None

    @property
    def cuda_available(self) -> bool | None:
        value = (self.get("Is CUDA available", "CUDA available") or "").lower()
        return {"true": True, "yes": True, "false": False, "no": False}.get(value)

    @property
    def driver_version(self) -> str | None:
        value = self.get("Nvidia driver version", "CUDA Driver Version")
        return value if value and re.fullmatch(r"\d+(?:\.\d+)+", value) else None

    @property
    def cuda_runtime(self) -> str | None:
        value = self.get("CUDA runtime version")
        return value if value and re.match(r"\d", value) else None


def parse_collect_env(lines: list[str]) -> CollectEnv | None:
    """The report in `lines`; None when no collect_env key is there."""
    values: dict[str, str] = {}
    where: dict[str, int] = {}
    gpus: list[str] = []
    libraries: list[Library] = []
    cudnn_lines: list[str] = []
    section = ""
    for number, raw in enumerate(lines):
        text = raw.strip().strip("`").strip()
        lib = _LIB.match(text)
        if lib:
            libraries.append(_library(lib))
            continue
        gpu = _GPU.match(text)
        if gpu and section == "GPU models and configuration":
            gpus.append(gpu.group(2))
            continue
        group = _GPU_GROUP.match(text)
        if group:
            if "Compute Capability" not in text:
                gpus.extend([group.group(2)] * len(group.group(1).split(",")))
            continue
        key = _KEY.match(text)
        if key and not text.startswith("/") and not _DRIVE.match(text):
            name, value = key.group(1).strip(), key.group(2).strip()
            if name in values:  # a second report in the same text: the first one counts
                section = ""
                continue
            values[name], where[name] = value, number
            section = name
            if name == "GPU models and configuration" and value:
                gpus.extend(_inline_gpus(value))
            if name == "cuDNN version":
                cudnn_lines = [value]
            continue
        if section == "cuDNN version" and text:
            cudnn_lines.append(text)
    known = ("PyTorch version", "CUDA used to build PyTorch")
    if not any(k in values for k in known) and not {"PyTorch", "CUDA available"} <= set(values):
        return None
    return CollectEnv(values, where, tuple(gpus), _cudnn(cudnn_lines), tuple(libraries))


def _inline_gpus(value: str) -> list[str]:
    gpu = _GPU.match(value)
    if gpu:
        return [gpu.group(2)]
    if value.lower() in UNKNOWN or value.lower().startswith(("could not", "no cuda")):
        return []
    return [value]  # ROCm builds print the device name alone ("Device 66a1")


def _library(match: re.Match[str]) -> Library:
    manager = "conda" if match.group(1) == "conda" else "pip"
    return Library(manager, match.group(2), match.group(3), match.group(4))


def _cudnn(lines: list[str]) -> str | None:
    """'8.8.0' from '/usr/lib/.../libcudnn.so.8.8.0', '7' from 'cudnn64_7.dll' (a path cut over
    two lines is joined), '9.1.0' from '90100'."""
    if not lines or lines[0].strip().lower() in UNKNOWN:
        return None
    first = lines[0].strip()
    plain = _CUDNN_PLAIN.match(first)
    if plain:
        return plain.group(1)
    code = _CUDNN_CODE.match(first)
    if code:
        return cudnn_from_code(int(code.group(1)))
    joined = "".join(line.strip() for line in lines[:12])
    versions = [m.group(1) for m in _CUDNN_FILE.finditer(joined)]
    return max(versions, key=lambda v: (v.count("."), v), default=None)
