"""NVIDIA display/3D controllers on the PCI bus (/sys/bus/pci/devices), with or without a driver.

This answers "is there an NVIDIA GPU at all?" when the driver is missing or broken, and gives the
PCI device id that the knowledge base maps to a model and compute capability.
"""

from __future__ import annotations

from gpuenv.facts import GpuFacts
from gpuenv.probe.access import MachineAccess

PCI_ROOT = "/sys/bus/pci/devices"
NVIDIA_VENDOR = "0x10de"
# PCI class 0x03xxxx = display controller (0x0300 VGA, 0x0302 3D controller)
DISPLAY_CLASS_PREFIX = "0x03"


def parse_pci_id(text: str | None) -> str | None:
    """'0x2204\\n' -> '0x2204'; anything that is not a 16-bit hex id -> None."""
    if not text:
        return None
    value = text.strip().lower()
    if not value.startswith("0x"):
        value = "0x" + value
    digits = value[2:]
    if len(digits) != 4 or any(c not in "0123456789abcdef" for c in digits):
        return None
    return value


def probe_pci_gpus(machine: MachineAccess) -> tuple[GpuFacts, ...]:
    if machine.system() != "Linux":
        return ()
    slots = machine.list_dir(PCI_ROOT) or []
    gpus: list[GpuFacts] = []
    for slot in slots:
        base = f"{PCI_ROOT}/{slot}"
        vendor = machine.read_text(f"{base}/vendor").text
        if (vendor or "").strip().lower() != NVIDIA_VENDOR:
            continue
        klass = (machine.read_text(f"{base}/class").text or "").strip().lower()
        if not klass.startswith(DISPLAY_CLASS_PREFIX):
            continue  # the GPU's audio or USB functions
        device = parse_pci_id(machine.read_text(f"{base}/device").text)
        gpus.append(
            GpuFacts(index=len(gpus), name=None, source=f"pci:{base}", pci_device_id=device)
        )
    return tuple(gpus)
