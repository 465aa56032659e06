"""`nvidia-smi -q` (indented "Key : Value" text) and `nvidia-smi -q -x` (the same as XML), and the
GPU list of `nvidia-smi -L`: pure parsers for pasted reports (used by `gpuenv explain`; the probes
run the table and --query-gpu forms in `gpuenv.parse.smi`)."""

from __future__ import annotations

import re
from dataclasses import dataclass

from gpuenv.parse.smi import (
    BUS_ID,
    VERSION,
    SmiError,
    SmiGpu,
    clean_text,
    find_smi_errors,
    strip_unit,
)


@dataclass(frozen=True)
class SmiDetails:
    """`nvidia-smi -q`."""

    driver_version: str | None = None
    driver_max_cuda: str | None = None
    attached_gpus: int | None = None
    gpus: tuple[SmiGpu, ...] = ()
    errors: tuple[SmiError, ...] = ()
    problem: str | None = None


_LIST_RE = re.compile(r"^\s*GPU (\d+): (.+?) \(UUID: (GPU-[0-9a-fA-F-]{8,60})\)?")


def parse_smi_list(text: str) -> tuple[SmiGpu, ...]:
    """`nvidia-smi -L`: 'GPU 0: NVIDIA TITAN V (UUID: GPU-b516...)', one line per GPU."""
    cleaned, _ = clean_text(text)
    return tuple(
        SmiGpu(index=int(m.group(1)), name=m.group(2).strip(), uuid=m.group(3))
        for m in map(_LIST_RE.match, cleaned.splitlines())
        if m
    )


# --- nvidia-smi -q -----------------------------------------------------------------------------

_Q_GPU_RE = re.compile(rf"^\s*GPU\s+({BUS_ID})\s*$")
_Q_KEY_RE = re.compile(r"^(\s*)([^:]*?\S)\s+:\s*(.*?)\s*$")
_Q_SECTION_RE = re.compile(r"^(\s*)(\S.*?)\s*$")


def parse_smi_q(text: str) -> SmiDetails:
    """`nvidia-smi -q`: indented "Key : Value" lines, one "GPU <bus id>" section per GPU; or
    `nvidia-smi -q -x`, the same as XML."""
    cleaned, noise = clean_text(text)
    if "<nvidia_smi_log" in cleaned or "<driver_version>" in cleaned:
        return _q_details(*_q_xml(cleaned), noise, find_smi_errors(cleaned))
    top: dict[str, str] = {}
    sections: list[dict[str, str]] = []
    stack: list[tuple[int, str]] = []
    for line in cleaned.splitlines():
        gpu = _Q_GPU_RE.match(line)
        if gpu:
            sections.append({"Bus Id": gpu.group(1)})
            stack = []
            continue
        key = _Q_KEY_RE.match(line)
        section = None if key else _Q_SECTION_RE.match(line)
        match = key or section
        if match is None or "=====" in line:
            continue
        indent = len(match.group(1))
        while stack and stack[-1][0] >= indent:
            stack.pop()
        if key is None:
            stack.append((indent, match.group(2)))
            continue
        path = "/".join([name for _, name in stack] + [key.group(2)])
        (sections[-1] if sections else top)[path] = key.group(3)
    return _q_details(top, sections, noise, find_smi_errors(cleaned))


_X_GPU_RE = re.compile(r'<gpu id="([^"]{1,40})">')
# XML tag of `nvidia-smi -q -x` -> the key of the text form
_X_TOP = {
    "driver_version": "Driver Version",
    "cuda_version": "CUDA Version",
    "attached_gpus": "Attached GPUs",
}
_X_GPU = {
    "product_name": "Product Name",
    "uuid": "GPU UUID",
    "vbios_version": "VBIOS Version",
    "pci_device_id": "PCI/Device Id",
    "product_architecture": "Product Architecture",
}
_X_NESTED = {
    ("fb_memory_usage", "total"): "FB Memory Usage/Total",
    ("mig_mode", "current_mig"): "MIG Mode/Current",
    ("driver_model", "current_dm"): "Driver Model/Current",
}


def _q_xml(text: str) -> tuple[dict[str, str], list[dict[str, str]]]:
    """The keys of `nvidia-smi -q -x` as the text form names them (a cut paste gives what it
    holds); one section per <gpu id="...">."""
    starts = [m for m in _X_GPU_RE.finditer(text)]
    head = text[: starts[0].start()] if starts else text
    top = {key: value for tag, key in _X_TOP.items() if (value := _x_tag(head, tag)) is not None}
    sections = []
    for n, start in enumerate(starts):
        end = starts[n + 1].start() if n + 1 < len(starts) else len(text)
        body = text[start.end() : end]
        section = {"Bus Id": start.group(1)}
        section.update(
            {key: value for tag, key in _X_GPU.items() if (value := _x_tag(body, tag)) is not None}
        )
        for (outer, inner), key in _X_NESTED.items():
            block = re.search(rf"<{outer}>(.*?)(?:</{outer}>|\Z)", body, re.DOTALL)
            value = _x_tag(block.group(1), inner) if block else None
            if value is not None:
                section[key] = value
        sections.append(section)
    return top, sections


def _x_tag(text: str, tag: str) -> str | None:
    match = re.search(rf"<{tag}>\s*([^<]*?)\s*</{tag}>", text)
    return match.group(1) if match else None


def _q_details(
    top: dict[str, str],
    sections: list[dict[str, str]],
    noise: str | None,
    errors: tuple[SmiError, ...],
) -> SmiDetails:
    problems = [noise] if noise else []
    attached = top.get("Attached GPUs", "")
    gpus = tuple(_q_gpu(section) for section in sections)
    if not top.get("Driver Version") and not errors:
        problems.append("no Driver Version line found")
    return SmiDetails(
        driver_version=_version_or_none(top.get("Driver Version")),
        driver_max_cuda=_version_or_none(top.get("CUDA Version")),
        attached_gpus=int(attached) if attached.isdigit() else None,
        gpus=gpus,
        errors=errors,
        problem="; ".join(problems) or None,
    )


def _q_gpu(section: dict[str, str]) -> SmiGpu:
    memory = strip_unit(section.get("FB Memory Usage/Total"))
    mig = section.get("MIG Mode/Current")
    return SmiGpu(
        index=None,
        name=section.get("Product Name"),
        memory_mib=int(memory) if memory and memory.isdigit() else None,
        mig_mode=mig if mig in ("Enabled", "Disabled") else None,
        bus_id=section.get("Bus Id"),
        pci_id=section.get("PCI/Device Id"),
        uuid=section.get("GPU UUID"),
        driver_model=section.get("Driver Model/Current"),
        vbios_version=section.get("VBIOS Version"),
    )


def _version_or_none(value: str | None) -> str | None:
    return value if value and re.fullmatch(VERSION, value) else None
