"""Tables of mmcv.toml: OpenMMLab's prebuilt mmcv wheels per torch line and CUDA."""

from __future__ import annotations

from gpuenv.kb.schema import TableSpec, f

TABLES: dict[str, TableSpec] = {
    "wheel": TableSpec(
        fields={
            "package": f("str", choices=("mmcv", "mmcv-full")),
            "mmcv": f("version"),
            "torch": f("version"),  # minor line the wheels were built against
            "platform": f("str", choices=("linux", "windows", "macos")),
            "cuda_variants": f("list[str]"),  # "cu121" ...; the find-links folder names
            "cpu": f("bool"),  # a CPU wheel exists too
        },
        key=("package", "mmcv", "torch", "platform"),
        description="Prebuilt wheels listed in mmcv docs/en/_static/version.json.",
    ),
}
