"""Schema of `gpus.toml`: GPU models by driver name and PCI device id.

Each `[[gpu]]` row is one product as the driver names it (`nvidia-smi --query-gpu=name`, NVML,
`torch.cuda.get_device_name`): its compute capability, architecture, market segment and, where
NVIDIA publishes them, memory and dense peak throughput for `gpuenv check` to compare against.

- `name`: canonical, exactly as a current driver prints it ("NVIDIA GeForce RTX 3090",
  "Tesla V100-SXM2-16GB", "Orin (nvgpu)"). Older drivers drop the "NVIDIA " prefix; lookups
  normalise that away, so it needs no alias.
- `aliases`: other spellings people type ("RTX 3090", "3090", "H100 SXM"). An alias never names
  a family that has several rows ("A100", "V100"): such text resolves to a compute capability only.
- `pci_device_ids`: lower-case "0x2204"; only ids the driver maps to this name alone (see the
  note of each row for ids left out because the same id is shared with another product).
- `memory_gib`: the capacity NVIDIA markets (its "GB" on GDDR/HBM parts is GiB); nvidia-smi shows
  a little less (ECC, reserved memory).
- `fp32_tflops` .. `bandwidth_gbs`: dense (no sparsity) peaks from NVIDIA datasheets or
  whitepapers, decimal TFLOP/s and GB/s. `tf32`/`bf16` are tensor-core rates; `fp16` is the
  tensor-core rate with FP32 accumulation where tensor cores exist, else the plain FP16 rate.
"""

from __future__ import annotations

from gpuenv.kb.schema import TableSpec, f

ARCHITECTURES = (
    "Fermi",
    "Kepler",
    "Maxwell",
    "Pascal",
    "Volta",
    "Turing",
    "Ampere",
    "Ada",
    "Hopper",
    "Blackwell",
)
SEGMENTS = ("geforce", "workstation", "datacenter", "jetson")

TABLES: dict[str, TableSpec] = {
    "gpu": TableSpec(
        fields={
            "name": f("str"),
            "aliases": f("list[str]", required=False),
            "pci_device_ids": f("list[str]", required=False),
            "cc": f("cc"),
            "architecture": f("str", choices=ARCHITECTURES),
            "segment": f("str", choices=SEGMENTS),
            "memory_gib": f("float", required=False),
            "fp32_tflops": f("float", required=False),
            "tf32_tflops": f("float", required=False),
            "bf16_tflops": f("float", required=False),
            "fp16_tflops": f("float", required=False),
            "bandwidth_gbs": f("float", required=False),
        },
        key=("name",),
        description="GPU models: driver name and PCI id -> compute capability, memory, peaks",
    ),
}
