"""Tables of djl.toml: DJL PyTorch engine releases, their libtorch versions and settings."""

from __future__ import annotations

from gpuenv.kb.schema import TableSpec, f

TABLES: dict[str, TableSpec] = {
    "release": TableSpec(
        fields={
            "djl": f("version"),  # ai.djl.pytorch:pytorch-engine version
            "pytorch": f("version"),  # PyTorch native library version it can load
            "cuda_flavors": f("list[str]"),  # pytorch-native-<flavor> / jnilib CUDA flavors
            "default": f("bool", required=False),  # the version the engine uses by default
        },
        key=("djl", "pytorch"),
        description="DJL pytorch-engine to PyTorch native versions and their CUDA flavors.",
    ),
    "setting": TableSpec(
        fields={
            "name": f("str"),
            "meaning": f("str"),
            "example": f("str", required=False),
        },
        key=("name",),
        description="Environment variables (or Java system properties) the engine reads.",
    ),
}
