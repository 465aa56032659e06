"""Tables of jetson.toml: JetPack releases and where NVIDIA publishes PyTorch wheels for them."""

from __future__ import annotations

from gpuenv.kb.schema import TableSpec, f

TABLES: dict[str, TableSpec] = {
    "jetpack": TableSpec(
        fields={
            "jetpack": f("version"),
            "l4t": f("version"),
            "l4t_also": f("list[version]", required=False),
            "ubuntu": f("str"),
            "python": f("version"),
            "cuda": f("version"),
            "cudnn": f("version", required=False),
            "tensorrt": f("version", required=False),
            "device_ccs": f("list[cc]"),
        },
        key=("jetpack",),
        description="A JetPack release: its Jetson Linux (L4T) version (and other L4T revisions "
        "shipped as the same JetPack), OS, stock CUDA stack and the devices it supports",
    ),
    "torch_wheels": TableSpec(
        fields={
            "jetpack_min": f("version"),
            "jetpack_max": f("version", required=False),
            "where": f("str"),
            "torch_versions": f("list[str]", required=False),
        },
        key=("jetpack_min", "jetpack_max", "where"),
        description="Where NVIDIA publishes PyTorch wheels for a range of JetPack releases",
    ),
}
